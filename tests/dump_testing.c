#define _GNU_SOURCE
#include "dump_testing.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "json_lite.h"

extern char **environ;
const char *rpdump_path;

typedef struct sink {
    char *buf;
    size_t len, cap;
} sink;

static void sink_add(sink *s, const char *p, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b)
            return;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = 0;
}

int run_tool(char *const argv[], char *const env[], tool_run *r)
{
    memset(r, 0, sizeof *r);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    sink so = {0}, se = {0};
    struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(p[i].fd);
                p[i].fd = -1;
                open_fds--;
            } else {
                sink_add(i ? &se : &so, buf, (size_t)n);
            }
        }
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->maxrss_kb = ru.ru_maxrss;
    r->out = so.buf ? so.buf : strdup("");
    r->err = se.buf ? se.buf : strdup("");
    return 0;
}

void tool_run_free(tool_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int rpdump_runv(tool_run *r, va_list ap)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)rpdump_path;
    const char *a;
    while (n < 15 && (a = va_arg(ap, const char *)))
        argv[n++] = (char *)a;
    argv[n] = NULL;
    return run_tool(argv, NULL, r);
}

int rpdump_run(tool_run *r, ...)
{
    va_list ap;
    va_start(ap, r);
    int rc = rpdump_runv(r, ap);
    va_end(ap);
    return rc;
}

jv *rpdump_json(tool_run *r, ...)
{
    va_list ap;
    va_start(ap, r);
    int rc = rpdump_runv(r, ap);
    va_end(ap);
    if (rc != 0)
        return NULL;
    char err[200];
    jv *v = jv_parse(r->out, err, sizeof err);
    if (!v)
        fprintf(stderr, "rpdump printed no valid JSON (%s); stdout:\n%s\nstderr:\n%s\n", err, r->out, r->err);
    return v;
}

const char *tmp_path(const char *name)
{
    static char bufs[8][4096];
    static int next;
    char *b = bufs[next++ & 7];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(b, 4096, "%s/%s", dir ? dir : "/tmp", name);
    return b;
}

uint8_t *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    if (!buf || done != (size_t)st.st_size) {
        free(buf);
        return NULL;
    }
    *len = done;
    return buf;
}

int write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, (const char *)data + done, len - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

size_t dump_section_count(const uint8_t *buf, size_t len)
{
    if (len < RPD_FOOTER_BYTES)
        return 0;
    rpd_footer f;
    rpd_footer_decode(buf + len - RPD_FOOTER_BYTES, &f);
    return f.section_count;
}

uint64_t dump_entry_offset(const uint8_t *buf, size_t len, size_t i)
{
    rpd_footer f;
    rpd_footer_decode(buf + len - RPD_FOOTER_BYTES, &f);
    return f.table_offset + i * RPD_ENTRY_BYTES;
}

int dump_reseal(uint8_t *buf, size_t len)
{
    if (len < RPD_HEADER_BYTES + RPD_FOOTER_BYTES)
        return -1;
    uint8_t *foot = buf + len - RPD_FOOTER_BYTES;
    rpd_footer f;
    rpd_footer_decode(foot, &f);
    if (f.table_offset > len - RPD_FOOTER_BYTES ||
        (uint64_t)f.section_count * RPD_ENTRY_BYTES > len - RPD_FOOTER_BYTES - f.table_offset)
        return -1;
    for (size_t i = 0; i < f.section_count; i++) {
        uint8_t *raw = buf + f.table_offset + i * RPD_ENTRY_BYTES;
        rpd_entry e;
        rpd_entry_decode(raw, &e);
        if (e.offset <= len && e.length <= len - e.offset) {
            e.crc = rpd_crc32c(0, buf + e.offset, (size_t)e.length);
            rpd_entry_encode(&e, raw);
        }
    }
    f.table_crc = rpd_crc32c(0, buf + f.table_offset, (size_t)f.section_count * RPD_ENTRY_BYTES);
    rpd_footer_encode(&f, foot);
    uint8_t head[RPD_HEADER_BYTES];
    memcpy(head, buf, sizeof head);
    rpd_put32(head + 28, rpd_crc32c(0, head, 28));
    memcpy(buf, head, sizeof head);
    return 0;
}

const char *find_program(const char *name)
{
    static char out[4096];
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/bin", path && *path ? path : "");
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":")) {
        if (snprintf(out, sizeof out, "%s/%s", dir, name) < (int)sizeof out && access(out, X_OK) == 0)
            return out;
    }
    return NULL;
}

int svg_render(const char *svg, const char *png, unsigned *width, unsigned *height, size_t *png_bytes)
{
    const char *tool = find_program("rsvg-convert");
    if (!tool) {
        fprintf(stderr, "rsvg-convert is not installed (tools/setup.sh installs librsvg2-bin)\n");
        return -1;
    }
    char tool_path[4096];
    snprintf(tool_path, sizeof tool_path, "%s", tool);
    char *argv[] = {tool_path, "-o", (char *)png, (char *)svg, NULL};
    tool_run r;
    if (run_tool(argv, NULL, &r) != 0 || r.status != 0) {
        fprintf(stderr, "rsvg-convert %s failed (status %d): %s\n", svg, r.status, r.err ? r.err : "");
        tool_run_free(&r);
        return -1;
    }
    tool_run_free(&r);
    size_t len = 0;
    uint8_t *buf = read_file(png, &len);
    if (!buf || len < 24 || memcmp(buf, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(buf + 12, "IHDR", 4) != 0) {
        fprintf(stderr, "rsvg-convert %s: %s is not a PNG\n", svg, png);
        free(buf);
        return -1;
    }
    *width = (unsigned)buf[16] << 24 | (unsigned)buf[17] << 16 | (unsigned)buf[18] << 8 | buf[19];
    *height = (unsigned)buf[20] << 24 | (unsigned)buf[21] << 16 | (unsigned)buf[22] << 8 | buf[23];
    *png_bytes = len;
    free(buf);
    return 0;
}
