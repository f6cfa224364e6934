/* The release flavour's sampled heap profiler (option profile=1), and the allocation clock it
 * shares with the drop-in's totals (malloc_totals.h).
 *
 * Sampling is Poisson over the bytes requested, as tcmalloc's and jemalloc's samplers do: sample
 * points fall on the stream of a thread's requested bytes at exponentially distributed
 * distances of mean profile_rate (default 512 KiB), and an allocation is sampled when a point
 * falls in its bytes, so a block of size bytes is sampled with probability
 * p = 1 - exp(-size / rate) and stands for 1/p blocks and size/p bytes (rampart_dump.h). A
 * sampled block's stack (libunwind, cut at the drop-in's entry point: profile_stack.h) goes to
 * the stack depot (debug/stack_depot.h) and its record to the table of live samples
 * (profile_table.h); every heap dump carries them (rp_dump_set_sample_source).
 *
 * The clock: each thread cache counts down the bytes to its next event (rp_prof_clock.left).
 * Every allocation through the cache subtracts its request (rp_prof_tick: one subtraction and
 * a sign test); when the count goes below zero the allocation takes rp_prof_event out of line,
 * which folds the bytes counted into the thread's total, re-arms the clock and decides whether
 * this allocation is sampled (profiling on: always, a sample point fell in it). With profiling
 * off the clock is armed with RP_PROF_FOLD_BYTES and an event only folds the counters and
 * looks at the process's peak (malloc_totals.h).
 *
 * Marks: a sampled block the drop-in's free() has a fast path for is marked in metadata apart
 * from it, so its free is recognised at no cost to other frees: a slab or span block's cache
 * mark holds RP_CACHE_MARK_SAMPLED (cache_mark.h), a page-tier block's head descriptor has
 * RP_PAGEF_SAMPLED (src/region.h). Frees that take the heap's own path (rp_free: big blocks,
 * mapped blocks, memory without marks) look the pointer up in the table while samples are
 * live (rp_prof_live). */
#ifndef RP_PROFILE_H
#define RP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "src/bits.h"

/* Bytes between clock events of a thread while profiling is off (the totals' folding). */
#define RP_PROF_FOLD_BYTES ((intptr_t)4 << 20)

/* Frames kept per sampled stack (at most RP_STACK_MAX_FRAMES). */
#define RP_PROF_DEPTH 32

/* A thread's allocation clock, in its cache (thread_cache.h); written by its thread only. */
typedef struct rp_prof_clock {
    intptr_t left;  /* bytes to the next event; each allocation subtracts its request */
    intptr_t armed; /* what left was set to at the last event */
    uint64_t bytes; /* requested bytes allocated up to the last event (relaxed atomic: stats) */
    uint64_t rng;   /* the thread's random state (sampling intervals) */
    intptr_t due;   /* every event mode (rp_prof_clock_every): bytes to the next real event */
    int every;      /* 1: every allocation is an event (left and armed stay -1) */
} rp_prof_clock;

/* What rp_prof_event returns in every-event mode for an allocation that is no real event: the
 * caller neither samples nor folds (rp_prof_after_event ignores it). */
#define RP_PROF_QUIET (-1)

/* 1 once profiling is on (option profile=1, set up by rp_prof_setup). */
extern int rp_prof_enabled;
/* Live samples (relaxed atomic): the heap's own free path looks in the table only when some. */
extern size_t rp_prof_live;

/* Reads the options (profile, profile_rate, profile_seed) and, with profile=1, registers the
 * sample source with the dump writer. Once, from rp_malloc_init. */
void rp_prof_setup(void);

/* Arms a new thread cache's clock; index numbers the caches (seeds differ per thread). */
void rp_prof_clock_start(rp_prof_clock *c, uint64_t index);

/* Makes every allocation of a started clock an event (the hardened profile, hardened.h: each
 * allocation takes the out-of-line path, which seals the block); sampling and the totals keep
 * their own countdown (due), so they see what they would without it. */
void rp_prof_clock_every(rp_prof_clock *c);

/* In every-event mode, sets left back to -1 (after a request of 2^63 bytes or more, which
 * the tick's subtraction left positive); nothing otherwise. */
void rp_prof_clock_rearm(rp_prof_clock *c);

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_OWNER_ATOMIC 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RP_OWNER_ATOMIC 1
#endif

/* Adds n to a counter that only its thread writes and other threads read now and then (the
 * statistics, with relaxed atomic loads): a plain addition, one instruction on the fast paths
 * (an aligned 8-byte store is never torn on the platforms rampart runs on); under
 * ThreadSanitizer a relaxed atomic store, which it understands. */
#ifdef RP_OWNER_ATOMIC
#define RP_OWNER_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define RP_OWNER_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#else
#define RP_OWNER_ADD(field, n) ((void)((field) += (n)))
#define RP_OWNER_SET(field, v) ((void)((field) = (v)))
#endif

/* The fast path's step: subtracts size (modulo 2^64: a request near SIZE_MAX, which fails,
 * wraps instead of overflowing); 1 when the clock ran out (call rp_prof_event). */
static inline int rp_prof_tick(rp_prof_clock *c, size_t size)
{
    intptr_t left = (intptr_t)((uintptr_t)c->left - (uintptr_t)size);
    RP_OWNER_SET(c->left, left);
    return RP_UNLIKELY(left < 0);
}

/* The clock ran out during an allocation of size bytes (already subtracted): folds and re-arms.
 * Returns 1 when this allocation is to be sampled, RP_PROF_QUIET in every-event mode when it
 * is no real event. The caller allocates, then calls
 * rp_prof_after_event with the block. */
int rp_prof_event(rp_prof_clock *c, size_t size);

/* Bytes c has counted so far (any thread may ask: a snapshot). */
uint64_t rp_prof_clock_bytes(const rp_prof_clock *c);

/* Records the block p of size bytes requested as a sample: its stack (ra: the return address
 * of the drop-in's entry point the program called, or NULL), its time; marks it (see above).
 * No-op for NULL. Keeps errno. */
void rp_prof_record(void *p, size_t size, const void *ra);

/* After an allocation whose clock ran out: records p if rp_prof_event said to sample it, then
 * looks at the process's peak (malloc_totals.h), the new block included. Keeps errno. */
void rp_prof_after_event(void *p, size_t size, const void *ra, int sample);

/* p (a live block about to be freed or moved) may be a sample: forgets it (its record, its
 * mark). Returns 1 if it was one. Keeps errno. */
int rp_prof_forget(const void *p);

/* The free path found p's mark (cache mark or page flag) saying "sampled": as rp_prof_forget. */
void rp_prof_forget_marked(const void *p);

/* realloc by the heap (which may move p, freeing its memory for any thread to reuse, or resize
 * it in place) around rp_realloc: rp_prof_detach takes p's sample out of the table into *saved
 * (1 if p was sampled); rp_prof_reattach, given the result q, puts it back when the realloc
 * failed (q NULL: p unchanged), else counts p freed. A realloc that succeeds is a free and a new
 * allocation to the sampler, as it is to tcmalloc's: the new block is sampled afresh, with the
 * probability its new size gives (a sample kept from the old size would weigh it wrongly). */
typedef struct rp_prof_saved {
    uintptr_t addr;
    size_t size, rate;
    uint64_t alloc_ns;
    uint32_t stack;
} rp_prof_saved;
int rp_prof_detach(const void *p, rp_prof_saved *saved);
void rp_prof_reattach(const rp_prof_saved *saved, const void *q);

/* What the profiler knows, for the statistics (rp_malloc_totals). */
typedef struct rp_prof_stats {
    int enabled;
    size_t rate;               /* profile_rate */
    uint64_t samples;          /* blocks sampled so far */
    uint64_t live;             /* of which still live */
    uint64_t dropped;          /* samples lost (the table or the depot could not grow) */
    double est_allocs;         /* the sampled blocks' estimated blocks (sum of 1/p) */
    double est_freed;          /* of the freed samples */
    double est_freed_bytes;    /* their estimated bytes (sum of size/p) */
    double est_temporaries;    /* freed within temporary_ms of their allocation */
    double est_temporary_bytes;
    size_t table_bytes;        /* OS memory of the table of live samples */
} rp_prof_stats;

void rp_prof_get_stats(rp_prof_stats *out);

/* The profiler's lock across fork (the child keeps every sample: its blocks are live there). */
void rp_prof_fork_prepare(void);
void rp_prof_fork_parent(void);
void rp_prof_fork_child(void);

#endif
