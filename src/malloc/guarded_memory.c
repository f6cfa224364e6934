#include "guarded_memory.h"

#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "cache_mark.h"
#include "guard_pool.h"
#include "malloc_slabs.h"
#include "seal.h"
#include "src/header_snapshot.h"
#include "src/heap.h"
#include "src/pagemap.h"
#include "src/report.h"
#include "src/span.h"
#include "thread_cache.h"

int rp_guard_writes, rp_guard_heap_writes;

/* The C library's checked entry points, which reach its own implementations directly: the
 * unchecked way to its memcpy, memmove and memset from a library that defines those names. */
extern void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen);
extern void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen);
extern void *__memset_chk(void *d, int c, size_t n, size_t dlen);

void *rp_memset_unchecked(void *p, int c, size_t n) { return __memset_chk(p, c, n, n); }

static int report(int kind, const void *d, size_t n, const void *block, size_t bytes, const char *what,
                  const char *why)
{
    rp_region *r = rp_ms_contains(d) ? NULL : rp_pagemap_lookup(d);
    rp_heap *h = rp_ms_contains(d) ? rp_ms_owner(rp_slab_of(&rp_ms_space, d)) : r ? r->heap : NULL;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, kind, h, d, block, bytes, "%s(%p, ..., %zu): %s", what, d, n, why);
    rp_report_fault(&f);
    return -1;
}

/* A write [d, end) that lands in the live block at start (usable bytes; mark its cache mark,
 * or NULL; cached 1 when its page-tier flag says it is held by a cache). */
static int check_block(uintptr_t d, uintptr_t end, size_t n, uintptr_t start, size_t usable, int cached,
                       const char *what)
{
    const void *b = (const void *)start;
    if (cached)
        return report(RP_ERR_USE_AFTER_FREE_WRITE, (void *)d, n, b, usable, what,
                      "the destination is a freed block (held by a cache or the quarantine)");
    size_t request = rp_seal_request(rp_arena_key(), b, usable);
    if (request == SIZE_MAX)
        return report(RP_ERR_HEAP_BUFFER_OVERFLOW, (void *)d, n, b, usable, what,
                      "the destination block's seal was overwritten already (a write past its end)");
    if (end > start + request)
        return report(RP_ERR_HEAP_BUFFER_OVERFLOW, (void *)d, n, b, request, what,
                      "the write runs past the end of the block it starts in");
    return 0;
}

static int check_slab(uintptr_t d, uintptr_t end, size_t n, const char *what)
{
    uintptr_t start;
    uint32_t stride;
    int at = rp_slab_block_at(&rp_ms_space, (void *)d, &start, &stride);
    if (at == RP_SLAB_AT_NONE)
        return report(RP_ERR_USE_AFTER_FREE_WRITE, (void *)d, n, NULL, 0, what,
                      "the destination is slab memory that holds no block");
    if (at == RP_SLAB_AT_FREE)
        return report(RP_ERR_USE_AFTER_FREE_WRITE, (void *)d, n, (void *)start, stride, what,
                      "the destination is a free slab block");
    return check_block(d, end, n, start, stride, rp_cache_marked(rp_cache_mark_of_slab((void *)start)), what);
}

/* The head descriptor of the page-tier or free block holding page descriptor p of region r,
 * looked for at most RP_GUARD_SCAN_PAGES back; NULL if not found. */
static rp_page *head_of(rp_region *r, rp_page *p)
{
    rp_page *first = rp_page_of(r, (void *)r->base);
    for (unsigned i = 0; i <= RP_GUARD_SCAN_PAGES && p >= first; i++, p--)
        if (p->state != RP_PAGE_NONE)
            return p;
    return NULL;
}

/* The live sealed span block holding d, found through the mark of its header granule
 * (RP_CACHE_MARK_SEALED_HEAD, cache_mark.h), looked for at most RP_GUARD_SCAN_GRANULES granules
 * below d: 1 with its first byte and usable bytes, or 0. */
static int sealed_block_below(rp_region *r, uintptr_t d, uintptr_t *user, size_t *usable)
{
    const uint8_t *marks = r->cache_marks;
    if (!marks)
        return 0;
    size_t g = (d - r->base) >> 4, lowest = g > RP_GUARD_SCAN_GRANULES ? g - RP_GUARD_SCAN_GRANULES : 0;
    const uint64_t heads = 0x0101010101010101ull * RP_CACHE_MARK_SEALED_HEAD;
    while (g + 1 > lowest) {
        /* Eight marks at a time once aligned: a byte of 4 is the only value with that bit. */
        if ((g & 7) == 7 && g >= lowest + 7) {
            uint64_t w;
            __builtin_memcpy(&w, marks + g - 7, 8);
            if (!(w & heads)) {
                g -= 8;
                continue;
            }
        }
        if (__atomic_load_n(&marks[g], __ATOMIC_RELAXED) == RP_CACHE_MARK_SEALED_HEAD) {
            uintptr_t header = r->base + (g << 4);
            size_t size = rp_header_live_size(rp_arena_key(), (const rp_block *)header);
            if (size) {
                *user = header + RP_USER_OFFSET;
                *usable = size - RP_USER_OFFSET;
                return 1;
            }
        }
        if (g == 0)
            break;
        g--;
    }
    return 0;
}

/* A write into a span page: at a block's first byte, or inside a live sealed block, checked
 * against the block; anywhere else, against the headers of the blocks whose user data starts
 * within RP_GUARD_SPAN_AHEAD bytes after d: a write that reaches one runs over it (an underflow
 * of that block). */
#define RP_GUARD_SPAN_AHEAD 64u
static int check_span(rp_region *r, uintptr_t d, uintptr_t end, size_t n, const char *what)
{
    uintptr_t first = (d + RP_GRANULE - 1) & ~(uintptr_t)(RP_GRANULE - 1);
    size_t size = rp_header_live_size(rp_arena_key(), rp_block_of_user((void *)first));
    if (size && d == first) {
        const uint8_t *mark = rp_cache_mark_in(r, (void *)first);
        return check_block(d, end, n, first, size - RP_USER_OFFSET, mark && rp_cache_marked(mark), what);
    }
    uintptr_t user;
    size_t usable;
    if (!size && sealed_block_below(r, d, &user, &usable) && d >= user && d < user + usable)
        return check_block(d, end, n, user, usable, 0, what);
    uintptr_t page_end = (d | (RP_PAGE_SIZE - 1)) + 1;
    for (uintptr_t u = d == first ? first + RP_GRANULE : first; u <= d + RP_GUARD_SPAN_AHEAD; u += RP_GRANULE) {
        if (u - RP_USER_OFFSET >= end)
            break;
        if (u - RP_USER_OFFSET >= page_end &&
            (u - RP_USER_OFFSET >= r->base + (r->npages << RP_PAGE_SHIFT) ||
             rp_page_of(r, (void *)(u - RP_USER_OFFSET))->state != RP_PAGE_SPAN_TAIL))
            break; /* the span ended: its sentinel was checked last */
        size = rp_header_live_size(rp_arena_key(), rp_block_of_user((void *)u));
        if (size || rp_header_sound(rp_arena_key(), rp_block_of_user((void *)u)))
            return report(RP_ERR_HEAP_BUFFER_UNDERFLOW, (void *)d, n, (void *)u, size ? size - RP_USER_OFFSET : 0,
                          what, "the write runs over the header of the block after it");
    }
    return 0;
}

static int check_region(rp_region *r, uintptr_t d, uintptr_t end, size_t n, const char *what)
{
    if (!(r->heap->flags & RP_HEAP_MALLOC_ARENA))
        return 0; /* blocks of the program's own heaps carry no seal */
    if (d < r->base)
        return report(RP_ERR_HEAP_BUFFER_UNDERFLOW, (void *)d, n, NULL, 0, what,
                      "the destination is rampart's metadata (a region's header or page descriptors)");
    rp_page *p = rp_page_of(r, (void *)d);
    if (p->state == RP_PAGE_SPAN || p->state == RP_PAGE_SPAN_TAIL)
        return check_span(r, d, end, n, what);
    rp_page *h = head_of(r, p);
    if (!h)
        return 0;
    uintptr_t start = r->base + ((uintptr_t)(h - rp_page_of(r, (void *)r->base)) << RP_PAGE_SHIFT);
    if (h->state == RP_PAGE_FREE)
        return report(RP_ERR_USE_AFTER_FREE_WRITE, (void *)d, n, (void *)start, (size_t)h->npages << RP_PAGE_SHIFT,
                      what, "the destination is free heap memory");
    if (h->state != RP_PAGE_LARGE || h->u.large.lead_pages != 0)
        return 0;
    return check_block(d, end, n, start, rp_large_usable(h), rp_tc_page_cached(h), what);
}

int rp_guard_write(void *dest, size_t n, const char *what)
{
    uintptr_t d = (uintptr_t)dest, end = d + n;
    if (n == 0)
        return 0;
    if (end < d)
        end = UINTPTR_MAX;
    if (rp_gp_contains(dest))
        return rp_gp_check_write(dest, n, what);
    if (!rp_guard_heap_writes)
        return 0;
    if (rp_ms_contains(dest))
        return check_slab(d, end, n, what);
    rp_region *r = rp_pagemap_lookup(dest);
    if (r)
        return check_region(r, d, end, n, what);
    /* A destination outside the arenas' page areas (a region's metadata just below one, the
     * guard below the slab space) that runs into the next page, inside them: an underflow of
     * the block there. */
    uintptr_t next_page = (d | (RP_PAGE_SIZE - 1)) + 1;
    if (next_page != 0 && next_page < end) {
        rp_region *in = rp_ms_contains((void *)next_page) ? NULL : rp_pagemap_lookup((void *)next_page);
        if (rp_ms_contains((void *)next_page) || (in && (in->heap->flags & RP_HEAP_MALLOC_ARENA)))
            return report(RP_ERR_HEAP_BUFFER_UNDERFLOW, dest, n, (void *)next_page, 0, what,
                          "the write starts outside the heap's blocks and runs into one");
    }
    return 0;
}

#ifdef RP_GUARDED_MEMORY
void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
    if (__builtin_expect(rp_guard_writes, 0) && rp_guard_write(d, n, "memcpy"))
        return d;
    return __memcpy_chk(d, s, n, SIZE_MAX);
}

void *memmove(void *d, const void *s, size_t n)
{
    if (__builtin_expect(rp_guard_writes, 0) && rp_guard_write(d, n, "memmove"))
        return d;
    return __memmove_chk(d, s, n, SIZE_MAX);
}

void *memset(void *d, int c, size_t n)
{
    if (__builtin_expect(rp_guard_writes, 0) && rp_guard_write(d, n, "memset"))
        return d;
    return __memset_chk(d, c, n, SIZE_MAX);
}
#endif
