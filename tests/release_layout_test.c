/* Release is untouched by the debug flavour: 16-byte headers, user pointers 16 bytes after
 * the block start, minimum blocks of 32 bytes, large blocks without a lead page, no hook
 * linked in, and rp_usable_size reporting the rounded size. */
#include <stdint.h>
#include <string.h>

#include "rampart.h"
#include "src/block.h"
#include "src/heap.h"
#include "src/span.h"
#include "testing.h"

_Static_assert(sizeof(rp_block) == 16, "release header is 16 bytes");
_Static_assert(RP_HOOK_PREFIX == 0 && RP_HOOK_SUFFIX == 0, "release reserves nothing for the debug runtime");
_Static_assert(RP_USER_OFFSET == 16, "release user pointer is 16 bytes into the block");
_Static_assert(RP_MIN_BLOCK == 32, "release minimum block");

/* From hook_probe.c (a file that includes no rampart header, where src/hooks.h's empty
 * inline hooks cannot stand in for the real ones). */
int linked_debug_hooks(void);

int main(void)
{
    CHECK(strcmp(rp_flavour(), "release") == 0);
    CHECK(linked_debug_hooks() == 0);
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    for (size_t n = 0; n <= 1000; n += 7) {
        char *p = rp_alloc(h, n, 0);
        REQUIRE(p);
        rp_block *b = rp_block_of_user(p);
        CHECK((char *)b == p - 16);
        CHECK(rp_block_valid(h->secret, b) && !(b->bits & RP_HDR_FREE));
        size_t want = rp_align_up(16 + n, 16);
        if (want < 32)
            want = 32;
        CHECKF(b->size == want || b->size == want + 16, "size %zu: block %u, expected %zu", n, b->size, want);
        CHECK(rp_usable_size(p) == b->size - 16u);
        CHECK(rp_span_block_need(n) == want);
    }
    /* One page aligned to a page is exactly one page of the page tier, no lead page. */
    struct rp_heap_stats before, after;
    rp_heap_stats(h, &before);
    char *page = rp_alloc(h, 4096, 4096);
    REQUIRE(page && ((uintptr_t)page & 4095) == 0);
    rp_heap_stats(h, &after);
    CHECK(after.bytes_in_use - before.bytes_in_use == 4096 && rp_usable_size(page) == 4096);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
