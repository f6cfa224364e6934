/* The debug runtime in this process, with default options: layout and rp_usable_size, fill
 * patterns, quarantine, the walk's view (quarantined state, stacks), report history for report
 * functions, the stack depot API, realloc/calloc, caller memory, the quarantine's FIFO order,
 * and the checker: every debug invariant (P1..P7 in debug/block_meta.h, F1 in debug/poison.h,
 * Q1..Q4 in debug/quarantine.h, S1..S3 in debug/stack_depot.h) is broken on purpose and must
 * be named by rp_heap_check, then repaired. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "debug/block_meta.h"
#include "debug/debug_heap.h"
#include "debug/depot_record.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "src/heap.h"
#include "debug_testing.h"
#include "stack_names.h"
#include "testing.h"

/* Memory the program may not touch under ASan (metadata, freed blocks): read and written
 * only through these. */
TEST_NO_ASAN __attribute__((noinline)) static unsigned char peek(const void *p, long at)
{
    return ((const unsigned char *)p)[at];
}
TEST_NO_ASAN __attribute__((noinline)) static void poke(void *p, long at, unsigned char v)
{
    ((unsigned char *)p)[at] = v;
}
/* Byte loops, not memcpy (which ASan intercepts and checks). */
TEST_NO_ASAN __attribute__((noinline)) static void meta_read(const void *user, rp_debug_meta *m)
{
    const volatile unsigned char *from = (const unsigned char *)rp_meta_of(user);
    unsigned char *to = (unsigned char *)m;
    for (size_t i = 0; i < sizeof *m; i++)
        to[i] = from[i];
}
TEST_NO_ASAN __attribute__((noinline)) static void meta_write(void *user, const rp_debug_meta *m)
{
    volatile unsigned char *to = (unsigned char *)rp_meta_of(user);
    const unsigned char *from = (const unsigned char *)m;
    for (size_t i = 0; i < sizeof *m; i++)
        to[i] = from[i];
}

static int all_bytes(const void *p, long n, unsigned char v)
{
    for (long i = 0; i < n; i++)
        if (peek(p, i) != v)
            return 0;
    return 1;
}



__attribute__((noinline)) void *runtime_alloc_site(rp_heap *h, size_t n)
{
    void *p = rp_alloc(h, n, 0);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void runtime_free_site(void *p)
{
    rp_free(p);
    KEEP_FRAME();
}

static void check_layout_and_fills(void)
{
    CHECK(RP_USER_OFFSET == 48 && RP_HOOK_PREFIX == 32 && RP_HOOK_SUFFIX == 8);
    CHECK(strcmp(rp_flavour(), "debug") == 0);
    rp_heap *h = rp_heap_create(NULL);
    size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 100, 4095, 4096, 65535, 65536, 200000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *p = rp_alloc(h, sizes[i], 0);
        REQUIRE(p);
        CHECK(((uintptr_t)p & 15) == 0);
        CHECKF(rp_usable_size(p) == sizes[i], "usable %zu for %zu", rp_usable_size(p), sizes[i]);
        CHECKF(all_bytes(p, (long)sizes[i], 0xbe), "size %zu not filled with alloc_fill", sizes[i]);
    }
    size_t aligns[] = {32, 64, 4096, 65536, 1 << 20};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        char *p = rp_alloc(h, 100, aligns[i]);
        REQUIRE(p);
        CHECKF(((uintptr_t)p & (aligns[i] - 1)) == 0, "align %zu", aligns[i]);
        CHECK(rp_usable_size(p) == 100);
    }
    CHECK_HEAP(h);
    /* calloc zeroes what alloc_fill wrote. */
    char *z = rp_calloc(h, 10, 10, 0);
    CHECK(z && all_bytes(z, 100, 0));
    /* Freed (quarantined) memory holds free_fill over the whole usable area. */
    char *p = rp_alloc(h, 50, 0);
    size_t usable_core = (size_t)rp_block_usable(rp_block_of_user(p));
    rp_free(p);
    CHECK(all_bytes(p, (long)usable_core, 0x6b));
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* Pages of [lo, hi) (widened to whole pages) that are resident. */
static size_t resident_between(const void *lo, const void *hi)
{
    uintptr_t a = (uintptr_t)lo & ~(uintptr_t)4095, b = ((uintptr_t)hi + 4095) & ~(uintptr_t)4095;
    static unsigned char v[1 << 16];
    REQUIRE((b - a) / 4096 <= sizeof v && mincore((void *)a, b - a, v) == 0);
    size_t k = 0;
    for (size_t i = 0; i < (b - a) / 4096; i++)
        k += v[i] & 1;
    return k;
}

/* alloc_fill_max (1 MiB by default): a fresh block's first 1 MiB holds alloc_fill, the rest
 * of fresh memory is not written (a 4 GiB malloc wrote 4 GiB: 11.6 s); realloc fills the
 * grown part up to the same limit; a large calloc writes only what the fill wrote. */
static void check_fill_limit(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    size_t mib = (size_t)1 << 20;
    unsigned char *p = rp_alloc(h, 64 * mib, 0);
    REQUIRE(p);
    CHECKF(resident_between(p + mib + 4096, p + 64 * mib) == 0, "%zu pages past the fill are resident",
           resident_between(p + mib + 4096, p + 64 * mib));
    CHECK(all_bytes(p, (long)mib, 0xbe));
    CHECK(all_bytes(p + mib, (long)(3 * mib), 0)); /* fresh memory, as the OS gave it */
    /* Growing a small block: the new bytes up to 1 MiB hold the pattern. */
    unsigned char *q = rp_alloc(h, 1000, 0);
    REQUIRE(q);
    memset(q, 'q', 1000);
    q = rp_realloc(h, q, 2 * mib);
    REQUIRE(q);
    CHECK(all_bytes(q, 1000, 'q') && all_bytes(q + 1000, (long)(mib - 1000), 0xbe));
    /* calloc of fresh pages: zeros, and only the filled part was ever written. */
    unsigned char *z = rp_calloc(h, 1, 64 * mib, 0);
    REQUIRE(z);
    CHECK(resident_between(z + mib + 4096, z + 64 * mib) == 0);
    CHECK(all_bytes(z, (long)(2 * mib), 0) && z[64 * mib - 1] == 0);
    rp_free(p);
    rp_free(q);
    rp_free(z);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void check_quarantine(void)
{
    rp_heap *h = rp_heap_create(NULL);
    rp_debug_stats ds;
    char *p = rp_alloc(h, 64, 0);
    rp_free(p);
    REQUIRE(rp_debug_get_stats(h, &ds) == 0);
    CHECK(ds.quarantined_blocks == 1 && ds.quarantined_bytes >= 64);
    /* Not reused while quarantined. */
    char *q = rp_alloc(h, 64, 0);
    CHECK(q != p);
    /* FIFO under a 4 MiB budget: 8 MiB of frees later, the budget holds and p is gone. */
    for (int i = 0; i < 128; i++)
        rp_free(rp_alloc(h, 64 << 10, 0));
    REQUIRE(rp_debug_get_stats(h, &ds) == 0);
    CHECKF(ds.quarantined_bytes <= ((size_t)4 << 20), "quarantine holds %zu bytes", ds.quarantined_bytes);
    CHECK(ds.quarantined_blocks < 128);
    CHECK_HEAP(h);
    /* Flushing releases everything; the memory is reused afterwards. */
    CHECK(rp_quarantine_flush(h) == ds.quarantined_blocks);
    REQUIRE(rp_debug_get_stats(h, &ds) == 0);
    CHECK(ds.quarantined_blocks == 0 && ds.quarantined_bytes == 0);
    rp_free(q);
    rp_quarantine_flush(h);
    struct rp_heap_stats st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0);
    CHECK_HEAP(h);
    /* Destroying a heap with a full quarantine is fine. */
    for (int i = 0; i < 100; i++)
        rp_free(rp_alloc(h, 1000, 0));
    rp_heap_destroy(h);
}

/* Quarantined blocks of a heap, by address (sorted). */
typedef struct quarantined_set {
    uintptr_t addr[1024];
    size_t n;
} quarantined_set;

static int collect_quarantined(const rp_block_info *b, void *arg)
{
    quarantined_set *q = arg;
    if (b->state == RP_BLOCK_QUARANTINED && q->n < sizeof q->addr / sizeof q->addr[0])
        q->addr[q->n++] = (uintptr_t)b->addr;
    return 0;
}

static int address_order(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

static int quarantined(const quarantined_set *q, const void *p)
{
    uintptr_t key = (uintptr_t)p;
    return bsearch(&key, q->addr, q->n, sizeof q->addr[0], address_order) != NULL;
}

/* Blocks leave the quarantine oldest first: after every free, the blocks still held are
 * exactly the most recently freed ones (a suffix of the order of frees), so the oldest is the
 * first to become reusable while the later ones are still held. */
static void check_quarantine_fifo(void)
{
    rp_heap *h = rp_heap_create(NULL);
    enum { N = 300 };
    static char *blocks[N];
    for (int i = 0; i < N; i++) /* 20..38 KB: 300 of them are more than the 4 MiB budget */
        REQUIRE((blocks[i] = rp_alloc(h, 20000 + (size_t)(i % 7) * 3000, 0)) != NULL);
    static quarantined_set q;
    size_t oldest_held = 0, evictions = 0;
    for (int i = 0; i < N; i++) {
        rp_free(blocks[i]);
        q.n = 0;
        REQUIRE(rp_heap_walk(h, collect_quarantined, &q) == 0);
        qsort(q.addr, q.n, sizeof q.addr[0], address_order);
        REQUIRE(q.n >= 1 && q.n <= (size_t)i + 1);
        size_t first = (size_t)i + 1 - q.n; /* a FIFO holds blocks[first .. i] */
        CHECKF(first >= oldest_held, "after free %d: block %zu is back in quarantine", i, oldest_held);
        int suffix = 1;
        for (size_t k = first; k <= (size_t)i; k++)
            suffix &= quarantined(&q, blocks[k]);
        CHECKF(suffix, "after free %d: the %zu blocks held are not the %zu freed last (not FIFO)", i, q.n, q.n);
        evictions += first - oldest_held;
        oldest_held = first;
    }
    CHECKF(evictions > 0 && oldest_held > 0, "no block ever left the quarantine (%zu)", evictions);
    /* The first block freed is free memory again (reusable), the last is still held. */
    CHECK(!quarantined(&q, blocks[0]) && quarantined(&q, blocks[N - 1]));
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* The trip count of loops whose iterations must make their calls from one call site: an
 * optimising compiler unrolls a loop of two known iterations into two calls (gcc -O2 does),
 * each with its own return address, hence its own stack. */
static volatile int calls_from_one_site = 2;

typedef struct walk_seen {
    void *live, *freed;
    rp_block_info live_info, freed_info;
} walk_seen;

static int remember(const rp_block_info *b, void *arg)
{
    walk_seen *w = arg;
    if (b->addr == w->live)
        w->live_info = *b;
    if (b->addr == w->freed)
        w->freed_info = *b;
    return 0;
}

__attribute__((noinline)) void walk_scenario(rp_heap *h, walk_seen *w)
{
    w->live = runtime_alloc_site(h, 33);
    w->freed = runtime_alloc_site(h, 44);
    runtime_free_site(w->freed);
    KEEP_FRAME();
}

static void check_walk_view(void)
{
    rp_heap *h = rp_heap_create(NULL);
    walk_seen w;
    memset(&w, 0, sizeof w);
    walk_scenario(h, &w);
    CHECK(rp_heap_walk(h, remember, &w) == 0);
    CHECK(w.live_info.state == RP_BLOCK_USED && w.live_info.requested == 33);
    CHECK(w.live_info.alloc_stack != 0 && w.live_info.free_stack == 0);
    CHECK(strcmp(top_frame(w.live_info.alloc_stack, 0), "runtime_alloc_site") == 0);
    CHECK(strcmp(top_frame(w.live_info.alloc_stack, 1), "walk_scenario") == 0);
    CHECK(w.freed_info.state == RP_BLOCK_QUARANTINED && w.freed_info.requested == 44);
    CHECK(strcmp(top_frame(w.freed_info.free_stack, 0), "runtime_free_site") == 0);
    CHECK(strcmp(top_frame(w.freed_info.free_stack, 1), "walk_scenario") == 0);
    /* Allocations from one call site share one stack in the depot. */
    void *again[2];
    for (int i = 0; i < calls_from_one_site; i++) /* not unrolled: one call instruction */
        again[i] = runtime_alloc_site(h, 8);
    w.live = again[0];
    w.freed = again[1];
    CHECK(rp_heap_walk(h, remember, &w) == 0);
    CHECK(w.live_info.alloc_stack == w.freed_info.alloc_stack);
    rp_heap_destroy(h);
}

/* ---- report functions and history ---- */

typedef struct seen_report {
    int calls;
    rp_error_kind kind;
    const void *address;
    long offset;
    int history_ok;
    rp_report_history history;
} seen_report;

static void record_report(const rp_report *r, void *arg)
{
    seen_report *s = arg;
    s->calls++;
    s->kind = r->kind;
    s->address = r->address;
    s->offset = r->offset;
    s->history_ok = rp_report_get_history(r, &s->history) == 0;
}

__attribute__((noinline)) void double_free_scenario(rp_heap *h)
{
    void *p = runtime_alloc_site(h, 24);
    runtime_free_site(p);
    runtime_free_site(p);
    KEEP_FRAME();
}

static void check_report_history(void)
{
    seen_report s;
    memset(&s, 0, sizeof s);
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(record_report, &s, &old_arg);
    rp_heap *h = rp_heap_create(NULL);
    double_free_scenario(h);
    CHECK(s.calls == 1 && s.kind == RP_ERR_DOUBLE_FREE && s.history_ok);
    CHECK(strcmp(top_frame(s.history.alloc_stack, 0), "runtime_alloc_site") == 0);
    CHECK(strcmp(top_frame(s.history.free_stack, 0), "runtime_free_site") == 0);
    CHECK(strcmp(top_frame(s.history.detect_stack, 0), "runtime_free_site") == 0);
    CHECK(strcmp(top_frame(s.history.detect_stack, 1), "double_free_scenario") == 0);
    CHECK(s.history.requested == 24);
    rp_report stale = {0};
    rp_report_history hist;
    CHECK(rp_report_get_history(&stale, &hist) == -1);
    char text[4096];
    size_t n = rp_stack_format(s.history.alloc_stack, text, sizeof text);
    CHECK(n > 0 && strstr(text, "    #0 0x") == text && strstr(text, "in runtime_alloc_site+0x") &&
          strstr(text, "#1 ") && strstr(text, "double_free_scenario"));
    CHECK(rp_stack_format(0, text, sizeof text) > 0 && strstr(text, "<no stack recorded>"));

    /* Overflow in caller memory (where ASan cannot help): the free is abandoned, the block
     * stays live, the report names the first bad byte. */
    static char region[1 << 20] __attribute__((aligned(64)));
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *own = rp_heap_create(&cfg);
    REQUIRE(own && rp_heap_add_region(own, region, sizeof region) == 0);
    char *p = rp_alloc(own, 30, 0);
    REQUIRE(p);
    poke(p, 30, 'x');
    memset(&s, 0, sizeof s);
    rp_free(p);
    CHECK(s.calls == 1 && s.kind == RP_ERR_HEAP_BUFFER_OVERFLOW && s.address == p + 30 && s.offset == 30);
    CHECK(rp_usable_size(p) == 30); /* still live */
    /* Left broken: the checker sees it too. */
    char why[256];
    CHECK(rp_heap_check(own, why, sizeof why) != 0 && strncmp(why, "P5:", 3) == 0);
    rp_heap_destroy(own);
    rp_heap_destroy(h);
    rp_set_report_fn(old, old_arg, NULL);
}

/* ---- realloc ---- */

static int find_quarantined(const rp_block_info *b, void *arg)
{
    return b->state == RP_BLOCK_QUARANTINED && b->addr == arg;
}

/* 1 when p is a quarantined block of h. */
static int quarantined_block(rp_heap *h, void *p) { return rp_heap_walk(h, find_quarantined, p) == 1; }

static void check_realloc(void)
{
    rp_heap *h = rp_heap_create(NULL);
    char *p = rp_alloc(h, 40, 0);
    memset(p, 'a', 40);
    char *q = rp_realloc(h, p, 20); /* moves (every realloc does), the old block is quarantined */
    CHECK(q != p && rp_usable_size(q) == 20 && all_bytes(q, 20, 'a') && quarantined_block(h, p));
    char *q0 = q;
    q = rp_realloc(h, q, 30); /* moves again; the new tail holds the allocation pattern */
    CHECK(q != q0 && rp_usable_size(q) == 30 && all_bytes(q, 20, 'a') && all_bytes(q + 20, 10, 0xbe) &&
          quarantined_block(h, q0));
    CHECK_HEAP(h);
    char *r = rp_realloc(h, q, 100000); /* moves to the page tier */
    CHECK(r && r != q && rp_usable_size(r) == 100000 && all_bytes(r, 20, 'a') && all_bytes(r + 30, 100, 0xbe));
    rp_heap *other = rp_heap_create(NULL);
    char *s = rp_realloc(other, r, 64); /* into another heap */
    CHECK(s && rp_heap_of(s) == other && rp_usable_size(s) == 64 && all_bytes(s, 20, 'a'));
    CHECK_HEAP(h);
    CHECK_HEAP(other);
    rp_heap_destroy(other);
    rp_heap_destroy(h);
}

/* ---- the stack depot ---- */

__attribute__((noinline)) uint32_t capture_leaf(unsigned skip)
{
    uint32_t id = rp_stack_capture(skip);
    KEEP_FRAME();
    return id;
}
__attribute__((noinline)) uint32_t capture_middle(unsigned skip)
{
    uint32_t id = capture_leaf(skip);
    KEEP_FRAME();
    return id;
}
__attribute__((noinline)) uint32_t capture_top(unsigned skip)
{
    uint32_t id = capture_middle(skip);
    KEEP_FRAME();
    return id;
}

static int count_stack(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    size_t *c = arg;
    (*c)++;
    return (id == 0 || n == 0 || frames == NULL) ? 1 : 0;
}

static int stop_at_two(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    (void)frames, (void)n, (void)arg;
    return id == 2 ? 42 : 0;
}

static void check_depot(void)
{
    uint32_t twice[2];
    for (int i = 0; i < calls_from_one_site; i++) /* not unrolled: one call instruction */
        twice[i] = capture_top(0);
    uint32_t a = twice[0];
    CHECK(a != 0 && twice[1] == a); /* the same stack is stored once */
    CHECK(strcmp(top_frame(a, 0), "capture_leaf") == 0);
    CHECK(strcmp(top_frame(a, 1), "capture_middle") == 0);
    CHECK(strcmp(top_frame(a, 2), "capture_top") == 0);
    uint32_t b = capture_top(1);
    CHECK(b != a && strcmp(top_frame(b, 0), "capture_middle") == 0);
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    CHECK(rp_depot_get(capture_at_depth(40), frames, RP_STACK_MAX_FRAMES) == 16); /* backtrace_depth */

    uintptr_t mine[3] = {0x1000, 0x2000, 0x3000};
    size_t before = rp_depot_count();
    uint32_t id = rp_depot_put(mine, 3);
    CHECK(id != 0 && rp_depot_put(mine, 3) == id && rp_depot_count() == before + 1);
    CHECK(rp_depot_put(mine, 2) != id);
    CHECK(rp_depot_get(id, frames, 2) == 2 && frames[0] == 0x1000 && frames[1] == 0x2000);
    CHECK(rp_depot_get(id, frames, 8) == 3 && frames[2] == 0x3000);
    CHECK(rp_depot_put(mine, 0) == 0 && rp_depot_put(NULL, 3) == 0);
    uintptr_t too_many[RP_STACK_MAX_FRAMES + 1] = {1};
    CHECK(rp_depot_put(too_many, RP_STACK_MAX_FRAMES + 1) == 0);
    CHECK(rp_depot_get(0, frames, 8) == 0 && rp_depot_get((uint32_t)rp_depot_count() + 1, frames, 8) == 0);
    size_t seen = 0;
    CHECK(rp_depot_foreach(count_stack, &seen) == 0 && seen == rp_depot_count());
    CHECK(rp_depot_foreach(stop_at_two, NULL) == 42);
    char why[256];
    CHECK(rp_depot_check(why, sizeof why) == 0);
    rp_debug_stats ds;
    CHECK(rp_debug_get_stats(NULL, &ds) == 0 && ds.stacks == rp_depot_count() && ds.depot_bytes > 0);
    CHECK(rp_debug_get_stats(NULL, NULL) == -1 && errno == EINVAL);
}

/* ---- the checker names every debug invariant ---- */

static int expect_violation(rp_heap *h, const char *prefix)
{
    char why[256];
    int bad = rp_heap_check(h, why, sizeof why);
    CHECKF(bad && strncmp(why, prefix, strlen(prefix)) == 0, "expected %s, got %d '%s'", prefix, bad,
           bad ? why : "");
    return bad;
}

/* A block a walk looks for: its address and the core's size (usable size for used blocks). */
typedef struct found_block {
    void *addr;
    size_t size;
} found_block;

static int first_free_span_block(const rp_block_info *b, void *arg)
{
    found_block *f = arg;
    if (b->state == RP_BLOCK_FREE && b->tier == RP_TIER_SPAN && b->size > 256) {
        f->addr = b->addr;
        f->size = b->size;
        return 1;
    }
    return 0;
}

/* Fills in the size of the block at f->addr (for a used block, what the quarantine charges). */
static int block_at(const rp_block_info *b, void *arg)
{
    found_block *f = arg;
    if (b->addr != f->addr)
        return 0;
    f->size = b->size;
    return 1;
}

TEST_NO_ASAN __attribute__((noinline)) static void fill(void *p, size_t n, unsigned char v)
{
    volatile unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = v;
}

/* Puts the live block p of h into its quarantine the way a free does (state, free pattern,
 * ring entry) but without trimming the quarantine to its budget afterwards. */
static void quarantine_without_trim(rp_heap *h, void *p)
{
    found_block f = {p, 0};
    rp_heap_walk(h, block_at, &f);
    REQUIRE(f.size != 0);
    rp_debug_meta m;
    meta_read(p, &m);
    m.state = RP_META_QUARANTINED;
    m.seal = rp_meta_seal(rp_debug_secret(h), p, &m);
    meta_write(p, &m);
    fill(p, f.size, 0x6b);
    REQUIRE(rp_quarantine_push(&rp_debug_of(h)->quarantine, p, f.size) == 0);
}

/* rp_heap_check verifies the depot only when it grew since its last clean check: stores one
 * new stack, so the next check looks at the damage. */
static void grow_depot(void)
{
    static uintptr_t next = 0x6b6b0000;
    uintptr_t frame = next++;
    REQUIRE(rp_depot_put(&frame, 1) != 0);
}

/* Two one-frame stacks on the same hash chain (stored until two collide). */
static void same_bucket_pair(rp_depot_record **a, rp_depot_record **b)
{
    static uint32_t owner[RP_DEPOT_BUCKETS];
    *a = *b = NULL;
    for (uintptr_t k = 0; k < 100000 && !*a; k++) {
        uintptr_t frame = 0x5a5a0000 + k;
        uint32_t id = rp_depot_put(&frame, 1);
        REQUIRE(id != 0);
        rp_depot_record *r = rp_depot_record_of(id);
        size_t bucket = r->hash & (RP_DEPOT_BUCKETS - 1);
        if (owner[bucket]) {
            *a = rp_depot_record_of(owner[bucket]);
            *b = r;
        }
        owner[bucket] = id;
    }
    REQUIRE(*a && *b && (*a)->n == 1 && (*b)->n == 1);
}

static void check_depot_invariants(rp_heap *h)
{
    uint32_t id = (uint32_t)rp_depot_count();
    rp_depot_record *r = rp_depot_record_of(id);
    REQUIRE(r && r->id == id);
    /* S1: an id naming a record that says it is another. */
    r->id = id + 1;
    grow_depot();
    expect_violation(h, "S1:");
    r->id = id;
    /* S2: a frame changed under its hash. */
    r->frames[0] ^= 0x10;
    grow_depot();
    expect_violation(h, "S2:");
    r->frames[0] ^= 0x10;
    /* S3: two records with the same frames (on one chain, so S2 still holds). */
    rp_depot_record *a, *b;
    same_bucket_pair(&a, &b);
    uint32_t saved_hash = b->hash;
    uintptr_t saved_frame = b->frames[0];
    b->frames[0] = a->frames[0];
    b->hash = a->hash;
    grow_depot();
    expect_violation(h, "S3:");
    b->frames[0] = saved_frame;
    b->hash = saved_hash;
    grow_depot();
    CHECK_HEAP(h);
}

static void check_checker(void)
{
    rp_heap *h = rp_heap_create(NULL);
    void *keep[64];
    for (int i = 0; i < 64; i++)
        keep[i] = rp_alloc(h, (size_t)(i * 37) % 500, 0);
    for (int i = 0; i < 64; i += 2)
        rp_free(keep[i]);
    CHECK_HEAP(h);
    char *live = keep[3];
    char *freed = keep[4];
    size_t live_req = rp_usable_size(live);
    uint64_t secret = rp_debug_secret(h);
    rp_debug_meta m, saved;

    /* P5: a trailer byte, the first and the last (the trailer is checked a word at a time,
     * the last word ending at the block's end). */
    found_block lf = {live, 0};
    rp_heap_walk(h, block_at, &lf);
    REQUIRE(lf.size > live_req && (lf.size - live_req) % 8 != 0);
    long trailer_bytes[] = {(long)live_req, (long)lf.size - 1};
    unsigned char t;
    for (int k = 0; k < 2; k++) {
        t = peek(live, trailer_bytes[k]);
        poke(live, trailer_bytes[k], (unsigned char)~t);
        expect_violation(h, "P5:");
        poke(live, trailer_bytes[k], t);
    }
    CHECK_HEAP(h);
    /* P4: the canary's last byte. */
    t = peek(live, -1);
    poke(live, -1, (unsigned char)~t);
    expect_violation(h, "P4:");
    poke(live, -1, t);
    /* P1: a field changed without the seal. */
    meta_read(live, &saved);
    m = saved;
    m.requested += 1;
    meta_write(live, &m);
    expect_violation(h, "P1:");
    /* P2, P3, P6: resealed metadata with impossible values. */
    m = saved;
    m.state = 0x1234;
    m.seal = rp_meta_seal(secret, live, &m);
    meta_write(live, &m);
    expect_violation(h, "P2:");
    m = saved;
    m.requested = 1 << 20;
    m.seal = rp_meta_seal(secret, live, &m);
    meta_write(live, &m);
    expect_violation(h, "P3:");
    m = saved;
    m.alloc_stack = (uint32_t)rp_depot_count() + 1000;
    m.seal = rp_meta_seal(secret, live, &m);
    meta_write(live, &m);
    expect_violation(h, "P6:");
    meta_write(live, &saved);
    CHECK_HEAP(h);
    /* P7: a quarantined block written after free. */
    t = peek(freed, 0);
    poke(freed, 0, 0);
    expect_violation(h, "P7:");
    poke(freed, 0, t);
    CHECK_HEAP(h);
    /* The same deep inside long ranges, which are compared in bulk before any byte-by-byte
     * search: the last trailer byte of a page-tier block (up to a page of trailer), the
     * middle of a long quarantined block. */
    char *large = rp_alloc(h, 70000, 0);
    found_block lb = {large, 0};
    rp_heap_walk(h, block_at, &lb);
    REQUIRE(lb.size > 70000 + 64);
    t = peek(large, (long)lb.size - 1);
    poke(large, (long)lb.size - 1, (unsigned char)~t);
    expect_violation(h, "P5:");
    poke(large, (long)lb.size - 1, t);
    char *long_freed = rp_alloc(h, 3000, 0);
    rp_free(long_freed);
    t = peek(long_freed, 1700);
    poke(long_freed, 1700, (unsigned char)(t ^ 1));
    expect_violation(h, "P7:");
    poke(long_freed, 1700, t);
    CHECK_HEAP(h);
    /* F1: free span memory written. */
    found_block f = {0};
    rp_heap_walk(h, first_free_span_block, &f);
    REQUIRE(f.addr);
    long at = (long)f.size - 1;
    t = peek(f.addr, at);
    poke(f.addr, at, 0);
    expect_violation(h, "F1:");
    poke(f.addr, at, t);
    CHECK_HEAP(h);
    /* Q1..Q4: the quarantine's own bookkeeping. */
    rp_debug_heap *d = rp_debug_of(h);
    rp_quarantine *q = &d->quarantine;
    REQUIRE(q->count >= 2);
    q->bytes += 16;
    expect_violation(h, "Q1:");
    q->bytes -= 16;
    rp_quarantine_entry *first = &q->ring[q->head];
    rp_quarantine_entry *second = &q->ring[(q->head + 1) & (q->cap - 1)];
    void *was = first->user;
    first->user = live;
    expect_violation(h, "Q3:"); /* a live block listed as quarantined */
    first->user = was;
    rp_quarantine_entry saved_second = *second;
    *second = *first;
    q->bytes = q->bytes - saved_second.bytes + first->bytes;
    expect_violation(h, "Q3:"); /* listed twice */
    q->bytes = q->bytes - first->bytes + saved_second.bytes;
    *second = saved_second;
    q->count--; /* the newest entry forgotten */
    size_t newest = (q->head + q->count) & (q->cap - 1);
    q->bytes -= q->ring[newest].bytes;
    expect_violation(h, "Q4:");
    q->bytes += q->ring[newest].bytes;
    q->count++;
    CHECK_HEAP(h);
    /* Q2: a block bigger than the whole budget held (a free that skipped the trim). */
    size_t held = q->count;
    quarantine_without_trim(h, rp_alloc(h, (size_t)5 << 20, 0));
    expect_violation(h, "Q2:");
    CHECK(rp_quarantine_flush(h) == held + 1);
    CHECK_HEAP(h);
    check_depot_invariants(h);
    rp_heap_destroy(h);
}

int main(void)
{
    check_layout_and_fills();
    check_fill_limit();
    check_quarantine();
    check_quarantine_fifo();
    check_walk_view();
    check_report_history();
    check_realloc();
    check_depot();
    check_checker();
    TEST_MAIN_END();
}
