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

typedef struct opt_spec {
    const char *name;
    enum opt_type type;
    size_t offset;
    unsigned long long max;
    const char *help;
} opt_spec;

#define OFF(f) offsetof(rp_options, f)

static const opt_spec specs[] = {
    {"cache_bytes", OPT_SIZE, OFF(cache_bytes), (unsigned long long)1 << 32, "per-thread cache cap in bytes (malloc drop-in)"},
    {"free_batch", OPT_UINT, OFF(free_batch), 64, "frees a thread collects before examining them together, their headers prefetched meanwhile (0 or 1 = each at its call; malloc drop-in)"},
    {"retain_bytes", OPT_SIZE, OFF(retain_bytes), (unsigned long long)1 << 46, "free page memory kept mapped per heap before returning it to the OS"},
    {"purge_delay_ms", OPT_UINT, OFF(purge_delay_ms), 3600000, "free page memory beyond retain_bytes goes back to the OS this long after a heap went beyond it (0 = at once)"},
    {"mapped_block_bytes", OPT_SIZE, OFF(mapped_block_bytes), (unsigned long long)1 << 46, "blocks from this size (with the default, blocks realloc moves: from 4M) get a mapping of their own: realloc moves them with mremap, free unmaps them (0 = never; at least 2M)"},
    {"huge_pages", OPT_BOOL, OFF(huge_pages), 1, "ask for transparent huge pages on the malloc heaps' OS regions (fewer page faults, RSS in 2 MiB steps)"},
    {"slabs", OPT_BOOL, OFF(slabs), 1,
     "small blocks (up to 1008 bytes) from slabs without headers, their metadata apart (0 = span blocks with 16-byte "
     "headers; malloc drop-in)"},
    {"stats", OPT_BOOL, OFF(stats), 1, "print allocator statistics at exit"},
    {"arenas", OPT_UINT, OFF(arenas), 64, "heaps the malloc drop-in spreads threads over (0 = 4 per CPU, at most 64)"},
    {"ignore_foreign_free", OPT_BOOL, OFF(ignore_foreign_free), 1,
     "free() of a pointer rampart never handed out (another allocator's memory) is counted and ignored instead of "
     "reported as an invalid free (malloc drop-in)"},
    {"poison", OPT_BOOL, OFF(poison), 1, "debug: fill fresh and freed blocks with patterns; verify the free pattern"},
    {"alloc_fill", OPT_BYTE, OFF(alloc_fill), 255, "debug: byte written into fresh blocks"},
    {"free_fill", OPT_BYTE, OFF(free_fill), 255, "debug: byte written into freed blocks"},
    {"alloc_fill_max", OPT_SIZE, OFF(alloc_fill_max), (unsigned long long)1 << 46, "debug: bytes of a fresh block (from its start) written with alloc_fill"},
    {"quarantine_bytes", OPT_SIZE, OFF(quarantine_bytes), (unsigned long long)1 << 40, "debug: freed bytes held back (FIFO) before reuse (default 256M, at most an eighth of the RAM)"},
    {"backtrace_depth", OPT_UINT, OFF(backtrace_depth), 64, "debug: frames recorded per allocation/free stack, 0 = off"},
    {"check_interval", OPT_ULONG, OFF(check_interval), ULONG_MAX, "debug: run the heap checker every N operations, 0 = off"},
    {"on_error", OPT_ERROR_MODE, OFF(abort_on_error), 1, "debug: abort (default) or continue after a report"},
    {"leak_report", OPT_BOOL, OFF(leak_report), 1, "debug: print a leak report at exit"},
    {"leak_exit_code", OPT_UINT, OFF(leak_exit_code), 255, "debug: exit status when the exit-time leak report finds leaks, 0 = unchanged"},
    {"report_path", OPT_PATH, OFF(report_path), 0, "debug: where reports go: stderr, stdout or a file path (%p = pid; /dev/fd/N for a descriptor)"},
    {"suppressions", OPT_PATH, OFF(suppressions), 0, "debug: file of leak suppressions (leak:PATTERN lines, LeakSanitizer's format)"},
    {"guard", OPT_GUARD, OFF(guard), 0xffffffffull, "blocks placed against an inaccessible page, faulting at the first bad access: off, all, or sample:N (1 in N; the release drop-in samples too)"},
    {"guard_left", OPT_BOOL, OFF(guard_left), 1, "guarded blocks start at a page boundary (underflows fault) instead of ending at one"},
    {"dump_signal", OPT_SIGNAL, OFF(dump_signal), 64, "signal that requests a heap dump (e.g. SIGUSR2), 0 = off"},
    {"dump_at_exit", OPT_BOOL, OFF(dump_at_exit), 1, "write a heap dump at exit"},
    {"dump_path", OPT_PATH, OFF(dump_path), 0, "dump file pattern (%p = pid, %n = sequence number)"},
};

#define NSPECS (sizeof specs / sizeof specs[0])

const rp_option_doc *rp_options_docs(size_t *count)
{
    static rp_option_doc docs[NSPECS];
    static int ready; /* idempotent fill; racing threads write identical values */
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < NSPECS; i++) {
            docs[i].name = specs[i].name;
            docs[i].help = specs[i].help;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    if (count)
        *count = NSPECS;
    return docs;
}

void rp_options_defaults(rp_options *o)
{
    memset(o, 0, sizeof *o);
    o->cache_bytes = (size_t)1 << 20;
    o->free_batch = 32;
    o->retain_bytes = (size_t)32 << 20;
    o->purge_delay_ms = 10000;
    o->mapped_block_bytes = (size_t)32 << 20;
    o->huge_pages = 1;
    o->slabs = 1;
    o->poison = 1;
    o->alloc_fill = 0xbe;
    o->free_fill = 0x6b;
    o->alloc_fill_max = (size_t)1 << 20;
    o->quarantine_bytes = (size_t)4 << 20;
    o->backtrace_depth = 16;
    o->abort_on_error = 1;
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

static int parse_signal(const char *s, size_t n, int *out)
{
    static const struct {
        const char *name;
        int sig;
    } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"PROF", SIGPROF}, {"URG", SIGURG}};
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
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (word_is(s, n, names[i].name)) {
            *out = names[i].sig;
            return 0;
        }
    }
    return -1;
}

static void apply(const opt_spec *sp, const char *val, size_t n, rp_options *o, struct warner *w)
{
    char shown[64];
    printable(shown, sizeof shown, val, n);
    char *field = (char *)o + sp->offset;
    unsigned long long v = 0;
    int iv = 0;
    switch (sp->type) {
    case OPT_SIZE:
        if (parse_size(val, n, &v) != 0 || v > sp->max) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a size such as 64K or 32M, at most %llu); ignored", shown,
                 sp->name, sp->max);
            return;
        }
        *(size_t *)field = (size_t)v;
        return;
    case OPT_UINT:
    case OPT_ULONG:
    case OPT_BYTE:
        if (parse_ull(val, n, &v) != 0 || v > sp->max) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a number from 0 to %llu); ignored", shown, sp->name,
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
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (0 or 1); ignored", shown, sp->name);
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
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (abort or continue); ignored", shown, sp->name);
        return;
    case OPT_SIGNAL:
        if (parse_signal(val, n, &iv) != 0) {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (a signal number or name such as SIGUSR2); ignored",
                 shown, sp->name);
            return;
        }
        *(int *)field = iv;
        return;
    case OPT_GUARD:
        if (word_is(val, n, "off") || word_is(val, n, "0")) {
            *(unsigned long *)field = 0;
        } else if (word_is(val, n, "all") || word_is(val, n, "1")) {
            *(unsigned long *)field = 1;
        } else if (n > 7 && strncasecmp(val, "sample:", 7) == 0 && parse_ull(val + 7, n - 7, &v) == 0 && v >= 1 &&
                   v <= sp->max) {
            *(unsigned long *)field = (unsigned long)v;
        } else {
            warn(w, "RAMPART_OPTIONS: bad value '%s' for %s (off, all or sample:N with N from 1 to %llu); ignored",
                 shown, sp->name, sp->max);
        }
        return;
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

int rp_options_parse(const char *text, rp_options *o, rp_option_warn_fn fn, void *arg)
{
    struct warner w = {fn, arg, 0};
    if (!text)
        return 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ':');
        /* guard=sample:N holds the separator: the N is part of the value. */
        if (end && end - p == 12 && strncasecmp(p, "guard=sample", 12) == 0)
            end = strchr(end + 1, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            char shown[64];
            if (!eq) {
                printable(shown, sizeof shown, p, len);
                warn(&w, "RAMPART_OPTIONS: '%s' is not key=value; ignored", shown);
            } else {
                size_t klen = (size_t)(eq - p);
                const opt_spec *sp = NULL;
                for (size_t i = 0; i < NSPECS; i++)
                    if (word_is(p, klen, specs[i].name))
                        sp = &specs[i];
                if (!sp) {
                    printable(shown, sizeof shown, p, klen);
                    warn(&w, "RAMPART_OPTIONS: unknown key '%s'; ignored", shown);
                } else {
                    apply(sp, eq + 1, len - klen - 1, o, &w);
                }
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    return w.count;
}

static void warn_stderr(const char *line, void *arg)
{
    (void)arg;
    char buf[400];
    int n = snprintf(buf, sizeof buf, "rampart: %s\n", line);
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    if (n > 0) {
        ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
        (void)r;
    }
}

static rp_options process_options;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;

static void options_init(void)
{
    rp_options_defaults(&process_options);
    rp_options_parse(getenv("RAMPART_OPTIONS"), &process_options, warn_stderr, NULL);
}

const rp_options *rp_options_get(void)
{
    pthread_once(&options_once, options_init);
    return &process_options;
}
