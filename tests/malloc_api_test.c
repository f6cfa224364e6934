/* The malloc drop-in's C API, linked in statically (link-time replacement): every glibc
 * semantic the drop-in promises, each asserted — alignment, errno values, malloc(0),
 * realloc(p, 0), posix_memalign's EINVAL without touching errno, overflow checks, usable
 * sizes, the aliases — plus misuse reports (double free of a cached block, realloc of a freed
 * block, foreign pointers), the bounded thread cache and the consistency of the arenas and
 * the cache after every group (rp_malloc_check). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/malloc/malloc_slabs.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

void cfree(void *p);
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void free_sized(void *p, size_t size);

/* The compiler must not fold or elide the calls under test (malloc(SIZE_MAX) == NULL, ...). */
static void *(*volatile do_malloc)(size_t) = malloc;
static void *(*volatile do_calloc)(size_t, size_t) = calloc;
static void *(*volatile do_realloc)(void *, size_t) = realloc;
static void *(*volatile do_reallocarray)(void *, size_t, size_t) = reallocarray;
static void (*volatile do_free)(void *) = free;
/* glibc declares memalign with alloc_align: a call with an alignment that is not a power of
 * two (which the drop-in accepts, as glibc does) would be undefined behaviour at the call. */
static void *(*volatile do_memalign)(size_t, size_t) = memalign;

/* Alignments the compiler must not see (clang rejects constant bad ones at compile time). */
static size_t opaque(size_t x)
{
    volatile size_t v = x;
    return v;
}

#define CHECK_MALLOC_OK()                                                                      \
    do {                                                                                       \
        char why_[256];                                                                        \
        if (rp_malloc_check(why_, sizeof why_) != 0) {                                         \
            fprintf(stderr, "%s:%d: rp_malloc_check: %s\n", __FILE__, __LINE__, why_);          \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

/* Reports are counted instead of aborting. */
#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0
#endif

/* Frees of slab blocks may be examined in the thread's free batch (the default options,
 * thread_cache.h T5): a stats call examines them, so misuse cases see their reports here. */
static void settle(void)
{
    rp_malloc_stats_t st;
    rp_malloc_stats(&st);
}

static int reports[RP_ERR_KIND_COUNT];
static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    reports[r->kind]++;
}

static void test_malloc_basics(void)
{
    /* malloc(0): unique, freeable, 16-byte aligned pointers. */
    void *z[64];
    for (int i = 0; i < 64; i++) {
        z[i] = do_malloc(0);
        REQUIRE(z[i]);
        CHECK(((uintptr_t)z[i] & 15) == 0);
        for (int j = 0; j < i; j++)
            CHECK(z[i] != z[j]);
    }
    for (int i = 0; i < 64; i++)
        do_free(z[i]);
    /* Every size 0..5000 and some big ones: aligned to 16, usable >= size, writable, disjoint. */
    static unsigned char *p[5001];
    for (size_t n = 0; n <= 5000; n++) {
        p[n] = do_malloc(n);
        REQUIRE(p[n]);
        CHECKF(((uintptr_t)p[n] & 15) == 0, "malloc(%zu) = %p", n, (void *)p[n]);
        CHECKF(malloc_usable_size(p[n]) >= n, "usable(%zu) = %zu", n, malloc_usable_size(p[n]));
        memset(p[n], (int)(n & 0xff), n);
    }
    for (size_t n = 0; n <= 5000; n++) {
        for (size_t i = 0; i < n; i += 97)
            CHECKF(p[n][i] == (unsigned char)(n & 0xff), "block %zu overwritten at %zu", n, i);
        do_free(p[n]);
    }
    size_t big[] = {65535, 65536, 65537, 1 << 20, (size_t)33 << 20};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        unsigned char *q = do_malloc(big[i]);
        REQUIRE(q);
        CHECK(((uintptr_t)q & 15) == 0 && malloc_usable_size(q) >= big[i]);
        q[0] = 1;
        q[big[i] - 1] = 2;
        do_free(q);
    }
    /* Impossible sizes: NULL and ENOMEM. */
    errno = 0;
    CHECK(do_malloc(SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(do_malloc((size_t)PTRDIFF_MAX + 1) == NULL && errno == ENOMEM);
    do_free(NULL);
    CHECK_MALLOC_OK();
}

/* Bytes of [p, p + n) that are not zero. */
static size_t nonzero_bytes(const unsigned char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] != 0;
    return k;
}

/* A calloc of dirty memory: dirty a block of n bytes, free it, calloc the same size. */
static void check_calloc_after_dirty_free(size_t n)
{
    unsigned char *d = do_malloc(n);
    REQUIRE(d);
    memset(d, 0xff, n);
    do_free(d);
    unsigned char *c = do_calloc(1, n);
    REQUIRE(c);
    CHECKF(nonzero_bytes(c, n) == 0, "calloc(1, %zu) after a dirty free has %zu non-zero bytes", n, nonzero_bytes(c, n));
    do_free(c);
}

static void test_calloc(void)
{
    /* Reused (dirty) blocks come back zeroed: dirty a block, free it, calloc the same size. */
    for (size_t n = 1; n <= 3000; n += 37)
        check_calloc_after_dirty_free(n);
    unsigned char *c = do_calloc(1000, 1000);
    REQUIRE(c);
    CHECK(c[0] == 0 && c[999999] == 0);
    do_free(c);
    /* A calloc larger than any block so far comes from fresh pages, which it leaves alone:
     * none is faulted in (memset made all 512 MiB resident, in seconds), all read as zeros. */
    size_t big = (size_t)512 << 20;
    c = do_calloc(1, big);
    REQUIRE(c && ((uintptr_t)c & 4095) == 0);
    static unsigned char in_core[((size_t)512 << 20) / 4096];
    REQUIRE(mincore(c, big, in_core) == 0);
    size_t resident = 0;
    for (size_t i = 0; i < sizeof in_core; i++)
        resident += in_core[i] & 1;
    CHECKF(resident == 0, "calloc faulted in %zu of its fresh pages", resident);
    CHECK(c[0] == 0 && c[big / 2] == 0 && c[big - 1] == 0);
    do_free(c);
    /* Large and dirty: zeroed. */
    check_calloc_after_dirty_free((size_t)8 << 20);
    /* n * size overflows: ENOMEM. */
    errno = 0;
    CHECK(do_calloc(SIZE_MAX / 2 + 2, 2) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(do_calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
    void *z = do_calloc(0, 5);
    CHECK(z != NULL);
    do_free(z);
    CHECK_MALLOC_OK();
}

static void test_realloc(void)
{
    /* realloc(NULL, n) is malloc(n). */
    unsigned char *p = do_realloc(NULL, 40);
    REQUIRE(p);
    for (int i = 0; i < 40; i++)
        p[i] = (unsigned char)i;
    /* Grow through classes, into the page tier and beyond: contents kept. */
    size_t sizes[] = {41, 100, 1000, 5000, 40000, 70000, 300000, (size_t)3 << 20, 200, 17};
    size_t have = 40;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *q = do_realloc(p, sizes[k]);
        REQUIRE(q);
        CHECK(((uintptr_t)q & 15) == 0 && malloc_usable_size(q) >= sizes[k]);
        size_t keep = have < sizes[k] ? have : sizes[k];
        size_t bad = 0;
        for (size_t i = 0; i < keep && i < 40; i++)
            bad += q[i] != (unsigned char)i;
        CHECKF(bad == 0, "realloc to %zu lost the contents", sizes[k]);
        p = q;
        have = sizes[k];
    }
    /* Failure leaves the block alone: NULL, ENOMEM, old contents intact. */
    errno = 0;
    CHECK(do_realloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
    CHECK(p[5] == 5);
    errno = 0;
    CHECK(do_reallocarray(p, SIZE_MAX / 4, 8) == NULL && errno == ENOMEM);
    CHECK(p[6] == 6);
    unsigned char *r = do_reallocarray(p, 10, 10);
    REQUIRE(r);
    CHECK(r[7] == 7 && malloc_usable_size(r) >= 100);
    /* realloc(p, 0) frees p and returns NULL (glibc), without touching errno. The freed block
     * lands in this thread's cache, so the next request of its size gets it back. */
    void *s = do_malloc(48);
    REQUIRE(s);
    errno = 1234;
    CHECK(do_realloc(s, 0) == NULL);
    CHECK(errno == 1234);
    void *t = do_malloc(48);
    CHECK(t == s);
    do_free(t);
    do_free(r);
    CHECK_MALLOC_OK();
}

/* A buffer grown by realloc far past 32 MiB (a mapping of its own, src/mapped_block.h) moves
 * without a copy: its pages are not written (a copy would write every page it copies), its
 * contents are kept, and calloc of such a size needs no memset either. */
static void test_realloc_big_buffer(void)
{
    size_t size = (size_t)48 << 20;
    unsigned char *p = do_malloc(size);
    REQUIRE(p);
    memset(p, 0x6b, 4096);
    p[size - 1] = 0x2e;
    for (int i = 0; i < 5; i++) {
        size_t next = size + size / 2;
        unsigned char *q = do_realloc(p, next);
        REQUIRE(q);
        CHECK(q[0] == 0x6b && q[4095] == 0x6b && q[size - 1] == 0x2e);
        q[next - 1] = 0x2e;
        p = q;
        size = next;
    }
    unsigned char vec[4096];
    size_t resident = 0, pages = size >> 12;
    for (size_t off = 0; off < pages; off += 4096) {
        size_t n = pages - off < 4096 ? pages - off : 4096;
        REQUIRE(mincore(p + (off << 12), n << 12, vec) == 0);
        for (size_t i = 0; i < n; i++)
            resident += vec[i] & 1;
    }
    /* Written: the first page and the last byte of each size (2 MiB each with huge pages). */
    CHECKF(resident <= 7 * 512, "%zu of %zu pages resident after growing a 48 MiB buffer to %zu bytes", resident,
           pages, size);
    do_free(p);
    unsigned char *z = do_calloc(40, (size_t)1 << 20);
    REQUIRE(z);
    CHECK(z[0] == 0 && z[((size_t)40 << 20) - 1] == 0);
    do_free(z);
    CHECK_MALLOC_OK();
}

static void test_aligned(void)
{
    /* posix_memalign: every power of two from sizeof(void *) to 1 MiB, several sizes. */
    for (size_t a = sizeof(void *); a <= ((size_t)1 << 20); a <<= 1) {
        size_t sizes[] = {0, 1, a / 2 + 1, a, 3 * a + 5, 100000};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            void *p = (void *)0x1;
            errno = 77;
            CHECK(posix_memalign(&p, a, sizes[k]) == 0);
            CHECK(errno == 77);
            REQUIRE(p && p != (void *)0x1);
            CHECKF(((uintptr_t)p & (a - 1)) == 0 && ((uintptr_t)p & 15) == 0, "posix_memalign(%zu, %zu) = %p", a,
                   sizes[k], p);
            CHECK(malloc_usable_size(p) >= sizes[k]);
            memset(p, 0x5a, sizes[k]);
            do_free(p);
        }
    }
    /* Bad alignments: EINVAL, *out and errno untouched. */
    size_t bad[] = {0, 1, 2, 4, 12, 24, 48, 4095, (size_t)1 << 63 | 8};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        void *p = (void *)0x1;
        errno = 55;
        CHECKF(posix_memalign(&p, bad[k], 10) == EINVAL, "alignment %zu", bad[k]);
        CHECK(p == (void *)0x1 && errno == 55);
    }
    /* Out of memory: ENOMEM returned, errno untouched. */
    void *p = (void *)0x1;
    errno = 56;
    CHECK(posix_memalign(&p, 64, SIZE_MAX - 100) == ENOMEM);
    CHECK(p == (void *)0x1 && errno == 56);
    /* Alignments above 1 GiB: ENOMEM at once (RP_MAX_ALIGN), as from glibc on most machines;
     * 1 GiB itself is served. */
    CHECK(posix_memalign(&p, (size_t)1 << 31, 1) == ENOMEM && p == (void *)0x1 && errno == 56);
    CHECK(posix_memalign(&p, (size_t)1 << 40, 1) == ENOMEM && p == (void *)0x1 && errno == 56);
    errno = 0;
    CHECK(aligned_alloc(opaque((size_t)1 << 40), 64) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(opaque((size_t)1 << 40), 64) == NULL && errno == ENOMEM);
    REQUIRE(posix_memalign(&p, (size_t)1 << 30, 1) == 0);
    CHECK(((uintptr_t)p & (((size_t)1 << 30) - 1)) == 0);
    free(p);
    p = (void *)0x1;

    /* aligned_alloc: powers of two (C17); anything else is EINVAL (glibc >= 2.38). */
    for (size_t a = 1; a <= 65536; a <<= 1) {
        void *q = aligned_alloc(a, 3 * a);
        REQUIRE(q);
        CHECK(((uintptr_t)q & (a - 1)) == 0 && ((uintptr_t)q & 15) == 0);
        do_free(q);
    }
    errno = 0;
    CHECK(aligned_alloc(opaque(24), 100) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(opaque(0), 100) == NULL && errno == EINVAL);

    /* memalign: a non-power-of-two alignment is rounded up (glibc); absurd ones fail. */
    void *m = do_memalign(opaque(24), 100);
    REQUIRE(m);
    CHECK(((uintptr_t)m & 31) == 0);
    do_free(m);
    m = do_memalign(opaque(3000), 10);
    REQUIRE(m);
    CHECK(((uintptr_t)m & 4095) == 0);
    do_free(m);
    errno = 0;
    CHECK(do_memalign(opaque(SIZE_MAX / 2 + 2), 10) == NULL && errno == EINVAL);
    m = do_memalign(opaque(0), 10);
    CHECK(m && ((uintptr_t)m & 15) == 0);
    do_free(m);

    /* valloc / pvalloc: page aligned; pvalloc rounds the size up to pages. */
    long page = sysconf(_SC_PAGESIZE);
    void *v = valloc(10);
    REQUIRE(v);
    CHECK(((uintptr_t)v & (uintptr_t)(page - 1)) == 0);
    do_free(v);
    v = pvalloc(page + 1);
    REQUIRE(v);
    CHECK(((uintptr_t)v & (uintptr_t)(page - 1)) == 0 && malloc_usable_size(v) >= (size_t)(2 * page));
    do_free(v);
    v = pvalloc(0);
    CHECK(v && malloc_usable_size(v) >= (size_t)page);
    do_free(v);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);

    /* Aligned blocks come back from the cache aligned: alternate shapes sharing classes. */
    void *keep[200];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 200; i++) {
            size_t a = (size_t)16 << (i % 6);
            CHECK(posix_memalign(&keep[i], a, 100 + (size_t)(i % 7) * 40) == 0);
            CHECK(((uintptr_t)keep[i] & (a - 1)) == 0);
        }
        for (int i = 0; i < 200; i++)
            do_free(keep[i]);
    }
    CHECK_MALLOC_OK();
}

/* Page-aligned requests within a page of SIZE_MAX fail with ENOMEM. Their size rounded up to
 * pages once wrapped to 0, and the page-bin fast path read pbins[-1] — the last class bins —
 * as a page bin: with a cached 16 KiB block it wrote through a garbage descriptor
 * (fuzz/regressions/malloc_api/aligned-huge-size-page-bin). */
static void test_aligned_huge_size(void)
{
    rp_malloc_thread_flush();        /* every bin empty ... */
    void *cached = do_malloc(16368); /* ... but the class-94 bin: its refill keeps a 16 KiB block */
    REQUIRE(cached);
    size_t huge[] = {SIZE_MAX, SIZE_MAX - 15, SIZE_MAX - 4095};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        void *p = NULL;
        errno = 0;
        CHECKF(posix_memalign(&p, 4096, huge[k]) == ENOMEM && errno == 0, "posix_memalign(4096, %zu)", huge[k]);
        errno = 0;
        CHECKF(aligned_alloc(opaque((size_t)2 << 20), huge[k]) == NULL && errno == ENOMEM, "aligned_alloc(2 MiB, %zu)",
               huge[k]);
        errno = 0;
        CHECKF(valloc(opaque(huge[k])) == NULL && errno == ENOMEM, "valloc(%zu)", huge[k]);
    }
    do_free(cached);
    CHECK_MALLOC_OK();
}

static void test_aliases(void)
{
    void *a = __libc_malloc(30);
    REQUIRE(a);
    a = __libc_realloc(a, 3000);
    REQUIRE(a);
    __libc_free(a);
    unsigned char *c = __libc_calloc(10, 10);
    REQUIRE(c);
    CHECK(c[99] == 0);
    cfree(c);
    void *m = __libc_memalign(256, 10);
    CHECK(m && ((uintptr_t)m & 255) == 0);
    free_sized(m, 10);
    CHECK(mallopt(M_ARENA_MAX, 2) == 1);
    void *big = do_malloc(1 << 20);
    struct mallinfo2 mi = mallinfo2();
    CHECK(mi.uordblks >= (1u << 20) && mi.arena >= mi.uordblks);
    do_free(big);
    malloc_trim(0);
    CHECK_MALLOC_OK();
}

/* Found by the malloc_api fuzz target (fuzz/regressions/malloc_api/libc-memalign-align-0):
 * __libc_memalign called memalign through glibc's declaration, which says the result is
 * aligned to the first argument (alloc_align); memalign also takes 0 and non-powers of two,
 * so the drop-in assumed an alignment that does not exist (undefined behaviour, reported by
 * UBSan: run with --config=clang --config=ubsan). */
static void test_libc_memalign_any_alignment(void)
{
    void *m = __libc_memalign(opaque(0), 10);
    CHECK(m && ((uintptr_t)m & 15) == 0);
    free(m);
    m = __libc_memalign(opaque(24), 100);
    CHECK(m && ((uintptr_t)m & 31) == 0);
    free(m);
}

static void test_errno_kept_by_free(void)
{
    /* free() never changes errno, whatever path it takes (cache, flush, page tier). */
    void *ps[600];
    for (int i = 0; i < 600; i++)
        ps[i] = do_malloc((size_t)(i % 10) * 1000 + (i % 3 ? 24 : 70000));
    errno = 4242;
    for (int i = 0; i < 600; i++)
        do_free(ps[i]);
    CHECK(errno == 4242);
    rp_malloc_thread_flush();
    CHECK(errno == 4242);
}

static void test_misuse(void)
{
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);

    /* A second free of a block still in the thread cache: reported, cache unchanged. */
    void *p = do_malloc(100);
    REQUIRE(p);
    do_free(p);
    do_free(p);
    settle();
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    CHECK_MALLOC_OK();
    /* realloc of that freed block: reported, NULL. */
    errno = 0;
    CHECK(do_realloc(p, 200) == NULL && errno == EINVAL);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 2);
    /* The same for a whole-page block (page bins). */
    void *pg = do_malloc(3 * 4096);
    REQUIRE(pg);
    do_free(pg);
    do_free(pg);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 3);
    /* After a flush the block is free in its heap: the core reports the double free. */
    rp_malloc_thread_flush();
    do_free(p);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 4);
    /* A block merged into its free predecessor in the heap, freed again: its old header must
     * not pass for a live block (the lock-free free path trusts valid live headers). */
    rp_malloc_thread_flush();
    char *x = do_malloc(2000), *y = do_malloc(2000); /* span blocks: above the slab classes */
    REQUIRE(x && y);
    char *a = x < y ? x : y, *b = x < y ? y : x; /* one refill batch: adjacent */
    CHECKF(b == a + malloc_usable_size(a) + 16, "%p (%zu bytes) and %p are not adjacent", (void *)a,
           malloc_usable_size(a), (void *)b);
    do_free(b);
    do_free(a);
    rp_malloc_thread_flush(); /* a goes back first, then b merges into a's free block */
    do_free(b);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 5);
    CHECK_MALLOC_OK();
    /* Interior pointer of a live block: invalid free, block untouched. */
    char *q = do_malloc(256);
    REQUIRE(q);
    q[0] = 'x';
    do_free(q + 32);
    settle();
    CHECK(reports[RP_ERR_INVALID_FREE] == 1);
    CHECK(q[0] == 'x');
    do_free(q);
    /* Pointers rampart never returned (a static buffer, the stack): free, malloc_usable_size
     * (which says 0) and realloc report them at their call, and free counts them. Where
     * another allocator shares the process by construction (the sanitizer builds), free and
     * malloc_usable_size leave them alone. */
    static char foreign[64];
    char local[64];
    rp_malloc_stats_t st;
    rp_malloc_stats(&st);
    uint64_t before = st.foreign_frees;
    do_free(foreign + 16);
    do_free(local + 16);
    CHECK(reports[RP_ERR_INVALID_FREE] == 1 + (RP_MALLOC_COEXISTS ? 0 : 2));
    rp_malloc_stats(&st);
    CHECK(st.foreign_frees == before + 2);
    CHECK(malloc_usable_size(foreign + 16) == 0);
    CHECK(reports[RP_ERR_INVALID_FREE] == 1 + (RP_MALLOC_COEXISTS ? 0 : 3));
    errno = 0;
    CHECK(do_realloc(foreign + 16, 100) == NULL && errno == EINVAL);
    CHECK(reports[RP_ERR_INVALID_FREE] == 2 + (RP_MALLOC_COEXISTS ? 0 : 3));
    CHECK(reports[RP_ERR_CORRUPT_FREE_LIST] == 0);
    CHECK_MALLOC_OK();
    rp_set_report_fn(old, old_arg, NULL);
}

/* The cache is bounded: after freeing far more than cache_bytes the cache holds at most the
 * cap, and the heaps see every cached block as live (walk) until it is flushed. */
static int count_used(const rp_block_info *b, void *arg)
{
    if (b->state == RP_BLOCK_USED)
        (*(size_t *)arg)++;
    return 0;
}

/* Blocks live to the arena: its heap's (a walk) and its slab pool's (malloc_slabs.h; small
 * blocks come from slabs). */
static size_t used_blocks(rp_heap *arena)
{
    size_t used = 0;
    rp_heap_walk(arena, count_used, &used);
    uint64_t taken, given;
    rp_ms_counts(arena, &taken, &given);
    return used + (size_t)(taken - given);
}

static void test_cache_bounds(void)
{
    rp_malloc_thread_flush();
    rp_malloc_stats_t st;
    REQUIRE(rp_malloc_stats(&st) == 0);
    CHECK(st.cache_bytes_limit == ((size_t)1 << 20)); /* the default */
    CHECK(st.thread_caches >= 1 && st.cached_bytes == 0);
    enum { N = 20000 };
    static void *ps[N];
    for (int i = 0; i < N; i++)
        ps[i] = do_malloc(16 + (size_t)(i % 64) * 16);
    rp_heap *arena = rp_ms_heap_of(ps[0]);
    REQUIRE(arena);
    size_t used_before = used_blocks(arena);
    for (int i = 0; i < N; i++)
        do_free(ps[i]);
    REQUIRE(rp_malloc_stats(&st) == 0);
    CHECKF(st.cached_bytes > 0 && st.cached_bytes <= st.cache_bytes_limit, "cached %zu", st.cached_bytes);
    CHECK(st.flushes > 0);
    size_t used_cached = used_blocks(arena);
    CHECK(used_cached < used_before && used_cached > 0);
    CHECK_MALLOC_OK();
    rp_malloc_thread_flush();
    REQUIRE(rp_malloc_stats(&st) == 0);
    CHECK(st.cached_bytes == 0);
    size_t used_after = used_blocks(arena);
    CHECK(used_after < used_cached);
    CHECK_MALLOC_OK();
}

/* The common path takes no lock: a million small malloc/free pairs (random sizes, a window
 * of live blocks) reach the heaps only through a handful of refills and flushes. */
static void test_fast_path_takes_no_lock(void)
{
    rp_malloc_stats_t a, b;
    rp_heap_stats_t ha, hb;
    void *ring[32] = {0};
    test_malloc_free(1);
    rp_heap *arena = rp_ms_heap_of(ring[0] = do_malloc(10));
    REQUIRE(arena);
    REQUIRE(rp_malloc_stats(&a) == 0 && rp_heap_stats(arena, &ha) == 0);
    uint64_t s = 1;
    for (int i = 0; i < 1000000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)i & 31;
        do_free(ring[k]);
        ring[k] = do_malloc(16 + (size_t)(s >> 33) % 500);
    }
    REQUIRE(rp_malloc_stats(&b) == 0 && rp_heap_stats(arena, &hb) == 0);
    uint64_t lock_trips = (b.refills - a.refills) + (b.flushes - a.flushes);
    CHECKF(lock_trips < 100, "%llu refills + flushes for 1M pairs", (unsigned long long)lock_trips);
    CHECKF(hb.alloc_calls - ha.alloc_calls < 5000, "%llu heap allocations for 1M pairs",
           (unsigned long long)(hb.alloc_calls - ha.alloc_calls));
    for (int k = 0; k < 32; k++)
        do_free(ring[k]);
    CHECK_MALLOC_OK();
}

/* The state of the page holding p, a block of some arena (src/region.h). */
static uint8_t page_state(const void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    REQUIRE(r);
    return rp_page_of(r, p)->state;
}

/* Aligned requests the page tier serves (tier.h) come back from the page bins: a block just
 * freed is handed out again with no heap call, and only when it is aligned enough for the
 * new request. A second free of such a block is reported (RP_PAGEF_CACHED). */
static void test_aligned_page_bins(void)
{
    static const struct {
        size_t size, align;
    } cases[] = {{3072, 1024}, {4000, 2048}, {4096, 4096}, {64512, 4096}, {8192, 8192}, {12288, 1024},
                 {16, 2048},   {100, 2048},  {2032, 2048}};
    rp_malloc_thread_flush();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t size = cases[k].size, align = cases[k].align;
        void *p = NULL, *q = NULL;
        REQUIRE(posix_memalign(&p, align, size) == 0);
        rp_heap *arena = rp_heap_of(p);
        REQUIRE(arena);
        CHECKF(((uintptr_t)p & 4095) == 0 && page_state(p) == RP_PAGE_LARGE, "%zu/%zu: %p is not a page-tier block", size,
               align, p);
        rp_heap_stats_t a, b;
        do_free(p);
        REQUIRE(rp_heap_stats(arena, &a) == 0);
        REQUIRE(posix_memalign(&q, align, size) == 0);
        REQUIRE(rp_heap_stats(arena, &b) == 0);
        CHECKF(q == p && b.alloc_calls == a.alloc_calls, "%zu/%zu: %p then %p, %llu heap calls", size, align, p, q,
               (unsigned long long)(b.alloc_calls - a.alloc_calls));
        CHECK(malloc_usable_size(q) >= size);
        do_free(q);
    }
    /* Below half a page of alignment a small block stays in a span (a page would be four times
     * the 1 KiB block it takes there). */
    for (int i = 0; i < 8; i++) {
        void *s = NULL;
        REQUIRE(posix_memalign(&s, 1024, 100) == 0);
        uint8_t state = page_state(s);
        CHECKF(state == RP_PAGE_SPAN || state == RP_PAGE_SPAN_TAIL, "100/1024: %p is not a span block", s);
        do_free(s);
    }
    /* One-page blocks: one that starts on an odd page stays in its bin when a page aligned to
     * 8192 is asked for. */
    rp_malloc_thread_flush();
    void *page[4] = {0}, *odd = NULL, *x = NULL, *z = NULL;
    for (int i = 0; i < 4; i++) {
        REQUIRE(posix_memalign(&page[i], 4096, 4096) == 0);
        if ((uintptr_t)page[i] & 8191)
            odd = page[i];
    }
    REQUIRE(odd); /* of four one-page blocks, at least one starts on an odd page */
    do_free(odd);
    REQUIRE(posix_memalign(&z, 8192, 4096) == 0);
    CHECKF(((uintptr_t)z & 8191) == 0, "4096/8192 got %p (bin top %p)", z, odd);
    do_free(z);
    for (int i = 0; i < 4; i++)
        if (page[i] != odd)
            do_free(page[i]);
    /* Double free of a cached 3072/1024 block. */
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(count_report, NULL, &old_arg);
    memset(reports, 0, sizeof reports);
    REQUIRE(posix_memalign(&x, 1024, 3072) == 0);
    do_free(x);
    do_free(x);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1);
    rp_set_report_fn(old, old_arg, NULL);
    CHECK_MALLOC_OK();
}

/* rp_malloc_stats_print: per heap and totals, through the callback. */
static char text[8192];
static size_t text_len;
static void collect(void *arg, const char *s)
{
    (void)arg;
    size_t n = strlen(s);
    if (text_len + n < sizeof text) {
        memcpy(text + text_len, s, n);
        text_len += n;
        text[text_len] = 0;
    }
}

static void test_stats_print(void)
{
    rp_heap *mine = rp_heap_create(&(rp_heap_config){.name = "mine"});
    void *x = rp_alloc(mine, 1000, 0);
    void *y = do_malloc(5000);
    rp_malloc_stats_print(collect, NULL);
    CHECK(strstr(text, "malloc-0") != NULL);
    CHECK(strstr(text, "mine") != NULL);
    CHECK(strstr(text, "total") != NULL);
    CHECK(strstr(text, "thread caches") != NULL);
    CHECK(strstr(text, "foreign frees") != NULL);
    do_free(y);
    rp_free(x);
    rp_heap_destroy(mine);
}

int main(void)
{
    test_libc_memalign_any_alignment();
    test_malloc_basics();
    test_calloc();
    test_realloc();
    test_realloc_big_buffer();
    test_aligned();
    test_aligned_huge_size();
    test_aliases();
    test_errno_kept_by_free();
    test_misuse();
    test_cache_bounds();
    test_fast_path_takes_no_lock();
    test_aligned_page_bins();
    test_stats_print();
    TEST_MAIN_END();
}
