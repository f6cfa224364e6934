/* Encoders, decoders and the checksum of the dump format (layouts in dump_format.h). */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include "dump_format.h"

#include <pthread.h>
#include <string.h>

/* ---- CRC-32C, slicing by 8 ---------------------------------------------------------------
 * Eight tables let the loop consume 8 bytes per step, so checksums stay a small part of
 * reading even a million-block dump. The tables are built once, on first use. */

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc_tables[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_tables_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
        crc_tables[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tables[t][i] = (crc_tables[t - 1][i] >> 8) ^ crc_tables[0][crc_tables[t - 1][i] & 0xff];
}

uint32_t rpd_crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_tables_build);
    const uint8_t *p = data;
    uint32_t c = ~crc;
    while (len >= 8) {
        uint32_t lo = c ^ rpd_get32(p), hi = rpd_get32(p + 4);
        c = crc_tables[7][lo & 0xff] ^ crc_tables[6][(lo >> 8) & 0xff] ^ crc_tables[5][(lo >> 16) & 0xff] ^
            crc_tables[4][lo >> 24] ^ crc_tables[3][hi & 0xff] ^ crc_tables[2][(hi >> 8) & 0xff] ^
            crc_tables[1][(hi >> 16) & 0xff] ^ crc_tables[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ crc_tables[0][(c ^ *p++) & 0xff];
    return ~c;
}

/* ---- fixed parts ------------------------------------------------------------------------ */

void rpd_header_encode(const rpd_header *h, uint8_t out[RPD_HEADER_BYTES])
{
    memset(out, 0, RPD_HEADER_BYTES);
    memcpy(out, RPD_MAGIC, RPD_MAGIC_BYTES);
    rpd_put16(out + 8, h->major);
    rpd_put16(out + 10, h->minor);
    out[12] = h->byte_order;
    out[13] = h->pointer_bytes;
    rpd_put16(out + 14, h->header_bytes);
    rpd_put32(out + 16, h->flags);
    rpd_put32(out + 28, rpd_crc32c(0, out, 28));
}

void rpd_header_decode(const uint8_t in[RPD_HEADER_BYTES], rpd_header *h)
{
    h->major = rpd_get16(in + 8);
    h->minor = rpd_get16(in + 10);
    h->byte_order = in[12];
    h->pointer_bytes = in[13];
    h->header_bytes = rpd_get16(in + 14);
    h->flags = rpd_get32(in + 16);
    h->crc = rpd_get32(in + 28);
}

void rpd_footer_encode(const rpd_footer *f, uint8_t out[RPD_FOOTER_BYTES])
{
    memset(out, 0, RPD_FOOTER_BYTES);
    rpd_put64(out, f->table_offset);
    rpd_put64(out + 8, f->file_bytes);
    rpd_put32(out + 16, f->section_count);
    rpd_put32(out + 20, f->table_crc);
    rpd_put32(out + 28, rpd_crc32c(0, out, 28));
    memcpy(out + 32, RPD_END_MAGIC, RPD_MAGIC_BYTES);
}

void rpd_footer_decode(const uint8_t in[RPD_FOOTER_BYTES], rpd_footer *f)
{
    f->table_offset = rpd_get64(in);
    f->file_bytes = rpd_get64(in + 8);
    f->section_count = rpd_get32(in + 16);
    f->table_crc = rpd_get32(in + 20);
    f->crc = rpd_get32(in + 28);
}

void rpd_entry_encode(const rpd_entry *e, uint8_t out[RPD_ENTRY_BYTES])
{
    rpd_put32(out, e->type);
    rpd_put32(out + 4, e->heap);
    rpd_put64(out + 8, e->offset);
    rpd_put64(out + 16, e->length);
    rpd_put64(out + 24, e->count);
    rpd_put32(out + 32, e->record_bytes);
    rpd_put32(out + 36, e->crc);
}

void rpd_entry_decode(const uint8_t in[RPD_ENTRY_BYTES], rpd_entry *e)
{
    e->type = rpd_get32(in);
    e->heap = rpd_get32(in + 4);
    e->offset = rpd_get64(in + 8);
    e->length = rpd_get64(in + 16);
    e->count = rpd_get64(in + 24);
    e->record_bytes = rpd_get32(in + 32);
    e->crc = rpd_get32(in + 36);
}

/* Copies a string field into a fixed NUL-padded area (truncating) and back (terminating). */
static void put_text(uint8_t *out, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    memcpy(out, s, n);
    memset(out + n, 0, cap - n);
}

static void get_text(char *out, size_t cap, const uint8_t *in)
{
    memcpy(out, in, cap - 1);
    out[cap - 1] = 0;
}

/* ---- records ---------------------------------------------------------------------------- */

void rpd_process_encode(const rpd_process *p, uint8_t out[RPD_PROCESS_BYTES])
{
    memset(out, 0, RPD_PROCESS_BYTES);
    rpd_put64(out, p->pid);
    rpd_put64(out + 8, p->time);
    rpd_put64(out + 16, p->sequence);
    rpd_put32(out + 24, p->reason);
    rpd_put32(out + 28, p->page_size);
    put_text(out + 32, RPD_EXE_BYTES, p->exe);
    rpd_put32(out + 288, p->time_ns);
}

void rpd_process_decode(const uint8_t in[RPD_PROCESS_BYTES], rpd_process *p)
{
    p->pid = rpd_get64(in);
    p->time = rpd_get64(in + 8);
    p->sequence = rpd_get64(in + 16);
    p->reason = rpd_get32(in + 24);
    p->page_size = rpd_get32(in + 28);
    get_text(p->exe, RPD_EXE_BYTES, in + 32);
    p->time_ns = rpd_get32(in + 288);
}

/* The heap record's counters, in their order in the file (offset 72 onwards). */
#define HEAP_COUNTERS(X)                                                                        \
    X(bytes_in_use) X(bytes_usable) X(blocks_in_use) X(bytes_free) X(blocks_free) X(largest_free) \
    X(span_bytes) X(spans) X(large_blocks) X(page_free_bytes) X(regions) X(region_bytes)         \
    X(os_bytes) X(os_bytes_peak) X(os_released) X(alloc_calls) X(free_calls) X(blocks_examined)  \
    X(max_examined)

void rpd_heap_encode(const rpd_heap *h, uint8_t out[RPD_HEAP_BYTES])
{
    memset(out, 0, RPD_HEAP_BYTES);
    put_text(out, RPD_NAME_BYTES, h->name);
    rpd_put64(out + 32, h->address);
    rpd_put64(out + 40, h->large_threshold);
    rpd_put64(out + 48, h->retain_bytes);
    rpd_put64(out + 56, h->max_bytes);
    rpd_put32(out + 64, h->config_flags);
    rpd_put32(out + 68, h->dump_flags);
    uint8_t *p = out + 72;
#define PUT_COUNTER(f) rpd_put64(p, h->f), p += 8;
    HEAP_COUNTERS(PUT_COUNTER)
#undef PUT_COUNTER
    rpd_put32(p, h->user_offset);     /* offset 224 */
    rpd_put32(p + 4, h->page_size);
    put_text(p + 8, RPD_NOTE_BYTES, h->note); /* 232..359 */
    rpd_put64(out + RPD_HEAP_BYTES_1_0, h->purge_delay_ms); /* 1.1 */
}

void rpd_heap_decode(const uint8_t *in, size_t len, rpd_heap *h)
{
    get_text(h->name, RPD_NAME_BYTES, in);
    h->address = rpd_get64(in + 32);
    h->large_threshold = rpd_get64(in + 40);
    h->retain_bytes = rpd_get64(in + 48);
    h->max_bytes = rpd_get64(in + 56);
    h->config_flags = rpd_get32(in + 64);
    h->dump_flags = rpd_get32(in + 68);
    const uint8_t *p = in + 72;
#define GET_COUNTER(f) h->f = rpd_get64(p), p += 8;
    HEAP_COUNTERS(GET_COUNTER)
#undef GET_COUNTER
    h->user_offset = rpd_get32(p);
    h->page_size = rpd_get32(p + 4);
    get_text(h->note, RPD_NOTE_BYTES, p + 8);
    h->purge_delay_ms = len >= RPD_HEAP_BYTES ? rpd_get64(in + RPD_HEAP_BYTES_1_0) : RPD_UNRECORDED;
}

void rpd_region_encode(const rpd_region *r, uint8_t out[RPD_REGION_BYTES])
{
    memset(out, 0, RPD_REGION_BYTES);
    rpd_put64(out, r->base);
    rpd_put64(out + 8, r->pages);
    rpd_put64(out + 16, r->free_pages);
    rpd_put64(out + 24, r->mem_lo);
    rpd_put64(out + 32, r->mem_hi);
    rpd_put64(out + 40, r->map_base);
    rpd_put64(out + 48, r->map_len);
    rpd_put64(out + 56, r->header);
    rpd_put32(out + 64, r->kind);
}

void rpd_region_decode(const uint8_t in[RPD_REGION_BYTES], rpd_region *r)
{
    r->base = rpd_get64(in);
    r->pages = rpd_get64(in + 8);
    r->free_pages = rpd_get64(in + 16);
    r->mem_lo = rpd_get64(in + 24);
    r->mem_hi = rpd_get64(in + 32);
    r->map_base = rpd_get64(in + 40);
    r->map_len = rpd_get64(in + 48);
    r->header = rpd_get64(in + 56);
    r->kind = rpd_get32(in + 64);
}

void rpd_class_encode(const rpd_class *c, uint8_t out[RPD_CLASS_BYTES])
{
    rpd_put32(out, c->tier);
    rpd_put32(out + 4, c->index);
    rpd_put64(out + 8, c->min_bytes);
    rpd_put64(out + 16, c->max_bytes);
    rpd_put64(out + 24, c->blocks);
}

void rpd_class_decode(const uint8_t in[RPD_CLASS_BYTES], rpd_class *c)
{
    c->tier = rpd_get32(in);
    c->index = rpd_get32(in + 4);
    c->min_bytes = rpd_get64(in + 8);
    c->max_bytes = rpd_get64(in + 16);
    c->blocks = rpd_get64(in + 24);
}

void rpd_block_encode(const rpd_block *b, uint8_t out[RPD_BLOCK_BYTES])
{
    rpd_put64(out, b->block);
    rpd_put64(out + 8, b->block_size);
    rpd_put64(out + 16, b->addr);
    rpd_put64(out + 24, b->size);
    rpd_put64(out + 32, b->requested);
    rpd_put32(out + 40, b->alloc_stack);
    rpd_put32(out + 44, b->free_stack);
    rpd_put32(out + 48, b->region);
    out[52] = b->state;
    out[53] = b->tier;
    out[54] = b->align_log2;
    out[55] = b->flags;
}

void rpd_block_decode(const uint8_t in[RPD_BLOCK_BYTES], rpd_block *b)
{
    b->block = rpd_get64(in);
    b->block_size = rpd_get64(in + 8);
    b->addr = rpd_get64(in + 16);
    b->size = rpd_get64(in + 24);
    b->requested = rpd_get64(in + 32);
    b->alloc_stack = rpd_get32(in + 40);
    b->free_stack = rpd_get32(in + 44);
    b->region = rpd_get32(in + 48);
    b->state = in[52];
    b->tier = in[53];
    b->align_log2 = in[54];
    b->flags = in[55];
}

void rpd_quarantine_encode(const rpd_quarantine *q, uint8_t out[RPD_QUARANTINE_BYTES])
{
    memset(out, 0, RPD_QUARANTINE_BYTES);
    rpd_put64(out, q->limit_bytes);
    rpd_put64(out + 8, q->blocks);
    rpd_put64(out + 16, q->bytes);
    rpd_put32(out + 24, q->enabled);
}

void rpd_quarantine_decode(const uint8_t in[RPD_QUARANTINE_BYTES], rpd_quarantine *q)
{
    q->limit_bytes = rpd_get64(in);
    q->blocks = rpd_get64(in + 8);
    q->bytes = rpd_get64(in + 16);
    q->enabled = rpd_get32(in + 24);
}

void rpd_sample_encode(const rpd_sample *s, uint8_t out[RPD_SAMPLE_BYTES])
{
    rpd_put64(out, s->addr);
    rpd_put64(out + 8, s->size);
    rpd_put64(out + 16, s->rate);
    rpd_put64(out + 24, s->age_ns);
    rpd_put32(out + 32, s->stack);
    rpd_put32(out + 36, s->flags);
}

void rpd_sample_decode(const uint8_t in[RPD_SAMPLE_BYTES], rpd_sample *s)
{
    s->addr = rpd_get64(in);
    s->size = rpd_get64(in + 8);
    s->rate = rpd_get64(in + 16);
    s->age_ns = rpd_get64(in + 24);
    s->stack = rpd_get32(in + 32);
    s->flags = rpd_get32(in + 36);
}

void rpd_mapping_head_encode(const rpd_mapping *m, uint8_t out[RPD_MAPPING_HEAD_BYTES])
{
    rpd_put64(out, m->start);
    rpd_put64(out + 8, m->end);
    rpd_put64(out + 16, m->load_bias);
    rpd_put64(out + 24, m->file_offset);
    rpd_put32(out + 32, m->flags);
    rpd_put16(out + 36, m->path_len);
    out[38] = m->build_id_len;
    out[39] = 0;
}

void rpd_mapping_head_decode(const uint8_t in[RPD_MAPPING_HEAD_BYTES], rpd_mapping *m)
{
    m->start = rpd_get64(in);
    m->end = rpd_get64(in + 8);
    m->load_bias = rpd_get64(in + 16);
    m->file_offset = rpd_get64(in + 24);
    m->flags = rpd_get32(in + 32);
    m->path_len = rpd_get16(in + 36);
    m->build_id_len = in[38];
}

/* ---- names ------------------------------------------------------------------------------ */

static const char *name_of(unsigned v, const char *const *names, unsigned n)
{
    return v < n && names[v] ? names[v] : "?";
}

const char *rpd_state_name(unsigned state)
{
    static const char *const names[] = {NULL, "used", "free", "quarantined", "span"};
    return name_of(state, names, sizeof names / sizeof names[0]);
}

const char *rpd_tier_name(unsigned tier)
{
    static const char *const names[] = {NULL, "span", "page"};
    return name_of(tier, names, sizeof names / sizeof names[0]);
}

const char *rpd_reason_name(unsigned reason)
{
    static const char *const names[] = {"call", "signal", "exit", "interval", "peak"};
    return name_of(reason, names, sizeof names / sizeof names[0]);
}

const char *rpd_region_kind_name(unsigned kind)
{
    static const char *const names[] = {NULL, "os", "caller"};
    return name_of(kind, names, sizeof names / sizeof names[0]);
}

const char *rpd_section_name(unsigned type)
{
    static const char *const names[] = {NULL,         "process", "heap",     "regions", "classes",
                                        "blocks",     "quarantine", "stacks", "mappings", "samples"};
    return name_of(type, names, sizeof names / sizeof names[0]);
}
