/* Core bugs the fuzz harnesses found, pinned as plain tests (the inputs themselves are in
 * fuzz/regressions/, replayed by //fuzz:heap_ops):
 *
 *  1. A block freed next to a free block is merged into it and keeps its old header (valid,
 *     not FREE). Freeing that pointer again was reported as a "corrupted-block-header" naming
 *     the neighbour; rp_realloc of it resized the stale block in place, silently corrupting
 *     the free block around it; rp_usable_size and rp_heap_of took it for a live block. It is
 *     a double free (an invalid free once the memory is allocated again) and must be reported
 *     as such, naming the pointer, even when the boundary tag leads to garbage: the error
 *     paths walk the span to find the block that really holds it.
 *     (fuzz/regressions/heap_ops/stale-free-after-resplit, stale-free-behind-reused-header,
 *     stale-realloc-after-merge)
 *  2. When the OS refused to trim the alignment slack of a new region, the heap kept the
 *     larger mapping and went over its max_bytes cap.
 *  3. rp_heap_walk trusted a large block's page descriptor (its region pointer, its lead
 *     pages) and a region's page area before checking them: on damage it computed wild
 *     addresses and dereferenced them (release: through the region pointer; debug: the
 *     runtime reads the bytes before a user pointer). It must stop with -1, as it does for
 *     other damage. (fuzz/regressions/heap_ops_debug/walk-damaged-large-head)
 *  4. An allocation took a free block whose free-list links had been overwritten (a write
 *     after free): unlinking it failed, the failure was ignored and the block was handed out
 *     while still listed as free. It must be refused with a corrupted-free-list report.
 *  5. A free between two free blocks whose previous neighbour's links were damaged took the
 *     next neighbour off its list first, then found the damage and filed the next neighbour
 *     again at the head of its list: the refused free changed the list (writing into the
 *     damaged block's links), so repairing the damage left the list inconsistent. Both
 *     neighbours are checked before either is unlinked.
 *     (fuzz/regressions/heap_ops/refused-free-moved-the-other-neighbour) */
#include <errno.h>
#include <stdint.h>

#include "rampart.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

static struct {
    int count;
    rp_error_kind kind;
    const void *address;
} seen;

static void capture(const rp_report *r, void *arg)
{
    (void)arg;
    seen.count++;
    seen.kind = r->kind;
    seen.address = r->address;
}

/* Exactly one report since the last call, of kind `kind`, about p. */
static int reported(rp_error_kind kind, const void *p)
{
    int ok = seen.count == 1 && seen.kind == kind && seen.address == p;
    if (!ok)
        fprintf(stderr, "  got %d report(s), last %s about %p\n", seen.count, rp_error_kind_name(seen.kind),
                seen.address);
    seen.count = 0;
    return ok;
}

/* a, b, c adjacent 128-byte blocks (100 requested) at the start of a fresh span; a and then b
 * freed, so b is merged into a's free block and its own header is a leftover. */
static rp_heap *merged_pair(char **a, char **b)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    *a = rp_alloc(h, 100, 0);
    *b = rp_alloc(h, 100, 0);
    char *c = rp_alloc(h, 100, 0);
    REQUIRE(*a && *b && c && *b == *a + 128 && c == *b + 128);
    rp_free(*a);
    rp_free(*b);
    CHECK_HEAP(h);
    return h;
}

static void test_second_free_after_merge(void)
{
    char *a, *b;
    rp_heap *h = merged_pair(&a, &b);
    rp_free(b);
    CHECK(reported(RP_ERR_DOUBLE_FREE, b));
    errno = 0;
    CHECK(rp_realloc(h, b, 10) == NULL && errno == EINVAL);
    CHECK(reported(RP_ERR_DOUBLE_FREE, b));
    CHECK(rp_usable_size(b) == 0);
    CHECK(reported(RP_ERR_DOUBLE_FREE, b));
    CHECK(rp_heap_of(b) == NULL);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void test_second_free_after_resplit(void)
{
    char *a, *b;
    rp_heap *h = merged_pair(&a, &b);
    /* 80 bytes carved from the front of the merged block: the free rest starts before b. */
    char *d = rp_alloc(h, 50, 0);
    REQUIRE(d == a);
    rp_free(b);
    CHECK(reported(RP_ERR_DOUBLE_FREE, b));
    errno = 0;
    CHECK(rp_realloc(h, b, 1000) == NULL && errno == EINVAL);
    CHECK(reported(RP_ERR_DOUBLE_FREE, b));
    CHECK_HEAP(h);
    rp_free(d);
    CHECK(seen.count == 0);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* b merged into a free block whose own header was then left behind too, and the memory over
 * that header handed out again and written: the boundary tag of b leads to garbage. Still a
 * double free (fuzz/regressions/heap_ops/stale-free-behind-reused-header). */
static void test_second_free_behind_reused_header(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *first = rp_alloc(h, 100, 0), *x = rp_alloc(h, 100, 0), *b = rp_alloc(h, 100, 0);
    char *t = rp_alloc(h, 200, 0), *a = rp_alloc(h, 100, 0), *last = rp_alloc(h, 100, 0);
    REQUIRE(first && x && b && t && a && last && b == x + 128 && t == b + 128 && a == t + 224);
    rp_free(x);
    rp_free(t);
    rp_free(a); /* merged into t's free block */
    rp_free(b); /* x, b, t and a become one free block */
    CHECK(seen.count == 0);
    char *x2 = rp_alloc(h, 100, 0), *over = rp_alloc(h, 250, 0);
    REQUIRE(x2 == x && over == b);
    memset(over, 0x5a, 250); /* covers where t's header was */
    rp_free(a);
    CHECK(reported(RP_ERR_DOUBLE_FREE, a));
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void test_free_inside_reused_memory(void)
{
    char *a, *b;
    rp_heap *h = merged_pair(&a, &b);
    /* 224 bytes from the merged block: b's old header is now inside d (d never writes it). */
    char *d = rp_alloc(h, 200, 0);
    REQUIRE(d == a);
    rp_heap_stats_t before, after;
    rp_heap_stats(h, &before);
    rp_free(b);
    CHECK(reported(RP_ERR_INVALID_FREE, b));
    rp_heap_stats(h, &after);
    CHECK(after.blocks_in_use == before.blocks_in_use && after.free_calls == before.free_calls);
    CHECK(rp_usable_size(d) >= 200);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void test_cap_kept_when_trim_fails(void)
{
    rp_heap_config cfg = {0};
    cfg.region_bytes = (size_t)64 << 10;
    rp_heap *probe = rp_heap_create(&cfg);
    REQUIRE(probe);
    rp_heap_stats_t st;
    rp_heap_stats(probe, &st);
    size_t control = st.os_bytes;
    REQUIRE(rp_alloc(probe, 100, 0));
    rp_heap_stats(probe, &st);
    size_t one_region = st.os_bytes - control; /* 16 pages and their descriptors */
    rp_heap_destroy(probe);

    /* Room for exactly one such region. */
    cfg.max_bytes = control + one_region;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    rp_os_fail_at(2); /* the region's mmap succeeds, trimming its alignment slack fails */
    void *p = rp_alloc(h, 100, 0);
    rp_os_fail_at(0);
    rp_heap_stats(h, &st);
    CHECKF(st.os_bytes_peak <= cfg.max_bytes, "peak %zu over the cap %zu", st.os_bytes_peak, cfg.max_bytes);
    if (!p) {
        CHECK(errno == ENOMEM);
        p = rp_alloc(h, 100, 0); /* the OS behaves again: the region fits */
    }
    CHECK(p != NULL);
    rp_heap_stats(h, &st);
    CHECK(st.os_bytes_peak <= cfg.max_bytes);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static int count_block(const rp_block_info *info, void *arg)
{
    (void)info;
    ++*(size_t *)arg;
    return 0;
}

static void test_walk_stops_at_damaged_large_head(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *p = rp_alloc(h, 200000, 0);
    REQUIRE(p);
    rp_region *r = rp_pagemap_lookup(p);
    REQUIRE(r);
    rp_page *d = rp_page_of(r, p);
    REQUIRE(d->state == RP_PAGE_LARGE);
    size_t blocks = 0;
    CHECK(rp_heap_walk(h, count_block, &blocks) == 0 && blocks > 0);

    rp_region *region = d->region;
    d->region = (rp_region *)(uintptr_t)16; /* unmapped: following it faults */
    CHECK(rp_heap_walk(h, count_block, &blocks) == -1 && errno == EFAULT);
    CHECK(rp_heap_check(h, NULL, 0) != 0);
    d->region = region;

    uint32_t lead = d->u.large.lead_pages;
    d->u.large.lead_pages = d->npages; /* a user pointer past the block */
    CHECK(rp_heap_walk(h, count_block, &blocks) == -1);
    CHECK(rp_heap_check(h, NULL, 0) != 0);
    d->u.large.lead_pages = lead;

    uintptr_t base = r->base;
    r->base += r->npages << RP_PAGE_SHIFT; /* the page area moved past the region's memory */
    CHECK(rp_heap_walk(h, count_block, &blocks) == -1);
    CHECK(rp_heap_check(h, NULL, 0) != 0);
    r->base = base;

    CHECK(rp_heap_walk(h, count_block, &blocks) == 0);
    CHECK_HEAP(h);
    rp_free(p);
    rp_heap_destroy(h);
}

static void test_uaf_links_refused(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *p[6];
    for (int i = 0; i < 6; i++)
        REQUIRE((p[i] = rp_alloc(h, 100, 0)) != NULL);
    rp_free(p[1]);
    rp_free(p[4]); /* one class, list p[4] -> p[1] */
    char *saved_prev;
    memcpy(&saved_prev, p[4] + 8, sizeof saved_prev);
    memcpy(p[4] + 8, &p[0], sizeof p[0]); /* write after free: the list head's prev link */
    CHECK(rp_alloc(h, 100, 0) == NULL);
    CHECK(reported(RP_ERR_CORRUPT_FREE_LIST, p[4] - 16));
    memcpy(p[4] + 8, &saved_prev, sizeof saved_prev);
    CHECK_HEAP(h);
    CHECK(rp_alloc(h, 100, 0) == p[4] && rp_alloc(h, 100, 0) == p[1]);
    CHECK(seen.count == 0);
    rp_heap_destroy(h);
}

static void test_refused_free_changes_nothing(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *p[6];
    for (int i = 0; i < 6; i++)
        REQUIRE((p[i] = rp_alloc(h, 100, 0)) != NULL);
    rp_free(p[3]);
    rp_free(p[1]); /* one class, list p[1] -> p[3]; p[2] lies between them */
    char *a = p[1] - 16, *saved_prev;
    memcpy(&saved_prev, p[1] + 8, sizeof saved_prev);
    CHECK(saved_prev == NULL); /* the list head */
    memcpy(p[1] + 8, &a, sizeof a); /* write after free: the head's prev link points at itself */
    rp_free(p[2]);
    CHECK(reported(RP_ERR_CORRUPT_FREE_LIST, a));
    memcpy(p[1] + 8, &saved_prev, sizeof saved_prev);
    CHECK_HEAP(h);
    /* Nothing moved: p[2] is still allocated, and freeing it now merges all three. */
    CHECK(rp_usable_size(p[2]) >= 100);
    rp_free(p[2]);
    CHECK(seen.count == 0);
    CHECK_HEAP(h);
    CHECK(rp_alloc(h, 300, 0) == p[1]);
    rp_heap_destroy(h);
}

int main(void)
{
    rp_set_report_fn(capture, NULL, NULL);
    test_second_free_after_merge();
    test_second_free_after_resplit();
    test_free_inside_reused_memory();
    test_second_free_behind_reused_header();
    test_cap_kept_when_trim_fails();
    test_walk_stops_at_damaged_large_head();
    test_uaf_links_refused();
    test_refused_free_changes_nothing();
    TEST_MAIN_END();
}
