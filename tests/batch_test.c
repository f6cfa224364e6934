/* The core entry points the malloc drop-in added: rp_alloc_batch / rp_free_batch (many blocks
 * under one lock) and the tier routing of aligned requests (rp_wants_pages). */
#include <errno.h>
#include <stdint.h>

#include "rampart.h"
#include "src/batch.h"
#include "src/heap.h"
#include "src/tier.h"
#include "testing.h"

static int walk_tier(const rp_block_info *b, void *arg)
{
    int *tiers = arg;
    if (b->state == RP_BLOCK_USED)
        tiers[b->tier]++;
    return 0;
}

static int kinds[RP_ERR_KIND_COUNT];
static void record(const rp_report *r, void *arg)
{
    (void)arg;
    kinds[r->kind]++;
}

static void test_batch(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    void *out[200];
    /* 200 blocks of 100 bytes aligned to 64, all distinct, aligned, live. */
    CHECK(rp_alloc_batch(h, 100, 64, out, 200) == 200);
    for (int i = 0; i < 200; i++) {
        CHECK(((uintptr_t)out[i] & 63) == 0);
        CHECK(rp_usable_size(out[i]) >= 100);
        CHECK(rp_heap_of(out[i]) == h);
        memset(out[i], i, 100);
        for (int j = 0; j < i; j += 17)
            CHECK(out[i] != out[j]);
    }
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 200 && st.alloc_calls == 200);
    CHECK(st.max_examined <= 2); /* the O(1) bound holds inside a batch too */
    CHECK_HEAP(h);
    /* Free them in two batches. */
    CHECK(rp_free_batch(h, out, 120) == 120);
    CHECK(rp_free_batch(h, out + 120, 80) == 80);
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0 && st.free_calls == 200);
    CHECK_HEAP(h);
    /* Page-tier shapes are refused. */
    errno = 0;
    CHECK(rp_alloc_batch(h, 1 << 20, 0, out, 4) == 0 && errno == EINVAL);
    errno = 0;
    CHECK(rp_alloc_batch(h, 10, 3, out, 4) == 0 && errno == EINVAL);
    /* A bad pointer in a batch is reported once and skipped; the others are freed. */
    rp_heap *other = rp_heap_create(NULL);
    void *x = rp_alloc(other, 10, 0);
    CHECK(rp_alloc_batch(h, 40, 0, out, 3) == 3);
    void *mixed[4] = {out[0], x, out[1], out[2]};
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(record, NULL, &old_arg);
    CHECK(rp_free_batch(h, mixed, 4) == 3);
    CHECK(kinds[RP_ERR_INVALID_FREE] == 1);
    /* The same block twice in one batch (a run pending): a double free, reported once. */
    CHECK(rp_alloc_batch(h, 40, 0, out, 3) == 3);
    void *twice[4] = {out[0], out[1], out[0], out[2]};
    CHECK(rp_free_batch(h, twice, 4) == 3);
    CHECK(kinds[RP_ERR_DOUBLE_FREE] == 1);
    /* A run freed in one piece, then one of its blocks freed again: a double free (the
     * run's inner headers must not pass for live blocks). */
    CHECK(rp_alloc_batch(h, 40, 0, out, 3) == 3);
    CHECK((char *)out[1] == (char *)out[0] + 64 && (char *)out[2] == (char *)out[1] + 64);
    CHECK(rp_free_batch(h, out, 3) == 3);
    rp_free(out[1]);
    rp_free(out[2]);
    CHECK(kinds[RP_ERR_DOUBLE_FREE] == 3);
    CHECK(kinds[RP_ERR_CORRUPT_BLOCK] == 0);
    rp_set_report_fn(old, old_arg, NULL);
    CHECK(rp_heap_of(x) == other);
    CHECK_HEAP(h);
    CHECK_HEAP(other);
    rp_free(x);
    rp_heap_destroy(other);
    rp_heap_destroy(h);
}

/* Aligned requests whose span-tier stride would be at least their page-rounded size go to
 * the page tier: no in-band header, nothing written into the block. */
static void test_tier_routing(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    struct {
        size_t size, align;
        int pages;
    } cases[] = {
        {3072, 1024, 1},  {64512, 4096, 1}, {4096, 4096, 1}, {100, 4096, 0},  {4000, 2048, 1},
        {3000, 1024, 0},  {100, 64, 0},     {2000, 1024, 0}, {100, 1024, 0},  {65536, 16, 1},
        {60000, 16, 0},   {0, 4096, 0},     {0, 1024, 0},     {2000, 4096, 0},  {2100, 4096, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECKF(rp_wants_pages(h, cases[i].size, cases[i].align) == cases[i].pages, "%zu/%zu", cases[i].size,
               cases[i].align);
        void *p = rp_alloc(h, cases[i].size, cases[i].align);
        REQUIRE(p);
        CHECK(((uintptr_t)p & (cases[i].align - 1)) == 0);
        int tiers[3] = {0, 0, 0};
        rp_heap_walk(h, walk_tier, tiers);
        CHECKF(tiers[cases[i].pages ? RP_TIER_PAGE : RP_TIER_SPAN] == 1, "%zu/%zu landed in the wrong tier",
               cases[i].size, cases[i].align);
        rp_free(p);
    }
    /* 3072/1024: one page each, so 2000 of them cost 2000 pages, nothing more. */
    void *ps[2000];
    for (int i = 0; i < 2000; i++)
        ps[i] = rp_alloc(h, 3072, 1024);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.large_blocks == 2000 && st.bytes_in_use == (size_t)2000 * 4096);
    for (int i = 0; i < 2000; i++)
        rp_free(ps[i]);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* Regression: a block freed next to a free predecessor is merged into it; a second free of
 * it must be reported as a double free (its old header used to stay valid and "live"). */
static void test_double_free_after_merge(void)
{
    rp_heap *h = rp_heap_create(NULL);
    void *a = rp_alloc(h, 100, 0), *b = rp_alloc(h, 100, 0), *c = rp_alloc(h, 100, 0);
    REQUIRE(a && b && c);
    rp_free(a);
    rp_free(b); /* merges into a's free block */
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(record, NULL, &old_arg);
    rp_free(b);
    rp_set_report_fn(old, old_arg, NULL);
    CHECK(kinds[RP_ERR_DOUBLE_FREE] == 1);
    CHECK(kinds[RP_ERR_CORRUPT_BLOCK] == 0);
    memset(kinds, 0, sizeof kinds);
    CHECK_HEAP(h);
    rp_free(c);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* Batches of every size and count against random frees, in fragmented free space: runs
 * carved from blocks of every size (remainders absorbed or split off), the heap checked
 * often, every block filled and verified. */
static void test_batch_random(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    enum { MAX_LIVE = 6000 };
    static struct {
        unsigned char *p;
        size_t size;
    } live[MAX_LIVE];
    size_t n = 0;
    uint64_t s = 88172645463325252ull;
    char why[256];
    for (int it = 0; it < 20000 && !test_failures; it++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        if (n < MAX_LIVE - 64 && (s % 3)) {
            void *out[64];
            size_t size = 16 * ((s >> 8) % 80), want = 1 + (s >> 20) % 64;
            size_t align = (s >> 30) % 4 == 0 ? 64 : 16;
            size_t got = rp_alloc_batch(h, size, align, out, want);
            CHECKF(got == want, "batch of %zu x %zu got %zu", want, size, got);
            for (size_t i = 0; i < got; i++) {
                CHECK(((uintptr_t)out[i] & (align - 1)) == 0 && rp_usable_size(out[i]) >= size);
                memset(out[i], (int)(n & 0xff), size);
                live[n].p = out[i];
                live[n++].size = size;
            }
            if (it % 16 == 0 && rp_heap_check(h, why, sizeof why) != 0) {
                CHECKF(0, "after a batch of %zu x %zu bytes: %s", want, size, why);
                break;
            }
        } else if (n && (s >> 40) % 4 == 0) {
            /* A batch free of up to 64 blocks: the most recent ones (often one run), in
             * order, reversed, or evens then odds. */
            void *ptrs[64];
            size_t m = 1 + (s >> 12) % 64;
            if (m > n)
                m = n;
            int order = (int)((s >> 50) % 3);
            size_t half = (m + 1) / 2;
            for (size_t i = 0; i < m; i++) {
                size_t j = order == 0 ? i : order == 1 ? m - 1 - i : i < half ? 2 * i : 2 * (i - half) + 1;
                size_t k = n - m + j;
                for (size_t b = 0; b < live[k].size; b += 7)
                    CHECK(live[k].p[b] == live[k].p[0]);
                ptrs[i] = live[k].p;
            }
            CHECK(rp_free_batch(h, ptrs, m) == m);
            n -= m;
            if (it % 16 == 1 && rp_heap_check(h, why, sizeof why) != 0) {
                CHECKF(0, "after a batch free of %zu blocks: %s", m, why);
                break;
            }
        } else if (n) {
            size_t k = (s >> 5) % n;
            for (size_t i = 0; i < live[k].size; i += 7)
                CHECK(live[k].p[i] == live[k].p[0]);
            rp_free(live[k].p);
            live[k] = live[--n];
        }
    }
    while (n)
        rp_free(live[--n].p);
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0);
    CHECK(st.max_examined <= 2);
    rp_heap_destroy(h);
}

int main(void)
{
    test_double_free_after_merge();
    test_batch();
    test_batch_random();
    test_tier_routing();
    TEST_MAIN_END();
}
