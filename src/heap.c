#define _GNU_SOURCE
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "hooks.h"
#include "os.h"
#include "pagemap.h"
#include "header_mac.h"
#include "span.h"

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_heap *all_heaps;

static void account_os(rp_heap *h, size_t mapped, size_t unmapped)
{
    h->os_bytes += mapped;
    h->os_bytes -= unmapped;
    if (h->os_bytes > h->os_bytes_peak)
        h->os_bytes_peak = h->os_bytes;
}

static void region_link(rp_heap *h, rp_region *r)
{
    rp_region **pp = &h->regions, *prev = NULL;
    while (*pp && (*pp)->base < r->base) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    r->next = *pp;
    r->prev = prev;
    if (*pp)
        (*pp)->prev = r;
    *pp = r;
    h->nregions++;
    h->region_bytes += r->npages << RP_PAGE_SHIFT;
}

static void region_unlink(rp_heap *h, rp_region *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        h->regions = r->next;
    if (r->next)
        r->next->prev = r->prev;
    h->nregions--;
    h->region_bytes -= r->npages << RP_PAGE_SHIFT;
}

void rp_heap_link_region(rp_heap *h, rp_region *r) { region_link(h, r); }
void rp_heap_unlink_region(rp_heap *h, rp_region *r) { region_unlink(h, r); }
void rp_heap_account_os(rp_heap *h, size_t mapped, size_t unmapped) { account_os(h, mapped, unmapped); }

/* Unmaps [p, p+len), counted in h, for good: 1, or 0 if the OS refused. */
static int unmap_counted(rp_heap *h, void *p, size_t len)
{
    if (rp_os_unmap(p, len) != 0)
        return 0;
    account_os(h, 0, len);
    h->os_released += len;
    return 1;
}

void rp_heap_unmap(rp_heap *h, void *p, size_t len)
{
    if (unmap_counted(h, p, len))
        return;
    if (h->unmap_later_n < RP_UNMAP_LATER) {
        h->unmap_later[h->unmap_later_n].p = p;
        h->unmap_later[h->unmap_later_n].len = len;
        h->unmap_later_n++;
    } else {
        account_os(h, 0, len); /* leaked */
    }
}

/* Tries again to unmap what the OS refused before (rp_heap_unmap). */
static void unmap_refused(rp_heap *h)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < h->unmap_later_n; i++)
        if (!unmap_counted(h, h->unmap_later[i].p, h->unmap_later[i].len))
            h->unmap_later[kept++] = h->unmap_later[i];
    h->unmap_later_n = kept;
}

/* Registers r's memory and page area, links it into h and seeds the page tier.
 * Returns 0, -1 (ENOMEM: the address map could not grow) or -2 (overlap). */
static int region_attach(rp_heap *h, rp_region *r, uintptr_t lo, uintptr_t hi)
{
    r->heap = h;
    r->magic = RP_REGION_MAGIC;
    int rc = rp_pagemap_register(r, lo, hi);
    if (rc != 0)
        return rc;
    region_link(h, r);
    rp_page_tier_add_region(&h->pages, r);
    return 0;
}

static void region_detach(rp_heap *h, rp_region *r)
{
    region_unlink(h, r);
    rp_pagemap_unregister(r);
    r->magic = 0;
}

/* Asks for huge pages where a fresh OS region has whole ones. The area is aligned to its own
 * size (a power of two), so one of at least 2 MiB is made of whole huge pages. The metadata
 * ends where the area starts, so the whole huge pages below that address which the metadata
 * covers are advised too: a 256 MiB region has 2 MiB of descriptors, which a program handing
 * out its blocks writes at every head (one descriptor per 16 pages fills them all), and a
 * 4 KiB fault each costs more than the page tier's own work (seed 64512/4096: 512 faults per
 * huge page instead of one). Smaller regions have under 2 MiB of metadata and keep 4 KiB
 * pages, so a small heap does not pay a huge page for its descriptors. */
static void advise_region_huge_pages(const rp_region *r)
{
    size_t area_bytes = r->npages << RP_PAGE_SHIFT;
    if (area_bytes < RP_HUGE_PAGE_BYTES)
        return;
    rp_os_advise_huge_pages((void *)r->base, area_bytes);
    uintptr_t meta_huge = rp_align_up((uintptr_t)r, RP_HUGE_PAGE_BYTES);
    if (meta_huge < r->base)
        rp_os_advise_huge_pages((void *)meta_huge, r->base - meta_huge);
}

/* Regions a heap with RP_HEAP_HUGE_PAGES_LATE must already hold before its next one is
 * advised. */
#define RP_HUGE_PAGES_LATE_FROM ((size_t)4 << 20)

/* Unmaps an OS region that never joined a heap, with its cache marks. */
static void region_unmap(rp_region *r)
{
    if (r->cache_marks)
        (void)rp_os_unreserve(r->cache_marks, rp_region_marks_bytes(r));
    rp_os_unmap(r->map_base, r->map_len);
}

/* Maps a region big enough for npages pages aligned to 2^align_order pages. */
static int heap_grow(rp_heap *h, size_t npages, unsigned align_order)
{
    if (h->flags & RP_HEAP_NO_OS)
        return -1;
    size_t need = (size_t)1 << rp_ceil_log2(npages);
    if (need < ((size_t)1 << align_order))
        need = (size_t)1 << align_order;
    size_t area = h->next_region_pages > need ? h->next_region_pages : need;
    for (;;) {
        size_t bytes = (area << RP_PAGE_SHIFT) + rp_align_up(rp_region_os_meta_bytes(area), RP_PAGE_SIZE);
        if (!h->max_bytes || h->os_bytes + bytes <= h->max_bytes)
            break;
        /* Over the cap: fall back to the smallest region that serves this request. */
        if (area == need)
            return -1;
        area = need;
    }
    rp_region *r = rp_region_map(area);
    if (!r)
        return -1;
    /* A malloc arena's caches mark the span blocks they hold (src/malloc/cache_mark.h). If
     * the OS refuses the marks, the region's blocks are simply never cached. */
    if (h->flags & RP_HEAP_MALLOC_ARENA)
        r->cache_marks = rp_os_reserve(rp_region_marks_bytes(r), RP_PAGE_SIZE);
    if ((h->flags & RP_HEAP_HUGE_PAGES) &&
        (!(h->flags & RP_HEAP_HUGE_PAGES_LATE) || h->region_bytes >= RP_HUGE_PAGES_LATE_FROM))
        advise_region_huge_pages(r);
    /* If the OS refused to trim the alignment slack, the mapping is larger than planned:
     * it must still fit under the cap. */
    if (h->max_bytes && h->os_bytes + r->map_len > h->max_bytes) {
        region_unmap(r);
        return -1;
    }
    uintptr_t lo = (uintptr_t)r->map_base, hi = lo + r->map_len;
    if (region_attach(h, r, lo, hi) != 0) {
        region_unmap(r);
        return -1;
    }
    account_os(h, r->map_len, 0);
    if (area == h->next_region_pages && (h->next_region_pages << (RP_PAGE_SHIFT + 1)) <= RP_MAX_REGION)
        h->next_region_pages <<= 1;
    return 0;
}

/* Gives the pages of the FREE block d of OS region r back to the OS, if any of them may be
 * resident. */
static void decommit_free_block(rp_heap *h, rp_region *r, rp_page *d)
{
    if (!rp_page_tier_block_resident(r, d))
        return;
    size_t bytes = (size_t)1 << (d->order + RP_PAGE_SHIFT);
    if (rp_os_decommit((void *)rp_page_addr(r, d), bytes) != 0)
        return;
    h->os_released += bytes;
    rp_page_tier_decommitted(&h->pages, r, d);
}

/* Is more free memory possibly resident than keep_bytes? */
static int over_retention(const rp_heap *h, size_t keep_bytes)
{
    return (rp_page_tier_dirty(&h->pages) << RP_PAGE_SHIFT) > keep_bytes;
}

static void trim_locked(rp_heap *h, size_t keep_bytes, int all_regions);

static rp_page *take_pages(rp_heap *h, size_t npages, unsigned align_order)
{
    rp_page *d = rp_page_tier_take_run(&h->pages, npages, align_order);
    if (d)
        return d;
    if (heap_grow(h, npages, align_order) == 0)
        return rp_page_tier_take_run(&h->pages, npages, align_order);
    /* Under a cap, free memory the purge delay keeps mapped may be what stands in the way:
     * what the immediate policy would have given back goes back now, and the heap tries
     * again (a wholly free region it unmaps was too small for the request anyway). */
    if (h->max_bytes && h->purge_due_ms) {
        h->purge_due_ms = 0;
        trim_locked(h, h->retain_bytes, 0);
        if (heap_grow(h, npages, align_order) == 0)
            return rp_page_tier_take_run(&h->pages, npages, align_order);
    }
    /* Cannot grow (caller memory only, capped, or the OS refused): use free pages that are
     * contiguous but not one aligned block, rather than fail. */
    return rp_page_tier_take_run_assembled(&h->pages, npages, align_order);
}

/* RT5: a take that faulted-in fresh pages while more free memory than retain_bytes is
 * resident gives as much of it back (down to retain_bytes, whole free blocks): the free
 * pages did not fit the request, and resident memory that grows by every request the free
 * runs do not fit would add up to the heap's peak plus all it ever freed (runs of MiBs of
 * varied sizes: docs/BENCHMARKS.md, "malloc-large"). Memory freed and reused in bursts is
 * not touched: reusing dirty pages faults nothing in. */
void rp_heap_took_pages(rp_heap *h, size_t resident_before)
{
    if (h->pages.resident_pages <= resident_before || !over_retention(h, h->retain_bytes))
        return;
    size_t fresh = (h->pages.resident_pages - resident_before) << RP_PAGE_SHIFT;
    size_t dirty = rp_page_tier_dirty(&h->pages) << RP_PAGE_SHIFT;
    size_t keep = dirty - h->retain_bytes > fresh ? dirty - fresh : h->retain_bytes;
    trim_locked(h, keep, 0);
}

rp_page *rp_heap_take_pages(rp_heap *h, size_t npages, unsigned align_order)
{
    size_t resident_before = h->pages.resident_pages;
    rp_page *d = take_pages(h, npages, align_order);
    if (d)
        rp_heap_took_pages(h, resident_before);
    return d;
}

/* Unmaps a wholly free OS region. Returns 1 if it was released. */
static int release_region(rp_heap *h, rp_region *r)
{
    if (!r->map_base || r->free_pages != r->npages)
        return 0;
    rp_page_tier_remove_region(&h->pages, r);
    region_detach(h, r);
    void *base = r->map_base;
    size_t len = r->map_len;
    uint8_t *marks = r->cache_marks;
    size_t marks_len = rp_region_marks_bytes(r);
    rp_hook_region_leaving(h, (void *)r->mem_lo, r->mem_hi - r->mem_lo);
    if (rp_os_unmap(base, len) != 0) {
        /* The OS refused: keep the region. */
        uintptr_t lo = (uintptr_t)base;
        if (region_attach(h, r, lo, lo + len) != 0) {
            /* Cannot happen: the map entries were just freed. Leak rather than corrupt. */
            return 1;
        }
        return 0;
    }
    if (marks) /* every block of the region was free: no mark is set */
        (void)rp_os_unreserve(marks, marks_len);
    account_os(h, 0, len);
    h->os_released += len;
    return 1;
}

/* Unmaps wholly free OS regions (every one with all_regions, else while more than
 * keep_bytes may be resident), then decommits free page-tier blocks (in address order) until
 * at most keep_bytes of free memory may be resident. Heap locked. */
static void trim_locked(rp_heap *h, size_t keep_bytes, int all_regions)
{
    if (h->unmap_later_n)
        unmap_refused(h);
    for (rp_region *r = h->regions, *next; r; r = next) {
        next = r->next;
        if (!r->map_base || ((all_regions || over_retention(h, keep_bytes)) && release_region(h, r)))
            continue;
        for (size_t i = 0; i < r->npages && over_retention(h, keep_bytes);) {
            rp_page *d = &r->pages[i];
            size_t n = (d->state == RP_PAGE_FREE || d->state == RP_PAGE_LARGE || d->state == RP_PAGE_SPAN) && d->npages ? d->npages : 1;
            if (d->state == RP_PAGE_FREE)
                decommit_free_block(h, r, d);
            i += n;
        }
    }
}

/* The delayed policy (purge_delay_ms > 0), called when a release left the heap above its
 * retention limit: the first such release starts the delay, the first one after it has
 * passed trims the heap down to the limit. A program that frees a burst and allocates it
 * again within the delay (a request loop, an interpreter's collections) then reuses its
 * pages instead of faulting zeroed ones in again (with huge pages, decommitting parts of a
 * 2 MiB page also splits it, and the refaults are 4 KiB ones); one that keeps its memory
 * free gives it back at its first release after the delay. One clock read per release above
 * the limit. */
static void purge_later(rp_heap *h)
{
    uint64_t now = rp_clock_ms();
    if (h->purge_due_ms == 0) {
        h->purge_due_ms = now + h->purge_delay_ms;
        return;
    }
    if (now < h->purge_due_ms)
        return;
    h->purge_due_ms = 0;
    trim_locked(h, h->retain_bytes, 0);
}

void rp_heap_give_pages(rp_heap *h, rp_region *r, rp_page *d, size_t npages)
{
    size_t first = rp_page_index(r, d);
    rp_page_tier_give(&h->pages, r, d, npages);
    if (!r->map_base)
        return;
    if (!over_retention(h, h->retain_bytes)) {
        h->purge_due_ms = 0; /* back under the limit: a later excess starts a new delay */
        return;
    }
    if (h->purge_delay_ms) {
        purge_later(h);
        return;
    }
    if (release_region(h, r))
        return;
    /* Give back the free blocks the run now lies in (merged with its free buddies): a few
     * blocks, each found in O(orders). */
    for (size_t i = first; i < first + npages;) {
        rp_page *f = rp_page_tier_free_head(r, i);
        if (!f)
            break; /* cannot happen: the run was just freed */
        decommit_free_block(h, r, f);
        i = rp_page_index(r, f) + ((size_t)1 << f->order);
    }
}

size_t rp_heap_trim(rp_heap *h, size_t keep_bytes)
{
    h = rp_heap_resolve(h);
    if (!h)
        return 0;
    rp_lock_acquire(&h->lock);
    size_t before = h->os_released;
    rp_span_drop_spare(h); /* else its region is never wholly free */
    trim_locked(h, keep_bytes, 1);
    h->purge_due_ms = 0;
    size_t released = h->os_released - before;
    rp_lock_release(&h->lock);
    return released;
}

/* ---------------------------------------------------------------------------------------- */

static int config_valid(const rp_heap_config *c)
{
    if (c->large_threshold && (c->large_threshold < ((size_t)4 << 10) || c->large_threshold > ((size_t)256 << 20)))
        return 0;
    if (c->region_bytes && c->region_bytes > RP_MAX_REGION * 64)
        return 0;
    if (c->flags & ~(unsigned)(RP_HEAP_NO_OS | RP_HEAP_HUGE_PAGES | RP_HEAP_HARDENED | RP_HEAP_HUGE_PAGES_LATE))
        return 0;
    if (c->purge_delay_ms > RP_MAX_PURGE_DELAY_MS)
        return 0;
    if (c->mapped_block_bytes && c->mapped_block_bytes < RP_HUGE_PAGE_BYTES)
        return 0;
    return 1;
}

static rp_heap *heap_new(const rp_heap_config *cfg, int is_default)
{
    static const rp_heap_config defaults = {0};
    if (!cfg)
        cfg = &defaults;
    if (!config_valid(cfg)) {
        errno = EINVAL;
        return NULL;
    }
    size_t len = rp_align_up(sizeof(rp_heap), RP_PAGE_SIZE);
    rp_heap *h = rp_os_map(len);
    if (!h) {
        errno = ENOMEM;
        return NULL;
    }
    /* Fresh anonymous memory is zero: only non-zero fields are set. */
    rp_lock_init(&h->lock);
    h->key = rp_mac_key_new((uint64_t)(uintptr_t)h);
    const char *name = cfg->name ? cfg->name : (is_default ? "default" : "heap");
    strncpy(h->name, name, sizeof h->name - 1);
    h->flags = cfg->flags;
    h->is_default = is_default;
    h->large_threshold = cfg->large_threshold ? cfg->large_threshold : RP_DEFAULT_LARGE_THRESHOLD;
    h->retain_bytes = cfg->retain_bytes ? cfg->retain_bytes : RP_DEFAULT_RETAIN;
    h->purge_delay_ms = cfg->purge_delay_ms;
    h->max_bytes = cfg->max_bytes;
    h->mapped_block_bytes = cfg->mapped_block_bytes ? cfg->mapped_block_bytes : RP_DEFAULT_MAPPED_BLOCK;
    h->mapped_block_adapts = cfg->mapped_block_bytes == 0;
    h->realloc_mapped_bytes = h->mapped_block_adapts ? RP_DEFAULT_REALLOC_MAPPED : h->mapped_block_bytes;
    size_t region = cfg->region_bytes ? cfg->region_bytes : RP_DEFAULT_REGION;
    h->next_region_pages = (size_t)1 << rp_ceil_log2((region + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT);
    h->span_pages = RP_SPAN_BYTES >> RP_PAGE_SHIFT;
    h->control_len = len;
    account_os(h, len, 0);
    rp_hook_heap_created(h);

    pthread_mutex_lock(&heaps_lock);
    h->all_next = all_heaps;
    if (all_heaps)
        all_heaps->all_prev = h;
    all_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

rp_heap *rp_heap_create(const rp_heap_config *cfg) { return heap_new(cfg, 0); }

static rp_heap *default_heap;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_heap_init(void) { default_heap = heap_new(NULL, 1); }

rp_heap *rp_default_heap(void)
{
    pthread_once(&default_once, default_heap_init);
    return default_heap;
}

rp_heap *rp_heap_resolve(rp_heap *h) { return h ? h : rp_default_heap(); }

const char *rp_heap_name(const rp_heap *h) { return h ? h->name : "(null)"; }

int rp_heap_add_region(rp_heap *h, void *base, size_t len)
{
    if (!h || !base || len == 0 || (uintptr_t)base + len < (uintptr_t)base) {
        errno = EINVAL;
        return -1;
    }
    rp_lock_acquire(&h->lock);
    int rc = -1;
    /* Refuse overlaps before writing anything into the caller's memory. */
    if (rp_pagemap_overlaps((uintptr_t)base, (uintptr_t)base + len)) {
        errno = EINVAL;
        goto out;
    }
    rp_region *r = rp_region_for_caller(base, len);
    if (!r)
        goto out; /* EINVAL: too small */
    int attached = region_attach(h, r, (uintptr_t)base, (uintptr_t)base + len);
    if (attached != 0) {
        errno = attached == -2 ? EINVAL : ENOMEM;
        goto out;
    }
    rc = 0;
out:
    rp_lock_release(&h->lock);
    return rc;
}

void rp_heap_destroy(rp_heap *h)
{
    if (!h || h->is_default)
        return;
    pthread_mutex_lock(&heaps_lock);
    if (h->all_prev)
        h->all_prev->all_next = h->all_next;
    else
        all_heaps = h->all_next;
    if (h->all_next)
        h->all_next->all_prev = h->all_prev;
    pthread_mutex_unlock(&heaps_lock);

    rp_lock_acquire(&h->lock);
    rp_hook_heap_destroying(h);
    while (h->regions) {
        rp_region *r = h->regions;
        void *map_base = r->map_base;
        size_t meta_len = r->block_meta_len;
        rp_hook_region_leaving(h, (void *)r->mem_lo, r->mem_hi - r->mem_lo);
        region_detach(h, r);
        if (map_base)
            region_unmap(r);
        if (meta_len) /* a mapped-block region's header and descriptors */
            rp_os_unmap(r, meta_len);
    }
    unmap_refused(h); /* what is still refused now is leaked */
    rp_lock_release(&h->lock);
    rp_lock_fini(&h->lock);
    rp_os_unmap(h, h->control_len);
}

void rp_heaps_foreach(void (*fn)(rp_heap *h, void *arg), void *arg)
{
    pthread_mutex_lock(&heaps_lock);
    for (rp_heap *h = all_heaps; h; h = h->all_next)
        fn(h, arg);
    pthread_mutex_unlock(&heaps_lock);
}

void rp_heaps_fork_prepare(void)
{
    pthread_mutex_lock(&heaps_lock);
    for (rp_heap *h = all_heaps; h; h = h->all_next)
        rp_lock_acquire(&h->lock);
    rp_pagemap_fork_prepare();
}

void rp_heaps_fork_parent(void)
{
    rp_pagemap_fork_parent();
    for (rp_heap *h = all_heaps; h; h = h->all_next)
        rp_lock_release(&h->lock);
    pthread_mutex_unlock(&heaps_lock);
}

void rp_heaps_fork_child(void)
{
    rp_pagemap_fork_child();
    for (rp_heap *h = all_heaps; h; h = h->all_next)
        rp_lock_init(&h->lock);
    pthread_mutex_init(&heaps_lock, NULL);
}

/* fork() for every program that uses heaps: handlers registered when the library is loaded
 * (registering may allocate, which a heap's first use must not), taking every heap's lock
 * around the fork, so a child never inherits a heap another thread held. A layer with locks
 * of its own around the heaps' (the malloc drop-in) calls rp_heaps_fork_* from its handlers
 * and says so with rp_heaps_fork_by_caller; these then stand aside. Whether they took the
 * locks is remembered at prepare, so parent and child undo exactly that. */
static int fork_by_caller; /* atomic */
static int fork_took_locks;

static void own_fork_prepare(void)
{
    fork_took_locks = !__atomic_load_n(&fork_by_caller, __ATOMIC_ACQUIRE);
    if (fork_took_locks)
        rp_heaps_fork_prepare();
}

static void own_fork_parent(void)
{
    if (fork_took_locks)
        rp_heaps_fork_parent();
}

static void own_fork_child(void)
{
    if (fork_took_locks)
        rp_heaps_fork_child();
}

__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(own_fork_prepare, own_fork_parent, own_fork_child);
}

void rp_heaps_fork_by_caller(void) { __atomic_store_n(&fork_by_caller, 1, __ATOMIC_RELEASE); }
