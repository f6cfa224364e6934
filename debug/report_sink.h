/* Where reports go: the report_path option — "stderr" (default), "stdout", or a file path in
 * which %p stands for the process id (opened once per process, appending; /dev/fd/N names an
 * inherited descriptor). Writing uses write(2) on a caller's buffer: no stdio, no allocation. */
#ifndef RP_DEBUG_REPORT_SINK_H
#define RP_DEBUG_REPORT_SINK_H

#include <stddef.h>

/* The report destination's file descriptor (stderr if the file cannot be opened; a warning
 * then goes to stderr once). */
int rp_sink_fd(void);

/* Writes all of [s, s+n) to fd (retrying short writes and EINTR). */
void rp_sink_write(int fd, const char *s, size_t n);

/* A line buffer that flushes to fd when full: reports are assembled in pieces without
 * allocating and written in a few large writes. */
typedef struct rp_sink_buf {
    int fd;
    size_t used;
    char data[4096];
} rp_sink_buf;

void rp_sink_begin(rp_sink_buf *b, int fd);
void rp_sink_puts(rp_sink_buf *b, const char *s, size_t n);
void rp_sink_printf(rp_sink_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_sink_flush(rp_sink_buf *b);

#endif
