/* The dump reader: rpd_open's checks, streaming readers for blocks and stacks. */
#define _GNU_SOURCE
#include "dump_parser.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rpd_fail(rpd_error *err, uint64_t offset, const char *fmt, ...)
{
    if (err && !err->message[0]) {
        err->offset = offset;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (!err->message[0])
            snprintf(err->message, sizeof err->message, "error");
    }
    return -1;
}

/* ---- sources ---------------------------------------------------------------------------- */

void rpd_source_memory(rpd_source *s, const void *data, size_t len)
{
    s->data = data;
    s->fd = -1;
    s->size = len;
}

int rpd_source_file(rpd_source *s, const char *path, rpd_error *err)
{
    s->data = NULL;
    s->size = 0;
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0)
        return rpd_fail(err, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(s->fd);
        s->fd = -1;
        return rpd_fail(err, 0, "not a regular file (dumps are read with random access)");
    }
    s->size = (uint64_t)st.st_size;
    return 0;
}

void rpd_source_close(rpd_source *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

int rpd_source_read(const rpd_source *s, uint64_t off, void *buf, size_t len, rpd_error *err)
{
    if (off > s->size || len > s->size - off)
        return rpd_fail(err, off > s->size ? s->size : off,
                        "truncated: %zu bytes needed at offset %llu, the dump ends at %llu", len,
                        (unsigned long long)off, (unsigned long long)s->size);
    if (s->data) {
        memcpy(buf, s->data + off, len);
        return 0;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(s->fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return rpd_fail(err, off + done, "read failed: %s", n < 0 ? strerror(errno) : "file shrank");
        done += (size_t)n;
    }
    return 0;
}

void rpd_reader_init(rpd_reader *r, const rpd_source *src, uint64_t start, uint64_t end)
{
    r->src = src;
    r->pos = start;
    r->end = end;
    r->buf_start = start;
    r->buf_len = 0;
}

int rpd_reader_take(rpd_reader *r, size_t n, const uint8_t **p, rpd_error *err)
{
    if (n > RPD_READER_BUFFER || r->pos > r->end || n > r->end - r->pos)
        return rpd_fail(err, r->pos, "truncated record: %zu bytes needed, %llu left in the section", n,
                        (unsigned long long)(r->pos <= r->end ? r->end - r->pos : 0));
    if (r->pos < r->buf_start || r->pos + n > r->buf_start + r->buf_len) {
        uint64_t left = r->end - r->pos;
        size_t want = left < RPD_READER_BUFFER ? (size_t)left : RPD_READER_BUFFER;
        if (rpd_source_read(r->src, r->pos, r->buf, want, err) != 0)
            return -1;
        r->buf_start = r->pos;
        r->buf_len = want;
    }
    *p = r->buf + (r->pos - r->buf_start);
    r->pos += n;
    return 0;
}

/* ---- memory ----------------------------------------------------------------------------- */

void *rpd_alloc(rpd_dump *d, size_t n, uint64_t offset, rpd_error *err)
{
    if (n == 0)
        n = 1;
    if (n > d->mem_cap - d->mem_used) {
        rpd_fail(err, offset, "the dump needs more than the %zu MiB memory cap (absurd sizes or counts?)",
                 d->mem_cap >> 20);
        return NULL;
    }
    void *p = calloc(1, n);
    if (!p) {
        rpd_fail(err, offset, "out of memory");
        return NULL;
    }
    d->mem_used += n;
    return p;
}

void rpd_free(rpd_dump *d, void *p, size_t n)
{
    if (!p)
        return;
    free(p);
    d->mem_used -= n ? n : 1;
}

/* ---- open ------------------------------------------------------------------------------- */

static int read_header(rpd_dump *d, rpd_error *err)
{
    uint8_t raw[RPD_HEADER_BYTES];
    if (d->src.size < RPD_MAGIC_BYTES || rpd_source_read(&d->src, 0, raw, RPD_MAGIC_BYTES, err) != 0 ||
        memcmp(raw, RPD_MAGIC, RPD_MAGIC_BYTES) != 0) {
        if (err && err->message[0])
            err->message[0] = 0;
        return rpd_fail(err, 0, "not a rampart dump (no magic \\x89RPDUMP\\n at the start)");
    }
    if (d->src.size < RPD_HEADER_BYTES + RPD_FOOTER_BYTES)
        return rpd_fail(err, d->src.size, "truncated: %llu bytes cannot hold a header and a footer (72 bytes)",
                        (unsigned long long)d->src.size);
    if (rpd_source_read(&d->src, 0, raw, RPD_HEADER_BYTES, err) != 0)
        return -1;
    rpd_header_decode(raw, &d->header);
    rpd_header *h = &d->header;
    if (h->major != RPD_VERSION_MAJOR)
        return rpd_fail(err, 8, "format version %u.%u is not supported (this rpdump reads %u.x)", h->major,
                        h->minor, RPD_VERSION_MAJOR);
    if (rpd_crc32c(0, raw, 28) != h->crc)
        return rpd_fail(err, 28, "header checksum mismatch (stored 0x%08x, computed 0x%08x)", h->crc,
                        rpd_crc32c(0, raw, 28));
    if (h->byte_order != RPD_BYTE_ORDER_LITTLE)
        return rpd_fail(err, 12, "unsupported byte order %u (1.x dumps are little-endian)", h->byte_order);
    if (h->pointer_bytes != 8)
        return rpd_fail(err, 13, "unsupported pointer size %u", h->pointer_bytes);
    if (h->header_bytes != RPD_HEADER_BYTES)
        return rpd_fail(err, 14, "header size %u, expected %u", h->header_bytes, RPD_HEADER_BYTES);
    return 0;
}

static int read_footer(rpd_dump *d, rpd_error *err)
{
    uint64_t at = d->src.size - RPD_FOOTER_BYTES;
    uint8_t raw[RPD_FOOTER_BYTES];
    if (rpd_source_read(&d->src, at, raw, sizeof raw, err) != 0)
        return -1;
    if (memcmp(raw + 32, RPD_END_MAGIC, RPD_MAGIC_BYTES) != 0)
        return rpd_fail(err, d->src.size,
                        "truncated or damaged: no end marker in the last 8 bytes (the dump ends at %llu)",
                        (unsigned long long)d->src.size);
    rpd_footer_decode(raw, &d->footer);
    rpd_footer *f = &d->footer;
    if (rpd_crc32c(0, raw, 28) != f->crc)
        return rpd_fail(err, at + 28, "footer checksum mismatch");
    if (f->file_bytes != d->src.size)
        return rpd_fail(err, at + 8, "the footer says the dump is %llu bytes, the file has %llu (truncated or spliced)",
                        (unsigned long long)f->file_bytes, (unsigned long long)d->src.size);
    uint64_t table_bytes = (uint64_t)f->section_count * RPD_ENTRY_BYTES;
    if (f->table_offset < RPD_HEADER_BYTES || f->table_offset > at || table_bytes != at - f->table_offset)
        return rpd_fail(err, at, "section table at %llu with %u entries does not end at the footer (%llu)",
                        (unsigned long long)f->table_offset, f->section_count, (unsigned long long)at);
    return 0;
}

/* Minimum record size of the fixed-record sections this reader knows; 0 = variable. */
static uint32_t known_record_bytes(uint32_t type)
{
    switch (type) {
    case RPD_SEC_PROCESS: return RPD_PROCESS_BYTES;
    case RPD_SEC_HEAP: return RPD_HEAP_BYTES_1_0; /* 1.0 dumps have the shorter record */
    case RPD_SEC_REGIONS: return RPD_REGION_BYTES;
    case RPD_SEC_CLASSES: return RPD_CLASS_BYTES;
    case RPD_SEC_BLOCKS: return RPD_BLOCK_BYTES;
    case RPD_SEC_QUARANTINE: return RPD_QUARANTINE_BYTES;
    case RPD_SEC_SAMPLES: return RPD_SAMPLE_BYTES;
    default: return 0;
    }
}

static int is_known(uint32_t type) { return type >= RPD_SEC_PROCESS && type <= RPD_SEC_SAMPLES; }
static int is_per_heap(uint32_t type) { return type >= RPD_SEC_HEAP && type <= RPD_SEC_QUARANTINE; }

static int check_crc(rpd_dump *d, const rpd_entry *e, uint64_t entry_at, rpd_reader *r, rpd_error *err)
{
    rpd_reader_init(r, &d->src, e->offset, e->offset + e->length);
    uint32_t crc = 0;
    while (r->pos < r->end) {
        uint64_t left = r->end - r->pos;
        size_t n = left < RPD_READER_BUFFER ? (size_t)left : RPD_READER_BUFFER;
        const uint8_t *p;
        if (rpd_reader_take(r, n, &p, err) != 0)
            return -1;
        crc = rpd_crc32c(crc, p, n);
    }
    if (crc != e->crc)
        return rpd_fail(err, e->offset, "%s section (table entry at %llu) fails its checksum: stored 0x%08x, computed 0x%08x",
                        rpd_section_name(e->type), (unsigned long long)entry_at, e->crc, crc);
    return 0;
}

static int read_table(rpd_dump *d, rpd_error *err)
{
    const rpd_footer *f = &d->footer;
    d->sections = rpd_alloc(d, (size_t)f->section_count * sizeof *d->sections, f->table_offset, err);
    if (!d->sections)
        return -1;
    d->nsections = f->section_count;
    uint32_t crc = 0;
    uint64_t expected = RPD_HEADER_BYTES;
    for (size_t i = 0; i < d->nsections; i++) {
        uint64_t at = f->table_offset + i * RPD_ENTRY_BYTES;
        uint8_t raw[RPD_ENTRY_BYTES];
        if (rpd_source_read(&d->src, at, raw, sizeof raw, err) != 0)
            return -1;
        crc = rpd_crc32c(crc, raw, sizeof raw);
        rpd_entry_decode(raw, &d->sections[i]);
    }
    if (crc != f->table_crc)
        return rpd_fail(err, f->table_offset, "section table checksum mismatch");
    for (size_t i = 0; i < d->nsections; i++) {
        const rpd_entry *e = &d->sections[i];
        uint64_t at = f->table_offset + i * RPD_ENTRY_BYTES;
        if (e->offset != expected)
            return rpd_fail(err, at + 8, "section %zu starts at %llu, expected %llu (sections must tile the file)", i,
                            (unsigned long long)e->offset, (unsigned long long)expected);
        if (e->length > f->table_offset - e->offset)
            return rpd_fail(err, at + 16, "section %zu (%s) of %llu bytes at %llu runs past the section table", i,
                            rpd_section_name(e->type), (unsigned long long)e->length, (unsigned long long)e->offset);
        expected += e->length;
        uint32_t min = known_record_bytes(e->type);
        if (is_known(e->type) && (min != 0) != (e->record_bytes != 0))
            return rpd_fail(err, at + 32, "%s section has record size %u, expected %s", rpd_section_name(e->type),
                            e->record_bytes, min ? "fixed records" : "0 (variable records)");
        if (e->record_bytes && e->record_bytes < min)
            return rpd_fail(err, at + 32, "%s section has %u-byte records, at least %u expected",
                            rpd_section_name(e->type), e->record_bytes, min);
        if (e->record_bytes && (e->length % e->record_bytes || e->length / e->record_bytes != e->count))
            return rpd_fail(err, at + 24, "%s section: %llu records of %u bytes do not make %llu bytes",
                            rpd_section_name(e->type), (unsigned long long)e->count, e->record_bytes,
                            (unsigned long long)e->length);
        if (!e->record_bytes && e->count > e->length / 8)
            return rpd_fail(err, at + 24, "%s section claims %llu records in %llu bytes", rpd_section_name(e->type),
                            (unsigned long long)e->count, (unsigned long long)e->length);
        if (is_known(e->type) && is_per_heap(e->type) != (e->heap != RPD_NO_HEAP))
            return rpd_fail(err, at + 4, "%s section has heap index %u", rpd_section_name(e->type), e->heap);
        if (is_per_heap(e->type) && e->heap >= RPD_MAX_HEAPS)
            return rpd_fail(err, at + 4, "heap index %u is beyond the limit of %u heaps", e->heap, RPD_MAX_HEAPS);
        if ((e->type == RPD_SEC_PROCESS || e->type == RPD_SEC_HEAP || e->type == RPD_SEC_QUARANTINE) && e->count != 1)
            return rpd_fail(err, at + 24, "%s section holds %llu records, expected 1", rpd_section_name(e->type),
                            (unsigned long long)e->count);
    }
    if (expected != f->table_offset)
        return rpd_fail(err, expected, "%llu bytes between the last section and the section table belong to no section",
                        (unsigned long long)(f->table_offset - expected));
    rpd_reader *r = rpd_alloc(d, sizeof *r, f->table_offset, err);
    if (!r)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < d->nsections && rc == 0; i++)
        rc = check_crc(d, &d->sections[i], f->table_offset + i * RPD_ENTRY_BYTES, r, err);
    rpd_free(d, r, sizeof *r);
    return rc;
}

/* Reads the one record of a single-record section. */
static int read_single(const rpd_dump *d, const rpd_entry *e, uint8_t *raw, size_t n, rpd_error *err)
{
    return rpd_source_read(&d->src, e->offset, raw, n, err);
}

static int load_regions(rpd_dump *d, rpd_heap_info *h, rpd_error *err)
{
    const rpd_entry *e = h->regions_sec;
    if (e->count > RPD_MAX_REGIONS)
        return rpd_fail(err, e->offset, "heap %u has %llu regions, beyond the limit of %zu", e->heap,
                        (unsigned long long)e->count, RPD_MAX_REGIONS);
    h->regions = rpd_alloc(d, (size_t)e->count * sizeof *h->regions, e->offset, err);
    if (!h->regions)
        return -1;
    h->nregions = (size_t)e->count;
    for (size_t i = 0; i < h->nregions; i++) {
        uint64_t at = e->offset + i * e->record_bytes;
        uint8_t raw[RPD_REGION_BYTES];
        if (rpd_source_read(&d->src, at, raw, sizeof raw, err) != 0)
            return -1;
        rpd_region_decode(raw, &h->regions[i]);
        const rpd_region *r = &h->regions[i];
        if (r->kind != RPD_REGION_OS && r->kind != RPD_REGION_CALLER)
            return rpd_fail(err, at + 64, "region %zu has kind %u (1 = os, 2 = caller)", i, r->kind);
        if (r->pages > (UINT64_MAX >> 12) || r->base > UINT64_MAX - (r->pages << 12))
            return rpd_fail(err, at, "region %zu: %llu pages at 0x%llx overflow the address space", i,
                            (unsigned long long)r->pages, (unsigned long long)r->base);
    }
    return 0;
}

static int compare_classes(const void *a, const void *b)
{
    const rpd_class *x = a, *y = b;
    if (x->tier != y->tier)
        return x->tier < y->tier ? -1 : 1;
    return x->min_bytes < y->min_bytes ? -1 : x->min_bytes > y->min_bytes;
}

static int load_classes(rpd_dump *d, rpd_heap_info *h, rpd_error *err)
{
    const rpd_entry *e = h->classes_sec;
    if (e->count > RPD_MAX_CLASSES)
        return rpd_fail(err, e->offset, "heap %u has %llu free-space classes, beyond the limit of %u", e->heap,
                        (unsigned long long)e->count, RPD_MAX_CLASSES);
    h->classes = rpd_alloc(d, (size_t)e->count * sizeof *h->classes, e->offset, err);
    if (!h->classes)
        return -1;
    h->nclasses = (size_t)e->count;
    for (size_t i = 0; i < h->nclasses; i++) {
        uint64_t at = e->offset + i * e->record_bytes;
        uint8_t raw[RPD_CLASS_BYTES];
        if (rpd_source_read(&d->src, at, raw, sizeof raw, err) != 0)
            return -1;
        rpd_class_decode(raw, &h->classes[i]);
        const rpd_class *c = &h->classes[i];
        if (c->tier != RPD_TIER_SPAN && c->tier != RPD_TIER_PAGE)
            return rpd_fail(err, at, "free-space class %zu has tier %u (1 = span, 2 = page)", i, c->tier);
        if (c->min_bytes > c->max_bytes)
            return rpd_fail(err, at + 8, "free-space class %zu: smallest size %llu above largest %llu", i,
                            (unsigned long long)c->min_bytes, (unsigned long long)c->max_bytes);
    }
    qsort(h->classes, h->nclasses, sizeof *h->classes, compare_classes);
    return 0;
}

/* Groups the per-heap sections: heap indexes must be 0..n-1, each with exactly one section
 * of each per-heap type. */
static int group_heaps(rpd_dump *d, rpd_error *err)
{
    uint64_t table = d->footer.table_offset;
    size_t n = 0;
    for (size_t i = 0; i < d->nsections; i++)
        if (d->sections[i].type == RPD_SEC_HEAP && d->sections[i].heap + 1 > n)
            n = d->sections[i].heap + 1;
    d->heaps = rpd_alloc(d, n * sizeof *d->heaps, table, err);
    if (!d->heaps)
        return -1;
    d->nheaps = n;
    for (size_t i = 0; i < d->nsections; i++) {
        const rpd_entry *e = &d->sections[i];
        uint64_t at = table + i * RPD_ENTRY_BYTES;
        if (!is_per_heap(e->type))
            continue;
        if (e->heap >= n)
            return rpd_fail(err, at + 4, "%s section for heap %u, which has no heap section",
                            rpd_section_name(e->type), e->heap);
        rpd_heap_info *h = &d->heaps[e->heap];
        const rpd_entry **slot = e->type == RPD_SEC_HEAP      ? &h->heap_sec
                                 : e->type == RPD_SEC_REGIONS ? &h->regions_sec
                                 : e->type == RPD_SEC_CLASSES ? &h->classes_sec
                                 : e->type == RPD_SEC_BLOCKS  ? &h->blocks_sec
                                                              : &h->quarantine_sec;
        if (*slot)
            return rpd_fail(err, at, "a second %s section for heap %u", rpd_section_name(e->type), e->heap);
        *slot = e;
    }
    for (size_t i = 0; i < n; i++) {
        rpd_heap_info *h = &d->heaps[i];
        const char *missing = !h->heap_sec         ? "heap"
                              : !h->regions_sec    ? "regions"
                              : !h->classes_sec    ? "classes"
                              : !h->blocks_sec     ? "blocks"
                              : !h->quarantine_sec ? "quarantine"
                                                   : NULL;
        if (missing)
            return rpd_fail(err, table, "heap %zu has no %s section", i, missing);
        h->index = (uint32_t)i;
        uint8_t raw[RPD_HEAP_BYTES];
        size_t len = h->heap_sec->record_bytes < RPD_HEAP_BYTES ? h->heap_sec->record_bytes : RPD_HEAP_BYTES;
        if (read_single(d, h->heap_sec, raw, len, err) != 0)
            return -1;
        rpd_heap_decode(raw, len, &h->rec);
        uint8_t q[RPD_QUARANTINE_BYTES];
        if (read_single(d, h->quarantine_sec, q, sizeof q, err) != 0)
            return -1;
        rpd_quarantine_decode(q, &h->quarantine);
        if (load_regions(d, h, err) != 0 || load_classes(d, h, err) != 0)
            return -1;
    }
    return 0;
}

static int compare_mappings(const void *a, const void *b)
{
    const rpd_mapping_info *x = a, *y = b;
    return x->m.start < y->m.start ? -1 : x->m.start > y->m.start;
}

static int load_mappings(rpd_dump *d, const rpd_entry *e, rpd_reader *r, rpd_error *err)
{
    if (e->count > RPD_MAX_MAPPINGS)
        return rpd_fail(err, e->offset, "%llu mappings, beyond the limit of %u", (unsigned long long)e->count,
                        RPD_MAX_MAPPINGS);
    d->mappings = rpd_alloc(d, (size_t)e->count * sizeof *d->mappings, e->offset, err);
    if (!d->mappings)
        return -1;
    d->nmappings = (size_t)e->count;
    rpd_reader_init(r, &d->src, e->offset, e->offset + e->length);
    for (size_t i = 0; i < d->nmappings; i++) {
        rpd_mapping_info *mi = &d->mappings[i];
        mi->offset = r->pos;
        const uint8_t *p;
        if (rpd_reader_take(r, RPD_MAPPING_HEAD_BYTES, &p, err) != 0)
            return -1;
        rpd_mapping_head_decode(p, &mi->m);
        const rpd_mapping *m = &mi->m;
        if (m->build_id_len > RPD_MAX_BUILD_ID)
            return rpd_fail(err, mi->offset + 38, "mapping %zu: build-id of %u bytes (at most %d)", i,
                            m->build_id_len, RPD_MAX_BUILD_ID);
        if (m->path_len > RPD_MAX_PATH)
            return rpd_fail(err, mi->offset + 36, "mapping %zu: path of %u bytes (at most %d)", i, m->path_len,
                            RPD_MAX_PATH);
        if (m->start >= m->end)
            return rpd_fail(err, mi->offset, "mapping %zu: empty or inverted range 0x%llx-0x%llx", i,
                            (unsigned long long)m->start, (unsigned long long)m->end);
        size_t rest = (size_t)(rpd_mapping_record_bytes(m->build_id_len, m->path_len) - RPD_MAPPING_HEAD_BYTES);
        if (rpd_reader_take(r, rest, &p, err) != 0)
            return -1;
        memcpy(mi->build_id, p, m->build_id_len);
        mi->path = rpd_alloc(d, (size_t)m->path_len + 1, mi->offset, err);
        if (!mi->path)
            return -1;
        memcpy(mi->path, p + m->build_id_len, m->path_len);
        for (size_t k = (size_t)m->build_id_len + m->path_len; k < rest; k++)
            if (p[k])
                return rpd_fail(err, mi->offset + RPD_MAPPING_HEAD_BYTES + k, "mapping %zu: non-zero padding", i);
    }
    if (r->pos != r->end)
        return rpd_fail(err, r->pos, "%llu bytes after the last mapping record", (unsigned long long)(r->end - r->pos));
    qsort(d->mappings, d->nmappings, sizeof *d->mappings, compare_mappings);
    for (size_t i = 1; i < d->nmappings; i++)
        if (d->mappings[i].m.start < d->mappings[i - 1].m.end)
            return rpd_fail(err, d->mappings[i].offset, "mappings at 0x%llx and 0x%llx overlap",
                            (unsigned long long)d->mappings[i - 1].m.start, (unsigned long long)d->mappings[i].m.start);
    return 0;
}

/* Walks the stack records once so every command rejects a malformed stack section. */
static int check_stacks(rpd_dump *d, rpd_error *err)
{
    rpd_stack_iter *it = rpd_alloc(d, sizeof *it, d->stacks->offset, err);
    if (!it)
        return -1;
    rpd_stack s;
    rpd_stacks_begin(it, d);
    int rc;
    while ((rc = rpd_stacks_next(it, &s, err)) == 1) {
    }
    if (rc == 0 && it->reader.pos != it->reader.end)
        rc = rpd_fail(err, it->reader.pos, "%llu bytes after the last stack record",
                      (unsigned long long)(it->reader.end - it->reader.pos));
    rpd_free(d, it, sizeof *it);
    return rc < 0 ? -1 : 0;
}

/* Walks the sample records once, as check_stacks does for the stacks. */
static int check_samples(rpd_dump *d, rpd_error *err) { return d->samples ? rpd_samples_each(d, NULL, NULL, err) : 0; }

int rpd_open(rpd_dump *d, const rpd_source *src, size_t mem_cap, rpd_error *err)
{
    memset(d, 0, sizeof *d);
    if (err) {
        err->offset = 0;
        err->message[0] = 0;
    }
    d->src = *src;
    d->mem_cap = mem_cap ? mem_cap : RPD_DEFAULT_MEM_CAP;
    if (read_header(d, err) != 0 || read_footer(d, err) != 0 || read_table(d, err) != 0)
        return -1;
    const rpd_entry *process = NULL, *mappings = NULL;
    for (size_t i = 0; i < d->nsections; i++) {
        const rpd_entry *e = &d->sections[i];
        uint64_t at = d->footer.table_offset + i * RPD_ENTRY_BYTES;
        const rpd_entry **slot = e->type == RPD_SEC_PROCESS    ? &process
                                 : e->type == RPD_SEC_STACKS   ? &d->stacks
                                 : e->type == RPD_SEC_MAPPINGS ? &mappings
                                 : e->type == RPD_SEC_SAMPLES  ? &d->samples
                                                               : NULL;
        if (!slot)
            continue;
        if (*slot)
            return rpd_fail(err, at, "a second %s section", rpd_section_name(e->type));
        *slot = e;
    }
    const char *missing = !process ? "process" : !d->stacks ? "stacks" : !mappings ? "mappings" : NULL;
    if (missing)
        return rpd_fail(err, d->footer.table_offset, "the dump has no %s section", missing);
    uint8_t raw[RPD_PROCESS_BYTES];
    if (read_single(d, process, raw, sizeof raw, err) != 0)
        return -1;
    rpd_process_decode(raw, &d->process);
    if (d->header.minor < 2)
        d->process.time_ns = RPD_UNRECORDED_NS; /* reserved (zero) before 1.2 */
    else if (d->process.time_ns >= 1000000000u)
        return rpd_fail(err, process->offset + 288, "process record: %u nanoseconds (below 10^9 expected)",
                        d->process.time_ns);
    if (group_heaps(d, err) != 0 || check_stacks(d, err) != 0 || check_samples(d, err) != 0)
        return -1;
    rpd_reader *r = rpd_alloc(d, sizeof *r, mappings->offset, err);
    if (!r)
        return -1;
    int rc = load_mappings(d, mappings, r, err);
    rpd_free(d, r, sizeof *r);
    return rc;
}

void rpd_close(rpd_dump *d)
{
    for (size_t i = 0; i < d->nheaps; i++) {
        rpd_free(d, d->heaps[i].regions, d->heaps[i].nregions * sizeof *d->heaps[i].regions);
        rpd_free(d, d->heaps[i].classes, d->heaps[i].nclasses * sizeof *d->heaps[i].classes);
    }
    rpd_free(d, d->heaps, d->nheaps * sizeof *d->heaps);
    for (size_t i = 0; i < d->nmappings; i++)
        if (d->mappings[i].path)
            rpd_free(d, d->mappings[i].path, (size_t)d->mappings[i].m.path_len + 1);
    rpd_free(d, d->mappings, d->nmappings * sizeof *d->mappings);
    rpd_free(d, d->sections, d->nsections * sizeof *d->sections);
    d->heaps = NULL;
    d->mappings = NULL;
    d->sections = NULL;
    d->nheaps = d->nmappings = d->nsections = 0;
}

/* ---- streaming -------------------------------------------------------------------------- */

void rpd_blocks_begin(rpd_block_iter *it, const rpd_dump *d, const rpd_heap_info *heap)
{
    it->d = d;
    it->heap = heap;
    it->index = 0;
    it->count = heap->blocks_sec->count;
    it->record_bytes = heap->blocks_sec->record_bytes;
    rpd_reader_init(&it->reader, &d->src, heap->blocks_sec->offset, heap->blocks_sec->offset + heap->blocks_sec->length);
}

/* The next record of a section of fixed-size records: 1 with *p (record_bytes of it), its
 * file offset and index; 0 past the last; -1 with err. */
static int next_record(rpd_reader *r, uint64_t *index, uint64_t count, uint32_t record_bytes, const uint8_t **p,
                       uint64_t *offset, uint64_t *at_index, rpd_error *err)
{
    if (*index >= count)
        return 0;
    *offset = r->pos;
    *at_index = (*index)++;
    return rpd_reader_take(r, record_bytes, p, err) != 0 ? -1 : 1;
}

int rpd_blocks_next(rpd_block_iter *it, rpd_block_at *out, rpd_error *err)
{
    const uint8_t *p;
    int rc = next_record(&it->reader, &it->index, it->count, it->record_bytes, &p, &out->offset, &out->index, err);
    if (rc != 1)
        return rc;
    rpd_block_decode(p, &out->b);
    const rpd_block *b = &out->b;
    if (b->state < RPD_STATE_USED || b->state > RPD_STATE_SPAN)
        return rpd_fail(err, out->offset + 52, "block record %llu has state %u (1..4 expected)",
                        (unsigned long long)out->index, b->state);
    if (b->tier != RPD_TIER_SPAN && b->tier != RPD_TIER_PAGE)
        return rpd_fail(err, out->offset + 53, "block record %llu has tier %u (1 = span, 2 = page)",
                        (unsigned long long)out->index, b->tier);
    if (b->state == RPD_STATE_SPAN && b->tier != RPD_TIER_PAGE)
        return rpd_fail(err, out->offset + 53, "block record %llu: a span record must be in the page tier",
                        (unsigned long long)out->index);
    if (b->align_log2 > 63)
        return rpd_fail(err, out->offset + 54, "block record %llu has alignment 2^%u",
                        (unsigned long long)out->index, b->align_log2);
    if (b->region >= it->heap->nregions)
        return rpd_fail(err, out->offset + 48, "block record %llu names region %u, the heap has %zu",
                        (unsigned long long)out->index, b->region, it->heap->nregions);
    return 1;
}

void rpd_samples_begin(rpd_sample_iter *it, const rpd_dump *d)
{
    it->d = d;
    it->index = 0;
    it->count = d->samples ? d->samples->count : 0;
    it->record_bytes = d->samples ? d->samples->record_bytes : RPD_SAMPLE_BYTES;
    uint64_t at = d->samples ? d->samples->offset : 0, len = d->samples ? d->samples->length : 0;
    rpd_reader_init(&it->reader, &d->src, at, at + len);
}

int rpd_samples_next(rpd_sample_iter *it, rpd_sample_at *out, rpd_error *err)
{
    const uint8_t *p;
    int rc = next_record(&it->reader, &it->index, it->count, it->record_bytes, &p, &out->offset, &out->index, err);
    if (rc != 1)
        return rc;
    rpd_sample_decode(p, &out->s);
    if (out->s.flags & ~(uint32_t)RPD_SAMPLE_SLAB)
        return rpd_fail(err, out->offset + 36, "sample record %llu has flags 0x%x (reserved bits, 0 or 1 expected)",
                        (unsigned long long)out->index, out->s.flags);
    return 1;
}

int rpd_samples_each(rpd_dump *d, int (*fn)(const rpd_sample_at *s, void *arg), void *arg, rpd_error *err)
{
    rpd_sample_iter *it = rpd_alloc(d, sizeof *it, d->samples ? d->samples->offset : 0, err);
    if (!it)
        return -1;
    rpd_samples_begin(it, d);
    rpd_sample_at sa;
    int rc;
    while ((rc = rpd_samples_next(it, &sa, err)) == 1)
        if (fn && fn(&sa, arg))
            break;
    rpd_free(d, it, sizeof *it);
    return rc < 0 ? -1 : 0;
}

void rpd_stacks_begin(rpd_stack_iter *it, const rpd_dump *d)
{
    it->d = d;
    it->index = 0;
    it->count = d->stacks->count;
    rpd_reader_init(&it->reader, &d->src, d->stacks->offset, d->stacks->offset + d->stacks->length);
}

int rpd_stacks_next(rpd_stack_iter *it, rpd_stack *out, rpd_error *err)
{
    if (it->index >= it->count)
        return 0;
    out->offset = it->reader.pos;
    const uint8_t *p;
    if (rpd_reader_take(&it->reader, RPD_STACK_HEAD_BYTES, &p, err) != 0)
        return -1;
    out->id = rpd_get32(p);
    uint32_t n = rpd_get32(p + 4);
    if (n > RPD_MAX_FRAMES)
        return rpd_fail(err, out->offset + 4, "stack record %llu (id %u) has %u frames (at most %d)",
                        (unsigned long long)it->index, out->id, n, RPD_MAX_FRAMES);
    if (out->id == 0)
        return rpd_fail(err, out->offset, "stack record %llu has id 0 (reserved for 'no stack')",
                        (unsigned long long)it->index);
    if (rpd_reader_take(&it->reader, (size_t)n * 8, &p, err) != 0)
        return -1;
    out->nframes = n;
    for (unsigned i = 0; i < n; i++)
        out->frames[i] = rpd_get64(p + 8 * i);
    it->index++;
    return 1;
}

/* ---- lookups ---------------------------------------------------------------------------- */

const rpd_mapping_info *rpd_mapping_of(const rpd_dump *d, uint64_t pc)
{
    size_t lo = 0, hi = d->nmappings;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->mappings[mid].m.end <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < d->nmappings && d->mappings[lo].m.start <= pc && pc < d->mappings[lo].m.end)
        return &d->mappings[lo];
    return NULL;
}

long rpd_region_of(const rpd_heap_info *h, uint64_t addr)
{
    for (size_t i = 0; i < h->nregions; i++) {
        const rpd_region *r = &h->regions[i];
        if (addr >= r->base && addr - r->base < (r->pages << 12))
            return (long)i;
    }
    return -1;
}

long rpd_class_of(const rpd_heap_info *h, unsigned tier, uint64_t size)
{
    /* Last class (in (tier, min) order) whose min <= size. */
    size_t lo = 0, hi = h->nclasses;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const rpd_class *c = &h->classes[mid];
        if (c->tier < tier || (c->tier == tier && c->min_bytes <= size))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const rpd_class *c = &h->classes[lo - 1];
    return c->tier == tier && size <= c->max_bytes ? (long)(lo - 1) : -1;
}

const rpd_heap_info *rpd_heap_named(const rpd_dump *d, const char *name)
{
    for (size_t i = 0; i < d->nheaps; i++)
        if (strcmp(d->heaps[i].rec.name, name) == 0)
            return &d->heaps[i];
    return NULL;
}
