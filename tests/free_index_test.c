/* Unit test of the two-level segregated-fit index (src/free_index.h): class mapping, the
 * good-fit search guarantee, bitmaps against a naive model, and the link-consistency check. */
#include <stdint.h>

#include "src/free_index.h"
#include "testing.h"

/* Fake free blocks: only the header's size and the links are used by the index. */
#define NFAKE 4096
static _Alignas(16) unsigned char arena[NFAKE][32];
static rp_block *fake(int i, uint32_t size)
{
    rp_block *b = (rp_block *)arena[i];
    memset(b, 0, sizeof arena[i]);
    b->size = size;
    return b;
}

/* Smallest size filed in class (fl, sl). */
static size_t class_low(unsigned fl, unsigned sl)
{
    if (fl == 0)
        return (size_t)sl << 4;
    unsigned top = fl + RP_FL_SHIFT - 1;
    return ((size_t)1 << top) + ((size_t)sl << (top - RP_SL_LOG));
}

static void test_mapping(void)
{
    unsigned pfl = 0, psl = 0;
    for (size_t s = 32; s < ((size_t)1 << 31); s += (s >> 6) < 16 ? 16 : (s >> 6) & ~(size_t)15) {
        unsigned fl, sl;
        rp_class_of(s, &fl, &sl);
        CHECKF(fl < RP_FL_COUNT && sl < RP_SL_COUNT, "size %zu -> (%u,%u)", s, fl, sl);
        CHECKF(class_low(fl, sl) <= s, "size %zu below its class (%u,%u) low %zu", s, fl, sl, class_low(fl, sl));
        unsigned nfl = sl + 1 < RP_SL_COUNT ? fl : fl + 1, nsl = sl + 1 < RP_SL_COUNT ? sl + 1 : 0;
        if (fl == 0 && sl == RP_SL_COUNT - 1)
            nfl = 1, nsl = 0;
        if (nfl < RP_FL_COUNT)
            CHECKF(s < class_low(nfl, nsl), "size %zu reaches the next class", s);
        CHECK(fl > pfl || (fl == pfl && sl >= psl)); /* monotonic */
        pfl = fl, psl = sl;
    }
}

/* For any request size, every block of the class find() returns is large enough. */
static void test_good_fit(void)
{
    test_rng rng = {42};
    for (int iter = 0; iter < 2000; iter++) {
        rp_free_index ix;
        memset(&ix, 0, sizeof ix);
        int n = 1 + (int)rng_below(&rng, 200);
        for (int i = 0; i < n; i++) {
            uint32_t size = (uint32_t)(32 + 16 * rng_below(&rng, 1u << (rng_below(&rng, 20) + 1)));
            rp_free_index_insert(&ix, fake(i, size));
        }
        size_t want = 16 * (2 + rng_below(&rng, 1u << (rng_below(&rng, 20) + 1)));
        rp_block *b = rp_free_index_find(&ix, want);
        size_t best_possible = 0;
        for (int i = 0; i < n; i++) {
            size_t sz = ((rp_block *)arena[i])->size;
            if (sz >= want && (best_possible == 0 || sz < best_possible))
                best_possible = sz;
        }
        if (b) {
            unsigned fl, sl;
            rp_class_of(b->size, &fl, &sl);
            for (rp_block *x = ix.heads[fl][sl]; x; x = rp_links(x)->next)
                CHECKF(x->size >= want, "class of found block holds %u < %zu", x->size, want);
        } else {
            /* Nothing found: no block is big enough after rounding to a class boundary, i.e.
             * any fitting block shares the request's class. */
            if (best_possible) {
                unsigned a, b2, c, d;
                rp_class_of(best_possible, &a, &b2);
                rp_class_of(want, &c, &d);
                CHECKF(a == c && b2 == d, "find(%zu) missed a block of %zu in a higher class", want, best_possible);
            }
        }
    }
}

/* Random inserts/removes; bitmaps and counters must match a naive model (I1, I2, I5). */
static void test_bitmaps(void)
{
    rp_free_index ix;
    memset(&ix, 0, sizeof ix);
    static int filed[NFAKE];
    static uint32_t sizes[NFAKE];
    test_rng rng = {7};
    for (int i = 0; i < NFAKE; i++)
        sizes[i] = (uint32_t)(32 + 16 * rng_below(&rng, 1u << (rng_below(&rng, 16) + 1)));
    for (int step = 0; step < 100000; step++) {
        int i = (int)rng_below(&rng, NFAKE);
        if (filed[i]) {
            CHECK(rp_free_index_remove(&ix, (rp_block *)arena[i]) == 0);
            filed[i] = 0;
        } else {
            rp_free_index_insert(&ix, fake(i, sizes[i]));
            filed[i] = 1;
        }
        if (step % 5000)
            continue;
        size_t count[RP_FL_COUNT][RP_SL_COUNT] = {{0}}, blocks = 0, bytes = 0;
        for (int k = 0; k < NFAKE; k++) {
            if (!filed[k])
                continue;
            unsigned fl, sl;
            rp_class_of(sizes[k], &fl, &sl);
            count[fl][sl]++;
            blocks++;
            bytes += sizes[k];
        }
        for (unsigned fl = 0; fl < RP_FL_COUNT; fl++) {
            for (unsigned sl = 0; sl < RP_SL_COUNT; sl++) {
                size_t n = 0;
                for (rp_block *x = ix.heads[fl][sl]; x; x = rp_links(x)->next)
                    n++;
                CHECK(n == count[fl][sl]);
                CHECK(((ix.sl_bitmap[fl] >> sl) & 1) == (count[fl][sl] != 0));
            }
            CHECK(((ix.fl_bitmap >> fl) & 1) == (ix.sl_bitmap[fl] != 0));
        }
        CHECK(ix.free_blocks == blocks && ix.free_bytes == bytes);
    }
}

/* A block whose neighbour no longer points back is refused, and nothing changes (I4). */
static void test_corrupt_links(void)
{
    rp_free_index ix;
    memset(&ix, 0, sizeof ix);
    rp_block *a = fake(0, 64), *b = fake(1, 64), *c = fake(2, 64);
    rp_free_index_insert(&ix, a);
    rp_free_index_insert(&ix, b);
    rp_free_index_insert(&ix, c); /* list: c b a */
    rp_links(a)->prev = c;        /* a use-after-free write into a's links */
    CHECK(rp_free_index_remove(&ix, a) == -1);
    CHECK(ix.free_blocks == 3);
    rp_links(a)->prev = b;
    rp_links(b)->next = NULL; /* b's forward link overwritten */
    CHECK(rp_free_index_remove(&ix, a) == -1);
    rp_links(b)->next = a;
    CHECK(rp_free_index_remove(&ix, a) == 0);
    CHECK(rp_free_index_remove(&ix, a) == -1); /* not on the list any more */
    CHECK(ix.free_blocks == 2);
    CHECK(rp_free_index_find(&ix, 64) == c);
    CHECK(rp_free_index_exact_head(&ix, 64) == c);
    CHECK(rp_free_index_find(&ix, 80) == NULL);
    CHECK(rp_free_index_largest(&ix) == 64);
}

int main(void)
{
    test_mapping();
    test_good_fit();
    test_bitmaps();
    test_corrupt_links();
    TEST_MAIN_END();
}
