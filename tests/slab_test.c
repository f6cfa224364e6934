/* The slab tier (src/slab.h): the reciprocal gives every block index exactly (SL1, every
 * stride and offset); fresh runs and recycled blocks are live to rp_slab_block_live and
 * nothing else is (interior pointers, tails, free blocks, slabs not in use); taking fresh
 * blocks touches no block memory; empty slabs are kept up to keep_empty, then released with
 * their memory; a full space says so; a model-based random run against a shadow map checks
 * every invariant after every operation; a pool's chunks after its first two are advised
 * huge pages, its first two are not; and the checkers name damage of each invariant. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/os.h"
#include "src/slab.h"
#include "testing.h"
#include "vma_flags.h"

#define SPACE_SLABS 64

static void check_all(rp_slab_space *s, rp_slab_pool *pool, const char *what)
{
    char why[256];
    CHECKF(rp_slab_space_check(s, why, sizeof why) == 0, "%s: %s", what, why);
    CHECKF(rp_slab_pool_check(pool, why, sizeof why) == 0, "%s: %s", what, why);
}

static int live(rp_slab_space *s, const void *p)
{
    uint32_t stride;
    return rp_slab_block_live(s, p, &stride) != NULL;
}

/* SL1: (o * recip) >> 32 == o / stride for every class and offset in a slab. */
static void test_reciprocals(void)
{
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++) {
        uint32_t stride = (uint32_t)rp_slab_stride(c);
        uint32_t recip = (uint32_t)(((uint64_t)1 << 32) / stride + 1);
        CHECK(rp_slab_class_of(stride) == c);
        int bad = 0;
        for (uint32_t o = 0; o < RP_SLAB_BYTES; o++)
            bad += rp_slab_index(recip, o) != o / stride;
        CHECKF(bad == 0, "stride %u: %d offsets get the wrong index", stride, bad);
    }
}

static void test_fresh_and_recycled(void)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, SPACE_SLABS * RP_SLAB_BYTES) == 0);
    CHECK(s.base % RP_SLAB_BYTES == 0 && s.nslabs == SPACE_SLABS);
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 1);
    check_all(&s, &pool, "empty");

    /* Stride 96 (class 5): 682 blocks per slab, 64 bytes of tail. */
    unsigned cls = 5;
    void *first;
    size_t k = rp_slab_take_fresh(&pool, cls, 100, &first);
    CHECK(k == 100);
    CHECK((uintptr_t)first == s.base);
    for (size_t i = 0; i < k; i++)
        CHECK(live(&s, (char *)first + i * 96));
    CHECK(!live(&s, (char *)first + 100 * 96)); /* fresh, not handed out */
    CHECK(!live(&s, (char *)first + 16));       /* interior */
    CHECK(!live(&s, (char *)first + 682 * 96)); /* the tail past the last block */
    CHECK(!live(&s, (char *)first + RP_SLAB_BYTES)); /* the next slab, not in use */
    /* Outside the space, below and above: no metadata is read (fuzz finding of slab_ops: an
     * offset below the base wrapped and indexed far outside the arrays). */
    CHECK(!live(&s, (char *)s.base - 16) && !live(&s, (char *)s.base - RP_SLAB_BYTES));
    CHECK(!live(&s, (char *)s.base + s.len) && !live(&s, (char *)s.base + 2 * s.len));
    CHECK(rp_slab_contains(&s, first) && !rp_slab_contains(&s, (char *)s.base - 16) &&
          !rp_slab_contains(&s, (char *)s.base + s.len));
    int is_free;
    CHECK(strcmp(rp_slab_describe(&s, (char *)first + 16, &is_free), "inside a block") == 0 && !is_free);
    CHECK(strcmp(rp_slab_describe(&s, (char *)first + 682 * 96, &is_free), "past the last block of its slab") == 0 &&
          !is_free);
    CHECK(strcmp(rp_slab_describe(&s, (char *)first + RP_SLAB_BYTES, &is_free), "not in a slab in use") == 0 &&
          !is_free);
    CHECK(strcmp(rp_slab_describe(&s, (char *)first + 200 * 96, &is_free), "a free block") == 0 && is_free);
    CHECK(strcmp(rp_slab_describe(&s, first, &is_free), "a live block") == 0 && !is_free);
    CHECK(pool.blocks_live == 100 && pool.bytes_live == 9600 && pool.slabs == 1);
    check_all(&s, &pool, "100 fresh");

    /* Nothing recycled yet. */
    void *out[700];
    CHECK(rp_slab_take_recycled(&pool, cls, out, 10) == 0);

    /* Give back blocks 3, 70 and 99; they are free (a second free would be refused) and come
     * back, lowest first, before any fresh block. */
    void *back[3] = {(char *)first + 70 * 96, (char *)first + 3 * 96, (char *)first + 99 * 96};
    rp_slab_give_back(&pool, back, 3);
    for (int i = 0; i < 3; i++)
        CHECK(!live(&s, back[i]));
    check_all(&s, &pool, "3 given back");
    CHECK(rp_slab_take_recycled(&pool, cls, out, 2) == 2);
    CHECK(out[0] == back[1] && out[1] == back[0]);
    CHECK(rp_slab_take_recycled(&pool, cls, out, 10) == 1 && out[0] == back[2]);
    CHECK(rp_slab_take_recycled(&pool, cls, out, 10) == 0);
    check_all(&s, &pool, "recycled");

    /* The rest of the slab in two runs, then a second slab. */
    CHECK(rp_slab_take_fresh(&pool, cls, 1000, &first) == 582);
    CHECK((uintptr_t)first == s.base + 100 * 96);
    void *second;
    /* slab 1's colour: its blocks start 64 bytes in */
    CHECK(rp_slab_take_fresh(&pool, cls, 1, &second) == 1 && (uintptr_t)second == s.base + RP_SLAB_BYTES + 64);
    CHECK(rp_slab_colour(0, 96) == 0 && rp_slab_colour(1, 96) == 64 && rp_slab_colour(RP_SLAB_COLOURS, 96) == 0);
    /* Colours keep blocks aligned to the largest power of two of their stride. */
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++) {
        uint32_t st = (uint32_t)rp_slab_stride(c), pow2 = st & (0u - st);
        for (size_t i = 0; i < 2 * RP_SLAB_COLOURS; i++)
            CHECKF(rp_slab_colour(i, st) % pow2 == 0 && rp_slab_colour(i, st) < 1024 && rp_slab_colour(i, st) % 64 == 0,
                   "stride %u slab %zu colour %u", st, i, rp_slab_colour(i, st));
    }
    CHECK(!live(&s, (char *)s.base + RP_SLAB_BYTES)); /* the colour gap */
    CHECK(strcmp(rp_slab_describe(&s, (char *)s.base + RP_SLAB_BYTES, &is_free), "before the first block of its slab") ==
          0);
    check_all(&s, &pool, "two slabs");

    /* Give back every block of the first slab: it is retired and kept (keep_empty 1), holds no
     * class, and refuses every pointer. */
    for (size_t i = 0; i < 682; i++)
        out[i] = (char *)s.base + i * 96;
    rp_slab_give_back(&pool, out, 682);
    CHECK(pool.empty_n == 1 && pool.slabs == 2 && pool.blocks_live == 1);
    CHECK(!live(&s, (void *)s.base));
    CHECK(strcmp(rp_slab_describe(&s, (void *)s.base, &is_free), "not in a slab in use") == 0);
    check_all(&s, &pool, "first slab empty");

    /* Another class takes the kept slab: stride 128 blocks, each 128-byte aligned. */
    CHECK(rp_slab_take_fresh(&pool, 7, 512, &first) == 512);
    CHECK((uintptr_t)first == s.base && pool.empty_n == 0);
    for (size_t i = 0; i < 512; i++)
        CHECK(((uintptr_t)first + i * 128) % 128 == 0 && live(&s, (char *)first + i * 128));
    check_all(&s, &pool, "slab reused by another class");

    /* The current slab emptied starts over from its first block. */
    rp_slab_give_back(&pool, &second, 1);
    CHECK(pool.cur[cls] == rp_slab_of(&s, second) && pool.slabs == 2);
    CHECK(rp_slab_take_fresh(&pool, cls, 2, &first) == 2 && first == second);
    check_all(&s, &pool, "current slab restarted");

    rp_slab_pool_reset(&pool);
    check_all(&s, &pool, "reset");
    CHECK(pool.slabs == 0 && s.slabs_held == 0 && s.released_n == 2);
    rp_slab_space_fini(&s);
}

/* Fresh blocks are handed out without a byte of theirs being touched: a whole slab taken
 * stays non-resident (mincore). */
static void test_fresh_untouched(void)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, SPACE_SLABS * RP_SLAB_BYTES) == 0);
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 0);
    void *first;
    CHECK(rp_slab_take_fresh(&pool, 0, RP_SLAB_MAX_BLOCKS, &first) == RP_SLAB_MAX_BLOCKS);
    unsigned char vec[RP_SLAB_BYTES / 4096];
    REQUIRE(mincore(first, RP_SLAB_BYTES, vec) == 0);
    int resident = 0;
    for (size_t i = 0; i < sizeof vec; i++)
        resident += vec[i] & 1;
    CHECKF(resident == 0, "%d pages of a slab handed out fresh are resident", resident);

    /* Released memory goes back to the OS: written, then emptied (keep_empty 0; not the
     * current slab, it was used up), it reads zero. */
    memset(first, 0xab, RP_SLAB_BYTES);
    void **all = malloc(RP_SLAB_MAX_BLOCKS * sizeof *all);
    REQUIRE(all);
    for (size_t i = 0; i < RP_SLAB_MAX_BLOCKS; i++)
        all[i] = (char *)first + 16 * i;
    rp_slab_give_back(&pool, all, RP_SLAB_MAX_BLOCKS);
    CHECK(pool.slabs == 0 && s.released_n == 1 && s.slabs_held == 0);
    CHECK(((unsigned char *)first)[0] == 0 && ((unsigned char *)first)[RP_SLAB_BYTES - 1] == 0);
    check_all(&s, &pool, "released");

    /* The current slab emptied is kept and starts over; slabs never used are taken before
     * released ones. */
    void *again;
    CHECK(rp_slab_take_fresh(&pool, 0, 10, &again) == 10 && (uintptr_t)again == s.base + RP_SLAB_BYTES + 64);
    for (size_t i = 0; i < 10; i++)
        all[i] = (char *)again + 16 * i;
    rp_slab_give_back(&pool, all, 10);
    CHECK(pool.slabs == 1 && pool.cur[0] == rp_slab_of(&s, again) && s.released_n == 1);
    void *same;
    CHECK(rp_slab_take_fresh(&pool, 0, 10, &same) == 10 && same == again);
    check_all(&s, &pool, "current slab kept");

    /* A release the OS refuses keeps the memory and is counted; the space stays consistent. */
    void *rest;
    size_t n1 = (RP_SLAB_BYTES - 64) / 16; /* slab 1: 4092 blocks after its colour */
    CHECK(rp_slab_take_fresh(&pool, 0, RP_SLAB_MAX_BLOCKS, &rest) == n1 - 10);
    CHECK(pool.cur[0] == NULL);
    for (size_t i = 0; i < n1; i++)
        all[i] = (char *)again + 16 * i;
    rp_os_fail_at(1);
    rp_slab_give_back(&pool, all, n1);
    rp_os_fail_at(0);
    CHECK(s.decommit_failures == 1 && s.released_n == 2 && pool.slabs == 0);
    check_all(&s, &pool, "release refused");
    free(all);
    rp_slab_pool_reset(&pool);
    rp_slab_space_fini(&s);
}

/* Pages of a slab that are resident (mincore). */
static int resident_pages(const void *slab)
{
    unsigned char vec[RP_SLAB_BYTES / 4096];
    REQUIRE(mincore((void *)slab, RP_SLAB_BYTES, vec) == 0);
    int n = 0;
    for (size_t i = 0; i < sizeof vec; i++)
        n += vec[i] & 1;
    return n;
}

/* Emptied slabs keep their pages up to dirty_max (the dirty list); beyond it the oldest half
 * goes back to the OS; a slab taken next is a resident one; a purge to 0 decommits the rest. */
static void test_dirty_retention(void)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, SPACE_SLABS * RP_SLAB_BYTES) == 0);
    s.dirty_max = 2;
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 0);
    void **all = malloc(RP_SLAB_MAX_BLOCKS * sizeof *all);
    REQUIRE(all);
    void *slabs[4], *firsts[4];
    size_t counts[4];
    for (int k = 0; k < 4; k++) { /* four slabs filled first: each a fresh one */
        counts[k] = rp_slab_take_fresh(&pool, 62, RP_SLAB_MAX_BLOCKS, &firsts[k]);
        REQUIRE(counts[k] >= 60);
        memset(firsts[k], 0xab, counts[k] * 1008);
        slabs[k] = (void *)((uintptr_t)firsts[k] & ~(RP_SLAB_BYTES - 1));
    }
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < counts[k]; i++)
            all[i] = (char *)firsts[k] + 1008 * i;
        rp_slab_give_back(&pool, all, counts[k]);
        CHECKF(s.dirty_n <= s.dirty_max, "after %d slabs emptied, %zu kept resident (at most %zu)", k + 1, s.dirty_n,
               s.dirty_max);
        check_all(&s, &pool, "a slab emptied");
    }
    /* Kept: the last ones given back; decommitted: the first ones. */
    CHECKF(resident_pages(slabs[3]) == 16 && resident_pages(slabs[0]) == 0, "resident pages %d (newest) and %d (oldest)",
           resident_pages(slabs[3]), resident_pages(slabs[0]));
    CHECK(s.released_n == 4 && s.purges >= 1);
    /* The next slab taken is the newest resident one. */
    void *again;
    REQUIRE(rp_slab_take_fresh(&pool, 62, 1, &again) == 1);
    CHECK(((uintptr_t)again & ~(RP_SLAB_BYTES - 1)) == (uintptr_t)slabs[3]);
    all[0] = again;
    rp_slab_give_back(&pool, all, 1);
    CHECK(rp_slab_space_purge(&s, 0) >= 1 && s.dirty_n == 0 && resident_pages(slabs[2]) == 0); /* [3] is current again */
    check_all(&s, &pool, "purged");
    free(all);
    rp_slab_pool_reset(&pool);
    rp_slab_space_fini(&s);
}

/* A full space: take_fresh returns 0, and blocks given back are what is left. */
static void test_exhaustion(void)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, 2 * RP_SLAB_BYTES + 4096) == 0); /* rounded down: 2 slabs */
    CHECK(s.nslabs == 2);
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 4);
    void *a, *b, *c;
    CHECK(rp_slab_take_fresh(&pool, 62, 100, &a) == 65); /* stride 1008: 65 blocks */
    CHECK(rp_slab_take_fresh(&pool, 62, 100, &b) == 64); /* 64 after slab 1's colour */
    CHECK(rp_slab_take_fresh(&pool, 62, 1, &c) == 0);
    CHECK(rp_slab_take_fresh(&pool, 0, 1, &c) == 0);
    rp_slab_give_back(&pool, &b, 1);
    void *out[4];
    CHECK(rp_slab_take_recycled(&pool, 62, out, 4) == 1 && out[0] == b);
    check_all(&s, &pool, "full space");
    rp_slab_pool_reset(&pool);
    rp_slab_space_fini(&s);

    /* The OS refusing the reservation: no space. */
    rp_os_fail_at(1);
    CHECK(rp_slab_space_init(&s, 4 * RP_SLAB_BYTES) == -1);
    rp_os_fail_at(2);
    CHECK(rp_slab_space_init(&s, 4 * RP_SLAB_BYTES) == -1); /* the descriptors refused */
    rp_os_fail_at(0);
    CHECK(rp_slab_space_init(&s, RP_SLAB_BYTES - 16) == -1);
}

/* Huge page advice: a pool's first RP_SLAB_CHUNKS_BEFORE_HUGE chunks keep 4 KiB pages, its
 * later ones are advised; a second pool's first chunk is not. (Skipped where the kernel has
 * no transparent huge pages.) */
static void test_huge_page_advice(void)
{
    void *probe = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(probe != MAP_FAILED);
    int thp = madvise(probe, 4 << 20, MADV_HUGEPAGE) == 0;
    munmap(probe, 4 << 20);
    rp_slab_space s;
    _Static_assert(RP_SLAB_CHUNKS_BEFORE_HUGE == 2, "the case below takes two chunks first");
    REQUIRE(rp_slab_space_init(&s, 4 * RP_SLAB_CHUNK_BYTES) == 0);
    s.advise_huge_pages = 1;
    rp_slab_pool a, b;
    rp_slab_pool_init(&a, &s, 0);
    rp_slab_pool_init(&b, &s, 0);
    void *first;
    for (size_t i = 0; i <= 2 * RP_SLAB_CHUNK_SLABS; i++) /* two whole chunks, one slab of the next */
        CHECK(rp_slab_take_fresh(&a, 62, RP_SLAB_MAX_BLOCKS, &first) >= 64);
    CHECK(a.chunk == 3 && a.chunks_taken == 3);
    CHECK(rp_slab_take_fresh(&b, 0, 1, &first) == 1);
    CHECK(b.chunk == 4 && b.chunks_taken == 1);
    check_all(&s, &a, "huge page advice");
    uintptr_t c0 = s.base, c2 = c0 + 2 * RP_SLAB_CHUNK_BYTES, c3 = c2 + RP_SLAB_CHUNK_BYTES;
    if (thp) {
        CHECKF(vma_range_has_flag(c0, c2, "hg") == 0, "a pool's first two chunks advised: %d",
               vma_range_has_flag(c0, c2, "hg"));
        CHECKF(vma_range_has_flag(c2, c3, "hg") == 1, "a pool's third chunk not advised: %d",
               vma_range_has_flag(c2, c3, "hg"));
        CHECKF(vma_range_has_flag(c3, c3 + RP_SLAB_CHUNK_BYTES, "hg") == 0, "another pool's first chunk advised");
    }
    /* Not asked for: nothing advised. */
    rp_slab_pool_reset(&a);
    rp_slab_pool_reset(&b);
    rp_slab_space_fini(&s);
    REQUIRE(rp_slab_space_init(&s, 2 * RP_SLAB_CHUNK_BYTES) == 0);
    rp_slab_pool_init(&a, &s, 0);
    for (size_t i = 0; i <= RP_SLAB_CHUNK_SLABS; i++)
        CHECK(rp_slab_take_fresh(&a, 62, RP_SLAB_MAX_BLOCKS, &first) >= 64);
    CHECK(a.chunks_taken == 2 && a.chunk == 2);
    if (thp)
        CHECK(vma_range_has_flag(s.base, s.base + 2 * RP_SLAB_CHUNK_BYTES, "hg") == 0);
    rp_slab_pool_reset(&a);
    rp_slab_space_fini(&s);
}

/* Random takes and gives over all classes against a shadow map of the space (16-byte
 * granules: which block owns each), every invariant checked after every operation. */
#define GRANULES (SPACE_SLABS * RP_SLAB_BYTES / 16)
static uint32_t owner[GRANULES]; /* 1 + index into held, 0: free */
static void *held[1 << 16];
static uint32_t held_stride[1 << 16];
static size_t nheld;

static void shadow_mark(rp_slab_space *s, void *p, uint32_t stride, uint32_t val)
{
    size_t g = ((uintptr_t)p - s->base) / 16;
    for (size_t i = 0; i < stride / 16; i++) {
        if (val)
            CHECKF(owner[g + i] == 0, "block %p overlaps a live block", p);
        owner[g + i] = val;
    }
}

static void hold(rp_slab_space *s, void *p, unsigned cls)
{
    uint32_t stride = (uint32_t)rp_slab_stride(cls), got;
    CHECK(rp_slab_contains(s, p) && (uintptr_t)p % 16 == 0);
    CHECK(rp_slab_block_live(s, p, &got) && got == stride);
    /* a block never crosses its slab */
    CHECK(((uintptr_t)p & (RP_SLAB_BYTES - 1)) + stride <= RP_SLAB_BYTES);
    REQUIRE(nheld < sizeof held / sizeof held[0]);
    held[nheld] = p;
    held_stride[nheld] = stride;
    nheld++;
    shadow_mark(s, p, stride, (uint32_t)nheld);
}

static void test_random(uint64_t seed, size_t ops)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, SPACE_SLABS * RP_SLAB_BYTES) == 0);
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 2);
    test_rng rng = {seed};
    memset(owner, 0, sizeof owner);
    nheld = 0;
    static void *out[512];
    for (size_t op = 0; op < ops; op++) {
        unsigned r = (unsigned)rng_below(&rng, 10);
        /* a few classes, so slabs fill, empty and change class */
        static const unsigned classes[] = {0, 2, 5, 6, 30, 62};
        unsigned cls = classes[rng_below(&rng, 6)];
        size_t n = 1 + rng_below(&rng, r < 2 ? 300 : 64);
        if (r < 4) {
            void *first;
            size_t k = rp_slab_take_fresh(&pool, cls, n, &first);
            CHECK(k <= n);
            for (size_t i = 0; i < k; i++)
                hold(&s, (char *)first + i * rp_slab_stride(cls), cls);
        } else if (r < 6) {
            size_t k = rp_slab_take_recycled(&pool, cls, out, n);
            CHECK(k <= n);
            for (size_t i = 0; i < k; i++)
                hold(&s, out[i], cls);
        } else if (r < 9 && nheld) {
            /* give back up to n random held blocks, possibly of several classes */
            size_t k = 0;
            for (; k < n && nheld; k++) {
                size_t j = rng_below(&rng, nheld);
                out[k] = held[j];
                shadow_mark(&s, held[j], held_stride[j], 0);
                nheld--;
                held[j] = held[nheld];
                held_stride[j] = held_stride[nheld];
                if (j < nheld) { /* the last one moved to slot j */
                    shadow_mark(&s, held[j], held_stride[j], 0);
                    shadow_mark(&s, held[j], held_stride[j], (uint32_t)j + 1);
                }
            }
            rp_slab_give_back(&pool, out, k);
            for (size_t i = 0; i < k; i++)
                CHECK(!live(&s, out[i]));
        } else if (r == 9) {
            rp_slab_pool_trim(&pool);
            CHECK(pool.empty_n == 0);
        }
        char why[256];
        if (rp_slab_space_check(&s, why, sizeof why) || rp_slab_pool_check(&pool, why, sizeof why)) {
            CHECKF(0, "seed %llu op %zu: %s", (unsigned long long)seed, op, why);
            break;
        }
        CHECK(pool.blocks_live == nheld);
    }
    /* Everything held is live; a random sample of other granule starts is not. */
    for (size_t i = 0; i < nheld; i++)
        CHECK(live(&s, held[i]));
    for (int i = 0; i < 20000; i++) {
        size_t g = rng_below(&rng, GRANULES);
        void *p = (char *)s.base + g * 16;
        if (!owner[g] || held[owner[g] - 1] != p)
            CHECKF(!live(&s, p), "%p is no live block but is accepted", p);
    }
    rp_slab_pool_reset(&pool);
    check_all(&s, &pool, "random reset");
    rp_slab_space_fini(&s);
}

/* Damage to each invariant is named by the checker. */
static void test_checker_names_damage(void)
{
    rp_slab_space s;
    REQUIRE(rp_slab_space_init(&s, SPACE_SLABS * RP_SLAB_BYTES) == 0);
    rp_slab_pool pool;
    rp_slab_pool_init(&pool, &s, 1);
    void *first;
    REQUIRE(rp_slab_take_fresh(&pool, 3, 10, &first) == 10);
    rp_slab_give_back(&pool, &first, 1);
    check_all(&s, &pool, "before damage");
    rp_slab *d = rp_slab_of(&s, first);
    uint64_t *map = rp_slab_bits(&s, d);
    char why[256];
    struct {
        const char *expect;
        uint64_t *word;
        uint64_t value;
    } damage[] = {
        {"SL2:", &map[0], map[0] | (1ull << 44)}, /* block 11's start: above fresh (10) */
        {"SL2:", &map[0], map[0] | (1ull << 21)}, /* inside block 5 (4 granules per block) */
        {"SL2:", &map[0], map[0] & ~(1ull << 4)}, /* live no longer matches */
        {"SL1:", &s.meta[0], s.meta[0] + (1ull << 32)}, /* the reciprocal */
        {"SL1:", &s.meta[0], s.meta[0] - 1},             /* the block count */
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        uint64_t saved = *damage[i].word;
        *damage[i].word = damage[i].value;
        CHECKF(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, damage[i].expect, 3) == 0,
               "damage %zu: %s", i, why);
        *damage[i].word = saved;
    }
    d->on_avail = 0;
    CHECK(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, "SL3:", 4) == 0);
    d->on_avail = 1;
    d->scan = 1;
    CHECK(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, "SL2:", 4) == 0);
    d->scan = 0;
    pool.cur[3] = NULL;
    CHECK(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, "SL4:", 4) == 0);
    pool.cur[3] = d;
    pool.bytes_live += 16;
    CHECK(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, "SP1:", 4) == 0);
    pool.bytes_live -= 16;
    pool.empty_n = 1;
    CHECK(rp_slab_pool_check(&pool, why, sizeof why) != 0 && strncmp(why, "SL5:", 4) == 0);
    pool.empty_n = 0;
    s.slabs_held++;
    CHECK(rp_slab_space_check(&s, why, sizeof why) != 0 && strncmp(why, "SS3:", 4) == 0);
    s.slabs_held--;
    s.released_n++;
    CHECK(rp_slab_space_check(&s, why, sizeof why) != 0 && strncmp(why, "SS2:", 4) == 0);
    s.released_n--;
    size_t next = s.chunk_used[0]; /* the slab the pool's chunk hands out next: never used */
    s.desc[next].cls = 1;           /* its descriptor written */
    CHECK(rp_slab_space_check(&s, why, sizeof why) != 0 && strncmp(why, "SS2:", 4) == 0);
    s.desc[next].cls = 0;
    s.bits[next * RP_SLAB_WORDS + 3] = 8; /* its bitmap written */
    CHECK(rp_slab_space_check(&s, why, sizeof why) != 0 && strncmp(why, "SS2:", 4) == 0);
    s.bits[next * RP_SLAB_WORDS + 3] = 0;
    check_all(&s, &pool, "after repair");
    rp_slab_pool_reset(&pool);
    rp_slab_space_fini(&s);
}

int main(void)
{
    test_reciprocals();
    test_fresh_and_recycled();
    test_fresh_untouched();
    test_dirty_retention();
    test_exhaustion();
    test_huge_page_advice();
    test_checker_names_damage();
    for (uint64_t seed = 1; seed <= 6; seed++)
        test_random(seed, 3000);
    TEST_MAIN_END();
}
