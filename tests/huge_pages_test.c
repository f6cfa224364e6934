/* Transparent huge pages: RP_HEAP_HUGE_PAGES advises exactly the page areas of OS regions that
 * hold whole 2 MiB pages and the descriptors of those whose descriptors fill whole 2 MiB pages,
 * and nothing else (heaps without the flag, small regions and their metadata, caller
 * memory). What the kernel recorded is read back from /proc/self/smaps: a mapping advised
 * with MADV_HUGEPAGE carries "hg" among its VmFlags.
 *
 * RP_HEAP_HUGE_PAGES_LATE leaves a heap's regions unadvised until it holds 4 MiB of them.
 *
 * The same binary checks the malloc drop-in (linked in statically): its heaps and its slab
 * chunks are advised by default, and not with RAMPART_OPTIONS=huge_pages=0, but for an
 * arena's regions up to 4 MiB and first two slab chunks, which never are; the argument
 * "--malloc-on" or "--malloc-off" says which the BUILD target set up. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "src/rampart.h"
#include "src/slab.h"
#include "testing.h"
#include "vma_flags.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_OWNS_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_OWNS_MALLOC 1
#endif
#endif
#ifndef SANITIZER_OWNS_MALLOC
#define SANITIZER_OWNS_MALLOC 0
#endif


/* Does this kernel take MADV_HUGEPAGE at all (CONFIG_TRANSPARENT_HUGEPAGE)? Asked on scratch
 * memory, so an answer of no is the kernel's, not rampart's. */
static int kernel_takes_advice(void)
{
    size_t len = (size_t)4 << 20;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    int ok = madvise(p, len, MADV_HUGEPAGE) == 0 && vma_has_flag(p, "hg") == 1;
    munmap(p, len);
    return ok;
}

/* vma_has_flag(.., "hg") for the first small block of a new heap made with cfg. */
static int first_block_advised(const rp_heap_config *cfg)
{
    rp_heap *h = rp_heap_create(cfg);
    REQUIRE(h);
    void *p = rp_alloc(h, 100, 64);
    REQUIRE(p);
    int advised = vma_has_flag(p, "hg");
    rp_free(p);
    rp_heap_destroy(h);
    return advised;
}

/* vma_range_has_flag(.., "hg") for the metadata just below the page area of the first region
 * (of region_bytes, a power of two) of a new heap with flags: the 2 MiB below it for a region
 * of 256 MiB, its last page for smaller ones (whose metadata is smaller than 2 MiB). */
static int region_metadata_advised(unsigned flags, size_t region_bytes)
{
    rp_heap_config cfg = {0};
    cfg.flags = flags;
    cfg.region_bytes = region_bytes;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    void *p = rp_alloc(h, (size_t)128 << 10, 0); /* page tier: inside the region's page area */
    REQUIRE(p);
    uintptr_t area = (uintptr_t)p & ~(uintptr_t)(region_bytes - 1);
    size_t span = region_bytes >= ((size_t)256 << 20) ? (size_t)2 << 20 : (size_t)4096;
    int advised = vma_range_has_flag(area - span, area, "hg");
    rp_free(p);
    rp_heap_destroy(h);
    return advised;
}

static void heap_flag_cases(void)
{
    /* Advised: the default first region (4 MiB) of a heap with the flag, for small blocks and
     * page-tier blocks alike. */
    rp_heap_config cfg = {0};
    cfg.name = "huge";
    cfg.flags = RP_HEAP_HUGE_PAGES;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    void *small = rp_alloc(h, 100, 64);
    void *large = rp_alloc(h, (size_t)256 << 10, 0);
    REQUIRE(small && large);
    CHECK(vma_has_flag(small, "hg") == 1);
    CHECK(vma_has_flag(large, "hg") == 1);
    /* A region mapped later (the heap grows) is advised too. */
    void *big = rp_alloc(h, (size_t)24 << 20, 0);
    REQUIRE(big);
    CHECK(vma_has_flag(big, "hg") == 1);
    /* Decommitting pages of an advised area (trim) keeps the heap consistent. */
    rp_free(large);
    rp_free(big);
    rp_heap_trim(h, 0);
    CHECK_HEAP(h);
    rp_free(small);
    rp_heap_destroy(h);

    /* Not advised: the same heap without the flag. */
    CHECK(first_block_advised(NULL) == 0);

    /* The descriptors of a region of 256 MiB fill the 2 MiB just below its page area (which
     * is aligned to its size): advised with the flag, not without; a 4 MiB region's metadata
     * is a few pages and never is. */
    CHECK(region_metadata_advised(RP_HEAP_HUGE_PAGES, (size_t)256 << 20) == 1);
    CHECK(region_metadata_advised(0, (size_t)256 << 20) == 0);
    CHECK(region_metadata_advised(RP_HEAP_HUGE_PAGES, (size_t)4 << 20) == 0);

    /* Not advised: a first region smaller than one huge page (1 MiB). */
    rp_heap_config tiny = {0};
    tiny.flags = RP_HEAP_HUGE_PAGES;
    tiny.region_bytes = (size_t)1 << 20;
    CHECK(first_block_advised(&tiny) == 0);

    /* Not advised: caller memory, whatever the flag (it may be hugetlbfs or shared memory
     * whose owner decides). */
    size_t len = (size_t)8 << 20;
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    rp_heap_config own = {0};
    own.flags = RP_HEAP_HUGE_PAGES | RP_HEAP_NO_OS;
    rp_heap *c = rp_heap_create(&own);
    REQUIRE(c);
    REQUIRE(rp_heap_add_region(c, mem, len) == 0);
    void *in = rp_alloc(c, 100, 0);
    REQUIRE(in && (char *)in >= (char *)mem && (char *)in < (char *)mem + len);
    CHECK(vma_has_flag(in, "hg") == 0);
    rp_free(in);
    rp_heap_destroy(c);
    munmap(mem, len);

    /* Late: the first region (4 MiB) is not advised; one mapped once the heap holds it is. */
    rp_heap_config late = {0};
    late.flags = RP_HEAP_HUGE_PAGES | RP_HEAP_HUGE_PAGES_LATE;
    CHECK(first_block_advised(&late) == 0);
    rp_heap *l = rp_heap_create(&late);
    REQUIRE(l);
    void *first = rp_alloc(l, 100, 0);
    void *grown = rp_alloc(l, (size_t)24 << 20, 0); /* a second region, of 32 MiB */
    REQUIRE(first && grown);
    CHECK(vma_has_flag(first, "hg") == 0);
    CHECK(vma_has_flag(grown, "hg") == 1);
    rp_free(grown);
    rp_free(first);
    rp_heap_destroy(l);

    /* An unknown flag bit is still refused. */
    rp_heap_config bad = {0};
    bad.flags = RP_HEAP_HUGE_PAGES_LATE << 1;
    errno = 0;
    CHECK(rp_heap_create(&bad) == NULL && errno == EINVAL);
}

/* A new thread's cache gets an arena of its own (the one fewest threads use; this test's main
 * thread has arena 0). Its first region is smaller than a huge page and not advised: a thread
 * that allocates little faults in only what it touches. Once the arena holds 4 MiB of regions (1,
 * 2 and 4 MiB: past 7 MiB of blocks), blocks come from regions advised as arena 0's are (when
 * the drop-in's option is on). */
typedef struct thread_result {
    int first_advised, later_advised;
    char heap[32];
    size_t first_region_bytes;
} thread_result;

static void *thread_arena_body(void *arg)
{
    thread_result *res = arg;
    /* Span blocks (slab blocks, up to 1008 bytes, lie in no heap's regions). */
    void *p = calloc(1, 2000); /* written: gcc takes a const pointer argument for a read */
    if (!p)
        return NULL;
    rp_heap *owner = rp_heap_of(p);
    snprintf(res->heap, sizeof res->heap, "%s", owner ? rp_heap_name(owner) : "(none)");
    res->first_advised = vma_has_flag(p, "hg");
    rp_heap_stats_t st;
    if (owner && rp_heap_stats(owner, &st) == 0 && st.regions == 1)
        res->first_region_bytes = st.region_bytes;
    /* 10 MiB of small blocks: past the 1, 2 and 4 MiB regions, into the 8 MiB one. */
    enum { N = 10 * 512 };
    static void *blocks[N];
    for (int i = 0; i < N; i++)
        blocks[i] = malloc(2000);
    res->later_advised = blocks[N - 1] ? vma_has_flag(blocks[N - 1], "hg") : -1;
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    free(p);
    return NULL;
}

static void thread_arena_cases(int expect)
{
    thread_result res = {-2, -2, "", SIZE_MAX};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, thread_arena_body, &res) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    printf("thread's arena %s: first region %zu bytes, advised %d; after 10 MiB: advised %d\n", res.heap,
           res.first_region_bytes, res.first_advised, res.later_advised);
    CHECKF(strcmp(res.heap, "malloc-0") != 0 && strncmp(res.heap, "malloc-", 7) == 0,
           "a new thread allocates from an arena of its own, not %s", res.heap);
    CHECKF(res.first_region_bytes < ((size_t)2 << 20), "thread arena's first region: %zu bytes", res.first_region_bytes);
    CHECKF(res.first_advised == 0, "a thread arena's first region is not advised (%d)", res.first_advised);
    CHECKF(res.later_advised == expect, "a thread arena's later regions advised: %d, expected %d", res.later_advised,
           expect);
}

int main(int argc, char **argv)
{
    if (!kernel_takes_advice()) {
        printf("SKIP: this kernel does not take MADV_HUGEPAGE (no transparent huge pages)\n");
        return 0;
    }
    heap_flag_cases();
    if (argc > 1) {
        int expect = strcmp(argv[1], "--malloc-on") == 0 ? 1 : strcmp(argv[1], "--malloc-off") == 0 ? 0 : -1;
        REQUIRE(expect >= 0);
        void *p = malloc(2000); /* a span block (smaller ones come from slabs, below) */
        REQUIRE(p);
        rp_heap *owner = rp_heap_of(p);
        printf("malloc(2000) = %p, heap '%s'\n", p, owner ? rp_heap_name(owner) : "(not rampart's)");
#if SANITIZER_OWNS_MALLOC
        if (!owner) {
            /* The sanitizer's runtime keeps malloc here (see src/BUILD); the plain build
             * checks the drop-in. */
            printf("malloc is the sanitizer's in this build: drop-in check skipped\n");
            free(p);
            TEST_MAIN_END();
        }
#endif
        REQUIRE(owner);
        /* Arena 0's first region, like every arena's, is smaller than a huge page and never
         * advised; the regions after it are when the option is on (thread_arena_cases). */
        CHECKF(vma_has_flag(p, "hg") == 0, "arena 0's first region advised: %d (RAMPART_OPTIONS=%s)",
               vma_has_flag(p, "hg"), getenv("RAMPART_OPTIONS") ? getenv("RAMPART_OPTIONS") : "");
        thread_arena_cases(expect);
        /* The slab space follows the same option, per arena: its first two chunks of slabs
         * are never advised (a few small blocks fault in 4 KiB pages), the following ones are. */
        void *small = malloc(100);
        REQUIRE(small);
        int slab = rp_heap_of(small) == NULL;
        printf("malloc(100) = %p, %s\n", small, slab ? "a slab block" : "a span block");
        CHECKF(slab, "malloc(100) is not a slab block");
        CHECKF(vma_has_flag(small, "hg") == 0, "an arena's first slab chunk advised: %d", vma_has_flag(small, "hg"));
        enum { MANY = 3 * (RP_SLAB_CHUNK_BYTES / 1000) };
        static void *many[MANY];
        size_t second = MANY, third = MANY;
        for (size_t i = 0; i < MANY; i++) {
            many[i] = malloc(1000);
            REQUIRE(many[i] && rp_heap_of(many[i]) == NULL);
            uintptr_t chunk = (uintptr_t)many[i] >> RP_SLAB_CHUNK_SHIFT, first_chunk = (uintptr_t)small >> RP_SLAB_CHUNK_SHIFT;
            if (chunk == first_chunk)
                continue;
            if (second == MANY)
                second = i;
            else if (third == MANY && chunk != (uintptr_t)many[second] >> RP_SLAB_CHUNK_SHIFT)
                third = i;
        }
        REQUIRE(second < MANY && third < MANY);
        printf("malloc(1000) = %p and %p, slab blocks of the arena's second and third chunks\n", many[second],
               many[third]);
        CHECKF(vma_has_flag(many[second], "hg") == 0, "an arena's second slab chunk advised: %d",
               vma_has_flag(many[second], "hg"));
        CHECKF(vma_has_flag(many[third], "hg") == expect, "an arena's third slab chunk advised: %d, expected %d",
               vma_has_flag(many[third], "hg"), expect);
        for (size_t i = 0; i < MANY; i++)
            free(many[i]);
        free(small);
        free(p);
    }
    TEST_MAIN_END();
}
