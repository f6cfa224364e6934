/* Unit test of the buddy page tier (src/page_tier.h) over a caller-memory region: natural
 * alignment, splitting, runs that give their tail back, coalescing back to the initial state,
 * and its counters — against a model of which pages are taken. */
#include <stdint.h>

#include "src/bits.h"
#include "src/page_tier.h"
#include "testing.h"

#define MEM_BYTES (9u << 20)
static _Alignas(4096) unsigned char mem[MEM_BYTES];

typedef struct taken {
    rp_page *d;
    size_t npages;
} taken;

static size_t snapshot(const rp_page_tier *t, size_t *blocks)
{
    for (int k = 0; k < RP_ORDERS; k++)
        blocks[k] = t->blocks[k];
    return t->free_pages;
}

int main(void)
{
    rp_region *r = rp_region_for_caller(mem + 100, MEM_BYTES - 100);
    REQUIRE(r);
    CHECK(r->base % 4096 == 0);
    CHECK(r->base + (r->npages << 12) <= (uintptr_t)mem + MEM_BYTES);
    CHECK(r->npages > 2000);
    rp_page_tier t;
    memset(&t, 0, sizeof t);
    rp_page_tier_add_region(&t, r);
    CHECK(t.free_pages == r->npages);
    size_t initial_blocks[RP_ORDERS];
    size_t initial_pages = snapshot(&t, initial_blocks);

    /* Every order that fits: the block is naturally aligned in absolute addresses. */
    for (unsigned k = 0; k < 12; k++) {
        rp_page *d = rp_page_tier_take(&t, k);
        if (!d)
            continue;
        uintptr_t addr = rp_page_addr(r, d);
        CHECKF(addr % (4096u << k) == 0, "order %u block at %p", k, (void *)addr);
        CHECK(d->npages == (1u << k));
        d->state = RP_PAGE_NONE;
        rp_page_tier_give(&t, r, d, (size_t)1 << k);
    }
    size_t blocks[RP_ORDERS];
    CHECK(snapshot(&t, blocks) == initial_pages);
    CHECK(memcmp(blocks, initial_blocks, sizeof blocks) == 0);

    /* Random runs with alignment against a page-ownership model. */
    static unsigned char owner[1u << 12];
    static taken live[512];
    size_t nlive = 0;
    test_rng rng = {99};
    for (int step = 0; step < 20000; step++) {
        if (nlive && (nlive == 512 || rng_below(&rng, 2))) {
            size_t i = rng_below(&rng, nlive);
            taken x = live[i];
            live[i] = live[--nlive];
            size_t first = rp_page_index(r, x.d);
            for (size_t p = 0; p < x.npages; p++)
                owner[first + p] = 0;
            x.d->state = RP_PAGE_NONE;
            rp_page_tier_give(&t, r, x.d, x.npages);
        } else {
            size_t n = 1 + rng_below(&rng, rng_below(&rng, 2) ? 8 : 70);
            unsigned align = (unsigned)rng_below(&rng, 5);
            size_t before = t.free_pages;
            rp_page *d = rp_page_tier_take_run(&t, n, align);
            if (!d) {
                CHECK(t.free_pages == before);
                continue;
            }
            d->state = RP_PAGE_LARGE;
            CHECK(t.free_pages == before - n); /* the tail went straight back */
            uintptr_t addr = rp_page_addr(r, d);
            CHECKF((addr >> 12) % (1u << align) == 0, "run of %zu aligned to %u pages at %p", n, 1u << align,
                   (void *)addr);
            size_t first = rp_page_index(r, d);
            for (size_t p = 0; p < n; p++) {
                CHECKF(!owner[first + p], "page %zu handed out twice", first + p);
                owner[first + p] = 1;
            }
            live[nlive++] = (taken){d, n};
        }
        /* B1/B4: bits and counts agree with the lists. */
        size_t pages = 0;
        for (unsigned k = 0; k < RP_ORDERS; k++) {
            size_t n = 0;
            for (rp_page *d = t.lists[k]; d; d = d->u.free.next) {
                CHECK(d->state == RP_PAGE_FREE && d->order == k);
                n++;
            }
            CHECK(n == t.blocks[k]);
            CHECK(((t.nonempty >> k) & 1) == (n != 0));
            pages += n << k;
        }
        CHECK(pages == t.free_pages && t.free_pages == r->free_pages);
        if (test_failures)
            break;
    }
    while (nlive) {
        taken x = live[--nlive];
        x.d->state = RP_PAGE_NONE;
        rp_page_tier_give(&t, r, x.d, x.npages);
    }
    /* Everything coalesced back into the initial decomposition. */
    CHECK(snapshot(&t, blocks) == initial_pages);
    CHECK(memcmp(blocks, initial_blocks, sizeof blocks) == 0);
    CHECK(rp_page_tier_largest(&t) == (size_t)4096 << rp_fls(t.nonempty));

    /* Assembled runs: three free pages at absolute page numbers 4k+1 .. 4k+3 are no aligned
     * block of order 2, but a run of three can be assembled from them when nothing else is
     * free. */
    {
        static rp_page *all[1u << 12];
        size_t n = 0;
        rp_page *d;
        while ((d = rp_page_tier_take(&t, 0)) != NULL)
            all[n++] = d;
        CHECK(n == r->npages && t.free_pages == 0);
        size_t i = 8;
        while (((r->base >> 12) + i) % 4 != 1)
            i++;
        for (size_t k = 0; k < 3; k++)
            rp_page_tier_give(&t, r, &r->pages[i + k], 1);
        CHECK(t.free_pages == 3);
        CHECK(rp_page_tier_take_run(&t, 3, 0) == NULL);
        CHECK(rp_page_tier_take_run_assembled(&t, 4, 0) == NULL); /* only three are free */
        rp_page *run = rp_page_tier_take_run_assembled(&t, 3, 0);
        CHECK(run == &r->pages[i] && run && run->npages == 3);
        CHECK(t.free_pages == 0 && t.nonempty == 0);
        /* An overhanging last block gives its excess back. */
        rp_page_tier_give(&t, r, &r->pages[i], 3);
        rp_page *two = rp_page_tier_take_run_assembled(&t, 2, 0);
        CHECK(two == &r->pages[i] && t.free_pages == 1 && t.blocks[0] == 1);
        rp_page_tier_give(&t, r, &r->pages[i], 2);
        for (size_t k = 0; k < n; k++)
            if (all[k] < &r->pages[i] || all[k] > &r->pages[i + 2])
                rp_page_tier_give(&t, r, all[k], 1);
        CHECK(snapshot(&t, blocks) == initial_pages);
        CHECK(memcmp(blocks, initial_blocks, sizeof blocks) == 0);
    }

    /* Claiming the pages after a block (in-place growth): only when all of them are free. */
    {
        rp_page *d = rp_page_tier_take_run(&t, 5, 0);
        REQUIRE(d);
        d->state = RP_PAGE_LARGE;
        size_t first = rp_page_index(r, d);
        size_t before = t.free_pages;
        /* Where the run lands depends on the region's alignment (ASLR): claim what fits. */
        size_t grow = r->npages - first - 5 < 20 ? r->npages - first - 5 : 20;
        REQUIRE(grow > 0);
        CHECK(rp_page_tier_claim(&t, r, first + 5, grow) == 0);
        CHECK(t.free_pages == before - grow);
        CHECK(rp_page_tier_claim(&t, r, first + 5 + grow, r->npages - first - 5 - grow + 1) == -1);
        rp_page *e = rp_page_tier_take_run(&t, 1, 0); /* something else, somewhere */
        REQUIRE(e);
        e->state = RP_PAGE_LARGE;
        CHECK(rp_page_tier_claim(&t, r, first + 2, 3) == -1);     /* not free: ours */
        CHECK(rp_page_tier_claim(&t, r, r->npages - 1, 2) == -1); /* past the region */
        if (rp_page_index(r, e) > first + 5 + grow)
            CHECK(rp_page_tier_claim(&t, r, first + 5 + grow, rp_page_index(r, e) - first - 5 - grow + 1) == -1);
        CHECK(t.free_pages == before - grow - 1);
        e->state = RP_PAGE_NONE;
        rp_page_tier_give(&t, r, e, 1);
        d->state = RP_PAGE_NONE;
        rp_page_tier_give(&t, r, d, 5 + grow);
        CHECK(snapshot(&t, blocks) == initial_pages);
        CHECK(memcmp(blocks, initial_blocks, sizeof blocks) == 0);
    }

    /* Exhaustion: nothing left of an order fails cleanly. */
    CHECK(rp_page_tier_take(&t, 30) == NULL);
    CHECK(rp_page_tier_take_run(&t, r->npages + 1, 0) == NULL);
    rp_page_tier_remove_region(&t, r);
    CHECK(t.free_pages == 0 && t.nonempty == 0);
    TEST_MAIN_END();
}
