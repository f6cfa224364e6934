#include "dump_encoder.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void fail(rpd_encoder *e, int err)
{
    if (!e->error)
        e->error = err ? err : EIO;
}

static void flush(rpd_encoder *e)
{
    size_t done = 0;
    while (!e->error && done < e->used) {
        ssize_t n = write(e->fd, e->buf + done, e->used - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fail(e, n < 0 ? errno : EIO);
            break;
        }
        done += (size_t)n;
    }
    e->used = 0;
}

/* Buffers bytes outside any section's checksum bookkeeping. */
static void emit(rpd_encoder *e, const void *p, size_t n)
{
    const uint8_t *src = p;
    while (n && !e->error) {
        if (e->used == e->cap)
            flush(e);
        size_t k = e->cap - e->used < n ? e->cap - e->used : n;
        memcpy(e->buf + e->used, src, k);
        e->used += k;
        e->offset += k;
        src += k;
        n -= k;
    }
}

void rpd_enc_init(rpd_encoder *e, int fd, void *buf, size_t cap, rpd_entry *table, size_t table_cap,
                  uint32_t flags)
{
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->buf = buf;
    e->cap = cap;
    e->table = table;
    e->table_cap = table_cap;
    if (!buf || cap < 256 || fd < 0) {
        fail(e, EINVAL);
        return;
    }
    rpd_header h = {0};
    h.major = RPD_VERSION_MAJOR;
    h.minor = RPD_VERSION_MINOR;
    h.byte_order = RPD_BYTE_ORDER_LITTLE;
    h.pointer_bytes = 8;
    h.header_bytes = RPD_HEADER_BYTES;
    h.flags = flags;
    uint8_t raw[RPD_HEADER_BYTES];
    rpd_header_encode(&h, raw);
    emit(e, raw, sizeof raw);
}

void rpd_enc_begin(rpd_encoder *e, uint32_t type, uint32_t heap, uint32_t record_bytes)
{
    if (e->in_section)
        fail(e, EINVAL);
    if (e->sections >= e->table_cap)
        fail(e, ENOSPC);
    if (e->error)
        return;
    memset(&e->current, 0, sizeof e->current);
    e->current.type = type;
    e->current.heap = heap;
    e->current.offset = e->offset;
    e->current.record_bytes = record_bytes;
    e->in_section = 1;
}

void rpd_enc_put(rpd_encoder *e, const void *p, size_t n)
{
    if (e->error)
        return;
    if (!e->in_section) {
        fail(e, EINVAL);
        return;
    }
    e->current.crc = rpd_crc32c(e->current.crc, p, n);
    e->current.length += n;
    emit(e, p, n);
}

void rpd_enc_record(rpd_encoder *e, const void *p, size_t n)
{
    rpd_enc_put(e, p, n);
    e->current.count++;
}

void rpd_enc_end(rpd_encoder *e)
{
    if (e->error)
        return;
    if (!e->in_section) {
        fail(e, EINVAL);
        return;
    }
    e->table[e->sections++] = e->current;
    e->in_section = 0;
}

int rpd_enc_finish(rpd_encoder *e)
{
    if (e->in_section)
        fail(e, EINVAL);
    rpd_footer f = {0};
    f.table_offset = e->offset;
    f.section_count = (uint32_t)e->sections;
    uint32_t crc = 0;
    for (size_t i = 0; i < e->sections && !e->error; i++) {
        uint8_t raw[RPD_ENTRY_BYTES];
        rpd_entry_encode(&e->table[i], raw);
        crc = rpd_crc32c(crc, raw, sizeof raw);
        emit(e, raw, sizeof raw);
    }
    f.table_crc = crc;
    f.file_bytes = e->offset + RPD_FOOTER_BYTES;
    uint8_t raw[RPD_FOOTER_BYTES];
    rpd_footer_encode(&f, raw);
    emit(e, raw, sizeof raw);
    flush(e);
    if (e->error) {
        errno = e->error;
        return -1;
    }
    return 0;
}

void rpd_enc_stack(rpd_encoder *e, uint32_t id, const uintptr_t *frames, unsigned n)
{
    if (n > RPD_MAX_FRAMES)
        n = RPD_MAX_FRAMES;
    uint8_t raw[RPD_STACK_HEAD_BYTES + 8 * RPD_MAX_FRAMES];
    rpd_put32(raw, id);
    rpd_put32(raw + 4, n);
    for (unsigned i = 0; i < n; i++)
        rpd_put64(raw + RPD_STACK_HEAD_BYTES + 8 * i, frames[i]);
    rpd_enc_record(e, raw, RPD_STACK_HEAD_BYTES + 8 * (size_t)n);
}
