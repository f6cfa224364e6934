/* A program with a one-byte heap overflow, built against the system malloc, for running
 * under librampart_malloc_debug.so (debug_preload_test.c). Before the faulty free it prints
 * what the test compares the report with: the block, and where dladdr puts its functions
 * (function starts, the module's load bias). With on_error=continue it goes on and says so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A compiler barrier after a call whose caller must keep its frame (no tail call). */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* The program calls malloc and free through pointers, as Python's allocator table does: in a
 * non-PIE build their addresses are then the program's PLT entries, for every module. */
void *(*volatile allocate)(size_t) = malloc;
void (*volatile release)(void *) = free;

static int alloc_line, release_line; /* the lines of the calls into the allocator */

__attribute__((noinline)) char *make_buffer(size_t n)
{
    char *p = allocate(n); alloc_line = __LINE__;
    KEEP_FRAME();
    return p;
}

/* Copies a NUL-terminated string of n characters: one byte too many for an n-byte buffer. */
__attribute__((noinline)) void fill_buffer(char *p, size_t n)
{
    memset(p, 'a', n);
    p[n] = 0;
    KEEP_FRAME();
}

__attribute__((noinline)) void release_buffer(char *p)
{
    release(p); release_line = __LINE__;
    KEEP_FRAME();
}

static void print_function(const char *name, void *fn)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
        printf("FUNCTION %s %p %p\n", name, fn, (void *)lm->l_addr);
}

int main(void)
{
    char *p = make_buffer(17);
    printf("BLOCK %p 17\n", (void *)p);
    print_function("make_buffer", (void *)make_buffer);
    print_function("release_buffer", (void *)release_buffer);
    print_function("main", (void *)main);
    release_buffer(NULL); /* sets release_line */
    printf("LINES %d %d\n", alloc_line, release_line);
    fflush(stdout);
    fill_buffer(p, 17);
    release_buffer(p);
    KEEP_FRAME();
    printf("continued\n");
    return 0;
}
