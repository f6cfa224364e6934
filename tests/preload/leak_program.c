/* A program that leaks from two call sites — 3 blocks of 100 bytes from leak_site_a, 2 of 7
 * bytes from leak_site_b — and frees everything else (small, large, aligned and reallocated
 * blocks), built against the system malloc, for running under librampart_malloc_debug.so
 * with leak_report=1 (debug_preload_test.c). It writes nothing (stdio would allocate a buffer
 * that stays live until exit). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <stdlib.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static void *volatile leaked[8]; /* stored, so the compiler keeps the allocations */
static volatile int times_a = 3, times_b = 2;

__attribute__((noinline)) void *leak_site_a(void)
{
    void *p = malloc(100);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *leak_site_b(void)
{
    void *p = calloc(1, 7);
    KEEP_FRAME();
    return p;
}

/* Every allocation here is freed again. */
__attribute__((noinline)) void tidy_work(void)
{
    void *volatile p; /* volatile: each malloc/free pair really happens */
    for (int i = 0; i < 20; i++) {
        p = malloc(1000 + (size_t)i);
        free(p);
    }
    p = malloc(10);
    p = realloc(p, 5000);
    free(p);
    p = malloc(300000); /* page tier */
    free(p);
    void *aligned = NULL;
    if (posix_memalign(&aligned, 4096, 4096) == 0)
        free(aligned);
    KEEP_FRAME();
}

int main(void)
{
    /* One call site per leak site (the bounds are volatile, so the loops stay loops): one
     * allocation stack each. */
    for (int i = 0; i < times_a; i++)
        leaked[i] = leak_site_a();
    for (int i = 0; i < times_b; i++)
        leaked[3 + i] = leak_site_b();
    tidy_work();
    KEEP_FRAME();
    return 0;
}
