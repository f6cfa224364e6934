/* The heap dump writer: rp_heap_dump and rp_dump_all.
 *
 * For each heap, under its lock: the regions, the free-space classes with the core's
 * counters, every block in address order (the internal walk engine), the quarantine totals
 * and the heap record (counters and configuration). Then, with no heap locked, the heap
 * profiler's samples (if a sample source is registered), the stacks and the executable
 * mappings. Memory: one scratch mapping from the OS holding the
 * write buffer and the section table; nothing comes from a heap. Read-only: the writer never
 * changes a heap. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "debug/dump_internal.h"
#include "debug/rampart_dump.h"
#include "src/heap.h"
#include "src/options.h"
#include "src/os.h"
#include "src/walk.h"

/* This file is compiled into both flavours; the debug bundle gets -DRAMPART_DEBUG from the
 * debug core. */
#ifdef RAMPART_DEBUG
#define FLAVOUR_FLAGS RPD_FLAG_DEBUG
#define QUARANTINE_LIMIT() ((uint64_t)rp_options_get()->quarantine_bytes)
#else
#define FLAVOUR_FLAGS 0u
#define QUARANTINE_LIMIT() ((uint64_t)0)
#endif

#define WRITE_BUFFER_BYTES ((size_t)64 << 10)
#define SECTIONS_PER_HEAP 5 /* regions, classes, blocks, quarantine, heap */
#define PROCESS_SECTIONS 4  /* process, samples, stacks, mappings */
#define EXTRA_HEAPS 8       /* room for heaps created between counting and dumping */

typedef struct dump_session {
    rpd_encoder enc;
    void *scratch;
    size_t scratch_bytes;
    size_t max_heaps;   /* heaps beyond this many are left out (see rp_dump_all) */
    uint32_t heaps;     /* heaps dumped so far */
} dump_session;

/* Maps the buffer and table; the header is buffered. */
static int session_open(dump_session *s, int fd, size_t max_heaps)
{
    memset(s, 0, sizeof *s);
    size_t entries = PROCESS_SECTIONS + SECTIONS_PER_HEAP * max_heaps;
    s->scratch_bytes = rp_align_up(WRITE_BUFFER_BYTES + entries * sizeof(rpd_entry), RP_PAGE_SIZE);
    s->scratch = rp_os_scratch_map(s->scratch_bytes);
    if (!s->scratch) {
        errno = ENOMEM;
        return -1;
    }
    s->max_heaps = max_heaps;
    rpd_enc_init(&s->enc, fd, s->scratch, WRITE_BUFFER_BYTES, (rpd_entry *)((char *)s->scratch + WRITE_BUFFER_BYTES),
                 entries, FLAVOUR_FLAGS);
    return 0;
}

static int session_close(dump_session *s)
{
    int rc = rpd_enc_finish(&s->enc);
    int err = errno;
    rp_os_scratch_unmap(s->scratch, s->scratch_bytes);
    errno = err;
    return rc;
}

static void write_process(dump_session *s, unsigned reason, uint64_t sequence)
{
    rpd_process p;
    memset(&p, 0, sizeof p);
    p.pid = (uint64_t)getpid();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    p.time = (uint64_t)now.tv_sec;
    p.time_ns = (uint32_t)now.tv_nsec;
    p.sequence = sequence;
    p.reason = reason;
    p.page_size = RP_PAGE_SIZE;
    ssize_t n = readlink("/proc/self/exe", p.exe, sizeof p.exe - 1);
    p.exe[n > 0 ? n : 0] = 0;
    uint8_t raw[RPD_PROCESS_BYTES];
    rpd_process_encode(&p, raw);
    rpd_enc_begin(&s->enc, RPD_SEC_PROCESS, RPD_NO_HEAP, RPD_PROCESS_BYTES);
    rpd_enc_record(&s->enc, raw, sizeof raw);
    rpd_enc_end(&s->enc);
}

/* ---- one heap (locked) ------------------------------------------------------------------ */

static void write_regions(rpd_encoder *e, rp_heap *h, uint32_t index)
{
    rpd_enc_begin(e, RPD_SEC_REGIONS, index, RPD_REGION_BYTES);
    for (rp_region *r = h->regions; r; r = r->next) {
        rpd_region out;
        memset(&out, 0, sizeof out);
        out.base = r->base;
        out.pages = r->npages;
        out.free_pages = r->free_pages;
        out.mem_lo = r->mem_lo;
        out.mem_hi = r->mem_hi;
        out.map_base = (uintptr_t)r->map_base;
        out.map_len = r->map_len;
        out.header = (uintptr_t)r;
        out.kind = r->map_base ? RPD_REGION_OS : RPD_REGION_CALLER;
        uint8_t raw[RPD_REGION_BYTES];
        rpd_region_encode(&out, raw);
        rpd_enc_record(e, raw, sizeof raw);
    }
    rpd_enc_end(e);
}

static void put_class(rpd_encoder *e, uint32_t tier, uint32_t index, uint64_t min, uint64_t max, uint64_t blocks)
{
    rpd_class c = {tier, index, min, max, blocks};
    uint8_t raw[RPD_CLASS_BYTES];
    rpd_class_encode(&c, raw);
    rpd_enc_record(e, raw, sizeof raw);
}

/* The span tier's first-level classes (free_index.h) and the page tier's orders. */
static void write_classes(rpd_encoder *e, rp_heap *h, uint32_t index)
{
    rpd_enc_begin(e, RPD_SEC_CLASSES, index, RPD_CLASS_BYTES);
    for (unsigned fl = 0; fl < RP_FL_COUNT; fl++) {
        uint64_t lo = fl == 0 ? RP_MIN_BLOCK : (uint64_t)1 << (fl + RP_FL_SHIFT - 1);
        uint64_t hi = ((uint64_t)1 << (fl + RP_FL_SHIFT)) - 1;
        put_class(e, RPD_TIER_SPAN, fl, lo, hi, h->index.class_blocks[fl]);
    }
    for (unsigned k = 0; k < RP_ORDERS; k++) {
        uint64_t bytes = (uint64_t)RP_PAGE_SIZE << k;
        put_class(e, RPD_TIER_PAGE, k, bytes, bytes, h->pages.blocks[k]);
    }
    rpd_enc_end(e);
}

typedef struct block_writer {
    rpd_encoder *e;
    const rp_region *region; /* region of the last block */
    uint32_t region_index;
    uintptr_t span;          /* first byte of the span of the last span block */
    uint64_t quarantined_blocks, quarantined_bytes;
} block_writer;

static void put_block(rpd_encoder *e, const rpd_block *b)
{
    uint8_t raw[RPD_BLOCK_BYTES];
    rpd_block_encode(b, raw);
    rpd_enc_record(e, raw, sizeof raw);
}

static int visit_block(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    block_writer *w = arg;
    if (r != w->region) {
        /* The walk follows the region list, as write_regions did: indexes match. */
        w->region_index = w->region ? w->region_index + 1 : 0;
        w->region = r;
        w->span = 0;
    }
    rpd_block b;
    memset(&b, 0, sizeof b);
    b.region = w->region_index;
    if (info->tier == RP_TIER_SPAN) {
        /* Announce each span with a page-tier record before its first block. */
        rp_page *head = rp_page_of(r, info->block);
        if (head->state == RP_PAGE_SPAN_TAIL)
            head -= head->npages;
        uintptr_t start = rp_page_addr(r, head);
        if (start != w->span) {
            w->span = start;
            b.block = b.addr = start;
            b.block_size = b.size = (uint64_t)head->npages << RP_PAGE_SHIFT;
            b.state = RPD_STATE_SPAN;
            b.tier = RPD_TIER_PAGE;
            put_block(w->e, &b);
        }
    }
    b.block = (uintptr_t)info->block;
    b.block_size = info->block_size;
    b.addr = (uintptr_t)info->addr;
    b.size = info->size;
    b.requested = info->requested;
    b.alloc_stack = info->alloc_stack;
    b.free_stack = info->free_stack;
    b.tier = info->tier == RP_TIER_SPAN ? RPD_TIER_SPAN : RPD_TIER_PAGE;
    b.align_log2 = info->align ? (uint8_t)rp_fls(info->align) : 0;
    switch (info->state) {
    case RP_BLOCK_FREE:
        b.state = RPD_STATE_FREE;
        if (info->tier == RP_TIER_PAGE && r->resident && !rp_page_tier_block_resident(r, rp_page_of(r, info->block)))
            b.flags |= RPD_BLOCK_DECOMMITTED;
        if (info->block == (void *)h->spare_span)
            b.flags |= RPD_BLOCK_SPARE_SPAN;
        break;
    case RP_BLOCK_QUARANTINED:
        b.state = RPD_STATE_QUARANTINED;
        w->quarantined_blocks++;
        w->quarantined_bytes += info->size;
        break;
    default:
        b.state = RPD_STATE_USED;
        break;
    }
    put_block(w->e, &b);
    return w->e->error != 0; /* stop walking once the output fails */
}

static void write_heap_record(rpd_encoder *e, rp_heap *h, uint32_t index, const struct rp_heap_stats *st,
                              const char *walk_error)
{
    rpd_heap out;
    memset(&out, 0, sizeof out);
    memcpy(out.name, h->name, sizeof h->name < sizeof out.name ? sizeof h->name : sizeof out.name);
    out.name[sizeof out.name - 1] = 0;
    out.address = (uintptr_t)h;
    out.large_threshold = h->large_threshold;
    out.retain_bytes = h->retain_bytes;
    out.purge_delay_ms = h->purge_delay_ms;
    out.max_bytes = h->max_bytes;
    out.config_flags = h->flags;
    out.bytes_in_use = st->bytes_in_use;
    out.bytes_usable = st->bytes_usable;
    out.blocks_in_use = st->blocks_in_use;
    out.bytes_free = st->bytes_free;
    out.blocks_free = st->blocks_free;
    out.largest_free = st->largest_free;
    out.span_bytes = st->span_bytes;
    out.spans = st->spans;
    out.large_blocks = st->large_blocks;
    out.page_free_bytes = st->page_free_bytes;
    out.regions = st->regions;
    out.region_bytes = st->region_bytes;
    out.os_bytes = st->os_bytes;
    out.os_bytes_peak = st->os_bytes_peak;
    out.os_released = st->os_released;
    out.alloc_calls = st->alloc_calls;
    out.free_calls = st->free_calls;
    out.blocks_examined = st->blocks_examined;
    out.max_examined = st->max_examined;
    out.user_offset = RP_USER_OFFSET;
    out.page_size = RP_PAGE_SIZE;
    if (walk_error) {
        out.dump_flags |= RPD_HEAP_WALK_INCOMPLETE;
        size_t n = strnlen(walk_error, sizeof out.note - 1);
        memcpy(out.note, walk_error, n); /* out was zeroed: stays NUL-terminated */
    }
    uint8_t raw[RPD_HEAP_BYTES];
    rpd_heap_encode(&out, raw);
    rpd_enc_begin(e, RPD_SEC_HEAP, index, RPD_HEAP_BYTES);
    rpd_enc_record(e, raw, sizeof raw);
    rpd_enc_end(e);
}

static void write_heap(dump_session *s, rp_heap *h)
{
    if (s->heaps >= s->max_heaps)
        return;
    uint32_t index = s->heaps++;
    rpd_encoder *e = &s->enc;
    rp_lock_acquire(&h->lock);
    struct rp_heap_stats st;
    rp_heap_stats_locked(h, &st);
    write_regions(e, h, index);
    write_classes(e, h, index);

    block_writer w;
    memset(&w, 0, sizeof w);
    w.e = e;
    char why[RPD_NOTE_BYTES];
    why[0] = 0;
    rpd_enc_begin(e, RPD_SEC_BLOCKS, index, RPD_BLOCK_BYTES);
    int walked = rp_walk_locked(h, visit_block, &w, why, sizeof why);
    rpd_enc_end(e);

    rpd_quarantine q;
    memset(&q, 0, sizeof q);
    q.enabled = (FLAVOUR_FLAGS & RPD_FLAG_DEBUG) != 0;
    q.limit_bytes = QUARANTINE_LIMIT();
    q.blocks = w.quarantined_blocks;
    q.bytes = w.quarantined_bytes;
    uint8_t raw[RPD_QUARANTINE_BYTES];
    rpd_quarantine_encode(&q, raw);
    rpd_enc_begin(e, RPD_SEC_QUARANTINE, index, RPD_QUARANTINE_BYTES);
    rpd_enc_record(e, raw, sizeof raw);
    rpd_enc_end(e);

    write_heap_record(e, h, index, &st, walked == -1 ? why : NULL);
    rp_lock_release(&h->lock);
}

/* ---- whole dumps ------------------------------------------------------------------------ */

static void count_heap(rp_heap *h, void *arg)
{
    (void)h;
    (*(size_t *)arg)++;
}

static void dump_one_of_all(rp_heap *h, void *arg) { write_heap(arg, h); }

int rpd_write_dump(int fd, rp_heap *only, unsigned reason, uint64_t sequence)
{
    size_t heaps = 1;
    if (!only) {
        heaps = 0;
        rp_heaps_foreach(count_heap, &heaps);
        heaps += EXTRA_HEAPS;
    }
    dump_session s;
    if (session_open(&s, fd, heaps) != 0)
        return -1;
    write_process(&s, reason, sequence);
    if (only)
        write_heap(&s, only);
    else
        rp_heaps_foreach(dump_one_of_all, &s);
    rpd_write_samples(&s.enc, rpd_sample_source());
    rpd_write_stacks(&s.enc);
    rpd_write_mappings(&s.enc);
    return session_close(&s);
}

int rp_heap_dump(rp_heap *h, int fd)
{
    h = rp_heap_resolve(h);
    if (!h) {
        errno = ENOMEM;
        return -1;
    }
    return rpd_write_dump(fd, h, RPD_REASON_CALL, 0);
}

int rp_dump_all(int fd) { return rpd_write_dump(fd, NULL, RPD_REASON_CALL, 0); }
