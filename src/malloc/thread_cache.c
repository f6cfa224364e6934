#define _GNU_SOURCE
#include "thread_cache.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "arena.h"
#include "malloc_totals.h"
#include "src/batch.h"
#include "src/header_snapshot.h"
#include "src/options.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/report.h"
#include "src/secret.h"
#include "src/tier.h"
#include "src/xorshift.h"
#include "free_batch.h"
#include "guard_pool.h"
#include "guarded_memory.h"
#include "malloc_init.h"
#include "malloc_slabs.h"
#include "transfer_cache.h"

__thread rp_tcache *rp_tc_self __attribute__((tls_model("initial-exec")));

/* Per-thread set-up state: a thread with no cache either has not allocated yet (NONE), is
 * creating its cache right now (BUSY: allocations made meanwhile, e.g. by
 * pthread_setspecific, go straight to the heap) or has torn it down at exit (DEAD). */
enum { TC_NONE = 0, TC_BUSY = 1, TC_DEAD = 2 };
static __thread unsigned char tc_state __attribute__((tls_model("initial-exec")));

static size_t cache_cap;   /* written once by rp_tc_setup, before `ready` is published */
static uint32_t free_batch_limit = 1; /* every cache's freed_limit (T5) */
static int hardened;                  /* option hardened (hardened.h) */
static pthread_key_t exit_key;

static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_tcache *all_caches;            /* under caches_lock */
static uint64_t retired_refills, retired_flushes; /* of torn-down caches; under caches_lock */
static rp_tc_counts retired_counts;               /* of torn-down caches; under caches_lock */
static uint64_t caches_made;                      /* under caches_lock: numbers the clocks */
/* Mappings of caches whose threads exited, kept for the threads that start next: a program
 * that runs a thread per task would otherwise map one and unmap it per thread. All caches
 * have the same size (the cap is fixed at set-up). Under caches_lock. */
#define RP_TC_SPARES 8
static rp_tcache *spare_caches[RP_TC_SPARES];
static unsigned spare_count;

static void tc_thread_exit(void *arg);

int rp_tc_setup(void)
{
#ifdef RAMPART_DEBUG
    cache_cap = 0; /* every free reaches the debug runtime (poisoning, quarantine) */
#else
    cache_cap = rp_options_get()->cache_bytes;
#endif
    /* Frees are collected only where they are cached (T5): a cache with cap 0, and so the
     * debug flavour, examines each free at its call. */
    unsigned batch = rp_options_get()->free_batch;
    free_batch_limit = cache_cap == 0 || batch <= 1 ? 1 : batch > RP_TC_FREED_MAX ? RP_TC_FREED_MAX : batch;
#ifndef RAMPART_DEBUG
    /* The hardened profile wipes and quarantines each free at its call (hardened.h). */
    hardened = cache_cap != 0 && rp_hardened_on();
    if (hardened) {
        free_batch_limit = 1;
        rp_guard_writes = rp_guard_heap_writes = 1; /* guarded_memory.h */
    }
#endif
    /* Guarded blocks (guard_pool.h), both flavours; their writes are checked too. */
    if (rp_gp_setup() == 0 && rp_gp_on)
        rp_guard_writes = 1;
    return pthread_key_create(&exit_key, tc_thread_exit) == 0 ? 0 : -1;
}

size_t rp_tc_cap(void) { return cache_cap; }


/* Most blocks a bin of blocks of `bytes` bytes holds: a quarter of the cap's worth, within
 * [1, max]; 0 when one block exceeds the cap. */
static uint32_t bin_limit(size_t bytes, size_t cap, uint32_t max)
{
    if (bytes > cap)
        return 0;
    size_t n = cap / (4 * bytes); /* set-up only: a division is fine here */
    return n == 0 ? 1 : n > max ? max : (uint32_t)n;
}

static void tc_unlink_locked(rp_tcache *tc)
{
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        all_caches = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    tc->next = tc->prev = NULL;
}

static rp_tcache *tc_create(void)
{
    rp_heap *arena = rp_arena_for_thread();
    if (!arena)
        return NULL;
    uint16_t maxes[RP_TC_CLASSES];
    size_t slots = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        maxes[c] = (uint16_t)bin_limit(rp_tc_class_size(c), cache_cap, RP_TC_LIMIT_MAX);
        slots += maxes[c] + RP_TC_SLOT_PAD;
    }
    /* Mapped on its own (zeroed), not carved from the arena: the slot store (240 KiB at the
     * default cap) is written only as far as the bins fill, so a thread that caches little
     * faults in a few pages of it, and the arena's first huge page is left whole for spans. */
    size_t map_bytes = rp_align_up(sizeof(rp_tcache) + slots * sizeof(void *), RP_OS_PAGE);
    rp_tcache *tc = NULL;
    pthread_mutex_lock(&caches_lock);
    if (spare_count)
        tc = spare_caches[--spare_count];
    pthread_mutex_unlock(&caches_lock);
    if (tc) {
        /* The slot store keeps the old thread's pointers: every bin starts empty (T2, T3)
         * and no slot at or past a bin's count is ever read. */
        memset(tc, 0, sizeof *tc);
    } else {
        tc = rp_os_map(map_bytes);
        if (!tc) {
            rp_arena_thread_left(arena);
            return NULL;
        }
    }
    tc->map_bytes = map_bytes;
    tc->block_key = *rp_arena_key();
    tc->cap = cache_cap;
    tc->room = (ptrdiff_t)cache_cap;
    tc->arena = arena; /* counted by rp_arena_for_thread */
    tc->freed_limit = free_batch_limit;
    tc->hardened = hardened;
    tc->hq_rng = rp_secret_new((uint64_t)(uintptr_t)tc) | 1;
    tc->slab_len = rp_ms_len();
    tc->slab_lo = rp_ms_space.base;
    tc->slab_meta = rp_ms_space.meta;
    tc->slab_bits = rp_ms_space.bits;
    tc->slab_marks = rp_ms_space.marks;
    tc->slot_count = slots;
    /* T2: the bins' stretches of slot_store, one after the other in class order, a line
     * apart. Every limit starts at 0 (nothing reserved, T3): a bin reserves room when it is
     * first used. */
    void **next_slot = tc->slot_store;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        tc->bins[c].slots = next_slot;
        tc->bin_max[c] = maxes[c];
        next_slot += maxes[c] + RP_TC_SLOT_PAD;
    }
    for (unsigned i = 0; i < RP_TC_PAGE_BINS; i++)
        tc->pbins[i].limit = bin_limit(rp_tc_page_bin_bytes(i), tc->cap, RP_TC_PAGE_SLOTS);
    pthread_mutex_lock(&caches_lock);
    rp_prof_clock_start(&tc->clock, caches_made++);
    /* Every allocation takes the out-of-line path: to be sealed (seal.h), or perhaps guarded
     * (guard_pool.h: sampled by a countdown there). */
    if (hardened || rp_gp_on)
        rp_prof_clock_every(&tc->clock);
    tc->guard_countdown = 1;
    tc->next = all_caches;
    if (all_caches)
        all_caches->prev = tc;
    all_caches = tc;
    pthread_mutex_unlock(&caches_lock);
    return tc;
}

rp_tcache *rp_tc_get_slow(void)
{
    rp_tcache *tc = rp_tc_self;
    if (tc)
        return tc;
    if (tc_state != TC_NONE || !rp_malloc_init())
        return NULL;
    tc_state = TC_BUSY;
    tc = tc_create();
    /* Registering the destructor may allocate (pthread keys beyond the first 32): still
     * BUSY, so that allocation goes to the heap directly. */
    if (tc && pthread_setspecific(exit_key, tc) != 0) {
        pthread_mutex_lock(&caches_lock);
        tc_unlink_locked(tc);
        pthread_mutex_unlock(&caches_lock);
        rp_os_unmap(tc, tc->map_bytes);
        tc = NULL;
    }
    rp_tc_self = tc;
    tc_state = TC_NONE;
    return tc;
}

/* ---- flushing ---------------------------------------------------------------------------- */

/* Frees blocks (live blocks of any heaps) with one rp_free_batch per heap. */
static void release_blocks(void **ptrs, size_t n)
{
    while (n) {
        rp_heap *h = rp_pagemap_lookup(ptrs[0])->heap;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (rp_pagemap_lookup(ptrs[i])->heap == h) {
                void *t = ptrs[i];
                ptrs[i] = ptrs[k];
                ptrs[k++] = t;
            }
        }
        rp_free_batch(h, ptrs, k);
        ptrs += k;
        n -= k;
    }
}

/* The heap a block that may sit in a class bin belongs to (for a slab block, the arena whose
 * pool holds its slab), and in *slab whether it is a slab block. */
static rp_heap *block_owner(const void *p, int *slab)
{
    *slab = rp_ms_contains(p);
    return *slab ? rp_ms_owner(rp_slab_of(&rp_ms_space, p)) : rp_pagemap_lookup(p)->heap;
}

/* Gives one live slab block that is in no cache (no cache mark) back to its pool. */
static void free_slab_uncached(void *p)
{
    rp_ms_give_back(rp_ms_owner(rp_slab_of(&rp_ms_space, p)), &p, 1);
}

/* Returns blocks flushed from class bin c (their cache marks still set) to their arenas: each
 * arena's share goes to its transfer cache, in batches, as far as it has room; the rest (and
 * blocks of any other heap) have their marks cleared and are freed, one rp_free_batch per
 * heap (slab blocks: one rp_ms_give_back per arena). */
static void release_flushed(const rp_tcache *tc, unsigned c, void **ptrs, size_t n)
{
    while (n) {
        int slab, its_slab;
        rp_heap *h = block_owner(ptrs[0], &slab);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (block_owner(ptrs[i], &its_slab) != h || its_slab != slab)
                continue;
            void *t = ptrs[i];
            ptrs[i] = ptrs[k];
            ptrs[k++] = t;
        }
        rp_xfer *x = rp_xfer_of(h);
        size_t kept = x ? rp_xfer_put(x, c, ptrs, k, tc, h == tc->arena) : 0;
        for (size_t i = kept; i < k; i++)
            rp_cache_mark_clear(rp_tc_mark_of(tc, ptrs[i])); /* T4: no longer cached */
        if (kept < k) {
            if (slab)
                rp_ms_give_back(h, ptrs + kept, k - kept);
            else
                rp_free_batch(h, ptrs + kept, k - kept);
        }
        ptrs += k;
        n -= k;
    }
}

#define FLUSH_CHUNK 128 /* blocks a flush moves at a time */

/* Takes the oldest blocks of bin c (all but the `keep` on top) out of it and returns them to
 * their arenas (release_flushed). */
static void flush_tail(rp_tcache *tc, unsigned c, uint32_t keep)
{
    rp_tc_bin *bin = &tc->bins[c];
    if (bin->count <= keep)
        return;
    __atomic_store_n(&tc->flushes, tc->flushes + 1, __ATOMIC_RELAXED);
    /* In chunks, so that free()'s slow path keeps a small stack frame. Each chunk leaves the
     * bin consistent before its blocks go (release_flushed may report, and a report
     * callback may free into this bin). */
    while (bin->count > keep) {
        void *ptrs[FLUSH_CHUNK];
        uint32_t n = bin->count - keep < FLUSH_CHUNK ? bin->count - keep : FLUSH_CHUNK;
        memcpy(ptrs, bin->slots, n * sizeof(void *));
        memmove(bin->slots, bin->slots + n, (bin->count - n) * sizeof(void *));
        __atomic_store_n(&bin->count, bin->count - n, __ATOMIC_RELAXED); /* the room stays reserved (T3) */
        release_flushed(tc, c, ptrs, n);
    }
}

/* Takes the oldest blocks (all but the `keep` on top) out of page bin i, clears their
 * flags and returns them to their heaps. */
static void flush_pages(rp_tcache *tc, unsigned i, uint32_t keep)
{
    rp_tc_pbin *pb = &tc->pbins[i];
    if (pb->count <= keep)
        return;
    uint32_t n = pb->count - keep;
    void *ptrs[RP_TC_PAGE_SLOTS];
    for (uint32_t k = 0; k < n; k++) {
        rp_page *d = pb->slot[k].d;
        __atomic_store_n(&d->flags, (uint8_t)(d->flags & ~RP_PAGEF_CACHED), __ATOMIC_RELAXED); /* T4 */
        ptrs[k] = pb->slot[k].p;
    }
    for (uint32_t k = 0; k < keep; k++)
        pb->slot[k] = pb->slot[n + k];
    __atomic_store_n(&pb->count, keep, __ATOMIC_RELAXED);
    __atomic_store_n(&tc->room, tc->room + (ptrdiff_t)(n * rp_tc_page_bin_bytes(i)), __ATOMIC_RELAXED);
    __atomic_store_n(&tc->flushes, tc->flushes + 1, __ATOMIC_RELAXED);
    release_blocks(ptrs, n);
}

/* Files class bin c, whose reservation goes from `from` to `to` bytes, under its new level
 * (T3). */
static void level_move(rp_tcache *tc, unsigned c, size_t from, size_t to)
{
    uint64_t bit = (uint64_t)1 << (c & 63);
    if (from) {
        unsigned k = rp_fls(from);
        tc->by_level[k][c >> 6] &= ~bit;
        if (!rp_tc_level_lists_any(tc, k))
            tc->level_mask &= ~(1u << k);
    }
    if (to) {
        unsigned k = rp_fls(to);
        tc->by_level[k][c >> 6] |= bit;
        tc->level_mask |= 1u << k;
    }
}

/* Sets class bin c's limit (at most bin_max[c]); the room follows (T3). A bin holding more
 * than a lower limit is flushed down to half of it first, so that what goes to the transfer
 * cache is a batch worth taking back (a bin one block over its new limit would send a batch
 * of one, and a refill would fetch it alone). */
static void set_limit(rp_tcache *tc, unsigned c, uint32_t limit)
{
    rp_tc_bin *bin = &tc->bins[c];
    if (bin->count > limit)
        flush_tail(tc, c, limit / 2);
    size_t cs = rp_tc_class_size(c);
    ptrdiff_t freed = ((ptrdiff_t)bin->limit - (ptrdiff_t)limit) * (ptrdiff_t)cs;
    level_move(tc, c, (size_t)bin->limit * cs, (size_t)limit * cs);
    bin->limit = limit;
    __atomic_store_n(&tc->room, tc->room + freed, __ATOMIC_RELAXED);
}

/* Gives the blocks of run c (T6) back to the arena's pool; their bytes to the room (T3). */
static void flush_run(rp_tcache *tc, unsigned c)
{
    rp_tc_run *run = &tc->runs[c];
    if (run->left == 0)
        return;
    void *ptrs[RP_TC_BATCH_MAX + 1];
    size_t n = run->left, stride = rp_slab_stride(c);
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = run->next + i * stride;
        rp_cache_mark_clear(rp_tc_mark_of(tc, ptrs[i])); /* T4: no longer cached */
    }
    run->left = 0;
    run->next = NULL;
    __atomic_store_n(&tc->room, tc->room + (ptrdiff_t)(n * rp_tc_class_size(c)), __ATOMIC_RELAXED);
    rp_ms_give_back(tc->arena, ptrs, n);
}

void rp_tc_flush_all(rp_tcache *tc)
{
    rp_malloc_free_collected(tc);
    rp_hq_drain(tc); /* before the bins go: quarantined blocks leave into them */
    for (unsigned c = 0; c < RP_TC_CLASSES; c++)
        set_limit(tc, c, 0);
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++)
        flush_run(tc, c);
    for (unsigned i = 0; i < RP_TC_PAGE_BINS; i++)
        flush_pages(tc, i, 0);
}

/* The class bin with the largest reservation, `except` aside (RP_TC_CLASSES: none has one):
 * the largest among the bins of the highest level that lists any but `except` (T3), usually a
 * few bins, not all of them. */
static unsigned largest_class_bin(const rp_tcache *tc, unsigned except)
{
    for (uint32_t mask = tc->level_mask; mask; mask &= ~(1u << rp_fls(mask))) {
        const uint64_t *level = tc->by_level[rp_fls(mask)];
        unsigned best = RP_TC_CLASSES;
        size_t best_bytes = 0;
        for (unsigned w = 0; w < sizeof tc->by_level[0] / sizeof tc->by_level[0][0]; w++)
            for (uint64_t bins = level[w]; bins; bins &= bins - 1) {
                unsigned c = 64 * w + (unsigned)__builtin_ctzll(bins);
                size_t b = (size_t)tc->bins[c].limit * rp_tc_class_size(c);
                if (c != except && b > best_bytes) {
                    best = c;
                    best_bytes = b;
                }
            }
        if (best < RP_TC_CLASSES)
            return best;
    }
    return RP_TC_CLASSES;
}

/* Halves what counts most against the cap (T3), class bin `except` aside: the largest class
 * bin reservation (its blocks above the new limit flushed) or the fullest page bin. 0 when
 * nothing is left to halve. */
static int halve_largest(rp_tcache *tc, unsigned except)
{
    unsigned best = largest_class_bin(tc, except), best_is_page = 0;
    size_t best_bytes = best < RP_TC_CLASSES ? (size_t)tc->bins[best].limit * rp_tc_class_size(best) : 0;
    for (unsigned i = 0; i < RP_TC_PAGE_BINS; i++) {
        size_t b = (size_t)tc->pbins[i].count * rp_tc_page_bin_bytes(i);
        if (b > best_bytes) {
            best_bytes = b;
            best = i;
            best_is_page = 1;
        }
    }
    if (best_bytes == 0)
        return 0;
    if (best_is_page)
        flush_pages(tc, best, tc->pbins[best].count / 2);
    else
        set_limit(tc, best, tc->bins[best].limit / 2);
    return 1;
}

/* Makes room for `bytes` more under the cap, at the expense of every class bin but `except`
 * (RP_TC_CLASSES: none spared): halves the largest a few times at most. 1 if they fit now. */
static int make_room(rp_tcache *tc, size_t bytes, unsigned except)
{
    for (int round = 0; round < 8 && tc->room < (ptrdiff_t)bytes; round++)
        if (!halve_largest(tc, except))
            break;
    return tc->room >= (ptrdiff_t)bytes;
}

/* How many more blocks of cs bytes the room could reserve (a slow-path division). */
static size_t room_for_blocks(const rp_tcache *tc, size_t cs) { return tc->room > 0 ? (size_t)tc->room / cs : 0; }

/* The limit class bin c grows to when it is full or misses: double (RP_TC_FIRST_LIMIT for a
 * bin not used yet), at most bin_max[c]. So a bin's reservation follows how far its count
 * swings, and a program that touches many classes a little does not reserve the cap. */
static uint32_t grown_limit(const rp_tcache *tc, unsigned c)
{
    uint32_t max = tc->bin_max[c], limit = tc->bins[c].limit;
    uint32_t want = limit ? 2 * limit : RP_TC_FIRST_LIMIT;
    return want < max ? want : max;
}

/* Raises class bin c's limit towards grown_limit, as far as the room allows after making
 * room from the other bins. */
static void grow_limit(rp_tcache *tc, unsigned c)
{
    uint32_t limit = tc->bins[c].limit, want = grown_limit(tc, c);
    if (want <= limit)
        return;
    size_t cs = rp_tc_class_size(c);
    int saved = errno; /* flushing may trim a heap, which may set it */
    make_room(tc, (want - limit) * cs, c);
    errno = saved;
    size_t fits = room_for_blocks(tc, cs);
    if (fits < want - limit)
        want = limit + (uint32_t)fits;
    if (want > limit)
        set_limit(tc, c, want);
}

static void push_slow(rp_tcache *tc, void *p, uint8_t *mark, unsigned c);

void rp_tc_push_slow(rp_tcache *tc, void *p, uint8_t *mark, unsigned c)
{
    /* free() must leave errno alone; heap trimming on the way may set it. */
    int saved = errno;
    push_slow(tc, p, mark, c);
    errno = saved;
}

void *rp_tc_unmark_span(void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    rp_cache_mark_clear(rp_cache_mark_in(r, p)); /* a cached span block's region keeps marks (T4) */
    return p;
}

/* The bin is full: it grows if it may, else its older half is flushed. A bin that can
 * reserve no room at all (limit 0) sends p back to its heap. */
static void push_slow(rp_tcache *tc, void *p, uint8_t *mark, unsigned c)
{
    rp_tc_bin *bin = &tc->bins[c];
    grow_limit(tc, c);
    if (bin->count >= bin->limit)
        flush_tail(tc, c, bin->count / 2);
    if (bin->count >= bin->limit) {
        /* rp_free called from here: the debug runtime's stacks expect no frame in between */
        if (rp_ms_contains(p))
            free_slab_uncached(p);
        else
            rp_free(p);
        return;
    }
    rp_tc_push_bin(tc, bin, p, mark);
}

int rp_tc_page_push_slow(rp_tcache *tc, void *p, rp_page *d)
{
    unsigned i = d->npages - 1;
    size_t bytes = rp_tc_page_bin_bytes(i);
    rp_tc_pbin *pb = &tc->pbins[i];
    if (pb->limit == 0 || bytes > tc->cap)
        return 0;
    int saved = errno; /* free() keeps errno; trimming the heap may set it */
    if (pb->count >= pb->limit)
        flush_pages(tc, i, pb->count / 2);
    int room = make_room(tc, bytes, RP_TC_CLASSES) && pb->count < pb->limit;
    errno = saved;
    return room ? rp_tc_page_push_fast(tc, p, d) : 0;
}

/* The slab refill of class bin c (slabs on, c < RP_SLAB_CLASSES, run c empty) with a batch
 * of n + 1: blocks the pool handed out before go into the bin like a span refill's; when it
 * has none, fresh blocks become run c (T6), as many as the room allows. Returns the block to
 * hand out now, or NULL when the slab space is used up. */
static void flush_run(rp_tcache *tc, unsigned c);

/* The hardened profile hands a refill's blocks out in a random order (hardened.h): blocks[0..n)
 * shuffled (Fisher-Yates), all but the first pushed into bin c, the first returned. */
static void *spread_in_bin(rp_tcache *tc, unsigned c, void **blocks, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(((rp_xorshift_next(&tc->hq_rng) >> 32) * i) >> 32);
        void *t = blocks[i - 1];
        blocks[i - 1] = blocks[j];
        blocks[j] = t;
    }
    for (size_t i = 1; i < n; i++)
        rp_tc_push(tc, blocks[i], c);
    return blocks[0];
}

static void *refill_from_slabs(rp_tcache *tc, unsigned c, size_t n)
{
    size_t cs = rp_tc_class_size(c);
    /* A run the request could not take (not aligned enough) goes back before a new one. */
    flush_run(tc, c);
    int saved = errno; /* making room flushes, which may trim a heap */
    make_room(tc, n * cs, c);
    errno = saved;
    size_t fits = room_for_blocks(tc, cs);
    size_t run_max = (fits < n ? fits : n) + 1; /* the first block is handed out at once */
    void *blocks[RP_TC_BATCH_MAX + 1], *first = NULL;
    size_t run_n;
    uintptr_t chunk_lo;
    size_t got = rp_ms_refill(tc->arena, c, blocks, n + 1, run_max, &first, &run_n, &chunk_lo);
    if (got == 0 && run_n == 0)
        return NULL;
    __atomic_store_n(&tc->refills, tc->refills + 1, __ATOMIC_RELAXED);
    /* The near region (thread_cache.h): the arena's chunk of slabs, which only its pool takes
     * slabs from, so that frees of blocks this thread most likely took itself are examined
     * at their call. */
    if (chunk_lo) {
        tc->near_lo = chunk_lo;
        tc->near_len = RP_SLAB_CHUNK_BYTES;
    }
    if (tc->hardened) { /* fresh blocks too, instead of a run (T6) */
        if (!got) {
            for (size_t i = 0; i < run_n; i++)
                blocks[i] = (char *)first + i * rp_slab_stride(c);
            got = run_n;
        }
        return spread_in_bin(tc, c, blocks, got);
    }
    if (got) {
        /* Push the rest so that the lowest address comes out next. */
        for (size_t i = got; i-- > 1;)
            rp_tc_push(tc, blocks[i], c);
        return blocks[0];
    }
    rp_tc_run *run = &tc->runs[c];
    if (run_n > 1) {
        size_t stride = rp_slab_stride(c);
        run->next = (char *)first + stride;
        run->left = (uint32_t)(run_n - 1);
        for (size_t i = 1; i < run_n; i++) /* T4: held by the run until handed out */
            rp_cache_mark_set(rp_tc_mark_of(tc, (char *)first + i * stride));
        __atomic_store_n(&tc->room, tc->room - (ptrdiff_t)((run_n - 1) * cs), __ATOMIC_RELAXED);
    }
    return first;
}

void *rp_tc_refill(rp_tcache *tc, unsigned c, size_t size, size_t align)
{
    /* Fresh slab blocks first (T6): every block of a run is as aligned as its first. */
    if (rp_tc_run_ready(tc, c, align))
        return rp_tc_run_take(tc, c);
    rp_tc_bin *bin = &tc->bins[c];
    size_t cs = rp_tc_class_size(c);
    /* A class whose blocks, at this alignment, the heap would serve from the page tier is not
     * refilled in batches. */
    if (rp_wants_pages(tc->arena, cs - RP_USER_OFFSET - RP_HOOK_SUFFIX, align))
        return rp_alloc(tc->arena, size, align);
    /* A miss grows the bin (making room from the other bins if it must: otherwise a cache
     * whose room went to some classes, a consumer's with the classes it frees, would serve
     * every miss in the others by a direct allocation under the heap lock); the batch is
     * half the bin. */
    grow_limit(tc, c);
    size_t n = bin->limit / 2;
    if (n > RP_TC_BATCH_MAX)
        n = RP_TC_BATCH_MAX;
    if (n > (size_t)(bin->limit - bin->count))
        n = bin->limit - bin->count;
    /* A batch that other threads flushed back to this thread's arena: O(1), no heap lock,
     * and no block's memory read. Any block of the class fits a request of the minimum
     * alignment. */
    rp_xfer *x = rp_xfer_of(tc->arena);
    if (x && bin->count == 0 && align <= RP_MIN_ALIGN) {
        /* Batches up to half the bin's limit under one lock: a flush leaves a full bin half
         * full, and a refill that leaves it half full too puts the bin as far from its next
         * refill as from its next flush. With one batch (a quarter of a full bin) a thread
         * that mostly allocates what another frees (producer/consumer) refilled twice per
         * batch pair the other flushed, each time taking the lock both threads use. A batch
         * larger than the bin's limit is taken if the room covers the difference (the limit
         * then grows to it). */
        size_t most = bin->limit + room_for_blocks(tc, cs);
        if (most > tc->bin_max[c])
            most = tc->bin_max[c];
        size_t want = bin->limit / 2 ? bin->limit / 2 : 1;
        int from_others;
        size_t got = rp_xfer_take(x, c, want, most, bin->slots, tc, &from_others);
        if (got) {
            if (got > bin->limit)
                set_limit(tc, c, (uint32_t)got);
            if (from_others)
                tc->near_len = 0; /* blocks other threads freed: no near region (thread_cache.h) */
            __atomic_store_n(&bin->count, (uint32_t)got, __ATOMIC_RELAXED);
            __atomic_store_n(&tc->refills, tc->refills + 1, __ATOMIC_RELAXED);
            return rp_tc_pop(tc, c);
        }
    }
    if (n == 0)
        return rp_alloc(tc->arena, size, align);
    /* Slab blocks, where the class's stride keeps them aligned (from slab memory 64 KiB
     * aligned); span blocks when slabs are off or their space is used up. */
    if (tc->slab_len && c < RP_SLAB_CLASSES && (rp_slab_stride(c) & (align - 1)) == 0) {
        void *p = refill_from_slabs(tc, c, n);
        if (p)
            return p;
    }
    void *blocks[RP_TC_BATCH_MAX + 1];
    int saved = errno;
    size_t got = rp_alloc_batch(tc->arena, cs - RP_USER_OFFSET - RP_HOOK_SUFFIX, align, blocks, n + 1);
    if (got == 0)
        return NULL;
    errno = saved; /* a short batch still serves this request */
    __atomic_store_n(&tc->refills, tc->refills + 1, __ATOMIC_RELAXED);
    /* Push the rest so that the lowest address comes out next; a block of a region that
     * keeps no cache marks (the OS refused them) cannot be cached and goes back. */
    for (size_t i = got; i-- > 1;) {
        uint8_t *mark = rp_tc_mark_of(tc, blocks[i]);
        if (RP_LIKELY(mark != NULL))
            rp_tc_push_bin(tc, &tc->bins[c], blocks[i], mark);
        else
            rp_free(blocks[i]);
    }
    errno = saved;
    return blocks[0];
}

/* ---- thread exit, totals, fork ------------------------------------------------------------ */

/* Adds tc's counts to c (tc may be another thread's: a snapshot). */
static void add_counts(rp_tc_counts *c, const rp_tcache *tc)
{
    c->allocs += __atomic_load_n(&tc->allocs, __ATOMIC_RELAXED);
    c->misses += __atomic_load_n(&tc->misses, __ATOMIC_RELAXED);
    c->frees += __atomic_load_n(&tc->frees, __ATOMIC_RELAXED);
    c->bytes += rp_prof_clock_bytes(&tc->clock);
}

/* A cache leaving the list (thread exit, or another thread's in a forked child): its
 * counters go to the retired totals. caches_lock held. */
static void retire_locked(const rp_tcache *tc)
{
    retired_refills += tc->refills;
    retired_flushes += tc->flushes;
    add_counts(&retired_counts, tc);
}

static void tc_thread_exit(void *arg)
{
    rp_tcache *tc = arg;
    rp_tc_self = NULL;
    tc_state = TC_DEAD;
    rp_tc_flush_all(tc);
    rp_arena_thread_left(tc->arena);
    pthread_mutex_lock(&caches_lock);
    tc_unlink_locked(tc);
    retire_locked(tc);
    if (spare_count < RP_TC_SPARES) {
        spare_caches[spare_count++] = tc;
        tc = NULL;
    }
    pthread_mutex_unlock(&caches_lock);
    if (tc)
        rp_os_unmap(tc, tc->map_bytes);
}

void rp_tc_counts_sum(rp_tc_counts *out)
{
    pthread_mutex_lock(&caches_lock);
    *out = retired_counts;
    for (rp_tcache *tc = all_caches; tc; tc = tc->next)
        add_counts(out, tc);
    pthread_mutex_unlock(&caches_lock);
}

void rp_tc_totals(size_t *caches, size_t *bytes, uint64_t *refills, uint64_t *flushes)
{
    size_t n = 0, by = 0;
    uint64_t rf, fl;
    pthread_mutex_lock(&caches_lock);
    rf = retired_refills;
    fl = retired_flushes;
    for (rp_tcache *tc = all_caches; tc; tc = tc->next) {
        n++;
        /* What the caches hold (the room counts what the class bins reserve). */
        for (unsigned c = 0; c < RP_TC_CLASSES; c++)
            by += (size_t)__atomic_load_n(&tc->bins[c].count, __ATOMIC_RELAXED) * rp_tc_class_size(c);
        for (unsigned i = 0; i < RP_TC_PAGE_BINS; i++)
            by += (size_t)__atomic_load_n(&tc->pbins[i].count, __ATOMIC_RELAXED) * rp_tc_page_bin_bytes(i);
        rf += __atomic_load_n(&tc->refills, __ATOMIC_RELAXED);
        fl += __atomic_load_n(&tc->flushes, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&caches_lock);
    *caches = n;
    *bytes = by;
    *refills = rf;
    *flushes = fl;
}

void rp_tc_fork_prepare(void) { pthread_mutex_lock(&caches_lock); }
void rp_tc_fork_parent(void) { pthread_mutex_unlock(&caches_lock); }

void rp_tc_fork_child(void)
{
    pthread_mutex_init(&caches_lock, NULL);
    rp_tcache *self = rp_tc_self;
    for (rp_tcache *tc = all_caches; tc; tc = tc->next)
        if (tc != self) {
            retire_locked(tc);
            rp_arena_thread_left(tc->arena); /* its thread does not exist here */
        }
    all_caches = self;
    if (self)
        self->next = self->prev = NULL;
}
