/* Leak checks while other threads run: four threads allocate and free without pause, keeping
 * their live blocks only in a stack array, a register and TLS, while threads keep starting and
 * exiting; every on-demand leak check in the middle of that finds no leak (every thread is
 * stopped with its registers, stacks and TLS scanned; the blocks do not change while it
 * looks), and the threads carry on afterwards. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "debug_testing.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "testing.h"

enum { WORKERS = 4, SLOTS = 64, CHECKS = 20 };

static int stop;
static __thread void *tls_block;
static unsigned long rounds[WORKERS];

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    void *slots[SLOTS] = {0};
    unsigned x = id * 2654435761u + 1;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        x = x * 1103515245u + 12345u;
        unsigned i = (x >> 8) % SLOTS;
        void **old = slots[i];
        if (old) {
            rp_free(old[0]);
            rp_free(old);
        }
        slots[i] = rp_alloc(NULL, 16 + (x >> 20) % 3000, 0);
        void **link = slots[i];
        if (link && (x & 1))
            link[0] = rp_alloc(NULL, 24, 0); /* reachable through the block only */
        else if (link)
            link[0] = NULL;
        rp_free(tls_block);
        tls_block = rp_alloc(NULL, 40, 0);
        rounds[id]++;
    }
    for (unsigned i = 0; i < SLOTS; i++) {
        void **b = slots[i];
        if (b)
            rp_free(b[0]);
        rp_free(b);
    }
    rp_free(tls_block);
    return NULL;
}

/* Threads that start, allocate into their TLS and stack, and exit (freeing it). */
static void *short_lived(void *arg)
{
    (void)arg;
    tls_block = rp_alloc(NULL, 100, 0);
    void *volatile local = rp_alloc(NULL, 200, 0);
    usleep(1000);
    rp_free(local);
    rp_free(tls_block);
    return NULL;
}

static void *spawner(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, NULL) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

int main(void)
{
#ifdef UNDER_TSAN
    /* ThreadSanitizer delivers signals at its own points; the stop is tested without it. */
    TEST_MAIN_END();
#endif
    pthread_t t[WORKERS + 1];
    for (unsigned i = 0; i < WORKERS; i++)
        REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
    REQUIRE(pthread_create(&t[WORKERS], NULL, spawner, NULL) == 0);
    int fd = open("/dev/null", O_WRONLY);
    REQUIRE(fd >= 0);
    usleep(20000);
    for (int c = 0; c < CHECKS; c++) {
        size_t leaked = rp_leak_report(NULL, fd);
        CHECKF(leaked == 0, "check %d: %zu leaked blocks reported while the threads ran", c, leaked);
        if (leaked) /* show it */
            rp_leak_report(NULL, 2);
        usleep(5000);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i <= WORKERS; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < WORKERS; i++)
        CHECKF(rounds[i] > 0, "worker %u never ran", i);
    CHECK(rp_leak_report(NULL, fd) == 0);
    close(fd);
    TEST_MAIN_END();
}
