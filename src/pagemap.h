/* The address map: which region (if any) owns each 4 KiB page of the address space.
 *
 * rp_free(p) finds p's heap through it, and a pointer rampart never handed out (a stack
 * address, another allocator's block) is recognised without touching memory around p.
 *
 * Structure: a two-level radix tree over the 47-bit user address space. Level 1 is a static
 * array of 2^17 slots, each covering 1 GiB; a slot points to a leaf of 2^18 region pointers,
 * one per page. Leaves are mapped on first use and never unmapped: a leaf no slot points to
 * any more is zeroed and kept as a spare for the next one needed, so a lock-free reader
 * holding a stale leaf pointer still reads mapped memory.
 *
 * Whole-slot leaves: a region whose page area covers entire 1 GiB slots (a huge block's
 * region) gets one leaf of its own, every entry of which is the region, and each such slot
 * that had no leaf points to it. Registering a 1 TiB region then writes one leaf (2 MiB)
 * and 1024 slots instead of 2 GiB of entries, and unregistering it gives the leaf back as a
 * spare. Lookups do not tell the two kinds of leaf apart.
 *
 * Invariants (checked by rp_heap_check for each region):
 *   M1  every page of a registered region's page area maps to that region;
 *   M2  the memory of two registered regions never overlaps (rp_heap_add_region refuses);
 *   M3  unregistered regions leave no entries behind, and no slot points to their
 *       whole-slot leaf;
 *   M4  a region's whole-slot leaf (r->pm_whole_leaf) holds r in every entry, and only slots
 *       inside r's page area point to it.
 * Readers take no lock (atomic loads); writers hold the map's own lock. */
#ifndef RP_PAGEMAP_H
#define RP_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

struct rp_region;

#define RP_PM_PAGE_SHIFT 12
#define RP_PM_VA_BITS 47
#define RP_PM_LEAF_BITS 18
#define RP_PM_ROOT_BITS (RP_PM_VA_BITS - RP_PM_PAGE_SHIFT - RP_PM_LEAF_BITS) /* 17 */
#define RP_PM_LEAF_ENTRIES ((size_t)1 << RP_PM_LEAF_BITS)
#define RP_PM_ROOT_ENTRIES ((size_t)1 << RP_PM_ROOT_BITS)

typedef struct rp_region *rp_pm_leaf[RP_PM_LEAF_ENTRIES];
extern rp_pm_leaf *rp_pm_root[RP_PM_ROOT_ENTRIES];

/* The region owning the page of p, or NULL. Lock-free; two dependent loads. */
static inline struct rp_region *rp_pagemap_lookup(const void *p)
{
    uintptr_t page = (uintptr_t)p >> RP_PM_PAGE_SHIFT;
    if (page >> (RP_PM_ROOT_BITS + RP_PM_LEAF_BITS))
        return NULL;
    rp_pm_leaf *leaf = __atomic_load_n(&rp_pm_root[page >> RP_PM_LEAF_BITS], __ATOMIC_ACQUIRE);
    if (!leaf)
        return NULL;
    return __atomic_load_n(&(*leaf)[page & (RP_PM_LEAF_ENTRIES - 1)], __ATOMIC_ACQUIRE);
}

/* The number of pages from p (page aligned) on, up to npages, that map to r: npages when
 * all of them do (M1 for a region's page area). Reads each leaf once, then its entries in
 * order (the checker's per-page test, without a tree walk per page). */
size_t rp_pagemap_run_of(const void *p, size_t npages, const struct rp_region *r);

/* M4 for r: 1 if r has no whole-slot leaf, or every entry of it is r and every slot pointing
 * to it covers a GiB inside r's page area. Reads the whole root (checker use only). */
int rp_pagemap_whole_leaf_ok(const struct rp_region *r);

/* Registers region r: maps every page of its page area to r, and records [lo, hi), all the
 * memory it occupies, metadata included. Returns 0; -1 when a leaf cannot be mapped; -2 when
 * [lo, hi) overlaps a registered region. Nothing changes on failure. */
int rp_pagemap_register(struct rp_region *r, uintptr_t lo, uintptr_t hi);

/* Removes r's entries and its record; the leaf pages that held only r's entries are given
 * back to the OS, and r's whole-slot leaf becomes a spare. */
void rp_pagemap_unregister(struct rp_region *r);

/* 1 if [lo, hi) overlaps the memory of any registered region. */
int rp_pagemap_overlaps(uintptr_t lo, uintptr_t hi);

/* Bytes of leaves mapped so far, spares included (they are never unmapped; tests subtract
 * them). */
size_t rp_pagemap_bytes(void);

/* The map's lock across fork(): taken by prepare, released in the parent, re-initialised in
 * the child (called by rp_heaps_fork_*). */
void rp_pagemap_fork_prepare(void);
void rp_pagemap_fork_parent(void);
void rp_pagemap_fork_child(void);

#endif
