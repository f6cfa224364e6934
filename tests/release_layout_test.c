/* Release is untouched by the debug flavour: 16-byte headers, user pointers 16 bytes after
 * the block start, minimum blocks of 32 bytes, large blocks without a lead page, no hook
 * linked in, rp_usable_size reporting the rounded size, and free leaving memory as it was. */
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
        CHECK(rp_block_valid(&h->key, b) && !(b->bits & RP_HDR_FREE));
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

    /* free is O(1) in release: it does not clear the block (DPDK's zero-fills it). A freed
     * span block keeps everything past its free-list links; a freed large block all of it. */
    unsigned char *blk = rp_alloc(h, 1000, 0), *guard = rp_alloc(h, 16, 0);
    REQUIRE(blk && guard);
    memset(blk, 0xa5, 1000);
    rp_free(blk);
    size_t kept = 0;
    for (size_t k = sizeof(rp_free_links); k < 1000; k++)
        kept += blk[k] == 0xa5;
    CHECKF(kept == 1000 - sizeof(rp_free_links), "free changed %zu bytes of a freed block", 1000 - sizeof(rp_free_links) - kept);
    memset(page, 0x5a, 4096);
    rp_free(page);
    size_t kept_page = 0;
    for (size_t k = 0; k < 4096; k++)
        kept_page += (unsigned char)page[k] == 0x5a;
    CHECK(kept_page == 4096);
    rp_free(guard);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
