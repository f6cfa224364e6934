/* The hardened profile (src/malloc/hardened.h; RAMPART_OPTIONS=hardened=1 for this test, and
 * RP_HEAP_HARDENED for a core heap): freed memory reads as zeros and malloc hands out zeros;
 * a freed block is not handed out again at once, and blocks come back in an unpredictable
 * order; a write after free is reported when the block leaves the quarantine; a double free
 * of a quarantined block is reported; every block keeps its request and an overflow past it,
 * or past the whole block, is reported at the free; the slab space's chunks end in a guard. Drop-in linked statically, white-box. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "report_count.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/thread_cache.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

static const size_t sizes[] = {8, 100, 1000, 2000, 8000, 40000, 256 << 10};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

static size_t nonzero(const unsigned char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] != 0;
    return k;
}

/* Freed memory reads as zeros (a stale read leaks nothing); a reused block is zero too. */
static void test_wiped(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        unsigned char *p = do_malloc(sizes[i]);
        REQUIRE(p);
        memset(p, 'A', sizes[i]);
        do_free(p);
        CHECKF(nonzero(p, sizes[i]) == 0, "%zu-byte block: %zu bytes not wiped by free", sizes[i],
               nonzero(p, sizes[i]));
    }
    /* As the suite's zero_on_malloc: many blocks filled and freed, then one allocated. */
    static unsigned char *many[4096];
    for (int i = 0; i < 4096; i++) {
        many[i] = do_malloc(100);
        memset(many[i], 'A', 100);
    }
    for (int i = 0; i < 4096; i++)
        do_free(many[i]);
    unsigned char *q = do_malloc(100);
    CHECK(nonzero(q, 100) == 0);
    do_free(q);
    check_malloc("after the wipes");
}

/* The block just freed does not come back (nor for a smaller request), and the order blocks
 * come back in is not the reverse of the frees. */
static void test_reuse_unpredictable(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        void *p = do_malloc(sizes[i]);
        do_free(p);
        void *q = do_malloc(sizes[i]), *r = do_malloc(sizes[i] / 2 ? sizes[i] / 2 : 1);
        CHECKF(q != p && r != p, "%zu-byte block handed out again at once", sizes[i]);
        do_free(q);
        do_free(r);
    }
    enum { N = 48 };
    void *a[N], *b[N];
    for (int i = 0; i < N; i++)
        a[i] = do_malloc(200);
    for (int i = 0; i < N; i++)
        do_free(a[i]);
    for (int k = 0; k < 200; k++) /* the quarantine turns over */
        do_free(do_malloc(200));
    int lifo = 0;
    for (int i = 0; i < N; i++)
        b[i] = do_malloc(200);
    for (int i = 0; i < N; i++)
        lifo += b[i] == a[N - 1 - i];
    CHECKF(lifo < N / 2, "%d of %d blocks came back in reverse free order", lifo, N);
    for (int i = 0; i < N; i++)
        do_free(b[i]);
    check_malloc("after the reuse cases");
}

/* Fresh slab blocks do not come out in address order (the refill's batch is shuffled into the
 * bin instead of becoming a run). */
static void test_fresh_blocks_shuffled(void)
{
    enum { N = 32 };
    unsigned char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = do_malloc(700); /* a class nothing else here uses */
    if (!rp_ms_contains(p[0])) {
        printf("slabs off: fresh-block order case skipped\n");
    } else {
        int in_order = 0;
        for (int i = 1; i < N; i++)
            in_order += p[i] > p[i - 1] && (size_t)(p[i] - p[i - 1]) <= 1024;
        CHECKF(in_order < N / 2, "%d of %d fresh blocks followed the one before in address order", in_order, N - 1);
    }
    for (int i = 0; i < N; i++)
        do_free(p[i]);
    check_malloc("after the fresh blocks");
}

/* A write after free is reported when the block leaves the quarantine; a second free while it
 * waits is a double free. */
static void test_write_after_free(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        memset(reports, 0, sizeof reports);
        unsigned char *p = do_malloc(sizes[i]);
        do_free(p);
        do_free(p);
        CHECKF(reports[RP_ERR_DOUBLE_FREE] == 1, "%zu: a double free in quarantine: %d reports", sizes[i],
               reports[RP_ERR_DOUBLE_FREE]);
        p[0] = 'A';
        for (int k = 0; k < 400; k++)
            do_free(do_malloc(sizes[i]));
        rp_malloc_thread_flush(); /* whatever is left leaves now */
        CHECKF(reports[RP_ERR_USE_AFTER_FREE_WRITE] == 1 && (const unsigned char *)last_address == p,
               "%zu-byte block written after free: %d reports", sizes[i], reports[RP_ERR_USE_AFTER_FREE_WRITE]);
    }
    check_malloc("after the writes after free");
}

/* A write after free that the program's end overtakes: the exiting thread's quarantine is
 * checked at exit, reported with the default handler (an abort), in a child process. */
static void test_write_after_free_at_exit(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            rp_set_report_fn(NULL, NULL, NULL);
            unsigned char *p = do_malloc(sizes[i]);
            do_free(p);
            p[sizes[i] / 2] = 'A';
            exit(0);
        }
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
               "%zu bytes written after free, then exit: status %#x, not an abort", sizes[i], status);
    }
    /* and a clean exit stays clean */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        rp_set_report_fn(NULL, NULL, NULL);
        do_free(do_malloc(100));
        exit(0);
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a clean exit: status %#x", status);
}

static int all_reports(void)
{
    int n = 0;
    for (int k = 0; k < RP_ERR_KIND_COUNT; k++)
        n += reports[k];
    return n;
}

/* The whole block p lies in (its stride, or the core's usable size). */
static size_t whole_block(const void *p)
{
    uint32_t stride;
    return rp_slab_block_live(&rp_ms_space, p, &stride) ? stride : rp_usable_size(p);
}

/* Every block keeps its request (src/malloc/seal.h): malloc_usable_size says it, one byte or 32
 * past it (where the block's canary reaches that far) are reported at the free (a
 * heap-buffer-overflow), and the free is abandoned: undone, the block frees cleanly. */
static void test_overflow_past_request(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        for (size_t past = 0; past < 32; past += 31) {
            unsigned char *p = do_malloc(sizes[i]);
            if (past && whole_block(p) < sizes[i] + past + 1 + 8) {
                do_free(p); /* the 32nd byte lies past the canary: test_overflow_past_block's case */
                continue;
            }
            CHECKF(malloc_usable_size(p) == sizes[i], "%zu bytes: malloc_usable_size %zu", sizes[i],
                   malloc_usable_size(p));
            memset(reports, 0, sizeof reports);
            p[sizes[i] + past] ^= 0x41;
            do_free(p);
            CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1 && all_reports() == 1,
                   "%zu bytes, byte %zu past the request: %d overflow reports, %d in all", sizes[i], past,
                   reports[RP_ERR_HEAP_BUFFER_OVERFLOW], all_reports());
            p[sizes[i] + past] ^= 0x41;
            do_free(p);
            CHECKF(all_reports() == 1, "%zu bytes: the free after the undo reported", sizes[i]);
        }
    }
    check_malloc("after the overflows past the request");
}

/* One byte past the whole block (its seal intact) lands in what follows it: the next header of
 * a span block (the next block's, or the span's end), or the next slot of a slab block when that
 * one is free; reported at the free. */
static void test_overflow_past_block(void)
{
    const size_t shapes[] = {100, 2000, 8000};
    for (unsigned i = 0; i < 3; i++) {
        memset(reports, 0, sizeof reports);
        unsigned char *p = do_malloc(shapes[i]);
        uint32_t stride;
        int slab = rp_slab_block_live(&rp_ms_space, p, &stride) != NULL;
        size_t whole = whole_block(p);
        /* A span block's next header stays a live block's; a slab block's next slot stays free
         * (a live one is the program's, only checked at its own free). */
        unsigned char *next = slab ? NULL : do_malloc(shapes[i]);
        p[whole] ^= 0x41;
        do_free(p);
        CHECKF(all_reports() == 1 && (reports[RP_ERR_CORRUPT_BLOCK] == 1 || reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1 ||
                                      reports[RP_ERR_HEAP_BUFFER_UNDERFLOW] == 1),
               "%zu bytes: a byte past the whole block: %d reports (invalid %d, double %d, corrupt %d, overflow %d, "
               "underflow %d, write after free %d)",
               shapes[i], all_reports(), reports[RP_ERR_INVALID_FREE], reports[RP_ERR_DOUBLE_FREE],
               reports[RP_ERR_CORRUPT_BLOCK], reports[RP_ERR_HEAP_BUFFER_OVERFLOW], reports[RP_ERR_HEAP_BUFFER_UNDERFLOW],
               reports[RP_ERR_USE_AFTER_FREE_WRITE]);
        p[whole] ^= 0x41; /* undo, so the heap can be used again */
        do_free(p);
        do_free(next);
    }
    check_malloc("after the overflows past the block");
}

/* A free looks at the page-tier block below it without the heap's lock, while another thread
 * may free that block and its descriptor come to say anything: a usable size that reaches past
 * the freed block (here planted) is not followed, and nothing is reported. Page-aligned 8-page
 * blocks (the request and the seal fill them) until two lie back to back. */
static void test_neighbour_descriptor_changing(void)
{
    enum { N = 64 };
    const size_t bytes = 8 * 4096;
    unsigned char *blocks[N];
    int tried = 0;
    for (int i = 0; i < N; i++)
        CHECK(posix_memalign((void **)&blocks[i], 4096, bytes - 16) == 0);
    for (int i = 0; i < N && !tried; i++) {
        for (int j = 0; j < N && !tried; j++) {
            if (blocks[j] != blocks[i] + bytes)
                continue;
            rp_region *r = rp_pagemap_lookup(blocks[i]);
            rp_page *below = rp_page_of(r, blocks[i]);
            if (!r || below->state != RP_PAGE_LARGE || below->u.large.lead_pages != 0)
                continue;
            tried = 1;
            uint64_t usable = below->u.large.usable;
            below->u.large.usable = (uint64_t)1 << 40; /* read mid-change: far past the block */
            memset(reports, 0, sizeof reports);
            do_free(blocks[j]);
            blocks[j] = NULL;
            CHECKF(all_reports() == 0, "a changing descriptor below: %d reports", all_reports());
            below->u.large.usable = usable;
        }
    }
    CHECK(tried); /* two of 64 fresh 8-page blocks lie back to back */
    for (int i = 0; i < N; i++)
        do_free(blocks[i]);
    check_malloc("after the changing neighbour");
}

/* The last slab of the chunk a slab block lies in is inaccessible. */
static void test_guard_slab(void)
{
    char *p = do_malloc(64);
    if (!rp_ms_contains(p)) {
        printf("slabs off: guard case skipped\n");
        do_free(p);
        return;
    }
    uintptr_t chunk = (uintptr_t)p & ~(RP_SLAB_CHUNK_BYTES - 1);
    volatile char *guard = (volatile char *)(chunk + RP_SLAB_CHUNK_BYTES - RP_SLAB_BYTES);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        guard[0] = 1;
        _exit(0);
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    /* SIGSEGV, or under a sanitizer its report and a failing exit */
    CHECKF(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "a write to a chunk's guard slab did not fault");
    do_free(p);
}

/* A core heap with RP_HEAP_HARDENED wipes what it frees too. */
static void test_core_heap(void)
{
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_HARDENED;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    size_t core_sizes[] = {100, 5000, 1 << 20};
    for (unsigned i = 0; i < 3; i++) {
        unsigned char *p = rp_alloc(h, core_sizes[i], 0);
        REQUIRE(p);
        memset(p, 'A', core_sizes[i]);
        rp_free(p);
        CHECKF(nonzero(p, core_sizes[i]) == 0, "core heap: %zu-byte block not wiped", core_sizes[i]);
    }
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

int main(void)
{
    void *old_arg;
    rp_set_report_fn(count_report, NULL, &old_arg);
    do_free(do_malloc(1));
    REQUIRE(rp_tc_self && rp_tc_self->hardened);
    test_wiped();
    test_reuse_unpredictable();
    test_fresh_blocks_shuffled();
    test_write_after_free();
    test_write_after_free_at_exit();
    test_overflow_past_request();
    test_overflow_past_block();
    test_neighbour_descriptor_changing();
    test_guard_slab();
    test_core_heap();
    TEST_MAIN_END();
}
