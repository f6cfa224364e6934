/* Block header check words (block.h K1) are a keyed pseudorandom function, and the key stays
 * out of every region (issue: release hardening, findings 3 and 4):
 *   - the SipHash code matches the published SipHash-2-4 test vector, and the fixed-length
 *     SipHash-1-3 of the header path equals the general form;
 *   - a live header copied 16 bytes further with prev_size - 16 (which the old multiply mix
 *     accepted in about half of the processes) is refused, for thousands of headers;
 *   - fresh headers of one span do not share check words beyond the birthday bound;
 *   - the key's bytes appear nowhere in a heap's regions (metadata and pages), at any offset.
 * White-box, release flavour. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "src/block.h"
#include "src/heap.h"
#include "src/region.h"
#include "src/header_mac.h"
#include "src/siphash.h"
#include "testing.h"

/* The test vector of the SipHash paper (Appendix A): key 00 01 .. 0f, message 00 01 .. 0e. */
static void test_vectors(void)
{
    rp_sip_key k = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
    unsigned char msg[15];
    for (int i = 0; i < 15; i++)
        msg[i] = (unsigned char)i;
    uint64_t h = rp_siphash(&k, msg, sizeof msg, 2, 4);
    CHECKF(h == 0xa129ca6149be45e5ull, "SipHash-2-4 of the paper's vector: %016llx", (unsigned long long)h);
    /* The header path's fixed-length SipHash-1-3 against the general form. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int same = 1;
    for (int i = 0; i < 10000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t m[2] = {x, x * 0xd6e8feb86659fd93ull};
        k.k0 ^= x >> 7;
        unsigned char bytes[16];
        for (int j = 0; j < 16; j++)
            bytes[j] = (unsigned char)(m[j / 8] >> (8 * (j % 8)));
        same &= rp_siphash13_2w(&k, m[0], m[1]) == rp_siphash(&k, bytes, 16, 1, 3);
    }
    CHECK(same);
}

/* Every live header of h, a callback's worth at a time. */
typedef struct headers {
    rp_block *b[20000];
    int n;
} headers;

static int collect(const rp_block_info *info, void *arg)
{
    headers *hs = arg;
    if (info->state == RP_BLOCK_USED && info->tier == RP_TIER_SPAN && hs->n < 20000)
        hs->b[hs->n++] = rp_block_of_user(info->addr);
    return 0;
}

static headers all;
static int force_siphash; /* the SipHash construction, whatever the CPU has (header_mac.h) */

static rp_heap *filled_heap(int n, size_t size)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    if (force_siphash)
        rp_mac_key_use_siphash(&h->key); /* before the heap writes its first header */
    for (int i = 0; i < n; i++)
        REQUIRE(rp_alloc(h, size ? size : (size_t)(16 + (i * 53) % 2000), 0));
    all.n = 0;
    REQUIRE(rp_heap_walk(h, collect, &all) == 0);
    return h;
}

/* A header replayed 16 bytes further on with prev_size - 16: a forger who read one header
 * and wants a second block to free. Refused every time. */
static void test_shifted_replay(void)
{
    rp_heap *h = filled_heap(5000, 0);
    int accepted = 0;
    for (int i = 0; i < all.n; i++) {
        rp_block *b = all.b[i];
        if (b->prev_size < 16)
            continue;
        rp_block copy = *b;
        copy.prev_size -= 16;
        rp_block *at = (rp_block *)((char *)b + 16);
        rp_block saved = *at;
        *at = copy;
        accepted += rp_block_valid(&h->key, at);
        *at = saved;
    }
    CHECKF(accepted == 0, "%d of %d headers replayed 16 bytes on were accepted", accepted, all.n);
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

/* Check words of fresh headers: 64 in one span share none (the old mix often repeated one),
 * and 20,000 share about as many as random 32-bit words would (0.05 pairs expected). */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int equal_pairs(int n)
{
    static uint32_t w[20000];
    for (int i = 0; i < n; i++)
        w[i] = all.b[i]->check;
    qsort(w, (size_t)n, sizeof w[0], cmp_u32);
    int pairs = 0;
    for (int i = 1; i < n; i++)
        pairs += w[i] == w[i - 1];
    return pairs;
}

static void test_fresh_headers_differ(void)
{
    for (int round = 0; round < 50; round++) {
        rp_heap *h = filled_heap(64, 32);
        CHECKF(equal_pairs(all.n) == 0, "round %d: 64 fresh headers share check words", round);
        rp_heap_destroy(h);
    }
    rp_heap *h = filled_heap(20000, 48);
    int pairs = equal_pairs(all.n);
    CHECKF(pairs <= 2, "%d equal check words among %d headers", pairs, all.n);
    rp_heap_destroy(h);
}

/* The key is in the heap's control block only: no region holds its bytes at any offset
 * (metadata, descriptors, pages, caller memory alike). */
static int region_holds_key(const rp_region *r, const rp_mac_key *k)
{
    const char *lo = (const char *)r->mem_lo;
    size_t len = r->mem_hi - r->mem_lo;
    int found = memmem(lo, len, &k->sip.k0, sizeof k->sip.k0) || memmem(lo, len, &k->sip.k1, sizeof k->sip.k1);
    for (int i = 0; i < 5; i++) /* the AES round keys, by halves */
        found |= memmem(lo, len, k->round_keys[i], 8) || memmem(lo, len, k->round_keys[i] + 8, 8);
    return found;
}

static void test_key_not_in_regions(void)
{
    rp_heap *h = filled_heap(3000, 0);
    static _Alignas(4096) char caller[1 << 20];
    REQUIRE(rp_heap_add_region(h, caller, sizeof caller) == 0);
    for (int i = 0; i < 100; i++)
        REQUIRE(rp_alloc(h, 100000, 4096));
    int regions = 0, holding = 0;
    for (const rp_region *r = h->regions; r; r = r->next) {
        regions++;
        holding += region_holds_key(r, &h->key);
    }
    CHECKF(holding == 0 && regions >= 2, "%d of %d regions hold the heap's key", holding, regions);
    rp_heap_destroy(h);
}

int main(void)
{
    test_vectors();
    for (force_siphash = 0; force_siphash <= 1; force_siphash++) {
        printf("construction: %s\n", force_siphash ? "SipHash-1-3 (forced)" : "the CPU's (AES rounds where it has AES-NI)");
        test_shifted_replay();
        test_fresh_headers_differ();
        test_key_not_in_regions();
    }
    TEST_MAIN_END();
}
