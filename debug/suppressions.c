#define _GNU_SOURCE
#include "suppressions.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "src/options.h"
#include "symbolize.h"

typedef struct suppression {
    char pattern[RP_SUPPRESSION_LEN];
    size_t count, bytes; /* leaks hidden since the last "Suppressions used" table */
} suppression;

static suppression table[RP_SUPPRESSIONS_MAX];
static unsigned ntable;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t used_lock = PTHREAD_MUTEX_INITIALIZER;

/* Wildcard match of the whole text: '*' matches any run (greedy, with backtracking to the
 * last star). */
static int glob(const char *p, const char *pe, const char *t, const char *te)
{
    const char *star = NULL, *resume = NULL;
    while (t < te) {
        if (p < pe && *p == '*') {
            star = ++p;
            resume = t;
        } else if (p < pe && *p == *t) {
            p++;
            t++;
        } else if (star) {
            p = star;
            t = ++resume;
        } else {
            return 0;
        }
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

int rp_suppression_pattern_matches(const char *pattern, const char *text)
{
    if (!pattern || !text || !*text)
        return 0;
    /* "^x" anchors at the start, "x$" at the end; otherwise x may match anywhere: the
     * pattern gets an implicit star on each unanchored side. */
    char buf[RP_SUPPRESSION_LEN + 4];
    size_t n = strlen(pattern);
    if (n >= RP_SUPPRESSION_LEN)
        return 0;
    size_t k = 0;
    const char *p = pattern, *pe = pattern + n;
    if (p < pe && *p == '^')
        p++;
    else
        buf[k++] = '*';
    int end_anchor = pe > p && pe[-1] == '$';
    if (end_anchor)
        pe--;
    memcpy(buf + k, p, (size_t)(pe - p));
    k += (size_t)(pe - p);
    if (!end_anchor)
        buf[k++] = '*';
    return glob(buf, buf + k, text, text + strlen(text));
}

static void warn_line(const char *fmt, const char *arg)
{
    rp_sink_buf b;
    rp_sink_begin(&b, rp_sink_fd());
    rp_sink_printf(&b, fmt, arg);
    rp_sink_flush(&b);
}

/* One line of the file (without its newline). */
static void add_line(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n == 0 || *s == '#')
        return;
    char shown[96];
    size_t m = n < sizeof shown - 1 ? n : sizeof shown - 1;
    memcpy(shown, s, m);
    shown[m] = 0;
    if (n <= 5 || strncmp(s, "leak:", 5) != 0) {
        warn_line("rampart: suppressions: '%s' is not a leak:PATTERN line; ignored\n", shown);
        return;
    }
    s += 5;
    n -= 5;
    if (n >= RP_SUPPRESSION_LEN || ntable == RP_SUPPRESSIONS_MAX) {
        warn_line("rampart: suppressions: '%s' is too long, or too many lines; ignored\n", shown);
        return;
    }
    memcpy(table[ntable].pattern, s, n);
    table[ntable].pattern[n] = 0;
    ntable++;
}

static void load(void)
{
    const char *path = rp_options_get()->suppressions;
    if (!path[0])
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        warn_line("rampart: cannot read the suppressions file '%s'; no leak is suppressed\n", path);
        return;
    }
    char buf[4096], line[RP_SUPPRESSION_LEN + 64];
    size_t used = 0;
    int too_long = 0;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (ssize_t i = 0; i < got; i++) {
            char c = buf[i];
            if (c == '\n') {
                if (!too_long)
                    add_line(line, used);
                used = 0;
                too_long = 0;
            } else if (used < sizeof line) {
                line[used++] = c == 0 ? ' ' : c;
            } else if (!too_long) {
                too_long = 1;
                line[sizeof line - 1] = 0;
                warn_line("rampart: suppressions: a line too long to be a pattern; ignored%s\n", "");
            }
        }
    }
    if (used && !too_long)
        add_line(line, used);
    close(fd);
}

static int matches(const char *pattern, const rp_frame_info *f)
{
    return rp_suppression_pattern_matches(pattern, f->function) || rp_suppression_pattern_matches(pattern, f->file) ||
           rp_suppression_pattern_matches(pattern, f->module);
}

int rp_suppression_match(const uintptr_t *frames, unsigned n)
{
    pthread_once(&load_once, load);
    if (!ntable)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        rp_frame_info f;
        rp_symbolize_pc(frames[i], &f);
        for (unsigned k = 0; k < ntable; k++)
            if (matches(table[k].pattern, &f))
                return (int)k;
    }
    return -1;
}

void rp_suppression_used(int idx, size_t count, size_t bytes)
{
    if (idx < 0 || (unsigned)idx >= ntable)
        return;
    pthread_mutex_lock(&used_lock);
    table[idx].count += count;
    table[idx].bytes += bytes;
    pthread_mutex_unlock(&used_lock);
}

void rp_suppressions_print_used(rp_sink_buf *b)
{
    pthread_mutex_lock(&used_lock);
    int any = 0;
    for (unsigned k = 0; k < ntable; k++)
        any |= table[k].count != 0;
    if (any) {
        rp_sink_printf(b, "-----------------------------------------------------\n");
        rp_sink_printf(b, "Suppressions used:\n");
        rp_sink_printf(b, "  count      bytes template\n");
        for (unsigned k = 0; k < ntable; k++) {
            if (!table[k].count)
                continue;
            rp_sink_printf(b, "%7zu %10zu %s\n", table[k].count, table[k].bytes, table[k].pattern);
            table[k].count = table[k].bytes = 0;
        }
        rp_sink_printf(b, "-----------------------------------------------------\n\n");
    }
    pthread_mutex_unlock(&used_lock);
}
