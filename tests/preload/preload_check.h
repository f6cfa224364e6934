/* Checks for the programs the preload tests run with a drop-in library in LD_PRELOAD (built
 * against the C library's malloc, as any program): CHECKF counts a failure with its message;
 * rampart's report function is found with dlsym. */
#ifndef RP_PRELOAD_CHECK_H
#define RP_PRELOAD_CHECK_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "src/rampart.h"

static int failures;
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Installs fn as rampart's report function; 0, or -1 (with a message) when no rampart library is
 * preloaded. */
static inline int set_report_function(rp_report_fn fn)
{
    rp_report_fn (*set)(rp_report_fn, void *, void **) =
        (rp_report_fn(*)(rp_report_fn, void *, void **))dlsym(RTLD_DEFAULT, "rp_set_report_fn");
    if (!set) {
        fprintf(stderr, "rp_set_report_fn not found: is a rampart library preloaded?\n");
        return -1;
    }
    set(fn, NULL, NULL);
    return 0;
}

/* Runs fn on n threads (at most 16; argument i + 1 for the i-th) and waits for them all. */
static inline void run_threads(void *(*fn)(void *), unsigned n)
{
    pthread_t t[16];
    for (uintptr_t i = 0; i < n && i < 16; i++)
        pthread_create(&t[i], NULL, fn, (void *)(i + 1));
    for (unsigned i = 0; i < n && i < 16; i++)
        pthread_join(t[i], NULL);
}

#endif
