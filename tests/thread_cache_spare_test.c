/* Thread caches left by exited threads are kept for the threads that start next
 * (src/malloc/thread_cache.c, spare caches): a reused cache starts empty although its slot
 * store still holds the old thread's pointers. Waves of threads, more at once than the spares
 * kept, then one thread at a time: each fills its bins across the size classes, checks its
 * cache and the arenas (rp_malloc_check) with blocks cached, frees blocks another thread
 * allocated, and exits with blocks still in its cache. Every block's contents are verified.
 * Runs with the shipped defaults and, in a second target, hardened. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rampart_malloc.h"
#include "testing.h"

#define WAVE 12
#define SEQUENTIAL 40
#define BLOCKS 300
#define WORKER_ALLOCS (BLOCKS + BLOCKS / 2) /* mallocs per worker */

static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *handoff[BLOCKS]; /* blocks a thread leaves for the next one to free */
static size_t handoff_size[BLOCKS];

static size_t size_of(unsigned seed, unsigned i)
{
    static const size_t sizes[] = {8, 16, 24, 48, 64, 100, 128, 200, 256, 512, 777, 1024, 2048, 4000, 8192, 20000};
    return sizes[(seed * 7 + i * 13) % (sizeof sizes / sizeof sizes[0])];
}

static int intact(const unsigned char *p, size_t n, unsigned char tag)
{
    for (size_t k = 0; k < n; k++)
        if (p[k] != tag)
            return 0;
    return 1;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    unsigned char *mine[BLOCKS];
    size_t sizes[BLOCKS];
    unsigned char tag = (unsigned char)(seed | 1);
    for (unsigned i = 0; i < BLOCKS; i++) {
        sizes[i] = size_of(seed, i);
        mine[i] = malloc(sizes[i]);
        REQUIRE(mine[i] != NULL);
        memset(mine[i], tag, sizes[i]);
    }
    /* Half back into the cache's bins, then a check with blocks cached. */
    for (unsigned i = 0; i < BLOCKS; i += 2) {
        CHECK(intact(mine[i], sizes[i], tag));
        free(mine[i]);
        mine[i] = NULL;
    }
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "thread %u: %s", seed, why);
    /* Blocks from the cache's bins again: each must be a fresh, usable block. */
    for (unsigned i = 0; i < BLOCKS; i += 2) {
        mine[i] = malloc(sizes[i]);
        REQUIRE(mine[i] != NULL);
        memset(mine[i], tag, sizes[i]);
    }
    /* Free what the previous thread left, leave some of ours. */
    pthread_mutex_lock(&handoff_lock);
    for (unsigned i = 0; i < BLOCKS; i++) {
        if (handoff[i]) {
            CHECK(intact(handoff[i], handoff_size[i], handoff[i][0]));
            free(handoff[i]);
        }
        handoff[i] = NULL;
    }
    for (unsigned i = 0; i < BLOCKS; i += 3) {
        handoff[i] = mine[i];
        handoff_size[i] = sizes[i];
        mine[i] = NULL;
    }
    pthread_mutex_unlock(&handoff_lock);
    for (unsigned i = 0; i < BLOCKS; i++)
        if (mine[i]) {
            CHECK(intact(mine[i], sizes[i], tag));
            free(mine[i]);
        }
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "thread %u at exit: %s", seed, why);
    return NULL;
}

int main(void)
{
    unsigned seed = 1;
    for (int round = 0; round < 3; round++) {
        pthread_t t[WAVE];
        for (int i = 0; i < WAVE; i++)
            REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)seed++) == 0);
        for (int i = 0; i < WAVE; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < SEQUENTIAL; i++) {
            /* The totals sum the live caches' counts and those of exited threads: a reused
             * cache must start its counts at zero, or its old thread is counted twice. */
            rp_malloc_totals_t before, after;
            REQUIRE(rp_malloc_totals(&before, sizeof before) == 0);
            pthread_t one;
            REQUIRE(pthread_create(&one, NULL, worker, (void *)(uintptr_t)seed++) == 0);
            pthread_join(one, NULL);
            REQUIRE(rp_malloc_totals(&after, sizeof after) == 0);
            uint64_t allocs = after.allocs - before.allocs, frees = after.frees - before.frees;
            /* The worker's own calls, and a few by the thread library. */
            CHECKF(allocs >= WORKER_ALLOCS && allocs <= WORKER_ALLOCS + 16, "thread %u: %llu allocations counted for %u",
                   seed - 1, (unsigned long long)allocs, WORKER_ALLOCS);
            CHECKF(frees >= BLOCKS && frees <= 2 * BLOCKS + 16, "thread %u: %llu frees counted", seed - 1,
                   (unsigned long long)frees);
        }
    }
    for (unsigned i = 0; i < BLOCKS; i++)
        free(handoff[i]);
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "main: %s", why);
    TEST_MAIN_END();
}
