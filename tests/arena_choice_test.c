/* Arena choice (src/malloc/arena.h): a new thread's cache takes the arena fewest thread caches
 * use, an existing one before one not yet created. Threads that replace one another (a worker
 * per round, as mimalloc-bench's mstress runs them) stay on one arena beside the main thread's,
 * instead of taking the main thread's arena every other round; threads that run together
 * spread over every arena; a thread's exit gives its arena back, and so does a thread a forked
 * child does not have. Run under the default options
 * and with four arenas. Linked statically, white-box. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "src/heap.h"
#include "src/malloc/arena.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/transfer_cache.h"
#include "testing.h"

#define MAX_THREADS 16

#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif
#ifndef TSAN_BUILD
#define TSAN_BUILD 0
#endif

/* Index of the arena p came from, or -1. */
static int arena_index(const void *p)
{
    rp_heap *h = rp_ms_heap_of(p);
    for (unsigned i = 0; h && i < RP_MAX_ARENAS; i++)
        if (rp_arena_get(i) == h)
            return (int)i;
    return -1;
}

typedef struct worker {
    pthread_barrier_t *all_allocated; /* NULL: a worker alone */
    int arena;
} worker;

static void *worker_body(void *arg)
{
    worker *w = arg;
    void *p = calloc(1, 100); /* written: gcc takes a const pointer argument for a read */
    REQUIRE(p);
    w->arena = arena_index(p);
    if (w->all_allocated) /* every worker holds its cache until all have taken one */
        pthread_barrier_wait(w->all_allocated);
    free(p);
    return NULL;
}

static unsigned threads_of(unsigned i)
{
    rp_heap *h = rp_arena_get(i);
    return h ? __atomic_load_n(&rp_xfer_of(h)->threads, __ATOMIC_RELAXED) : 0;
}

/* Workers one after another: each takes the arena the previous one left, never the main
 * thread's. */
static void replaced_workers(int main_arena)
{
    int first = -1;
    for (int round = 0; round < 6; round++) {
        worker w = {NULL, -2};
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, worker_body, &w) == 0);
        REQUIRE(pthread_join(t, NULL) == 0);
        if (round == 0)
            first = w.arena;
        CHECKF(w.arena >= 0 && w.arena != main_arena && w.arena == first,
               "round %d: worker on arena %d (main thread's %d, first worker's %d)", round, w.arena, main_arena,
               first);
    }
    printf("workers one after another: arena %d each (main thread's %d)\n", first, main_arena);
}

/* n workers at once: no arena gets a second thread before each has one (the main thread
 * counts for its arena). */
static void concurrent_workers(unsigned n, unsigned narenas, int main_arena)
{
    pthread_barrier_t barrier;
    REQUIRE(pthread_barrier_init(&barrier, NULL, n) == 0);
    worker w[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    for (unsigned i = 0; i < n; i++) {
        w[i] = (worker){&barrier, -2};
        REQUIRE(pthread_create(&t[i], NULL, worker_body, &w[i]) == 0);
    }
    for (unsigned i = 0; i < n; i++)
        REQUIRE(pthread_join(t[i], NULL) == 0);
    pthread_barrier_destroy(&barrier);
    unsigned per_arena[RP_MAX_ARENAS] = {0};
    per_arena[main_arena]++;
    for (unsigned i = 0; i < n; i++) {
        REQUIRE(w[i].arena >= 0 && (unsigned)w[i].arena < narenas);
        per_arena[w[i].arena]++;
    }
    unsigned lo = UINT32_MAX, hi = 0;
    printf("%u workers at once over %u arenas:", n, narenas);
    for (unsigned i = 0; i < narenas; i++) {
        printf(" %u", per_arena[i]);
        lo = per_arena[i] < lo ? per_arena[i] : lo;
        hi = per_arena[i] > hi ? per_arena[i] : hi;
    }
    printf(" (with the main thread)\n");
    CHECKF(hi - lo <= 1, "threads spread unevenly: %u and %u on two arenas", lo, hi);
}

static pthread_barrier_t forked;

static void *hold_until_forked(void *arg)
{
    worker *w = arg;
    void *p = calloc(1, 100);
    REQUIRE(p);
    w->arena = arena_index(p);
    pthread_barrier_wait(&forked); /* its cache is counted */
    pthread_barrier_wait(&forked); /* the parent has forked */
    free(p);
    return NULL;
}

/* A child forked while another thread runs has only the forking thread: the other thread's
 * arena no longer counts it, and the child's next thread takes that arena. */
static void forked_child(unsigned narenas, int main_arena)
{
    REQUIRE(pthread_barrier_init(&forked, NULL, 2) == 0);
    worker held = {NULL, -2};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, hold_until_forked, &held) == 0);
    pthread_barrier_wait(&forked);
    CHECK(held.arena >= 0 && held.arena != main_arena && threads_of((unsigned)held.arena) == 1);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int bad = 0;
        for (unsigned i = 0; i < narenas; i++)
            if (threads_of(i) != (i == (unsigned)main_arena)) {
                fprintf(stderr, "child: arena %u counts %u threads\n", i, threads_of(i));
                bad = 1;
            }
        worker w = {NULL, held.arena};
#if !TSAN_BUILD /* ThreadSanitizer does not start threads after a multi-threaded fork */
        pthread_t c;
        if (pthread_create(&c, NULL, worker_body, &w) != 0 || pthread_join(c, NULL) != 0)
            _exit(2);
#endif
        if (w.arena != held.arena) {
            fprintf(stderr, "child: a new thread took arena %d, not %d\n", w.arena, held.arena);
            bad = 1;
        }
        _exit(bad);
    }
    pthread_barrier_wait(&forked);
    REQUIRE(pthread_join(t, NULL) == 0);
    pthread_barrier_destroy(&forked);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status %#x", status);
    printf("forked child (exit status %d): the other thread's arena counts none, its new thread takes it\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
    void *mine = calloc(1, 100);
    REQUIRE(mine);
    int main_arena = arena_index(mine);
    unsigned narenas = rp_arena_count();
    REQUIRE(main_arena >= 0 && narenas >= 2);
    CHECK(threads_of((unsigned)main_arena) == 1);

    replaced_workers(main_arena);
    /* Every worker's exit gave its arena back. */
    for (unsigned i = 0; i < narenas; i++)
        CHECKF(threads_of(i) == (i == (unsigned)main_arena), "arena %u counts %u threads", i, threads_of(i));

    unsigned n = 2 * narenas + 1 < MAX_THREADS ? 2 * narenas + 1 : MAX_THREADS;
    concurrent_workers(n, narenas, main_arena);
    for (unsigned i = 0; i < narenas; i++)
        CHECKF(threads_of(i) == (i == (unsigned)main_arena), "arena %u counts %u threads", i, threads_of(i));
    replaced_workers(main_arena);
    forked_child(narenas, main_arena);
    free(mine);
    TEST_MAIN_END();
}
