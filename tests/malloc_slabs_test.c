/* The malloc drop-in's slab blocks (src/malloc/malloc_slabs.h), linked in statically, white-box: small
 * requests (up to 1008 bytes, and aligned ones whose size rounded to the alignment is) are
 * slab blocks without a header, of the request rounded to 16 bytes; fresh blocks are handed
 * out without being written (their pages stay out of memory until the program writes them);
 * misuse is reported: a second free of a block cached or back in its slab, an interior
 * pointer, a pointer into slab memory no block starts at; realloc keeps a block that still
 * fits; malloc_trim gives empty slabs back; statistics count slabs. With --off (the target
 * sets RAMPART_OPTIONS=slabs=0) the same requests are span blocks and the report says so. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"
#include "testing.h"

/* Through volatile pointers: the compiler must not pair and drop the calls. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_realloc)(void *, size_t) = realloc;

static int reports[RP_ERR_KIND_COUNT];
static const void *last_address;
static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    reports[r->kind]++;
    last_address = r->address;
}

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

static int is_slab(const void *p)
{
    uint32_t stride;
    return rp_ms_contains(p) && rp_slab_block_live(&rp_ms_space, p, &stride) != NULL;
}

static void test_sizes_and_alignment(void)
{
    /* A 56-byte request takes 64 bytes: no header. */
    static const size_t sizes[] = {1, 16, 17, 56, 100, 500, 1000, 1008};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        void *p = do_malloc(sizes[i]);
        REQUIRE(p);
        size_t want = (sizes[i] + 15) & ~(size_t)15;
        CHECKF(is_slab(p) && rp_heap_of(p) == NULL && malloc_usable_size(p) == want,
               "malloc(%zu) = %p: slab %d, usable %zu", sizes[i], p, is_slab(p), malloc_usable_size(p));
        memset(p, 0x5a, malloc_usable_size(p));
        do_free(p);
    }
    void *big = do_malloc(1009);
    CHECK(big && !is_slab(big) && rp_heap_of(big) != NULL);
    do_free(big);
    /* Aligned requests whose size rounded up to the alignment is at most 1008: slab blocks of
     * that stride, aligned (the seed scenario's 100 bytes aligned to 64 take 128). */
    for (size_t align = 32; align <= 512; align <<= 1) {
        for (size_t size = 1; size <= 1008; size += 37) {
            void *p = NULL;
            REQUIRE(posix_memalign(&p, align, size) == 0 && p);
            size_t stride = (size + align - 1) & ~(align - 1);
            CHECKF(((uintptr_t)p & (align - 1)) == 0, "%zu/%zu: %p not aligned", size, align, p);
            if (stride <= 1008)
                CHECKF(is_slab(p) && malloc_usable_size(p) == stride, "%zu/%zu: %p slab %d usable %zu", size, align, p,
                       is_slab(p), malloc_usable_size(p));
            do_free(p);
        }
    }
    void *p = NULL;
    REQUIRE(posix_memalign(&p, 64, 100) == 0);
    CHECK(is_slab(p) && malloc_usable_size(p) == 128);
    do_free(p);
    check_malloc("sizes");
}

/* Fresh slab blocks are handed out unwritten: a whole slab of 1008-byte blocks allocated and
 * not written stays out of memory (the target turns huge pages off, so residency is per
 * 4 KiB page). */
static void test_fresh_blocks_untouched(void)
{
    rp_malloc_thread_flush();
    malloc_trim(0);
    enum { N = 200 };
    static char *ps[N];
    for (int i = 0; i < N; i++)
        REQUIRE(ps[i] = do_malloc(1000));
    /* The slab of the last block: find its first page and count resident pages. */
    uintptr_t slab = (uintptr_t)ps[N - 1] & ~(RP_SLAB_BYTES - 1);
    unsigned char vec[RP_SLAB_BYTES / 4096];
    REQUIRE(mincore((void *)slab, RP_SLAB_BYTES, vec) == 0);
    int resident = 0;
    for (size_t i = 0; i < sizeof vec; i++)
        resident += vec[i] & 1;
    printf("a slab of fresh 1008-byte blocks: %d of %zu pages resident\n", resident, sizeof vec);
    CHECKF(resident == 0, "%d pages of a slab of unwritten blocks are resident", resident);
    for (int i = 0; i < N; i++)
        do_free(ps[i]);
    check_malloc("fresh blocks");
}

static void test_misuse(void)
{
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);
    /* A second free while the block is cached: its tag. */
    char *p = do_malloc(64);
    REQUIRE(p && is_slab(p));
    do_free(p);
    do_free(p);
    rp_malloc_free_collected(rp_tc_self);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1 && last_address == p);
    /* ... and once it is back in its slab (a flush may leave it in the transfer cache, still
     * tagged; malloc_trim drains that too): its bit. */
    malloc_trim(0);
    CHECK(!is_slab(p));
    do_free(p);
    rp_malloc_free_collected(rp_tc_self);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 2 && last_address == p);
    /* realloc and malloc_usable_size of it are reported too. */
    errno = 0;
    CHECK(do_realloc(p, 10) == NULL && errno == EINVAL && reports[RP_ERR_DOUBLE_FREE] == 3);
    CHECK(malloc_usable_size(p) == 0 && reports[RP_ERR_DOUBLE_FREE] == 4);
    /* An interior pointer (16 bytes into a 64-byte block): invalid, the block untouched. */
    char *q = do_malloc(64);
    REQUIRE(q && is_slab(q));
    memset(q, 'q', 64);
    do_free(q + 16);
    rp_malloc_free_collected(rp_tc_self);
    CHECK(reports[RP_ERR_INVALID_FREE] == 1 && last_address == q + 16);
    CHECK(q[0] == 'q' && q[63] == 'q' && is_slab(q));
    /* A page-aligned pointer into slab memory where no block starts (the slab space's last
     * slab, never used). */
    char *nowhere = (char *)rp_ms_space.base + rp_ms_space.len - RP_SLAB_BYTES;
    do_free(nowhere);
    rp_malloc_free_collected(rp_tc_self);
    CHECK(reports[RP_ERR_INVALID_FREE] == 2 && last_address == nowhere);
    /* Nothing was cached twice, nothing lost. */
    do_free(q);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 4 && reports[RP_ERR_INVALID_FREE] == 2);
    rp_set_report_fn(old, old_arg, NULL);
    check_malloc("misuse");
}

static void test_realloc(void)
{
    char *p = do_malloc(100); /* stride 112 */
    REQUIRE(p && is_slab(p));
    memset(p, 'r', 100);
    CHECK(do_realloc(p, 112) == p && do_realloc(p, 60) == p); /* fits, at least half used */
    char *q = do_realloc(p, 300);
    REQUIRE(q && q != p && is_slab(q) && malloc_usable_size(q) == 304);
    CHECK(q[0] == 'r' && q[59] == 'r');
    char *r = do_realloc(q, 20); /* less than half of 304: moves to a 32-byte block */
    REQUIRE(r && r != q && malloc_usable_size(r) == 32 && r[0] == 'r' && r[19] == 'r');
    char *big = do_realloc(r, 5000); /* out of the slab classes */
    REQUIRE(big && !is_slab(big) && big[0] == 'r' && big[19] == 'r');
    do_free(big);
    check_malloc("realloc");
}

/* Slabs empty after everything is freed are kept (a few per arena) or released; malloc_trim
 * releases the kept ones. */
static void test_trim_and_stats(void)
{
    enum { N = 20000 };
    static void *ps[N];
    rp_malloc_stats_t a, b, c;
    REQUIRE(rp_malloc_stats(&a) == 0);
    for (int i = 0; i < N; i++)
        REQUIRE(ps[i] = do_malloc(200));
    REQUIRE(rp_malloc_stats(&b) == 0);
    /* 20000 blocks of 208 bytes fill 64 slabs and more. */
    CHECKF(b.slabs >= a.slabs + 60 && b.slab_live_bytes >= a.slab_live_bytes + (size_t)N * 208 &&
               b.slab_bytes == b.slabs * RP_SLAB_BYTES,
           "slabs %zu -> %zu, live %zu -> %zu", a.slabs, b.slabs, a.slab_live_bytes, b.slab_live_bytes);
    CHECK(b.bytes_in_use >= b.slab_live_bytes && b.os_bytes >= b.slab_bytes);
    for (int i = 0; i < N; i++)
        do_free(ps[i]);
    rp_malloc_thread_flush();
    check_malloc("freed");
    malloc_trim(0);
    REQUIRE(rp_malloc_stats(&c) == 0);
    CHECKF(c.slabs_empty == 0 && c.slabs <= a.slabs + 2, "after malloc_trim: %zu slabs (%zu before), %zu kept empty",
           c.slabs, a.slabs, c.slabs_empty);
    struct mallinfo2 mi = mallinfo2();
    CHECK(mi.arena >= c.slab_bytes && mi.uordblks >= c.slab_live_bytes);
    check_malloc("trimmed");
}

static char text[16384];
static size_t text_len;
static void collect(void *arg, const char *chunk)
{
    (void)arg;
    size_t n = strlen(chunk);
    if (text_len + n < sizeof text) {
        memcpy(text + text_len, chunk, n + 1);
        text_len += n;
    }
}

/* The chunk's length below the slab space is inaccessible: a pointer run back 1 MiB from the
 * first blocks faults (the security suite's one_mbyte_underflow). */
static void test_lead_guard(void)
{
    char *lo = (char *)rp_ms_space.base;
    for (size_t back = 1; back <= RP_SLAB_LEAD_GUARD; back <<= 10) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            ((volatile char *)lo)[-(ptrdiff_t)back] = 1;
            _exit(0);
        }
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECKF(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "a write %zu bytes below the slab space did not fault",
               back);
    }
}

int main(int argc, char **argv)
{
    int off = argc > 1 && strcmp(argv[1], "--off") == 0;
    void *first = do_malloc(56);
    REQUIRE(first);
    printf("slabs %s; malloc(56) = %p\n", rp_ms_on() ? "on" : "off", first);
    text_len = 0;
    rp_malloc_stats_print(collect, NULL);
    if (off) {
        CHECK(!rp_ms_on() && !rp_ms_contains(first) && rp_heap_of(first) != NULL);
        CHECK(malloc_usable_size(first) == 64 - 16 + 16); /* an 80-byte span block: 64 usable */
        CHECK(strstr(text, "  slabs: off\n") != NULL);
        do_free(first);
        check_malloc("slabs off");
        TEST_MAIN_END();
    }
    CHECK(rp_ms_on() && is_slab(first) && strstr(text, "  slabs: ") && !strstr(text, "slabs: off"));
    do_free(first);
    test_sizes_and_alignment();
    test_fresh_blocks_untouched();
    test_misuse();
    test_realloc();
    test_trim_and_stats();
    test_lead_guard();
    TEST_MAIN_END();
}
