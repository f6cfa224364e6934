/* Caller-supplied regions: a heap over a static buffer (no OS memory at all), over a
 * MAP_SHARED mapping that a forked child writes through, mixed with OS memory; overlapping,
 * too small and NULL regions are refused with EINVAL; destroy forgets the region. And the
 * address map: an OS region's entries are given back to the OS when the region is unmapped;
 * a huge region's whole GiBs share one leaf (M4), found and checked like any other. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

static unsigned char buffer[1 << 20];

static void test_static_buffer(void)
{
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    cfg.name = "static";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    errno = 0;
    CHECK(rp_alloc(h, 10, 0) == NULL && errno == ENOMEM); /* no region yet, no OS */
    REQUIRE(rp_heap_add_region(h, buffer + 3, sizeof buffer - 3) == 0);
    void *ptrs[4096];
    size_t n = 0, bytes = 0;
    test_rng rng = {3};
    for (;;) {
        size_t size = 16 + rng_below(&rng, 3000);
        void *p = rp_alloc(h, size, rng_below(&rng, 4) ? 0 : 256);
        if (!p)
            break;
        CHECK((unsigned char *)p >= buffer && (unsigned char *)p + size <= buffer + sizeof buffer);
        memset(p, (int)n, size);
        ptrs[n++] = p;
        bytes += size;
        REQUIRE(n < 4096);
    }
    CHECK(errno == ENOMEM);
    printf("static buffer of %zu bytes: %zu blocks, %zu bytes requested\n", sizeof buffer, n, bytes);
    CHECK(bytes > sizeof buffer / 2);
    /* Large and page-aligned blocks come from the same buffer. */
    for (size_t i = 0; i < n; i += 2)
        rp_free(ptrs[i]);
    void *page = rp_alloc(h, 4096, 4096);
    if (page)
        CHECK((unsigned char *)page >= buffer && ((uintptr_t)page & 4095) == 0);
    rp_free(page);
    for (size_t i = 1; i < n; i += 2)
        rp_free(ptrs[i]);
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.os_bytes > 0 && st.os_bytes <= 65536); /* the control block only: no OS region */
    CHECK(st.regions == 1 && st.blocks_in_use == 0);
    void *big = rp_alloc(h, 600 << 10, 0);
    CHECK(big != NULL);
    rp_free(big);
    /* The same memory cannot be given twice, to this heap or another. */
    rp_heap *other = rp_heap_create(NULL);
    errno = 0;
    CHECK(rp_heap_add_region(other, buffer + 4096, 65536) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(rp_heap_add_region(h, buffer, 100) == -1 && errno == EINVAL);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    /* Forgotten after destroy: the memory can be given to another heap. */
    CHECK(rp_heap_add_region(other, buffer, sizeof buffer) == 0);
    void *q = rp_alloc(other, 1000, 0);
    CHECK(q && rp_heap_of(q) == other);
    rp_free(q);
    CHECK_HEAP(other);
    rp_heap_destroy(other);
}

static void test_shared_mapping(void)
{
    size_t len = 4 << 20;
    unsigned char *shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shm != MAP_FAILED);
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    cfg.name = "shm";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(rp_heap_add_region(h, shm, len) == 0);
    char *msg = rp_alloc(h, 64, 0);
    int *nums = rp_alloc(h, 4096 * sizeof(int), 4096);
    REQUIRE(msg && nums);
    CHECK((unsigned char *)msg >= shm && (unsigned char *)nums + 4096 * sizeof(int) <= shm + len);
    strcpy(msg, "parent");
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* The child writes through the heap's pointers; the parent sees it: shared memory. */
        strcpy(msg, "child was here");
        for (int i = 0; i < 4096; i++)
            nums[i] = i * 3;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strcmp(msg, "child was here") == 0);
    CHECK(nums[4095] == 4095 * 3);
    /* Overlap with a region in use is refused. */
    rp_heap *h2 = rp_heap_create(NULL);
    errno = 0;
    CHECK(rp_heap_add_region(h2, shm + len / 2, len) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(rp_heap_add_region(NULL, shm, len) == -1 && errno == EINVAL);
    errno = 0;
    CHECK(rp_heap_add_region(h2, NULL, len) == -1 && errno == EINVAL);
    rp_free(msg);
    rp_free(nums);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    rp_heap_destroy(h2);
    /* rampart never unmaps caller memory. */
    shm[0] = 1;
    CHECK(munmap(shm, len) == 0);
}

/* A heap with OS memory and a caller region uses both and returns only the OS part. */
static void test_mixed(void)
{
    size_t base = rp_os_mapped_bytes();
    static unsigned char extra[256 << 10];
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(rp_heap_add_region(h, extra, sizeof extra) == 0);
    void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = rp_alloc(h, 16 << 10, 0);
    int in_extra = 0;
    for (int i = 0; i < 64; i++) {
        REQUIRE(p[i]);
        in_extra += (unsigned char *)p[i] >= extra && (unsigned char *)p[i] < extra + sizeof extra;
    }
    CHECK(in_extra > 0 && in_extra < 64);
    for (int i = 0; i < 64; i++)
        rp_free(p[i]);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    CHECK(rp_os_mapped_bytes() <= base + (64u << 10)); /* at most address-map leaves remain */
}

/* Resident pages among the n pages at p (mincore). */
static size_t resident_pages(const void *p, size_t n)
{
    unsigned char v[64];
    REQUIRE(n <= sizeof v && mincore((void *)p, n * 4096, v) == 0);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i] & 1;
    return k;
}

/* A 64 MiB region holds 16,384 address-map entries, 32 pages of a leaf: resident while the
 * region is registered, given back (and reading as NULL) once it is unmapped. */
static void test_map_entries_given_back(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *big = rp_alloc(h, (size_t)48 << 20, 0);
    REQUIRE(big);
    uintptr_t page = (uintptr_t)big >> RP_PM_PAGE_SHIFT;
    rp_pm_leaf *leaf = rp_pm_root[page >> RP_PM_LEAF_BITS];
    REQUIRE(leaf);
    /* The entry pages of big's first 16 MiB (8 pages of entries, all big's region's). */
    uintptr_t first = (page & (RP_PM_LEAF_ENTRIES - 1) & ~(uintptr_t)511) + 512;
    REQUIRE(first + 8 * 512 <= RP_PM_LEAF_ENTRIES);
    const void *entries = &(*leaf)[first];
    CHECK(resident_pages(entries, 8) == 8);
    CHECK(rp_pagemap_lookup(big + ((size_t)1 << 20)) != NULL);
    rp_free(big);
    rp_heap_trim(h, 0); /* the wholly free region is unmapped */
    CHECK(rp_pagemap_lookup(big + ((size_t)1 << 20)) == NULL);
    CHECKF(resident_pages(entries, 8) == 0, "%zu of 8 entry pages still resident", resident_pages(entries, 8));
    CHECK_HEAP(h);
    /* The heap still works (it maps again, the entries come back). */
    big = rp_alloc(h, (size_t)48 << 20, 0);
    REQUIRE(big);
    CHECK(rp_pagemap_lookup(big + ((size_t)1 << 20)) != NULL);
    rp_free(big);
    rp_heap_destroy(h);
}

#define GIB ((size_t)1 << 30)

/* The checker's verdict on h, which must name `code`. */
static void check_fails_with(rp_heap *h, const char *code)
{
    char why[256];
    CHECK(rp_heap_check(h, why, sizeof why) != 0);
    CHECKF(strstr(why, code) != NULL, "expected %s, got: %s", code, why);
}

/* A heap whose first region is 4 GiB: its page area, aligned to its size, covers 4 whole
 * slots of the map, which share one leaf. Without whole-slot leaves the map grows by 4
 * leaves (8 MiB, written entry by entry: seconds for a TiB). */
static void test_whole_slot_leaf(void)
{
    rp_heap_config cfg = {0};
    cfg.region_bytes = 4 * GIB;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    size_t leaves0 = rp_pagemap_bytes();
    char *small = rp_alloc(h, 100, 0);
    REQUIRE(small);
    rp_region *r = rp_pagemap_lookup(small);
    REQUIRE(r);
    REQUIRE(r->npages << RP_PAGE_SHIFT == 4 * GIB);
    char *big = (char *)r->base;
    size_t size = 4 * GIB;
    CHECK(r->pm_whole_leaf != NULL);
    CHECKF(rp_pagemap_bytes() - leaves0 <= sizeof(rp_pm_leaf), "the map grew by %zu bytes",
           rp_pagemap_bytes() - leaves0);
    for (size_t off = 0; off < size; off += GIB / 2)
        CHECKF(rp_pagemap_lookup(big + off) == r, "GiB %zu", off / GIB);
    CHECK(rp_pagemap_lookup(big + size - 1) == r);
    CHECK(rp_pagemap_run_of((void *)r->base, r->npages, r) == r->npages);
    CHECK_HEAP(h);

    /* The checker reads the shared leaf: a wrong entry (M1) and a slot outside the region
     * pointing to it (M4) are both reported. */
    struct rp_region **entry = &r->pm_whole_leaf[12345];
    *entry = NULL;
    check_fails_with(h, "M1");
    *entry = r;
    uintptr_t outside = (r->base >> 30) + (r->npages >> (30 - RP_PAGE_SHIFT));
    while (outside < RP_PM_ROOT_ENTRIES && rp_pm_root[outside])
        outside++;
    REQUIRE(outside < RP_PM_ROOT_ENTRIES);
    rp_pm_root[outside] = (rp_pm_leaf *)(void *)r->pm_whole_leaf;
    check_fails_with(h, "M4");
    rp_pm_root[outside] = NULL;
    CHECK_HEAP(h);

    /* Unmapped: no slot keeps the leaf, lookups read NULL; mapped again: the leaf is reused. */
    uintptr_t slot = (uintptr_t)big >> 30;
    rp_free(small);
    rp_heap_destroy(h);
    CHECK(rp_pagemap_lookup(big) == NULL && rp_pagemap_lookup(big + size / 2) == NULL);
    CHECK(rp_pm_root[slot] == NULL);
    size_t leaves1 = rp_pagemap_bytes();
    h = rp_heap_create(&cfg);
    REQUIRE(h);
    small = rp_alloc(h, 100, 0);
    REQUIRE(small);
    r = rp_pagemap_lookup(small);
    REQUIRE(r && r->pm_whole_leaf != NULL);
    CHECK(rp_pagemap_lookup((char *)r->base + (r->npages << RP_PAGE_SHIFT) - 1) == r);
    CHECKF(rp_pagemap_bytes() == leaves1, "the map grew by %zu bytes on reuse", rp_pagemap_bytes() - leaves1);
    CHECK_HEAP(h);
    rp_free(small);
    rp_heap_destroy(h);
}

/* Caller memory of 3 GiB that starts in the middle of a GiB: slots at either end are shared
 * with whatever else is there (entries written one by one), the whole ones in between use
 * the region's leaf; every page maps to the region until it is forgotten. */
static void test_partial_and_whole_slots(void)
{
    size_t len = 3 * GIB + ((size_t)1 << 20);
    char *mem = mmap(NULL, len + GIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    /* Start half a GiB past a GiB boundary, so both ends are partial slots. */
    char *start = (char *)(((uintptr_t)mem + GIB - 1) & ~(uintptr_t)(GIB - 1)) + GIB / 2;
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    REQUIRE(rp_heap_add_region(h, start, len - GIB / 2) == 0);
    char *p = rp_alloc(h, 100, 0);
    REQUIRE(p);
    rp_region *r = rp_pagemap_lookup(p);
    REQUIRE(r);
    CHECK(r->pm_whole_leaf != NULL); /* at least two whole GiBs inside */
    char *area = (char *)r->base, *area_end = area + (r->npages << RP_PAGE_SHIFT);
    for (char *q = area; q < area_end; q += GIB / 4)
        CHECKF(rp_pagemap_lookup(q) == r, "offset %zu", (size_t)(q - area));
    CHECK(rp_pagemap_lookup(area_end - 1) == r);
    CHECK(rp_pagemap_lookup(area_end) == NULL);
    CHECK(rp_pagemap_lookup(area - 1) == NULL);
    CHECK_HEAP(h);
    rp_free(p);
    rp_heap_destroy(h);
    for (char *q = area; q < area_end; q += GIB / 4)
        CHECK(rp_pagemap_lookup(q) == NULL);
    munmap(mem, len + GIB);
}

int main(void)
{
    test_static_buffer();
    test_shared_mapping();
    test_mixed();
    test_map_entries_given_back();
    test_whole_slot_leaf();
    test_partial_and_whole_slots();
    TEST_MAIN_END();
}
