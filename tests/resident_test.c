/* Unit test of the resident-page bitmap (src/resident.h): set, clear and count over every
 * range of a 300-page bitmap (runs inside one word, across words, of whole words), against a
 * byte-per-page model; plus what an OS region's page tier does with it: pages handed out become
 * resident, freed pages stay resident (dirty) until given back. */
#include <stdint.h>

#include "rampart.h"
#include "src/heap.h"
#include "src/pagemap.h"
#include "src/resident.h"
#include "testing.h"

#define PAGES 300

static size_t model_count(const unsigned char *m, size_t first, size_t n)
{
    size_t c = 0;
    for (size_t i = first; i < first + n; i++)
        c += m[i];
    return c;
}

static void bitmap_against_model(void)
{
    uint64_t bits[(PAGES + 63) / 64];
    unsigned char model[PAGES];
    CHECK(rp_resident_bytes(PAGES) == sizeof bits);
    CHECK(rp_resident_bytes(64) == 8 && rp_resident_bytes(65) == 16 && rp_resident_bytes(0) == 0);
    uint64_t seed = 12345;
    memset(bits, 0, sizeof bits);
    memset(model, 0, sizeof model);
    for (int op = 0; op < 20000 && !test_failures; op++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t first = (size_t)(seed >> 33) % PAGES;
        size_t n = (size_t)(seed >> 20) % (PAGES - first + 1);
        size_t before = model_count(model, first, n);
        CHECK(rp_resident_count(bits, first, n) == before);
        switch ((seed >> 60) % 3) {
        case 0:
            CHECK(rp_resident_set(bits, first, n) == n - before);
            memset(model + first, 1, n);
            break;
        case 1:
            CHECK(rp_resident_clear(bits, first, n) == before);
            memset(model + first, 0, n);
            break;
        default:
            break;
        }
        CHECK(rp_resident_count(bits, 0, PAGES) == model_count(model, 0, PAGES));
    }
}

static void page_tier_marks_pages(void)
{
    rp_heap_config cfg = {0};
    cfg.retain_bytes = (size_t)1 << 30;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    rp_heap_stats_t st;
    void *a = rp_alloc(h, 5 * 4096, 4096); /* a run of 5 pages, cut from a block of 8 */
    REQUIRE(a);
    rp_region *r = rp_pagemap_lookup(a);
    REQUIRE(r && r->resident);
    void *keep = rp_alloc(h, 64 << 10, 0); /* holds the region when the rest is trimmed */
    REQUIRE(keep && rp_pagemap_lookup(keep) == r);
    size_t first = rp_page_index(r, rp_page_of(r, a));
    CHECK(rp_resident_count(r->resident, first, 5) == 5);
    CHECK(rp_resident_count(r->resident, first + 5, 3) == 0); /* the tail went back untouched */
    rp_heap_stats(h, &st);
    CHECK(st.page_dirty_bytes == 0);
    rp_free(a);
    rp_heap_stats(h, &st);
    CHECK(st.page_dirty_bytes == 5 * 4096); /* freed after use: still resident */
    CHECK(rp_resident_count(r->resident, first, 5) == 5);
    CHECK_HEAP(h);
    void *b = rp_alloc(h, 8 * 4096, 4096); /* the same pages again, merged with the tail */
    rp_heap_stats(h, &st);
    CHECK(b == a && st.page_dirty_bytes == 0);
    rp_free(b);
    CHECK(rp_heap_trim(h, 0) > 0);
    rp_heap_stats(h, &st);
    CHECK(st.page_dirty_bytes == 0);
    CHECK(rp_resident_count(r->resident, first, 8) == 0); /* given back: nothing resident */
    CHECK_HEAP(h);
    rp_free(keep);
    rp_heap_destroy(h);
}

int main(void)
{
    bitmap_against_model();
    page_tier_marks_pages();
    TEST_MAIN_END();
}
