/* Thread caches at their cap (src/malloc/thread_cache.h): a cache filled up with blocks of some
 * classes still refills the others in batches, making room from its fullest bins, instead of
 * serving every miss by a direct heap allocation. What a real producer/consumer program does
 * to the consumer's cache: it fills with the classes the consumer frees, while its own
 * allocations may be of other classes. Linked statically with the drop-in, white-box (reads
 * the calling thread's rp_tcache). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/span.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"
#include "testing.h"

#define FILL_BLOCKS 8000
#define FRESH_BLOCKS 256
#define FRESH_SIZE 1000 /* a 1 KiB block: a class the filling never uses */

static void *fill[FILL_BLOCKS];
static void *fresh[FRESH_BLOCKS];

static void test_full_cache_refills_in_batches(void)
{
    test_malloc_free(1); /* the thread's cache exists */
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

/* A thread's cache is mapped apart from the heaps: it is no block of its arena (whose first
 * region, and its first huge page, stay whole for spans), and only the pages of its slot store
 * that the bins have reached are resident. */
typedef struct cache_seen {
    int in_heap;
    size_t arena_large_blocks, resident_pages, mapped_pages;
} cache_seen;

static void *cache_apart_body(void *arg)
{
    cache_seen *seen = arg;
    void *p = malloc(100);
    rp_tcache *tc = rp_tc_self;
    if (!p || !tc)
        return NULL;
    seen->in_heap = rp_heap_of(tc) != NULL;
    rp_heap_stats_t st;
    if (rp_heap_stats(rp_heap_of(p), &st) == 0)
        seen->arena_large_blocks = st.large_blocks;
    seen->mapped_pages = tc->map_bytes / 4096;
    unsigned char vec[1024];
    if (seen->mapped_pages <= sizeof vec && mincore(tc, tc->map_bytes, vec) == 0)
        for (size_t i = 0; i < seen->mapped_pages; i++)
            seen->resident_pages += vec[i] & 1;
    free(p);
    return NULL;
}

static void test_cache_mapped_apart(void)
{
    cache_seen seen = {-1, SIZE_MAX, 0, 0};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, cache_apart_body, &seen) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    printf("thread cache: in a heap %d, arena's large blocks %zu, %zu of %zu pages resident\n", seen.in_heap,
           seen.arena_large_blocks, seen.resident_pages, seen.mapped_pages);
    CHECK(seen.in_heap == 0);
    CHECK(seen.arena_large_blocks == 0);
    CHECKF(seen.mapped_pages >= 8 && seen.resident_pages > 0 && seen.resident_pages <= seen.mapped_pages / 4,
           "%zu of %zu pages resident", seen.resident_pages, seen.mapped_pages);
}

/* The bytes the class bins reserve (T3: their limits times their class sizes). */
static size_t reserved_bytes(const rp_tcache *tc)
{
    size_t sum = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++)
        sum += (size_t)tc->bins[c].limit * rp_tc_class_size(c);
    return sum;
}

/* Class bins reserve room against the cap (T3 in thread_cache.h): nothing after a flush, a
 * first limit on first use, more as a bin fills, up to its most; malloc and free of cached
 * blocks count nothing; a bin that needs room takes it by halving the largest reservations,
 * and the reservations never pass the cap. */
static void test_bins_reserve_room(void)
{
    test_malloc_free(1);
    rp_malloc_thread_flush();
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc && tc->cap == ((size_t)1 << 20));
    CHECKF(reserved_bytes(tc) == 0 && (size_t)tc->room == tc->cap, "after a flush: %zu reserved, room %td",
           reserved_bytes(tc), tc->room);

    /* First use: the bin of 112-byte blocks reserves its first limit. */
    unsigned c = rp_tc_class_of_block(112);
    size_t cs = rp_tc_class_size(c);
    REQUIRE(cs == 112);
    test_malloc_free(96);
    CHECKF(tc->bins[c].limit == RP_TC_FIRST_LIMIT, "limit %u after one malloc/free", tc->bins[c].limit);
    /* ... and the refill's run of fresh slab blocks counts too (T6) */
    CHECKF((size_t)tc->room == tc->cap - (RP_TC_FIRST_LIMIT + tc->runs[c].left) * cs, "room %td, run %u", tc->room,
           tc->runs[c].left);

    /* Pairs on cached blocks leave the room alone. */
    ptrdiff_t room = tc->room;
    for (int i = 0; i < 1000; i++) {
        void *p = malloc(96);
        REQUIRE(p);
        free(p);
    }
    CHECKF(tc->room == room, "room %td after 1000 pairs, %td before", tc->room, room);

    /* Filling the bin grows it up to its most (doubling), then flushes its older half. */
    static void *ps[600];
    for (int i = 0; i < 600; i++)
        REQUIRE(ps[i] = malloc(96));
    rp_malloc_stats_t a, b;
    REQUIRE(rp_malloc_stats(&a) == 0);
    for (int i = 0; i < 600; i++)
        free(ps[i]);
    REQUIRE(rp_malloc_stats(&b) == 0);
    CHECKF(tc->bins[c].limit == tc->bin_max[c] && tc->bin_max[c] == RP_TC_LIMIT_MAX, "limit %u, most %u",
           tc->bins[c].limit, tc->bin_max[c]);
    CHECK(b.flushes > a.flushes && tc->bins[c].count <= tc->bins[c].limit);
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);

    /* Six bins of 16 KiB-class blocks, each filled to its most (a quarter of the cap): their
     * reservations cannot all stand, so each bin that grows halves the largest others. */
    static void *big[6][64];
    size_t sizes[6] = {12000, 14000, 16000, 20000, 24000, 28000};
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < 64; i++)
            REQUIRE(big[k][i] = malloc(sizes[k]));
        for (int i = 0; i < 64; i++)
            free(big[k][i]);
        unsigned bc = rp_tc_class_of_need(rp_span_block_need(sizes[k]));
        CHECKF(reserved_bytes(tc) <= tc->cap && tc->room >= 0, "reserved %zu, room %td", reserved_bytes(tc),
               tc->room);
        CHECKF((size_t)tc->bins[bc].limit * rp_tc_class_size(bc) >= tc->cap / 8,
               "the bin just filled (%zu-byte blocks) reserves only %u blocks", rp_tc_class_size(bc),
               tc->bins[bc].limit);
        CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
    }
    /* The first of them, the largest reservation when the fifth needed room, gave up half. */
    unsigned first = rp_tc_class_of_need(rp_span_block_need(sizes[0]));
    CHECKF(tc->bins[first].limit < tc->bin_max[first], "limit %u of %u", tc->bins[first].limit, tc->bin_max[first]);
    rp_malloc_thread_flush();
    CHECK(reserved_bytes(tc) == 0 && (size_t)tc->room == tc->cap);
}

/* A bin holds up to RP_TC_LIMIT_MAX (512) blocks of up to 512 bytes at the default cap: a
 * thread that frees 400 blocks of one class in a row (the consumer phase of a
 * producer/consumer pair) keeps them all, with no flush to the transfer caches and back. */
static void test_bins_absorb_swings(void)
{
    test_malloc_free(1);
    rp_malloc_thread_flush();
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc);
    unsigned c = rp_tc_class_of_block(112);
    static void *ps[400];
    for (int i = 0; i < 400; i++)
        REQUIRE(ps[i] = malloc(96));
    rp_malloc_free_collected(tc);
    uint64_t flushes = tc->flushes;
    uint32_t before = tc->bins[c].count;
    REQUIRE(before <= 100); /* the 400 fit below the limit of 512 */
    for (int i = 0; i < 400; i++)
        free(ps[i]);
    rp_malloc_free_collected(tc);
    printf("400 frees of one class: bin %u -> %u blocks (limit %u), %llu flushes\n", before, tc->bins[c].count,
           tc->bins[c].limit, (unsigned long long)(tc->flushes - flushes));
    CHECKF(tc->flushes == flushes && tc->bins[c].count == before + 400, "%llu flushes, %u blocks",
           (unsigned long long)(tc->flushes - flushes), tc->bins[c].count);
    rp_malloc_thread_flush();
}

/* T2's padding: the stretches of the bins at the full limit (4 KiB each) start in distinct
 * L1 sets (address bits 6-11), so that the bins' tops do not evict each other. */
static void test_slot_stretches_apart(void)
{
    test_malloc_free(1);
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc);
    uint64_t sets = 0;
    int full = 0, clashes = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        if (tc->bin_max[c] != RP_TC_LIMIT_MAX)
            continue;
        unsigned set = (unsigned)(((uintptr_t)tc->bins[c].slots >> 6) & 63);
        clashes += (sets >> set) & 1;
        sets |= (uint64_t)1 << set;
        full++;
    }
    printf("%d bins of %u slots, %d share an L1 set with an earlier one\n", full, RP_TC_LIMIT_MAX, clashes);
    CHECK(full >= 16);
    CHECK(clashes == 0);
}

int main(void)
{
    test_bins_reserve_room();
    test_cache_mapped_apart();
    test_full_cache_refills_in_batches();
    test_bins_absorb_swings();
    test_slot_stretches_apart();
    TEST_MAIN_END();
}
