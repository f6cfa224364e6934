/* options: arbitrary bytes into the RAMPART_OPTIONS parser (rp_options_parse, src/options.h).
 *
 * The parser must accept any bytes without crashing, hanging or allocating, and must do
 * exactly what options.h documents. A differential oracle: every input is parsed as both
 * flavours would (rp_options_parse_as) and by an independent reference written from that
 * documentation (key=value items separated by ':' or ',', blanks around items, keys and
 * values trimmed, keys matched without regard to case, sizes with K/M/G suffixes and decimal
 * or 0x numbers that must not wrap, booleans 0/1/true/false/yes/no/on/off, on_error
 * abort|continue, signals by number or [SIG]name, paths of 1..255 bytes without control
 * characters; a bad item gives one warning and changes nothing; the last setting of a key
 * wins; a key the flavour does not use is stored and warned about once): every accepted value
 * must be the reference's, every item the reference rejects must be rejected (same warning
 * count). Plus properties that need no reference: every warning is one printable line, the
 * count returned equals the lines passed to the callback, fields stay in range, parsing twice
 * changes nothing, writing the result back as text (this harness's own writer, and the
 * parser's rp_options_describe, what verbose=1 prints) and parsing that gives the same
 * options, and rp_options_help has one line per key naming it.
 *
 * Numbers are where parsers go wrong (a suffix that wraps, a bound off by one), and random
 * byte mutations rarely build a 17-digit number that wraps to a small one: a custom mutator
 * (LLVMFuzzerCustomMutator) replaces a value with a number at an edge (powers of two and
 * their neighbours, 2^64 divided by a suffix's multiple plus a little, each key's maximum),
 * decimal or hex, with or without a suffix; a custom cross-over splices items of two inputs.
 * options.dict gives libFuzzer the keys and words. */
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

/* The harness's own checks (warning lines byte by byte, struct comparisons) are kept out of
 * coverage feedback and comparison tracing: they guide nothing and would cost most of the
 * run time. The parser and the reference keep theirs. */
#if defined(__clang__) && __clang_major__ >= 13
#define NO_FEEDBACK __attribute__((no_sanitize("coverage")))
#else
#define NO_FEEDBACK
#endif

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

enum ref_type { R_SIZE, R_BOOL, R_UINT, R_ULONG, R_BYTE, R_MODE, R_SIGNAL, R_PATH, R_GUARD };

typedef struct ref_key {
    const char *name;
    enum ref_type type;
    size_t offset;
    unsigned long long max;
    const char *flavours; /* which flavours use it: both, debug, release */
} ref_key;

#define OFF(f) offsetof(rp_options, f)

static const ref_key ref_keys[] = {
    {"cache_bytes", R_SIZE, OFF(cache_bytes), 1ull << 32, "release"},
    {"retain_bytes", R_SIZE, OFF(retain_bytes), 1ull << 46, "both"},
    {"purge_delay_ms", R_UINT, OFF(purge_delay_ms), 3600000, "both"},
    {"mapped_block_bytes", R_SIZE, OFF(mapped_block_bytes), 1ull << 46, "release"},
    {"arenas", R_UINT, OFF(arenas), 64, "both"},
    {"ignore_foreign_free", R_BOOL, OFF(ignore_foreign_free), 1, "both"},
    {"hardened", R_BOOL, OFF(hardened), 1, "release"},
    {"huge_pages", R_BOOL, OFF(huge_pages), 1, "both"},
    {"slabs", R_BOOL, OFF(slabs), 1, "release"},
    {"free_batch", R_UINT, OFF(free_batch), 64, "release"},
    {"stats", R_BOOL, OFF(stats), 1, "both"},
    {"stats_json", R_BOOL, OFF(stats_json), 1, "both"},
    {"temporary_ms", R_UINT, OFF(temporary_ms), 3600000, "release"},
    {"profile", R_BOOL, OFF(profile), 1, "release"},
    {"profile_rate", R_SIZE, OFF(profile_rate), 1ull << 40, "release"},
    {"profile_seed", R_ULONG, OFF(profile_seed), ULONG_MAX, "release"},
    {"poison", R_BOOL, OFF(poison), 1, "debug"},
    {"alloc_fill", R_BYTE, OFF(alloc_fill), 255, "debug"},
    {"free_fill", R_BYTE, OFF(free_fill), 255, "debug"},
    {"alloc_fill_max", R_SIZE, OFF(alloc_fill_max), 1ull << 46, "debug"},
    {"quarantine_bytes", R_SIZE, OFF(quarantine_bytes), 1ull << 40, "debug"},
    {"backtrace_depth", R_UINT, OFF(backtrace_depth), 64, "debug"},
    {"fast_unwind", R_BOOL, OFF(fast_unwind), 1, "debug"},
    {"check_interval", R_ULONG, OFF(check_interval), ULONG_MAX, "debug"},
    {"on_error", R_MODE, OFF(abort_on_error), 1, "debug"},
    {"leak_report", R_BOOL, OFF(leak_report), 1, "debug"},
    {"check_at_exit", R_BOOL, OFF(check_at_exit), 1, "debug"},
    {"leak_exit_code", R_UINT, OFF(leak_exit_code), 255, "debug"},
    {"report_path", R_PATH, OFF(report_path), 0, "debug"},
    {"suppressions", R_PATH, OFF(suppressions), 0, "debug"},
    {"guard", R_GUARD, OFF(guard), 0xffffffffull, "both"},
    {"guard_left", R_BOOL, OFF(guard_left), 1, "both"},
    {"dump_signal", R_SIGNAL, OFF(dump_signal), 64, "both"},
    {"dump_at_exit", R_BOOL, OFF(dump_at_exit), 1, "both"},
    {"dump_path", R_PATH, OFF(dump_path), 0, "both"},
    {"dump_interval", R_UINT, OFF(dump_interval), 86400 * 366, "both"},
    {"dump_on_peak", R_BOOL, OFF(dump_on_peak), 1, "both"},
    {"dump_peak_step", R_SIZE, OFF(dump_peak_step), 1ull << 46, "both"},
    {"help", R_BOOL, OFF(help), 1, "both"},
    {"verbose", R_BOOL, OFF(verbose), 1, "both"},
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

static int ref_blank(char c) { return c == ' ' || c == '\t'; }

/* [s, s + n) without the blanks at either end. */
static void ref_trim(const char **s, size_t *n)
{
    while (*n && ref_blank((*s)[0]))
        ++*s, --*n;
    while (*n && ref_blank((*s)[*n - 1]))
        --*n;
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
            /* fault signals are refused: a handler would run again at the faulting instruction */
            static const int faults[] = {SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS};
            for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
                if (x == (unsigned long long)faults[i])
                    return 0;
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
    case R_GUARD: {
        /* off | 0, all | 1, sample:N with N from 1 to the maximum; blanks around ':' and N */
        if (same_word(v, n, "off") || same_word(v, n, "0")) {
            *(unsigned long *)field = 0;
            return 1;
        }
        if (same_word(v, n, "all") || same_word(v, n, "1")) {
            *(unsigned long *)field = 1;
            return 1;
        }
        if (n < 6 || strncasecmp(v, "sample", 6) != 0)
            return 0;
        const char *num = v + 6;
        size_t left = n - 6;
        ref_trim(&num, &left);
        if (!left || num[0] != ':')
            return 0;
        num++, left--;
        ref_trim(&num, &left);
        if (!ref_number(num, left, &x) || x < 1 || x > k->max)
            return 0;
        *(unsigned long *)field = (unsigned long)x;
        return 1;
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

static int ref_uses(const ref_key *k, rp_options_flavour flavour)
{
    return strcmp(k->flavours, "both") == 0 || strcmp(k->flavours, flavour == RP_OPTIONS_DEBUG ? "debug" : "release") == 0;
}

/* Is the item guard=sample (blanks around key and value aside)? */
static int ref_is_guard_sample(const char *item, size_t n)
{
    const char *eq = memchr(item, '=', n);
    if (!eq)
        return 0;
    const char *key = item, *val = eq + 1;
    size_t klen = (size_t)(eq - item), vlen = n - klen - 1;
    ref_trim(&key, &klen);
    ref_trim(&val, &vlen);
    return same_word(key, klen, "guard") && same_word(val, vlen, "sample");
}

/* Applies text to *o the way options.h documents for the flavour. Returns the number of
 * warnings, or -1 when the text names a key the parser knows (rp_options_docs) but this
 * reference does not (a key added later): then the outcome cannot be predicted here. */
static int ref_parse(const char *text, rp_options *o, rp_options_flavour flavour)
{
    size_t ndocs;
    const rp_option_doc *docs = rp_options_docs(&ndocs);
    int warnings = 0;
    unsigned char noted[NREF] = {0};
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ":,");
        const char *item = p;
        size_t n = len;
        ref_trim(&item, &n);
        if (p[len] == ':' && ref_is_guard_sample(item, n)) {
            /* guard=sample:N: the ':' belongs to the value */
            len += 1 + strcspn(p + len + 1, ":,");
            item = p;
            n = len;
            ref_trim(&item, &n);
        }
        const char *eq = memchr(item, '=', n);
        if (n && !eq) {
            warnings++;
        } else if (n) {
            const char *key = item, *val = eq + 1;
            size_t klen = (size_t)(eq - item), vlen = n - klen - 1;
            ref_trim(&key, &klen);
            ref_trim(&val, &vlen);
            const ref_key *k = NULL;
            for (size_t i = 0; i < NREF; i++)
                if (same_word(key, klen, ref_keys[i].name))
                    k = &ref_keys[i];
            if (!k) {
                for (size_t i = 0; i < ndocs; i++)
                    if (same_word(key, klen, docs[i].name))
                        return -1;
                warnings++;
            } else {
                if (!ref_uses(k, flavour) && !noted[k - ref_keys]++)
                    warnings++;
                if (!ref_value(k, val, vlen, o))
                    warnings++;
            }
        }
        if (!p[len])
            return warnings;
        p += len + 1;
    }
}

/* ---- properties ---------------------------------------------------------------------------- */

typedef struct warn_log {
    int lines;
    const char *text;
} warn_log;

NO_FEEDBACK static void on_warning(const char *line, void *arg)
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

static const char *flavour_name(rp_options_flavour f) { return f == RP_OPTIONS_DEBUG ? "debug" : "release"; }

/* rp_options_parse_as, checking the warnings passed against the count returned; for this
 * harness's own flavour (release) through rp_options_parse. */
static int parse_logged(const char *text, rp_options *o, rp_options_flavour flavour)
{
    warn_log w = {0, text};
    int n = flavour == rp_options_flavour_built() ? rp_options_parse(text, o, on_warning, &w)
                                                  : rp_options_parse_as(text, o, flavour, on_warning, &w);
    if (n != w.lines)
        fuzz_fail(text, "rp_options_parse_as(%s) returned %d warnings but passed %d lines", flavour_name(flavour), n,
                  w.lines);
    return n;
}

NO_FEEDBACK static void check_path(const char *text, const char *path, const char *name, int may_be_empty)
{
    size_t n = strnlen(path, RP_OPTION_PATH_MAX);
    if ((n == 0 && !may_be_empty) || n == RP_OPTION_PATH_MAX)
        fuzz_fail(text, "%s is empty or not terminated", name);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)path[i] < 0x20)
            fuzz_fail(text, "%s holds a control character", name);
}

/* Every field within what its key accepts; a path may be empty only when its default is (a
 * path is never set to nothing). */
NO_FEEDBACK static void check_ranges(const char *text, const rp_options *o)
{
    rp_options defaults;
    rp_options_defaults(&defaults);
    for (size_t i = 0; i < NREF; i++) {
        const ref_key *k = &ref_keys[i];
        const char *field = (const char *)o + k->offset;
        unsigned long long v = 0;
        switch (k->type) {
        case R_SIZE:
            v = *(const size_t *)field;
            break;
        case R_ULONG:
        case R_GUARD:
            v = *(const unsigned long *)field;
            break;
        case R_UINT:
        case R_BYTE:
            v = *(const unsigned *)field;
            break;
        case R_BOOL:
        case R_MODE:
        case R_SIGNAL:
            v = (unsigned long long)(long long)*(const int *)field;
            break;
        case R_PATH:
            check_path(text, field, k->name, ((const char *)&defaults + k->offset)[0] == 0);
            continue;
        }
        if (v > k->max)
            fuzz_fail(text, "%s is %llu, above its maximum %llu", k->name, v, k->max);
    }
}

/* Path fields are strings: bytes after their terminator (left by a longer earlier value) are
 * not part of the value. Clears them, so whole structs compare by value. */
NO_FEEDBACK static void normalise(rp_options *o)
{
    for (size_t i = 0; i < NREF; i++) {
        if (ref_keys[i].type != R_PATH)
            continue;
        char *path = (char *)o + ref_keys[i].offset;
        size_t n = strnlen(path, RP_OPTION_PATH_MAX);
        if (n < RP_OPTION_PATH_MAX)
            memset(path + n, 0, RP_OPTION_PATH_MAX - n);
    }
}

NO_FEEDBACK static int same_options(rp_options *a, rp_options *b)
{
    normalise(a);
    normalise(b);
    return memcmp(a, b, sizeof *a) == 0;
}

/* The options as text the parser must read back to the same values. */
/* The options as text the parser must read back to the same values, written here (not with
 * rp_options_describe), every key the reference knows but an empty path. Returns how many of
 * the keys written the flavour does not use (one warning each when parsed). */
static int format_options(const rp_options *o, rp_options_flavour flavour, char *buf, size_t cap)
{
    size_t at = 0;
    int unused = 0;
    buf[0] = 0;
    for (size_t i = 0; i < NREF && at < cap; i++) {
        const ref_key *k = &ref_keys[i];
        const char *field = (const char *)o + k->offset;
        char value[RP_OPTION_PATH_MAX + 32];
        switch (k->type) {
        case R_SIZE:
            snprintf(value, sizeof value, "%zu", *(const size_t *)field);
            break;
        case R_ULONG:
            snprintf(value, sizeof value, "%lu", *(const unsigned long *)field);
            break;
        case R_UINT:
        case R_BYTE:
            snprintf(value, sizeof value, "%u", *(const unsigned *)field);
            break;
        case R_BOOL:
        case R_SIGNAL:
            snprintf(value, sizeof value, "%d", *(const int *)field);
            break;
        case R_MODE:
            snprintf(value, sizeof value, "%s", *(const int *)field ? "abort" : "continue");
            break;
        case R_GUARD: {
            unsigned long g = *(const unsigned long *)field;
            snprintf(value, sizeof value, g == 0 ? "off" : "sample:%lu", g);
            break;
        }
        case R_PATH:
            if (!field[0])
                continue;
            snprintf(value, sizeof value, "%s", field);
            break;
        }
        at += (size_t)snprintf(buf + at, cap - at, "%s%s=%s", at ? ":" : "", k->name, value);
        unused += !ref_uses(k, flavour);
    }
    return unused;
}

static size_t ref_field_size(const ref_key *k)
{
    switch (k->type) {
    case R_SIZE:
        return sizeof(size_t);
    case R_ULONG:
    case R_GUARD:
        return sizeof(unsigned long);
    case R_PATH:
        return RP_OPTION_PATH_MAX;
    default:
        return sizeof(int);
    }
}

/* rp_options_describe's lines (what verbose=1 prints), joined with ':'. */
typedef struct described {
    char text[64 * 1024];
    size_t len;
    int lines;
    const char *input;
} described;

NO_FEEDBACK static void on_described(const char *line, void *arg)
{
    described *d = arg;
    int n = snprintf(d->text + d->len, sizeof d->text - d->len, "%s%s", d->lines ? ":" : "", line);
    if (n < 0 || (size_t)n >= sizeof d->text - d->len)
        fuzz_fail(d->input, "rp_options_describe wrote more than %zu bytes", sizeof d->text);
    d->len += (size_t)n;
    d->lines++;
}

/* What verbose=1 prints, parsed back, gives the same options: every key the flavour uses
 * once, the others left alone. */
static void check_describe(const char *text, const rp_options *got, rp_options_flavour flavour)
{
    static described d;
    d.len = 0;
    d.lines = 0;
    d.input = text;
    d.text[0] = 0;
    rp_options_describe(got, flavour, on_described, &d);
    int used = 0;
    rp_options back;
    rp_options_defaults(&back);
    for (size_t i = 0; i < NREF; i++) {
        if (ref_uses(&ref_keys[i], flavour) &&
            !(ref_keys[i].type == R_PATH && ((const char *)got + ref_keys[i].offset)[0] == 0))
            used++; /* written by rp_options_describe (an empty path is left out) */
        else if (!ref_uses(&ref_keys[i], flavour))
            memcpy((char *)&back + ref_keys[i].offset, (const char *)got + ref_keys[i].offset,
                   ref_field_size(&ref_keys[i]));
    }
    if (d.lines != used)
        fuzz_fail(text, "rp_options_describe(%s) wrote %d lines for %d keys", flavour_name(flavour), d.lines, used);
    warn_log w = {0, d.text};
    if (rp_options_parse_as(d.text, &back, flavour, on_warning, &w) != 0)
        fuzz_fail(text, "what verbose=1 prints (\"%s\") does not parse without warnings", d.text);
    rp_options want = *got;
    if (!same_options(&back, &want))
        fuzz_fail(text, "what verbose=1 prints (\"%s\") parses to other values", d.text);
}

/* The differential check as the flavour parses text; with round_trips, also writing the
 * result back (this harness's writer and rp_options_describe) and parsing it again. */
static void check_flavour(const char *text, rp_options_flavour flavour, int round_trips)
{
    rp_options got, again, ref;
    rp_options_defaults(&got);
    int warnings = parse_logged(text, &got, flavour);
    check_ranges(text, &got);

    rp_options_defaults(&ref);
    int ref_warnings = ref_parse(text, &ref, flavour);
    if (ref_warnings >= 0) {
        if (ref_warnings != warnings)
            fuzz_fail(text, "%s flavour: %d warnings, the reference expects %d", flavour_name(flavour), warnings,
                      ref_warnings);
        if (!same_options(&got, &ref)) {
            for (size_t i = 0; i < NREF; i++)
                if (memcmp((char *)&got + ref_keys[i].offset, (char *)&ref + ref_keys[i].offset,
                           ref_field_size(&ref_keys[i])) != 0)
                    fuzz_fail(text, "%s flavour: %s parsed to another value than the reference's",
                              flavour_name(flavour), ref_keys[i].name);
            fuzz_fail(text, "%s flavour: the parsed options differ from the reference", flavour_name(flavour));
        }
    }

    /* Idempotent: the same text over its own result changes nothing. */
    again = got;
    if (parse_logged(text, &again, flavour) != warnings || !same_options(&again, &got))
        fuzz_fail(text, "parsing the same text twice changed the result");

    if (!round_trips)
        return;
    check_describe(text, &got, flavour);

    /* Round trip through text (all keys known to the reference); keys the flavour does not
     * use are warned about, nothing else. */
    if (ref_warnings < 0)
        return;
    char round[3 * RP_OPTION_PATH_MAX + 1024];
    int unused = format_options(&got, flavour, round, sizeof round);
    rp_options back;
    rp_options_defaults(&back);
    if (parse_logged(round, &back, flavour) != unused || !same_options(&back, &got))
        fuzz_fail(text, "the options written back as \"%s\" do not parse to the same values", round);
}

/* ---- mutation: numbers at their edges, items of two inputs spliced ------------------------- */

/* libFuzzer's own mutator (absent from the replay build, which never mutates). */
__attribute__((weak)) size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* A number at an edge, as text: decimal or hex, with a suffix or none. */
static size_t edge_number(uint64_t *rnd, char *out, size_t cap)
{
    static const char suffixes[] = "kKmMgG";
    uint64_t r = next_random(rnd);
    unsigned shift = 0;
    char suffix = 0;
    if (r & 1) {
        unsigned s = (unsigned)(r >> 1) % 6;
        suffix = suffixes[s];
        shift = 10 * (s / 2 + 1);
    }
    r >>= 4;
    uint64_t v;
    int64_t delta = (int64_t)(r % 5) - 2;
    r >>= 3;
    switch (r % 4) {
    case 0: /* past what the suffix can scale: wraps if multiplied blindly */
        v = (shift ? (UINT64_MAX >> shift) + 1 : UINT64_MAX - 2) + (uint64_t)(r >> 2) % 3 * (shift ? 1ull << (64 - shift) : 1);
        break;
    case 1: /* a key's maximum, in the unit of the suffix */
        v = ref_keys[(r >> 2) % NREF].max >> shift;
        break;
    default: /* a power of two */
        v = 1ull << ((r >> 2) % 64);
        break;
    }
    v += (uint64_t)delta;
    if ((r >> 8) & 1)
        return (size_t)snprintf(out, cap, "0x%llx%.*s", (unsigned long long)v, suffix ? 1 : 0, &suffix);
    return (size_t)snprintf(out, cap, "%llu%.*s", (unsigned long long)v, suffix ? 1 : 0, &suffix);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t rnd = seed * 0x9e3779b97f4a7c15ull + 1;
    if (next_random(&rnd) % 4 != 0 || size == 0)
        return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    /* Replace the value of one item (after its '=') by a number at an edge. */
    size_t values[64], nvalues = 0;
    for (size_t i = 0; i < size && nvalues < 64; i++)
        if (data[i] == '=')
            values[nvalues++] = i + 1;
    if (nvalues == 0)
        return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    size_t at = values[next_random(&rnd) % nvalues], end = at;
    while (end < size && data[end] != ':' && data[end] != ',' && data[end] != 0)
        end++;
    char number[48];
    size_t n = edge_number(&rnd, number, sizeof number);
    if (size - (end - at) + n > max_size)
        return size;
    memmove(data + at + n, data + end, size - end);
    memcpy(data + at, number, n);
    return size - (end - at) + n;
}

/* The items of the first input up to a random one, then the second input's from a random one. */
size_t LLVMFuzzerCustomCrossOver(const uint8_t *a, size_t asize, const uint8_t *b, size_t bsize, uint8_t *out,
                                 size_t max_out, unsigned int seed)
{
    uint64_t rnd = seed * 0x9e3779b97f4a7c15ull + 7;
    size_t cut_a = asize ? (size_t)(next_random(&rnd) % (asize + 1)) : 0;
    size_t cut_b = bsize ? (size_t)(next_random(&rnd) % (bsize + 1)) : 0;
    while (cut_a < asize && a[cut_a] != ':' && a[cut_a] != ',')
        cut_a++;
    while (cut_b > 0 && b[cut_b - 1] != ':' && b[cut_b - 1] != ',')
        cut_b--;
    size_t n = 0;
    for (size_t i = 0; i < cut_a && n < max_out; i++)
        out[n++] = a[i];
    if (n < max_out)
        out[n++] = ':';
    for (size_t i = cut_b; i < bsize && n < max_out; i++)
        out[n++] = b[i];
    return n;
}

/* ---- the target ------------------------------------------------------------------------------ */

NO_FEEDBACK static void on_help(const char *line, void *arg)
{
    size_t *i = arg, ndocs;
    const rp_option_doc *docs = rp_options_docs(&ndocs);
    if (*i >= ndocs)
        fuzz_fail("(help)", "rp_options_help wrote more lines than there are keys: \"%s\"", line);
    size_t n = strlen(docs[*i].name);
    if (strncmp(line, docs[*i].name, n) != 0 || line[n] != ' ' || !strstr(line, docs[*i].help) ||
        !strstr(line, docs[*i].flavours) || !strstr(line, " default "))
        fuzz_fail("(help)", "help line %zu \"%s\" does not describe %s", *i, line, docs[*i].name);
    ++*i;
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
    /* The reference's table against the parser's: same flavours for every key both know. */
    size_t ndocs;
    const rp_option_doc *docs = rp_options_docs(&ndocs);
    for (size_t i = 0; i < NREF; i++)
        for (size_t j = 0; j < ndocs; j++)
            if (strcmp(ref_keys[i].name, docs[j].name) == 0 && strcmp(ref_keys[i].flavours, docs[j].flavours) != 0)
                fuzz_fail("(docs)", "%s is used by %s flavours, the reference says %s", docs[j].name,
                          docs[j].flavours, ref_keys[i].flavours);
    if (rp_options_flavour_built() != RP_OPTIONS_RELEASE)
        fuzz_fail("(flavour)", "the options target links the release flavour, rp_options_flavour_built says debug");
    size_t lines = 0;
    rp_options_help(on_help, &lines);
    if (lines != ndocs)
        fuzz_fail("(help)", "rp_options_help wrote %zu lines for %zu keys", lines, ndocs);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0; /* the parser reads a C string: it stops at the first NUL */

    /* Both flavours against the reference; the round trips (formatting is most of their cost)
     * for one of them, chosen by the input's length. */
    check_flavour(text, RP_OPTIONS_RELEASE, (size & 1) == 0);
    check_flavour(text, RP_OPTIONS_DEBUG, (size & 1) == 1);
    free(text);
    return 0;
}
