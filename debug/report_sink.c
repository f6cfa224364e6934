#define _GNU_SOURCE
#include "report_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/options.h"

static int sink_fd = -1;
static pid_t sink_pid;      /* process that opened a per-process (%p) file */
static int sink_per_process;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

/* Expands %p (pid) and %% in pattern into out; 0, or -1 if it does not fit. */
static int expand_path(const char *pattern, char *out, size_t len)
{
    size_t used = 0;
    for (const char *c = pattern; *c; c++) {
        char piece[32];
        size_t n;
        if (c[0] == '%' && c[1] == 'p') {
            n = (size_t)snprintf(piece, sizeof piece, "%ld", (long)getpid());
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            piece[0] = '%';
            n = 1;
            c++;
        } else {
            piece[0] = *c;
            n = 1;
        }
        if (used + n + 1 > len)
            return -1;
        memcpy(out + used, piece, n);
        used += n;
    }
    out[used] = 0;
    return 0;
}

static void warn(const char *what, const char *path)
{
    char line[RP_OPTION_PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "rampart: cannot open report_path '%s' (%s); reports go to stderr\n", path,
                     what);
    if (n > 0)
        rp_sink_write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Sink lock held. */
static void sink_open(void)
{
    const char *path = rp_options_get()->report_path;
    sink_fd = STDERR_FILENO;
    if (strcmp(path, "stderr") == 0)
        return;
    if (strcmp(path, "stdout") == 0) {
        sink_fd = STDOUT_FILENO;
        return;
    }
    char expanded[RP_OPTION_PATH_MAX + 32];
    if (expand_path(path, expanded, sizeof expanded) != 0) {
        warn("too long", path);
        return;
    }
    int fd = open(expanded, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        warn(strerror(errno), expanded);
        return;
    }
    sink_fd = fd;
    sink_per_process = strstr(path, "%p") != NULL;
    sink_pid = getpid();
}

int rp_sink_fd(void)
{
    pthread_mutex_lock(&sink_lock);
    if (sink_fd < 0) {
        sink_open();
    } else if (sink_per_process && getpid() != sink_pid) {
        /* A forked child reports into its own file, as the %p in the path promises. */
        close(sink_fd);
        sink_open();
    }
    int fd = sink_fd;
    pthread_mutex_unlock(&sink_lock);
    return fd;
}

void rp_sink_write(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

void rp_sink_begin(rp_sink_buf *b, int fd)
{
    b->fd = fd;
    b->used = 0;
}

void rp_sink_flush(rp_sink_buf *b)
{
    rp_sink_write(b->fd, b->data, b->used);
    b->used = 0;
}

void rp_sink_puts(rp_sink_buf *b, const char *s, size_t n)
{
    while (n > 0) {
        if (b->used == sizeof b->data)
            rp_sink_flush(b);
        size_t room = sizeof b->data - b->used;
        size_t k = n < room ? n : room;
        memcpy(b->data + b->used, s, k);
        b->used += k;
        s += k;
        n -= k;
    }
}

void rp_sink_printf(rp_sink_buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    rp_sink_puts(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
