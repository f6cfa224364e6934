/* Hard corners of the malloc drop-in, run with librampart_malloc.so in LD_PRELOAD
 * (expect_ok_test.sh): allocation in a constructor before main, dlopen/dlsym/dlerror (which
 * allocate inside the loader), threads that exit (their caches go back), a pthread key
 * destructor that allocates after rampart's own has torn the thread's cache down, fork() while
 * other threads allocate, a pointer rampart never returned. rampart's own functions are
 * looked up with dlsym, which also shows the library exports them. Prints "corners ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/malloc/rampart_malloc.h"
#include "src/rampart.h"

static int failures;
#define EXPECT(cond)                                                                           \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "corners.c:%d: failed: %s\n", __LINE__, #cond);                     \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static char *early;

__attribute__((constructor(101))) static void allocate_early(void)
{
    early = malloc(100);
    if (early)
        strcpy(early, "allocated before main");
}

static int (*check_fn)(char *, size_t);
static int (*stats_fn)(rp_malloc_stats_t *);
static rp_report_fn (*set_report_fn)(rp_report_fn, void *, void **);

static int invalid_frees;
static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    invalid_frees += r->kind == RP_ERR_INVALID_FREE;
}

static int heaps_ok(const char *when)
{
    char why[256];
    if (check_fn(why, sizeof why) != 0) {
        fprintf(stderr, "rp_malloc_check %s: %s\n", when, why);
        return 0;
    }
    return 1;
}

static pthread_key_t late_key;

/* Runs after rampart's own thread-exit destructor (or before: the order is not specified);
 * either way its allocations must work. */
static void late_destructor(void *p)
{
    free(p);
    void *q = malloc(64);
    memset(q, 1, 64);
    free(q);
}

static void *churn(void *arg)
{
    uintptr_t n = (uintptr_t)arg;
    pthread_setspecific(late_key, malloc(32));
    void *keep[64] = {0};
    for (uintptr_t i = 0; i < n; i++) {
        unsigned k = (unsigned)(i % 64);
        free(keep[k]);
        keep[k] = malloc(16 + (i * 37) % 2000);
        if (keep[k])
            memset(keep[k], (int)i, 16);
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
    return NULL;
}

static volatile int stop;
static void *background(void *arg)
{
    (void)arg;
    while (!stop)
        free(malloc(200));
    return NULL;
}

int main(void)
{
    check_fn = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "rp_malloc_check");
    stats_fn = (int (*)(rp_malloc_stats_t *))dlsym(RTLD_DEFAULT, "rp_malloc_stats");
    set_report_fn = (rp_report_fn(*)(rp_report_fn, void *, void **))dlsym(RTLD_DEFAULT, "rp_set_report_fn");
    if (!check_fn || !stats_fn) {
        fprintf(stderr, "rampart's functions are not visible: not running under librampart_malloc.so?\n");
        return 1;
    }
    /* The constructor's block is rampart's and intact. */
    EXPECT(early && strcmp(early, "allocated before main") == 0);
    EXPECT(malloc_usable_size(early) >= 100);
    free(early);

    /* The loader allocates and frees inside dlopen, dlsym and dlerror. */
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    EXPECT(libm != NULL);
    double (*cosine)(double) = (double (*)(double))dlsym(libm, "cos");
    EXPECT(cosine && cosine(0.0) == 1.0);
    EXPECT(dlsym(libm, "no_such_symbol_anywhere") == NULL);
    const char *msg = dlerror();
    EXPECT(msg && strstr(msg, "no_such_symbol_anywhere"));
    EXPECT(dlclose(libm) == 0);

    /* Threads that exit: their caches go back; another key's destructor allocates. */
    EXPECT(pthread_key_create(&late_key, late_destructor) == 0);
    for (int round = 0; round < 3; round++) {
        pthread_t t[6];
        for (int i = 0; i < 6; i++)
            EXPECT(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)20000) == 0);
        for (int i = 0; i < 6; i++)
            pthread_join(t[i], NULL);
    }
    rp_malloc_stats_t st;
    EXPECT(stats_fn(&st) == 0);
    EXPECT(st.thread_caches == 1); /* only the main thread's is left */
    EXPECT(st.arenas >= 1);
    EXPECT(heaps_ok("after the threads"));

    /* fork() while two threads allocate: the child allocates, checks and exits. */
    pthread_t bg[2];
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&bg[i], NULL, background, NULL) == 0);
    usleep(1000);
    pid_t pid = fork();
    if (pid == 0) {
        void *p[500];
        for (int i = 0; i < 500; i++)
            p[i] = malloc((size_t)i * 13);
        for (int i = 0; i < 500; i++)
            free(p[i]);
        rp_malloc_stats_t cs;
        int ok = stats_fn(&cs) == 0 && cs.thread_caches == 1 && heaps_ok("in the child");
        _exit(ok ? 0 : 3);
    }
    int status = -1;
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(bg[i], NULL);
    EXPECT(heaps_ok("after fork"));

    /* A pointer rampart never returned: reported as an invalid free at its call, and counted
     * (the report function returns, so the free is abandoned). */
    char stack_buffer[64];
    uint64_t before = (stats_fn(&st), st.foreign_frees);
    void *old_arg;
    rp_report_fn old = set_report_fn(count_report, NULL, &old_arg);
    free(stack_buffer + 16);
    set_report_fn(old, old_arg, NULL);
    EXPECT(invalid_frees == 1);
    EXPECT(stats_fn(&st) == 0 && st.foreign_frees == before + 1);

    if (failures)
        return 1;
    printf("corners ok\n");
    return 0;
}
