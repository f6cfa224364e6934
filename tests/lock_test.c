/* The heap lock (src/lock.h): mutual exclusion under contention, and the contended acquire's
 * two halves. A waiter whose holder lets go within microseconds gets the lock by spinning,
 * without sleeping (a sleep and wake-up costs the waiter hundreds of microseconds on a VM,
 * which is what producer/consumer threads moving batches through a transfer cache hit with a
 * short spin); a waiter whose holder keeps the lock for milliseconds stops spinning and
 * sleeps, and still gets the lock. Sleeps are counted as the waiter's voluntary context
 * switches (getrusage RUSAGE_THREAD): spinning makes none, a futex wait makes one. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "src/lock.h"
#include "testing.h"

static rp_lock lock;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long voluntary_switches(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nvcsw : -1;
}

/* ---- mutual exclusion ---------------------------------------------------------------------- */

enum { WORKERS = 4, INCREMENTS = 200000 };
static uint64_t counter; /* written only under the lock, non-atomically */

static void *increment_body(void *arg)
{
    (void)arg;
    for (int i = 0; i < INCREMENTS; i++) {
        rp_lock_acquire(&lock);
        uint64_t v = counter;
        if ((i & 63) == 0)
            for (volatile int k = 0; k < 50; k++) /* widen the window a broken lock would lose in */
                ;
        counter = v + 1;
        rp_lock_release(&lock);
    }
    return NULL;
}

static void test_mutual_exclusion(void)
{
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        REQUIRE(pthread_create(&t[i], NULL, increment_body, NULL) == 0);
    for (int i = 0; i < WORKERS; i++)
        REQUIRE(pthread_join(t[i], NULL) == 0);
    CHECKF(counter == (uint64_t)WORKERS * INCREMENTS, "counter %llu, expected %llu", (unsigned long long)counter,
           (unsigned long long)WORKERS * INCREMENTS);
}

/* ---- handoffs: spin for short holds, sleep for long ones ---------------------------------- */

static int round_no;     /* atomic: the holder has the lock for this round */
static int waiter_round; /* atomic: the waiter is about to acquire for this round */
static int done_round;   /* atomic: the waiter has had and released the lock for this round */
static int rounds_total;
static long sleeps;      /* the waiter's voluntary switches inside rp_lock_acquire, summed */

static void *waiter_body(void *arg)
{
    (void)arg;
    for (int r = 1; r <= rounds_total; r++) {
        while (__atomic_load_n(&round_no, __ATOMIC_ACQUIRE) != r)
            ;
        __atomic_store_n(&waiter_round, r, __ATOMIC_RELEASE);
        long before = voluntary_switches();
        rp_lock_acquire(&lock);
        long after = voluntary_switches();
        rp_lock_release(&lock);
        sleeps += after - before;
        __atomic_store_n(&done_round, r, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* rounds handoffs, the holder keeping the lock hold_ns after the waiter started to acquire;
 * returns the waiter's sleeps. */
static long handoffs(int rounds, double hold_ns)
{
    rounds_total = rounds;
    sleeps = 0;
    __atomic_store_n(&round_no, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&waiter_round, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&done_round, 0, __ATOMIC_RELEASE);
    pthread_t w;
    REQUIRE(pthread_create(&w, NULL, waiter_body, NULL) == 0);
    for (int r = 1; r <= rounds; r++) {
        rp_lock_acquire(&lock);
        __atomic_store_n(&round_no, r, __ATOMIC_RELEASE);
        while (__atomic_load_n(&waiter_round, __ATOMIC_ACQUIRE) != r)
            ;
        double until = now_ns() + hold_ns;
        while (now_ns() < until)
            ;
        rp_lock_release(&lock);
        /* Not again before the waiter had its turn: it may still be waking up. */
        while (__atomic_load_n(&done_round, __ATOMIC_ACQUIRE) != r)
            ;
    }
    REQUIRE(pthread_join(w, NULL) == 0);
    return sleeps;
}

int main(void)
{
    rp_lock_init(&lock);
    test_mutual_exclusion();
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || voluntary_switches() < 0) {
        printf("SKIP handoffs: one CPU (or no per-thread rusage): a waiter cannot spin while its holder runs\n");
        rp_lock_fini(&lock);
        TEST_MAIN_END();
    }
    /* 10 us holds: glibc's adaptive mutex alone slept in every one (its ~100 spins last a
     * few microseconds); the spin (RP_LOCK_SPIN_PAUSES) outlasts them, unless the holder is
     * preempted while it holds the lock, which other load on the machine (tests running in
     * parallel) makes happen: up to 5 trials, apart in time, and one with at most half the
     * acquires asleep passes. */
    long short_sleeps = 0;
    for (int trial = 0; trial < 5; trial++) {
        short_sleeps = handoffs(200, 10e3);
        printf("10 us holds, trial %d: the waiter slept in %ld of 200 acquires\n", trial + 1, short_sleeps);
        if (short_sleeps <= 100)
            break;
        usleep(20000);
    }
    CHECKF(short_sleeps <= 100, "a waiter slept in %ld of 200 acquires of a lock held 10 us", short_sleeps);
    /* 5 ms holds: far past the spin; the waiter sleeps, and is woken with the lock. */
    long long_sleeps = handoffs(5, 5e6);
    printf("5 ms holds: the waiter slept in %ld of 5 acquires\n", long_sleeps);
    CHECKF(long_sleeps >= 3, "a waiter slept in only %ld of 5 acquires of a lock held 5 ms", long_sleeps);
    rp_lock_fini(&lock);
    TEST_MAIN_END();
}
