/* The heap lock. One per heap, so separate heaps never contend. A pthread mutex:
 * uncontended it is one atomic exchange each way, and ThreadSanitizer understands it.
 * Adaptive (lock.c): a contended acquire spins briefly before sleeping, since the sections it
 * guards are short (a thread cache's refill or flush holds it for a few microseconds, and a
 * sleep and wake-up costs more than that). */
#ifndef RP_LOCK_H
#define RP_LOCK_H

#include <pthread.h>

typedef pthread_mutex_t rp_lock;

void rp_lock_init(rp_lock *l);
static inline void rp_lock_fini(rp_lock *l) { pthread_mutex_destroy(l); }
static inline void rp_lock_acquire(rp_lock *l) { pthread_mutex_lock(l); }
static inline void rp_lock_release(rp_lock *l) { pthread_mutex_unlock(l); }
static inline int rp_lock_try(rp_lock *l) { return pthread_mutex_trylock(l) == 0; }

#endif
