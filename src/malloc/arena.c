#define _GNU_SOURCE
#include "arena.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "malloc_slabs.h"
#include "src/options.h"
#include "src/header_mac.h"
#include "transfer_cache.h"

static rp_heap *arenas[RP_MAX_ARENAS]; /* A1: atomic, set once */
/* Their transfer caches (transfer_cache.h); memory the OS gives on first touch. */
static rp_xfer arena_xfers[RP_MAX_ARENAS];
/* Their slab pools (malloc_slabs.h), under the arenas' heap locks. */
static rp_slab_pool arena_pools[RP_MAX_ARENAS];
static unsigned narenas = 1;
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;

/* One block-check key for every arena (A3), so free() can validate a block header without
 * first loading the block's heap. In the library's data, never in a region or a block. */
static rp_mac_key arena_key;

/* CPUs this process may run on; sched_getaffinity needs no allocation. */
static unsigned usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? (unsigned)n : 1;
}

/* Each arena's transfer cache holds up to four thread caches' worth; while the arena is the
 * own arena of one thread, a quarter of one in batches that thread puts (transfer_cache.h:
 * own batches). None in the debug flavour, where nothing is cached. */
static size_t transfer_cap(void)
{
#ifdef RAMPART_DEBUG
    return 0;
#else
    return 4 * rp_options_get()->cache_bytes;
#endif
}

/* Creates arena i with arenas_lock held. */
static rp_heap *arena_create_locked(unsigned i)
{
    rp_heap *h = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE);
    if (h)
        return h;
    char name[24];
    snprintf(name, sizeof name, "malloc-%u", i);
    rp_heap_config cfg = {0};
    cfg.name = name;
    /* 0 in a heap config means the default (32 MiB); the option's 0 means none kept, which
     * one byte gives (the limit counts whole pages). */
    cfg.retain_bytes = rp_options_get()->retain_bytes ? rp_options_get()->retain_bytes : 1;
    cfg.purge_delay_ms = rp_options_get()->purge_delay_ms;
    /* The default (0 here) adapts to the program's frees (mapped_block.h). */
    size_t mapped = rp_options_get()->mapped_block_bytes;
    if (mapped != RP_DEFAULT_MAPPED_BLOCK)
        cfg.mapped_block_bytes = mapped == 0 ? SIZE_MAX : mapped < RP_HUGE_PAGE_BYTES ? RP_HUGE_PAGE_BYTES : mapped;
    /* Most of what a program allocates is small blocks carved from fresh spans: one fault per
     * 2 MiB instead of one per 4 KiB. */
    if (rp_options_get()->huge_pages)
        cfg.flags |= RP_HEAP_HUGE_PAGES | RP_HEAP_HUGE_PAGES_LATE;
    /* Most programs, and most threads, allocate little: an arena's first region is smaller
     * than a huge page, so it is not advised and the first mallocs fault in the 4 KiB pages
     * they touch, not a whole 2 MiB page the kernel may first have to compact memory for
     * (docs/BENCHMARKS.md, "Huge pages"). Nor are the next ones until the arena holds 4 MiB
     * of regions (RP_HEAP_HUGE_PAGES_LATE): a program of a few MiB pays a huge page for most
     * of its heap otherwise. */
    cfg.region_bytes = RP_ARENA_FIRST_REGION;
    h = rp_heap_create(&cfg);
    if (!h)
        return NULL;
    /* Before publication (A1) and before the heap has written any header or region. */
    h->key = arena_key;
    h->flags |= RP_HEAP_MALLOC_ARENA;
    rp_xfer_init(&arena_xfers[i], transfer_cap(), transfer_cap() / 16);
    h->malloc_state = &arena_xfers[i];
    rp_ms_arena_init(h, &arena_pools[i]);
    __atomic_store_n(&arenas[i], h, __ATOMIC_RELEASE);
    return h;
}

rp_heap *rp_arenas_setup(void)
{
    static int counted; /* narenas, the key and the slab space are set once */
    pthread_mutex_lock(&arenas_lock);
    if (!counted) {
        counted = 1;
        const rp_options *o = rp_options_get();
        /* One per CPU: threads on different CPUs rarely share an arena's lock, and every
         * arena keeps memory of its own (free pages, a transfer cache, slabs), which four
         * per CPU multiplied for programs of many threads (docs/BENCHMARKS.md). */
        unsigned cpus = usable_cpus();
        unsigned n = o->arenas ? o->arenas : cpus < 2 ? 2 : cpus;
        narenas = n > RP_MAX_ARENAS ? RP_MAX_ARENAS : n;
        arena_key = rp_mac_key_new((uint64_t)(uintptr_t)&arena_key);
        /* Before the first arena, which gets a pool only if the space exists. Without it
         * (debug flavour, cache_bytes=0, the OS refusing) small blocks are span blocks. */
        (void)rp_ms_setup();
    }
    rp_heap *first = arena_create_locked(0);
    pthread_mutex_unlock(&arenas_lock);
    return first;
}

rp_heap *rp_arena_fallback(void)
{
    rp_heap *h = __atomic_load_n(&arenas[0], __ATOMIC_ACQUIRE);
    return h ? h : rp_default_heap();
}

/* The arena with the fewest live thread caches, an existing one before one not yet created,
 * the lowest index among equals. A program that replaces its threads (a worker per round, a
 * pool that shrinks and grows) keeps them on the arenas that already hold its memory: handed
 * round-robin, two short-lived threads in turn took arena 0, where the main thread was, and
 * arena 1, whose free pages then stood idle while arena 0 mapped more (docs/BENCHMARKS.md,
 * "Arena choice"). Thread creation only: the scan is at most RP_MAX_ARENAS loads. */
static unsigned least_loaded_locked(void)
{
    unsigned best = 0, best_threads = UINT32_MAX;
    int best_exists = 0;
    for (unsigned i = 0; i < narenas; i++) {
        int exists = __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE) != NULL;
        unsigned threads = exists ? __atomic_load_n(&arena_xfers[i].threads, __ATOMIC_RELAXED) : 0;
        if (threads < best_threads || (threads == best_threads && exists && !best_exists)) {
            best = i;
            best_threads = threads;
            best_exists = exists;
        }
    }
    return best;
}

rp_heap *rp_arena_for_thread(void)
{
    pthread_mutex_lock(&arenas_lock);
    rp_heap *h = arena_create_locked(least_loaded_locked());
    if (!h)
        h = rp_arena_fallback();
    /* Counted under the lock, so threads starting together spread over the arenas. */
    if (h && rp_xfer_of(h))
        rp_xfer_thread(rp_xfer_of(h), 1);
    pthread_mutex_unlock(&arenas_lock);
    return h;
}

void rp_arena_thread_left(rp_heap *h)
{
    if (h && rp_xfer_of(h))
        rp_xfer_thread(rp_xfer_of(h), -1);
}

rp_heap *rp_arena_get(unsigned i)
{
    return i < RP_MAX_ARENAS ? __atomic_load_n(&arenas[i], __ATOMIC_ACQUIRE) : NULL;
}

unsigned rp_arena_count(void) { return narenas; }

const rp_mac_key *rp_arena_key(void) { return &arena_key; }

void rp_arena_fork_prepare(void) { pthread_mutex_lock(&arenas_lock); }

void rp_arena_fork_parent(void) { pthread_mutex_unlock(&arenas_lock); }

void rp_arena_fork_child(void) { pthread_mutex_init(&arenas_lock, NULL); }
