/* Mapped blocks (src/mapped_block.h): large blocks of 32 MiB and more (blocks realloc moves:
 * 4 MiB) get a mapping of their own in the release flavour; realloc moves them with mremap,
 * shrinks them in place, free unmaps them. The debug flavour keeps them in shared regions (checked at the end). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rampart.h"
#include "src/mapped_block.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "testing.h"

#define MiB ((size_t)1 << 20)

static int is_release(void) { return strcmp(rp_flavour(), "release") == 0; }

static rp_region *region_of(const void *p) { return rp_pagemap_lookup(p); }

static int mapped_block(const void *p)
{
    rp_region *r = region_of(p);
    return r && rp_region_is_mapped_block(r);
}

/* Pages of [p, p+len) resident now (mincore). */
static size_t resident_pages(const void *p, size_t len)
{
    size_t pages = (len + 4095) / 4096, n = 0;
    unsigned char *v = malloc(pages);
    REQUIRE(v);
    REQUIRE(mincore((void *)p, len, v) == 0);
    for (size_t i = 0; i < pages; i++)
        n += v[i] & 1;
    free(v);
    return n;
}

/* One byte per MiB, a function of the offset and a seed, so a move that lost or shifted data
 * is seen. */
static void stamp(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t off = 0; off < len; off += MiB)
        p[off] = (unsigned char)(off / MiB * 7 + seed);
    p[len - 1] = (unsigned char)(seed ^ 0x5a);
}

static int stamped(const unsigned char *p, size_t len, unsigned seed)
{
    for (size_t off = 0; off < len; off += MiB)
        if (p[off] != (unsigned char)(off / MiB * 7 + seed))
            return 0;
    return 1;
}

/* Growth, shrinking and freeing: what a buffer grown by realloc sees. */
static void test_grow_shrink_free(void)
{
    size_t base = rp_os_mapped_bytes() - rp_pagemap_bytes();
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    size_t heap_only = rp_os_mapped_bytes();

    unsigned char *p = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(p);
    CHECK(mapped_block(p));
    CHECK(((uintptr_t)p & (RP_MAPPED_BLOCK_ALIGN - 1)) == 0);
    CHECK(rp_usable_size(p) == 40 * MiB);
    stamp(p, 40 * MiB, 1);
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.large_blocks == 1 && st.bytes_in_use == 40 * MiB && st.page_free_bytes == 0);

    /* Only the first page written from here on: a copying realloc would write every page of
     * the new block (memcpy), a move writes none. */
    unsigned char *q = p;
    size_t size = 40 * MiB;
    for (int i = 0; i < 6; i++) {
        size = size * 3 / 2 + 12345;
        unsigned char *nq = rp_realloc(h, q, size);
        REQUIRE(nq);
        CHECK(mapped_block(nq));
        CHECKF(stamped(nq, 40 * MiB, 1), "contents lost growing to %zu bytes", size);
        CHECK(rp_usable_size(nq) >= size && rp_usable_size(nq) < size + RP_MAPPED_BLOCK_ALIGN);
        CHECK(((uintptr_t)nq & (RP_MAPPED_BLOCK_ALIGN - 1)) == 0);
        CHECK_HEAP(h);
        q = nq;
    }
    CHECKF(resident_pages(q, size) <= 40 * MiB / 4096 + 16, "%zu pages resident in a %zu-byte block grown from 40 MiB",
           resident_pages(q, size), size);
    /* Everything mapped is the block (rounded to 2 MiB) and its header, nothing left behind. */
    rp_heap_stats(h, &st);
    CHECK(st.regions == 2 || st.regions == 1); /* the block's, and a first region if one was made */
    size_t header = rp_align_up(rp_region_meta_bytes(2 * (rp_usable_size(q) >> 12)), 4096);
    CHECKF(rp_os_mapped_bytes() - heap_only <= rp_usable_size(q) + header,
           "mapped %zu bytes for a block of %zu", rp_os_mapped_bytes() - heap_only, rp_usable_size(q));

    /* Shrinking stays in place and gives the tail back. */
    size_t before = rp_os_mapped_bytes();
    unsigned char *s = rp_realloc(h, q, 50 * MiB + 1);
    CHECK(s == q);
    CHECK(rp_usable_size(s) == 52 * MiB);
    CHECK(stamped(s, 40 * MiB, 1));
    CHECK(before - rp_os_mapped_bytes() == rp_usable_size(q) - 52 * MiB || rp_usable_size(q) == 52 * MiB);
    CHECK_HEAP(h);
    /* A size within its chunks: same block, nothing changes. */
    CHECK(rp_realloc(h, s, 51 * MiB) == s);
    CHECK(rp_usable_size(s) == 52 * MiB);

    /* A shrink whose unmapping the OS refuses keeps the block whole: same pointer, same
     * usable size and contents, nothing counted as given back; the next one succeeds. */
    before = rp_os_mapped_bytes();
    rp_os_fail_at(1);
    CHECK(rp_realloc(h, s, 30 * MiB) == s);
    rp_os_fail_at(0);
    CHECK(rp_usable_size(s) == 52 * MiB && rp_os_mapped_bytes() == before && stamped(s, 40 * MiB, 1));
    CHECK_HEAP(h);
    CHECK(rp_realloc(h, s, 30 * MiB) == s && rp_usable_size(s) == 30 * MiB);
    CHECK(before - rp_os_mapped_bytes() == 22 * MiB && stamped(s, 30 * MiB, 1));
    CHECK_HEAP(h);

    /* Below one chunk it moves into the heap: a small block does not keep 2 MiB. */
    unsigned char *t = rp_realloc(h, s, 1000);
    REQUIRE(t);
    CHECK(t != s && !mapped_block(t) && rp_usable_size(t) < 2000 && t[0] == (unsigned char)1);
    CHECK(region_of(s) == NULL);
    CHECK_HEAP(h);
    s = t;
    rp_free(s);
    CHECK_HEAP(h);
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0 && st.large_blocks == 0);
    /* The block's mappings are gone: all that stays mapped is what the heap counts (its control
     * block and the region the 1000-byte block came from). */
    CHECK(rp_os_mapped_bytes() - rp_pagemap_bytes() - base == st.os_bytes);
    rp_heap_destroy(h);
    CHECK(rp_os_mapped_bytes() - rp_pagemap_bytes() <= base);
}

/* Alignment up to 2 MiB survives every move; larger ones, and heaps that may not map memory,
 * keep the block in a shared region. */
static void test_alignment_and_heaps(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    void *a = rp_alloc(h, 33 * MiB, 2 * MiB);
    REQUIRE(a);
    CHECK(mapped_block(a) && ((uintptr_t)a & (2 * MiB - 1)) == 0);
    a = rp_realloc(h, a, 300 * MiB);
    REQUIRE(a);
    CHECK(mapped_block(a) && ((uintptr_t)a & (2 * MiB - 1)) == 0);
    void *b = rp_alloc(h, 33 * MiB, 4 * MiB);
    REQUIRE(b);
    CHECK(!mapped_block(b) && ((uintptr_t)b & (4 * MiB - 1)) == 0);
    void *c = rp_alloc(h, 32 * MiB - 4096, 0); /* below the threshold */
    REQUIRE(c);
    CHECK(!mapped_block(c));
    /* Growing past the threshold moves it once (a copy) into a mapping of its own. */
    memset(c, 0x3c, 4096);
    c = rp_realloc(h, c, 64 * MiB);
    REQUIRE(c);
    CHECK(mapped_block(c) && ((unsigned char *)c)[4095] == 0x3c);
    CHECK_HEAP(h);
    rp_free(a);
    rp_free(b);
    rp_free(c);
    CHECK_HEAP(h);
    rp_heap_destroy(h);

    /* Caller memory only: no mapping of its own, whatever the size. */
    size_t len = 80 * MiB;
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    rp_heap_config cfg = {0};
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *n = rp_heap_create(&cfg);
    REQUIRE(n);
    REQUIRE(rp_heap_add_region(n, mem, len) == 0);
    void *d = rp_alloc(n, 40 * MiB, 0);
    REQUIRE(d);
    CHECK(!mapped_block(d));
    CHECK_HEAP(n);
    rp_free(d);
    rp_heap_destroy(n);
    munmap(mem, len);
}

/* rp_heap_config.mapped_block_bytes: the threshold, SIZE_MAX for never, at least 2 MiB. */
static void test_threshold(void)
{
    rp_heap_config cfg = {0};
    cfg.mapped_block_bytes = 4 * MiB;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    void *a = rp_alloc(h, 4 * MiB, 0), *b = rp_alloc(h, 4 * MiB - 4096, 0);
    REQUIRE(a && b);
    CHECK(mapped_block(a) && rp_usable_size(a) == 4 * MiB && !mapped_block(b));
    CHECK_HEAP(h);
    rp_free(a);
    rp_free(b);
    rp_heap_destroy(h);
    cfg.mapped_block_bytes = SIZE_MAX;
    h = rp_heap_create(&cfg);
    REQUIRE(h);
    a = rp_alloc(h, 100 * MiB, 0);
    REQUIRE(a);
    CHECK(!mapped_block(a));
    rp_free(a);
    rp_heap_destroy(h);
    cfg.mapped_block_bytes = 2 * MiB - 1;
    errno = 0;
    CHECK(rp_heap_create(&cfg) == NULL && errno == EINVAL);
}

/* The default threshold adapts: after a heap that keeps freed pages (a purge delay) freed a
 * 40 MiB mapped block, the next 40 MiB comes from its regions, reusing their pages; larger
 * blocks still get a mapping; an explicit threshold, or a heap that would give the pages
 * back anyway (no delay, beyond retain_bytes), stays as it was. */
/* In a new heap of configuration cfg: is a 40 MiB block allocated after one was freed mapped? */
static int second_block_mapped(const rp_heap_config *cfg)
{
    rp_heap *h = rp_heap_create(cfg);
    REQUIRE(h);
    rp_free(rp_alloc(h, 40 * MiB, 0));
    void *a = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(a);
    int mapped = mapped_block(a);
    rp_free(a);
    rp_heap_destroy(h);
    return mapped;
}

static void test_adaptive_threshold(void)
{
    rp_heap_config cfg = {0};
    cfg.purge_delay_ms = 3600000;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    void *a = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(a);
    CHECK(mapped_block(a));
    rp_free(a);
    void *b = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(b);
    CHECK(!mapped_block(b));
    memset(b, 1, 40 * MiB);
    rp_free(b);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    size_t released = st.os_released;
    void *c = rp_alloc(h, 40 * MiB, 0); /* the same pages again: nothing mapped, nothing released */
    REQUIRE(c);
    rp_heap_stats_t st2;
    rp_heap_stats(h, &st2);
    CHECK(!mapped_block(c) && st2.os_bytes == st.os_bytes && st2.os_released == released);
    void *d = rp_alloc(h, 100 * MiB, 0);
    REQUIRE(d);
    CHECK(mapped_block(d));
    CHECK_HEAP(h);
    rp_free(c);
    rp_free(d);
    rp_heap_destroy(h);

    cfg.mapped_block_bytes = 32 * MiB; /* explicit: fixed */
    CHECK(second_block_mapped(&cfg));
    CHECK(second_block_mapped(NULL)); /* no delay, 40 MiB beyond retain_bytes: a region would not keep it */
}

/* A buffer grown by realloc in steps of 64 KiB from 1 MiB (a file read in chunks): it grows
 * in place while the pages after it are free, and the first time it must move past
 * realloc_mapped_bytes (4 MiB by default) it gets a mapping of its own, which every later
 * growth keeps (moves by mremap). Returns the size at which it first was a mapped block
 * (0: never, up to max). Its contents are checked at every step. */
static size_t grow_until_mapped(rp_heap *h, size_t max, unsigned char **out)
{
    unsigned char *p = rp_alloc(h, MiB, 0);
    REQUIRE(p);
    stamp(p, MiB, 3);
    size_t size = MiB, first_mapped = 0;
    while (size < max) {
        size += 64 << 10;
        unsigned char *q = rp_realloc(h, p, size);
        REQUIRE(q);
        CHECKF(stamped(q, MiB, 3), "contents lost growing to %zu bytes", size);
        if (mapped_block(q) && !first_mapped)
            first_mapped = size;
        CHECKF(!first_mapped || mapped_block(q), "a mapped buffer went back into the heap at %zu bytes", size);
        p = q;
    }
    *out = p;
    return first_mapped;
}

static void test_realloc_moves_to_mapping(void)
{
    rp_heap_config cfg = {0};
    cfg.purge_delay_ms = 3600000; /* freed pages are kept: the thresholds adapt */
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    unsigned char *p;
    size_t at = grow_until_mapped(h, 40 * MiB, &p);
    CHECKF(at > 4 * MiB && at <= 8 * MiB + MiB, "first mapped at %zu bytes", at);
    CHECK_HEAP(h);
    rp_free(p);
    /* A plain allocation of that size is still the heap's (below mapped_block_bytes). */
    p = rp_alloc(h, 6 * MiB, 0);
    REQUIRE(p);
    CHECK(!mapped_block(p));
    rp_free(p);
    /* The 40 MiB mapping it was freed as raised both thresholds past it: the next buffer grows
     * in the heap's regions, reusing their kept pages. */
    at = grow_until_mapped(h, 40 * MiB, &p);
    CHECKF(at == 0, "mapped at %zu bytes after a 40 MiB mapped block was freed", at);
    CHECK_HEAP(h);
    rp_free(p);
    rp_heap_destroy(h);

    /* Freed 6 MiB: the threshold only passes that size. */
    h = rp_heap_create(&cfg);
    REQUIRE(h);
    at = grow_until_mapped(h, 6 * MiB, &p);
    CHECK(at > 4 * MiB);
    rp_free(p);
    at = grow_until_mapped(h, 16 * MiB, &p);
    CHECKF(at > 6 * MiB && at <= 16 * MiB, "first mapped at %zu bytes", at);
    rp_free(p);
    rp_heap_destroy(h);

    /* An explicit threshold holds for realloc too. */
    cfg.mapped_block_bytes = 32 * MiB;
    h = rp_heap_create(&cfg);
    REQUIRE(h);
    at = grow_until_mapped(h, 24 * MiB, &p);
    CHECKF(at == 0, "mapped at %zu bytes under an explicit 32 MiB threshold", at);
    rp_free(p);
    rp_heap_destroy(h);
}

/* max_bytes bounds mapped blocks too: a growth past it fails with ENOMEM and keeps the block. */
static void test_cap(void)
{
    rp_heap_config cfg = {0};
    cfg.max_bytes = 64 * MiB;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    unsigned char *p = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(p);
    CHECK(mapped_block(p));
    stamp(p, 40 * MiB, 9);
    errno = 0;
    CHECK(rp_realloc(h, p, 100 * MiB) == NULL && errno == ENOMEM);
    CHECK(mapped_block(p) && stamped(p, 40 * MiB, 9) && rp_usable_size(p) == 40 * MiB);
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.os_bytes <= 64 * MiB && st.os_bytes_peak <= 64 * MiB);
    rp_free(p);
    rp_heap_destroy(h);
}

/* Every OS call of a growth (header, area, mremap, unmaps) failing in turn: the growth either
 * succeeds or fails with the block intact, the heap checks clean, nothing leaks. */
static void test_os_failures(void)
{
    size_t base = rp_os_mapped_bytes() - rp_pagemap_bytes();
    int copied = 0, moved = 0;
    for (uint64_t nth = 1; nth <= 12; nth++) {
        rp_heap *h = rp_heap_create(NULL);
        REQUIRE(h);
        unsigned char *p = rp_alloc(h, 34 * MiB, 0);
        REQUIRE(p);
        stamp(p, 34 * MiB, 3);
        /* Something right after the area, so that some growths cannot extend in place. */
        void *after = NULL;
        if (nth & 1) {
            after = mmap(p + rp_usable_size(p), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (after == MAP_FAILED)
                after = NULL;
        }
        rp_os_fail_at(nth);
        errno = 0;
        unsigned char *q = rp_realloc(h, p, 200 * MiB);
        rp_os_fail_at(0);
        /* A move that fails leaves the block as it was and realloc copies it instead (into a
         * new mapped block): one failing call never makes realloc fail. What happened shows in
         * the pages written: a move writes none, a copy all 34 MiB. */
        REQUIRE(q);
        CHECK(mapped_block(q) && stamped(q, 34 * MiB, 3) && rp_usable_size(q) >= 200 * MiB);
        if (resident_pages(q, 200 * MiB) < 1024)
            moved++;
        else
            copied++;
        CHECK_HEAP(h);
        rp_free(q);
        CHECK_HEAP(h);
        if (after)
            munmap(after, 4096);
        rp_heap_destroy(h);
        CHECKF(rp_os_mapped_bytes() - rp_pagemap_bytes() == base, "failure at OS call %llu: %zd bytes left mapped",
               (unsigned long long)nth, (ssize_t)(rp_os_mapped_bytes() - rp_pagemap_bytes() - base));
    }
    printf("growth with one failing OS call: %d moved, %d copied after a failed move\n", moved, copied);
    CHECK(copied >= 2 && moved >= 2);

    /* The unmap of a freed block refused: kept, and given back at the next trim. */
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    void *p = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(p);
    size_t with_block = rp_os_mapped_bytes();
    rp_os_fail_at(1);
    rp_free(p);
    rp_os_fail_at(0);
    CHECK_HEAP(h);
    CHECK(rp_os_mapped_bytes() >= with_block - MiB); /* the area is still mapped */
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0 && st.large_blocks == 0);
    rp_heap_trim(h, 0);
    CHECK(rp_os_mapped_bytes() + 40 * MiB <= with_block);
    rp_heap_destroy(h);
    CHECK(rp_os_mapped_bytes() - rp_pagemap_bytes() == base);
}

/* Under max_bytes, os_bytes_peak never passes the cap, whatever fails. A growth that must
 * move (something is mapped right after the area) and whose move fails gives its new area
 * back: that area was never the heap's memory and must not count (it once did, for a moment,
 * and raised the peak past the cap: found by the heap_ops fuzzer). With a cap too tight for
 * a copy, realloc then fails with ENOMEM and keeps the block. */
static void test_cap_with_os_failures(void)
{
    const size_t cap = 64 * MiB;
    int moved = 0, refused = 0;
    for (uint64_t nth = 1; nth <= 12; nth++) {
        rp_heap_config cfg = {0};
        cfg.max_bytes = cap;
        rp_heap *h = rp_heap_create(&cfg);
        REQUIRE(h);
        unsigned char *p = rp_alloc(h, 34 * MiB, 0);
        REQUIRE(p);
        CHECK(mapped_block(p));
        stamp(p, 64 * 1024, 4);
        void *after = mmap(p + rp_usable_size(p), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                           -1, 0);
        if (after == MAP_FAILED)
            after = NULL;
        rp_os_fail_at(nth);
        errno = 0;
        unsigned char *q = rp_realloc(h, p, 60 * MiB); /* a move fits the cap, a copy does not */
        rp_os_fail_at(0);
        if (q) {
            CHECK(mapped_block(q) && stamped(q, 64 * 1024, 4) && rp_usable_size(q) >= 60 * MiB);
            moved++;
        } else {
            CHECK(errno == ENOMEM && mapped_block(p) && stamped(p, 64 * 1024, 4) && rp_usable_size(p) == 34 * MiB);
            refused++;
            q = p;
        }
        CHECK_HEAP(h);
        rp_heap_stats_t st;
        rp_heap_stats(h, &st);
        CHECKF(st.os_bytes_peak <= cap, "failure at OS call %llu: os_bytes_peak %zu over the cap %zu",
               (unsigned long long)nth, st.os_bytes_peak, cap);
        rp_free(q);
        if (after)
            munmap(after, 4096);
        rp_heap_destroy(h);
    }
    printf("capped growth with one failing OS call: %d moved, %d refused\n", moved, refused);
    CHECK(moved >= 1 && refused >= 1);
}

/* A growth that needs a bigger header maps it while the old one is still mapped (the old one
 * is unmapped last): the cap must leave room for both. Caps from just below to well above
 * what the growth needs, page by page: the growth fails with ENOMEM (block intact) or
 * succeeds, and the peak stays under the cap either way. */
static void test_cap_with_new_header(void)
{
    int grew = 0, refused = 0;
    for (size_t cap = 12 * MiB; cap <= 13 * MiB; cap += 4096) {
        rp_heap_config cfg = {0};
        cfg.max_bytes = cap;
        cfg.mapped_block_bytes = 2 * MiB;
        rp_heap *h = rp_heap_create(&cfg);
        REQUIRE(h);
        unsigned char *p = rp_alloc(h, 4 * MiB, 0);
        REQUIRE(p);
        REQUIRE(mapped_block(p));
        stamp(p, 4096, 6);
        errno = 0;
        /* Three times the pages: more descriptors than the first header holds. */
        unsigned char *q = rp_realloc(h, p, 12 * MiB);
        if (q) {
            CHECK(mapped_block(q) && stamped(q, 4096, 6));
            grew++;
        } else {
            CHECK(errno == ENOMEM && stamped(p, 4096, 6) && rp_usable_size(p) == 4 * MiB);
            refused++;
            q = p;
        }
        rp_heap_stats_t st;
        rp_heap_stats(h, &st);
        CHECKF(st.os_bytes_peak <= cap, "cap %zu: os_bytes_peak %zu (%s)", cap, st.os_bytes_peak,
               q == p ? "refused" : "grown");
        CHECK_HEAP(h);
        rp_free(q);
        rp_heap_destroy(h);
    }
    printf("growth to a new header under caps of 12-13 MiB: %d grown, %d refused\n", grew, refused);
    CHECK(grew >= 1 && refused >= 1);
}

/* The checker sees a damaged mapped-block region (G1..G4). */
static void test_checker(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    void *p = rp_alloc(h, 40 * MiB, 0);
    REQUIRE(p);
    rp_region *r = region_of(p);
    REQUIRE(r && rp_region_is_mapped_block(r));
    char why[256];
    struct {
        const char *inv;
        size_t *field;
        size_t value;
    } damage[] = {
        {"G3", &r->free_pages, 1},
        {"G4", &r->map_len, r->map_len - 4096},
        {"G4", &r->block_meta_len, sizeof(rp_region) + 4 * sizeof(rp_page)},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        size_t saved = *damage[i].field;
        *damage[i].field = damage[i].value;
        CHECKF(rp_heap_check(h, why, sizeof why) != 0 && strncmp(why, damage[i].inv, 2) == 0, "damage %zu: %s", i,
               why);
        *damage[i].field = saved;
    }
    rp_page *d = &r->pages[0];
    uint32_t lead = d->u.large.lead_pages;
    d->u.large.lead_pages = 1;
    CHECK(rp_heap_check(h, why, sizeof why) != 0 && strncmp(why, "G2", 2) == 0);
    d->u.large.lead_pages = lead;
    CHECK_HEAP(h);
    rp_free(p);
    rp_heap_destroy(h);
}

int main(void)
{
    if (!is_release()) {
        /* The debug flavour: shared regions, copies, the same contents. */
        rp_heap *h = rp_heap_create(NULL);
        REQUIRE(h);
        unsigned char *p = rp_alloc(h, 40 * MiB, 0);
        REQUIRE(p);
        CHECK(!mapped_block(p));
        stamp(p, 40 * MiB, 5);
        p = rp_realloc(h, p, 90 * MiB);
        REQUIRE(p);
        CHECK(!mapped_block(p) && stamped(p, 40 * MiB, 5));
        CHECK_HEAP(h);
        rp_free(p);
        rp_heap_destroy(h);
        TEST_MAIN_END();
    }
    test_grow_shrink_free();
    test_alignment_and_heaps();
    test_threshold();
    test_adaptive_threshold();
    test_realloc_moves_to_mapping();
    test_cap();
    test_os_failures();
    test_cap_with_os_failures();
    test_cap_with_new_header();
    test_checker();
    TEST_MAIN_END();
}
