/* The public API end to end: allocation in both tiers, alignment, calloc, realloc in place
 * and moving, usable size, stats counters, walk, rp_heap_of, errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "rampart.h"
#include "testing.h"

static int count_blocks(const rp_block_info *b, void *arg)
{
    size_t *counts = arg;
    counts[b->state]++;
    return 0;
}

static void test_basic(void)
{
    rp_heap_config cfg = {0};
    cfg.name = "api";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    CHECK(strcmp(rp_heap_name(h), "api") == 0);

    void *a = rp_alloc(h, 100, 0);
    void *b = rp_alloc(h, 200, 0);
    void *c = rp_alloc(h, 0, 0);
    REQUIRE(a && b && c);
    CHECK(((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0 && ((uintptr_t)c & 15) == 0);
    CHECK(a != b && b != c && a != c);
    CHECK(rp_usable_size(a) >= 100);
    CHECK(rp_usable_size(b) >= 200);
    CHECK(rp_heap_of(a) == h && rp_heap_of(c) == h);
    memset(a, 0xaa, 100);
    memset(b, 0xbb, 200);
    CHECK_HEAP(h);

    rp_heap_stats_t st;
    CHECK(rp_heap_stats(h, &st) == 0);
    CHECK(st.blocks_in_use == 3);
    CHECK(st.alloc_calls == 3);
    CHECK(st.spans == 1);

    rp_free(b);
    CHECK(rp_heap_stats(h, &st) == 0);
    CHECK(st.blocks_in_use == 2);
    CHECK(st.free_calls == 1);
    CHECK_HEAP(h);
    rp_free(a);
    rp_free(c);
    rp_free(NULL);
    CHECK(rp_heap_stats(h, &st) == 0);
    CHECK(st.blocks_in_use == 0 && st.bytes_in_use == 0 && st.bytes_usable == 0);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void test_alignment(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    for (size_t align = 1; align <= ((size_t)1 << 22); align <<= 1) {
        size_t sizes[] = {0, 1, 24, 100, 3072, 4096, 5000, 65536, 100000};
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            void *p = rp_alloc(h, sizes[i], align);
            REQUIRE(p);
            size_t want = align < 16 ? 16 : align;
            CHECKF(((uintptr_t)p & (want - 1)) == 0, "size %zu align %zu -> %p", sizes[i], align, p);
            CHECK(rp_usable_size(p) >= sizes[i]);
            memset(p, 0x5a, sizes[i]);
            rp_free(p);
        }
    }
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0);
    rp_heap_destroy(h);
}

static void test_calloc(void)
{
    rp_heap *h = rp_heap_create(NULL);
    unsigned char *p = rp_alloc(h, 1000, 0);
    memset(p, 0xff, 1000);
    rp_free(p);
    unsigned char *q = rp_calloc(h, 10, 100, 0);
    REQUIRE(q);
    int zero = 1;
    for (int i = 0; i < 1000; i++)
        zero &= q[i] == 0;
    CHECK(zero);
    unsigned char *r = rp_calloc(h, 3, 100000, 4096);
    REQUIRE(r);
    CHECK(((uintptr_t)r & 4095) == 0);
    zero = 1;
    for (int i = 0; i < 300000; i++)
        zero &= r[i] == 0;
    CHECK(zero);
    errno = 0;
    CHECK(rp_calloc(h, SIZE_MAX / 2, 3, 0) == NULL && errno == ENOMEM);
    rp_free(q);
    rp_free(r);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* Resident pages among the npages pages at p (page aligned). */
static size_t resident_pages(const void *p, size_t npages)
{
    static unsigned char v[4096];
    REQUIRE(npages <= sizeof v && mincore((void *)p, npages * 4096, v) == 0);
    size_t k = 0;
    for (size_t i = 0; i < npages; i++)
        k += v[i] & 1;
    return k;
}

static size_t nonzero_bytes(const unsigned char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] != 0;
    return k;
}

/* A large calloc made of pages fresh from the OS leaves them alone (release flavour: not one
 * faulted in; the debug flavour fills fresh blocks, then zeroes them), and still reads as
 * zeros; reused dirty pages, whole or in part, are zeroed; pages given back to the OS are
 * left alone again. */
static void test_calloc_large(void)
{
    int release = strcmp(rp_flavour(), "release") == 0;
    rp_heap *h = rp_heap_create(NULL); /* retains 32 MiB of freed pages, dirty */
    REQUIRE(h);
    size_t n = (size_t)8 << 20;
    unsigned char *p = rp_calloc(h, 1, n, 0);
    REQUIRE(p);
    if (release)
        CHECKF(resident_pages(p, n / 4096) == 0, "calloc wrote %zu fresh pages", resident_pages(p, n / 4096));
    CHECK(nonzero_bytes(p, n) == 0);
    memset(p, 0x5a, n);
    rp_free(p);
    /* The same pages again, dirty now: zeroed. */
    unsigned char *q = rp_calloc(h, 1, n, 0);
    REQUIRE(q);
    CHECKF(nonzero_bytes(q, n) == 0, "a reused block has %zu non-zero bytes", nonzero_bytes(q, n));
    memset(q, 0x5a, n);
    /* Partly dirty: a run over freed dirty pages and fresh ones. */
    unsigned char *d = rp_alloc(h, n, 0);
    REQUIRE(d);
    memset(d, 0xa5, n);
    rp_free(d);
    unsigned char *r = rp_calloc(h, 1, 3 * n, 0);
    REQUIRE(r);
    CHECK(nonzero_bytes(r, 3 * n) == 0);
    rp_free(q);
    rp_free(r);
    /* Given back to the OS: zeros again, without a write. */
    rp_heap_trim(h, 0);
    p = rp_calloc(h, 1, n, 0);
    REQUIRE(p);
    if (release)
        CHECK(resident_pages(p, n / 4096) == 0);
    CHECK(nonzero_bytes(p, n) == 0);
    rp_free(p);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

static void test_realloc(void)
{
    /* The debug flavour moves every block (the old one goes to quarantine). */
    int in_place = strcmp(rp_flavour(), "release") == 0;
    rp_heap *h = rp_heap_create(NULL);
    /* Grow in place into a free right neighbour. */
    unsigned char *a = rp_alloc(h, 100, 0);
    unsigned char *b = rp_alloc(h, 1000, 0);
    unsigned char *guard = rp_alloc(h, 16, 0);
    fill(a, 100, 1);
    rp_free(b);
    unsigned char *a2 = rp_realloc(h, a, 900);
    CHECK(in_place ? a2 == a : a2 != a);
    CHECK(filled(a2, 100, 1));
    CHECK_HEAP(h);
    /* Shrink in place: the tail goes back to free space at once. */
    rp_heap_stats_t before_shrink, after_shrink;
    rp_heap_stats(h, &before_shrink);
    unsigned char *a3 = rp_realloc(h, a2, 50);
    rp_heap_stats(h, &after_shrink);
    CHECK(in_place ? a3 == a2 : a3 != a2);
    CHECK(filled(a3, 50, 1));
    CHECK(rp_usable_size(a3) < 900);
    CHECKF(!in_place || (after_shrink.bytes_in_use < before_shrink.bytes_in_use &&
                         after_shrink.bytes_free - before_shrink.bytes_free ==
                             before_shrink.bytes_in_use - after_shrink.bytes_in_use),
           "in use %zu -> %zu, free %zu -> %zu", before_shrink.bytes_in_use, after_shrink.bytes_in_use,
           before_shrink.bytes_free, after_shrink.bytes_free);
    CHECK_HEAP(h);
    /* Move when the neighbour is used; alignment is kept. */
    unsigned char *x = rp_alloc(h, 300, 256);
    unsigned char *y = rp_alloc(h, 16, 0);
    fill(x, 300, 9);
    unsigned char *x2 = rp_realloc(h, x, 20000);
    REQUIRE(x2);
    CHECK(((uintptr_t)x2 & 255) == 0);
    CHECK(filled(x2, 300, 9));
    CHECK_HEAP(h);
    /* Across tiers, both ways. */
    unsigned char *z = rp_realloc(h, x2, 300000);
    REQUIRE(z);
    CHECK(((uintptr_t)z & 255) == 0);
    CHECK(filled(z, 300, 9));
    unsigned char *z2 = rp_realloc(h, z, 100);
    REQUIRE(z2);
    CHECK(filled(z2, 100, 9));
    /* A large block grows in place into the free pages that follow it. */
    unsigned char *big = rp_alloc(h, 200000, 0);
    REQUIRE(big);
    fill(big, 200000, 5);
    unsigned char *bigger = rp_realloc(h, big, 900000);
    CHECK(in_place ? bigger == big : bigger != big);
    CHECK(filled(bigger, 200000, 5));
    CHECK(rp_usable_size(bigger) >= 900000);
    unsigned char *blocker = rp_alloc(h, 100000, 0); /* now whatever follows is used */
    CHECK_HEAP(h);
    unsigned char *moved = rp_realloc(h, bigger, 4000000);
    REQUIRE(moved);
    CHECK(filled(moved, 200000, 5));
    rp_free(moved);
    rp_free(blocker);
    CHECK_HEAP(h);
    /* NULL = alloc; 0 = minimum block. */
    void *n = rp_realloc(h, NULL, 64);
    REQUIRE(n);
    void *n0 = rp_realloc(h, n, 0);
    CHECK(n0 != NULL);
    /* Into another heap. */
    rp_heap *h2 = rp_heap_create(NULL);
    unsigned char *m = rp_realloc(h2, a3, 70);
    REQUIRE(m);
    CHECK(rp_heap_of(m) == h2);
    CHECK(filled(m, 50, 1));
    rp_free(m);
    rp_free(n0);
    rp_free(z2);
    rp_free(y);
    rp_free(guard);
    CHECK_HEAP(h);
    CHECK_HEAP(h2);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0);
    rp_heap_destroy(h);
    rp_heap_destroy(h2);
}

static void test_walk_and_stats(void)
{
    rp_heap *h = rp_heap_create(NULL);
    void *p[10];
    for (int i = 0; i < 10; i++)
        p[i] = rp_alloc(h, 1000 * (size_t)(i + 1), 0);
    void *big = rp_alloc(h, 1 << 20, 0);
    for (int i = 0; i < 10; i += 2)
        rp_free(p[i]);
    size_t counts[4] = {0};
    CHECK(rp_heap_walk(h, count_blocks, counts) == 0);
    CHECK(counts[RP_BLOCK_USED] == 6);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 6);
    CHECK(st.large_blocks == 1);
    CHECK(st.blocks_free == counts[RP_BLOCK_FREE]);
    CHECK(st.largest_free > 0);
    CHECK(st.os_bytes >= st.region_bytes);
    CHECK(st.bytes_usable >= 1 << 20);
    CHECK_HEAP(h);
    for (int i = 1; i < 10; i += 2)
        rp_free(p[i]);
    rp_free(big);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

static void test_errors(void)
{
    rp_heap *h = rp_heap_create(NULL);
    size_t bad[] = {3, 24, 48, 100, 4097};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errno = 0;
        CHECK(rp_alloc(h, 10, bad[i]) == NULL && errno == EINVAL);
    }
    errno = 0;
    CHECK(rp_alloc(h, SIZE_MAX, 0) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_alloc(h, SIZE_MAX - 4096, 4096) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_realloc(h, NULL, SIZE_MAX) == NULL && errno == ENOMEM);
    rp_heap_config bad_cfg = {0};
    bad_cfg.large_threshold = 100;
    errno = 0;
    CHECK(rp_heap_create(&bad_cfg) == NULL && errno == EINVAL);
    CHECK(rp_heap_stats(h, NULL) == -1 && errno == EINVAL);
    CHECK(rp_heap_walk(h, NULL, NULL) == -1);
    CHECK(rp_usable_size(NULL) == 0);
    CHECK(rp_heap_of(&bad_cfg) == NULL);
    CHECK(strcmp(rp_error_kind_name(RP_ERR_DOUBLE_FREE), "double-free") == 0);
    rp_heap_destroy(h);
}

/* The large-block threshold is the heap's to choose: at 16 KiB, a 20 KiB request is a
 * page-tier block (no header, whole pages), a 12 KiB one a span block. */
static void test_large_threshold(void)
{
    rp_heap_config cfg = {0};
    cfg.large_threshold = 16 << 10;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    rp_heap_stats_t st;
    void *big = rp_alloc(h, 20 << 10, 0);
    void *small = rp_alloc(h, 12 << 10, 0);
    REQUIRE(big && small);
    rp_heap_stats(h, &st);
    CHECK(st.large_blocks == 1 && st.spans == 1);
    CHECK(((uintptr_t)big & 4095) == 0 && rp_usable_size(big) >= (20u << 10));
    CHECK(((uintptr_t)small & 4095) != 0);
    /* The default heap keeps a 20 KiB request in a span. */
    rp_heap *d = rp_heap_create(NULL);
    void *mid = rp_alloc(d, 20 << 10, 0);
    rp_heap_stats(d, &st);
    CHECK(mid && st.large_blocks == 0 && st.spans == 1);
    rp_free(big);
    rp_free(small);
    rp_free(mid);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    rp_heap_destroy(d);
}

static void test_default_heap(void)
{
    void *p = rp_alloc(NULL, 123, 0);
    REQUIRE(p);
    CHECK(rp_heap_of(p) == rp_default_heap());
    rp_heap_destroy(rp_default_heap()); /* ignored */
    rp_free(p);
    CHECK_HEAP(NULL);
}

int main(void)
{
    test_basic();
    test_alignment();
    test_calloc();
    test_calloc_large();
    test_realloc();
    test_walk_and_stats();
    test_errors();
    test_large_threshold();
    test_default_heap();
    TEST_MAIN_END();
}
