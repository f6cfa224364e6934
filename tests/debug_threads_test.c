/* The debug runtime under threads: several threads allocate and free on a shared heap and on
 * their own, from many call sites (concurrent insertions into the stack depot), free blocks
 * other threads allocated, and run the checker meanwhile. Every heap must check clean and the
 * depot must hold each distinct stack once. Run it under --config=tsan for data races. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "rampart.h"
#include "rampart_debug.h"
#include "testing.h"

#define THREADS 4
#define OPS 20000
#define SLOTS 256

static rp_heap *shared;
static void *exchange[SLOTS]; /* blocks handed between threads (atomic slots) */

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* Distinct call sites, so the threads keep adding stacks to the depot at first. */
#define SITE(n)                                                                                \
    __attribute__((noinline)) void *site_##n(rp_heap *h, size_t size)                          \
    {                                                                                          \
        void *p = rp_alloc(h, size, 0);                                                        \
        KEEP_FRAME();                                                                          \
        return p;                                                                              \
    }
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
static void *(*const sites[8])(rp_heap *, size_t) = {site_0, site_1, site_2, site_3,
                                                     site_4, site_5, site_6, site_7};

static void *worker(void *arg)
{
    test_rng rng = {(unsigned long long)(uintptr_t)arg * 7919 + 1};
    rp_heap *own = rp_heap_create(NULL);
    void *mine[64] = {0};
    int failures = 0;
    for (int i = 0; i < OPS; i++) {
        unsigned op = (unsigned)rng_below(&rng, 10);
        size_t size = (size_t)rng_below(&rng, rng_below(&rng, 8) == 0 ? 100000 : 300);
        void *(*site)(rp_heap *, size_t) = sites[rng_below(&rng, 8)];
        if (op < 4) {
            unsigned k = (unsigned)rng_below(&rng, 64);
            rp_free(mine[k]);
            mine[k] = site(own, size);
            if (mine[k])
                memset(mine[k], 0x5a, size);
        } else if (op < 8) {
            void *p = site(shared, size);
            if (p)
                memset(p, 0x33, size);
            void *old = __atomic_exchange_n(&exchange[rng_below(&rng, SLOTS)], p, __ATOMIC_ACQ_REL);
            rp_free(old); /* often allocated by another thread */
        } else if (op == 8) {
            unsigned k = (unsigned)rng_below(&rng, 64);
            void *q = rp_realloc(own, mine[k], size);
            if (q || size == 0)
                mine[k] = q ? q : mine[k];
        } else if (i % 997 == 0) {
            char why[256];
            failures += rp_heap_check(shared, why, sizeof why) != 0;
        }
    }
    char why[256];
    failures += rp_heap_check(own, why, sizeof why) != 0;
    for (int k = 0; k < 64; k++)
        rp_free(mine[k]);
    rp_heap_destroy(own);
    return (void *)(uintptr_t)failures;
}

int main(void)
{
    shared = rp_heap_create(NULL);
    REQUIRE(shared);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(i + 1)) == 0);
    uintptr_t failures = 0;
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        failures += (uintptr_t)rc;
    }
    CHECK(failures == 0);
    CHECK_HEAP(shared);
    char why[256];
    CHECKF(rp_depot_check(why, sizeof why) == 0, "%s", why);
    for (int i = 0; i < SLOTS; i++)
        rp_free(exchange[i]);
    rp_quarantine_flush(shared);
    struct rp_heap_stats st;
    rp_heap_stats(shared, &st);
    CHECK(st.blocks_in_use == 0);
    CHECK_HEAP(shared);
    rp_heap_destroy(shared);
    TEST_MAIN_END();
}
