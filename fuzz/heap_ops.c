/* heap_ops: the fuzzer's bytes become a sequence of heap operations, run against a shadow
 * model that knows what every live block must look like. Built for both flavours (targets
 * heap_ops and heap_ops_debug share this file and the corpus fuzz/corpus/heap_ops).
 *
 * Input: two bytes of heap shape, then operations until the input ends (see decode_* and the
 * OP_* list; fuzz/seeds.py writes the seed corpus in this format and documents it):
 *   shape[0]  bits 0-3 max_bytes = (v+1) * 512 KiB, bits 4-6 region_bytes = 16 KiB << v,
 *             bit 7 RP_HEAP_NO_OS (memory only from ADD_REGION)
 *   shape[1]  bits 0-2 large_threshold = 4 KiB << v, bits 3-5 retain_bytes = 32 KiB << v
 * The heap is small and capped, so out-of-memory paths, region growth, retention and release
 * to the OS are all reached within a few operations. A second, plain heap receives blocks
 * moved by cross-heap realloc.
 *
 * After every operation: rp_heap_check on both heaps, and the counters of rp_heap_stats
 * against the model (live blocks, allocation and free calls, usable bytes, the OS cap).
 * For every new block: alignment, ownership (rp_heap_of), rp_usable_size (>= size, and at
 * most the rounding the tiers allow), no overlap with any live block or region metadata,
 * inside a caller region when the heap has no OS memory; then it is filled with a pattern
 * derived from its id, verified when it is freed, resized or checked. An allocation that
 * fails with ENOMEM although a fresh region would have fitted under the cap (and the OS was
 * not told to fail) is a spurious out-of-memory. Misuse operations (double, interior,
 * foreign, forged-header frees; regions overlapping live memory) must each produce exactly
 * the expected report and change nothing. At the end every block is freed, both heaps must
 * be empty and consistent, and (release) destroying them must return every byte mapped.
 *
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_input.h"
#include "rampart.h"
#include "src/block.h"
#include "src/free_index.h"
#include "src/heap.h"
#include "src/os.h"
#include "src/page_tier.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "src/span.h"

#ifdef RAMPART_DEBUG
#define DEBUG_FLAVOUR 1
#else
#define DEBUG_FLAVOUR 0
#endif

#define NSLOTS 256
#define MAX_OPS 4096
#define NHEAPS 2
#define NREGIONS 8
#define STALE_RING 16
#define FULL_FILL ((size_t)16 << 10) /* blocks up to this size are filled entirely */
#define ARENA_BYTES ((size_t)8 << 20)

typedef struct block {
    unsigned char *p; /* NULL = empty slot */
    size_t size;      /* bytes requested */
    size_t usable;    /* rp_usable_size when allocated or resized */
    size_t align;     /* alignment asked for, normalised (16 .. ) */
    uint64_t id;      /* pattern seed */
    int heap;         /* index into heaps[] */
} block;

typedef struct caller_region {
    unsigned char *base;
    size_t len;
} caller_region;

typedef struct heap_model {
    rp_heap *h;
    rp_heap_config cfg;
    size_t live;           /* blocks the program holds */
    size_t usable_sum;     /* sum of their usable sizes (release: equals bytes_usable) */
    uint64_t allocs;       /* successful allocations, moves by realloc included */
    uint64_t frees;        /* blocks freed (debug: some may sit in quarantine) */
    size_t os_bytes_start; /* os_bytes right after creation: the control block */
    size_t os_released;    /* last seen, must never go down */
    caller_region regions[NREGIONS];
    int nregions;
} heap_model;

static struct state {
    heap_model heaps[NHEAPS];
    block slots[NSLOTS];
    void *stale[STALE_RING]; /* pointers freed recently, for double-free attempts */
    unsigned stale_next;
    uint64_t next_id;
    unsigned long op;       /* index of the current operation, for messages */
    const char *op_name;
    uint64_t os_fail_target; /* value of rp_os_calls() at which the injected failure fires */
} S;

_Alignas(4096) static unsigned char arena[ARENA_BYTES]; /* memory for ADD_REGION */

/* ---- failure and reports ------------------------------------------------------------- */

__attribute__((noreturn, format(printf, 1, 2))) static void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "heap_ops (%s flavour): operation %lu (%s): ", rp_flavour(), S.op, S.op_name ? S.op_name : "-");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond))                                                                           \
            fuzz_fail(__VA_ARGS__);                                                            \
    } while (0)

/* HEAP_OPS_TRACE=1 in the environment prints every operation (for reading a crasher). */
static int tracing;

#define TRACE(...)                                                                             \
    do {                                                                                       \
        if (tracing)                                                                           \
            fprintf(stderr, __VA_ARGS__);                                                      \
    } while (0)

static struct {
    int count;
    rp_error_kind kind;
    const void *address;
    char message[200];
} reported;

static void capture_report(const rp_report *r, void *arg)
{
    (void)arg;
    if (reported.count++ == 0) {
        reported.kind = r->kind;
        reported.address = r->address;
        snprintf(reported.message, sizeof reported.message, "%s", r->message);
    }
}

static void expect_no_report(void)
{
    EXPECT(reported.count == 0, "unexpected report %s: %s", rp_error_kind_name(reported.kind), reported.message);
}

/* Exactly one report, of one of the kinds in `kinds` (bit per kind), naming address p (the
 * pointer passed, or the header found corrupted). */
static void expect_report(unsigned kinds, const void *p)
{
    EXPECT(reported.count == 1, "expected one report about %p, got %d", p, reported.count);
    EXPECT(kinds & (1u << reported.kind), "report about %p has kind %s: %s", p, rp_error_kind_name(reported.kind),
           reported.message);
    EXPECT(reported.address == p, "report names %p, not the pointer passed (%p): %s", reported.address, p,
           reported.message);
    reported.count = 0;
}

#define KIND(k) (1u << (k))

/* ---- the pattern ------------------------------------------------------------------------ */

/* Filling and verifying patterns is the harness's bulk work and says nothing about the heap's
 * state: keep it out of coverage feedback (and its comparison tracing), which would otherwise
 * cost most of the run time. */
#if defined(__clang__) && __clang_major__ >= 13
#define NO_FEEDBACK __attribute__((no_sanitize("coverage")))
#else
#define NO_FEEDBACK
#endif

NO_FEEDBACK static inline uint64_t pattern_word(uint64_t id, size_t word)
{
    uint64_t x = id * 0x9e3779b97f4a7c15ull + word * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    return x * 0x94d049bb133111ebull;
}

NO_FEEDBACK static inline unsigned char pattern_byte(uint64_t id, size_t i)
{
    return (unsigned char)(pattern_word(id, i / 8) >> (8 * (i % 8)));
}

/* Byte ranges of a block that hold the pattern: all of it up to FULL_FILL, beyond that the
 * first and last 4 KiB and 64 bytes at each page boundary, so every page is touched. */
typedef int (*range_fn)(unsigned char *p, size_t from, size_t to, uint64_t id);

NO_FEEDBACK static int for_each_range(unsigned char *p, size_t usable, size_t limit, uint64_t id, range_fn fn)
{
    if (limit > usable)
        limit = usable;
    if (usable <= FULL_FILL)
        return fn(p, 0, limit, id);
    for (size_t at = 0; at < limit; at += 4096) {
        size_t to = at + (at == 0 ? 4096 : 64);
        if (fn(p, at, to < limit ? to : limit, id))
            return 1;
    }
    size_t tail = usable - 4096;
    return tail < limit ? fn(p, tail, limit, id) : 0;
}

NO_FEEDBACK static int fill_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        p[i] = pattern_byte(id, i);
    for (; i + 8 <= to; i += 8) {
        uint64_t w = pattern_word(id, i / 8);
        memcpy(p + i, &w, 8);
    }
    for (; i < to; i++)
        p[i] = pattern_byte(id, i);
    return 0;
}

static size_t bad_offset;

NO_FEEDBACK static int verify_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        if (p[i] != pattern_byte(id, i))
            goto bad;
    for (; i + 8 <= to; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != pattern_word(id, i / 8))
            break; /* the byte loop below finds which byte */
    }
    for (; i < to; i++)
        if (p[i] != pattern_byte(id, i))
            goto bad;
    return 0;
bad:
    bad_offset = i;
    return 1;
}

NO_FEEDBACK static int zero_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    (void)id;
    for (size_t i = from; i < to; i++) {
        if (p[i]) {
            bad_offset = i;
            return 1;
        }
    }
    return 0;
}

static void fill_block(block *b) { for_each_range(b->p, b->usable, b->usable, b->id, fill_range); }

static void verify_block(const block *b, size_t limit, const char *when)
{
    if (for_each_range(b->p, b->usable, limit, b->id, verify_range))
        fuzz_fail("block %p (%zu bytes, id %llu): byte %zu changed %s", (void *)b->p, b->size,
                  (unsigned long long)b->id, bad_offset, when);
}

/* ---- decoding ---------------------------------------------------------------------------- */

static const size_t special_sizes[] = {
    0, 1, 15, 16, 17, 24, 4096, 3072, 64512, 65535, 65536, 65537, (size_t)1 << 20, (size_t)1 << 32,
    0xfffff000u, (size_t)1 << 43, ((size_t)1 << 43) + 1, SIZE_MAX / 2, SIZE_MAX - 4095, SIZE_MAX,
};

/* Top three bits choose a range, so every size class and edge is a few bits away. */
static size_t decode_size(uint16_t v)
{
    size_t x = v & 0x1fff;
    switch (v >> 13) {
    case 0:
        return x & 0x3f;
    case 1:
        return x & 0x3ff;
    case 2:
        return x;
    case 3:
        return x << 3;
    case 4:
        return x << 6;
    case 5:
        return (x & 0x3ff) << 12; /* whole pages */
    case 6: {                     /* around a page boundary */
        size_t s = (x & 0xff) << 12;
        size_t delta = (x >> 8) * 16; /* 0 .. 496 */
        return s + delta >= 256 ? s + delta - 256 : 0;
    }
    default:
        return special_sizes[x % (sizeof special_sizes / sizeof special_sizes[0])];
    }
}

static const size_t special_aligns[] = {3, 24, 4097, 6144, (size_t)1 << 40, (size_t)1 << 63, SIZE_MAX, 12288};

/* Low five bits: 0 = default, 1..23 = 2^(v-1) (1 B .. 4 MiB), 24..31 = odd cases. */
static size_t decode_align(uint8_t v)
{
    v &= 31;
    if (v == 0)
        return 0;
    if (v <= 23)
        return (size_t)1 << (v - 1);
    return special_aligns[v - 24];
}

static int align_valid(size_t a) { return a == 0 || (a & (a - 1)) == 0; }
static size_t align_normal(size_t a) { return a < 16 ? 16 : a; }

static const size_t special_counts[] = {0, 1, 2, 3, 7, 100, 4096, (size_t)1 << 32, SIZE_MAX / 2, SIZE_MAX};

/* ---- model queries ---------------------------------------------------------------------- */

NO_FEEDBACK static int ranges_overlap(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    return a < b + blen && b < a + alen;
}

NO_FEEDBACK static size_t extent(const block *b) { return b->usable ? b->usable : 1; }

/* The live block containing p (or starting at it), or NULL. */
NO_FEEDBACK static block *live_block_at(const void *p)
{
    for (int i = 0; i < NSLOTS; i++) {
        block *b = &S.slots[i];
        if (b->p && (const unsigned char *)p >= b->p && (const unsigned char *)p < b->p + extent(b))
            return b;
    }
    return NULL;
}

static int injection_armed(uint64_t calls_before) { return S.os_fail_target && calls_before < S.os_fail_target; }

/* Pages (a power of two) of a fresh region able to serve (size, align) in either tier: size
 * plus alignment, the debug flavour's lead page, span headers and slack. An upper bound. */
static size_t fresh_area_pages(size_t size, size_t align)
{
    size_t a = align < 4096 ? 4096 : align;
    size_t pages = (size + a + 4096 + 256 + 4095) / 4096, p2 = 1;
    while (p2 < pages)
        p2 <<= 1;
    return p2;
}

/* After a failed allocation: was the heap really out of memory? It was not if a free block of
 * the page tier is as large as a fresh region's page area, or if such a region (its pages and
 * descriptors) fits under the cap and the OS was not told to fail. */
static void expect_real_oom(heap_model *m, size_t size, size_t align, uint64_t calls_before)
{
    if (injection_armed(calls_before) || size > ((size_t)1 << 30) || align > ((size_t)1 << 30))
        return;
    size_t pages = fresh_area_pages(size, align);
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    for (unsigned k = 0; k < RP_STATS_ORDERS; k++)
        EXPECT(!st.order_free_blocks[k] || ((size_t)1 << k) < pages,
               "rp_alloc(%zu, align %zu) failed although a free page block of order %u exists", size, align, k);
    if (m->cfg.flags & RP_HEAP_NO_OS)
        return;
    size_t cost = pages * 4096 + ((sizeof(rp_region) + pages * sizeof(rp_page) + 4095) & ~(size_t)4095);
    EXPECT(st.os_bytes + cost > m->cfg.max_bytes,
           "rp_alloc(%zu, align %zu) failed with %zu bytes mapped, cap %zu, a fresh region costs %zu", size, align,
           st.os_bytes, m->cfg.max_bytes, cost);
}

/* ---- checks after every operation -------------------------------------------------------- */

static void check_heap(heap_model *m)
{
    char why[256];
    if (rp_heap_check(m->h, why, sizeof why) != 0)
        fuzz_fail("rp_heap_check(%s): %s", rp_heap_name(m->h), why);
    rp_heap_stats_t st;
    EXPECT(rp_heap_stats(m->h, &st) == 0, "rp_heap_stats failed");
    EXPECT(st.alloc_calls == m->allocs, "%s: alloc_calls %llu, the model made %llu", rp_heap_name(m->h),
           (unsigned long long)st.alloc_calls, (unsigned long long)m->allocs);
    EXPECT(st.blocks_in_use == st.alloc_calls - st.free_calls, "blocks_in_use %zu != alloc_calls - free_calls",
           st.blocks_in_use);
    if (DEBUG_FLAVOUR) {
        /* Quarantined blocks are still in use for the core. */
        EXPECT(st.blocks_in_use >= m->live && st.free_calls <= m->frees, "%s: %zu blocks in use, model holds %zu",
               rp_heap_name(m->h), st.blocks_in_use, m->live);
    } else {
        EXPECT(st.blocks_in_use == m->live && st.free_calls == m->frees,
               "%s: %zu blocks in use / %llu frees, model holds %zu / %llu", rp_heap_name(m->h), st.blocks_in_use,
               (unsigned long long)st.free_calls, m->live, (unsigned long long)m->frees);
        EXPECT(st.bytes_usable == m->usable_sum, "%s: bytes_usable %zu, model %zu", rp_heap_name(m->h),
               st.bytes_usable, m->usable_sum);
    }
    EXPECT(st.largest_free <= st.bytes_free && (st.bytes_free == 0) == (st.blocks_free == 0),
           "free counters disagree: largest %zu, bytes %zu, blocks %zu", st.largest_free, st.bytes_free,
           st.blocks_free);
    EXPECT(st.os_released >= m->os_released, "os_released went down");
    m->os_released = st.os_released;
    size_t cap = m->cfg.max_bytes > m->os_bytes_start ? m->cfg.max_bytes : m->os_bytes_start;
    EXPECT(st.os_bytes_peak <= cap, "%s: os_bytes_peak %zu over the cap %zu", rp_heap_name(m->h), st.os_bytes_peak,
           cap);
    EXPECT(st.regions >= (size_t)m->nregions, "%zu regions, %d added by the caller", st.regions, m->nregions);
    if (m->cfg.flags & RP_HEAP_NO_OS)
        EXPECT(st.os_bytes == m->os_bytes_start && st.regions == (size_t)m->nregions,
               "a heap without OS memory mapped %zu bytes / has %zu regions", st.os_bytes - m->os_bytes_start,
               st.regions);
}

static void check_all(void)
{
    expect_no_report();
    for (int i = 0; i < NHEAPS; i++)
        if (S.heaps[i].h)
            check_heap(&S.heaps[i]);
}

/* ---- allocation bookkeeping -------------------------------------------------------------- */

/* Checks a block just returned by the heap and files it in slot s. */
static void adopt(int s, int heap, unsigned char *p, size_t size, size_t align, uint64_t id)
{
    heap_model *m = &S.heaps[heap];
    EXPECT(((uintptr_t)p & (align - 1)) == 0 && ((uintptr_t)p & 15) == 0, "%p is not aligned to %zu", (void *)p,
           align);
    EXPECT(rp_heap_of(p) == m->h, "rp_heap_of(%p) is not the heap it came from", (void *)p);
    size_t usable = rp_usable_size(p);
    expect_no_report();
    if (DEBUG_FLAVOUR) {
        EXPECT(usable == size, "debug rp_usable_size(%p) = %zu, requested %zu", (void *)p, usable, size);
    } else {
        size_t slack = usable - size;
        EXPECT(usable >= size, "rp_usable_size(%p) = %zu < %zu requested", (void *)p, usable, size);
        EXPECT(slack <= 32 || (usable % 4096 == 0 && ((uintptr_t)p & 4095) == 0 && slack <= 4096),
               "rp_usable_size(%p) = %zu wastes %zu bytes on a request of %zu", (void *)p, usable, slack, size);
    }
    block nb = {p, size, usable, align, id, heap};
    for (int i = 0; i < NSLOTS; i++) {
        block *o = &S.slots[i];
        if (o->p && ranges_overlap(o->p, extent(o), p, extent(&nb)))
            fuzz_fail("new block %p (+%zu) overlaps live block %p (+%zu)", (void *)p, usable, (void *)o->p, o->usable);
    }
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *hm = &S.heaps[k];
        int inside = 0;
        for (int r = 0; r < hm->nregions; r++) {
            caller_region *cr = &hm->regions[r];
            if (!ranges_overlap(cr->base, cr->len, p, extent(&nb)))
                continue;
            EXPECT(k == heap && p >= cr->base + sizeof(rp_region) && p + extent(&nb) <= cr->base + cr->len,
                   "block %p (+%zu) straddles the metadata or edge of caller region %p (+%zu)", (void *)p, usable,
                   (void *)cr->base, cr->len);
            inside = 1;
        }
        if (k == heap && (hm->cfg.flags & RP_HEAP_NO_OS))
            EXPECT(inside, "block %p of a heap without OS memory is outside every caller region", (void *)p);
    }
    S.slots[s] = nb;
    m->live++;
    m->usable_sum += usable;
    fill_block(&S.slots[s]);
}

static void remember_stale(void *p)
{
    S.stale[S.stale_next++ % STALE_RING] = p;
}

static void drop(int s)
{
    block *b = &S.slots[s];
    heap_model *m = &S.heaps[b->heap];
    m->live--;
    m->usable_sum -= b->usable;
    b->p = NULL;
}

static void free_slot(int s)
{
    block *b = &S.slots[s];
    if (!b->p) {
        rp_free(NULL);
        return;
    }
    verify_block(b, b->usable, "before free");
    void *p = b->p;
    heap_model *m = &S.heaps[b->heap];
    TRACE("  slot %d: rp_free(%p)\n", s, p);
    rp_free(p);
    expect_no_report();
    m->frees++;
    drop(s);
    remember_stale(p);
}

static heap_model *second_heap(void)
{
    heap_model *m = &S.heaps[1];
    if (!m->h) {
        /* Created on first use; an injected OS failure is held off meanwhile, so the
         * operation under test, not the set-up, meets it. */
        uint64_t remaining = S.os_fail_target > rp_os_calls() ? S.os_fail_target - rp_os_calls() : 0;
        rp_os_fail_at(0);
        m->cfg.name = "second";
        m->cfg.max_bytes = (size_t)2 << 20;
        m->cfg.region_bytes = (size_t)64 << 10;
        m->h = rp_heap_create(&m->cfg);
        EXPECT(m->h, "rp_heap_create(second) failed");
        rp_heap_stats_t st;
        rp_heap_stats(m->h, &st);
        m->os_bytes_start = st.os_bytes;
        if (remaining) {
            rp_os_fail_at(remaining);
            S.os_fail_target = rp_os_calls() + remaining;
        }
    }
    return m;
}

/* ---- operations -------------------------------------------------------------------------- */

enum {
    OP_ALLOC,      /* slot, size16, align8 (bit 7: second heap) */
    OP_CALLOC,     /* slot, count8, size16, align8 */
    OP_REALLOC,    /* slot, size16, flags8 (bit 0: pass NULL as heap, bit 1: into the second heap) */
    OP_FREE,       /* slot */
    OP_ADD_REGION, /* offset16, len16, misalign8 */
    OP_CHECK,      /* verify every block, walk both heaps against the model */
    OP_TRIM,       /* keep8 */
    OP_OS_FAIL,    /* n8: the n-th OS call from now fails */
    OP_MISUSE,     /* kind8, slot, offset16 */
    OP_ALLOC_RUN,  /* first slot, count8, size16, align8: the seed scenario's runs of one shape */
    OP_FREE_RUN,   /* first slot, count8, stride8 */
    OP_CORRUPT,    /* kind8, sel16, x8: damage one structure, rp_heap_check must say so, repair */
    OP_EDGES,      /* argument edge cases of the API (NULL heaps, bad configs, bad arguments) */
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"alloc", "calloc", "realloc", "free", "add-region", "check",
                                               "trim", "os-fail", "misuse", "alloc-run", "free-run",
                                               "corrupt", "edges"};

static void do_alloc(int s, int heap, size_t size, size_t align)
{
    heap_model *m = heap ? second_heap() : &S.heaps[0];
    if (S.slots[s].p)
        free_slot(s);
    uint64_t calls = rp_os_calls();
    errno = 0;
    unsigned char *p = rp_alloc(m->h, size, align);
    TRACE("  slot %d: rp_alloc(heap %d, %zu, %zu) = %p\n", s, heap, size, align, (void *)p);
    expect_no_report();
    if (!p) {
        if (!align_valid(align)) {
            EXPECT(errno == EINVAL, "rp_alloc(%zu, align %zu) failed with errno %d, not EINVAL", size, align, errno);
            return;
        }
        EXPECT(errno == ENOMEM, "rp_alloc(%zu, align %zu) failed with errno %d, not ENOMEM", size, align, errno);
        expect_real_oom(m, size, align_normal(align), calls);
        return;
    }
    EXPECT(align_valid(align), "rp_alloc accepted alignment %zu", align);
    m->allocs++;
    adopt(s, heap, p, size, align_normal(align), ++S.next_id);
}

static void do_calloc(int s, size_t n, size_t size, size_t align)
{
    heap_model *m = &S.heaps[0];
    if (S.slots[s].p)
        free_slot(s);
    size_t total;
    int overflow = __builtin_mul_overflow(n, size, &total);
    uint64_t calls = rp_os_calls();
    errno = 0;
    unsigned char *p = rp_calloc(m->h, n, size, align);
    expect_no_report();
    if (!p) {
        int want = overflow ? ENOMEM : (align_valid(align) ? ENOMEM : EINVAL);
        EXPECT(errno == want, "rp_calloc(%zu, %zu, align %zu) failed with errno %d, expected %d", n, size, align,
               errno, want);
        if (!overflow && align_valid(align))
            expect_real_oom(m, total, align_normal(align), calls);
        return;
    }
    EXPECT(!overflow && align_valid(align), "rp_calloc(%zu, %zu, align %zu) succeeded", n, size, align);
    if (for_each_range(p, total, total, 0, zero_range))
        fuzz_fail("rp_calloc(%zu, %zu) block %p: byte %zu is not zero", n, size, (void *)p, bad_offset);
    m->allocs++;
    adopt(s, 0, p, total, align_normal(align), ++S.next_id);
}

static void do_realloc(int s, size_t size, uint8_t flags)
{
    block *b = &S.slots[s];
    int to_second = (flags & 2) != 0;
    heap_model *target = to_second ? second_heap() : (b->p ? &S.heaps[b->heap] : &S.heaps[0]);
    int target_index = (int)(target - S.heaps);
    rp_heap *arg = (flags & 1) && !to_second ? NULL : target->h;
    if (!b->p && !arg)
        arg = target->h; /* realloc(NULL, ...) with a NULL heap would use the default heap */
    uint64_t calls = rp_os_calls();
    errno = 0;
    unsigned char *q = rp_realloc(arg, b->p, size);
    TRACE("  slot %d: rp_realloc(%p, %zu) = %p\n", s, (void *)b->p, size, (void *)q);
    expect_no_report();
    if (!b->p) {
        if (!q) {
            EXPECT(errno == ENOMEM, "rp_realloc(NULL, %zu) failed with errno %d", size, errno);
            expect_real_oom(target, size, 16, calls);
            return;
        }
        target->allocs++;
        adopt(s, target_index, q, size, 16, ++S.next_id);
        return;
    }
    block old = *b;
    if (!q) {
        EXPECT(errno == ENOMEM, "rp_realloc(%p, %zu) failed with errno %d", (void *)old.p, size, errno);
        EXPECT(rp_usable_size(old.p) == old.usable, "failed realloc changed the usable size of %p", (void *)old.p);
        verify_block(&old, old.usable, "by a failed realloc");
        expect_real_oom(target, size, old.align, calls);
        return;
    }
    size_t keep = old.usable < size ? old.usable : size;
    heap_model *om = &S.heaps[old.heap];
    drop(s);
    if (q != old.p) {
        /* Moved: a new block was allocated (in the target heap) and the old one freed. */
        target->allocs++;
        om->frees++;
        remember_stale(old.p);
    } else {
        EXPECT(target_index == old.heap, "realloc into another heap returned the same pointer");
    }
    /* The old contents, as far as they fit, must have come along. */
    block moved = old;
    moved.p = q;
    verify_block(&moved, keep, "by realloc");
    adopt(s, target_index, q, size, old.align, old.id);
}

static void do_add_region(uint16_t offset, uint16_t len16, uint8_t misalign)
{
    heap_model *m = &S.heaps[0];
    size_t off = ((size_t)offset * 128 + (misalign & 63)) % ARENA_BYTES;
    size_t len = (size_t)(len16 & 0x7fff) * 128 + (size_t)(misalign >> 6) * 16;
    if (len > ARENA_BYTES - off)
        len = ARENA_BYTES - off;
    unsigned char *base = arena + off;
    int overlaps = 0;
    for (int k = 0; k < NHEAPS; k++)
        for (int r = 0; r < S.heaps[k].nregions; r++)
            overlaps |= len && ranges_overlap(S.heaps[k].regions[r].base, S.heaps[k].regions[r].len, base, len);
    rp_heap_stats_t before, after;
    rp_heap_stats(m->h, &before);
    errno = 0;
    int rc = rp_heap_add_region(m->h, base, len);
    expect_no_report();
    rp_heap_stats(m->h, &after);
    if (rc != 0) {
        EXPECT(rc == -1 && errno == EINVAL, "rp_heap_add_region failed with rc %d errno %d", rc, errno);
        size_t enough = 64 + sizeof(rp_region) + sizeof(rp_page) + 2 * 4096;
        EXPECT(overlaps || len < enough, "rp_heap_add_region(%p, %zu) refused a region that fits and overlaps nothing",
               (void *)base, len);
        EXPECT(after.regions == before.regions && after.region_bytes == before.region_bytes,
               "a refused region changed the heap");
        return;
    }
    EXPECT(!overlaps, "rp_heap_add_region(%p, %zu) accepted memory that overlaps another region", (void *)base, len);
    EXPECT(after.regions == before.regions + 1 && after.region_bytes > before.region_bytes &&
               after.region_bytes - before.region_bytes <= len,
           "region accepted but counters say %zu regions, %zu bytes", after.regions, after.region_bytes);
    if (m->nregions < NREGIONS) {
        m->regions[m->nregions].base = base;
        m->regions[m->nregions].len = len;
        m->nregions++;
    } else {
        fuzz_fail("model region table full"); /* cannot happen: see the NREGIONS guard in run() */
    }
}

/* ---- the walk against the model ---------------------------------------------------------- */

typedef struct walk_state {
    int heap;
    size_t used, quarantined;
    unsigned char seen[NSLOTS];
    block *by_addr[NSLOTS]; /* live blocks sorted by address */
    size_t nlive;
} walk_state;

static int by_address(const void *a, const void *b)
{
    const block *x = *(block *const *)a, *y = *(block *const *)b;
    return x->p < y->p ? -1 : x->p > y->p;
}

/* Index of the first live block ending after p (blocks do not overlap, so ends are sorted
 * too), or nlive. */
NO_FEEDBACK static size_t first_ending_after(const walk_state *w, const unsigned char *p)
{
    size_t lo = 0, hi = w->nlive;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->by_addr[mid]->p + extent(w->by_addr[mid]) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int walk_visit(const rp_block_info *info, void *arg)
{
    walk_state *w = arg;
    unsigned char *a = info->addr;
    size_t i = first_ending_after(w, a);
    if (info->state == RP_BLOCK_USED) {
        w->used++;
        block *b = i < w->nlive ? w->by_addr[i] : NULL;
        if (!b || b->p != a || b->heap != w->heap)
            fuzz_fail("the walk shows a used block %p (+%zu) the program does not hold", info->addr, info->size);
        int s = (int)(b - S.slots);
        EXPECT(!w->seen[s], "the walk shows block %p twice", info->addr);
        w->seen[s] = 1;
        EXPECT(info->align == b->align, "the walk gives block %p alignment %zu, asked %zu", info->addr, info->align,
               b->align);
        if (DEBUG_FLAVOUR)
            EXPECT(info->requested == b->size && info->size >= b->size,
                   "the walk gives block %p requested %zu / size %zu, asked %zu", info->addr, info->requested,
                   info->size, b->size);
        else
            EXPECT(info->size == b->usable, "the walk gives block %p size %zu, usable is %zu", info->addr, info->size,
                   b->usable);
        EXPECT((unsigned char *)info->block <= a && a + info->size <= (unsigned char *)info->block + info->block_size,
               "block %p lies outside its extent %p (+%zu)", info->addr, info->block, info->block_size);
        return 0;
    }
    if (info->state == RP_BLOCK_QUARANTINED) {
        EXPECT(DEBUG_FLAVOUR, "release shows a quarantined block");
        w->quarantined++;
    }
    /* Free (or quarantined) memory must not overlap anything the program holds. */
    unsigned char *lo = info->block;
    i = first_ending_after(w, lo);
    if (i < w->nlive && ranges_overlap(lo, info->block_size, w->by_addr[i]->p, extent(w->by_addr[i])))
        fuzz_fail("%s block %p (+%zu) overlaps live block %p (+%zu)",
                  info->state == RP_BLOCK_FREE ? "free" : "quarantined", info->block, info->block_size,
                  (void *)w->by_addr[i]->p, w->by_addr[i]->usable);
    return 0;
}

static void do_check(void)
{
    for (int i = 0; i < NSLOTS; i++) {
        block *b = &S.slots[i];
        if (!b->p)
            continue;
        verify_block(b, b->usable, "while live");
        EXPECT(rp_usable_size(b->p) == b->usable, "rp_usable_size(%p) changed", (void *)b->p);
        EXPECT(rp_heap_of(b->p) == S.heaps[b->heap].h, "rp_heap_of(%p) changed", (void *)b->p);
    }
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *m = &S.heaps[k];
        if (!m->h)
            continue;
        walk_state w;
        memset(&w, 0, sizeof w);
        w.heap = k;
        for (int i = 0; i < NSLOTS; i++)
            if (S.slots[i].p)
                w.by_addr[w.nlive++] = &S.slots[i];
        qsort(w.by_addr, w.nlive, sizeof w.by_addr[0], by_address);
        EXPECT(rp_heap_walk(m->h, walk_visit, &w) == 0, "rp_heap_walk failed");
        EXPECT(w.used == m->live, "the walk shows %zu used blocks, the model holds %zu", w.used, m->live);
        rp_heap_stats_t st;
        rp_heap_stats(m->h, &st);
        EXPECT(st.blocks_in_use == w.used + w.quarantined, "blocks_in_use %zu, the walk shows %zu used + %zu held",
               st.blocks_in_use, w.used, w.quarantined);
    }
}

static void do_trim(uint8_t keep)
{
    heap_model *m = &S.heaps[0];
    rp_heap_stats_t before, after;
    rp_heap_stats(m->h, &before);
    size_t released = rp_heap_trim(m->h, (size_t)(keep & 15) << 16);
    rp_heap_stats(m->h, &after);
    EXPECT(after.os_released - before.os_released == released, "rp_heap_trim returned %zu, os_released grew by %zu",
           released, after.os_released - before.os_released);
}

/* A live span block of heap k (from slot `from` on), or NULL. */
static block *live_span_slot(int k, unsigned from)
{
    for (unsigned i = 0; i < NSLOTS; i++) {
        block *b = &S.slots[(from + i) % NSLOTS];
        if (!b->p || b->heap != k)
            continue;
        rp_region *r = rp_pagemap_lookup(b->p);
        if (!r || (uintptr_t)b->p < r->base)
            continue;
        rp_page *d = rp_page_of(r, b->p);
        if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL)
            return b;
    }
    return NULL;
}

/* The header of a live span block of heap k (from slot `from` on), or NULL. */
static rp_block *live_span_header(int k, unsigned from)
{
    block *b = live_span_slot(k, from);
    return b ? rp_block_of_user(b->p) : NULL;
}

/* Bytes changed on purpose (misuse, damage) and put back afterwards. */
typedef struct saved_bytes {
    volatile unsigned char *at;
    size_t len;
    unsigned char bytes[32];
} saved_bytes;

static saved_bytes saved[2];
static int nsaved;

/* Remembers len bytes at p before they are changed (the debug runtime may poison them). */
RP_NO_SANITIZE_ADDRESS static void save_bytes(void *p, size_t len)
{
    saved_bytes *b = &saved[nsaved++];
    b->at = p;
    b->len = len;
    for (size_t i = 0; i < len; i++)
        b->bytes[i] = b->at[i];
}

RP_NO_SANITIZE_ADDRESS static void restore_bytes(void)
{
    while (nsaved > 0) {
        saved_bytes *b = &saved[--nsaved];
        for (size_t i = 0; i < b->len; i++)
            b->at[i] = b->bytes[i];
    }
}

RP_NO_SANITIZE_ADDRESS static void xor_u32(uint32_t *p, uint32_t x)
{
    save_bytes(p, sizeof *p);
    *(volatile uint32_t *)p ^= x;
}

RP_NO_SANITIZE_ADDRESS static void set_ptr(void *slot, void *value)
{
    save_bytes(slot, sizeof value);
    *(void *volatile *)slot = value;
}

static void add_size(size_t *p, size_t delta)
{
    save_bytes(p, sizeof *p);
    *p += delta;
}

static void do_misuse(uint8_t kind, int s, uint16_t offset)
{
    block *b = &S.slots[s];
    reported.count = 0;
    kind &= 15;
    TRACE("  misuse %d, slot %d (%p), offset %u\n", kind, s, (void *)b->p, offset);
    switch (kind) {
    case 0: { /* free, resize or measure a pointer freed earlier (unless held again) */
        void *p = S.stale[offset % STALE_RING];
        if (!p)
            return;
        block *holder = live_block_at(p);
        if (holder && holder->p == p)
            return;
        switch ((offset >> 4) % 3) {
        case 0:
            rp_free(p);
            break;
        case 1:
            errno = 0;
            EXPECT(rp_realloc(NULL, p, offset >> 6) == NULL && errno == EINVAL, "rp_realloc of freed %p", p);
            break;
        default:
            EXPECT(rp_usable_size(p) == 0, "rp_usable_size of freed %p is not 0", p);
            break;
        }
        /* Freed memory since reused by a live block makes p an interior pointer of it. */
        expect_report(KIND(RP_ERR_DOUBLE_FREE) | KIND(RP_ERR_INVALID_FREE), p);
        return;
    }
    case 1:   /* free, resize or measure an interior pointer of a live block */
    case 2: {
        if (!b->p || b->usable < 2)
            return;
        unsigned char *p = b->p + 1 + offset % (b->usable - 1);
        if (kind == 1) {
            rp_free(p);
        } else if (offset & 1) {
            EXPECT(rp_usable_size(p) == 0, "rp_usable_size of an interior pointer is not 0");
        } else {
            errno = 0;
            EXPECT(rp_realloc(NULL, p, 64) == NULL && errno == EINVAL, "rp_realloc of an interior pointer");
        }
        expect_report(KIND(RP_ERR_INVALID_FREE), p);
        verify_block(b, b->usable, "by a refused interior free");
        return;
    }
    case 3: { /* pointers rampart never returned: the stack, a global, the system heap */
        static char global_byte[64];
        char local[32];
        void *sys = malloc(48);
        void *cands[] = {local + 16, global_byte + 16, sys, (void *)(uintptr_t)4096, arena + ARENA_BYTES - 64};
        void *p = cands[offset % 5];
        if (live_block_at(p) == NULL && rp_heap_of(p) == NULL) {
            rp_free(p);
            /* The arena's last bytes may lie in a caller region, in freed memory. */
            unsigned kinds = KIND(RP_ERR_INVALID_FREE);
            if (offset % 5 == 4)
                kinds |= KIND(RP_ERR_DOUBLE_FREE) | KIND(RP_ERR_CORRUPT_BLOCK);
            expect_report(kinds, p);
        }
        free(sys);
        return;
    }
    case 4: { /* a pointer into a caller region's metadata */
        heap_model *m = &S.heaps[0];
        if (!m->nregions)
            return;
        caller_region *cr = &m->regions[offset % m->nregions];
        unsigned char *p = (unsigned char *)(((uintptr_t)cr->base + 64 + 63) & ~(uintptr_t)63);
        rp_free(p);
        expect_report(KIND(RP_ERR_INVALID_FREE), p);
        return;
    }
    case 5: { /* a forged header: the block's own header copied inside it (release layout) */
        if (DEBUG_FLAVOUR || !b->p || b->usable < 64 || ((uintptr_t)b->p & 4095) == 0)
            return;
        size_t at = 32 + ((size_t)offset * 16) % (b->usable - 32);
        at &= ~(size_t)15;
        if (at < 32 || at + 16 > b->usable)
            return;
        unsigned char *fake = b->p + at;
        memcpy(fake - RP_USER_OFFSET, b->p - RP_USER_OFFSET, RP_HEADER);
        rp_free(fake);
        expect_report(KIND(RP_ERR_INVALID_FREE), fake);
        fill_block(b); /* the program's own bytes: put the pattern back */
        return;
    }
    case 7: { /* a write after free into a small free block's links: the allocation that
               * would take the block must refuse it, not hand it out while it is listed */
        rp_heap *h = S.heaps[0].h;
        uint32_t map = h->index.sl_bitmap[0] & (~0u << (offset % RP_SL_COUNT));
        if (!map)
            return;
        rp_block *x = h->index.heads[0][rp_ctz(map)];
        if (x->size < RP_USER_OFFSET + RP_HOOK_SUFFIX + 16)
            return;
        size_t request = x->size - RP_USER_OFFSET - RP_HOOK_SUFFIX; /* needs exactly x->size bytes */
        nsaved = 0;
        if (offset & 0x100)
            set_ptr(&rp_links(x)->prev, x); /* a list head's prev must be NULL */
        else
            set_ptr(&rp_links(x)->next, x); /* its next must point back at it */
        errno = 0;
        EXPECT(rp_alloc(h, request, 0) == NULL, "rp_alloc(%zu) handed out free block %p with broken links",
               request, (void *)x);
        restore_bytes();
        expect_report(KIND(RP_ERR_CORRUPT_FREE_LIST), x);
        return;
    }
    case 8:   /* an overflow into the next block's header, then free or grow the block */
    case 10: { /* an underflow into the block's own header, then free or grow it */
        /* The debug flavour reports these as heap-buffer-overflow/underflow from its
         * cookies (the corruption target's subject); the core's own checks are tested here. */
        block *sb = DEBUG_FLAVOUR ? NULL : live_span_slot(0, (unsigned)s);
        if (!sb)
            return;
        rp_block *hdr = rp_block_of_user(sb->p);
        size_t n = 1 + offset % 16;
        unsigned char *at = kind == 8 ? (unsigned char *)rp_block_next(hdr) : (unsigned char *)(hdr + 1) - n;
        nsaved = 0;
        save_bytes(at, n);
        for (size_t i = 0; i < n; i++)
            at[i] ^= 0xa5;
        size_t grow = sb->usable + 48;
        size_t threshold = S.heaps[0].cfg.large_threshold;
        int to_pages = grow >= threshold || sb->align >= threshold || (sb->align >= 4096 && grow % 4096 == 0);
        if ((offset & 0x10) && !to_pages) {
            errno = 0;
            EXPECT(rp_realloc(NULL, sb->p, grow) == NULL && errno == EINVAL, "rp_realloc of %p with a damaged %s",
                   (void *)sb->p, kind == 8 ? "neighbour" : "header");
        } else {
            rp_free(sb->p);
        }
        restore_bytes();
        if (kind == 8)
            expect_report(KIND(RP_ERR_CORRUPT_BLOCK), at);
        else
            expect_report(KIND(RP_ERR_INVALID_FREE), sb->p);
        verify_block(sb, sb->usable, "by a refused free");
        return;
    }
    case 9: { /* a write after free into the links of a free neighbour, then free the block */
        block *sb = live_span_slot(0, (unsigned)s);
        if (!sb)
            return;
        rp_block *hdr = rp_block_of_user(sb->p), *next = rp_block_next(hdr), *target = NULL;
        if (!(next->bits & RP_HDR_SENTINEL) && (next->bits & RP_HDR_FREE) && !(offset & 2 && (hdr->bits & RP_HDR_PREV_FREE)))
            target = next;
        else if (hdr->bits & RP_HDR_PREV_FREE)
            target = rp_block_prev(hdr);
        if (!target)
            return;
        nsaved = 0;
        set_ptr((offset & 1) ? (void *)&rp_links(target)->prev : (void *)&rp_links(target)->next, target);
        rp_free(sb->p);
        restore_bytes();
        expect_report(KIND(RP_ERR_CORRUPT_FREE_LIST), target);
        verify_block(sb, sb->usable, "by a refused free");
        return;
    }
    case 11: { /* a write after free into a small free block's header: the allocation that
                * would take it must refuse it */
        rp_heap *h = S.heaps[0].h;
        uint32_t map = h->index.sl_bitmap[0] & (~0u << (offset % RP_SL_COUNT));
        if (!map)
            return;
        rp_block *x = h->index.heads[0][rp_ctz(map)];
        if (x->size < RP_USER_OFFSET + RP_HOOK_SUFFIX + 16)
            return;
        size_t request = x->size - RP_USER_OFFSET - RP_HOOK_SUFFIX;
        nsaved = 0;
        xor_u32(&((uint32_t *)x)[(offset >> 8) & 3], 1u << ((offset >> 10) & 31));
        EXPECT(rp_alloc(h, request, 0) == NULL, "rp_alloc(%zu) handed out free block %p with a broken header",
               request, (void *)x);
        restore_bytes();
        expect_report(KIND(RP_ERR_CORRUPT_FREE_LIST), x);
        return;
    }
    case 6: { /* a region over memory a live block occupies */
        if (!b->p)
            return;
        size_t len = extent(b) + 8192;
        errno = 0;
        EXPECT(rp_heap_add_region(S.heaps[0].h, b->p, len) == -1 && errno == EINVAL,
               "rp_heap_add_region accepted live memory %p", (void *)b->p);
        verify_block(b, b->usable, "by a refused region");
        return;
    }
    default: /* 12..15: free for new kinds */
        return;
    }
}


/* ---- damage the checker must find ---------------------------------------------------------
 *
 * OP_CORRUPT changes one thing an invariant of the core speaks about (a header field, a
 * free-list link, a bitmap bit, a counter, a page descriptor, a page-tier link, an address-map
 * entry, a region's magic, the spare span), checks that rp_heap_check fails naming an
 * invariant and that walking the damaged heap neither crashes nor hangs, then puts the bytes
 * back and checks that the heap is whole again. Each change is one no invariant can miss. */

/* The head of the lowest non-empty free-index class, or NULL. */
static rp_block *some_free_block(rp_heap *h)
{
    if (!h->index.fl_bitmap)
        return NULL;
    unsigned fl = rp_ctz(h->index.fl_bitmap);
    return h->index.heads[fl][rp_ctz(h->index.sl_bitmap[fl])];
}

static rp_region *some_region(rp_heap *h, unsigned sel)
{
    size_t n = 0;
    for (rp_region *r = h->regions; r; r = r->next)
        n++;
    if (!n)
        return NULL;
    rp_region *r = h->regions;
    for (size_t i = sel % n; i > 0; i--)
        r = r->next;
    return r;
}

/* The sel-th head descriptor of region r (heads tile the page area, invariant D1). */
static rp_page *some_head(rp_region *r, unsigned sel)
{
    size_t heads = 0;
    for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1)
        heads++;
    size_t want = sel % heads;
    for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1)
        if (want-- == 0)
            return &r->pages[i];
    return NULL;
}

static int count_blocks(const rp_block_info *info, void *arg)
{
    (void)info;
    ++*(size_t *)arg;
    return 0;
}

static int is_invariant_tag(const char *why)
{
    /* "K1: ...", "R3/H3: ...", "I5: ..." */
    const char *c = why;
    while (*c >= 'A' && *c <= 'Z' && c[1] >= '0' && c[1] <= '9') {
        c += 2;
        while (*c >= '0' && *c <= '9')
            c++;
        if (*c != '/')
            break;
        c++;
    }
    return c != why && *c == ':';
}

/* Applies damage `kind`; returns 0 when the heap has nothing of that kind to damage. */
static int damage(heap_model *m, unsigned kind, unsigned sel, uint8_t x)
{
    rp_heap *h = m->h;
    int k = (int)(m - S.heaps);
    uint32_t flip = (uint32_t)(x | 1) << (8 * (sel & 3));
    switch (kind) {
    case 0: { /* a header field of a live span block, not resealed: K1 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        uint32_t *fields = (uint32_t *)b;
        xor_u32(&fields[(sel >> 2) & 3], flip);
        return 1;
    }
    case 1: { /* a header field of a free block: I3 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        xor_u32(&((uint32_t *)b)[(sel >> 2) & 3], flip);
        return 1;
    }
    case 2: { /* a free-list link: the head's prev, or a next that loops: I4 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        if (x & 1)
            set_ptr(&rp_links(b)->prev, b);
        else
            set_ptr(&rp_links(b)->next, b);
        return 1;
    }
    case 3: /* a bitmap bit: I1 or I2 */
        if (x & 1)
            xor_u32(&h->index.fl_bitmap, 1u << (sel % RP_FL_COUNT));
        else
            xor_u32(&h->index.sl_bitmap[sel % RP_FL_COUNT], 1u << ((sel >> 5) % RP_SL_COUNT));
        return 1;
    case 4: { /* a counter the checker recounts: H1, H2, H3, I5, B4, D4 */
        rp_region *r = some_region(h, sel);
        size_t *counters[] = {&h->blocks_in_use, &h->bytes_in_use, &h->bytes_usable, &h->spans, &h->span_bytes,
                              &h->large_blocks, &h->nregions, &h->region_bytes, &h->index.free_blocks,
                              &h->index.free_bytes, &h->index.class_blocks[(sel >> 4) % RP_FL_COUNT],
                              &h->pages.free_pages, &h->pages.blocks[(sel >> 4) % RP_ORDERS],
                              r ? &r->free_pages : &h->pages.free_pages};
        add_size(counters[sel % (sizeof counters / sizeof counters[0])], (size_t)(x | 1));
        return 1;
    }
    case 5: { /* a head page descriptor: its state, its length or its region: D1..D5, B2 */
        rp_region *r = some_region(h, sel);
        rp_page *d = r ? some_head(r, sel >> 4) : NULL;
        if (!d)
            return 0;
        switch (x % 3) {
        case 0:
            save_bytes(&d->state, 1);
            d->state = (uint8_t)((d->state + 1 + (x >> 2) % 5) % 6);
            break;
        case 1:
            save_bytes(&d->npages, sizeof d->npages);
            d->npages += 1 + (x >> 2);
            break;
        default:
            set_ptr(&d->region, (char *)d->region + 64);
            break;
        }
        return 1;
    }
    case 6: { /* the page tier's lists: a wrong prev link or a nonempty bit: B1, B2 */
        if (x & 1) {
            save_bytes(&h->pages.nonempty, sizeof h->pages.nonempty);
            h->pages.nonempty ^= (uint64_t)1 << (sel % RP_ORDERS);
            return 1;
        }
        if (!h->pages.nonempty)
            return 0;
        rp_page *d = h->pages.lists[rp_ctz(h->pages.nonempty)];
        set_ptr(&d->u.free.prev, d);
        return 1;
    }
    case 7: { /* an address-map entry of a region's page: M1 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        uintptr_t page = (r->base >> RP_PM_PAGE_SHIFT) + (sel >> 4) % r->npages;
        rp_pm_leaf *leaf = rp_pm_root[page >> RP_PM_LEAF_BITS];
        set_ptr(&(*leaf)[page & (RP_PM_LEAF_ENTRIES - 1)], NULL);
        return 1;
    }
    case 8: { /* a region's magic: R2 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        save_bytes(&r->magic, sizeof r->magic);
        r->magic ^= (uint64_t)(x | 1) << 8;
        return 1;
    }
    case 9: { /* the spare span names a live block: H4 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        set_ptr(&h->spare_span, b);
        return 1;
    }
    case 10: { /* a live block marked free or its PREV_FREE bit flipped, resealed: K4, K5, K6 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        save_bytes(b, sizeof *b);
        rp_block_write(h->secret, b, b->prev_size, b->size, b->bits ^ ((x & 1) ? RP_HDR_FREE : RP_HDR_PREV_FREE));
        return 1;
    }
    case 11: { /* a free block's size, resealed: I3, K2, K3, K6 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        uint32_t delta = 16u * (1 + x % 4);
        uint32_t size = (x & 0x80) && b->size >= RP_MIN_BLOCK + delta ? b->size - delta : b->size + delta;
        save_bytes(b, sizeof *b);
        rp_block_write(h->secret, b, b->prev_size, size, b->bits);
        return 1;
    }
    case 12: { /* a live block's boundary tag, resealed: K3 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        save_bytes(b, sizeof *b);
        rp_block_write(h->secret, b, b->prev_size + 16u * (1 + x % 4), b->size, b->bits);
        return 1;
    }
    case 13: { /* a span's sentinel: its check word, or a size resealed: K1, K2 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        rp_region *r = rp_pagemap_lookup(b);
        rp_page *head = rp_span_head_of(r, b);
        rp_block *sentinel = (rp_block *)(rp_page_addr(r, head) + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER);
        save_bytes(sentinel, sizeof *sentinel);
        if (x & 1)
            sentinel->check ^= flip;
        else
            rp_block_write(h->secret, sentinel, sentinel->prev_size, RP_MIN_BLOCK, sentinel->bits);
        return 1;
    }
    case 14: { /* a region's page area moved: R1 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        save_bytes(&r->base, sizeof r->base);
        r->base += (uintptr_t)4096 * r->npages;
        return 1;
    }
    default: { /* a large block's usable size: D2 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1) {
            rp_page *d = &r->pages[i];
            if (d->state == RP_PAGE_LARGE) {
                save_bytes(&d->u.large.usable, sizeof d->u.large.usable);
                d->u.large.usable += (x & 1) ? 4096 : (uint64_t)-4096;
                return 1;
            }
        }
        return 0;
    }
    }
}

static void do_corrupt(uint8_t kind, uint16_t sel, uint8_t x)
{
    heap_model *m = &S.heaps[(sel >> 15) && S.heaps[1].h ? 1 : 0];
    nsaved = 0;
    kind &= 15;
    if (!damage(m, kind, sel, x))
        return;
    char why[256];
    int bad = rp_heap_check(m->h, why, sizeof why);
    size_t blocks = 0;
    int walked = rp_heap_walk(m->h, count_blocks, &blocks); /* must return, whatever it finds */
    restore_bytes();
    TRACE("  damage %u: check says \"%s\", walk %d\n", kind, why, walked);
    EXPECT(bad, "rp_heap_check missed damage of kind %u (sel %u, x %u)", kind, sel, x);
    EXPECT(DEBUG_FLAVOUR || is_invariant_tag(why), "rp_heap_check's message names no invariant: \"%s\"", why);
    EXPECT(walked == 0 || walked == -1, "rp_heap_walk on a damaged heap returned %d", walked);
    if (rp_heap_check(m->h, why, sizeof why) != 0)
        fuzz_fail("the heap is not whole after the damage was undone: %s", why);
}

/* ---- argument edge cases ------------------------------------------------------------------ */

static void count_listed(rp_heap *h, void *arg)
{
    for (int k = 0; k < NHEAPS; k++)
        if (S.heaps[k].h == h)
            ++*(int *)arg;
}

static void do_edges(void)
{
    static const rp_heap_config bad[] = {
        {.large_threshold = 4095}, {.large_threshold = ((size_t)256 << 20) + 1}, {.flags = 2},
        {.region_bytes = (size_t)1 << 40},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        rp_heap *h = rp_heap_create(&bad[i]);
        EXPECT(!h && errno == EINVAL, "rp_heap_create accepted bad configuration %zu", i);
    }
    rp_heap *h = S.heaps[0].h;
    errno = 0;
    EXPECT(rp_heap_add_region(NULL, arena, 65536) == -1 && errno == EINVAL, "add_region(NULL heap)");
    EXPECT(rp_heap_add_region(h, NULL, 65536) == -1 && errno == EINVAL, "add_region(NULL base)");
    EXPECT(rp_heap_add_region(h, arena, 0) == -1 && errno == EINVAL, "add_region(len 0)");
    EXPECT(rp_heap_add_region(h, (void *)(UINTPTR_MAX - 4095), 8192) == -1 && errno == EINVAL, "add_region wraps");
    EXPECT(rp_heap_walk(h, NULL, NULL) == -1 && errno == EINVAL, "rp_heap_walk(NULL callback)");
    EXPECT(rp_heap_stats(h, NULL) == -1 && errno == EINVAL, "rp_heap_stats(NULL)");
    EXPECT(strcmp(rp_heap_name(NULL), "(null)") == 0 && strcmp(rp_heap_name(h), "fuzz") == 0, "rp_heap_name");
    EXPECT(rp_heap_of(NULL) == NULL && rp_usable_size(NULL) == 0, "NULL pointer queries");
    EXPECT(strcmp(rp_flavour(), DEBUG_FLAVOUR ? "debug" : "release") == 0, "rp_flavour");
    EXPECT(strcmp(rp_error_kind_name(RP_ERR_DOUBLE_FREE), "double-free") == 0 &&
               strcmp(rp_error_kind_name((rp_error_kind)0), "unknown-error") == 0 &&
               strcmp(rp_error_kind_name(RP_ERR_KIND_COUNT), "unknown-error") == 0,
           "rp_error_kind_name");
    rp_heap_destroy(NULL);
    rp_heap_destroy(rp_default_heap()); /* ignored: the default heap stays */
    EXPECT(rp_heap_check(NULL, NULL, 0) == 0, "the default heap fails its check");
    /* Every heap is on the global list (fork handling walks it). */
    int listed = 0;
    rp_heaps_foreach(count_listed, &listed);
    EXPECT(listed == 1 + (S.heaps[1].h != NULL), "rp_heaps_foreach lists %d of this input's heaps", listed);
    /* The OS refusing a heap's control block (unless the input armed a failure itself). */
    if (!injection_armed(rp_os_calls())) {
        rp_os_fail_at(1);
        errno = 0;
        rp_heap *refused = rp_heap_create(NULL);
        rp_os_fail_at(0);
        EXPECT(!refused && errno == ENOMEM, "rp_heap_create without memory from the OS");
    }
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(NULL, NULL, &old_arg);
    EXPECT(old == capture_report, "the report function was replaced");
    rp_set_report_fn(capture_report, old_arg, NULL);
}

/* ---- driver ------------------------------------------------------------------------------ */

static void run(fuzz_input *in)
{
    uint8_t shape0 = fuzz_u8(in), shape1 = fuzz_u8(in);
    heap_model *m = &S.heaps[0];
    m->cfg.name = "fuzz";
    m->cfg.max_bytes = (size_t)((shape0 & 15) + 1) << 19;
    m->cfg.region_bytes = (size_t)16 << (10 + ((shape0 >> 4) & 7));
    m->cfg.flags = (shape0 & 0x80) ? RP_HEAP_NO_OS : 0;
    m->cfg.large_threshold = (size_t)4096 << (shape1 & 7);
    m->cfg.retain_bytes = (size_t)32 << (10 + ((shape1 >> 3) & 7));
    m->h = rp_heap_create(&m->cfg);
    EXPECT(m->h, "rp_heap_create failed (errno %d)", errno);
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    m->os_bytes_start = st.os_bytes;
    check_all();

    for (S.op = 0; S.op < MAX_OPS && fuzz_more(in); S.op++) {
        /* Low four bits: opcodes keep their meaning as operations are added (13..15 are
         * free for new ones and do nothing yet), so corpora stay meaningful. */
        uint8_t op = fuzz_u8(in) & 15;
        if (op >= OP_COUNT)
            continue;
        S.op_name = op_names[op];
        TRACE("op %lu %s\n", S.op, S.op_name);
        switch (op) {
        case OP_ALLOC: {
            int s = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            uint8_t a = fuzz_u8(in);
            do_alloc(s, a >> 7, size, decode_align(a));
            break;
        }
        case OP_CALLOC: {
            int s = fuzz_u8(in);
            uint8_t n = fuzz_u8(in);
            size_t count = n < 0xf0 ? n : special_counts[(n - 0xf0) % (sizeof special_counts / sizeof special_counts[0])];
            size_t size = decode_size(fuzz_u16(in));
            do_calloc(s, count, size, decode_align(fuzz_u8(in)));
            break;
        }
        case OP_REALLOC: {
            int s = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            do_realloc(s, size, fuzz_u8(in));
            break;
        }
        case OP_FREE:
            free_slot(fuzz_u8(in));
            break;
        case OP_ADD_REGION: {
            uint16_t off = fuzz_u16(in), len = fuzz_u16(in);
            uint8_t mis = fuzz_u8(in);
            if (m->nregions < NREGIONS)
                do_add_region(off, len, mis);
            break;
        }
        case OP_CHECK:
            do_check();
            break;
        case OP_TRIM:
            do_trim(fuzz_u8(in));
            break;
        case OP_OS_FAIL: {
            uint8_t n = fuzz_u8(in);
            rp_os_fail_at((n & 15) + 1);
            S.os_fail_target = rp_os_calls() + (n & 15) + 1;
            break;
        }
        case OP_MISUSE: {
            uint8_t kind = fuzz_u8(in);
            int s = fuzz_u8(in);
            do_misuse(kind, s, fuzz_u16(in));
            break;
        }
        case OP_ALLOC_RUN: {
            int s = fuzz_u8(in);
            int count = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            uint8_t a = fuzz_u8(in);
            for (int i = 0; i < count; i++)
                do_alloc((s + i) % NSLOTS, a >> 7, size, decode_align(a));
            break;
        }
        case OP_FREE_RUN: {
            int s = fuzz_u8(in);
            int count = fuzz_u8(in);
            int stride = (fuzz_u8(in) % 7) + 1;
            for (int i = 0; i < count; i++)
                free_slot((s + i * stride) % NSLOTS);
            break;
        }
        case OP_CORRUPT: {
            uint8_t kind = fuzz_u8(in);
            uint16_t sel = fuzz_u16(in);
            do_corrupt(kind, sel, fuzz_u8(in));
            break;
        }
        case OP_EDGES:
            do_edges();
            break;
        }
        check_all();
    }
    S.op_name = "teardown";
    rp_os_fail_at(0);
    S.os_fail_target = 0;
    do_check();
    for (int s = 0; s < NSLOTS; s++)
        free_slot(s);
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *hm = &S.heaps[k];
        if (!hm->h)
            continue;
        check_heap(hm);
        rp_heap_stats(hm->h, &st);
        EXPECT(DEBUG_FLAVOUR || (st.blocks_in_use == 0 && st.bytes_in_use == 0 && st.bytes_usable == 0),
               "%s: %zu blocks / %zu bytes still in use after freeing everything", rp_heap_name(hm->h),
               st.blocks_in_use, st.bytes_in_use);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Debug flavour: report and continue, so misuse is checked in-process. Set before the
     * first call into rampart (options are read once). An explicit setting wins. */
    setenv("RAMPART_OPTIONS", "on_error=continue:report_path=/dev/null", 0);
    tracing = getenv("HEAP_OPS_TRACE") != NULL;
    rp_set_report_fn(capture_report, NULL, NULL);
    /* OP_EDGES looks at the default heap; create it now, outside the per-input leak check. */
    rp_default_heap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialised;
    if (!initialised) {
        /* libFuzzer calls LLVMFuzzerInitialize; other drivers may not. */
        LLVMFuzzerInitialize(NULL, NULL);
        initialised = 1;
    }
    memset(&S, 0, sizeof S);
    reported.count = 0;
    size_t mapped_before = rp_os_mapped_bytes() - rp_pagemap_bytes();
    fuzz_input in = fuzz_input_of(data, size);
    run(&in);
    for (int k = 0; k < NHEAPS; k++)
        rp_heap_destroy(S.heaps[k].h);
    /* Every byte the heaps mapped is returned (address-map leaves are kept by design; the
     * debug runtime's stack depot lives for the process). */
    size_t mapped_after = rp_os_mapped_bytes() - rp_pagemap_bytes();
    EXPECT(DEBUG_FLAVOUR || mapped_after == mapped_before, "destroying the heaps leaked %zd mapped bytes",
           (ssize_t)(mapped_after - mapped_before));
    return 0;
}
