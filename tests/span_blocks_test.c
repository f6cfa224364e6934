/* Blocks inside spans, observed through rp_heap_walk: split on allocation, coalescing with
 * the left, the right and both neighbours, aligned carving (the leading gap becomes a free
 * block of its own class), in-place realloc, the spare span, and the release header size.
 * Where spans come from: in pairs filling one huge page with RP_HEAP_HUGE_PAGES, and never a
 * sliver of the page tier's leftovers while the heap can map more. */
#include <stdint.h>

#include "rampart.h"
#include "src/block.h"
#include "testing.h"

#define MAXB 64
typedef struct seen {
    int n;
    rp_block_info b[MAXB];
} seen;

static int collect(const rp_block_info *info, void *arg)
{
    seen *s = arg;
    if (info->tier == RP_TIER_SPAN && s->n < MAXB)
        s->b[s->n++] = *info;
    return 0;
}

static seen walk(rp_heap *h)
{
    seen s;
    s.n = 0;
    CHECK(rp_heap_walk(h, collect, &s) == 0);
    return s;
}

static int index_of(const seen *s, const void *addr)
{
    for (int i = 0; i < s->n; i++)
        if (s->b[i].addr == addr)
            return i;
    return -1;
}

#define HUGE_PAGE ((uintptr_t)2 << 20)

/* With RP_HEAP_HUGE_PAGES a preferred-size span comes with its pair: the two fill one 2 MiB
 * page, the second kept as the spare, so small blocks reach their second span without touching
 * another huge page, even when large blocks are taken from the page tier in between. */
static void span_pairs_cases(void)
{
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_HUGE_PAGES;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    char *first = rp_alloc(h, 1000, 0);
    REQUIRE(first);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECKF(st.spans == 2 && st.span_bytes == HUGE_PAGE, "first span of a huge-page heap: %zu spans, %zu bytes",
           st.spans, st.span_bytes);
    /* 1.75 MiB of small blocks, a 64 KiB large block after every 16 of them. */
    enum { SMALL = 1792, LARGE = SMALL / 16 };
    static void *small[SMALL], *large[LARGE];
    size_t outside = 0;
    for (int i = 0; i < SMALL; i++) {
        small[i] = rp_alloc(h, 1000, 0);
        REQUIRE(small[i]);
        if (((uintptr_t)small[i] & ~(HUGE_PAGE - 1)) != ((uintptr_t)first & ~(HUGE_PAGE - 1)))
            outside++;
        if (i % 16 == 15) {
            large[i / 16] = rp_alloc(h, (size_t)64 << 10, 0);
            REQUIRE(large[i / 16]);
        }
    }
    rp_heap_stats(h, &st);
    CHECKF(outside == 0, "%zu of %d small blocks outside the first span's 2 MiB page", outside, SMALL);
    CHECKF(st.spans == 2, "1.75 MiB of small blocks: %zu spans", st.spans);
    CHECK_HEAP(h);
    /* The next pair once both are full: again two spans of one aligned 2 MiB block. */
    static void *more[512];
    for (int i = 0; i < 512; i++)
        REQUIRE((more[i] = rp_alloc(h, 1000, 0)) != NULL);
    rp_heap_stats(h, &st);
    CHECKF(st.spans == 4 && st.span_bytes == 2 * HUGE_PAGE, "after 2.25 MiB: %zu spans, %zu bytes", st.spans,
           st.span_bytes);
    CHECK_HEAP(h);
    /* Emptied, all spans but one go back (H4 holds one spare, whichever pair it came from). */
    for (int i = 0; i < SMALL; i++)
        rp_free(small[i]);
    for (int i = 0; i < 512; i++)
        rp_free(more[i]);
    for (int i = 0; i < LARGE; i++)
        rp_free(large[i]);
    rp_free(first);
    rp_heap_stats(h, &st);
    CHECK(st.spans == 1 && st.blocks_in_use == 0);
    CHECK_HEAP(h);
    rp_heap_destroy(h);

    /* Without the flag, one span at a time. */
    h = rp_heap_create(NULL);
    REQUIRE(h);
    first = rp_alloc(h, 1000, 0);
    REQUIRE(first);
    rp_heap_stats(h, &st);
    CHECK(st.spans == 1 && st.span_bytes == ((size_t)1 << 20));
    rp_free(first);
    rp_heap_destroy(h);
}

/* A heap that maps its own memory does not carve spans of a page or two out of the page tier's
 * leftovers (each would fill after a few blocks, and every refill would pay for another): it
 * takes leftovers of at least 1/16 of the preferred size, then grows. */
static void span_leftover_cases(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    /* 160 KiB of the first region's first MiB go to a large block, as a thread cache did. */
    void *big = rp_alloc(h, (size_t)160 << 10, 0);
    REQUIRE(big);
    enum { N = 6 * 1024 };
    static void *blocks[N];
    for (int i = 0; i < N; i++)
        REQUIRE((blocks[i] = rp_alloc(h, 1000, 0)) != NULL);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECKF(st.spans <= 10 && st.span_bytes >= st.spans * ((size_t)64 << 10),
           "6 MiB of small blocks: %zu spans holding %zu bytes", st.spans, st.span_bytes);
    CHECK_HEAP(h);
    for (int i = 0; i < N; i++)
        rp_free(blocks[i]);
    rp_free(big);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

int main(void)
{
    span_pairs_cases();
    span_leftover_cases();
    /* Release layout: 16-byte header directly before the user area. */
#ifndef RAMPART_DEBUG
    CHECK(sizeof(rp_block) == 16);
    CHECK(RP_USER_OFFSET == 16);
#endif
    rp_heap *h = rp_heap_create(NULL);
    char *a = rp_alloc(h, 100, 0), *b = rp_alloc(h, 200, 0), *c = rp_alloc(h, 300, 0);
    REQUIRE(a && b && c);
    /* Split: consecutive blocks, then the rest of the span as one free block. */
    seen s = walk(h);
    REQUIRE(s.n == 4);
    CHECK(s.b[0].addr == a && s.b[1].addr == b && s.b[2].addr == c);
    CHECK(s.b[0].state == RP_BLOCK_USED && s.b[3].state == RP_BLOCK_FREE);
    CHECK((char *)s.b[1].block == (char *)s.b[0].block + s.b[0].block_size);
    CHECK(s.b[0].block_size == rp_align_up(RP_USER_OFFSET + 100 + RP_HOOK_SUFFIX, 16));
    size_t a_size = s.b[0].block_size, b_size = s.b[1].block_size, c_size = s.b[2].block_size;

    /* Free the middle: a free block between two used ones. */
    rp_free(b);
    s = walk(h);
    REQUIRE(s.n == 4);
    CHECK(s.b[1].state == RP_BLOCK_FREE && s.b[1].block_size == b_size);
    /* Free the left: coalesces to the right with b's block. */
    rp_free(a);
    s = walk(h);
    REQUIRE(s.n == 3);
    CHECK(s.b[0].state == RP_BLOCK_FREE && s.b[0].block_size == a_size + b_size);
    CHECK(s.b[1].addr == c);
    /* Allocate into the hole, exactly. */
    char *a2 = rp_alloc(h, a_size + b_size - RP_USER_OFFSET - RP_HOOK_SUFFIX, 0);
    CHECK(a2 == a);
    rp_free(a2);
    /* Free c: both neighbours free, everything coalesces into one block: the whole span. */
    rp_free(c);
    s = walk(h);
    CHECK(s.n == 1 && s.b[0].state == RP_BLOCK_FREE);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.spans == 1 && st.span_bytes == s.b[0].block_size + 16); /* kept as the spare */
    CHECK(a_size + b_size + c_size < s.b[0].block_size);
    CHECK_HEAP(h);

    /* Aligned carving: the gap in front of an aligned block is a free block of its own. */
    char *x = rp_alloc(h, 40, 0);
    char *y = rp_alloc(h, 100, 4096);
    REQUIRE(x && y && ((uintptr_t)y & 4095) == 0);
    s = walk(h);
    int iy = index_of(&s, y);
    REQUIRE(iy == 2);
    CHECK(s.b[1].state == RP_BLOCK_FREE);
    CHECK((char *)s.b[1].block + s.b[1].block_size == (char *)s.b[2].block);
    CHECK(s.b[1].block_size >= 32);
    CHECK(s.b[2].align == 4096);
    /* The gap is reused by a request that fits it. */
    char *z = rp_alloc(h, 64, 0);
    CHECK(z == (char *)s.b[1].block + RP_USER_OFFSET);
    /* Realloc keeps the alignment, shrinks in place, grows into the free right neighbour. */
    char *y2 = rp_realloc(h, y, 40);
    char *y3 = rp_realloc(h, y2, 2000);
#ifndef RAMPART_DEBUG /* the debug flavour moves every block */
    CHECK(y2 == y);
    CHECK(y3 == y);
#endif
    CHECK(rp_usable_size(y3) >= 2000);
    CHECK_HEAP(h);
    rp_free(x);
    rp_free(z);
    rp_free(y3);
    s = walk(h);
    CHECK(s.n == 1);

    /* Many spans filled then emptied: all but one go back to the page tier. */
    static void *many[20000];
    for (int i = 0; i < 20000; i++)
        many[i] = rp_alloc(h, 200, 0);
    rp_heap_stats(h, &st);
    CHECK(st.spans >= 4);
    size_t free_pages_full = st.page_free_bytes;
    for (int i = 0; i < 20000; i++)
        rp_free(many[i]);
    rp_heap_stats(h, &st);
    CHECK(st.spans == 1 && st.blocks_in_use == 0);
    CHECK(st.page_free_bytes > free_pages_full);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
