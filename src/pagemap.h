/* The address map: which region (if any) owns each 4 KiB page of the address space.
 *
 * rp_free(p) finds p's heap through it, and a pointer rampart never handed out (a stack
 * address, another allocator's block) is recognised without touching memory around p.
 *
 * Structure: a radix tree over the 47-bit user address space, with an entry per 2 MiB
 * chunk and, only where a chunk is shared, an entry per page.
 *   - The root is a static array of 2^17 slots, one per GiB; a slot points to a chunk
 *     table (4 KiB) of 512 chunk entries, one per 2 MiB.
 *   - A chunk entry is 0 (no region), a region pointer (the whole chunk lies in that
 *     region's page area), or a page table's address with bit 0 set (part of the chunk lies
 *     in a region's page area: a page table holds 512 region pointers, one per 4 KiB page).
 * A region mapped from the OS is aligned to its own size (at least 2 MiB, or smaller than a
 * chunk), so registering 256 MiB writes 128 chunk entries instead of 65,536 page entries,
 * and 1 TiB writes 512 Ki; only caller memory and small OS regions use page tables. A lookup
 * is two dependent loads for a whole chunk and three for a shared one.
 *
 * Tables are mapped on first use and never unmapped, so a lock-free reader holding a stale
 * table pointer still reads mapped memory: a page table left with no entry is detached from
 * its chunk and kept (zeroed) as a spare for the next one needed.
 *
 * Invariants (checked by rp_heap_check for each region):
 *   M1  every page of a registered region's page area maps to that region;
 *   M2  the memory of two registered regions never overlaps (rp_heap_add_region refuses);
 *   M3  unregistered regions leave no entries behind (and a page table whose last entry
 *       went is detached);
 *   M4  a chunk entry naming a region directly covers a chunk wholly inside that region's
 *       page area (checked at both ends of each region: the chunks just outside it).
 * Readers take no lock (atomic loads); writers hold the map's own lock. */
#ifndef RP_PAGEMAP_H
#define RP_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

struct rp_region;

#define RP_PM_PAGE_SHIFT 12
#define RP_PM_CHUNK_SHIFT 21 /* 2 MiB */
#define RP_PM_SLOT_SHIFT 30  /* 1 GiB */
#define RP_PM_VA_BITS 47
#define RP_PM_PAGE_ENTRIES ((size_t)1 << (RP_PM_CHUNK_SHIFT - RP_PM_PAGE_SHIFT))  /* 512 */
#define RP_PM_CHUNK_ENTRIES ((size_t)1 << (RP_PM_SLOT_SHIFT - RP_PM_CHUNK_SHIFT)) /* 512 */
#define RP_PM_ROOT_ENTRIES ((size_t)1 << (RP_PM_VA_BITS - RP_PM_SLOT_SHIFT))      /* 2^17 */
#define RP_PM_PAGE_TABLE_TAG ((uintptr_t)1)

typedef uintptr_t rp_pm_chunk_table[RP_PM_CHUNK_ENTRIES];
typedef struct rp_region *rp_pm_page_table[RP_PM_PAGE_ENTRIES];
extern rp_pm_chunk_table *rp_pm_root[RP_PM_ROOT_ENTRIES];

/* The region owning the page of p, or NULL. Lock-free. */
static inline struct rp_region *rp_pagemap_lookup(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (a >> RP_PM_VA_BITS)
        return NULL;
    rp_pm_chunk_table *chunks = __atomic_load_n(&rp_pm_root[a >> RP_PM_SLOT_SHIFT], __ATOMIC_ACQUIRE);
    if (!chunks)
        return NULL;
    uintptr_t e = __atomic_load_n(&(*chunks)[(a >> RP_PM_CHUNK_SHIFT) & (RP_PM_CHUNK_ENTRIES - 1)], __ATOMIC_ACQUIRE);
    if (__builtin_expect(!(e & RP_PM_PAGE_TABLE_TAG), 1))
        return (struct rp_region *)e;
    rp_pm_page_table *pages = (rp_pm_page_table *)(e - RP_PM_PAGE_TABLE_TAG);
    return __atomic_load_n(&(*pages)[(a >> RP_PM_PAGE_SHIFT) & (RP_PM_PAGE_ENTRIES - 1)], __ATOMIC_ACQUIRE);
}

/* The word that decides the lookup of p (its page entry, or its chunk entry when the chunk is
 * whole), or NULL when p has no chunk table. For tests and fuzzers that damage the map. */
uintptr_t *rp_pagemap_entry_of(const void *p);

/* The number of pages from p (page aligned) on, up to npages, that map to r: npages when
 * all of them do (M1 for a region's page area). Reads a whole chunk's entry once. */
size_t rp_pagemap_run_of(const void *p, size_t npages, const struct rp_region *r);

/* M4 for r: 1 if no chunk entry just outside r's page area names r. */
int rp_pagemap_ends_ok(const struct rp_region *r);

/* Registers region r: maps every page of its page area to r, and records [lo, hi), all the
 * memory it occupies, metadata included. Returns 0; -1 when a table cannot be mapped; -2 when
 * [lo, hi) overlaps a registered region. Nothing visible changes on failure. */
int rp_pagemap_register(struct rp_region *r, uintptr_t lo, uintptr_t hi);

/* Removes r's entries and its record; page tables left empty become spares. */
void rp_pagemap_unregister(struct rp_region *r);

/* 1 if [lo, hi) overlaps the memory of any registered region. */
int rp_pagemap_overlaps(uintptr_t lo, uintptr_t hi);

/* Bytes of tables mapped so far, spares included (they are never unmapped; tests subtract
 * them). */
size_t rp_pagemap_bytes(void);

/* The map's lock across fork(): taken by prepare, released in the parent, re-initialised in
 * the child (called by rp_heaps_fork_*). */
void rp_pagemap_fork_prepare(void);
void rp_pagemap_fork_parent(void);
void rp_pagemap_fork_child(void);

#endif
