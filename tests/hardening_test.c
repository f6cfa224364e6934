/* The release drop-in against an attacker who can write freed memory, overflow a block and read
 * what the heap hands out, under the default options (issue: release hardening, findings 6 and
 * 7, and its hardening suite):
 *   - a double free after the freed block's first 16 bytes were overwritten is still reported
 *     (the cache state is a mark in metadata apart, cache_mark.h, not a word in the block),
 *     and the block is never handed out twice; for slab and span blocks;
 *   - a free of a slab block a cache took but never handed out (the next one of a run) is
 *     refused;
 *   - free() writes nothing into the freed block (no key ^ address word to leak);
 *   - the arenas' key is readable from no page of theirs (regions, slab chunks);
 *   - a blind forger who plants headers with guessed check words in .bss gets every guess
 *     reported and none accepted.
 * Linked statically with the drop-in, white-box. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/block.h"
#include "src/heap.h"
#include "src/malloc/arena.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/thread_cache.h"
#include "src/region.h"
#include "report_count.h"
#include "testing.h"

#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0
#endif

static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;


/* Examines the thread's collected frees (slab frees may wait in its batch, T5). */
static void settle(void)
{
    rp_malloc_stats_t st;
    rp_malloc_stats(&st);
}

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

/* Frees p, overwrites its first 16 bytes (all a write after free of 8 or 16 bytes can reach of
 * the block's own memory), frees it again: reported; then two allocations of its size never
 * return p twice. */
static void double_free_after_write(size_t size, const char *what)
{
    char *p = do_malloc(size);
    REQUIRE(p);
    do_free(p);
    memset(p, 0, 16);
    memset(reports, 0, sizeof reports);
    do_free(p);
    settle();
    CHECKF(reports[RP_ERR_DOUBLE_FREE] == 1 && last_address == p, "%s: a double free after a write after free: %d reports",
           what, reports[RP_ERR_DOUBLE_FREE]);
    char *a = do_malloc(size), *b = do_malloc(size);
    CHECKF(a != b, "%s: the block handed out twice", what);
    do_free(a);
    do_free(b);
    check_malloc(what);
}

static void test_double_free_after_write(void)
{
    double_free_after_write(100, "slab block");
    double_free_after_write(2000, "span block");
    double_free_after_write(3 * 4096, "page block");
}

/* The next block of a run (T6): live to its pool, held by the cache, never handed out. */
static void test_never_handed_out(void)
{
    rp_tcache *tc = rp_tc_self;
    REQUIRE(tc);
    if (!tc->slab_len) {
        printf("slabs off: run case skipped\n");
        return;
    }
    unsigned c = rp_slab_class_of(112);
    static void *keep[600];
    int k = 0;
    while ((tc->bins[c].count != 0 || tc->runs[c].left < 2) && k < 600)
        REQUIRE(keep[k++] = do_malloc(100));
    REQUIRE(tc->runs[c].left >= 2);
    char *next = tc->runs[c].next;
    memset(reports, 0, sizeof reports);
    do_free(next);
    settle();
    CHECKF(reports[RP_ERR_DOUBLE_FREE] + reports[RP_ERR_INVALID_FREE] == 1 && last_address == next,
           "a free of a block never handed out: %d reports", reports[RP_ERR_DOUBLE_FREE] + reports[RP_ERR_INVALID_FREE]);
    CHECK(do_malloc(100) == next); /* handed out once, normally */
    do_free(next);
    for (int i = 0; i < k; i++)
        do_free(keep[i]);
    check_malloc("after the run case");
}

/* free() leaves the block's bytes as the program wrote them: nothing of rampart's (no key,
 * no address, no list pointer) is stored in freed memory. */
static void test_free_writes_nothing(void)
{
    size_t sizes[] = {16, 100, 1000, 2000, 20000};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = do_malloc(sizes[i]);
        REQUIRE(p);
        memset(p, 0xab, sizes[i]);
        do_free(p);
        settle();
        size_t changed = 0;
        for (size_t j = 0; j < sizes[i]; j++)
            changed += p[j] != 0xab;
        CHECKF(changed == 0, "free() wrote %zu bytes into a freed %zu-byte block", changed, sizes[i]);
        REQUIRE(do_malloc(sizes[i]) == p); /* LIFO: back to the program */
        do_free(p);
    }
}

/* No page of the arenas' memory holds 8 bytes of their key (the SipHash key or any half of an
 * AES round key): every arena region, metadata included, and every slab chunk handed out. */
static int holds(const void *lo, size_t len, const rp_mac_key *k)
{
    int found = memmem(lo, len, &k->sip.k0, 8) || memmem(lo, len, &k->sip.k1, 8);
    for (int i = 0; i < 5; i++)
        found |= memmem(lo, len, k->round_keys[i], 8) || memmem(lo, len, k->round_keys[i] + 8, 8);
    return found;
}

static void test_key_not_in_arena_memory(void)
{
    static void *keep[3000];
    for (int i = 0; i < 3000; i++)
        keep[i] = do_malloc((size_t)(16 + (i * 97) % 5000));
    const rp_mac_key *k = rp_arena_key();
    int regions = 0, holding = 0;
    for (unsigned a = 0; a < RP_MAX_ARENAS; a++) {
        rp_heap *h = rp_arena_get(a);
        for (const rp_region *r = h ? h->regions : NULL; r; r = r->next) {
            regions++;
            holding += holds((const void *)r->mem_lo, r->mem_hi - r->mem_lo, k);
        }
    }
    size_t chunks = rp_ms_space.next_chunk, chunk_holding = 0;
    for (size_t c = 0; c < chunks; c++)
        chunk_holding += holds((const void *)(rp_ms_space.base + c * RP_SLAB_CHUNK_BYTES), RP_SLAB_CHUNK_BYTES, k);
    CHECKF(holding == 0 && regions >= 1, "%d of %d arena regions hold the key", holding, regions);
    CHECKF(chunk_holding == 0, "%zu of %zu slab chunks hold the key", chunk_holding, chunks);
    for (int i = 0; i < 3000; i++)
        do_free(keep[i]);
}

/* A blind forger: a header with a guessed check word in front of a .bss pointer, freed, many
 * times. Each guess is reported (the address map refuses .bss before the header is read), and
 * malloc never returns the forged address. */
static _Alignas(64) unsigned char bss_area[256];

static void test_blind_forgery(void)
{
    const int attempts = 200000;
    void *fake = bss_area + 64 + RP_USER_OFFSET;
    rp_block *b = (rp_block *)(void *)(bss_area + 64);
    uint64_t x = 0x2545f4914f6cdd1dull;
    memset(reports, 0, sizeof reports);
    int accepted = 0;
    for (int i = 0; i < attempts; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b->prev_size = 0;
        b->size = 2048;
        b->bits = 0;
        b->check = (uint32_t)x;
        do_free(fake);
        if ((i & 1023) == 0) {
            void *got = do_malloc(2048 - RP_USER_OFFSET);
            accepted += got == fake;
            do_free(got);
        }
    }
    CHECKF(accepted == 0, "malloc returned the forged block %d times", accepted);
    CHECKF(RP_MALLOC_COEXISTS || reports[RP_ERR_INVALID_FREE] == attempts, "%d of %d forged frees reported",
           reports[RP_ERR_INVALID_FREE], attempts);
    check_malloc("after the forgeries");
}

void free_sized(void *p, size_t size);
void _ZdlPvm(void *p, size_t size);
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);

/* A sized free or delete whose size is bigger than the block (delete through the wrong type):
 * reported, the block left alone; the right size, or a smaller one, frees. */
static void test_sized_free(void)
{
    static const size_t sizes[] = {1, 100, 2000, 3 * 4096};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char *p = do_malloc(n);
        size_t usable = malloc_usable_size(p);
        memset(reports, 0, sizeof reports);
        _ZdlPvm(p, usable + 1);
        free_sized(p, usable + 64);
        _ZdaPvmSt11align_val_t(p, 2 * usable, 16);
        CHECKF(reports[RP_ERR_INVALID_FREE] == 3 && last_address == p, "%zu bytes freed as bigger: %d reports", n,
               reports[RP_ERR_INVALID_FREE]);
        _ZdlPvm(p, n); /* still live: the right size frees it */
        char *q = do_malloc(n);
        free_sized(q, 1);
        CHECKF(reports[RP_ERR_INVALID_FREE] == 3 && reports[RP_ERR_DOUBLE_FREE] == 0, "%zu bytes: right sizes reported",
               n);
    }
    check_malloc("after the sized frees");
}

int main(void)
{
    void *old_arg;
    rp_set_report_fn(count_report, NULL, &old_arg);
    do_free(do_malloc(1));
    test_double_free_after_write();
    test_never_handed_out();
    test_free_writes_nothing();
    test_key_not_in_arena_memory();
    test_blind_forgery();
    test_sized_free();
    TEST_MAIN_END();
}
