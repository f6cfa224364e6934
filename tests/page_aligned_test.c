#define _GNU_SOURCE
/* Page-aligned blocks cost exactly their pages: in a 64 MiB caller region (plus room for its
 * page descriptors) rampart fits one 4096/4096 block per page — all 16,384 of them, where an
 * in-band header allocator such as TLSF fits 8,190 — and likewise 16384/16384 and
 * 65536/65536. Also: a 64 KiB block aligned to 64 KiB starts on a 64 KiB boundary with no
 * padding, and freeing everything coalesces the region back to its largest blocks. */
#include <stdint.h>
#include <sys/mman.h>

#include "rampart.h"
#include "testing.h"

#define AREA ((size_t)64 << 20)
/* Region header + one 32-byte descriptor per page, rounded to whole pages, plus slack for
 * aligning the page area. */
#define META (((AREA / 4096) * 32 + 4096) + 2 * 4096)

static void fill_region(size_t size, size_t align)
{
    size_t len = META + AREA;
    /* Map with 64 MiB alignment slack so the page area can be naturally aligned. */
    unsigned char *raw = mmap(NULL, len + AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(raw != MAP_FAILED);
    uintptr_t area = ((uintptr_t)raw + META + AREA - 1) & ~(uintptr_t)(AREA - 1);
    unsigned char *base = (unsigned char *)(area - META);
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    REQUIRE(rp_heap_add_region(h, base, len) == 0);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    size_t pages = st.region_bytes / 4096;
    CHECKF(pages >= AREA / 4096, "region holds %zu pages", pages);
    size_t n = 0;
    void *p;
    while ((p = rp_alloc(h, size, align)) != NULL) {
        CHECK(((uintptr_t)p & (align - 1)) == 0);
        CHECK((unsigned char *)p >= base && (unsigned char *)p + size <= base + len);
        n++;
    }
    size_t expect = pages * 4096 / size;
    printf("%zu/%zu: %zu blocks in a region of %zu pages (expected %zu)\n", size, align, n, pages, expect);
    CHECKF(n == expect, "%zu/%zu: %zu blocks, expected %zu", size, align, n, expect);
    rp_heap_stats(h, &st);
    CHECK(st.bytes_in_use == n * size);
    CHECK(st.bytes_free == pages * 4096 - n * size); /* only the pages too few for a block */
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    munmap(raw, len + AREA);
}

int main(void)
{
    fill_region(4096, 4096);
    fill_region(16384, 16384);
    fill_region(65536, 65536);

    rp_heap *h = rp_heap_create(NULL);
    void *a = rp_alloc(h, 65536, 65536);
    void *b = rp_alloc(h, 65536, 65536);
    REQUIRE(a && b);
    CHECK(((uintptr_t)a & 65535) == 0 && ((uintptr_t)b & 65535) == 0);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.bytes_in_use == 2 * 65536);
    rp_free(a);
    rp_free(b);
    rp_heap_stats(h, &st);
    CHECK(st.bytes_in_use == 0);
    /* Coalesced: the largest free block is the whole first region again. */
    CHECK(st.largest_free == st.region_bytes);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
