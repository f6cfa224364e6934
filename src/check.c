/* rp_heap_check: verifies every invariant written at the definition of each structure —
 * regions (R*, region.h), page descriptors (D*), the address map (M*, pagemap.h), the page
 * tier (B*, page_tier.h), span blocks (K*, block.h), the free index (I*, free_index.h) and
 * the heap's counters (H*, heap.h) — plus, in the debug flavour, the runtime's own checks.
 * Every message starts with the invariant's name. Runs under the heap lock; uses no heap
 * memory (a scratch table comes from the OS, with a slower fallback when that fails). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "heap.h"
#include "hooks.h"
#include "large.h"
#include "mapped_block.h"
#include "os.h"
#include "pagemap.h"
#include "resident.h"
#include "walk.h"

typedef struct checker {
    rp_heap *h;
    char *why;
    size_t len;
    int failed;
    /* Free span blocks found on the index (open addressing, NULL = empty slot). */
    rp_block **table;
    size_t table_slots;
    size_t table_bytes;
    /* Totals found by walking. */
    size_t used_blocks, used_bytes, usable_bytes, large_blocks, spans, span_bytes;
    size_t free_span_blocks, free_span_bytes;
    size_t free_pages;
    size_t resident_pages, held_pages; /* B5, over OS regions */
} checker;

__attribute__((format(printf, 2, 3))) static int fail(checker *c, const char *fmt, ...)
{
    if (!c->failed && c->why && c->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->why, c->len, fmt, ap);
        va_end(ap);
    }
    c->failed = 1;
    return 1;
}

static inline size_t slot_of(const checker *c, const void *p)
{
    return (size_t)(rp_mix64((uint64_t)(uintptr_t)p) & (c->table_slots - 1));
}

static void table_put(checker *c, rp_block *b)
{
    if (!c->table)
        return;
    size_t i = slot_of(c, b);
    while (c->table[i])
        i = (i + 1) & (c->table_slots - 1);
    c->table[i] = b;
}

/* 1 if b was listed on the index (and removes it, so a second match fails). */
RP_NO_SANITIZE_ADDRESS
static int table_take(checker *c, rp_block *b)
{
    if (!c->table) {
        /* Fallback without scratch memory: search b's own class list. */
        unsigned fl, sl;
        rp_class_of(b->size, &fl, &sl);
        size_t steps = 0;
        for (rp_block *x = c->h->index.heads[fl][sl]; x && steps <= c->h->index.free_blocks;
             x = rp_links(x)->next, steps++)
            if (x == b)
                return 1;
        return 0;
    }
    size_t i = slot_of(c, b);
    while (c->table[i]) {
        if (c->table[i] == b) {
            c->table[i] = (rp_block *)1; /* tombstone: keeps probe chains intact */
            return 1;
        }
        i = (i + 1) & (c->table_slots - 1);
    }
    return 0;
}

/* A pointer that claims to be a free span block of this heap: is it inside one of its spans? */
RP_NO_SANITIZE_ADDRESS
static int in_own_span(rp_heap *h, const void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || r->heap != h || (uintptr_t)p < r->base)
        return 0;
    rp_page *d = rp_page_of(r, p);
    return d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL;
}

/* I5 for one first-level class. A list cut short by a cleared next link loses the blocks
 * after it, and only the count notices: the message names the last block of each of the
 * class's lists, one of which holds the cleared link. */
static int fail_class_count(checker *c, unsigned fl, size_t listed, rp_block *const tails[RP_SL_COUNT])
{
    char ends[160] = "";
    size_t used = 0;
    for (unsigned sl = 0; sl < RP_SL_COUNT && used < sizeof ends; sl++)
        if (tails[sl]) {
            int n = snprintf(ends + used, sizeof ends - used, "%s(%u,%u) %p", used ? ", " : "", fl, sl,
                             (void *)tails[sl]);
            used += n > 0 ? (size_t)n : 0;
        }
    return fail(c, "I5: first-level class %u counts %zu blocks, lists hold %zu; lists end at %s", fl,
                c->h->index.class_blocks[fl], listed, used ? ends : "(none)");
}

/* I1..I6 */
RP_NO_SANITIZE_ADDRESS
static int check_index(checker *c)
{
    rp_heap *h = c->h;
    rp_free_index *ix = &h->index;
    size_t blocks = 0, bytes = 0;
    for (unsigned fl = 0; fl < RP_FL_COUNT; fl++) {
        int fl_bit = (ix->fl_bitmap >> fl) & 1;
        if (fl_bit != (ix->sl_bitmap[fl] != 0))
            return fail(c, "I2: first-level bit %u is %d but the second-level bitmap is 0x%x", fl, fl_bit,
                        ix->sl_bitmap[fl]);
        size_t class_blocks = 0;
        rp_block *tails[RP_SL_COUNT];
        for (unsigned sl = 0; sl < RP_SL_COUNT; sl++) {
            rp_block *head = ix->heads[fl][sl];
            int sl_bit = (ix->sl_bitmap[fl] >> sl) & 1;
            if (sl_bit != (head != NULL))
                return fail(c, "I1: bitmap bit (%u,%u) is %d but the list is %s", fl, sl, sl_bit,
                            head ? "non-empty" : "empty");
            rp_block *prev = NULL;
            for (rp_block *b = head; b; prev = b, b = rp_links(b)->next) {
                if (blocks++ > ix->free_blocks)
                    return fail(c, "I5: lists hold more than the %zu free blocks counted (cycle?)", ix->free_blocks);
                /* A bad link names the block it was read from too: that block's links are the
                 * damaged bytes (NULL for the head, read from the index). */
                if (!in_own_span(h, b))
                    return fail(c, "I3: list (%u,%u) links from %p to %p, outside this heap's spans", fl, sl,
                                (void *)prev, (void *)b);
                if (!rp_block_valid(&h->key, b) || !(b->bits & RP_HDR_FREE))
                    return fail(c, "I3: list (%u,%u) links from %p to %p, which is not a valid free block", fl, sl,
                                (void *)prev, (void *)b);
                unsigned bfl, bsl;
                rp_class_of(b->size, &bfl, &bsl);
                if (bfl != fl || bsl != sl)
                    return fail(c, "I3: block %p of %u bytes belongs to class (%u,%u), found on (%u,%u)", (void *)b,
                                b->size, bfl, bsl, fl, sl);
                if (rp_links(b)->prev != prev)
                    return fail(c, "I4: block %p on list (%u,%u) has prev link %p, expected %p", (void *)b, fl, sl,
                                (void *)rp_links(b)->prev, (void *)prev);
                bytes += b->size;
                class_blocks++;
                table_put(c, b);
            }
            tails[sl] = prev;
        }
        if (class_blocks != ix->class_blocks[fl])
            return fail_class_count(c, fl, class_blocks, tails);
    }
    if (blocks != ix->free_blocks || bytes != ix->free_bytes)
        return fail(c, "I5: index counts %zu blocks / %zu bytes, lists hold %zu / %zu", ix->free_blocks,
                    ix->free_bytes, blocks, bytes);
    /* I6: a search for the smallest size of a class holding blocks finds one (the lists and
     * bitmaps agree by now, so a miss is the search's rounding). */
    for (unsigned fl = 0; fl < RP_FL_COUNT; fl++) {
        for (uint32_t map = ix->sl_bitmap[fl]; map; map &= map - 1) {
            size_t low = rp_class_floor(fl, rp_ctz(map));
            rp_block *b = rp_free_index_find(ix, low);
            if (!b || b->size < low)
                return fail(c, "I6: class (%u,%u) holds free blocks but a search for its %zu bytes finds %s", fl,
                            rp_ctz(map), low, b ? "a smaller block" : "none");
        }
    }
    return 0;
}

/* B1, B2, B4 */
static int check_page_lists(checker *c)
{
    rp_heap *h = c->h;
    rp_page_tier *t = &h->pages;
    size_t pages = 0;
    for (unsigned k = 0; k < RP_ORDERS; k++) {
        int bit = (int)((t->nonempty >> k) & 1);
        if (bit != (t->lists[k] != NULL))
            return fail(c, "B1: order %u bit is %d but the list is %s", k, bit, t->lists[k] ? "non-empty" : "empty");
        size_t n = 0;
        rp_page *prev = NULL;
        for (rp_page *d = t->lists[k]; d; prev = d, d = d->u.free.next) {
            if (n++ > t->blocks[k])
                return fail(c, "B4: order %u list is longer than its count %zu (cycle?)", k, t->blocks[k]);
            rp_region *r = d->region;
            int owned = 0;
            for (rp_region *x = h->regions; x; x = x->next)
                owned |= x == r;
            if (!owned || d < r->pages || d >= r->pages + r->npages)
                return fail(c, "B2: order %u list holds a descriptor %p outside this heap's regions", k, (void *)d);
            if (d->state != RP_PAGE_FREE || d->order != k || d->npages != (1u << k))
                return fail(c, "B2: order %u list holds page %p with state %u order %u npages %u", k,
                            (void *)rp_page_addr(r, d), d->state, d->order, d->npages);
            if (d->u.free.prev != prev)
                return fail(c, "B2: order %u list: page %p has a wrong prev link", k, (void *)rp_page_addr(r, d));
            pages += (size_t)1 << k;
        }
        if (n != t->blocks[k])
            return fail(c, "B4: order %u counts %zu blocks, its list holds %zu", k, t->blocks[k], n);
    }
    if (pages != t->free_pages)
        return fail(c, "B4: page tier counts %zu free pages, its lists hold %zu", t->free_pages, pages);
    return 0;
}

/* K1..K6 for one span, and H4 for the spare. */
RP_NO_SANITIZE_ADDRESS
static int check_span(checker *c, rp_region *r, rp_page *head)
{
    rp_heap *h = c->h;
    uintptr_t lo = rp_page_addr(r, head);
    uintptr_t sentinel = lo + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER;
    uint32_t prev_size = 0;
    int prev_free = 0;
    rp_block *b = (rp_block *)lo;
    for (;;) {
        if (!rp_block_valid(&h->key, b))
            return fail(c, "K1: block header at %p (span %p) fails its check", (void *)b, (void *)lo);
        if (b->prev_size != prev_size)
            return fail(c, "K3: block %p has prev_size %u, previous block has %u bytes", (void *)b, b->prev_size,
                        prev_size);
        if (((b->bits & RP_HDR_PREV_FREE) != 0) != prev_free)
            return fail(c, "K4: block %p has PREV_FREE %d, previous block free %d", (void *)b,
                        (b->bits & RP_HDR_PREV_FREE) != 0, prev_free);
        if ((uintptr_t)b == sentinel) {
            if (!(b->bits & RP_HDR_SENTINEL) || b->size != 0)
                return fail(c, "K2: span %p does not end with a sentinel at %p", (void *)lo, (void *)b);
            break;
        }
        if ((b->bits & RP_HDR_SENTINEL) || b->size < RP_MIN_BLOCK || (b->size & (RP_GRANULE - 1)) ||
            (uintptr_t)b + b->size > sentinel)
            return fail(c, "K2: block %p in span %p has size %u (span ends at %p)", (void *)b, (void *)lo, b->size,
                        (void *)sentinel);
        int is_free = (b->bits & RP_HDR_FREE) != 0;
        if (is_free && prev_free)
            return fail(c, "K5: blocks %p and %p are adjacent and both free", (void *)rp_block_prev(b), (void *)b);
        if (is_free) {
            if (!table_take(c, b))
                return fail(c, "K6: free block %p (%u bytes) is not on its free-index list", (void *)b, b->size);
            c->free_span_blocks++;
            c->free_span_bytes += b->size;
            if (b == h->spare_span && !(b->prev_size == 0 && (uintptr_t)b + b->size == sentinel))
                return fail(c, "H4: spare span block %p does not cover a whole span", (void *)b);
        } else {
            c->used_blocks++;
            c->used_bytes += b->size;
            c->usable_bytes += rp_block_usable(b);
            rp_block_info info = {0};
            info.addr = rp_block_user(b);
            info.size = rp_block_usable(b);
            info.block = b;
            info.block_size = b->size;
            info.state = RP_BLOCK_USED;
            info.tier = RP_TIER_SPAN;
            info.align = (size_t)1 << rp_block_align_log2(b);
            rp_hook_block_info(h, &info);
            if (rp_hook_check_block(h, &info, c->why, c->len))
                return c->failed = 1;
        }
        prev_size = b->size;
        prev_free = is_free;
        b = rp_block_next(b);
    }
    return 0;
}

/* G1..G4 of a mapped-block region (mapped_block.h); D1/D2 then check its descriptors. */
static int check_mapped_block(checker *c, rp_region *r)
{
    size_t bytes = r->npages << RP_PAGE_SHIFT;
    const rp_page *d = &r->pages[0];
    if ((r->base & (RP_MAPPED_BLOCK_ALIGN - 1)) || (bytes & (RP_MAPPED_BLOCK_ALIGN - 1)))
        return fail(c, "G1: mapped block region %p has page area %p + %zu bytes, not whole 2 MiB chunks", (void *)r,
                    (void *)r->base, bytes);
    if (d->state != RP_PAGE_LARGE || d->npages != r->npages || d->u.large.lead_pages != 0)
        return fail(c, "G2: mapped block region %p: page 0 is no LARGE head of all %zu pages (state %u, npages %u)",
                    (void *)r, r->npages, d->state, d->npages);
    if (r->resident || r->free_pages)
        return fail(c, "G3: mapped block region %p has a resident map or %zu free pages", (void *)r, r->free_pages);
    if ((uintptr_t)r->map_base != r->base || r->map_len != bytes || r->mem_lo != r->base ||
        r->mem_hi != r->base + bytes || r->npages > rp_mapped_block_capacity(r))
        return fail(c, "G4: mapped block region %p: mapping %p + %zu, memory [%p, %p), %zu pages, header for %zu",
                    (void *)r, r->map_base, r->map_len, (void *)r->mem_lo, (void *)r->mem_hi, r->npages,
                    rp_mapped_block_capacity(r));
    return 0;
}

/* R1..R3, M1 and M4: checked before anything that relies on regions or the address map. */
static int check_region_frame(checker *c, rp_region *r, const rp_region *prev)
{
    rp_heap *h = c->h;
    if (r->magic != RP_REGION_MAGIC || r->heap != h)
        return fail(c, "R2: region %p has a wrong magic or heap pointer", (void *)r);
    if ((r->base & (RP_PAGE_SIZE - 1)) || r->npages == 0 || r->base < r->mem_lo ||
        r->base + (r->npages << RP_PAGE_SHIFT) > r->mem_hi)
        return fail(c, "R1: region %p page area %p (+%zu pages) lies outside its memory", (void *)r, (void *)r->base,
                    r->npages);
    if (r->prev != prev || (prev && prev->base >= r->base))
        return fail(c, "R3/H3: region list is broken or unsorted at %p", (void *)r);
    _Static_assert(RP_PAGE_SHIFT == RP_PM_PAGE_SHIFT, "one map entry per page of a region");
    size_t mapped = rp_pagemap_run_of((void *)r->base, r->npages, r);
    if (mapped != r->npages)
        return fail(c, "M1: address map does not send page %p to its region %p",
                    (void *)(r->base + (mapped << RP_PAGE_SHIFT)), (void *)r);
    if (!rp_pagemap_ends_ok(r))
        return fail(c, "M4: the address map gives region %p a whole chunk outside its page area", (void *)r);
    if (rp_region_is_mapped_block(r))
        return check_mapped_block(c, r);
    return 0;
}

/* D1..D5, B3, B5 (per block), and the spans of a region. */
static int check_region(checker *c, rp_region *r)
{
    rp_heap *h = c->h;
    size_t free_pages = 0;
    uintptr_t first = r->base >> RP_PAGE_SHIFT;
    for (size_t i = 0; i < r->npages;) {
        rp_page *d = &r->pages[i];
        size_t n = d->npages;
        uintptr_t addr = rp_page_addr(r, d);
        if (d->state != RP_PAGE_NONE && d->region != r)
            return fail(c, "D5: descriptor of page %p names region %p, not %p", (void *)addr, (void *)d->region,
                        (void *)r);
        if ((d->state != RP_PAGE_FREE && d->state != RP_PAGE_LARGE && d->state != RP_PAGE_SPAN) || n == 0 ||
            n > r->npages - i)
            return fail(c, "D1: page %p of region %p is not the head of a block (state %u, npages %u)", (void *)addr,
                        (void *)r, d->state, d->npages);
        for (size_t j = 1; j < n; j++) {
            rp_page *t = d + j;
            int ok;
            if (d->state == RP_PAGE_SPAN)
                ok = t->state == RP_PAGE_SPAN_TAIL && t->npages == j;
            else if (d->state == RP_PAGE_LARGE && d->u.large.lead_pages && j == d->u.large.lead_pages)
                ok = t->state == RP_PAGE_LARGE_BODY && t->npages == j;
            else
                ok = t->state == RP_PAGE_NONE;
            if (!ok)
                return fail(c, "D2: page %p inside the block at %p has state %u npages %u",
                            (void *)rp_page_addr(r, t), (void *)addr, t->state, t->npages);
        }
        if (r->resident) {
            size_t set = rp_resident_count(r->resident, i, n);
            c->resident_pages += set;
            if (d->state != RP_PAGE_FREE) {
                c->held_pages += n;
                if (set != n)
                    return fail(c, "B5: block %p of %zu pages is in use but only %zu of its pages are marked resident",
                                (void *)addr, n, set);
            }
        }
        if (d->state == RP_PAGE_FREE) {
            uintptr_t page = first + i;
            if (n != ((size_t)1 << d->order) || (page & (n - 1)))
                return fail(c, "D3: free block %p of order %u is %zu pages or misaligned", (void *)addr, d->order, n);
            uintptr_t buddy = page ^ n;
            if (buddy >= first && buddy + n <= first + r->npages) {
                rp_page *bd = &r->pages[buddy - first];
                if (bd->state == RP_PAGE_FREE && bd->order == d->order)
                    return fail(c, "B3: free blocks %p and its buddy %p (order %u) were not merged", (void *)addr,
                                (void *)rp_page_addr(r, bd), d->order);
            }
            free_pages += n;
            c->free_pages += n;
        } else if (d->state == RP_PAGE_LARGE) {
            if (!rp_large_lead_valid(d, n) || d->u.large.usable != ((n - d->u.large.lead_pages) << RP_PAGE_SHIFT))
                return fail(c, "D2: large block %p has lead %u pages and usable %llu for %zu pages", (void *)addr,
                            d->u.large.lead_pages, (unsigned long long)d->u.large.usable, n);
            c->used_blocks++;
            c->large_blocks++;
            c->used_bytes += n << RP_PAGE_SHIFT;
            c->usable_bytes += d->u.large.usable;
            rp_block_info info = {0};
            info.addr = rp_large_user(d);
            info.size = d->u.large.usable;
            info.block = (void *)addr;
            info.block_size = n << RP_PAGE_SHIFT;
            info.state = RP_BLOCK_USED;
            info.tier = RP_TIER_PAGE;
            info.align = (size_t)1 << d->align_log2;
            rp_hook_block_info(h, &info);
            if (rp_hook_check_block(h, &info, c->why, c->len))
                return c->failed = 1;
        } else {
            c->spans++;
            c->span_bytes += n << RP_PAGE_SHIFT;
            if (check_span(c, r, d))
                return 1;
        }
        i += n;
    }
    if (free_pages != r->free_pages)
        return fail(c, "D4: region %p counts %zu free pages, its FREE blocks cover %zu", (void *)r, r->free_pages,
                    free_pages);
    return 0;
}

RP_NO_SANITIZE_ADDRESS /* reads the spare span's header (H4) */
int rp_heap_check_locked(rp_heap *h, char *why, size_t len)
{
    if (why && len)
        why[0] = 0;
    checker c;
    memset(&c, 0, sizeof c);
    c.h = h;
    c.why = why;
    c.len = len;
    size_t want = 2 * h->index.free_blocks + 2;
    c.table_slots = (size_t)1 << rp_ceil_log2(want < 64 ? 64 : want);
    c.table_bytes = rp_align_up(c.table_slots * sizeof(rp_block *), RP_PAGE_SIZE);
    c.table = rp_os_scratch_map(c.table_bytes); /* NULL is fine: the checker falls back to list searches */

    size_t nregions = 0, region_bytes = 0;
    const rp_region *prev = NULL;
    for (rp_region *r = h->regions; r && !c.failed; prev = r, r = r->next) {
        nregions++;
        region_bytes += r->npages << RP_PAGE_SHIFT;
        check_region_frame(&c, r, prev);
    }
    if (!c.failed && !check_index(&c) && !check_page_lists(&c)) {
        for (rp_region *r = h->regions; r && !c.failed; r = r->next)
            check_region(&c, r);
        if (!c.failed && (nregions != h->nregions || region_bytes != h->region_bytes))
            fail(&c, "H3: heap counts %zu regions / %zu bytes, its list holds %zu / %zu", h->nregions,
                 h->region_bytes, nregions, region_bytes);
        if (!c.failed && (c.free_span_blocks != h->index.free_blocks || c.free_span_bytes != h->index.free_bytes))
            fail(&c, "K6: spans hold %zu free blocks / %zu bytes, the index lists %zu / %zu", c.free_span_blocks,
                 c.free_span_bytes, h->index.free_blocks, h->index.free_bytes);
        if (!c.failed && (c.used_blocks != h->blocks_in_use || c.used_bytes != h->bytes_in_use ||
                          c.usable_bytes != h->bytes_usable))
            fail(&c, "H1: counters say %zu live blocks / %zu bytes / %zu usable, the heap holds %zu / %zu / %zu",
                 h->blocks_in_use, h->bytes_in_use, h->bytes_usable, c.used_blocks, c.used_bytes, c.usable_bytes);
        if (!c.failed && (c.spans != h->spans || c.span_bytes != h->span_bytes || c.large_blocks != h->large_blocks))
            fail(&c, "H2: counters say %zu spans / %zu bytes / %zu large blocks, the heap holds %zu / %zu / %zu",
                 h->spans, h->span_bytes, h->large_blocks, c.spans, c.span_bytes, c.large_blocks);
        if (!c.failed && c.free_pages != h->pages.free_pages)
            fail(&c, "B4: regions hold %zu free pages, the page tier counts %zu", c.free_pages, h->pages.free_pages);
        if (!c.failed && (c.resident_pages != h->pages.resident_pages || c.held_pages != h->pages.held_pages))
            fail(&c, "B5: page tier counts %zu resident / %zu held pages, the regions have %zu / %zu",
                 h->pages.resident_pages, h->pages.held_pages, c.resident_pages, c.held_pages);
        if (!c.failed && h->spare_span && !(h->spare_span->bits & RP_HDR_FREE))
            fail(&c, "H4: spare span block %p is not free", (void *)h->spare_span);
        if (!c.failed && rp_hook_check_heap(h, why, len))
            c.failed = 1;
    }
    rp_os_scratch_unmap(c.table, c.table_bytes);
    return c.failed;
}

int rp_heap_check(rp_heap *h, char *why, size_t len)
{
    h = rp_heap_resolve(h);
    if (!h) {
        if (why && len)
            snprintf(why, len, "no heap");
        return 1;
    }
    rp_lock_acquire(&h->lock);
    int failed = rp_heap_check_locked(h, why, len);
    rp_lock_release(&h->lock);
    return failed;
}
