/* Dumps to a file named by a pattern: %p = pid, %n = sequence number, %% = '%'.
 * The file is written under PATH.tmp and renamed, so readers never see half a dump. No
 * stdio and no allocation: this runs in the dumper thread and at exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* rename */
#include <string.h>
#include <unistd.h>

#include "debug/dump_internal.h"
#include "debug/rampart_dump.h"
#include "src/options.h"

#define DUMP_PATH_MAX 4096

static uint64_t next_sequence; /* atomic: %n of the next dump */

/* Appends the decimal digits of v at out[at]; returns the new length, or cap when they do not
 * fit (the caller then reports ENAMETOOLONG). */
static size_t append_decimal(char *out, size_t at, size_t cap, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (at + n >= cap)
        return cap;
    while (n)
        out[at++] = digits[--n];
    return at;
}

int rpd_expand_path(const char *pattern, long pid, uint64_t sequence, char *out, size_t len)
{
    size_t at = 0;
    for (const char *p = pattern; *p && at < len; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            at = append_decimal(out, at, len, (uint64_t)pid);
            p++;
        } else if (p[0] == '%' && p[1] == 'n') {
            at = append_decimal(out, at, len, sequence);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            out[at++] = '%';
            p++;
        } else {
            out[at++] = *p;
        }
    }
    if (at >= len) {
        if (len)
            out[len - 1] = 0;
        errno = ENAMETOOLONG;
        return -1;
    }
    out[at] = 0;
    return 0;
}

int rpd_dump_to_path_for(const char *pattern, unsigned reason, char *path_out, size_t len)
{
    if (!pattern)
        pattern = rp_options_get()->dump_path;
    uint64_t sequence = __atomic_fetch_add(&next_sequence, 1, __ATOMIC_RELAXED);
    char path[DUMP_PATH_MAX], tmp[DUMP_PATH_MAX + 4];
    if (rpd_expand_path(pattern, (long)getpid(), sequence, path, sizeof path) != 0)
        return -1;
    size_t n = strlen(path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = rpd_write_dump(fd, NULL, reason, sequence);
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        errno = err;
        return -1;
    }
    if (path_out && len) {
        size_t k = n < len - 1 ? n : len - 1;
        memcpy(path_out, path, k);
        path_out[k] = 0;
    }
    return 0;
}

int rp_dump_to_path(const char *pattern, char *path_out, size_t len)
{
    return rpd_dump_to_path_for(pattern, RPD_REASON_CALL, path_out, len);
}
