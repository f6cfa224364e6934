/* Threaded stress through the malloc API (the drop-in linked in statically): 8 threads at a
 * time allocate, fill, verify and free blocks of many sizes and alignments; a third of the
 * blocks are handed to other threads through a shared exchange and freed there; threads exit
 * after a few thousand operations and are replaced (their caches must go back); in the
 * middle, the main thread forks while the workers run, and the child allocates, frees and
 * checks the heaps. At the end every arena passes rp_heap_check, only the main thread's
 * cache is left, and the arenas hold no more than before the run. Meant to run under
 * --config=tsan too. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "testing.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define THREADS 8
#define GENERATIONS 4
#define OPS_PER_THREAD 6000
#define LOCAL_MAX 128
#define EXCHANGE_SLOTS 512

typedef struct block {
    unsigned char *p;
    size_t size;
    uint32_t seed;
} block;

/* Blocks in transit between threads. */
static struct {
    pthread_mutex_t lock;
    block slot[EXCHANGE_SLOTS];
    int n;
} exchange = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};

static int failures; /* atomic */

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Every 61st byte and the last one hold seed + offset. */
static void fill(const block *b)
{
    for (size_t i = 0; i < b->size; i += 61)
        b->p[i] = (unsigned char)(b->seed + i);
    if (b->size)
        b->p[b->size - 1] = (unsigned char)(b->seed + b->size - 1);
}

static int intact(const block *b)
{
    for (size_t i = 0; i < b->size; i += 61)
        if (b->p[i] != (unsigned char)(b->seed + i))
            return 0;
    return b->size == 0 || b->p[b->size - 1] == (unsigned char)(b->seed + b->size - 1);
}

static void release(block *b)
{
    if (!intact(b)) {
        __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "block %p (%zu bytes) was overwritten\n", (void *)b->p, b->size);
    }
    free(b->p);
    b->p = NULL;
}

/* Sizes from every path: small classes, large classes, page bins, big page-tier blocks. */
static size_t pick_size(uint32_t *s)
{
    uint32_t r = next_rand(s);
    switch (r % 16) {
    case 0:
        return r >> 20;                 /* 0 .. 4095 */
    case 1:
        return 4096 * (1 + (r >> 8) % 16); /* whole pages */
    case 2:
        return (r >> 12) % 200000;      /* up to ~200 KB */
    default:
        return 1 + (r >> 8) % 300;      /* small */
    }
}

static void *worker(void *arg)
{
    uint32_t s = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
    block local[LOCAL_MAX];
    int n = 0;
    for (int op = 0; op < OPS_PER_THREAD; op++) {
        uint32_t r = next_rand(&s);
        if (n < LOCAL_MAX && (r % 3 != 0 || n == 0)) {
            block b = {NULL, pick_size(&s), next_rand(&s)};
            if (r % 11 == 0) {
                size_t align = (size_t)16 << (r >> 8) % 10;
                if (posix_memalign((void **)&b.p, align, b.size) != 0 || ((uintptr_t)b.p & (align - 1)))
                    __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
            } else if (r % 13 == 0) {
                b.p = calloc(1, b.size);
                for (size_t i = 0; b.p && i < b.size; i += 97)
                    if (b.p[i])
                        __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
            } else {
                b.p = malloc(b.size);
            }
            if (!b.p) {
                __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
                continue;
            }
            fill(&b);
            local[n++] = b;
        } else if (r % 7 == 0) {
            /* realloc keeps the common prefix */
            block *b = &local[r % n];
            size_t keep = b->size;
            block nb = {NULL, pick_size(&s), b->seed};
            nb.p = realloc(b->p, nb.size);
            if (!nb.p && nb.size) {
                __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
                continue;
            }
            block prefix = {nb.p, keep < nb.size ? keep : nb.size, b->seed};
            for (size_t i = 0; i < prefix.size; i += 61)
                if (prefix.p[i] != (unsigned char)(prefix.seed + i))
                    __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
            *b = nb;
            fill(b);
        } else {
            int k = (int)(r % (uint32_t)n);
            block b = local[k];
            local[k] = local[--n];
            if (r % 3 == 1) {
                /* Hand it over: another thread frees it. */
                pthread_mutex_lock(&exchange.lock);
                int handed = exchange.n < EXCHANGE_SLOTS;
                if (handed)
                    exchange.slot[exchange.n++] = b;
                pthread_mutex_unlock(&exchange.lock);
                if (handed)
                    continue;
            }
            release(&b);
        }
        if (r % 5 == 0) {
            /* Free something another thread allocated. */
            block b = {NULL, 0, 0};
            pthread_mutex_lock(&exchange.lock);
            if (exchange.n)
                b = exchange.slot[--exchange.n];
            pthread_mutex_unlock(&exchange.lock);
            if (b.p)
                release(&b);
        }
    }
    /* Exit with some blocks still in the exchange and the cache full: both must come back. */
    while (n)
        release(&local[--n]);
    return NULL;
}

/* In the child of a fork taken while the workers run: the allocator works, its heaps are
 * consistent, and only this thread's cache is left. */
static int child_checks(void)
{
    /* A deadlock in the child fails the test (SIGALRM) instead of hanging it. */
    alarm(120);
    /* The exchange is the test's own: a worker may have held its lock, or been half-way
     * through an update, when the fork happened, and that thread does not exist here. The
     * child starts from an empty exchange (the blocks in it stay allocated: the child
     * exits soon). */
    pthread_mutex_init(&exchange.lock, NULL);
    exchange.n = 0;
    char why[256];
    void *p[1000];
    for (int i = 0; i < 1000; i++) {
        p[i] = malloc((size_t)(i % 50) * 40 + 1);
        if (!p[i])
            return 10;
        memset(p[i], 1, (size_t)(i % 50) * 40 + 1);
    }
    for (int i = 0; i < 1000; i++)
        free(p[i]);
    rp_malloc_stats_t st;
    if (rp_malloc_stats(&st) != 0 || st.thread_caches != 1)
        return 11;
    if (rp_malloc_check(why, sizeof why) != 0) {
        fprintf(stderr, "child: %s\n", why);
        return 12;
    }
#ifndef UNDER_TSAN /* ThreadSanitizer does not support threads after a multi-threaded fork */
    /* A thread in the child gets a cache of its own. */
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)99) != 0 || pthread_join(t, NULL) != 0)
        return 13;
#endif
    if (rp_malloc_check(why, sizeof why) != 0) {
        fprintf(stderr, "child after thread: %s\n", why);
        return 14;
    }
    return 0;
}

int main(void)
{
    test_malloc_free(1); /* the main thread's cache exists from here on */
    rp_malloc_thread_flush();
    rp_malloc_stats_t before;
    REQUIRE(rp_malloc_stats(&before) == 0);

    pthread_t th[THREADS];
    int forked = 0;
    for (int g = 0; g < GENERATIONS; g++) {
        for (int i = 0; i < THREADS; i++)
            REQUIRE(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(g * THREADS + i + 1)) == 0);
        if (g == GENERATIONS / 2 && !forked) {
            /* Fork while the workers are allocating. */
            usleep(2000);
            pid_t pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0)
                _exit(child_checks());
            int status = 0;
            REQUIRE(waitpid(pid, &status, 0) == pid);
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
            forked = 1;
        }
        for (int i = 0; i < THREADS; i++)
            REQUIRE(pthread_join(th[i], NULL) == 0);
    }
    CHECK(forked);
    while (exchange.n)
        release(&exchange.slot[--exchange.n]);
    CHECK(__atomic_load_n(&failures, __ATOMIC_RELAXED) == 0);

    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
    rp_malloc_thread_flush();
    rp_malloc_stats_t after;
    REQUIRE(rp_malloc_stats(&after) == 0);
    /* Every exited thread's cache went back: only main's is left, and it is empty. */
    CHECKF(after.thread_caches == 1, "%zu caches left", after.thread_caches);
    CHECK(after.cached_bytes == 0);
    CHECK(after.arenas > 1);
    CHECK(after.flushes > before.flushes && after.refills > before.refills);
    /* Cross-thread frees came back to their arenas through the transfer caches. */
    CHECK(after.transfer_puts > before.transfer_puts);
    /* Nothing leaked: once malloc_trim has given the transfer caches back, the arenas hold
     * what they held before (stdio's buffers and the like, allocated by this thread before
     * the run, are the only live blocks). */
    malloc_trim(0);
    REQUIRE(rp_malloc_stats(&after) == 0);
    CHECK(after.transfer_bytes == 0);
    CHECKF(after.bytes_in_use <= before.bytes_in_use + 4096, "in use before %zu, after %zu", before.bytes_in_use,
           after.bytes_in_use);
    TEST_MAIN_END();
}
