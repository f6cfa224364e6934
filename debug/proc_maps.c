#define _GNU_SOURCE
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "src/bits.h"
#include "src/os.h"

/* Reads the whole file at path into scratch memory (doubling until it fits); *len receives
 * the bytes read, *cap the mapping's size. NULL on failure. */
static char *read_all(const char *path, size_t *len, size_t *cap)
{
    size_t size = 64 << 10;
    for (int tries = 0; tries < 12; tries++, size *= 2) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return NULL;
        char *buf = rp_os_scratch_map(size);
        if (!buf) {
            close(fd);
            return NULL;
        }
        size_t used = 0;
        for (;;) {
            ssize_t n = read(fd, buf + used, size - used);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            used += (size_t)n;
            if (used == size)
                break;
        }
        close(fd);
        if (used < size) {
            *len = used;
            *cap = size;
            return buf;
        }
        rp_os_scratch_unmap(buf, size);
    }
    return NULL;
}

static uintptr_t hex(const char **p, const char *end)
{
    uintptr_t v = 0;
    for (; *p < end; (*p)++) {
        char c = **p;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            break;
        v = v << 4 | d;
    }
    return v;
}

static const char *skip_field(const char *p, const char *end)
{
    while (p < end && *p != ' ')
        p++;
    while (p < end && *p == ' ')
        p++;
    return p;
}

/* One line "lo-hi perms offset dev inode   path" into *r. 0, or -1 for a line it does not
 * understand. */
static int parse_line(const char *p, const char *end, rp_map_range *r)
{
    memset(r, 0, sizeof *r);
    r->lo = hex(&p, end);
    if (p >= end || *p != '-')
        return -1;
    p++;
    r->hi = hex(&p, end);
    if (p + 5 > end || *p != ' ' || r->hi <= r->lo)
        return -1;
    p++;
    r->flags = (p[0] == 'r' ? RP_MAP_READ : 0) | (p[1] == 'w' ? RP_MAP_WRITE : 0) | (p[2] == 'x' ? RP_MAP_EXEC : 0) |
               (p[3] == 's' ? RP_MAP_SHARED : 0);
    p = skip_field(p, end); /* perms */
    p = skip_field(p, end); /* offset */
    p = skip_field(p, end); /* device */
    r->file = !(p < end && p[0] == '0' && (p + 1 == end || p[1] == ' '));
    p = skip_field(p, end); /* inode */
    size_t n = (size_t)(end - p);
    if (n >= sizeof r->name) {
        p = end - (sizeof r->name - 1);
        n = sizeof r->name - 1;
    }
    memcpy(r->name, p, n);
    r->name[n] = 0;
    return 0;
}

int rp_maps_read(rp_maps *m)
{
    memset(m, 0, sizeof *m);
    size_t len, cap;
    char *text = read_all("/proc/self/maps", &len, &cap);
    if (!text)
        return -1;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    size_t map_len = rp_align_up((lines + 1) * sizeof(rp_map_range), RP_OS_PAGE);
    rp_map_range *ranges = rp_os_scratch_map(map_len);
    if (!ranges) {
        rp_os_scratch_unmap(text, cap);
        return -1;
    }
    size_t n = 0;
    const char *p = text, *end = text + len;
    while (p < end && n <= lines) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        rp_map_range r;
        /* The kernel lists mappings in address order without overlap; keep it so. */
        if (parse_line(p, line_end, &r) == 0 && (n == 0 || r.lo >= ranges[n - 1].hi))
            ranges[n++] = r;
        p = line_end + 1;
    }
    rp_os_scratch_unmap(text, cap);
    m->ranges = ranges;
    m->n = n;
    m->map_len = map_len;
    return 0;
}

const rp_map_range *rp_maps_find(const rp_maps *m, uintptr_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->ranges[lo].lo <= addr ? &m->ranges[lo] : NULL;
}

void rp_maps_free(rp_maps *m)
{
    if (m->ranges)
        rp_os_scratch_unmap(m->ranges, m->map_len);
    memset(m, 0, sizeof *m);
}
