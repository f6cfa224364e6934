/* Caller-supplied regions: a heap over a static buffer (no OS memory at all), over a
 * MAP_SHARED mapping that a forked child writes through, mixed with OS memory; overlapping,
 * too small and NULL regions are refused with EINVAL; destroy forgets the region. And the
 * address map: whole 2 MiB chunks of a region take one entry, shared ones a page table;
 * lookups, the checker (M1, M4) and unregistering (M3) with both. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "src/hooks.h"
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
    CHECK(rp_os_mapped_bytes() <= base + (64u << 10)); /* at most address-map tables remain */
}

#define GIB ((size_t)1 << 30)
#define CHUNK ((size_t)1 << RP_PM_CHUNK_SHIFT)

/* The checker's verdict on h, which must name `code`. */
static void check_fails_with(rp_heap *h, const char *code)
{
    char why[256];
    CHECK(rp_heap_check(h, why, sizeof why) != 0);
    CHECKF(strstr(why, code) != NULL, "expected %s, got: %s", code, why);
}

/* The chunk entry of the chunk holding p (its chunk table must exist). */
static uintptr_t chunk_entry(const void *p)
{
    rp_pm_chunk_table *t = rp_pm_root[(uintptr_t)p >> RP_PM_SLOT_SHIFT];
    REQUIRE(t);
    return (*t)[((uintptr_t)p >> RP_PM_CHUNK_SHIFT) & (RP_PM_CHUNK_ENTRIES - 1)];
}

/* A heap whose first region is 4 GiB: its page area, aligned to its size, is 2,048 whole
 * chunks, registered with one entry each (a chunk table per GiB, no page table): the map
 * grows by at most 16 KiB, where one entry per page took 8 MiB of entries (and seconds for a
 * TiB). Lookups find it everywhere, the checker reads it, destroy clears it. */
static void test_whole_chunks(void)
{
    rp_heap_config cfg = {0};
    cfg.region_bytes = 4 * GIB;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    size_t tables0 = rp_pagemap_bytes();
    char *small = rp_alloc(h, 100, 0);
    REQUIRE(small);
    rp_region *r = rp_pagemap_lookup(small);
    REQUIRE(r);
    REQUIRE(r->npages << RP_PAGE_SHIFT == 4 * GIB);
    char *area = (char *)r->base;
    size_t size = 4 * GIB;
    CHECKF(rp_pagemap_bytes() - tables0 <= 4 * RP_OS_PAGE, "the map grew by %zu bytes", rp_pagemap_bytes() - tables0);
    for (size_t off = 0; off < size; off += CHUNK * 37) {
        CHECKF(rp_pagemap_lookup(area + off) == r, "offset %zu", off);
        CHECKF(chunk_entry(area + off) == (uintptr_t)r, "chunk at offset %zu is not whole", off);
    }
    CHECK(rp_pagemap_lookup(area + size - 1) == r);
    CHECK(rp_pagemap_run_of(area, r->npages, r) == r->npages);
    CHECK(rp_pagemap_run_of(area, r->npages + 1, r) == r->npages);
    CHECK_HEAP(h);

    /* A chunk entry cleared inside the region: M1. */
    uintptr_t *e = rp_pagemap_entry_of(area + GIB + 12345 * RP_PAGE_SIZE);
    REQUIRE(e && *e == (uintptr_t)r);
    *e = 0;
    check_fails_with(h, "M1");
    CHECK(rp_pagemap_run_of(area, r->npages, r) == (GIB + 12288 * RP_PAGE_SIZE) >> RP_PAGE_SHIFT);
    *e = (uintptr_t)r;
    CHECK_HEAP(h);

    uintptr_t slot = (uintptr_t)area >> RP_PM_SLOT_SHIFT;
    rp_free(small);
    rp_heap_destroy(h);
    CHECK(rp_pagemap_lookup(area) == NULL && rp_pagemap_lookup(area + size / 2) == NULL);
    CHECK(rp_pm_root[slot] != NULL && chunk_entry(area) == 0);
    /* A second heap maps the same way, reusing the tables. */
    size_t tables1 = rp_pagemap_bytes();
    h = rp_heap_create(&cfg);
    REQUIRE(h);
    small = rp_alloc(h, 100, 0);
    REQUIRE(small);
    r = rp_pagemap_lookup(small);
    REQUIRE(r && rp_pagemap_lookup((char *)r->base + (r->npages << RP_PAGE_SHIFT) - 1) == r);
    CHECKF(rp_pagemap_bytes() - tables1 <= 4 * RP_OS_PAGE, "the map grew by %zu bytes", rp_pagemap_bytes() - tables1);
    CHECK_HEAP(h);
    rp_free(small);
    rp_heap_destroy(h);
}

/* M4: a 64 MiB region's neighbouring chunks (in the same GiB) naming the region are
 * reported; 48 MiB freed goes back to the OS and the region's entries with it. */
static void test_chunk_outside_region(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    char *big = rp_alloc(h, (size_t)48 << 20, 0);
    REQUIRE(big);
    rp_region *r = rp_pagemap_lookup(big);
    REQUIRE(r);
    char *area = (char *)r->base, *end = area + (r->npages << RP_PAGE_SHIFT);
    /* The chunk after the region, or the one before it when the region ends a GiB. */
    char *outside = ((uintptr_t)end & (GIB - 1)) ? end : area - CHUNK;
    uintptr_t *e = rp_pagemap_entry_of(outside);
    REQUIRE(e);
    uintptr_t saved = *e;
    /* Regions mapped from the OS are 2 MiB aligned and at least 4 MiB here: a chunk entry. */
    REQUIRE(!(saved & RP_PM_PAGE_TABLE_TAG));
    *e = (uintptr_t)r;
    check_fails_with(h, "M4");
    *e = saved;
    CHECK_HEAP(h);
    rp_free(big);
    rp_heap_trim(h, 0); /* the wholly free region is unmapped */
    CHECK(rp_pagemap_lookup(big) == NULL && rp_pagemap_lookup(end - 1) == NULL);
    CHECK_HEAP(h);
    big = rp_alloc(h, (size_t)48 << 20, 0); /* the heap maps again */
    REQUIRE(big);
    CHECK(rp_pagemap_lookup(big + ((size_t)1 << 20)) != NULL);
    CHECK_HEAP(h);
    rp_free(big);
    rp_heap_destroy(h);
}

/* Caller memory of 3 GiB whose page area starts and ends inside 2 MiB chunks: those two
 * chunks get page tables (entries written page by page), the whole chunks in between one
 * entry each; every page maps to the region until it is forgotten, and then the empty page
 * tables are detached. */
static void test_partial_and_whole_chunks(void)
{
    size_t len = 3 * GIB + ((size_t)1 << 20);
    char *mem = mmap(NULL, len + GIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    /* Start half a GiB past a GiB boundary: the page area begins after the descriptors. */
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
    char *area = (char *)r->base, *area_end = area + (r->npages << RP_PAGE_SHIFT);
    REQUIRE(((uintptr_t)area & (CHUNK - 1)) && ((uintptr_t)area_end & (CHUNK - 1)));
    /* Partial chunks at either end (page tables), whole ones between. */
    CHECK(chunk_entry(area) & RP_PM_PAGE_TABLE_TAG);
    CHECK(chunk_entry(area_end - 1) & RP_PM_PAGE_TABLE_TAG);
    CHECK(chunk_entry(area + GIB) == (uintptr_t)r);
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
    /* M3: the page tables left empty are detached. */
    CHECK(chunk_entry(area) == 0 && chunk_entry(area_end - 1) == 0);
    munmap(mem, len + GIB);
}

/* A LARGE head damaged to claim no lead page (fuzz regression heap_ops_debug/
 * damaged-large-head-no-lead): in the debug flavour the runtime's prefix lies in the lead, so
 * a head without one would send the checker and the walk to the bytes before the block, the
 * region's own descriptors. Both must refuse the head by D2 before the runtime sees it. */
static int count_visit(const rp_block_info *block, void *arg)
{
    (void)block;
    ++*(size_t *)arg;
    return 0;
}

static void test_damaged_large_lead(void)
{
    static unsigned char mem[256 << 10];
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    REQUIRE(rp_heap_add_region(h, mem, sizeof mem) == 0);
    void *p = rp_alloc(h, 64 << 10, 0);
    REQUIRE(p);
    rp_region *r = rp_pagemap_lookup(p);
    REQUIRE(r);
    rp_page *head = NULL;
    for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1)
        if (r->pages[i].state == RP_PAGE_LARGE)
            head = &r->pages[i];
    REQUIRE(head);
    char why[256];
    CHECK(rp_heap_check(h, why, sizeof why) == 0);
    if (RP_HOOK_PREFIX > 0) {
        CHECK(head->u.large.lead_pages > 0);
        rp_page saved = *head;
        head->u.large.lead_pages = 0;
        head->u.large.usable = (uint64_t)head->npages << 12;
        CHECK(rp_heap_check(h, why, sizeof why) != 0 && strncmp(why, "D2", 2) == 0);
        size_t visited = 0;
        CHECK(rp_heap_walk(h, count_visit, &visited) == -1);
        *head = saved;
        CHECK(rp_heap_check(h, why, sizeof why) == 0);
    }
    rp_free(p);
    rp_heap_destroy(h);
}

int main(void)
{
    test_static_buffer();
    test_shared_mapping();
    test_mixed();
    test_whole_chunks();
    test_chunk_outside_region();
    test_partial_and_whole_chunks();
    test_damaged_large_lead();
    TEST_MAIN_END();
}
