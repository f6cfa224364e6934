/* Per-thread caches of the malloc drop-in: free blocks kept in front of the arenas, so that
 * a malloc/free pair normally takes no lock.
 *
 * To the core a cached block is an ordinary live block of its heap (walks, rp_heap_check
 * and the heap counters see it as allocated): the cache only remembers it. A block enters a
 * cache when a thread frees it (whichever thread allocated it, from whichever arena) or in a
 * refill batch (rp_alloc_batch: one lock for many blocks); it leaves when malloc hands it out
 * or in a flush (one batch per arena to its transfer cache, transfer_cache.h, or
 * rp_free_batch: one lock per heap). Cross-thread frees therefore need no protocol: the
 * freeing thread caches the block and, on flush, returns it to its own arena.
 *
 * Two kinds of bins, both arrays of pointers kept in the cache itself, so that neither
 * malloc nor free follows a pointer stored in a freed block (a write after free cannot steer
 * malloc, and a block freed on one CPU and reused on another is not read on the way):
 *   class bins (bins[c]): span blocks by size class (size_class.h), a stack of pointers
 *     (slots[0 .. count-1], the last one freed on top) in the bin's own stretch of the
 *     cache's slot array. A cached block is marked in metadata apart from it (its cache mark,
 *     cache_mark.h): free() reads the mark to tell that a block is held by a cache already
 *     (a double free, whichever thread cached it, or a block a cache took and never handed
 *     out), sets it, and malloc clears it. Nothing is read from or written into a cached
 *     block's memory, so nothing a program writes after a free can change what the cache
 *     does.
 *     A class bin's limit is a reservation against the cap: the bin may hold up to limit
 *     blocks, and limit * class_size(c) bytes count against the cap whether it holds them or
 *     not. So neither malloc nor free counts bytes: each only compares the bin's count (free
 *     with its limit), and limits change only on the slow paths (a refill or a full bin
 *     grows its bin's limit, up to bin_max[c], taking room; room runs short, and the largest
 *     reservations are halved, their blocks above the new limit flushed). A freed block of
 *     up to 1 KiB goes to the bin of exactly its size; a larger one to its floor class, up to
 *     1/8 larger (size_class.h); the last block of a refill batch may have 16 bytes more than
 *     its class (a remainder too small to split). So the blocks of a cache hold at most about
 *     1.125 * cap bytes.
 *   page bins (pbins[n-1]): whole-page blocks of the page tier of n pages (1 .. 16, user
 *     pointer at the first page), with their page descriptors, so neither free nor malloc
 *     touches the block's memory (often cold: each block is a page of its own). The page
 *     descriptor's RP_PAGEF_CACHED flag marks them (double-free detection).
 *
 * Invariants (rp_malloc_check verifies them for the calling thread's cache):
 *   T1  every block in class bin c is a live span block of an arena of size >= class_size(c)
 *       (at most RP_TC_MAX_CACHED_BLOCK), or a live slab block of an arena's pool of slab
 *       class c (malloc_slabs.h: the same usable size), its cache mark set; every block in page bin n-1 is a
 *       live page-tier block of an arena of exactly n pages, user pointer at its first page,
 *       with RP_PAGEF_CACHED set; no block is cached twice;
 *   T2  bins[c].slots is bin c's own stretch of slot_store, bin_max[c] slots long; the
 *       stretches follow each other in class order, each followed by RP_TC_SLOT_PAD unused
 *       slots; every class bin's count <= limit <= bin_max[c], every page bin's count <=
 *       its limit. The padding is for speed: stretches of 512 slots are 4 KiB long, and back
 *       to back the bins' tops would share the L1's sets (docs/BENCHMARKS.md, "Thread
 *       caches");
 *   T3  cap - room is the sum of limit * class_size(c) over the class bins (reserved), of
 *       count * pages over the page bins (held) and of left * class_size(c) over the runs
 *       (held, T6), and room >= 0; a class bin with a reservation r > 0 is listed in
 *       by_level[fls(r)] and nowhere else, one without in none, and bit k of level_mask is
 *       set exactly when by_level[k] lists a bin (making room finds the largest reservation
 *       among the bins of the highest level, not among all bins);
 *   T4  a class-bin block is held by a cache (a thread cache's bin or run, an arena's transfer
 *       cache, transfer_cache.h) exactly when its cache mark is RP_CACHE_MARK_CACHED, a page-bin
 *       block exactly when RP_PAGEF_CACHED is set: a refill or a run marks the blocks it takes,
 *       malloc clears the mark of the block it hands out, a flush or drain clears the marks of
 *       the blocks it gives back to their heap or pool. (A block the program holds may carry
 *       the heap profiler's mark instead, RP_CACHE_MARK_SAMPLED or RP_PAGEF_SAMPLED: profile.h;
 *       free's test for a set mark sends it out of line, where it is told apart.)
 *   T5  freed[0 .. freed_n-1] are the pointers into the slab space, outside the near region
 *       (below), that this thread passed to free() since its free batch was last examined, in
 *       call order, each 16-byte aligned, nothing else known about them (free's fast path
 *       reads none of their memory nor metadata); freed_n < freed_limit <= RP_TC_FREED_MAX. A
 *       live block among them is still allocated to its pool and in no bin, so nothing can
 *       hand it out. Only the slab space may be collected so: it is reserved for the arenas'
 *       slabs and never unmapped, so a pointer into it can be examined later whatever
 *       happened meanwhile; every other pointer is examined at its call, from the address map
 *       before anything in front of it is read (a user heap's block, foreign memory that may
 *       be unmapped by then).
 *   T6  runs[c] (c < RP_SLAB_CLASSES, slabs on: malloc_slabs.h): left blocks of slab class c
 *       from next on, each the class's stride apart, in one slab of the cache's arena's pool
 *       (never in the hardened profile, whose refills shuffle fresh blocks into the bin):
 *       fresh blocks a refill took (rp_slab_take_fresh) and the cache has not handed out.
 *       They are live to the pool and in no bin, marked (T4), and never read or written by
 *       the cache: malloc hands them out in address order when bin c is empty and no free is
 *       collected (T5: those are examined first), clearing only their marks, so memory no
 *       program has touched yet stays untouched (and costs no page fault) until the program
 *       writes it. A free() of one (the program never got it) finds its mark set and is
 *       reported.
 * The free batch (T5) makes a free cheap when the block was last written by another CPU (a
 * producer/consumer program): free() prefetches the block's cache mark for writing and
 * records the pointer, and the batch is examined when it is full
 * (its lines have arrived by then), when the thread misses in a bin or allocates past its
 * cache, reallocates, flushes, and at thread exit. Examining a pointer is what free() did at
 * its call before: the slab's allocated bit, the double-free check by mark and the push into
 * its bin, or a report (at most freed_limit - 1 frees after the call that passed it).
 * freed_limit is option free_batch (default 32); 1 examines every free at its call, and so
 * do caches with cap 0 and the debug flavour (which sees every free at once).
 * The near region: a pointer into [near_lo, near_lo + near_len), the 4 MiB chunk of the slab
 * space the cache's arena's pool takes new slabs from (slab.h SP2), as of the cache's last
 * slab refill, is examined at its call instead of collected. Such a block is most likely one
 * this thread took and handed out itself, whose line is still in this CPU's cache: recording
 * it and examining it later would only add work. A refill from the transfer cache that takes
 * a batch another thread's cache put there empties the region (near_len 0): those blocks
 * were freed by other threads, so this arena's blocks are crossing threads and were last
 * written on other CPUs, where a read at the call waits for the line and a collected free
 * has it prefetched. A refill of batches the thread flushed itself leaves the region as it
 * is; only a refill from the arena's slab pool sets it. The region only decides when a
 * pointer is examined, never how, so a stale one (released since, or never set: near_len 0)
 * costs at most speed. It changes only at a refill, which comes after the batch was
 * examined: so T5's "outside the near region" holds.
 * Bounded memory: a thread holds at most cap bytes by T3 (option cache_bytes); an
 * exiting thread's cache goes back to the heaps (pthread key destructor); after fork(), the
 * child keeps only the forking thread's cache (the others' blocks stay allocated: their
 * threads are gone and their bins may have been mid-update). All operations are O(1) or O(batch size). */
#ifndef RP_THREAD_CACHE_H
#define RP_THREAD_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "src/bits.h"
#include "cache_mark.h"
#include "hardened.h"
#include "profile.h"
#include "src/heap.h"
#include "size_class.h"
#include "src/slab.h"

#define RP_TC_BATCH_MAX 64   /* blocks per refill */
#define RP_TC_LIMIT_MAX 512  /* blocks per bin, within a quarter of the cap (bin_limit): threads
                                that pass blocks to each other swing by hundreds per class, and
                                what a bin cannot hold crosses between CPUs twice
                                (docs/BENCHMARKS.md) */
#define RP_TC_SLOT_PAD 8     /* unused slots (one cache line) after each bin's stretch (T2) */
#define RP_TC_FIRST_LIMIT 16 /* a class bin's limit when it is first used (T3: it grows) */
#define RP_TC_PAGE_BINS 16   /* page-tier blocks of 1 .. 16 pages */
#define RP_TC_PAGE_SLOTS 16  /* blocks per page bin */
#define RP_TC_FREED_MAX 64   /* most frees collected before they are examined (T5) */

/* 16 bytes, so that free finds a small block's bin from its size alone (rp_tc_small_bin_of_block);
 * count and limit have 32 bits each (no widening of a 16-bit count on the hot paths). */
typedef struct rp_tc_bin {
    void **slots;    /* T2: slots[0 .. count-1] hold the cached blocks, the last one freed on top */
    uint32_t count;  /* T2; written by the owner (relaxed atomic), read by stats */
    uint32_t limit;  /* T2, T3: the blocks this bin has reserved room for; a free into a full
                        bin grows it or flushes the bin's older half */
} rp_tc_bin;

typedef struct rp_tc_pbin {
    uint32_t count; /* slot[0 .. count-1] hold blocks, the last one freed on top; written by
                       the owner (relaxed atomic), read by stats */
    uint32_t limit; /* <= RP_TC_PAGE_SLOTS */
    struct {
        void *p;    /* user pointer */
        rp_page *d; /* its head descriptor */
    } slot[RP_TC_PAGE_SLOTS];
} rp_tc_pbin;

/* A run of fresh slab blocks (T6). */
typedef struct rp_tc_run {
    char *next;     /* the block handed out next */
    uint32_t left;  /* blocks from next on */
    uint32_t pad;
} rp_tc_run;

typedef struct rp_tcache {
    rp_mac_key block_key;    /* the arenas' block-check key (A3 in arena.h) */
    ptrdiff_t room;          /* T3: bytes not reserved by a class bin nor held by a page
                                bin. Written by the owner (relaxed atomic), read by stats */
    size_t cap;              /* option cache_bytes (0: nothing is ever cached) */
    rp_heap *arena;          /* where refills and direct allocations come from */
    size_t map_bytes;        /* the cache's own mapping (header and slot store) */
    uint32_t freed_n;        /* T5: frees collected, not examined yet */
    uint32_t freed_limit;    /* T5: the batch is examined when it reaches this many */
    uintptr_t near_lo;       /* the near region (a hint): frees inside it are examined at */
    size_t near_len;         /* their call; near_len 0 until the first refill */
    uintptr_t slab_lo;       /* the slab space (malloc_slabs.h), for free()'s range test; */
    size_t slab_len;         /* slab_len 0 when slabs are off */
    const uint64_t *slab_meta, *slab_bits; /* its metadata words and bitmaps (slab.h) */
    uint8_t *slab_marks;     /* its cache marks (cache_mark.h) */
    /* The thread's allocation clock and counts (profile.h, malloc_totals.h): written by the
     * owner only (RP_OWNER_ADD), summed by the totals. */
    rp_prof_clock clock;
    uint64_t allocs;         /* allocations through this cache (every one runs the clock) */
    uint64_t frees;          /* frees of blocks by this thread */
    uint64_t misses;         /* allocations that took a lock (a refill or the heap) */
    uint64_t counts_pad;
    rp_tc_bin bins[RP_TC_CLASSES];
    rp_tc_pbin pbins[RP_TC_PAGE_BINS];
    void *freed[RP_TC_FREED_MAX]; /* T5 */
    rp_tc_run runs[RP_SLAB_CLASSES]; /* T6 */
    int hardened;            /* the hardened profile (hardened.h): frees go through quarantine */
    uint64_t guard_countdown; /* option guard=sample:N: allocations to the next guarded one */
    uint32_t hq_n;           /* T7 (hardened.h) */
    size_t hq_bytes;         /* T7 */
    uint64_t hq_rng;         /* which quarantined block leaves next */
    rp_hq_entry quarantine[RP_HQ_SLOTS]; /* T7 */
    uint64_t refills;        /* slow-path counters, relaxed atomic */
    uint64_t flushes;
    uint32_t level_mask;     /* T3: the levels that list class bins */
    uint64_t by_level[32][(RP_TC_CLASSES + 63) / 64]; /* T3: class bins by their reservation's top bit */
    struct rp_tcache *next, *prev; /* list of all caches (stats, fork) */
    size_t slot_count;       /* length of slot_store: the sum of bin_max */
    uint16_t bin_max[RP_TC_CLASSES]; /* T2: the most blocks class bin c may ever hold */
    void *slot_store[];      /* the class bins' slots (T2) */
} rp_tcache;

/* The calling thread's cache, NULL until its first allocation sets it up, and NULL again
 * after it was torn down at thread exit (allocations then go to the heap directly). With
 * cap 0 (option cache_bytes=0, and always in the debug flavour) it exists but holds nothing.
 * Initial-exec TLS: reading it never allocates (no __tls_get_addr). */
extern __thread rp_tcache *rp_tc_self __attribute__((tls_model("initial-exec")));

/* One-time set-up (from rp_malloc_init): the random key and the thread-exit key.
 * 0 or -1. */
int rp_tc_setup(void);

/* The calling thread's cache, creating it if the thread has none yet and may have one.
 * NULL when it cannot (see rp_tc_self); the caller then allocates directly from the heap. */
rp_tcache *rp_tc_get_slow(void);

/* The cache mark of p, a block a class bin may hold (T4, cache_mark.h): the slab space's from
 * the cache's own copy of its range; a span block's through the address map. NULL when its
 * memory keeps no marks. */
static inline uint8_t *rp_tc_mark_of(const rp_tcache *tc, const void *p)
{
    uintptr_t off = (uintptr_t)p - tc->slab_lo;
    if (RP_LIKELY(off < tc->slab_len))
        return tc->slab_marks + (off >> 4);
    rp_region *r = rp_pagemap_lookup(p);
    return r ? rp_cache_mark_in(r, p) : NULL;
}

/* 1 if level k of the class bins' T3 filing lists any bin. */
static inline int rp_tc_level_lists_any(const rp_tcache *tc, unsigned k)
{
    uint64_t any = 0;
    for (unsigned w = 0; w < sizeof tc->by_level[k] / sizeof tc->by_level[k][0]; w++)
        any |= tc->by_level[k][w];
    return any != 0;
}

/* The bytes of a block of page bin i (i + 1 pages; T3 counts them). */
static inline size_t rp_tc_page_bin_bytes(unsigned i) { return (size_t)(i + 1) << RP_PAGE_SHIFT; }

/* Can class c's run (T6) serve a request aligned to align: c a slab class, blocks left, the
 * next one aligned (every block of a run is as aligned as its first)? */
static inline int rp_tc_run_ready(const rp_tcache *tc, unsigned c, size_t align)
{
    return c < RP_SLAB_CLASSES && tc->runs[c].left && ((uintptr_t)tc->runs[c].next & (align - 1)) == 0;
}

/* Hands out the next block of run c (non-empty, T6): neither reads nor writes the block, only
 * clears its mark (T4). Its bytes no longer count against the cap (T3). */
static inline void *rp_tc_run_take(rp_tcache *tc, unsigned c)
{
    rp_tc_run *run = &tc->runs[c];
    char *p = run->next;
    rp_cache_mark_clear(tc->slab_marks + (((uintptr_t)p - tc->slab_lo) >> 4));
    run->next = p + rp_slab_stride(c);
    run->left--;
    __atomic_store_n(&tc->room, tc->room + (ptrdiff_t)rp_tc_class_size(c), __ATOMIC_RELAXED);
    return p;
}

/* The block malloc would take next from class bin c, or NULL when the bin is empty. */
static inline void *rp_tc_top(const rp_tcache *tc, unsigned c)
{
    const rp_tc_bin *bin = &tc->bins[c];
    return bin->count ? bin->slots[bin->count - 1] : NULL;
}

/* Clears the mark of a span block a class bin handed out (out of line: the address map) and
 * returns it (so the pop's fast path ends in a jump, saving no registers). */
void *rp_tc_unmark_span(void *p);

/* Hands out the top block of a non-empty class bin: reads the bin and the slot and clears the
 * block's cache mark (T4), without reading or writing the block. Nothing is counted: the room
 * stays reserved for the bin (T3). */
static inline void *rp_tc_pop_bin(rp_tcache *tc, rp_tc_bin *bin)
{
    size_t n = (size_t)bin->count - 1;
    void *p = bin->slots[n];
    __atomic_store_n(&bin->count, (uint32_t)n, __ATOMIC_RELAXED);
    uintptr_t off = (uintptr_t)p - tc->slab_lo;
    if (RP_UNLIKELY(off >= tc->slab_len))
        return rp_tc_unmark_span(p);
    rp_cache_mark_clear(tc->slab_marks + (off >> 4));
    return p;
}

/* The top block of non-empty class bin c, handed out (rp_tc_pop_bin). */
static inline void *rp_tc_pop(rp_tcache *tc, unsigned c) { return rp_tc_pop_bin(tc, &tc->bins[c]); }

/* Slow path of rp_tc_push: the bin is full (at its limit, which may grow). */
void rp_tc_push_slow(rp_tcache *tc, void *p, uint8_t *mark, unsigned c);

/* Caches the block p (user pointer) in bin (its size's floor class's) and sets its cache mark
 * (T4), which the caller has found clear. The bin's limit is all it tests: the room is
 * reserved already (T3). */
static inline void rp_tc_push_bin(rp_tcache *tc, rp_tc_bin *bin, void *p, uint8_t *mark)
{
    size_t n = bin->count;
    if (RP_UNLIKELY(n >= bin->limit)) {
        rp_tc_push_slow(tc, p, mark, (unsigned)(bin - tc->bins));
        return;
    }
    bin->slots[n] = p;
    __atomic_store_n(&bin->count, (uint32_t)(n + 1), __ATOMIC_RELAXED);
    rp_cache_mark_set(mark);
}

/* The bin of a span block of size bytes (a multiple of 16, at most RP_TC_SMALL_MAX): the
 * small classes step by 16 bytes from 32 and a bin is 16 bytes, so the bin lies size - 32
 * bytes into the array (one address computation on free's fast path). */
_Static_assert(sizeof(rp_tc_bin) == 16, "bins are addressed by block size");
static inline rp_tc_bin *rp_tc_small_bin_of_block(rp_tcache *tc, size_t size)
{
    return (rp_tc_bin *)(void *)((char *)tc->bins + (size - 32));
}

/* Caches a block a refill just took (its mark clear, in memory that keeps marks) in class
 * bin c (p's floor class). */
static inline void rp_tc_push(rp_tcache *tc, void *p, unsigned c)
{
    rp_tc_push_bin(tc, &tc->bins[c], p, rp_tc_mark_of(tc, p));
}

/* Miss in class bin c for a request of size bytes aligned to align (16, or a power of two
 * dividing the class size, or the slab stride of class c): hands out the next block of run c
 * if it is aligned enough (T6); else refills the bin with a batch of blocks of the class whose
 * user pointers are aligned to align, under one lock, and returns one of them: slab blocks
 * for the slab classes when slabs are on (blocks freed before into the bin, or else a run of
 * fresh ones), span blocks otherwise. When the bin cannot take a batch (limit or cap),
 * allocates the request directly instead. NULL (errno ENOMEM) when out of memory. */
void *rp_tc_refill(rp_tcache *tc, unsigned c, size_t size, size_t align);

/* The top block of the page bin of npages pages (1 .. RP_TC_PAGE_BINS) if it is aligned to
 * align, taken out of the cache; NULL otherwise. */
static inline void *rp_tc_page_pop(rp_tcache *tc, size_t npages, size_t align)
{
    rp_tc_pbin *pb = &tc->pbins[npages - 1];
    if (pb->count == 0)
        return NULL;
    void *p = pb->slot[pb->count - 1].p;
    if ((uintptr_t)p & (align - 1))
        return NULL;
    rp_page *d = pb->slot[pb->count - 1].d;
    __atomic_store_n(&pb->count, pb->count - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&d->flags, (uint8_t)(d->flags & ~RP_PAGEF_CACHED), __ATOMIC_RELAXED); /* T4 */
    __atomic_store_n(&tc->room, tc->room + (ptrdiff_t)(npages << RP_PAGE_SHIFT), __ATOMIC_RELAXED);
    return p;
}

/* rp_tc_page_push_fast found no room (the bin full or the cache at its cap): makes room and
 * caches p. Returns 1 when cached, 0 when the caller must free it directly. Keeps errno. */
int rp_tc_page_push_slow(rp_tcache *tc, void *p, rp_page *d);

/* Caches the live page-tier block p whose head descriptor is d (at most RP_TC_PAGE_BINS
 * pages, user pointer at its first page, not cached already: the caller checked
 * rp_tc_page_cached) if its bin and the cache have room: returns 1; 0 (nothing done) if not. */
static inline int rp_tc_page_push_fast(rp_tcache *tc, void *p, rp_page *d)
{
    rp_tc_pbin *pb = &tc->pbins[d->npages - 1];
    ptrdiff_t room = tc->room - (ptrdiff_t)((size_t)d->npages << RP_PAGE_SHIFT);
    uint32_t n = pb->count;
    if (RP_UNLIKELY(n >= pb->limit || room < 0))
        return 0;
    __atomic_store_n(&d->flags, (uint8_t)(d->flags | RP_PAGEF_CACHED), __ATOMIC_RELAXED);
    pb->slot[n].p = p;
    pb->slot[n].d = d;
    __atomic_store_n(&pb->count, n + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&tc->room, room, __ATOMIC_RELAXED);
    return 1;
}


/* 1 if the live page-tier block headed by d sits in some thread's cache (T4). */
static inline int rp_tc_page_cached(const rp_page *d)
{
    return (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) & RP_PAGEF_CACHED) != 0;
}

/* 1 if the page-tier block headed by d is cached or sampled (profile.h): free's one test
 * for both, the second one sorted out of line. */
static inline int rp_tc_page_flagged(const rp_page *d)
{
    return (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) & (RP_PAGEF_CACHED | RP_PAGEF_SAMPLED)) != 0;
}

/* Counts one of the thread's allocations and runs its clock (profile.h): 1 when the clock ran
 * out (the allocation takes the sampled path). */
static inline __attribute__((always_inline)) int rp_tc_tick(rp_tcache *tc, size_t size)
{
    RP_OWNER_ADD(tc->allocs, 1);
    return rp_prof_tick(&tc->clock, size);
}

/* Counts n frees of the thread (the drop-in's free paths). */
static inline void rp_tc_count_frees(rp_tcache *tc, uint32_t n) { RP_OWNER_ADD(tc->frees, n); }

/* Counts an allocation that took a lock (a refill or the heap). */
static inline void rp_tc_count_miss(rp_tcache *tc) { RP_OWNER_ADD(tc->misses, 1); }

/* Examines the collected frees (rp_malloc_free_collected), then returns every cached block
 * to its heap. */
void rp_tc_flush_all(rp_tcache *tc);

/* Verifies T1..T3 and T5 for tc (the caller's own cache). 0, or non-zero with a message. */
int rp_tc_check(rp_tcache *tc, char *why, size_t len);

/* Totals over all live caches (a snapshot: other threads keep running). */
void rp_tc_totals(size_t *caches, size_t *bytes, uint64_t *refills, uint64_t *flushes);

/* The cap every cache gets (option cache_bytes; 0 in the debug flavour). */
size_t rp_tc_cap(void);

/* The cache list's lock across fork; the child drops every cache but its own. */
void rp_tc_fork_prepare(void);
void rp_tc_fork_parent(void);
void rp_tc_fork_child(void);

#endif
