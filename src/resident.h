/* Resident pages: which pages of an OS region may cost memory.
 *
 * A page of an OS region is *resident* (its bit is set) from the moment the page tier hands
 * it out until it is given back to the OS with madvise; a fresh mapping has every bit clear.
 * Free pages whose bit is set are the heap's dirty memory: freed after use, still backed by
 * RAM. The retention policy (heap.h) bounds exactly those, so a heap with a large, mostly
 * untouched region neither gives back nor faults in again the blocks it frees, and a block's
 * dirtiness never stops it from coalescing with its buddies.
 *
 * A clear bit also says the page reads as zeros: nothing wrote it since the OS mapped it or
 * took it back (MADV_DONTNEED on private anonymous memory). rp_calloc relies on that to leave
 * fresh pages alone (page_tier.h, zero_run).
 *
 * Caller memory (rp_heap_add_region) is never given back, so its regions have no bitmap.
 *
 * Cost: setting, clearing or counting the bits of a run touches one 64-bit word per 64 pages
 * (256 KiB), so handing out a 1 MiB block reads and writes four words. */
#ifndef RP_RESIDENT_H
#define RP_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of bitmap for a region of npages pages (whole words). */
static inline size_t rp_resident_bytes(size_t npages)
{
    return ((npages + 63) >> 6) * sizeof(uint64_t);
}

/* Sets the bits of pages [first, first + n); returns how many were clear before. */
size_t rp_resident_set(uint64_t *bits, size_t first, size_t n);

/* Clears the bits of pages [first, first + n); returns how many were set before. */
size_t rp_resident_clear(uint64_t *bits, size_t first, size_t n);

/* Counts the set bits of pages [first, first + n). */
size_t rp_resident_count(const uint64_t *bits, size_t first, size_t n);

#endif
