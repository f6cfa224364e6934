/* Thread caches at their cap (src/thread_cache.h): a cache filled up with blocks of some
 * classes still refills the others in batches, making room from its fullest bins, instead of
 * serving every miss by a direct heap allocation. What a real producer/consumer program does
 * to the consumer's cache: it fills with the classes the consumer frees, while its own
 * allocations may be of other classes. Linked statically with the drop-in, white-box (reads
 * the calling thread's rp_tcache). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/thread_cache.h"
#include "testing.h"

#define FILL_BLOCKS 8000
#define FRESH_BLOCKS 256
#define FRESH_SIZE 1000 /* a 1 KiB block: a class the filling never uses */

static void *fill[FILL_BLOCKS];
static void *fresh[FRESH_BLOCKS];

static void test_full_cache_refills_in_batches(void)
{
    free(malloc(1)); /* the thread's cache exists */
    rp_malloc_thread_flush();
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc && tc->cap > 0);

    /* Blocks of 64 .. 928 bytes (55 classes, so that no bin reaches its limit first), freed
     * until the cache has less room left than one 1 KiB block. */
    for (int i = 0; i < FILL_BLOCKS; i++)
        REQUIRE(fill[i] = malloc(48 + (size_t)(i % 55) * 16));
    int freed = 0;
    while (freed < FILL_BLOCKS && tc->room >= 1024)
        free(fill[freed++]);
    CHECKF(tc->room < 1024, "room %td after %d frees", tc->room, freed);
    CHECK(tc->bins[rp_tc_class_of_block(1024)].count == 0);

    rp_malloc_stats_t a, b;
    REQUIRE(rp_malloc_stats(&a) == 0);
    for (int i = 0; i < FRESH_BLOCKS; i++)
        REQUIRE(fresh[i] = malloc(FRESH_SIZE));
    REQUIRE(rp_malloc_stats(&b) == 0);
    /* A batch is at most half a bin (bins of 1 KiB blocks hold a quarter of the cap), so
     * 256 allocations take a handful of refills; with no room made they would take none
     * (every one a direct allocation). */
    uint64_t refills = b.refills - a.refills;
    size_t batch = tc->bins[rp_tc_class_of_block(1024)].limit / 2;
    CHECKF(batch > 0 && refills >= FRESH_BLOCKS / batch / 2 && refills <= FRESH_BLOCKS,
           "%llu refills for %d allocations (batches of up to %zu)", (unsigned long long)refills, FRESH_BLOCKS, batch);
    CHECKF(b.flushes > a.flushes, "no room was made: %llu flushes", (unsigned long long)(b.flushes - a.flushes));
    CHECK(tc->room >= 0);

    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
    for (int i = 0; i < FRESH_BLOCKS; i++)
        free(fresh[i]);
    for (int i = freed; i < FILL_BLOCKS; i++)
        free(fill[i]);
    rp_malloc_thread_flush();
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
}

int main(void)
{
    test_full_cache_refills_in_batches();
    TEST_MAIN_END();
}
