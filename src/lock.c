/* The heap lock's set-up and its contended acquire (lock.h). */
#define _GNU_SOURCE
#include "lock.h"

void rp_lock_init(rp_lock *l)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) == 0 && pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP) == 0) {
        pthread_mutex_init(l, &attr);
        pthread_mutexattr_destroy(&attr);
        return;
    }
    pthread_mutex_init(l, NULL);
}

/* Tells the CPU this is a spin-wait loop (x86 PAUSE, arm64 YIELD): the other hardware thread
 * of the core gets the pipeline, and leaving the loop costs no memory-order flush. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

void rp_lock_acquire_contended(rp_lock *l)
{
    /* Tries at growing intervals: each failed try takes the lock's cache line away from the
     * holder, which needs it to release. */
    unsigned step = 1;
    for (unsigned spent = 0; spent < RP_LOCK_SPIN_PAUSES; spent += step) {
        for (unsigned i = 0; i < step; i++)
            cpu_relax();
        if (pthread_mutex_trylock(l) == 0)
            return;
        if (step < RP_LOCK_SPIN_STEP)
            step <<= 1;
    }
    pthread_mutex_lock(l);
}
