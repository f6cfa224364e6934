/* The free batch of the malloc drop-in (T5 in src/malloc/thread_cache.h), under the default options:
 * free() of a small block outside the thread's near region records the pointer, and the
 * thread examines its recorded frees together when the batch is full, at a cache miss, a
 * direct allocation, realloc, a flush, a stats call and thread exit. What a batch must still
 * do is what free() did at its call: cache the block, report a double or invalid free, count
 * a foreign one, keep errno. A free inside the near region (the region the thread's last
 * refill came from) is examined at its call. Linked statically with the drop-in, white-box
 * (reads the calling thread's rp_tcache; most cases forget the near region, so that the
 * thread's own blocks are collected like other threads' blocks). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "src/slab.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"
#include "testing.h"

/* Called through volatile pointers, so that the compiler cannot pair and drop them. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_realloc)(void *, size_t) = realloc;
static void *(*volatile do_memalign)(size_t, size_t) = memalign;

#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0 /* the sanitizer builds: foreign frees ignored (src/malloc/sanitizers.bzl) */
#endif

static int reports[RP_ERR_KIND_COUNT];
static const void *last_report_address;

static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    reports[r->kind]++;
    last_report_address = r->address;
}

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

/* 1 if p is somewhere in class bin c of tc. */
static int in_bin(const rp_tcache *tc, unsigned c, const void *p)
{
    for (unsigned k = 0; k < tc->bins[c].count; k++)
        if (tc->bins[c].slots[k] == p)
            return 1;
    return 0;
}

static unsigned class_of(const void *p) { return rp_tc_class_of_block(malloc_usable_size((void *)p) + RP_USER_OFFSET); }

/* Forgets tc's near region until its next refill: frees of this thread's own blocks are then
 * collected, as those of blocks from elsewhere are. */
static void forget_near(rp_tcache *tc) { tc->near_len = 0; }

static rp_tcache *fresh_cache(void)
{
    do_free(do_malloc(1)); /* the thread's cache exists */
    rp_malloc_thread_flush();
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc && tc->cap > 0);
    REQUIRE(tc->freed_n == 0);
    return tc;
}

/* A free is recorded, not examined: the block is in no bin until the batch fills up, and
 * then every recorded block is in its bin. */
static void test_frees_are_examined_in_batches(void)
{
    rp_tcache *tc = fresh_cache();
    CHECKF(tc->freed_limit == 32, "default free_batch gives a limit of %u", tc->freed_limit);
    void *p[32];
    for (int i = 0; i < 32; i++)
        REQUIRE(p[i] = do_malloc(100));
    unsigned c = class_of(p[0]);
    forget_near(tc);
    do_free(p[0]);
    CHECK(tc->freed_n == 1 && tc->freed[0] == p[0]);
    CHECK(!in_bin(tc, c, p[0]));
    check_malloc("one free recorded"); /* T5 holds with a recorded free */
    for (int i = 1; i < 31; i++)
        do_free(p[i]);
    CHECK(tc->freed_n == 31);
    do_free(p[31]); /* the 32nd: the batch is examined */
    CHECK(tc->freed_n == 0);
    int all = 1;
    for (int i = 0; i < 32; i++)
        all &= in_bin(tc, c, p[i]);
    CHECK(all);
    /* In call order: the last one freed is on top, and malloc hands it out first. */
    CHECK(rp_tc_top(tc, c) == p[31]);
    CHECK(do_malloc(100) == p[31]);
    check_malloc("after a batch");
}

/* Double and invalid frees of slab pointers are found when their batch is examined: one
 * report each, nothing cached twice, errno kept. A foreign pointer is never collected: it is
 * reported at its call. */
static void test_misuse_is_found_in_the_batch(void)
{
    rp_tcache *tc = fresh_cache();
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);

    char *p = do_malloc(200), *q = do_malloc(300);
    REQUIRE(p && q);
    q[0] = 'x';
    static _Alignas(64) char foreign[256];
    errno = 4242;
    forget_near(tc);
    do_free(p);
    do_free(p);           /* double */
    do_free(q + 32);      /* interior pointer: invalid */
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 0 && reports[RP_ERR_INVALID_FREE] == 0);
    CHECK(tc->freed_n == (tc->slab_len ? 3u : 0u));
    rp_malloc_stats_t s0, s1;
    REQUIRE(rp_malloc_stats(&s0) == 0); /* examines this thread's recorded frees first */
    CHECK(tc->freed_n == 0);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    CHECK(reports[RP_ERR_INVALID_FREE] == 1 && last_report_address == q + 32);
    do_free(foreign + 64); /* not rampart's: reported at once, counted, not collected */
    CHECK(RP_MALLOC_COEXISTS || (reports[RP_ERR_INVALID_FREE] == 2 && last_report_address == foreign + 64));
    CHECK(tc->freed_n == 0);
    REQUIRE(rp_malloc_stats(&s1) == 0);
    CHECK(s1.foreign_frees == s0.foreign_frees + 1);
    CHECK(errno == 4242);
    CHECK(q[0] == 'x');
    check_malloc("after the misuse");
    memset(reports, 0, sizeof reports);

    /* A recorded block passed to realloc: realloc examines first and finds it cached. */
    char *r = do_malloc(120);
    REQUIRE(r);
    forget_near(tc);
    do_free(r);
    CHECK(tc->freed_n == 1);
    errno = 0;
    CHECK(do_realloc(r, 500) == NULL && errno == EINVAL);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    do_free(q);
    rp_set_report_fn(old, old_arg, NULL);
    rp_malloc_thread_flush();
    check_malloc("after realloc of a recorded block");
}

/* A miss in a bin examines the recorded frees before refilling: the block just freed is
 * what malloc returns, without a refill. A direct allocation examines them too. */
static void test_allocation_examines_first(void)
{
    rp_tcache *tc = fresh_cache();
    void *x = do_malloc(700);
    REQUIRE(x);
    unsigned c = class_of(x);
    static void *keep[300];
    int k = 0;
    while (tc->bins[c].count != 0 && k < 300)
        REQUIRE(keep[k++] = do_malloc(700));
    REQUIRE(tc->bins[c].count == 0);
    forget_near(tc);
    do_free(x);
    CHECK(tc->freed_n == 1);
    rp_malloc_stats_t a, b;
    REQUIRE(rp_malloc_stats(&a) == 0); /* (examines: x goes to its bin) */
    CHECK(tc->bins[c].count == 1);
    void *y = do_malloc(700);
    CHECK(y == x);
    /* Again, without the stats call in between: the miss itself examines. */
    REQUIRE(tc->bins[c].count == 0);
    forget_near(tc);
    do_free(y);
    REQUIRE(tc->freed_n == 1);
    void *z = do_malloc(700);
    REQUIRE(rp_malloc_stats(&b) == 0);
    CHECK(z == y);
    CHECK(b.refills == a.refills);
    do_free(z);
    for (int i = 0; i < k; i++)
        do_free(keep[i]);

    /* Requests the cache does not serve (aligned, or beyond its classes) examine first, so
     * what the thread freed can be reused before its heap grows. */
    void *big = do_malloc(500);
    REQUIRE(big);
    forget_near(tc);
    do_free(big);
    REQUIRE(tc->freed_n != 0 || tc->slab_len == 0);
    void *m = do_memalign(4096, 100000);
    CHECK(m != NULL && tc->freed_n == 0);
    do_free(m);
    rp_malloc_thread_flush();
    check_malloc("after the allocations");
}

/* Slab classes (slabs on): a bin miss with fresh blocks in the class's run (T6) takes the
 * run's next block at once, for malloc and for aligned requests; but while frees are
 * collected it examines them first, and the block just freed is what it returns. */
static void test_runs_after_collected_frees(void)
{
    rp_tcache *tc = fresh_cache();
    if (tc->slab_len == 0) {
        printf("slabs off: run cases skipped\n");
        return;
    }
    static void *keep[600];
    int k = 0;
    for (int aligned = 0; aligned <= 1; aligned++) {
        /* 100 bytes: class 6 (stride 112); aligned to 64: class 7 (stride 128). */
        unsigned c = rp_slab_class_of(aligned ? 128 : 112);
        void *x = aligned ? do_memalign(64, 100) : do_malloc(100);
        REQUIRE(x);
        while ((tc->bins[c].count != 0 || tc->runs[c].left < 4) && k < 600)
            REQUIRE(keep[k++] = aligned ? do_memalign(64, 100) : do_malloc(100));
        REQUIRE(tc->bins[c].count == 0 && tc->runs[c].left >= 4);
        char *next = tc->runs[c].next;
        void *y = aligned ? do_memalign(64, 100) : do_malloc(100);
        CHECKF(y == next, "%s: the run's next block %p not taken (got %p)", aligned ? "memalign" : "malloc",
               (void *)next, y);
        forget_near(tc);
        do_free(x);
        REQUIRE(tc->freed_n == 1);
        void *z = aligned ? do_memalign(64, 100) : do_malloc(100);
        CHECKF(z == x && tc->freed_n == 0, "%s: the collected free not reused before the run (%p, freed %p)",
               aligned ? "memalign" : "malloc", z, x);
        CHECK(tc->runs[c].next == next + rp_slab_stride(c));
        do_free(y);
        do_free(z);
    }
    for (int i = 0; i < k; i++)
        do_free(keep[i]);
    rp_malloc_thread_flush();
    check_malloc("after the runs");
}

/* A report function that frees memory while a batch is examined: the rest of the batch is
 * still examined, the blocks freed in the callback are recorded, nothing is lost (the
 * callback's frees must not overwrite the entries not examined yet). */
static void *callback_blocks[3];
static int callback_armed;
static void freeing_report(const rp_report *r, void *arg)
{
    count_report(r, arg);
    if (callback_armed) {
        callback_armed = 0;
        for (int i = 0; i < 3; i++)
            do_free(callback_blocks[i]);
    }
}

static void test_report_function_may_free(void)
{
    rp_tcache *tc = fresh_cache();
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(freeing_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);
    void *a = do_malloc(64), *b[8];
    for (int i = 0; i < 8; i++)
        REQUIRE(b[i] = do_malloc(64));
    REQUIRE(a);
    for (int i = 0; i < 3; i++)
        REQUIRE(callback_blocks[i] = do_malloc(64));
    callback_armed = 1;
    unsigned c = class_of(a);
    forget_near(tc);
    do_free(a);
    do_free(a); /* reported while the batch is examined; the callback frees three blocks */
    for (int i = 0; i < 8; i++)
        do_free(b[i]);
    rp_malloc_free_collected(tc);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    int all = in_bin(tc, c, a);
    for (int i = 0; i < 8; i++)
        all &= in_bin(tc, c, b[i]);
    CHECK(all);
    CHECK(tc->freed_n == 3 && tc->freed[0] == callback_blocks[0] && tc->freed[2] == callback_blocks[2]);
    rp_malloc_free_collected(tc);
    for (int i = 0; i < 3; i++)
        CHECK(in_bin(tc, c, callback_blocks[i]));
    rp_set_report_fn(old, old_arg, NULL);
    rp_malloc_thread_flush();
    check_malloc("after frees from a report function");
}

/* A thread's recorded frees are examined when it exits: a block it freed is free afterwards
 * (freeing it again is a double free), not leaked as allocated. */
static void *exit_block;
static void *free_and_exit(void *arg)
{
    (void)arg;
    do_free(do_malloc(32)); /* this thread's cache */
    do_free(exit_block);    /* the main thread's block: collected */
    REQUIRE(rp_tc_self && rp_tc_self->freed_n >= 1);
    return NULL;
}

static void test_thread_exit_examines(void)
{
    REQUIRE(exit_block = do_malloc(48));
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, free_and_exit, NULL) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);
    do_free(exit_block);
    rp_malloc_free_collected(rp_tc_self);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    rp_set_report_fn(old, old_arg, NULL);
    check_malloc("after the thread exit");
}

/* A size served by slab blocks, and one served by span blocks (with headers): above the slab
 * classes (malloc_slabs.h). */
#define SLAB_SIZE 200
#define SPAN_SIZE 2000

/* The near region: after a refill from the arena's slab pool it is the pool's chunk of the
 * slab space, and a free inside it is examined at its call (the block is in its bin at once, a
 * double free is reported at the second call), while a block another thread's arena took is
 * collected. A refill of batches the thread flushed itself leaves it as it is (one of batches
 * another thread put empties it: transfer_cache_test). */
static void *other_block;
static void *allocate_elsewhere(void *arg)
{
    other_block = do_malloc((size_t)(uintptr_t)arg);
    return NULL;
}

/* Frees p, which must reach the top of its bin at once, then frees it again, which must be
 * reported as a double free at that call (not 31 frees later). */
static void free_twice_at_the_call(rp_tcache *tc, void *p)
{
    do_free(p);
    CHECK(tc->freed_n == 0 && rp_tc_top(tc, class_of(p)) == p);
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);
    do_free(p);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1 && last_report_address == p);
    CHECK(tc->freed_n == 0);
    rp_set_report_fn(old, old_arg, NULL);
}

static void test_near_frees_are_examined_at_the_call(void)
{
    rp_tcache *tc = fresh_cache();
    if (tc->slab_len == 0) {
        printf("slabs off: near-region cases skipped\n");
        return;
    }
    forget_near(tc);
    malloc_trim(0); /* the flushed blocks leave the transfer cache: the refill is the pool's */
    char *p = do_malloc(SLAB_SIZE); /* the bin was flushed: a refill */
    REQUIRE(p);
    CHECKF(tc->near_len == RP_SLAB_CHUNK_BYTES && (uintptr_t)p - tc->near_lo < tc->near_len,
           "near [%#lx, +%zu) misses %p", (unsigned long)tc->near_lo, tc->near_len, (void *)p);
    unsigned c = class_of(p);
    free_twice_at_the_call(tc, p);

    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, allocate_elsewhere, (void *)(uintptr_t)SLAB_SIZE) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    REQUIRE(other_block && rp_heap_of(other_block) != tc->arena);
    /* Collected, unless its slab was one this thread's pool gave back to the space and the
     * other arena took again (slabs given back are reused first): the near region is a range,
     * and decides only when a free is examined. */
    int near = (uintptr_t)other_block - tc->near_lo < tc->near_len;
    do_free(other_block);
    CHECK(near ? tc->freed_n == 0 : tc->freed_n == 1 && tc->freed[0] == other_block);
    rp_malloc_thread_flush();
    check_malloc("after near and far frees");

    /* The flush put p's bin into the transfer cache; the refill takes this thread's own batch
     * back from there. */
    rp_malloc_stats_t before, after;
    REQUIRE(rp_malloc_stats(&before) == 0);
    uintptr_t near_lo = tc->near_lo;
    size_t near_len = tc->near_len;
    REQUIRE(near_len != 0);
    p = do_malloc(SLAB_SIZE);
    REQUIRE(p && rp_malloc_stats(&after) == 0);
    CHECK(after.transfer_takes > before.transfer_takes);
    CHECK(tc->near_lo == near_lo && tc->near_len == near_len && (uintptr_t)p - near_lo < near_len);
    do_free(p);
    CHECK(tc->freed_n == 0 && rp_tc_top(tc, c) == p);
    /* As it is, also when empty: such a refill does not set the region either. */
    rp_malloc_thread_flush();
    forget_near(tc);
    REQUIRE(rp_malloc_stats(&before) == 0);
    p = do_malloc(SLAB_SIZE);
    REQUIRE(p && rp_malloc_stats(&after) == 0);
    CHECK(after.transfer_takes > before.transfer_takes && tc->near_len == 0);
    do_free(p);
    CHECK(tc->freed_n == 1 && tc->freed[0] == p);
    rp_malloc_thread_flush();
    check_malloc("after a refill from the transfer cache");
}

/* Outside the slab space nothing is collected: a span block is examined at its call, whoever
 * carved it and whatever the near region, so a double free is reported at the second call. */
static void test_span_frees_are_examined_at_the_call(void)
{
    rp_tcache *tc = fresh_cache();
    forget_near(tc);
    char *p = do_malloc(SPAN_SIZE);
    REQUIRE(p);
    free_twice_at_the_call(tc, p);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, allocate_elsewhere, (void *)(uintptr_t)SPAN_SIZE) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    REQUIRE(other_block && rp_heap_of(other_block) != tc->arena);
    do_free(other_block);
    CHECK(tc->freed_n == 0 && rp_tc_top(tc, class_of(other_block)) == other_block);
    rp_malloc_thread_flush();
    check_malloc("after span frees");
}

/* The checker names a damaged batch (T5). */
static void test_checker_names_damage(void)
{
    rp_tcache *tc = fresh_cache();
    if (tc->slab_len == 0)
        return;
    char why[256];
    static _Alignas(64) char outside[64];
    void *p = do_malloc(SLAB_SIZE);
    REQUIRE(p);
    forget_near(tc);
    do_free(p);
    REQUIRE(tc->freed_n == 1);
    void *saved = tc->freed[0];
    tc->freed[0] = outside; /* outside the slab space */
    CHECK(rp_malloc_check(why, sizeof why) != 0 && strstr(why, "T5") != NULL);
    tc->freed[0] = (char *)saved + 8; /* not 16-byte aligned */
    CHECK(rp_malloc_check(why, sizeof why) != 0 && strstr(why, "T5") != NULL);
    tc->freed[0] = saved;
    size_t near_len = tc->near_len;
    uintptr_t near_lo = tc->near_lo;
    tc->near_lo = (uintptr_t)saved & ~(uintptr_t)4095; /* a near free left collected */
    tc->near_len = 4096;
    CHECK(rp_malloc_check(why, sizeof why) != 0 && strstr(why, "T5") != NULL && strstr(why, "near") != NULL);
    tc->near_lo = near_lo;
    tc->near_len = near_len;
    uint32_t n = tc->freed_n;
    tc->freed_n = tc->freed_limit;
    CHECK(rp_malloc_check(why, sizeof why) != 0 && strstr(why, "T5") != NULL);
    tc->freed_n = n;
    check_malloc("after the damage was undone");
    rp_malloc_thread_flush();
}

int main(void)
{
    test_frees_are_examined_in_batches();
    test_misuse_is_found_in_the_batch();
    test_allocation_examines_first();
    test_runs_after_collected_frees();
    test_report_function_may_free();
    test_thread_exit_examines();
    test_near_frees_are_examined_at_the_call();
    test_span_frees_are_examined_at_the_call();
    test_checker_names_damage();
    TEST_MAIN_END();
}
