/* Run under Valgrind by valgrind_test: a program with one leak and one use after free in a
 * rampart heap (debug flavour), which memcheck must report through rampart's client requests. */
#include <stdio.h>

#include "rampart.h"

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* Allocates 100 bytes and drops the only pointer. */
__attribute__((noinline)) void leak_one_block(void)
{
    volatile char *p = rp_alloc(NULL, 100, 0);
    p[0] = 1;
    KEEP_FRAME();
}

/* Writes into a block after freeing it. */
__attribute__((noinline)) void write_after_free(void)
{
    char *p = rp_alloc(NULL, 64, 0);
    p[0] = 1;
    rp_free(p);
    ((volatile char *)p)[10] = 'x';
    KEEP_FRAME();
}

int main(void)
{
    leak_one_block();
    write_after_free();
    /* Ordinary use stays silent: a live block written and read, a realloc, a free. */
    char *q = rp_alloc(NULL, 32, 0);
    for (int i = 0; i < 32; i++)
        q[i] = (char)i;
    q = rp_realloc(NULL, q, 4000);
    int sum = 0;
    for (int i = 0; i < 32; i++)
        sum += q[i];
    rp_free(q);
    printf("sum %d\n", sum);
    return 0;
}
