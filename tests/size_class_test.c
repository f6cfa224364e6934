/* The thread caches' size classes: invariants C1..C4 of src/malloc/size_class.h, exhaustively. */
#include "src/malloc/size_class.h"
#include "testing.h"

int main(void)
{
    /* C1 */
    CHECK(rp_tc_class_size(0) == 32);
    CHECK(rp_tc_class_size(RP_TC_CLASSES - 1) == RP_TC_MAX_BLOCK);
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        CHECK(rp_tc_class_size(c) % 16 == 0);
        if (c)
            CHECKF(rp_tc_class_size(c) > rp_tc_class_size(c - 1), "class %u", c);
        /* at most 12.5 % apart above 1 KiB */
        if (c && rp_tc_class_size(c) > 1024)
            CHECK(rp_tc_class_size(c) - rp_tc_class_size(c - 1) <= rp_tc_class_size(c - 1) / 8);
    }
    /* C2: smallest class >= need, for every need. */
    for (size_t need = 32; need <= RP_TC_MAX_BLOCK; need += 16) {
        unsigned c = rp_tc_class_of_need(need);
        REQUIRE(c < RP_TC_CLASSES);
        CHECKF(rp_tc_class_size(c) >= need && (c == 0 || rp_tc_class_size(c - 1) < need), "need %zu -> class %u",
               need, c);
    }
    /* C3: largest class <= size, for every block size; none for blocks too big. */
    for (size_t size = 32; size < 4 * RP_TC_MAX_BLOCK; size += 16) {
        unsigned c = rp_tc_class_of_block(size);
        if (size <= RP_TC_MAX_CACHED_BLOCK) {
            REQUIRE(c < RP_TC_CLASSES);
            CHECKF(rp_tc_class_size(c) <= size && (c + 1 == RP_TC_CLASSES || rp_tc_class_size(c + 1) > size),
                   "block %zu -> class %u", size, c);
        } else {
            CHECKF(c >= RP_TC_CLASSES, "block %zu must not be cached (class %u)", size, c);
        }
    }
    /* C4: above 1 KiB, class sizes in (2^k, 2^(k+1)] are multiples of 2^(k-3). */
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        size_t s = rp_tc_class_size(c);
        if (s <= 1024)
            continue;
        unsigned k = rp_fls(s - 1);
        CHECKF(s % ((size_t)1 << (k - 3)) == 0, "class %u size %zu", c, s);
    }
    TEST_MAIN_END();
}
