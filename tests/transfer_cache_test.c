/* Transfer caches (src/malloc/transfer_cache.h): blocks one thread allocates and another frees come
 * back to the allocating thread's arena as whole batches, and its next allocations take them
 * from there without touching the heap, several batches per refill (up to half the bin), which
 * empties the thread's near region; their blocks still count as cached (a double free
 * is reported), rp_malloc_check verifies X1..X3 and names damage, malloc_trim gives them
 * back. Linked statically with the drop-in, white-box. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/heap.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"
#include "src/malloc/transfer_cache.h"
#include "testing.h"

#define N 3000
#define SIZE 100

static void *blocks[N];
static size_t sizes[N]; /* block sizes, read while the blocks are live */

static void *free_all(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    return NULL; /* the thread's cache goes back at exit */
}

static int reports[RP_ERR_KIND_COUNT];
static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    reports[r->kind]++;
}

/* 1 if blocks[i] has its cache mark set, i.e. sits in some cache or transfer batch. */
static int marked(int i)
{
    const uint8_t *mark = rp_cache_mark(blocks[i]);
    return mark && rp_cache_marked(mark);
}

static void check_malloc(const char *what)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", what, why);
}

/* Blocks the arena has handed out so far: its heap's allocations and its slab pool's blocks. */
static uint64_t blocks_from_arena(rp_heap *arena)
{
    rp_heap_stats_t st;
    uint64_t taken, given;
    rp_heap_stats(arena, &st);
    rp_ms_counts(arena, &taken, &given);
    return st.alloc_calls + taken;
}

int main(void)
{
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(SIZE);
        REQUIRE(blocks[i]);
        sizes[i] = malloc_usable_size(blocks[i]) + RP_USER_OFFSET; /* its class's size */
    }
    printf("slabs %s\n", rp_ms_on() ? "on" : "off");
    rp_heap *arena = rp_ms_heap_of(blocks[0]);
    REQUIRE(arena && rp_xfer_of(arena));
    rp_malloc_stats_t st0, st1, st2;
    REQUIRE(rp_malloc_stats(&st0) == 0);

    /* Another thread frees them all: its bin overflows and it exits. */
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, free_all, NULL) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    REQUIRE(rp_malloc_stats(&st1) == 0);
    printf("after the other thread: transfer %zu bytes, batches in %llu; flushes %llu -> %llu\n", st1.transfer_bytes,
           (unsigned long long)st1.transfer_puts, (unsigned long long)st0.flushes, (unsigned long long)st1.flushes);
    CHECK(st1.transfer_puts > st0.transfer_puts);
    CHECK(st1.transfer_bytes > 0 && st1.transfer_bytes <= rp_xfer_of(arena)->cap);
    check_malloc("after the cross-thread frees");

    /* A block waiting in a transfer batch is cached: freeing it again is a double free. */
    int in_batch = -1;
    for (int i = 0; i < N && in_batch < 0; i++)
        if (marked(i))
            in_batch = i;
    REQUIRE(in_batch >= 0);
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    free(blocks[in_batch]);
    rp_malloc_free_collected(rp_tc_self); /* the free is examined now, not in a later batch */
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    rp_set_report_fn(old, old_arg, NULL);
    check_malloc("after the double free");

    /* Damage is named: a batch whose count disagrees with the bytes counted (X3), a slot that
     * holds no cached block (X1), the bytes miscounted (X3). */
    rp_xfer *x = rp_xfer_of(arena);
    int damaged = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES && !damaged; c++) {
        if (x->n[c]) {
            char why[256];
            uint8_t count = x->count[c][0];
            x->count[c][0] = count < RP_XFER_BATCH ? count + 1 : count - 1;
            CHECK(rp_malloc_check(why, sizeof why) != 0 && strncmp(why, "X3", 2) == 0);
            x->count[c][0] = RP_XFER_BATCH + 1;
            CHECK(rp_malloc_check(why, sizeof why) != 0 && strncmp(why, "X2", 2) == 0);
            x->count[c][0] = count;
            void *saved = x->store[c][0][0];
            x->store[c][0][0] = (char *)saved + 16;
            CHECK(rp_malloc_check(why, sizeof why) != 0 && strncmp(why, "X1", 2) == 0);
            x->store[c][0][0] = saved;
            x->bytes += 16;
            CHECK(rp_malloc_check(why, sizeof why) != 0 && strncmp(why, "X3", 2) == 0);
            x->bytes -= 16;
            damaged = 1;
        }
    }
    CHECK(damaged);
    check_malloc("after the damage was put back");

    /* This thread allocates again: batches come back from its arena's transfer cache, the
     * heap hands out far fewer blocks than were asked for, and the old blocks are reused. */
    uint64_t h0 = blocks_from_arena(arena);
    void *again[N];
    int reused = 0;
    /* The first refill (once this thread's bin, at its full limit of 256 blocks since the
     * first loop, runs empty) takes batches up to half that limit under one lock: at least
     * two of 64 while the transfer cache holds them. */
    uint64_t first_refill_takes = 0;
    int refilled = 0;
    size_t waiting = st1.transfer_bytes / sizes[0];
    for (int i = 0; i < N; i++) {
        rp_malloc_stats_t before, after;
        if (!refilled)
            REQUIRE(rp_malloc_stats(&before) == 0);
        again[i] = malloc(SIZE);
        REQUIRE(again[i]);
        if (!refilled) {
            REQUIRE(rp_malloc_stats(&after) == 0);
            if (after.refills != before.refills) {
                refilled = 1;
                first_refill_takes = after.transfer_takes - before.transfer_takes;
                /* Blocks other threads freed: the near region is emptied, so this thread's
                 * frees of its arena's blocks are collected (thread_cache.h). */
                CHECK(rp_tc_self->near_len == 0);
            }
        }
        CHECK(!rp_cache_marked(rp_cache_mark(again[i]))); /* handed out: no longer marked */
        for (int j = 0; j < N; j++)
            if (again[i] == blocks[j]) {
                reused++;
                break;
            }
    }
    uint64_t h1 = blocks_from_arena(arena);
    REQUIRE(rp_malloc_stats(&st2) == 0);
    printf("reallocating %d blocks: %llu came from the heap, %d reused, batches out %llu\n", N,
           (unsigned long long)(h1 - h0), reused,
           (unsigned long long)(st2.transfer_takes - st1.transfer_takes));
    CHECK(st2.transfer_takes > st1.transfer_takes);
    printf("first refill: %llu batches taken (%zu blocks were waiting)\n", (unsigned long long)first_refill_takes,
           waiting);
    CHECK(refilled);
    /* The last refills took blocks from the arena: slab refills make the chunk they came from
     * near; span blocks have no near region (their frees are examined at the call). */
    CHECK(h1 > h0 && rp_tc_self->near_len == (rp_ms_on() ? RP_SLAB_CHUNK_BYTES : 0));
    CHECK(waiting >= 2 * RP_XFER_BATCH && first_refill_takes >= 2);
    /* Every block that waited in the transfer cache was served without the heap. */
    CHECK(h1 - h0 <= N - st1.transfer_bytes / sizes[0]);
    CHECK(reused > N / 2);
    check_malloc("after the reallocation");
    for (int i = 0; i < N; i++)
        free(again[i]);

    /* malloc_trim gives every batch back to its heap. */
    rp_malloc_thread_flush();
    malloc_trim(0);
    REQUIRE(rp_malloc_stats(&st2) == 0);
    CHECK(st2.transfer_bytes == 0);
    check_malloc("after malloc_trim");

    /* Own batches: a thread that frees what it allocated overflows its bins into its own
     * arena's transfer cache, which keeps at most own_cap of them (X3); the rest goes back to
     * the heap. 2.2 MB freed, more than a thread cache and the own cap together. */
    enum { OWN_N = 20000 };
    static void *own[OWN_N];
    for (int i = 0; i < OWN_N; i++) {
        own[i] = malloc(SIZE);
        REQUIRE(own[i]);
    }
    for (int i = 0; i < OWN_N; i++)
        free(own[i]);
    printf("own batches: %zu bytes held, %zu of them own, own cap %zu, cap %zu\n", x->bytes, x->own_bytes,
           x->own_cap, x->cap);
    CHECK(x->own_cap > 0 && x->own_cap < x->cap);
    CHECK(x->own_bytes > 0 && x->own_bytes == x->bytes && x->bytes <= x->own_cap);
    check_malloc("after own batches");
    rp_malloc_thread_flush();
    malloc_trim(0);
    CHECK(x->bytes == 0 && x->own_bytes == 0);
    TEST_MAIN_END();
}
