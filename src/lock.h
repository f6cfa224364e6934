/* The heap lock. One per heap, so separate heaps never contend. A pthread mutex:
 * uncontended it is one atomic exchange each way, and ThreadSanitizer understands it.
 *
 * Contended, an acquire spins before it sleeps (rp_lock_acquire_contended, lock.c): the
 * sections it guards are short (a transfer cache's batch move copies a few hundred bytes of
 * pointers, a thread cache's refill or flush moves one batch of blocks), and a sleep costs
 * far more: the futex wait, the holder's wake-up call, and the sleeper's rescheduling.
 * glibc's adaptive mutex spins only ~100 short rounds (its default spin count), which two
 * threads moving batches between each other (producer/consumer) outlast, so they sleep often
 * where an allocator that spins longer rarely does (figures: docs/BENCHMARKS.md, "Heap
 * lock"). */
#ifndef RP_LOCK_H
#define RP_LOCK_H

#include <pthread.h>

typedef pthread_mutex_t rp_lock;

/* ThreadSanitizer learns the order of two locks only from a blocking acquire: one taken by a
 * successful try is never an edge of its lock graph. Under it every acquire blocks, so a
 * lock-order inversion between heap, transfer-cache and slab locks is reported the first time
 * both orders occur, not only when they deadlock. */
#if defined(__SANITIZE_THREAD__)
#define RP_LOCK_ORDER_VISIBLE 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_LOCK_ORDER_VISIBLE 1
#endif
#endif
#ifndef RP_LOCK_ORDER_VISIBLE
#define RP_LOCK_ORDER_VISIBLE 0
#endif

/* Pause instructions a contended acquire spends at most, trying the lock between them at
 * growing intervals (1, 2, 4 .. RP_LOCK_SPIN_STEP pauses), before it sleeps. How long that
 * takes depends on what a pause costs the CPU. */
#define RP_LOCK_SPIN_PAUSES 2048
#define RP_LOCK_SPIN_STEP 32

void rp_lock_init(rp_lock *l);
static inline void rp_lock_fini(rp_lock *l) { pthread_mutex_destroy(l); }
/* Spins, then sleeps, until l is held: the slow half of rp_lock_acquire. */
void rp_lock_acquire_contended(rp_lock *l);
static inline void rp_lock_acquire(rp_lock *l)
{
#if RP_LOCK_ORDER_VISIBLE
    pthread_mutex_lock(l);
#else
    if (pthread_mutex_trylock(l) != 0)
        rp_lock_acquire_contended(l);
#endif
}
static inline void rp_lock_release(rp_lock *l) { pthread_mutex_unlock(l); }
static inline int rp_lock_try(rp_lock *l) { return pthread_mutex_trylock(l) == 0; }

#endif
