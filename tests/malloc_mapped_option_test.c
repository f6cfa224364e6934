/* The malloc drop-in takes option mapped_block_bytes (RAMPART_OPTIONS=mapped_block_bytes=4M in
 * this test's environment): blocks from 4 MiB get a mapping of their own, smaller ones do not,
 * and a buffer grown past the threshold keeps its contents. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rampart_malloc.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

static void *(*volatile do_malloc)(size_t) = malloc;
static void *(*volatile do_realloc)(void *, size_t) = realloc;

static int mapped_block(const void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    return r && rp_region_is_mapped_block(r);
}

int main(void)
{
    const size_t MiB = (size_t)1 << 20;
    char *small = do_malloc(3 * MiB), *big = do_malloc(5 * MiB);
    REQUIRE(small && big);
    CHECK(!mapped_block(small));
    CHECK(mapped_block(big));
    memset(small, 0x11, 3 * MiB);
    char *grown = do_realloc(small, 9 * MiB);
    REQUIRE(grown);
    CHECK(mapped_block(grown) && grown[0] == 0x11 && grown[3 * MiB - 1] == 0x11);
    free(grown);
    free(big);
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
    TEST_MAIN_END();
}
