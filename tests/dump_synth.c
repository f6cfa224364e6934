#define _GNU_SOURCE
#include "dump_synth.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "debug/dump_encoder.h"

#define PAGE 4096u
#define USER_OFFSET 48u   /* 16-byte header + 32-byte debug prefix */
#define REGION_PAGES 256u /* 1 MiB */
#define SPAN_PAGES 16u    /* 64 KiB: pages 0..15; free blocks of 16, 32, 64, 128 pages follow */

uint64_t synth_block_size(uint64_t requested)
{
    uint64_t b = (USER_OFFSET + requested + 8 + 15) & ~(uint64_t)15;
    return b < 64 ? 64 : b;
}

static void put(rpd_encoder *e, const rpd_block *b)
{
    uint8_t raw[RPD_BLOCK_BYTES];
    rpd_block_encode(b, raw);
    rpd_enc_record(e, raw, sizeof raw);
}

/* First-level class of the span tier (as free_index.h files a size). */
static unsigned span_class(uint64_t size)
{
    if (size < 512)
        return 0;
    unsigned top = 63u - (unsigned)__builtin_clzll(size);
    return top - 8;
}

int synth_write(const synth_dump *s, const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    static uint8_t buf[65536];
    static rpd_entry table[16];
    rpd_encoder e;
    rpd_enc_init(&e, fd, buf, sizeof buf, table, 16, s->debug ? RPD_FLAG_DEBUG : 0);

    rpd_process p;
    memset(&p, 0, sizeof p);
    p.pid = s->pid;
    p.time = s->time ? s->time : 1700000000;
    p.time_ns = s->version_1_0 || s->version_1_1 ? 0 : s->time_ns;
    p.sequence = s->sequence;
    p.page_size = PAGE;
    snprintf(p.exe, sizeof p.exe, "%s", s->exe ? s->exe : "/synthetic/program");
    uint8_t praw[RPD_PROCESS_BYTES];
    rpd_process_encode(&p, praw);
    rpd_enc_begin(&e, RPD_SEC_PROCESS, RPD_NO_HEAP, RPD_PROCESS_BYTES);
    rpd_enc_record(&e, praw, sizeof praw);
    rpd_enc_end(&e);

    uint64_t base = s->region_base, span_end = base + SPAN_PAGES * PAGE - RPD_SPAN_SENTINEL;
    rpd_region r;
    memset(&r, 0, sizeof r);
    r.base = base;
    r.pages = REGION_PAGES;
    r.free_pages = REGION_PAGES - SPAN_PAGES;
    r.mem_lo = base - 2 * PAGE;
    r.mem_hi = base + REGION_PAGES * PAGE;
    r.map_base = r.mem_lo;
    r.map_len = r.mem_hi - r.mem_lo;
    r.header = r.mem_lo;
    r.kind = RPD_REGION_OS;
    uint8_t rraw[RPD_REGION_BYTES];
    rpd_region_encode(&r, rraw);
    rpd_enc_begin(&e, RPD_SEC_REGIONS, 0, RPD_REGION_BYTES);
    rpd_enc_record(&e, rraw, sizeof rraw);
    rpd_enc_end(&e);

    /* Blocks: the span, its blocks, a free tail, then the free pages. Totals on the way. */
    rpd_heap h;
    memset(&h, 0, sizeof h);
    rpd_quarantine q = {s->debug ? 1u << 20 : 0, 0, 0, (uint32_t)(s->debug != 0)};
    uint64_t span_free_per_class[24] = {0};
    rpd_enc_begin(&e, RPD_SEC_BLOCKS, 0, RPD_BLOCK_BYTES);
    rpd_block b;
    memset(&b, 0, sizeof b);
    b.block = b.addr = base;
    b.block_size = b.size = SPAN_PAGES * PAGE;
    b.state = RPD_STATE_SPAN;
    b.tier = RPD_TIER_PAGE;
    put(&e, &b);
    uint64_t at = base;
    int prev_free = 0;
    for (size_t i = 0; i <= s->nblocks; i++) {
        memset(&b, 0, sizeof b);
        b.tier = RPD_TIER_SPAN;
        b.block = at;
        if (i == s->nblocks) { /* the tail */
            if (at == span_end)
                break;
            b.block_size = span_end - at;
            b.state = RPD_STATE_FREE;
            if (prev_free) /* would be adjacent to a free block: the tests never ask that */
                return close(fd), -1;
        } else {
            b.block_size = synth_block_size(s->blocks[i].requested);
            b.state = (uint8_t)s->blocks[i].state;
        }
        if (at + b.block_size > span_end)
            return close(fd), -1;
        if (b.state == RPD_STATE_FREE) {
            b.addr = b.block;
            b.size = b.block_size;
            h.blocks_free++;
            h.bytes_free += b.block_size;
            if (b.block_size > h.largest_free)
                h.largest_free = b.block_size;
            span_free_per_class[span_class(b.block_size)]++;
        } else {
            b.addr = b.block + USER_OFFSET;
            b.size = b.block_size - USER_OFFSET;
            b.requested = s->debug ? s->blocks[i].requested : 0;
            b.alloc_stack = s->blocks[i].stack;
            b.align_log2 = 4;
            h.blocks_in_use++;
            h.bytes_in_use += b.block_size;
            h.bytes_usable += b.size;
            if (b.state == RPD_STATE_QUARANTINED) {
                q.blocks++;
                q.bytes += b.size;
            }
        }
        prev_free = b.state == RPD_STATE_FREE;
        put(&e, &b);
        at += b.block_size;
    }
    for (unsigned order = 4; order < 8; order++) { /* 16, 32, 64, 128 pages */
        memset(&b, 0, sizeof b);
        b.block = b.addr = base + ((uint64_t)PAGE << order);
        b.block_size = b.size = (uint64_t)PAGE << order;
        b.state = RPD_STATE_FREE;
        b.tier = RPD_TIER_PAGE;
        put(&e, &b);
        h.blocks_free++;
        h.bytes_free += b.block_size;
        h.page_free_bytes += b.block_size;
        if (b.block_size > h.largest_free)
            h.largest_free = b.block_size;
    }
    rpd_enc_end(&e);

    rpd_enc_begin(&e, RPD_SEC_CLASSES, 0, RPD_CLASS_BYTES);
    for (unsigned fl = 0; fl < 24; fl++) {
        rpd_class c = {RPD_TIER_SPAN, fl, fl ? (uint64_t)1 << (fl + 8) : 32, ((uint64_t)1 << (fl + 9)) - 1,
                       span_free_per_class[fl]};
        uint8_t raw[RPD_CLASS_BYTES];
        rpd_class_encode(&c, raw);
        rpd_enc_record(&e, raw, sizeof raw);
    }
    for (unsigned k = 0; k < 40; k++) {
        rpd_class c = {RPD_TIER_PAGE, k, (uint64_t)PAGE << k, (uint64_t)PAGE << k, k >= 4 && k < 8};
        uint8_t raw[RPD_CLASS_BYTES];
        rpd_class_encode(&c, raw);
        rpd_enc_record(&e, raw, sizeof raw);
    }
    rpd_enc_end(&e);

    uint8_t qraw[RPD_QUARANTINE_BYTES];
    rpd_quarantine_encode(&q, qraw);
    rpd_enc_begin(&e, RPD_SEC_QUARANTINE, 0, RPD_QUARANTINE_BYTES);
    rpd_enc_record(&e, qraw, sizeof qraw);
    rpd_enc_end(&e);

    snprintf(h.name, sizeof h.name, "%s", s->heap_name ? s->heap_name : "synthetic");
    h.address = base - 0x100000;
    h.spans = 1;
    h.span_bytes = SPAN_PAGES * PAGE;
    h.regions = 1;
    h.region_bytes = REGION_PAGES * PAGE;
    h.os_bytes = h.os_bytes_peak = r.map_len;
    h.user_offset = USER_OFFSET;
    h.page_size = PAGE;
    h.purge_delay_ms = s->purge_delay_ms;
    uint8_t hraw[RPD_HEAP_BYTES];
    rpd_heap_encode(&h, hraw);
    uint32_t heap_bytes = s->version_1_0 ? RPD_HEAP_BYTES_1_0 : RPD_HEAP_BYTES; /* 1.0 ends before the delay */
    rpd_enc_begin(&e, RPD_SEC_HEAP, 0, heap_bytes);
    rpd_enc_record(&e, hraw, heap_bytes);
    rpd_enc_end(&e);

    rpd_enc_begin(&e, RPD_SEC_STACKS, RPD_NO_HEAP, 0);
    for (size_t i = 0; i < s->nstacks; i++) {
        uint8_t raw[8 + 8 * 8];
        rpd_put32(raw, s->stacks[i].id);
        rpd_put32(raw + 4, s->stacks[i].n);
        for (unsigned k = 0; k < s->stacks[i].n; k++)
            rpd_put64(raw + 8 + 8 * k, s->stacks[i].frames[k]);
        rpd_enc_record(&e, raw, 8 + 8 * (size_t)s->stacks[i].n);
    }
    rpd_enc_end(&e);

    rpd_enc_begin(&e, RPD_SEC_MAPPINGS, RPD_NO_HEAP, 0);
    for (size_t i = 0; i < s->nmaps; i++) {
        const synth_mapping *sm = &s->maps[i];
        rpd_mapping m = {sm->start, sm->end, sm->load_bias, 0, 5, (uint16_t)strlen(sm->path),
                         (uint8_t)sm->build_id_len};
        uint8_t raw[RPD_MAPPING_HEAD_BYTES];
        rpd_mapping_head_encode(&m, raw);
        static const uint8_t zeros[8];
        rpd_enc_put(&e, raw, sizeof raw);
        rpd_enc_put(&e, sm->build_id, m.build_id_len);
        rpd_enc_put(&e, sm->path, m.path_len);
        uint64_t total = rpd_mapping_record_bytes(m.build_id_len, m.path_len);
        rpd_enc_record(&e, zeros, (size_t)(total - RPD_MAPPING_HEAD_BYTES - m.build_id_len - m.path_len));
    }
    rpd_enc_end(&e);
    int rc = rpd_enc_finish(&e);
    if (rc == 0 && (s->version_1_0 || s->version_1_1 || s->version_1_2)) {
        /* The encoder writes the current minor version: patch the header to an older one (its
         * CRC covers bytes 0..27). */
        uint8_t raw[RPD_HEADER_BYTES];
        rpd_header hd;
        if (pread(fd, raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            rc = -1;
        rpd_header_decode(raw, &hd);
        hd.minor = s->version_1_0 ? 0 : s->version_1_1 ? 1 : 2;
        rpd_header_encode(&hd, raw);
        if (rc == 0 && pwrite(fd, raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            rc = -1;
    }
    return close(fd) == 0 ? rc : -1;
}
