/* free() decides at its call what a pointer is (issue: a free that never acts on a block it
 * has not examined), under the default options — the free batch of 32 included:
 *   - a block of a user heap (rp_heap_create) is freed at the call, so destroying the heap and
 *     reusing its address cannot make a later, unrelated free act on it;
 *   - foreign memory (an mmap, .bss, the stack) is reported as an invalid free at the call and
 *     never recorded, so unmapping it afterwards cannot make a later malloc fault;
 *   - a header forged outside rampart's memory is never trusted, even with the right check
 *     word: the address map is asked first, and malloc never hands the address out;
 *   - a second free of a mapped block (unmapped by the first) is a double free.
 * Run again with ignore_foreign_free=1 (argument --ignore): foreign frees are counted and
 * ignored, the rest is unchanged. Linked statically with the drop-in, white-box. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/block.h"
#include "src/malloc/arena.h"
#include "report_count.h"
#include "testing.h"

#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0
#endif

/* Called through volatile pointers, so that the compiler cannot pair and drop them. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

static int ignoring; /* run with ignore_foreign_free=1 */

/* Reports a foreign free earns here: none where they are ignored. */
static int foreign_reports(void) { return ignoring || RP_MALLOC_COEXISTS ? 0 : 1; }

/* Enough frees and mallocs of every kind to examine any recorded free many times over. */
static void churn(void)
{
    static void *keep[256];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 256; i++)
            keep[i] = do_malloc((size_t)(i * 37 % 3000) + 1);
        for (int i = 0; i < 256; i++)
            do_free(keep[i]);
    }
    do_free(do_malloc(1 << 20));
    rp_malloc_thread_flush();
}

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

/* free() of a user heap's block frees it at once; after the heap is destroyed and a new one
 * hands out the same address, nothing frees the new block behind the program's back. */
static void test_user_heap_block(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *p = rp_alloc(h, 100, 0);
    REQUIRE(p);
    do_free(p);
    rp_heap_stats_t st;
    REQUIRE(rp_heap_stats(h, &st) == 0);
    CHECKF(st.blocks_in_use == 0, "free() of a user heap's block left %zu blocks in use", st.blocks_in_use);
    rp_heap_destroy(h);
    rp_heap *h2 = rp_heap_create(NULL);
    REQUIRE(h2);
    char *q = rp_alloc(h2, 100, 0);
    REQUIRE(q);
    memset(q, 'q', 100);
    printf("user heap: freed %p, the next heap's block is %p%s\n", (void *)p, (void *)q, p == q ? " (same)" : "");
    churn();
    REQUIRE(rp_heap_stats(h2, &st) == 0);
    CHECKF(st.blocks_in_use == 1, "the new heap's block was freed behind the program's back (%zu in use)",
           st.blocks_in_use);
    char why[256];
    CHECKF(rp_heap_check(h2, why, sizeof why) == 0, "%s", why);
    CHECK(q[0] == 'q' && q[99] == 'q');
    rp_free(q);
    rp_heap_destroy(h2);
}

/* free() of a pointer into an mmap is reported at its call; unmapping the memory afterwards
 * cannot hurt a later malloc (nothing of it was recorded). */
static void test_foreign_mapping(void)
{
    char *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    memset(reports, 0, sizeof reports);
    rp_malloc_stats_t s0, s1;
    REQUIRE(rp_malloc_stats(&s0) == 0);
    errno = 77;
    do_free(m + 64);
    CHECK(errno == 77);
    CHECKF(reports[RP_ERR_INVALID_FREE] == foreign_reports(), "free(mmap + 64): %d invalid-free reports at the call",
           reports[RP_ERR_INVALID_FREE]);
    CHECK(foreign_reports() == 0 || last_address == m + 64);
    REQUIRE(rp_malloc_stats(&s1) == 0);
    CHECK(s1.foreign_frees == s0.foreign_frees + 1);
    munmap(m, 2 * 4096);
    churn();
    CHECK(reports[RP_ERR_INVALID_FREE] == foreign_reports());
    check_malloc("after a foreign free");
}

/* A header with a valid check word (made with the arenas' real secret: the strongest forger)
 * in front of a pointer into .bss and one on the stack: free() asks the address map first, so
 * the header is never trusted, the free is reported, and malloc never returns the address. */
static _Alignas(64) unsigned char bss_area[4096];

static void forge(unsigned char *area, uint32_t size)
{
    rp_block *b = (rp_block *)(void *)(area + 64);
    memset(area, 0, 256);
    b->prev_size = 0;
    b->size = size;
    b->bits = 0;
    b->check = rp_block_check_fields(rp_arena_key(), (uintptr_t)b, 0, size, 0);
}

static void test_forged_headers(void)
{
    _Alignas(64) unsigned char stack_area[4096];
    unsigned char *areas[2] = {bss_area, stack_area};
    const uint32_t size = 2048; /* a span class of the thread cache */
    for (int k = 0; k < 2; k++) {
        forge(areas[k], size);
        void *fake = areas[k] + 64 + RP_USER_OFFSET;
        memset(reports, 0, sizeof reports);
        do_free(fake);
        CHECKF(reports[RP_ERR_INVALID_FREE] == foreign_reports(), "%s: forged header: %d invalid-free reports",
               k ? "stack" : ".bss", reports[RP_ERR_INVALID_FREE]);
        static void *got[2000];
        int handed_out = 0;
        for (int i = 0; i < 2000; i++) {
            got[i] = do_malloc(size - RP_USER_OFFSET);
            handed_out += got[i] == fake;
        }
        for (int i = 0; i < 2000; i++)
            do_free(got[i]);
        CHECKF(handed_out == 0, "%s: malloc returned the forged block %d times", k ? "stack" : ".bss", handed_out);
        check_malloc("after a forged free");
    }
}

/* A mapped block (32 MiB and up) is unmapped by its free: a second free is a double free,
 * reported even where foreign frees are ignored. */
static void test_mapped_block_double_free(void)
{
    char *p = do_malloc((size_t)64 << 20);
    REQUIRE(p);
    p[0] = 1;
    do_free(p);
    memset(reports, 0, sizeof reports);
    do_free(p);
    CHECKF(reports[RP_ERR_DOUBLE_FREE] == 1 && last_address == p, "second free of a mapped block: %d double-free reports",
           reports[RP_ERR_DOUBLE_FREE]);
    CHECK(reports[RP_ERR_INVALID_FREE] == 0);
}

int main(int argc, char **argv)
{
    ignoring = argc > 1 && strcmp(argv[1], "--ignore") == 0;
    void *old_arg;
    rp_set_report_fn(count_report, NULL, &old_arg);
    do_free(do_malloc(1)); /* the thread's cache exists */
    test_user_heap_block();
    test_foreign_mapping();
    test_forged_headers();
    test_mapped_block_double_free();
    TEST_MAIN_END();
}
