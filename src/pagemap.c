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

static pm_leaf *leaf_for(uintptr_t page, int create)
{
    pm_leaf **slot = &pm_root[page >> PM_LEAF_BITS];
    pm_leaf *leaf = *slot;
    if (!leaf && create) {
        leaf = rp_os_map(sizeof(pm_leaf));
        if (leaf) {
            pm_bytes += sizeof(pm_leaf);
            __atomic_store_n(slot, leaf, __ATOMIC_RELEASE);
        }
    }
    return leaf;
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
    /* Create every leaf first, so a failure changes nothing. */
    for (uintptr_t page = first; page < first + npages; page = (page | (PM_LEAF_ENTRIES - 1)) + 1) {
        if (!leaf_for(page, 1)) {
            pthread_mutex_unlock(&pm_lock);
            return -1;
        }
    }
    set_range(first, npages, r);
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
    clear_range(r->base >> PM_PAGE_SHIFT, r->npages);
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
    while (done < npages) {
        uintptr_t at = page + done;
        if (at >> (RP_PM_ROOT_BITS + RP_PM_LEAF_BITS))
            return done;
        rp_pm_leaf *leaf = __atomic_load_n(&rp_pm_root[at >> RP_PM_LEAF_BITS], __ATOMIC_ACQUIRE);
        if (!leaf)
            return done;
        size_t k = at & (RP_PM_LEAF_ENTRIES - 1);
        size_t end = RP_PM_LEAF_ENTRIES - k < npages - done ? RP_PM_LEAF_ENTRIES : k + (npages - done);
        for (; k < end; k++, done++)
            if (__atomic_load_n(&(*leaf)[k], __ATOMIC_ACQUIRE) != r)
                return done;
    }
    return done;
}
