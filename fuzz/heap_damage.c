/* OP_CORRUPT of the heap_ops harness: damage to the heap's own structures that
 * rp_heap_check must find. */
#define _GNU_SOURCE
#include "fuzz/heap_model.h"

#include <stdio.h>
#include <string.h>

/* ---- damage the checker must find ---------------------------------------------------------
 *
 * OP_CORRUPT changes one thing an invariant of the core speaks about (a header field, a
 * free-list link, a bitmap bit, a counter, a page descriptor, a page-tier link, an address-map
 * entry, a region's magic, the spare span), checks that rp_heap_check fails naming an
 * invariant and that walking the damaged heap neither crashes nor hangs, then puts the bytes
 * back and checks that the heap is whole again. Each change is one no invariant can miss. */

/* The head of the lowest non-empty free-index class, or NULL. */
RP_NO_SANITIZE_ADDRESS static rp_block *some_free_block(rp_heap *h)
{
    if (!h->index.fl_bitmap)
        return NULL;
    unsigned fl = rp_ctz(h->index.fl_bitmap);
    return h->index.heads[fl][rp_ctz(h->index.sl_bitmap[fl])];
}

static rp_region *some_region(rp_heap *h, unsigned sel)
{
    size_t n = 0;
    for (rp_region *r = h->regions; r; r = r->next)
        n++;
    if (!n)
        return NULL;
    rp_region *r = h->regions;
    for (size_t i = sel % n; i > 0; i--)
        r = r->next;
    return r;
}

/* The sel-th head descriptor of region r (heads tile the page area, invariant D1). */
static rp_page *some_head(rp_region *r, unsigned sel)
{
    size_t heads = 0;
    for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1)
        heads++;
    size_t want = sel % heads;
    for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1)
        if (want-- == 0)
            return &r->pages[i];
    return NULL;
}

static int count_blocks(const rp_block_info *info, void *arg)
{
    (void)info;
    ++*(size_t *)arg;
    return 0;
}

static int is_invariant_tag(const char *why)
{
    /* "K1: ...", "R3/H3: ...", "I5: ..." */
    const char *c = why;
    while (*c >= 'A' && *c <= 'Z' && c[1] >= '0' && c[1] <= '9') {
        c += 2;
        while (*c >= '0' && *c <= '9')
            c++;
        if (*c != '/')
            break;
        c++;
    }
    return c != why && *c == ':';
}

/* Applies damage `kind`; returns 0 when the heap has nothing of that kind to damage. */
RP_NO_SANITIZE_ADDRESS static int damage(heap_model *m, unsigned kind, unsigned sel, uint8_t x)
{
    rp_heap *h = m->h;
    int k = (int)(m - model.heaps);
    uint32_t flip = (uint32_t)(x | 1) << (8 * (sel & 3));
    switch (kind) {
    case 0: { /* a header field of a live span block, not resealed: K1 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        uint32_t *fields = (uint32_t *)b;
        xor_u32(&fields[(sel >> 2) & 3], flip);
        return 1;
    }
    case 1: { /* a header field of a free block: I3 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        xor_u32(&((uint32_t *)b)[(sel >> 2) & 3], flip);
        return 1;
    }
    case 2: { /* a free-list link: the head's prev, or a next that loops: I4 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        if (x & 1)
            set_ptr(&rp_links(b)->prev, b);
        else
            set_ptr(&rp_links(b)->next, b);
        return 1;
    }
    case 3: /* a bitmap bit: I1 or I2 */
        if (x & 1)
            xor_u32(&h->index.fl_bitmap, 1u << (sel % RP_FL_COUNT));
        else
            xor_u32(&h->index.sl_bitmap[sel % RP_FL_COUNT], 1u << ((sel >> 5) % RP_SL_COUNT));
        return 1;
    case 4: { /* a counter the checker recounts: H1, H2, H3, I5, B4, B5, D4 */
        rp_region *r = some_region(h, sel);
        size_t *counters[] = {&h->blocks_in_use, &h->bytes_in_use, &h->bytes_usable, &h->spans, &h->span_bytes,
                              &h->large_blocks, &h->nregions, &h->region_bytes, &h->index.free_blocks,
                              &h->index.free_bytes, &h->index.class_blocks[(sel >> 4) % RP_FL_COUNT],
                              &h->pages.free_pages, &h->pages.blocks[(sel >> 4) % RP_ORDERS],
                              r ? &r->free_pages : &h->pages.free_pages, &h->pages.resident_pages,
                              &h->pages.held_pages};
        add_size(counters[sel % (sizeof counters / sizeof counters[0])], (size_t)(x | 1));
        return 1;
    }
    case 5: { /* a head page descriptor: its state, its length or its region: D1..D5, B2 */
        rp_region *r = some_region(h, sel);
        rp_page *d = r ? some_head(r, sel >> 4) : NULL;
        if (!d)
            return 0;
        switch (x % 3) {
        case 0:
            save_bytes(&d->state, 1);
            d->state = (uint8_t)((d->state + 1 + (x >> 2) % 5) % 6);
            break;
        case 1:
            save_bytes(&d->npages, sizeof d->npages);
            d->npages += 1 + (x >> 2);
            break;
        default:
            set_ptr(&d->region, (char *)d->region + 64);
            break;
        }
        return 1;
    }
    case 6: { /* the page tier's lists: a wrong prev link or a nonempty bit: B1, B2 */
        if (x & 1) {
            save_bytes(&h->pages.nonempty, sizeof h->pages.nonempty);
            h->pages.nonempty ^= (uint64_t)1 << (sel % RP_ORDERS);
            return 1;
        }
        if (!h->pages.nonempty)
            return 0;
        rp_page *d = h->pages.lists[rp_ctz(h->pages.nonempty)];
        set_ptr(&d->u.free.prev, d);
        return 1;
    }
    case 7: { /* an address-map entry of a region's page: M1 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        uintptr_t page = r->base + (((sel >> 4) % r->npages) << RP_PM_PAGE_SHIFT);
        set_ptr(rp_pagemap_entry_of((void *)page), NULL);
        return 1;
    }
    case 8: { /* a region's magic: R2 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        save_bytes(&r->magic, sizeof r->magic);
        r->magic ^= (uint64_t)(x | 1) << 8;
        return 1;
    }
    case 9: { /* the spare span names a live block: H4 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        set_ptr(&h->spare_span, b);
        return 1;
    }
    case 10: { /* a live block marked free or its PREV_FREE bit flipped, resealed: K4, K5, K6 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        save_bytes(b, sizeof *b);
        rp_block_write(&h->key, b, b->prev_size, b->size, b->bits ^ ((x & 1) ? RP_HDR_FREE : RP_HDR_PREV_FREE));
        return 1;
    }
    case 11: { /* a free block's size, resealed: I3, K2, K3, K6 */
        rp_block *b = some_free_block(h);
        if (!b)
            return 0;
        uint32_t delta = 16u * (1 + x % 4);
        uint32_t size = (x & 0x80) && b->size >= RP_MIN_BLOCK + delta ? b->size - delta : b->size + delta;
        save_bytes(b, sizeof *b);
        rp_block_write(&h->key, b, b->prev_size, size, b->bits);
        return 1;
    }
    case 12: { /* a live block's boundary tag, resealed: K3 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        save_bytes(b, sizeof *b);
        rp_block_write(&h->key, b, b->prev_size + 16u * (1 + x % 4), b->size, b->bits);
        return 1;
    }
    case 13: { /* a span's sentinel: its check word, or a size resealed: K1, K2 */
        rp_block *b = live_span_header(k, sel);
        if (!b)
            return 0;
        rp_region *r = rp_pagemap_lookup(b);
        rp_page *head = rp_span_head_of(r, b);
        rp_block *sentinel = (rp_block *)(rp_page_addr(r, head) + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER);
        save_bytes(sentinel, sizeof *sentinel);
        if (x & 1)
            sentinel->check ^= flip;
        else
            rp_block_write(&h->key, sentinel, sentinel->prev_size, RP_MIN_BLOCK, sentinel->bits);
        return 1;
    }
    case 14: { /* a region's page area moved: R1 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        save_bytes(&r->base, sizeof r->base);
        r->base += (uintptr_t)4096 * r->npages;
        return 1;
    }
    default: { /* a large block's usable size: D2 */
        rp_region *r = some_region(h, sel);
        if (!r)
            return 0;
        for (size_t i = 0; i < r->npages; i += r->pages[i].npages ? r->pages[i].npages : 1) {
            rp_page *d = &r->pages[i];
            if (d->state == RP_PAGE_LARGE) {
                save_bytes(&d->u.large.usable, sizeof d->u.large.usable);
                d->u.large.usable += (x & 1) ? 4096 : (uint64_t)-4096;
                return 1;
            }
        }
        return 0;
    }
    }
}

void do_corrupt(uint8_t kind, uint16_t sel, uint8_t x)
{
    heap_model *m = &model.heaps[(sel >> 15) && model.heaps[1].h ? 1 : 0];
    kind &= 15;
    if (!damage(m, kind, sel, x))
        return;
    char why[256];
    int bad = rp_heap_check(m->h, why, sizeof why);
    size_t blocks = 0;
    int walked = rp_heap_walk(m->h, count_blocks, &blocks); /* must return, whatever it finds */
    restore_bytes();
    TRACE("  damage %u: check says \"%s\", walk %d\n", kind, why, walked);
    EXPECT(bad, "rp_heap_check missed damage of kind %u (sel %u, x %u)", kind, sel, x);
    EXPECT(DEBUG_FLAVOUR || is_invariant_tag(why), "rp_heap_check's message names no invariant: \"%s\"", why);
    EXPECT(walked == 0 || walked == -1, "rp_heap_walk on a damaged heap returned %d", walked);
    if (rp_heap_check(m->h, why, sizeof why) != 0)
        expect_fail("the heap is not whole after the damage was undone: %s", why);
}

