/* Fit guarantees of the span tier (src/span.h FT1, FT2): a heap that cannot grow uses a free
 * block of the request's own size class that the O(1) search skips, rather than failing; and
 * a block of the rounded size is found without taking a new span. The default options. */
#include <errno.h>
#include <stdint.h>

#include "rampart.h"
#include "testing.h"

static _Alignas(4096) unsigned char region[256 << 10];

int main(void)
{
    /* Caller memory only: the heap cannot grow. */
    rp_heap_config cfg = {0};
    cfg.name = "fit";
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    REQUIRE(rp_heap_add_region(h, region, sizeof region) == 0);

    /* 1040 bytes of block (1024 asked, 16 of header) lie in the class [1024, 1056): a search
     * for 1040 starts at the class above. Fill the heap, then free one such block. */
    void *blocks[512];
    size_t n = 0;
    void *p;
    while (n < 512 && (p = rp_alloc(h, 1024, 0)) != NULL)
        blocks[n++] = p;
    REQUIRE(n > 8);
    while ((p = rp_alloc(h, 16, 0)) != NULL) /* what is left, so nothing else fits */
        ;
    void *freed = blocks[n / 2];
    rp_free(freed);
    CHECK_HEAP(h);
    errno = 0;
    void *again = rp_alloc(h, 1024, 0);
    CHECKF(again == freed, "rp_alloc(1024) = %p (errno %d), the free block of exactly that size is %p", again, errno,
           freed);
    CHECK_HEAP(h);

    /* The same with an alignment the block happens to satisfy. */
    rp_free(again);
    again = rp_alloc(h, 1024, 16);
    CHECK(again == freed);
    CHECK_HEAP(h);

    /* Still full: a request no free block can hold fails with ENOMEM. */
    errno = 0;
    CHECK(rp_alloc(h, 1024, 0) == NULL && errno == ENOMEM);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
