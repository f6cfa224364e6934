/* options: arbitrary bytes into the RAMPART_OPTIONS parser (rp_options_parse, src/options.h).
 *
 * The parser must accept any bytes without crashing, hanging or allocating, and must do
 * exactly what options.h documents. This harness checks it against an independent reference
 * written from that documentation (key=value items separated by ':', keys matched without
 * regard to case, sizes with K/M/G suffixes and decimal or 0x numbers, booleans
 * 0/1/true/false/yes/no/on/off, on_error abort|continue, signals by number or [SIG]name,
 * paths of 1..255 bytes without control characters; a bad item gives one warning and
 * changes nothing; the last setting of a key wins), plus properties that need no
 * reference: every warning is one printable line, the count returned equals the lines
 * passed to the callback, fields stay in range, parsing twice changes nothing, and writing
 * the result back as text and parsing that gives the same options. */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/options.h"

__attribute__((noreturn, format(printf, 2, 3))) static void fuzz_fail(const char *text, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "options: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ninput: \"");
    for (const char *c = text; *c; c++)
        fprintf(stderr, isprint((unsigned char)*c) ? "%c" : "\\x%02x", (unsigned char)*c);
    fprintf(stderr, "\"\n");
    abort();
}

/* ---- the reference ---------------------------------------------------------------------- */

enum ref_type { R_SIZE, R_BOOL, R_UINT, R_ULONG, R_BYTE, R_MODE, R_SIGNAL, R_PATH };

typedef struct ref_key {
    const char *name;
    enum ref_type type;
    size_t offset;
    unsigned long long max;
} ref_key;

#define OFF(f) offsetof(rp_options, f)

static const ref_key ref_keys[] = {
    {"cache_bytes", R_SIZE, OFF(cache_bytes), 1ull << 32},
    {"retain_bytes", R_SIZE, OFF(retain_bytes), 1ull << 46},
    {"purge_delay_ms", R_UINT, OFF(purge_delay_ms), 3600000},
    {"arenas", R_UINT, OFF(arenas), 64},
    {"huge_pages", R_BOOL, OFF(huge_pages), 1},
    {"slabs", R_BOOL, OFF(slabs), 1},
    {"free_batch", R_UINT, OFF(free_batch), 64},
    {"stats", R_BOOL, OFF(stats), 1},
    {"poison", R_BOOL, OFF(poison), 1},
    {"alloc_fill", R_BYTE, OFF(alloc_fill), 255},
    {"free_fill", R_BYTE, OFF(free_fill), 255},
    {"alloc_fill_max", R_SIZE, OFF(alloc_fill_max), 1ull << 46},
    {"quarantine_bytes", R_SIZE, OFF(quarantine_bytes), 1ull << 40},
    {"backtrace_depth", R_UINT, OFF(backtrace_depth), 64},
    {"check_interval", R_ULONG, OFF(check_interval), ULONG_MAX},
    {"on_error", R_MODE, OFF(abort_on_error), 1},
    {"leak_report", R_BOOL, OFF(leak_report), 1},
    {"leak_exit_code", R_UINT, OFF(leak_exit_code), 255},
    {"report_path", R_PATH, OFF(report_path), 0},
    {"dump_signal", R_SIGNAL, OFF(dump_signal), 64},
    {"dump_at_exit", R_BOOL, OFF(dump_at_exit), 1},
    {"dump_path", R_PATH, OFF(dump_path), 0},
};
#define NREF (sizeof ref_keys / sizeof ref_keys[0])

static int same_word(const char *s, size_t n, const char *w) { return strlen(w) == n && strncasecmp(s, w, n) == 0; }

/* Decimal, or 0x/0X and hex digits; no sign, no blanks. Numbers longer than 40 characters
 * are refused (the parser's documented-by-test limit on digit strings). */
static int ref_number(const char *s, size_t n, unsigned long long *out)
{
    if (n == 0 || n > 40)
        return 0;
    int hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    size_t i = hex ? 2 : 0;
    unsigned long long v = 0;
    for (; i < n; i++) {
        int c = (unsigned char)s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (hex && isxdigit(c))
            d = tolower(c) - 'a' + 10;
        else
            return 0;
        unsigned base = hex ? 16 : 10;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, (unsigned)d, &v))
            return 0;
    }
    *out = v;
    return 1;
}

static int ref_value(const ref_key *k, const char *v, size_t n, rp_options *o)
{
    char *field = (char *)o + k->offset;
    unsigned long long x;
    switch (k->type) {
    case R_SIZE: {
        unsigned shift = 0;
        if (n && strchr("kK", v[n - 1]))
            shift = 10;
        else if (n && strchr("mM", v[n - 1]))
            shift = 20;
        else if (n && strchr("gG", v[n - 1]))
            shift = 30;
        if (!ref_number(v, n - (shift ? 1 : 0), &x) || x > (ULLONG_MAX >> shift) || (x << shift) > k->max)
            return 0;
        *(size_t *)field = (size_t)(x << shift);
        return 1;
    }
    case R_UINT:
    case R_ULONG:
    case R_BYTE:
        if (!ref_number(v, n, &x) || x > k->max)
            return 0;
        if (k->type == R_ULONG)
            *(unsigned long *)field = (unsigned long)x;
        else
            *(unsigned *)field = (unsigned)x;
        return 1;
    case R_BOOL:
        if (same_word(v, n, "1") || same_word(v, n, "true") || same_word(v, n, "yes") || same_word(v, n, "on"))
            *(int *)field = 1;
        else if (same_word(v, n, "0") || same_word(v, n, "false") || same_word(v, n, "no") || same_word(v, n, "off"))
            *(int *)field = 0;
        else
            return 0;
        return 1;
    case R_MODE:
        if (same_word(v, n, "abort"))
            *(int *)field = 1;
        else if (same_word(v, n, "continue"))
            *(int *)field = 0;
        else
            return 0;
        return 1;
    case R_SIGNAL: {
        static const struct {
            const char *name;
            int sig;
        } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"PROF", SIGPROF}, {"URG", SIGURG}};
        if (ref_number(v, n, &x)) {
            if (x > k->max)
                return 0;
            *(int *)field = (int)x;
            return 1;
        }
        if (n > 3 && strncasecmp(v, "SIG", 3) == 0)
            v += 3, n -= 3;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (same_word(v, n, names[i].name)) {
                *(int *)field = names[i].sig;
                return 1;
            }
        }
        return 0;
    }
    case R_PATH:
        if (n == 0 || n >= RP_OPTION_PATH_MAX)
            return 0;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)v[i] < 0x20)
                return 0;
        memcpy(field, v, n);
        field[n] = 0;
        return 1;
    }
    return 0;
}

/* Applies text to *o the way options.h documents. Returns the number of warnings, or -1
 * when the text names a key the parser knows (rp_options_docs) but this reference does not
 * (a key added later): then the outcome cannot be predicted here. */
static int ref_parse(const char *text, rp_options *o)
{
    size_t ndocs;
    const rp_option_doc *docs = rp_options_docs(&ndocs);
    int warnings = 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len && !eq) {
            warnings++;
        } else if (len) {
            size_t klen = (size_t)(eq - p);
            const ref_key *k = NULL;
            for (size_t i = 0; i < NREF; i++)
                if (same_word(p, klen, ref_keys[i].name))
                    k = &ref_keys[i];
            if (!k) {
                for (size_t i = 0; i < ndocs; i++)
                    if (same_word(p, klen, docs[i].name))
                        return -1;
                warnings++;
            } else if (!ref_value(k, eq + 1, len - klen - 1, o)) {
                warnings++;
            }
        }
        if (!end)
            return warnings;
        p = end + 1;
    }
}

/* ---- properties ---------------------------------------------------------------------------- */

typedef struct warn_log {
    int lines;
    const char *text;
} warn_log;

static void on_warning(const char *line, void *arg)
{
    warn_log *w = arg;
    w->lines++;
    size_t n = strlen(line);
    if (n == 0 || n >= 320 || strncmp(line, "RAMPART_OPTIONS: ", 17) != 0)
        fuzz_fail(w->text, "malformed warning \"%s\"", line);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f)
            fuzz_fail(w->text, "warning has an unprintable byte 0x%02x at %zu", (unsigned char)line[i], i);
}

static int parse_logged(const char *text, rp_options *o)
{
    warn_log w = {0, text};
    int n = rp_options_parse(text, o, on_warning, &w);
    if (n != w.lines)
        fuzz_fail(text, "rp_options_parse returned %d warnings but passed %d lines", n, w.lines);
    return n;
}

static void check_path(const char *text, const char *path, const char *name)
{
    size_t n = strnlen(path, RP_OPTION_PATH_MAX);
    if (n == 0 || n == RP_OPTION_PATH_MAX)
        fuzz_fail(text, "%s is empty or not terminated", name);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)path[i] < 0x20)
            fuzz_fail(text, "%s holds a control character", name);
}

static void check_ranges(const char *text, const rp_options *o)
{
    if ((unsigned)o->stats > 1 || (unsigned)o->huge_pages > 1 || (unsigned)o->slabs > 1 || (unsigned)o->poison > 1 ||
        (unsigned)o->leak_report > 1 ||
        (unsigned)o->dump_at_exit > 1 || (unsigned)o->abort_on_error > 1)
        fuzz_fail(text, "a boolean option is neither 0 nor 1");
    if (o->alloc_fill > 255 || o->free_fill > 255 || o->backtrace_depth > 64 || o->dump_signal < 0 ||
        o->dump_signal > 64 || o->purge_delay_ms > 3600000 || o->arenas > 64 || o->leak_exit_code > 255 ||
        o->free_batch > 64)
        fuzz_fail(text, "a numeric option is out of range");
    if (o->cache_bytes > (1ull << 32) || o->retain_bytes > (1ull << 46) || o->quarantine_bytes > (1ull << 40) ||
        o->alloc_fill_max > (1ull << 46))
        fuzz_fail(text, "a size option is over its maximum");
    check_path(text, o->report_path, "report_path");
    check_path(text, o->dump_path, "dump_path");
}

/* Path fields are strings: bytes after their terminator (left by a longer earlier value) are
 * not part of the value. Clears them, so whole structs compare by value. */
static void normalise(rp_options *o)
{
    char *paths[] = {o->report_path, o->dump_path};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        size_t n = strnlen(paths[i], RP_OPTION_PATH_MAX);
        if (n < RP_OPTION_PATH_MAX)
            memset(paths[i] + n, 0, RP_OPTION_PATH_MAX - n);
    }
}

static int same_options(rp_options *a, rp_options *b)
{
    normalise(a);
    normalise(b);
    return memcmp(a, b, sizeof *a) == 0;
}

/* The options as text the parser must read back to the same values. */
static void format_options(const rp_options *o, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "cache_bytes=%zu:retain_bytes=%zu:purge_delay_ms=%u:arenas=%u:huge_pages=%d:slabs=%d:free_batch=%u:"
             "stats=%d:poison=%d:"
             "alloc_fill=%u:free_fill=%u:alloc_fill_max=%zu:quarantine_bytes=%zu:backtrace_depth=%u:check_interval=%lu:on_error=%s:"
             "leak_report=%d:leak_exit_code=%u:report_path=%s:dump_signal=%d:dump_at_exit=%d:dump_path=%s",
             o->cache_bytes, o->retain_bytes, o->purge_delay_ms, o->arenas, o->huge_pages, o->slabs, o->free_batch,
             o->stats, o->poison,
             o->alloc_fill, o->free_fill, o->alloc_fill_max, o->quarantine_bytes, o->backtrace_depth, o->check_interval,
             o->abort_on_error ? "abort" : "continue", o->leak_report, o->leak_exit_code, o->report_path,
             o->dump_signal, o->dump_at_exit, o->dump_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* The process-wide path once: defaults plus the environment, whose unknown key must come
     * back as one warning line on stderr and change nothing else. */
    setenv("RAMPART_OPTIONS", "stats=1:fuzz_harness_unknown_key=1", 0);
    const rp_options *o = rp_options_get();
    check_ranges("(RAMPART_OPTIONS)", o);
    if (o != rp_options_get())
        fuzz_fail("(RAMPART_OPTIONS)", "rp_options_get is not one process-wide object");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0; /* the parser reads a C string: it stops at the first NUL */

    rp_options got, again, ref;
    rp_options_defaults(&got);
    int warnings = parse_logged(text, &got);
    check_ranges(text, &got);

    rp_options_defaults(&ref);
    int ref_warnings = ref_parse(text, &ref);
    if (ref_warnings >= 0) {
        if (ref_warnings != warnings)
            fuzz_fail(text, "%d warnings, the reference expects %d", warnings, ref_warnings);
        if (!same_options(&got, &ref))
            fuzz_fail(text, "the parsed options differ from the reference");
    }

    /* Idempotent: the same text over its own result changes nothing. */
    again = got;
    if (parse_logged(text, &again) != warnings || !same_options(&again, &got))
        fuzz_fail(text, "parsing the same text twice changed the result");

    /* Round trip through text (all keys known to the reference). */
    if (ref_warnings < 0) {
        free(text);
        return 0;
    }
    char round[2 * RP_OPTION_PATH_MAX + 512];
    format_options(&got, round, sizeof round);
    rp_options back;
    rp_options_defaults(&back);
    if (parse_logged(round, &back) != 0 || !same_options(&back, &got))
        fuzz_fail(text, "the options written back as \"%s\" do not parse to the same values", round);

    free(text);
    return 0;
}
