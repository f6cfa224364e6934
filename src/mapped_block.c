#include "mapped_block.h"

#include <string.h>

#include "large.h"
#include "os.h"
#include "pagemap.h"

static size_t header_bytes(size_t capacity) { return rp_align_up(rp_region_meta_bytes(capacity), RP_PAGE_SIZE); }

/* Unmaps [p, p+len), mapped here but not counted in h yet. It is counted only if the OS
 * refuses: it then stays mapped (and goes on the heap's list to unmap later). Counting it
 * first would raise os_bytes_peak by memory the heap never held: the destination of a move
 * that failed, or alignment slack. */
static void give_up(rp_heap *h, void *p, size_t len)
{
    if (rp_os_unmap(p, len) == 0)
        return;
    rp_heap_account_os(h, len, 0);
    rp_heap_unmap(h, p, len);
}

/* Maps a zeroed header with room for capacity descriptors; its length goes to *len. */
static rp_region *map_header(size_t capacity, size_t *len)
{
    *len = header_bytes(capacity);
    return rp_os_map(*len);
}

/* Maps an area of exactly bytes (a multiple of 2 MiB) aligned to 2 MiB (G1), or NULL. An
 * area whose alignment slack the OS would not trim is given back: the area must be one
 * mapping of exactly its bytes (G4), which the move replaces whole. */
static void *map_area(rp_heap *h, size_t bytes)
{
    void *base;
    size_t len;
    char *p = rp_os_map_aligned(bytes, RP_MAPPED_BLOCK_ALIGN, 0, &base, &len);
    if (p && (base != p || len != bytes)) {
        give_up(h, base, len);
        return NULL;
    }
    return p;
}

/* Gives r the page area [base, base + npages pages) and registers it in the address map:
 * 0, or what rp_pagemap_register returns (r's fields are then what they were before). */
static int place(rp_region *r, uintptr_t base, size_t npages)
{
    uintptr_t old_base = r->base;
    size_t old_npages = r->npages, bytes = npages << RP_PAGE_SHIFT;
    r->base = base;
    r->npages = npages;
    int rc = rp_pagemap_register(r, base, base + bytes);
    if (rc != 0) {
        r->base = old_base;
        r->npages = old_npages;
        return rc;
    }
    r->map_base = (void *)base;
    r->map_len = bytes;
    return 0;
}

/* 1 if mapping add bytes while unmapping drop would take h past its max_bytes. */
static int over_cap(const rp_heap *h, size_t add, size_t drop)
{
    return h->max_bytes && h->os_bytes - drop + add > h->max_bytes;
}

rp_page *rp_mapped_block_map(rp_heap *h, size_t npages)
{
    npages = rp_mapped_block_pages(npages);
    size_t bytes = npages << RP_PAGE_SHIFT;
    if (npages > ((size_t)1 << 31) || over_cap(h, bytes + header_bytes(npages), 0))
        return NULL;
    size_t meta_len;
    rp_region *r = map_header(npages, &meta_len);
    if (!r)
        return NULL;
    void *area = map_area(h, bytes);
    if (!area) {
        give_up(h, r, meta_len);
        return NULL;
    }
    r->heap = h;
    r->magic = RP_REGION_MAGIC;
    r->block_meta_len = meta_len;
    if (place(r, (uintptr_t)area, npages) != 0) {
        give_up(h, area, bytes);
        give_up(h, r, meta_len);
        return NULL;
    }
    if (h->flags & RP_HEAP_HUGE_PAGES)
        rp_os_advise_huge_pages(area, bytes);
    rp_heap_link_region(h, r);
    rp_heap_account_os(h, bytes + meta_len, 0);
    rp_page *d = &r->pages[0];
    d->region = r;
    d->npages = (uint32_t)npages;
    return d;
}

/* The user pointers of the last RP_MAPPED_FREED_RING mapped blocks unmapped, process-wide: once
 * its region is gone a mapped block's address is in no heap, and a second free of it would
 * otherwise read as a pointer rampart never handed out. Written once per unmapping (relaxed
 * atomics: a racing pair may lose an entry, which only makes a later report less precise). */
#define RP_MAPPED_FREED_RING 64
static const void *freed_ring[RP_MAPPED_FREED_RING];
static unsigned freed_next;

static void remember_freed(const void *user)
{
    unsigned i = __atomic_fetch_add(&freed_next, 1, __ATOMIC_RELAXED) % RP_MAPPED_FREED_RING;
    __atomic_store_n(&freed_ring[i], user, __ATOMIC_RELAXED);
}

int rp_mapped_block_freed_recently(const void *p)
{
    for (unsigned i = 0; i < RP_MAPPED_FREED_RING; i++)
        if (p && __atomic_load_n(&freed_ring[i], __ATOMIC_RELAXED) == p)
            return 1;
    return 0;
}

void rp_mapped_block_unmap(rp_heap *h, rp_page *d)
{
    remember_freed(rp_large_user(d));
    rp_region *r = d->region;
    void *area = r->map_base;
    size_t bytes = r->map_len, meta_len = r->block_meta_len;
    /* A program that frees a block this large may well ask for one again: with the default
     * threshold, the next one comes from the heap's regions, whose free pages the retention
     * policy keeps (a purge delay, or within retain_bytes), instead of a fresh mapping faulted
     * in again. glibc moves its mmap threshold the same way. */
    if (h->mapped_block_adapts && bytes < RP_MAPPED_BLOCK_ADAPT_MAX && (h->purge_delay_ms || bytes <= h->retain_bytes)) {
        if (bytes >= h->mapped_block_bytes)
            h->mapped_block_bytes = bytes + 1;
        if (bytes >= h->realloc_mapped_bytes)
            h->realloc_mapped_bytes = bytes + 1;
    }
    rp_heap_unlink_region(h, r);
    rp_pagemap_unregister(r);
    r->magic = 0;
    rp_heap_unmap(h, area, bytes);
    rp_heap_unmap(h, r, meta_len);
}

void rp_mapped_block_shrink(rp_heap *h, rp_page *d, size_t npages)
{
    rp_region *r = d->region;
    npages = rp_mapped_block_pages(npages);
    if (npages >= r->npages)
        return;
    size_t keep = npages << RP_PAGE_SHIFT, drop = (r->npages - npages) << RP_PAGE_SHIFT;
    if (rp_os_unmap((char *)r->map_base + keep, drop) != 0)
        return; /* the block keeps its pages */
    rp_heap_unlink_region(h, r);
    rp_pagemap_unregister(r);
    /* Registering fewer whole chunks of the same tables cannot fail (G1). */
    (void)place(r, r->base, npages);
    rp_heap_link_region(h, r);
    rp_heap_account_os(h, 0, drop);
    h->os_released += drop;
    d->npages = (uint32_t)npages;
}

rp_page *rp_mapped_block_grow(rp_heap *h, rp_page *d, size_t npages)
{
    rp_region *r = d->region;
    npages = rp_mapped_block_pages(npages);
    if (npages <= r->npages)
        return d;
    size_t old_npages = r->npages, old_bytes = old_npages << RP_PAGE_SHIFT, bytes = npages << RP_PAGE_SHIFT;
    if (npages > ((size_t)1 << 31))
        return NULL;
    /* A header too small for the new descriptors is replaced by one twice the size needed. */
    rp_region *nr = r;
    size_t new_meta = 0, old_meta = 0;
    if (npages > rp_mapped_block_capacity(r)) {
        old_meta = r->block_meta_len;
        /* The old header is unmapped last: both are mapped (and counted) together. */
        if (over_cap(h, bytes + header_bytes(2 * npages), old_bytes))
            return NULL;
        nr = map_header(2 * npages, &new_meta);
        if (!nr)
            return NULL;
        memcpy(nr, r, sizeof *r + sizeof(rp_page)); /* the header and the head descriptor */
        nr->block_meta_len = new_meta;
        nr->pages[0].region = nr;
    } else if (over_cap(h, bytes, old_bytes)) {
        return NULL;
    }
    /* In place when the address space after the area is free (no page moves), else into a
     * new area: the pages move there, none is copied. */
    void *old_area = r->map_base, *area = NULL;
    int in_place = rp_os_extend(old_area, old_bytes, bytes) == 0;
    if (!in_place && !(area = map_area(h, bytes))) {
        if (nr != r)
            give_up(h, nr, new_meta);
        return NULL;
    }
    rp_heap_unlink_region(h, r);
    rp_pagemap_unregister(r);
    /* The new area is registered before the pages move into it, so the move is the last
     * step that can fail; until it succeeds the block stays where it was. */
    if (place(nr, in_place ? (uintptr_t)old_area : (uintptr_t)area, npages) != 0)
        goto restore;
    if (!in_place && rp_os_move(old_area, old_bytes, area, bytes) != 0) {
        rp_pagemap_unregister(nr);
        goto restore;
    }
    rp_heap_link_region(h, nr);
    rp_heap_account_os(h, bytes + new_meta, old_bytes);
    if (nr != r) {
        r->magic = 0;
        rp_heap_unmap(h, r, old_meta);
    }
    nr->pages[0].npages = (uint32_t)npages;
    return &nr->pages[0];

restore:
    /* r's old page area is registered again: the same whole chunks, tables in place (G1). */
    (void)place(r, (uintptr_t)old_area, old_npages);
    rp_heap_link_region(h, r);
    if (in_place)
        give_up(h, (char *)old_area + old_bytes, bytes - old_bytes);
    else
        give_up(h, area, bytes);
    if (nr != r)
        give_up(h, nr, new_meta);
    return NULL;
}
