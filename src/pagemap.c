#include "pagemap.h"

#include <pthread.h>

#include "os.h"
#include "region.h"

#define PM_PAGE_SHIFT RP_PM_PAGE_SHIFT
#define PM_LEAF_BITS RP_PM_LEAF_BITS
#define PM_ROOT_BITS RP_PM_ROOT_BITS
#define PM_LEAF_ENTRIES RP_PM_LEAF_ENTRIES

typedef rp_pm_leaf pm_leaf;

rp_pm_leaf *rp_pm_root[RP_PM_ROOT_ENTRIES];
#define pm_root rp_pm_root
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pm_bytes;

/* Zeroed leaves no slot points to (retired whole-slot leaves), for reuse. A stale reader
 * may still read one, so a spare holds nothing but NULL entries; should more than
 * PM_MAX_SPARES be retired at once, the excess stays mapped, zeroed and unused. */
#define PM_MAX_SPARES 256
static pm_leaf *pm_spares[PM_MAX_SPARES];
static size_t pm_nspares;

/* A zeroed leaf: a spare, or freshly mapped. NULL when the OS refuses. */
static pm_leaf *leaf_new(void)
{
    if (pm_nspares)
        return pm_spares[--pm_nspares];
    pm_leaf *leaf = rp_os_map(sizeof(pm_leaf));
    if (leaf)
        pm_bytes += sizeof(pm_leaf);
    return leaf;
}

/* Makes leaf (no slot points to it) a zeroed spare: its pages are given back to the OS, or
 * cleared by hand where that fails. */
static void leaf_retire(pm_leaf *leaf)
{
    if (rp_os_zero_metadata(leaf, sizeof(pm_leaf)) != 0)
        for (size_t i = 0; i < PM_LEAF_ENTRIES; i++)
            __atomic_store_n(&(*leaf)[i], NULL, __ATOMIC_RELAXED);
    if (pm_nspares < PM_MAX_SPARES)
        pm_spares[pm_nspares++] = leaf;
}

static pm_leaf *leaf_for(uintptr_t page, int create)
{
    pm_leaf **slot = &pm_root[page >> PM_LEAF_BITS];
    pm_leaf *leaf = *slot;
    if (!leaf && create) {
        leaf = leaf_new();
        if (leaf)
            __atomic_store_n(slot, leaf, __ATOMIC_RELEASE);
    }
    return leaf;
}

/* 1 if [first, first + npages) covers slot s's whole GiB and s has no leaf: the slot can
 * point to the region's whole-slot leaf. */
static int slot_takes_whole_leaf(uintptr_t s, uintptr_t first, size_t npages)
{
    uintptr_t lo = s << PM_LEAF_BITS;
    return lo >= first && lo + PM_LEAF_ENTRIES <= first + npages && !pm_root[s];
}

static void set_range(uintptr_t first, size_t npages, struct rp_region *r)
{
    for (size_t i = 0; i < npages; i++) {
        uintptr_t page = first + i;
        pm_leaf *leaf = leaf_for(page, 0);
        __atomic_store_n(&(*leaf)[page & (PM_LEAF_ENTRIES - 1)], r, __ATOMIC_RELEASE);
    }
}

static struct rp_region *pm_regions; /* every registered region, for overlap checks */

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

int rp_pagemap_register(struct rp_region *r, uintptr_t lo, uintptr_t hi)
{
    uintptr_t first = r->base >> PM_PAGE_SHIFT;
    size_t npages = r->npages;
    if (npages == 0 || first + npages < first || ((first + npages - 1) >> (PM_ROOT_BITS + PM_LEAF_BITS)))
        return -1;
    pthread_mutex_lock(&pm_lock);
    if (overlaps_locked(lo, hi)) {
        pthread_mutex_unlock(&pm_lock);
        return -2;
    }
    uintptr_t s_first = first >> PM_LEAF_BITS, s_last = (first + npages - 1) >> PM_LEAF_BITS;
    /* Create every leaf first, so a failure changes nothing visible (leaves already placed in
     * empty slots hold no entries). */
    pm_leaf *whole = NULL;
    for (uintptr_t s = s_first; s <= s_last; s++) {
        int ok;
        if (slot_takes_whole_leaf(s, first, npages))
            ok = whole || (whole = leaf_new()) != NULL;
        else
            ok = leaf_for(s << PM_LEAF_BITS, 1) != NULL;
        if (!ok) {
            if (whole)
                leaf_retire(whole);
            pthread_mutex_unlock(&pm_lock);
            return -1;
        }
    }
    if (whole) {
        for (size_t i = 0; i < PM_LEAF_ENTRIES; i++)
            __atomic_store_n(&(*whole)[i], r, __ATOMIC_RELAXED);
    }
    r->pm_whole_leaf = whole ? *whole : NULL;
    for (uintptr_t s = s_first; s <= s_last; s++) {
        if (whole && slot_takes_whole_leaf(s, first, npages)) {
            __atomic_store_n(&pm_root[s], whole, __ATOMIC_RELEASE); /* publishes the entries */
        } else {
            uintptr_t from = s == s_first ? first : s << PM_LEAF_BITS;
            uintptr_t to = s == s_last ? first + npages : (s + 1) << PM_LEAF_BITS;
            set_range(from, (size_t)(to - from), r);
        }
    }
    r->mem_lo = lo;
    r->mem_hi = hi;
    r->map_next = pm_regions;
    pm_regions = r;
    pthread_mutex_unlock(&pm_lock);
    return 0;
}

/* Clears the entries of pages [first, first + npages): the whole 4 KiB pages of leaf memory
 * they cover are given back to the OS (they read back as zeros, NULL entries, and stop being
 * resident: a region of N bytes has N / 512 bytes of entries), the entries at either end
 * that share a page with other entries are stored. A lock-free reader sees each entry as it
 * was or as NULL, as with stores alone. */
static void clear_range(uintptr_t first, size_t npages)
{
    enum { PER_PAGE = RP_OS_PAGE / sizeof(struct rp_region *) };
    uintptr_t page = first, end = first + npages;
    while (page < end) {
        uintptr_t leaf_end = (page | (PM_LEAF_ENTRIES - 1)) + 1;
        uintptr_t stop = leaf_end < end ? leaf_end : end;
        pm_leaf *leaf = leaf_for(page, 0);
        size_t k = page & (PM_LEAF_ENTRIES - 1), k_end = k + (size_t)(stop - page);
        size_t whole_lo = (k + PER_PAGE - 1) & ~(size_t)(PER_PAGE - 1), whole_hi = k_end & ~(size_t)(PER_PAGE - 1);
        if (whole_lo < whole_hi &&
            rp_os_zero_metadata(&(*leaf)[whole_lo], (whole_hi - whole_lo) * sizeof(struct rp_region *)) == 0) {
            set_range(page, whole_lo - k, NULL);
            set_range(page + (whole_hi - k), k_end - whole_hi, NULL);
        } else {
            set_range(page, k_end - k, NULL);
        }
        page = stop;
    }
}

void rp_pagemap_unregister(struct rp_region *r)
{
    pthread_mutex_lock(&pm_lock);
    uintptr_t first = r->base >> PM_PAGE_SHIFT, end = first + r->npages;
    pm_leaf *whole = (pm_leaf *)(void *)r->pm_whole_leaf;
    for (uintptr_t page = first; page < end;) {
        uintptr_t s = page >> PM_LEAF_BITS;
        uintptr_t stop = (s + 1) << PM_LEAF_BITS;
        if (stop > end)
            stop = end;
        if (whole && pm_root[s] == whole)
            __atomic_store_n(&pm_root[s], NULL, __ATOMIC_RELEASE);
        else
            clear_range(page, (size_t)(stop - page));
        page = stop;
    }
    if (whole) {
        /* No slot points to it any more; a reader that loaded it before reads r or zero. */
        leaf_retire(whole);
        r->pm_whole_leaf = NULL;
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

size_t rp_pagemap_run_of(const void *p, size_t npages, const struct rp_region *r)
{
    uintptr_t page = (uintptr_t)p >> RP_PM_PAGE_SHIFT;
    size_t done = 0;
    const rp_pm_leaf *seen_whole = NULL; /* a leaf all of whose entries were read as r */
    while (done < npages) {
        uintptr_t at = page + done;
        if (at >> (RP_PM_ROOT_BITS + RP_PM_LEAF_BITS))
            return done;
        rp_pm_leaf *leaf = __atomic_load_n(&rp_pm_root[at >> RP_PM_LEAF_BITS], __ATOMIC_ACQUIRE);
        if (!leaf)
            return done;
        size_t k = at & (RP_PM_LEAF_ENTRIES - 1);
        size_t end = RP_PM_LEAF_ENTRIES - k < npages - done ? RP_PM_LEAF_ENTRIES : k + (npages - done);
        if (leaf == seen_whole) { /* a whole-slot leaf met again: its entries are known */
            done += end - k;
            continue;
        }
        size_t k0 = k;
        for (; k < end; k++, done++)
            if (__atomic_load_n(&(*leaf)[k], __ATOMIC_ACQUIRE) != r)
                return done;
        if (k0 == 0 && end == RP_PM_LEAF_ENTRIES)
            seen_whole = leaf;
    }
    return done;
}

int rp_pagemap_whole_leaf_ok(const struct rp_region *r)
{
    const rp_pm_leaf *whole = (const rp_pm_leaf *)(const void *)r->pm_whole_leaf;
    if (!whole)
        return 1;
    for (size_t i = 0; i < RP_PM_LEAF_ENTRIES; i++)
        if (__atomic_load_n(&(*whole)[i], __ATOMIC_ACQUIRE) != r)
            return 0;
    uintptr_t first = r->base >> RP_PM_PAGE_SHIFT, end = first + r->npages;
    for (uintptr_t s = 0; s < RP_PM_ROOT_ENTRIES; s++) {
        if (__atomic_load_n(&rp_pm_root[s], __ATOMIC_ACQUIRE) != whole)
            continue;
        if ((s << RP_PM_LEAF_BITS) < first || ((s + 1) << RP_PM_LEAF_BITS) > end)
            return 0;
    }
    return 1;
}
