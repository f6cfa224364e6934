/* Blocks inside spans, observed through rp_heap_walk: split on allocation, coalescing with
 * the left, the right and both neighbours, aligned carving (the leading gap becomes a free
 * block of its own class), in-place realloc, the spare span, and the release header size. */
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

int main(void)
{
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
    CHECK(y2 == y);
    char *y3 = rp_realloc(h, y2, 2000);
    CHECK(y3 == y);
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
