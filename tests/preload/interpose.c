/* A program that defines functions named like rampart's public API (rp_alloc, rp_free, ...)
 * and exports them (-rdynamic), as a program with plugins, or one that happens to use the
 * same short names, does. Run with a malloc library in LD_PRELOAD: the library's own calls to
 * those functions (malloc's slow paths, malloc_trim, the stats, arena creation) must stay
 * inside the library. Were they resolved to the program's definitions, every one of them
 * would land here: each fake says which and exits with status 1. Prints "interpose ok". */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void hijacked(const char *name)
{
    char buf[160];
    int n = snprintf(buf, sizeof buf, "FAIL: the malloc library called the program's %s\n", name);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
        (void)w;
    }
    _exit(1);
}

/* The fakes: rampart's names, other signatures need not match (they never return). */
#define FAKE(name)                                                                                                     \
    void *name(void);                                                                                                  \
    void *name(void)                                                                                                   \
    {                                                                                                                  \
        hijacked(#name);                                                                                               \
        return NULL;                                                                                                   \
    }
FAKE(rp_alloc)
FAKE(rp_free)
FAKE(rp_realloc)
FAKE(rp_usable_size)
FAKE(rp_default_heap)
FAKE(rp_heap_create)
FAKE(rp_heap_trim)
FAKE(rp_heap_stats)
FAKE(rp_heap_name)
FAKE(rp_heap_check)
FAKE(rp_flavour)
FAKE(rp_malloc_thread_flush)
FAKE(rp_malloc_stats_print)

static void *thread_body(void *arg)
{
    /* A new thread: its cache and arena are set up (heap creation), it allocates small and
     * large blocks and frees them, and exits (its cache is flushed). */
    (void)arg;
    void *small[64];
    for (int i = 0; i < 64; i++)
        small[i] = malloc(32 + (size_t)i * 40);
    void *big = malloc((size_t)8 << 20);
    for (int i = 0; i < 64; i++)
        free(small[i]);
    free(big);
    return NULL;
}

int main(void)
{
    /* Blocks too big for the caches go to the heap and back (rp_alloc, rp_free). */
    char *big = malloc((size_t)4 << 20);
    if (!big)
        return 2;
    memset(big, 1, 4096);
    big = realloc(big, (size_t)6 << 20);
    if (!big)
        return 2;
    if (malloc_usable_size(big) < ((size_t)6 << 20))
        return 2;
    free(big);
    void *al = NULL;
    if (posix_memalign(&al, 1 << 16, (size_t)3 << 20) != 0)
        return 2;
    free(al);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_body, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    /* Trimming and the stats walk every heap (rp_heap_trim; malloc_stats prints to stderr
     * through rp_malloc_stats_print, rp_heap_stats and rp_heap_name). */
    malloc_trim(0);
    malloc_stats();
    puts("interpose ok");
    return 0;
}
