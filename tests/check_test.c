/* rp_heap_check against planted corruption: for each invariant family of each structure
 * (K block headers, I free index, B and D page tier and descriptors, R regions, M address
 * map, H heap counters), one corruption is planted in a fresh heap and the checker must fail
 * naming that invariant. A clean heap passes. White-box: uses the internal headers. */
#include <stdint.h>
#include <stdio.h>

#include "rampart.h"
#include "src/heap.h"
#include "src/pagemap.h"
#include "src/span.h"
#include "testing.h"

static void expect(rp_heap *h, const char *tag, const char *what)
{
    char why[256];
    int rc = rp_heap_check(h, why, sizeof why);
    CHECKF(rc != 0, "%s: checker passed", what);
    CHECKF(strncmp(why, tag, strlen(tag)) == 0, "%s: expected %s, checker said: %s", what, tag, why);
}

static rp_block *hdr(void *user) { return rp_block_of_user(user); }

/* A heap with used and free span blocks and large blocks: a, [b free], c, d; big1, big2. */
typedef struct fixture {
    rp_heap *h;
    void *a, *b, *c, *d, *big1, *big2;
} fixture;

static fixture make(void)
{
    fixture f;
    f.h = rp_heap_create(NULL);
    REQUIRE(f.h);
    f.a = rp_alloc(f.h, 100, 0);
    f.b = rp_alloc(f.h, 200, 0);
    f.c = rp_alloc(f.h, 300, 0);
    f.d = rp_alloc(f.h, 400, 0);
    f.big1 = rp_alloc(f.h, 200000, 0);
    f.big2 = rp_alloc(f.h, 300000, 0);
    REQUIRE(f.a && f.b && f.c && f.d && f.big1 && f.big2);
    rp_free(f.b);
    CHECK_HEAP(f.h);
    return f;
}

/* Two free blocks listed in one class, head then tail, with the head's next link set to
 * `next`: the checker must fail with `tag`, naming the head, whose links hold the damage. */
static void expect_bad_next_link(rp_block *next, const char *tag, const char *what)
{
    fixture f = make();
    /* e takes b's place; e2 and g come from the rest of the span; freeing e then e2 lists e2,
     * e in their class, neither next to another free block. */
    void *e = rp_alloc(f.h, 200, 0), *e2 = rp_alloc(f.h, 200, 0), *g = rp_alloc(f.h, 16, 0);
    REQUIRE(e && e2 && g);
    rp_free(e);
    rp_free(e2);
    CHECK_HEAP(f.h);
    REQUIRE(rp_links(hdr(e2))->next == hdr(e));
    rp_links(hdr(e2))->next = next;
    char why[256], at[32];
    CHECK(rp_heap_check(f.h, why, sizeof why) != 0);
    snprintf(at, sizeof at, "%p", (void *)hdr(e2));
    CHECKF(strncmp(why, tag, strlen(tag)) == 0 && strstr(why, at), "%s of %s: %s", what, at, why);
    rp_heap_destroy(f.h);
}

static rp_page *large_head(rp_heap *h, void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    (void)h;
    return rp_page_of(r, p);
}

int main(void)
{
    fixture f;
    const rp_mac_key *s;

    f = make(); /* K1: a header byte flipped */
    hdr(f.a)->check ^= 0x10;
    expect(f.h, "K1", "flipped check word");
    rp_heap_destroy(f.h);

    /* K1 for every single bit of the fields the check word covers (prev_size, size, bits:
     * the check word takes prev_size and size as one 8-byte word, and bits apart), each
     * flipped in turn and put back. A miss has a 2^-32 chance per flip. */
    f = make();
    for (unsigned bit = 0; bit < 96; bit++) {
        uint32_t *field = bit < 32 ? &hdr(f.c)->prev_size : bit < 64 ? &hdr(f.c)->size : &hdr(f.c)->bits;
        *field ^= 1u << (bit % 32);
        char what[48];
        snprintf(what, sizeof what, "header bit %u flipped", bit);
        expect(f.h, "K1", what);
        *field ^= 1u << (bit % 32);
    }
    CHECK_HEAP(f.h);
    rp_heap_destroy(f.h);

    f = make(); /* K3: boundary tag wrong (header resealed, so K1 holds) */
    s = &f.h->key;
    hdr(f.d)->prev_size += 16;
    rp_block_reseal(s, hdr(f.d));
    expect(f.h, "K3", "boundary tag");
    rp_heap_destroy(f.h);

    f = make(); /* K4: PREV_FREE disagrees with the previous block */
    s = &f.h->key;
    hdr(f.d)->bits |= RP_HDR_PREV_FREE;
    rp_block_reseal(s, hdr(f.d));
    expect(f.h, "K4", "prev-free bit");
    rp_heap_destroy(f.h);

    f = make(); /* K5: two adjacent free blocks (a marked free and filed, next's tag fixed) */
    s = &f.h->key;
    hdr(f.a)->bits |= RP_HDR_FREE;
    rp_block_reseal(s, hdr(f.a));
    rp_free_index_insert(&f.h->index, hdr(f.a));
    rp_block *fb = rp_block_next(hdr(f.a));
    fb->bits |= RP_HDR_PREV_FREE;
    rp_block_reseal(s, fb);
    expect(f.h, "K5", "adjacent free blocks");
    rp_heap_destroy(f.h);

    f = make(); /* K6: a free block missing from the index */
    CHECK(rp_free_index_remove(&f.h->index, hdr(f.b)) == 0);
    expect(f.h, "K6", "free block not filed");
    rp_heap_destroy(f.h);

    f = make(); /* K2: a block size running past the sentinel */
    s = &f.h->key;
    hdr(f.d)->size = 1u << 30;
    rp_block_reseal(s, hdr(f.d));
    expect(f.h, "K2", "size past the span");
    rp_heap_destroy(f.h);

    f = make(); /* I1: a bitmap bit for an empty class */
    f.h->index.sl_bitmap[0] |= 1u << 3;
    f.h->index.fl_bitmap |= 1;
    expect(f.h, "I1", "stray second-level bit");
    rp_heap_destroy(f.h);

    f = make(); /* I2: first-level bit without second-level bits */
    f.h->index.fl_bitmap |= 1u << 20;
    expect(f.h, "I2", "stray first-level bit");
    rp_heap_destroy(f.h);

    f = make(); /* I3: a used block linked into a list */
    {
        unsigned fl, sl;
        rp_class_of(hdr(f.c)->size, &fl, &sl);
        rp_links(hdr(f.c))->next = f.h->index.heads[fl][sl];
        rp_links(hdr(f.c))->prev = NULL;
        f.h->index.heads[fl][sl] = hdr(f.c);
        f.h->index.sl_bitmap[fl] |= 1u << sl;
        f.h->index.fl_bitmap |= 1u << fl;
    }
    expect(f.h, "I3", "used block on a list");
    rp_heap_destroy(f.h);

    f = make(); /* I4: a broken prev link (a write after free into the links) */
    {
        void *e = rp_alloc(f.h, 200, 0), *g = rp_alloc(f.h, 16, 0);
        rp_free(e); /* same class as b: list is e, b */
        (void)g;
        rp_links(hdr(f.b))->prev = hdr(f.a);
    }
    expect(f.h, "I4", "prev link");
    rp_heap_destroy(f.h);

    /* A cleared next link (an underflow writing zeros over a free neighbour's links) cuts its
     * list short: only the class count notices (I5), and the message names the block where
     * the list now ends, whose links hold the damage. */
    expect_bad_next_link(NULL, "I5", "cleared next link");
    /* A wild next link (I3) names the block it was read from as well as where it points. */
    expect_bad_next_link((rp_block *)(uintptr_t)0x0a0a0a0a0a0a0a0aull, "I3", "wild next link");

    f = make(); /* I5: counters disagree with the lists */
    f.h->index.free_bytes += 16;
    expect(f.h, "I5", "index counter");
    rp_heap_destroy(f.h);

    f = make(); /* B1: order bit for an empty list */
    f.h->pages.nonempty |= (uint64_t)1 << 33;
    expect(f.h, "B1", "stray order bit");
    rp_heap_destroy(f.h);

    f = make(); /* B2: a listed block whose descriptor says another order */
    {
        unsigned k = rp_ctz(f.h->pages.nonempty);
        f.h->pages.lists[k]->order = (uint8_t)(k + 1);
    }
    expect(f.h, "B2", "listed descriptor order");
    rp_heap_destroy(f.h);

    f = make(); /* B5: the resident count disagrees with the bitmaps */
    f.h->pages.resident_pages += 1;
    expect(f.h, "B5", "resident page counter");
    rp_heap_destroy(f.h);

    f = make(); /* B5: a page of a live large block not marked resident */
    {
        rp_region *r = rp_pagemap_lookup(f.big1);
        REQUIRE(r && r->resident);
        size_t page = rp_page_index(r, rp_page_of(r, f.big1));
        r->resident[page >> 6] &= ~((uint64_t)1 << (page & 63));
        f.h->pages.resident_pages--;
    }
    expect(f.h, "B5", "live page not resident");
    rp_heap_destroy(f.h);

    f = make(); /* B3: two free buddies left unmerged */
    {
        rp_page *d = rp_page_tier_take(&f.h->pages, 1);
        REQUIRE(d);
        d[1].region = d->region;
        rp_page_tier_link(&f.h->pages, d, 0);
        rp_page_tier_link(&f.h->pages, d + 1, 0);
    }
    expect(f.h, "B3", "unmerged buddies");
    rp_heap_destroy(f.h);

    f = make(); /* B4: free page counter */
    f.h->pages.free_pages += 1;
    expect(f.h, "B4", "free page counter");
    rp_heap_destroy(f.h);

    f = make(); /* D1: a head descriptor with an impossible state */
    large_head(f.h, f.big1)->state = 9;
    expect(f.h, "D1", "descriptor state");
    rp_heap_destroy(f.h);

    f = make(); /* D2: a page inside a large block marked as a span tail */
    large_head(f.h, f.big2)[3].state = RP_PAGE_SPAN_TAIL;
    expect(f.h, "D2", "interior descriptor");
    rp_heap_destroy(f.h);

    f = make(); /* D4: region free-page counter */
    f.h->regions->free_pages += 2;
    expect(f.h, "D4", "region free pages");
    rp_heap_destroy(f.h);

    f = make(); /* D5: a head naming another region */
    large_head(f.h, f.big1)->region = (rp_region *)f.h;
    expect(f.h, "D5", "descriptor region");
    large_head(f.h, f.big1)->region = f.h->regions;
    rp_heap_destroy(f.h);

    f = make(); /* R2: region magic */
    f.h->regions->magic ^= 1;
    expect(f.h, "R2", "region magic");
    rp_heap_destroy(f.h);

    f = make(); /* M1: the address map lost a region */
    rp_pagemap_unregister(f.h->regions);
    expect(f.h, "M1", "address map");
    rp_heap_destroy(f.h);

    f = make(); /* H1: live-block counter */
    f.h->blocks_in_use++;
    expect(f.h, "H1", "live block counter");
    rp_heap_destroy(f.h);

    f = make(); /* H2: span counter */
    f.h->spans++;
    expect(f.h, "H2", "span counter");
    rp_heap_destroy(f.h);

    f = make(); /* H3: region counter */
    f.h->region_bytes += 4096;
    expect(f.h, "H3", "region counter");
    rp_heap_destroy(f.h);

    f = make(); /* H4: the spare span is a used block */
    f.h->spare_span = hdr(f.c);
    expect(f.h, "H4", "spare span");
    rp_heap_destroy(f.h);

    f = make(); /* and a clean heap passes */
    CHECK_HEAP(f.h);
    rp_heap_destroy(f.h);
    TEST_MAIN_END();
}
