/* A corpus of one-bug programs (tools/bug_corpus.sh): `bug_corpus CASE` runs one case, which
 * holds exactly one bug of one class, then exits normally; a tool that catches the bug reports
 * it (and usually stops the program). Built against the C library's malloc, as any program, so
 * the same binary runs under a preloaded rampart library, and built with -fsanitize=address for
 * AddressSanitizer. Every block is allocated in make_block (or its calloc/memalign/realloc
 * siblings) and freed in release_block, so a report can be checked to name the allocating and
 * freeing functions; the bug itself is in the case's own function. `bug_corpus list` prints the
 * cases with the kind of report each should produce (rampart's name; ASan's in the script). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))

/* Through volatile pointers: the compiler neither removes nor moves the accesses and calls (a
 * memset into a block freed right after is otherwise dropped as a dead store). */
static volatile unsigned char sink;
static void *volatile keep;
static void *(*volatile do_memset)(void *, int, size_t) = memset;
static void *(*volatile do_memcpy)(void *, const void *, size_t) = memcpy;
static char *(*volatile do_strcpy)(char *, const char *) = strcpy;

NOINLINE static unsigned char *make_block(size_t n) { return malloc(n); }
NOINLINE static unsigned char *make_zeroed_block(size_t n) { return calloc(1, n); }
NOINLINE static unsigned char *make_aligned_block(size_t align, size_t n) { return memalign(align, n); }
NOINLINE static unsigned char *grow_block(unsigned char *p, size_t n) { return realloc(p, n); }
NOINLINE static void release_block(void *p) { free(p); }

NOINLINE static void write_at(unsigned char *p, long i) { ((volatile unsigned char *)p)[i] = 0x41; }
NOINLINE static void read_at(const unsigned char *p, long i) { sink = ((const volatile unsigned char *)p)[i]; }

/* Allocations that wait in quarantine ahead of a freed block: the bug happens "late". */
NOINLINE static void churn(void)
{
    for (int i = 0; i < 2000; i++)
        release_block(make_block(64 + (size_t)(i % 7) * 16));
}

static int global_block[16];

NOINLINE static void overflow_1(void) { unsigned char *p = make_block(32); write_at(p, 32); release_block(p); }
NOINLINE static void overflow_8(void) { unsigned char *p = make_block(32); write_at(p, 39); release_block(p); }
NOINLINE static void overflow_100(void) { unsigned char *p = make_block(32); write_at(p, 131); release_block(p); }
NOINLINE static void underflow_1(void) { unsigned char *p = make_block(32); write_at(p, -1); release_block(p); }
NOINLINE static void underflow_8(void) { unsigned char *p = make_block(32); write_at(p, -8); release_block(p); }
NOINLINE static void underflow_100(void) { unsigned char *p = make_block(300); write_at(p, -100); release_block(p); }
NOINLINE static void read_over_1(void) { unsigned char *p = make_block(32); read_at(p, 32); release_block(p); }
NOINLINE static void read_over_8(void) { unsigned char *p = make_block(32); read_at(p, 39); release_block(p); }
NOINLINE static void read_over_100(void) { unsigned char *p = make_block(32); read_at(p, 131); release_block(p); }
NOINLINE static void read_under_1(void) { unsigned char *p = make_block(32); read_at(p, -1); release_block(p); }
NOINLINE static void read_under_8(void) { unsigned char *p = make_block(32); read_at(p, -8); release_block(p); }
NOINLINE static void calloc_overflow(void) { unsigned char *p = make_zeroed_block(48); write_at(p, 48); release_block(p); }
NOINLINE static void strcpy_off_by_one(void)
{
    const char *s = "an off-by-one string copy";
    char *p = (char *)make_block(strlen(s)); /* no room for the terminator */
    do_strcpy(p, s);
    release_block(p);
}
NOINLINE static void memalign_overflow(void) { unsigned char *p = make_aligned_block(64, 40); write_at(p, 40); release_block(p); }
NOINLINE static void large_overflow(void) { unsigned char *p = make_block(1 << 20); write_at(p, 1 << 20); release_block(p); }
NOINLINE static void mapped_overflow(void) { unsigned char *p = make_block(64 << 20); write_at(p, 64 << 20); release_block(p); }
NOINLINE static void memset_overflow(void) { unsigned char *p = make_block(64); do_memset(p, 0, 65); release_block(p); }
NOINLINE static void memcpy_underflow(void)
{
    static const char src[64];
    unsigned char *p = make_block(64);
    do_memcpy(p - 4, src, 16);
    release_block(p);
}
NOINLINE static void uaf_write_early(void) { unsigned char *p = make_block(48); release_block(p); write_at(p, 8); }
NOINLINE static void uaf_write_late(void) { unsigned char *p = make_block(48); release_block(p); churn(); write_at(p, 8); }
NOINLINE static void uaf_read_early(void) { unsigned char *p = make_block(48); release_block(p); read_at(p, 8); }
NOINLINE static void uaf_read_late(void) { unsigned char *p = make_block(48); release_block(p); churn(); read_at(p, 8); }
NOINLINE static void uaf_memcpy(void)
{
    static const char src[64];
    unsigned char *p = make_block(64);
    release_block(p);
    do_memcpy(p, src, 64);
}
NOINLINE static void realloc_old_write(void)
{
    unsigned char *p = make_block(32), *q = grow_block(p, 4000);
    write_at(p, 4); /* through the pointer realloc replaced */
    release_block(q);
}
NOINLINE static void realloc_old_read(void)
{
    unsigned char *p = make_block(32), *q = grow_block(p, 4000);
    read_at(p, 4);
    release_block(q);
}
NOINLINE static void double_free(void) { unsigned char *p = make_block(40); release_block(p); release_block(p); }
NOINLINE static void double_free_late(void)
{
    unsigned char *p = make_block(40);
    release_block(p);
    churn();
    release_block(p);
}
NOINLINE static void free_stack(void)
{
    char local[32];
    keep = local;
    release_block(keep);
}
NOINLINE static void free_global(void) { release_block(global_block); }
NOINLINE static void free_interior(void) { unsigned char *p = make_block(64); release_block(p + 16); release_block(p); }
NOINLINE static void free_mmap(void)
{
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    release_block((char *)m + 64);
    munmap(m, 4096);
}
NOINLINE static void leak_simple(void) { keep = make_block(77); keep = NULL; }
static void *leak_thread_body(void *arg)
{
    (void)arg;
    keep = make_block(99);
    keep = NULL;
    return NULL;
}
NOINLINE static void leak_in_thread(void)
{
    pthread_t t;
    pthread_create(&t, NULL, leak_thread_body, NULL);
    pthread_join(t, NULL);
}
NOINLINE static void leak_via_realloc(void)
{
    unsigned char *p = make_block(16);
    keep = grow_block(p, 5000);
    keep = NULL;
}

/* name, function, rampart's report kind ("leak" for a leak report), the debug library's modes
 * that must catch it (tools/bug_corpus.sh --check): debug (the defaults), guard (guard=all),
 * left (guard=all:guard_left=1). Reads need a guard page; an underflow of 100 bytes lands in the
 * block before (ASan misses it too) and is caught only where no block lies before (guard). */
static const struct {
    const char *name;
    void (*fn)(void);
    const char *kind;
    const char *caught_by;
} cases[] = {
    {"overflow_1", overflow_1, "heap-buffer-overflow", "debug,guard,left"},
    {"overflow_8", overflow_8, "heap-buffer-overflow", "debug,guard,left"},
    {"overflow_100", overflow_100, "heap-buffer-overflow", "debug,guard,left"},
    {"underflow_1", underflow_1, "heap-buffer-underflow", "debug,guard,left"},
    {"underflow_8", underflow_8, "heap-buffer-underflow", "debug,guard,left"},
    {"underflow_100", underflow_100, "heap-buffer-underflow", "guard,left"},
    {"read_over_1", read_over_1, "heap-buffer-overflow", "guard"},
    {"read_over_8", read_over_8, "heap-buffer-overflow", "guard"},
    {"read_over_100", read_over_100, "heap-buffer-overflow", "guard"},
    {"read_under_1", read_under_1, "heap-buffer-underflow", "left"},
    {"read_under_8", read_under_8, "heap-buffer-underflow", "left"},
    {"calloc_overflow", calloc_overflow, "heap-buffer-overflow", "debug,guard,left"},
    {"strcpy_off_by_one", strcpy_off_by_one, "heap-buffer-overflow", "debug,guard,left"},
    {"memalign_overflow", memalign_overflow, "heap-buffer-overflow", "debug,guard,left"},
    {"large_overflow", large_overflow, "heap-buffer-overflow", "debug,guard,left"},
    {"mapped_overflow", mapped_overflow, "heap-buffer-overflow", "debug,guard,left"},
    {"memset_overflow", memset_overflow, "heap-buffer-overflow", "debug,guard,left"},
    {"memcpy_underflow", memcpy_underflow, "heap-buffer-underflow", "debug,guard,left"},
    {"uaf_write_early", uaf_write_early, "use-after-free", "debug,guard,left"},
    {"uaf_write_late", uaf_write_late, "use-after-free", "debug,guard,left"},
    {"uaf_read_early", uaf_read_early, "use-after-free", "guard,left"},
    {"uaf_read_late", uaf_read_late, "use-after-free", "guard,left"},
    {"uaf_memcpy", uaf_memcpy, "use-after-free", "debug,guard,left"},
    {"realloc_old_write", realloc_old_write, "use-after-free", "debug,guard,left"},
    {"realloc_old_read", realloc_old_read, "use-after-free", "guard,left"},
    {"double_free", double_free, "double-free", "debug,guard,left"},
    {"double_free_late", double_free_late, "double-free", "debug,guard,left"},
    {"free_stack", free_stack, "invalid-free", "debug,guard,left"},
    {"free_global", free_global, "invalid-free", "debug,guard,left"},
    {"free_interior", free_interior, "invalid-free", "debug,guard,left"},
    {"free_mmap", free_mmap, "invalid-free", "debug,guard,left"},
    {"leak_simple", leak_simple, "leak", "debug,guard,left"},
    {"leak_in_thread", leak_in_thread, "leak", "debug,guard,left"},
    {"leak_via_realloc", leak_via_realloc, "leak", "debug,guard,left"},
};

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "list";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(name, "list") == 0) {
            printf("%s %s %s\n", cases[i].name, cases[i].kind, cases[i].caught_by);
        } else if (strcmp(name, cases[i].name) == 0) {
            cases[i].fn();
            puts("bug_corpus: the program ran to its end");
            return 0;
        }
    }
    if (strcmp(name, "list") != 0) {
        fprintf(stderr, "bug_corpus: no case %s\n", name);
        return 2;
    }
    return 0;
}
