#define _GNU_SOURCE
#include "options.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum opt_type { OPT_SIZE, OPT_BOOL, OPT_UINT, OPT_ULONG, OPT_BYTE, OPT_ERROR_MODE, OPT_SIGNAL, OPT_PATH, OPT_GUARD };

/* Which flavours act on a key: the debug flavour has no thread caches, slabs or mapped blocks
 * (its blocks carry headers its hooks use), release has none of the debug runtime. */
enum opt_flavours { FL_BOTH, FL_DEBUG, FL_RELEASE };

typedef struct opt_spec {
    const char *name;
    enum opt_type type;
    size_t offset;
    unsigned long long max;
    enum opt_flavours flavours;
    const char *help;
} opt_spec;

#define OFF(f) offsetof(rp_options, f)

static const opt_spec specs[] = {
    {"cache_bytes", OPT_SIZE, OFF(cache_bytes), (unsigned long long)1 << 32, FL_RELEASE, "per-thread cache cap in bytes (malloc drop-in)"},
    {"free_batch", OPT_UINT, OFF(free_batch), 64, FL_RELEASE, "frees a thread collects before examining them together, their headers prefetched meanwhile (0 or 1 = each at its call; malloc drop-in)"},
    {"retain_bytes", OPT_SIZE, OFF(retain_bytes), (unsigned long long)1 << 46, FL_BOTH, "free page memory kept mapped per heap before returning it to the OS"},
    {"purge_delay_ms", OPT_UINT, OFF(purge_delay_ms), 3600000, FL_BOTH, "free page memory beyond retain_bytes goes back to the OS this long after a heap went beyond it (0 = at once)"},
    {"mapped_block_bytes", OPT_SIZE, OFF(mapped_block_bytes), (unsigned long long)1 << 46, FL_RELEASE, "blocks from this size (with the default, blocks realloc moves: from 4M) get a mapping of their own: realloc moves them with mremap, free unmaps them (0 = never; at least 2M)"},
    {"huge_pages", OPT_BOOL, OFF(huge_pages), 1, FL_BOTH, "ask for transparent huge pages on the malloc heaps' OS regions (fewer page faults, RSS in 2 MiB steps; default 1 in release, 0 in debug)"},
    {"slabs", OPT_BOOL, OFF(slabs), 1, FL_RELEASE,
     "small blocks (up to 1008 bytes) from slabs without headers, their metadata apart (0 = span blocks with 16-byte "
     "headers; malloc drop-in)"},
    {"stats", OPT_BOOL, OFF(stats), 1, FL_BOTH, "print allocator statistics at exit"},
    {"arenas", OPT_UINT, OFF(arenas), 64, FL_BOTH, "heaps the malloc drop-in spreads threads over (0 = one per CPU, at least 2, at most 64)"},
    {"ignore_foreign_free", OPT_BOOL, OFF(ignore_foreign_free), 1, FL_BOTH,
     "free() of a pointer rampart never handed out (another allocator's memory) is counted and ignored instead of "
     "reported as an invalid free (malloc drop-in)"},
    {"hardened", OPT_BOOL, OFF(hardened), 1, FL_RELEASE,
     "the hardened profile: freed memory wiped, a small quarantine with randomised reuse, write-after-free and "
     "next-header checks, guard pages between slab chunks (malloc drop-in, release)"},
    {"stats_json", OPT_BOOL, OFF(stats_json), 1, FL_BOTH, "print the statistics at exit as JSON (rp_malloc_stats_json) instead of text (malloc drop-in)"},
    {"temporary_ms", OPT_UINT, OFF(temporary_ms), 3600000, FL_RELEASE, "a block freed within this many milliseconds of its allocation counts as a temporary (statistics, estimated from the heap profile's samples)"},
    {"profile", OPT_BOOL, OFF(profile), 1, FL_RELEASE, "sampled heap profiling: sampled blocks' stacks in every heap dump, for rpdump sites, flame, pprof, diff and timeline (malloc drop-in, release)"},
    {"profile_rate", OPT_SIZE, OFF(profile_rate), (unsigned long long)1 << 40, FL_RELEASE, "mean bytes allocated between two samples of the heap profile (Poisson sampling; 0 = every allocation)"},
    {"profile_seed", OPT_ULONG, OFF(profile_seed), ULONG_MAX, FL_RELEASE, "seed of the heap profile's random sampling intervals, 0 = a different one each run"},
    {"poison", OPT_BOOL, OFF(poison), 1, FL_DEBUG, "debug: fill fresh and freed blocks with patterns; verify the free pattern"},
    {"alloc_fill", OPT_BYTE, OFF(alloc_fill), 255, FL_DEBUG, "debug: byte written into fresh blocks"},
    {"free_fill", OPT_BYTE, OFF(free_fill), 255, FL_DEBUG, "debug: byte written into freed blocks"},
    {"alloc_fill_max", OPT_SIZE, OFF(alloc_fill_max), (unsigned long long)1 << 46, FL_DEBUG, "debug: bytes of a fresh block (from its start) written with alloc_fill"},
    {"quarantine_bytes", OPT_SIZE, OFF(quarantine_bytes), (unsigned long long)1 << 40, FL_DEBUG, "debug: freed bytes held back (FIFO) before reuse (default 256M, at most an eighth of the RAM)"},
    {"backtrace_depth", OPT_UINT, OFF(backtrace_depth), 64, FL_DEBUG, "debug: frames recorded per allocation/free stack, 0 = off"},
    {"fast_unwind", OPT_BOOL, OFF(fast_unwind), 1, FL_DEBUG,
     "debug: record allocation and free stacks by walking frame pointers (ASan's default): much cheaper, but a stack "
     "ends at the first function built without frame pointers; reports keep the full unwinder"},
    {"check_interval", OPT_ULONG, OFF(check_interval), ULONG_MAX, FL_DEBUG, "debug: run the heap checker every N operations, 0 = off"},
    {"on_error", OPT_ERROR_MODE, OFF(abort_on_error), 1, FL_DEBUG, "debug: abort (default) or continue after a report"},
    {"leak_report", OPT_BOOL, OFF(leak_report), 1, FL_DEBUG, "debug: print a leak report at exit"},
    {"check_at_exit", OPT_BOOL, OFF(check_at_exit), 1, FL_DEBUG, "debug: at exit, verify every live block's cookies and every freed block's poison (before the leak report)"},
    {"leak_exit_code", OPT_UINT, OFF(leak_exit_code), 255, FL_DEBUG, "debug: exit status when the exit-time leak report finds leaks, 0 = unchanged"},
    {"report_path", OPT_PATH, OFF(report_path), 0, FL_DEBUG, "debug: where reports go: stderr, stdout or a file path (%p = pid; /dev/fd/N for a descriptor)"},
    {"suppressions", OPT_PATH, OFF(suppressions), 0, FL_DEBUG, "debug: file of leak suppressions (leak:PATTERN lines, LeakSanitizer's format)"},
    {"guard", OPT_GUARD, OFF(guard), 0xffffffffull, FL_BOTH, "guarded blocks (malloc drop-in): off, all, or sample:N (1 allocation in N); each placed against an inaccessible page and made inaccessible once freed, so an overflow or a use after free faults at the access and is reported"},
    {"guard_left", OPT_BOOL, OFF(guard_left), 1, FL_BOTH, "with guard: guarded blocks start at a page boundary after a guard page (underflows fault) instead of ending at one"},
    {"dump_signal", OPT_SIGNAL, OFF(dump_signal), 64, FL_BOTH, "signal that requests a heap dump (e.g. SIGUSR2), 0 = off"},
    {"dump_at_exit", OPT_BOOL, OFF(dump_at_exit), 1, FL_BOTH, "write a heap dump at exit"},
    {"dump_path", OPT_PATH, OFF(dump_path), 0, FL_BOTH, "dump file pattern (%p = pid, %n = sequence number)"},
    {"dump_interval", OPT_UINT, OFF(dump_interval), 86400 * 366, FL_BOTH, "write a heap dump every this many seconds, 0 = off"},
    {"dump_on_peak", OPT_BOOL, OFF(dump_on_peak), 1, FL_BOTH, "write a heap dump each time the live bytes pass the last such dump's by dump_peak_step (malloc drop-in)"},
    {"dump_peak_step", OPT_SIZE, OFF(dump_peak_step), (unsigned long long)1 << 46, FL_BOTH, "growth of the live bytes between two dumps of dump_on_peak"},
    {"help", OPT_BOOL, OFF(help), 1, FL_BOTH, "print this list of keys on stderr when the options are read"},
    {"verbose", OPT_BOOL, OFF(verbose), 1, FL_BOTH, "print the effective value of every key on stderr when the options are read"},
};

#define NSPECS (sizeof specs / sizeof specs[0])

static const char *const flavour_names[] = {"both", "debug", "release"};

rp_options_flavour rp_options_flavour_built(void)
{
#ifdef RAMPART_DEBUG
    return RP_OPTIONS_DEBUG;
#else
    return RP_OPTIONS_RELEASE;
#endif
}

/* Does the flavour act on the key? */
static int used_by(const opt_spec *sp, rp_options_flavour flavour)
{
    return sp->flavours == FL_BOTH || (sp->flavours == FL_DEBUG) == (flavour == RP_OPTIONS_DEBUG);
}

static const char *flavour_name(rp_options_flavour flavour) { return flavour == RP_OPTIONS_DEBUG ? "debug" : "release"; }

const rp_option_doc *rp_options_docs(size_t *count)
{
    static rp_option_doc docs[NSPECS];
    static int ready; /* idempotent fill; racing threads write identical values */
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < NSPECS; i++) {
            docs[i].name = specs[i].name;
            docs[i].help = specs[i].help;
            docs[i].flavours = flavour_names[specs[i].flavours];
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    if (count)
        *count = NSPECS;
    return docs;
}

int rp_options_fault_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGABRT ||
           sig == SIGSYS;
}

/* The debug quarantine's default: ASan's scale, 256 MiB, but at most an eighth of the RAM
 * (a quarantine per heap, and a few heaps must stay well within memory). */
static size_t quarantine_default(void)
{
    const size_t asan_scale = (size_t)256 << 20;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return asan_scale;
    size_t eighth = ((size_t)pages / 8 * (size_t)page) & ~(((size_t)1 << 20) - 1);
    return eighth && eighth < asan_scale ? eighth : asan_scale;
}

void rp_options_defaults(rp_options *o)
{
    memset(o, 0, sizeof *o);
    o->cache_bytes = (size_t)1 << 20;
    o->free_batch = 32;
    o->retain_bytes = (size_t)32 << 20;
    o->purge_delay_ms = 10000;
    o->mapped_block_bytes = (size_t)32 << 20;
    /* Not in the debug flavour: its quarantine hands memory back to the heaps in a steady
     * stream, and huge pages split by the purges were faulted (and cleared) again 2 MiB at a
     * time (docs/BENCHMARKS.md, "Debug flavour"). */
    o->huge_pages = rp_options_flavour_built() == RP_OPTIONS_RELEASE;
    o->slabs = 1;
    o->temporary_ms = 10;
    o->profile_rate = (size_t)512 << 10;
    o->dump_peak_step = (size_t)16 << 20;
    o->poison = 1;
    o->alloc_fill = 0xbe;
    o->free_fill = 0x6b;
    o->alloc_fill_max = (size_t)1 << 20;
    o->quarantine_bytes = quarantine_default();
    o->backtrace_depth = 16;
    o->abort_on_error = 1;
    o->check_at_exit = 1;
    strcpy(o->report_path, "stderr");
    strcpy(o->dump_path, "rampart.%p.%n.rpd");
}

struct warner {
    rp_option_warn_fn fn;
    void *arg;
    int count;
};

__attribute__((format(printf, 2, 3))) static void warn(struct warner *w, const char *fmt, ...)
{
    char line[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    w->count++;
    if (w->fn)
        w->fn(line, w->arg);
}

/* Copies at most cap-1 bytes of [s, s+n) into buf, replacing unprintable bytes by '?'. */
static void printable(char *buf, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (; k < n && k + 1 < cap; k++) {
        unsigned char c = (unsigned char)s[k];
        buf[k] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[k] = 0;
}

/* A value as a warning shows it (at most 63 printable bytes): only on the error paths. */
static const char *shown_as(char buf[64], const char *val, size_t n)
{
    printable(buf, 64, val, n);
    return buf;
}

static int parse_ull(const char *s, size_t n, unsigned long long *out)
{
    if (n == 0 || n > 40)
        return -1;
    unsigned long long v = 0;
    size_t i = 0;
    int base = 10;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    }
    if (i == n)
        return -1;
    for (; i < n; i++) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
            return -1;
        v = v * (unsigned)base + (unsigned)d;
    }
    *out = v;
    return 0;
}

static int parse_size(const char *s, size_t n, unsigned long long *out)
{
    unsigned shift = 0;
    if (n > 0) {
        char c = s[n - 1];
        if (c == 'k' || c == 'K')
            shift = 10;
        else if (c == 'm' || c == 'M')
            shift = 20;
        else if (c == 'g' || c == 'G')
            shift = 30;
        if (shift)
            n--;
    }
    unsigned long long v;
    if (parse_ull(s, n, &v) != 0 || (shift && v > (ULLONG_MAX >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

static int word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && strncasecmp(s, w, n) == 0; }

static int parse_bool(const char *s, size_t n, int *out)
{
    if (word_is(s, n, "1") || word_is(s, n, "true") || word_is(s, n, "yes") || word_is(s, n, "on")) {
        *out = 1;
        return 0;
    }
    if (word_is(s, n, "0") || word_is(s, n, "false") || word_is(s, n, "no") || word_is(s, n, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static const struct {
    const char *name;
    int sig;
} signal_names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"PROF", SIGPROF}, {"URG", SIGURG}};

static int parse_signal(const char *s, size_t n, int *out)
{
    unsigned long long v;
    if (parse_ull(s, n, &v) == 0) {
        if (v > 64)
            return -1;
        *out = (int)v;
        return 0;
    }
    if (n > 3 && strncasecmp(s, "SIG", 3) == 0) {
        s += 3;
        n -= 3;
    }
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++) {
        if (word_is(s, n, signal_names[i].name)) {
            *out = signal_names[i].sig;
            return 0;
        }
    }
    return -1;
}


static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int is_separator(char c) { return c == ':' || c == ','; }

/* Trims blanks from both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
    while (*n && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && is_blank((*s)[*n - 1]))
        (*n)--;
}

static void apply(const opt_spec *sp, const char *val, size_t n, rp_options *o, struct warner *w)
{
    char shown[64];
    char *field = (char *)o + sp->offset;
    unsigned long long v = 0;
    int iv = 0;
    switch (sp->type) {
    case OPT_SIZE:
        if (parse_size(val, n, &v) != 0 || v > sp->max) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a size such as 64K or 32M, at most %llu); ignored", shown_as(shown, val, n),
                 sp->name, sp->max);
            return;
        }
        *(size_t *)field = (size_t)v;
        return;
    case OPT_UINT:
    case OPT_ULONG:
    case OPT_BYTE:
        if (parse_ull(val, n, &v) != 0 || v > sp->max) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a number from 0 to %llu); ignored", shown_as(shown, val, n), sp->name,
                 sp->max);
            return;
        }
        if (sp->type == OPT_ULONG)
            *(unsigned long *)field = (unsigned long)v;
        else
            *(unsigned *)field = (unsigned)v;
        return;
    case OPT_BOOL:
        if (parse_bool(val, n, &iv) != 0) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (0 or 1); ignored", shown_as(shown, val, n), sp->name);
            return;
        }
        *(int *)field = iv;
        return;
    case OPT_ERROR_MODE:
        if (word_is(val, n, "abort"))
            *(int *)field = 1;
        else if (word_is(val, n, "continue"))
            *(int *)field = 0;
        else
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (abort or continue); ignored", shown_as(shown, val, n), sp->name);
        return;
    case OPT_SIGNAL:
        if (parse_signal(val, n, &iv) != 0) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a signal number or name such as SIGUSR2); ignored",
                 shown_as(shown, val, n), sp->name);
            return;
        }
        if (rp_options_fault_signal(iv)) {
            warn(w,
                 "RAMPART_OPTIONS: %s=%s is a fault signal (a bad access, trap or abort would dump again and "
                 "again instead of ending the program); use one such as SIGUSR2; ignored",
                 sp->name, shown_as(shown, val, n));
            return;
        }
        *(int *)field = iv;
        return;
    case OPT_GUARD: {
        /* off, all, or sample:N (blanks around the ':' and N allowed) */
        const char *num = val;
        size_t nlen = n;
        int sample = n >= 6 && strncasecmp(val, "sample", 6) == 0;
        if (sample) {
            num += 6, nlen -= 6;
            trim(&num, &nlen);
            sample = nlen > 0 && num[0] == ':';
            if (sample) {
                num++, nlen--;
                trim(&num, &nlen);
            }
        }
        if (word_is(val, n, "off") || word_is(val, n, "0")) {
            *(unsigned long *)field = 0;
        } else if (word_is(val, n, "all") || word_is(val, n, "1")) {
            *(unsigned long *)field = 1;
        } else if (sample && parse_ull(num, nlen, &v) == 0 && v >= 1 && v <= sp->max) {
            *(unsigned long *)field = (unsigned long)v;
        } else {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (off, all or sample:N with N from 1 to %llu); ignored",
                 shown_as(shown, val, n), sp->name, sp->max);
        }
        return;
    }
    case OPT_PATH:
        if (n == 0 || n >= RP_OPTION_PATH_MAX) {
            warn(w, "RAMPART_OPTIONS: bad value for %s (a path of 1 to %d bytes); ignored", sp->name,
                 RP_OPTION_PATH_MAX - 1);
            return;
        }
        for (size_t k = 0; k < n; k++) {
            if (val[k] == 0 || (unsigned char)val[k] < 0x20) {
                warn(w, "RAMPART_OPTIONS: bad value for %s (control characters in the path); ignored", sp->name);
                return;
            }
        }
        memcpy(field, val, n);
        field[n] = 0;
        return;
    }
}

/* Is the item "guard=sample" (blanks around its key and value aside)? */
static int is_guard_sample(const char *item, size_t n)
{
    const char *eq = memchr(item, '=', n);
    if (!eq)
        return 0;
    const char *key = item, *val = eq + 1;
    size_t klen = (size_t)(eq - item), vlen = n - klen - 1;
    trim(&key, &klen);
    trim(&val, &vlen);
    return word_is(key, klen, "guard") && word_is(val, vlen, "sample");
}

/* The parts of rampart beyond the flavour that act on a key: a library that lacks the part (the
 * core without the malloc drop-in, without the dump writer, ...) stores the key and warns once. */
typedef struct key_parts {
    const char *name;
    unsigned parts; /* RP_OPTIONS_PART_*: all of them are needed */
} key_parts;

static const key_parts needs[] = {
    {"cache_bytes", RP_OPTIONS_PART_MALLOC},      {"free_batch", RP_OPTIONS_PART_MALLOC},
    {"retain_bytes", RP_OPTIONS_PART_MALLOC},     {"purge_delay_ms", RP_OPTIONS_PART_MALLOC},
    {"mapped_block_bytes", RP_OPTIONS_PART_MALLOC}, {"huge_pages", RP_OPTIONS_PART_MALLOC},
    {"slabs", RP_OPTIONS_PART_MALLOC},            {"stats", RP_OPTIONS_PART_MALLOC},
    {"arenas", RP_OPTIONS_PART_MALLOC},           {"ignore_foreign_free", RP_OPTIONS_PART_MALLOC},
    {"stats_json", RP_OPTIONS_PART_MALLOC},       {"hardened", RP_OPTIONS_PART_MALLOC},
    {"temporary_ms", RP_OPTIONS_PART_PROFILE},
    {"profile", RP_OPTIONS_PART_PROFILE},         {"profile_rate", RP_OPTIONS_PART_PROFILE},
    {"profile_seed", RP_OPTIONS_PART_PROFILE},    {"dump_signal", RP_OPTIONS_PART_DUMP},
    {"dump_at_exit", RP_OPTIONS_PART_DUMP},       {"dump_path", RP_OPTIONS_PART_DUMP},
    {"dump_interval", RP_OPTIONS_PART_DUMP},      {"dump_on_peak", RP_OPTIONS_PART_DUMP | RP_OPTIONS_PART_MALLOC},
    {"dump_peak_step", RP_OPTIONS_PART_DUMP | RP_OPTIONS_PART_MALLOC},
    /* Guarded blocks: the drop-in's guard pool (src/malloc/guard_pool.h), both flavours. */
    {"guard", RP_OPTIONS_PART_MALLOC},            {"guard_left", RP_OPTIONS_PART_MALLOC},
};

static const char *const part_names[] = {"the malloc drop-in (//src/malloc:rampart_malloc)",
                                         "the dump writer (//debug:dump)", "the release heap profiler",
                                         "the debug runtime"};

/* The parts in needed that are missing from `parts`, or 0 (and the first one's name). */
static unsigned missing_parts(const char *key, size_t klen, unsigned parts, const char **name)
{
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
        if (!word_is(key, klen, needs[i].name))
            continue;
        unsigned miss = needs[i].parts & ~parts;
        if (miss)
            *name = part_names[__builtin_ctz(miss)];
        return miss;
    }
    return 0;
}

int rp_options_parse_as(const char *text, rp_options *o, rp_options_flavour flavour, rp_option_warn_fn fn,
                        void *arg)
{
    return rp_options_parse_in(text, o, flavour, RP_OPTIONS_PARTS_ALL, fn, arg);
}

int rp_options_parse_in(const char *text, rp_options *o, rp_options_flavour flavour, unsigned parts,
                        rp_option_warn_fn fn, void *arg)
{
    struct warner w = {fn, arg, 0};
    uint64_t noted = 0; /* keys already warned about as unused by the flavour */
    _Static_assert(NSPECS <= 64, "one bit per key");
    if (!text)
        return 0;
    const char *p = text;
    for (;;) {
        size_t len = 0;
        while (p[len] && !is_separator(p[len]))
            len++;
        const char *item = p;
        size_t n = len;
        trim(&item, &n);
        if (p[len] == ':' && is_guard_sample(item, n)) {
            /* guard=sample:N holds a ':': the N is part of the value. */
            len++;
            while (p[len] && !is_separator(p[len]))
                len++;
            item = p;
            n = len;
            trim(&item, &n);
        }
        if (n > 0) {
            const char *eq = memchr(item, '=', n);
            char shown[64];
            if (!eq) {
                printable(shown, sizeof shown, item, n);
                warn(&w, "RAMPART_OPTIONS: '%s' is not key=value; ignored", shown);
            } else {
                const char *key = item, *val = eq + 1;
                size_t klen = (size_t)(eq - item), vlen = n - klen - 1;
                trim(&key, &klen);
                trim(&val, &vlen);
                const opt_spec *sp = NULL;
                for (size_t i = 0; i < NSPECS && !sp; i++)
                    if (word_is(key, klen, specs[i].name))
                        sp = &specs[i];
                if (!sp) {
                    printable(shown, sizeof shown, key, klen);
                    warn(&w, "RAMPART_OPTIONS: unknown key '%s'; ignored", shown);
                } else {
                    uint64_t bit = (uint64_t)1 << (sp - specs);
                    const char *part = NULL;
                    if (!used_by(sp, flavour) && !(noted & bit)) {
                        noted |= bit;
                        warn(&w, "RAMPART_OPTIONS: %s has no effect in the %s flavour (a %s-flavour key)", sp->name,
                             flavour_name(flavour), flavour_names[sp->flavours]);
                    } else if (!(noted & bit) && missing_parts(key, klen, parts, &part)) {
                        noted |= bit;
                        warn(&w, "RAMPART_OPTIONS: %s has no effect in this library: it needs %s", sp->name, part);
                    }
                    apply(sp, val, vlen, o, &w);
                }
            }
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    return w.count;
}

int rp_options_parse(const char *text, rp_options *o, rp_option_warn_fn fn, void *arg)
{
    return rp_options_parse_as(text, o, rp_options_flavour_built(), fn, arg);
}

/* ---- help and the effective values ------------------------------------------------------- */

static const char *const type_names[] = {"size",   "bool", "number", "number",
                                         "byte",   "abort|continue", "signal", "path",
                                         "off|all|sample:N"};

/* Writes the value of sp in o as text the parser reads back. */
static void format_value(const opt_spec *sp, const rp_options *o, char *buf, size_t cap)
{
    const char *field = (const char *)o + sp->offset;
    switch (sp->type) {
    case OPT_SIZE: {
        size_t v = *(const size_t *)field;
        static const char units[] = "GMK";
        for (unsigned u = 0; u < 3; u++) {
            unsigned shift = 30 - 10 * u;
            if (v && (v & (((size_t)1 << shift) - 1)) == 0) {
                snprintf(buf, cap, "%zu%c", v >> shift, units[u]);
                return;
            }
        }
        snprintf(buf, cap, "%zu", v);
        return;
    }
    case OPT_BOOL:
        snprintf(buf, cap, "%d", *(const int *)field);
        return;
    case OPT_UINT:
        snprintf(buf, cap, "%u", *(const unsigned *)field);
        return;
    case OPT_ULONG:
        snprintf(buf, cap, "%lu", *(const unsigned long *)field);
        return;
    case OPT_BYTE:
        snprintf(buf, cap, "0x%02x", *(const unsigned *)field);
        return;
    case OPT_ERROR_MODE:
        snprintf(buf, cap, "%s", *(const int *)field ? "abort" : "continue");
        return;
    case OPT_SIGNAL: {
        int sig = *(const int *)field;
        for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++) {
            if (signal_names[i].sig == sig) {
                snprintf(buf, cap, "SIG%s", signal_names[i].name);
                return;
            }
        }
        snprintf(buf, cap, "%d", sig);
        return;
    }
    case OPT_GUARD: {
        unsigned long g = *(const unsigned long *)field;
        if (g <= 1)
            snprintf(buf, cap, "%s", g ? "all" : "off");
        else
            snprintf(buf, cap, "sample:%lu", g);
        return;
    }
    case OPT_PATH: /* as given (no control characters: apply refuses them), UTF-8 included */
        snprintf(buf, cap, "%.*s", (int)strnlen(field, RP_OPTION_PATH_MAX), field);
        return;
    }
}

void rp_options_help(rp_option_warn_fn fn, void *arg)
{
    rp_options defaults;
    rp_options_defaults(&defaults);
    for (size_t i = 0; i < NSPECS; i++) {
        char value[RP_OPTION_PATH_MAX], line[600];
        format_value(&specs[i], &defaults, value, sizeof value);
        snprintf(line, sizeof line, "%-19s %-16s default %-17s %-7s %s", specs[i].name, type_names[specs[i].type],
                 value[0] ? value : "(none)", flavour_names[specs[i].flavours], specs[i].help);
        fn(line, arg);
    }
}

void rp_options_describe(const rp_options *o, rp_options_flavour flavour, rp_option_warn_fn fn, void *arg)
{
    for (size_t i = 0; i < NSPECS; i++) {
        if (!used_by(&specs[i], flavour))
            continue;
        char value[RP_OPTION_PATH_MAX], line[RP_OPTION_PATH_MAX + 32];
        format_value(&specs[i], o, value, sizeof value);
        if (!value[0])
            continue; /* an empty path (no suppressions file): nothing to write back */
        snprintf(line, sizeof line, "%s=%s", specs[i].name, value);
        fn(line, arg);
    }
}

/* ---- the process's options ----------------------------------------------------------------- */

/* Writes "rampart: <prefix><line>\n" to stderr, without allocating. */
static void line_to_stderr(const char *line, void *arg)
{
    const char *prefix = arg ? arg : "";
    char buf[720];
    int n = snprintf(buf, sizeof buf, "rampart: %s%s\n", prefix, line);
    if (n > (int)sizeof buf - 1) {
        n = (int)sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    if (n > 0) {
        ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
        (void)r;
    }
}


unsigned rp_options_parts_linked(void)
{
    unsigned parts = 0;
    if (&rp_options_part_malloc)
        parts |= RP_OPTIONS_PART_MALLOC;
    if (&rp_options_part_dump)
        parts |= RP_OPTIONS_PART_DUMP;
    if (&rp_options_part_profile && rp_options_flavour_built() == RP_OPTIONS_RELEASE)
        parts |= RP_OPTIONS_PART_PROFILE;
    /* RP_OPTIONS_PART_DEBUG_RUNTIME: no key needs it today. */
    return parts;
}

static rp_options process_options;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;

static void options_init(void)
{
    rp_options_defaults(&process_options);
    rp_options_flavour flavour = rp_options_flavour_built();
    rp_options_parse_in(getenv("RAMPART_OPTIONS"), &process_options, flavour, rp_options_parts_linked(),
                        line_to_stderr, NULL);
    char title[120];
    if (process_options.help) {
        snprintf(title, sizeof title,
                 "RAMPART_OPTIONS=key=value:key=value (or ','), this is the %s flavour; keys:", flavour_name(flavour));
        line_to_stderr(title, NULL);
        rp_options_help(line_to_stderr, "  ");
    }
    if (process_options.verbose) {
        snprintf(title, sizeof title, "options in effect (%s flavour):", flavour_name(flavour));
        line_to_stderr(title, NULL);
        rp_options_describe(&process_options, flavour, line_to_stderr, "  ");
    }
}

const rp_options *rp_options_get(void)
{
    pthread_once(&options_once, options_init);
    return &process_options;
}
