#include "pagemap.h"

#include <pthread.h>

#include "os.h"
#include "region.h"

#define PAGE_SHIFT RP_PM_PAGE_SHIFT
#define CHUNK_SHIFT RP_PM_CHUNK_SHIFT
#define SLOT_SHIFT RP_PM_SLOT_SHIFT
#define PAGES_PER_CHUNK RP_PM_PAGE_ENTRIES
#define CHUNKS_PER_SLOT RP_PM_CHUNK_ENTRIES
#define TAG RP_PM_PAGE_TABLE_TAG
#define CHUNK_BYTES ((uintptr_t)1 << CHUNK_SHIFT)

typedef rp_pm_chunk_table chunk_table;
typedef rp_pm_page_table page_table;

_Static_assert(sizeof(chunk_table) == RP_OS_PAGE && sizeof(page_table) == RP_OS_PAGE, "tables are one page");

rp_pm_chunk_table *rp_pm_root[RP_PM_ROOT_ENTRIES];
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pm_bytes;
static struct rp_region *pm_regions; /* every registered region, for overlap checks */

/* Page tables detached from their chunk (all entries NULL), for reuse. A stale reader may
 * still read one, which is why they are kept rather than unmapped; should more than
 * MAX_SPARES be detached at once, the excess stays mapped, zeroed and unused. */
#define MAX_SPARES 512
static page_table *spares[MAX_SPARES];
static size_t nspares;

/* A zeroed table of one page: a spare page table when allowed, else fresh from the OS.
 * NULL when the OS refuses. */
static void *table_new(int spare_ok)
{
    if (spare_ok && nspares)
        return spares[--nspares];
    void *t = rp_os_map(RP_OS_PAGE);
    if (t)
        pm_bytes += RP_OS_PAGE;
    return t;
}

/* The chunk entry of the chunk holding addr, or NULL when addr is outside the address space
 * or its GiB has no chunk table. Lock-free, like rp_pagemap_lookup. */
static uintptr_t *chunk_entry(uintptr_t addr)
{
    if (addr >> RP_PM_VA_BITS)
        return NULL;
    chunk_table *chunks = __atomic_load_n(&rp_pm_root[addr >> SLOT_SHIFT], __ATOMIC_ACQUIRE);
    return chunks ? &(*chunks)[(addr >> CHUNK_SHIFT) & (CHUNKS_PER_SLOT - 1)] : NULL;
}

/* 1 if [first, end) (addresses) covers the whole chunk at c. */
static int covers_chunk(uintptr_t c, uintptr_t first, uintptr_t end)
{
    return c >= first && c + CHUNK_BYTES <= end;
}

/* Stores v in the entries of page table t for the pages of the chunk at c that lie in
 * [first, end). */
static void store_pages(page_table *t, uintptr_t c, uintptr_t first, uintptr_t end, struct rp_region *v)
{
    uintptr_t from = c > first ? c : first;
    uintptr_t to = c + CHUNK_BYTES < end ? c + CHUNK_BYTES : end;
    for (uintptr_t a = from; a < to; a += (uintptr_t)1 << PAGE_SHIFT)
        __atomic_store_n(&(*t)[(a >> PAGE_SHIFT) & (PAGES_PER_CHUNK - 1)], v, __ATOMIC_RELEASE);
}

static int overlaps_locked(uintptr_t lo, uintptr_t hi)
{
    for (struct rp_region *r = pm_regions; r; r = r->map_next)
        if (lo < r->mem_hi && r->mem_lo < hi)
            return 1;
    return 0;
}

int rp_pagemap_overlaps(uintptr_t lo, uintptr_t hi)
{
    pthread_mutex_lock(&pm_lock);
    int o = overlaps_locked(lo, hi);
    pthread_mutex_unlock(&pm_lock);
    return o;
}

/* Makes sure every table registering [first, end) needs exists: chunk tables for each GiB,
 * page tables for chunks covered in part (or that have one already). Returns 0 or -1; a
 * table made before a failure stays in place, empty, which no lookup can tell apart from
 * no table. */
static int prepare_tables(uintptr_t first, uintptr_t end)
{
    for (uintptr_t s = first >> SLOT_SHIFT; s <= (end - 1) >> SLOT_SHIFT; s++) {
        if (!rp_pm_root[s]) {
            chunk_table *t = table_new(0);
            if (!t)
                return -1;
            __atomic_store_n(&rp_pm_root[s], t, __ATOMIC_RELEASE);
        }
    }
    for (uintptr_t c = first & ~(CHUNK_BYTES - 1); c < end; c += CHUNK_BYTES) {
        uintptr_t *e = chunk_entry(c);
        if (covers_chunk(c, first, end) || *e != 0)
            continue; /* a whole chunk (its entry is 0 by M2), or a shared one with its table */
        page_table *t = table_new(1);
        if (!t)
            return -1;
        __atomic_store_n(e, (uintptr_t)t | TAG, __ATOMIC_RELEASE);
    }
    return 0;
}

int rp_pagemap_register(struct rp_region *r, uintptr_t lo, uintptr_t hi)
{
    uintptr_t first = r->base, end = first + (r->npages << PAGE_SHIFT);
    if (r->npages == 0 || r->npages > ((uintptr_t)1 << (RP_PM_VA_BITS - PAGE_SHIFT)) || end <= first ||
        ((end - 1) >> RP_PM_VA_BITS))
        return -1;
    pthread_mutex_lock(&pm_lock);
    if (overlaps_locked(lo, hi)) {
        pthread_mutex_unlock(&pm_lock);
        return -2;
    }
    if (prepare_tables(first, end) != 0) {
        pthread_mutex_unlock(&pm_lock);
        return -1;
    }
    for (uintptr_t c = first & ~(CHUNK_BYTES - 1); c < end; c += CHUNK_BYTES) {
        uintptr_t *e = chunk_entry(c);
        if (*e & TAG)
            store_pages((page_table *)(*e - TAG), c, first, end, r);
        else /* whole (prepare_tables made a page table for every other chunk) */
            __atomic_store_n(e, (uintptr_t)r, __ATOMIC_RELEASE);
    }
    r->mem_lo = lo;
    r->mem_hi = hi;
    r->map_next = pm_regions;
    pm_regions = r;
    pthread_mutex_unlock(&pm_lock);
    return 0;
}

void rp_pagemap_unregister(struct rp_region *r)
{
    pthread_mutex_lock(&pm_lock);
    uintptr_t first = r->base, end = first + (r->npages << PAGE_SHIFT);
    for (uintptr_t c = first & ~(CHUNK_BYTES - 1); c < end; c += CHUNK_BYTES) {
        uintptr_t *e = chunk_entry(c);
        if (!e || !(*e & TAG)) { /* r's whole chunk (or, in a damaged map, not r's: M1) */
            if (e && *e == (uintptr_t)r)
                __atomic_store_n(e, 0, __ATOMIC_RELEASE);
            continue;
        }
        page_table *t = (page_table *)(*e - TAG);
        store_pages(t, c, first, end, NULL); /* r's pages only, by M2 */
        size_t used = 0;
        for (size_t i = 0; i < PAGES_PER_CHUNK && !used; i++)
            used = (*t)[i] != NULL;
        if (!used) { /* M3: detach the empty table; a reader holding it reads NULL */
            __atomic_store_n(e, 0, __ATOMIC_RELEASE);
            if (nspares < MAX_SPARES)
                spares[nspares++] = t;
        }
    }
    for (struct rp_region **pp = &pm_regions; *pp; pp = &(*pp)->map_next) {
        if (*pp == r) {
            *pp = r->map_next;
            break;
        }
    }
    r->map_next = NULL;
    pthread_mutex_unlock(&pm_lock);
}

size_t rp_pagemap_bytes(void)
{
    pthread_mutex_lock(&pm_lock);
    size_t n = pm_bytes;
    pthread_mutex_unlock(&pm_lock);
    return n;
}

void rp_pagemap_fork_prepare(void) { pthread_mutex_lock(&pm_lock); }
void rp_pagemap_fork_parent(void) { pthread_mutex_unlock(&pm_lock); }
void rp_pagemap_fork_child(void) { pthread_mutex_init(&pm_lock, NULL); }

uintptr_t *rp_pagemap_entry_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t *e = chunk_entry(a);
    if (!e || !(*e & TAG))
        return e;
    page_table *t = (page_table *)(*e - TAG);
    return (uintptr_t *)(void *)&(*t)[(a >> PAGE_SHIFT) & (PAGES_PER_CHUNK - 1)];
}

size_t rp_pagemap_run_of(const void *p, size_t npages, const struct rp_region *r)
{
    uintptr_t a = (uintptr_t)p;
    size_t done = 0;
    while (done < npages) {
        uintptr_t at = a + (done << PAGE_SHIFT);
        const uintptr_t *slot = chunk_entry(at);
        if (!slot)
            return done;
        uintptr_t e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        size_t k = (at >> PAGE_SHIFT) & (PAGES_PER_CHUNK - 1);
        size_t in_chunk = PAGES_PER_CHUNK - k < npages - done ? PAGES_PER_CHUNK - k : npages - done;
        if (!(e & TAG)) {
            if (e != (uintptr_t)r)
                return done;
            done += in_chunk;
            continue;
        }
        const page_table *t = (const page_table *)(e - TAG);
        for (size_t i = 0; i < in_chunk; i++, done++)
            if (__atomic_load_n(&(*t)[k + i], __ATOMIC_ACQUIRE) != r)
                return done;
    }
    return done;
}

/* 1 if the chunk holding addr has an entry naming r directly. */
static int chunk_names(uintptr_t addr, const struct rp_region *r)
{
    const uintptr_t *e = chunk_entry(addr);
    return e && __atomic_load_n(e, __ATOMIC_ACQUIRE) == (uintptr_t)r;
}

int rp_pagemap_ends_ok(const struct rp_region *r)
{
    uintptr_t first = r->base, end = first + (r->npages << PAGE_SHIFT);
    return !(first >= CHUNK_BYTES && chunk_names(first - CHUNK_BYTES, r)) && !chunk_names(end + CHUNK_BYTES - 1, r);
}
