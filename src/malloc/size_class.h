/* Size classes of the malloc drop-in's thread caches.
 *
 * A class is a span-tier block size (header included). Classes are exact 16-byte steps from
 * 32 to 1024 bytes (63 classes), then 8 per doubling up to 64 KiB (48 classes): at most
 * 12.5 % of rounding above 1 KiB. Larger span blocks are never cached (requests of 64 KiB and
 * more belong to the page tier anyway).
 *
 * Invariants (thread_cache.c relies on them; tests/size_class_test.c checks them):
 *   C1  class sizes are multiples of 16, strictly increasing, rp_tc_class_size(0) == 32 and
 *       rp_tc_class_size(RP_TC_CLASSES - 1) == RP_TC_MAX_BLOCK;
 *   C2  rp_tc_class_of_need(n) is the smallest class whose size is >= n (a request);
 *   C3  rp_tc_class_of_block(s) is the largest class whose size is <= s (a block being
 *       cached), so every block in bin c has at least rp_tc_class_size(c) bytes;
 *   C4  above 1 KiB, class sizes in (2^k, 2^(k+1)] are multiples of 2^(k-3), so a run of
 *       equal blocks of a class keeps every user pointer aligned to any power of two that
 *       divides the class size.
 * No division: shifts and one bit scan. */
#ifndef RP_SIZE_CLASS_H
#define RP_SIZE_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "src/bits.h"
#include "src/block.h"

#define RP_TC_SMALL_MAX 1024u               /* last exact-step class */
#define RP_TC_SMALL_CLASSES 63u             /* 32, 48, ..., 1024 */
#define RP_TC_MAX_BLOCK ((size_t)64 << 10)  /* largest class */
#define RP_TC_CLASSES (RP_TC_SMALL_CLASSES + 6 * 8)
/* Largest block filed under a class (the floor class of anything below the next boundary). */
#define RP_TC_MAX_CACHED_BLOCK (RP_TC_MAX_BLOCK + (RP_TC_MAX_BLOCK >> 3) - RP_GRANULE)

static inline size_t rp_tc_class_size(unsigned c)
{
    if (c < RP_TC_SMALL_CLASSES)
        return ((size_t)c + 2) << 4;
    unsigned i = c - RP_TC_SMALL_CLASSES; /* 0..47 */
    unsigned k = 10 + (i >> 3);           /* (2^k, 2^(k+1)] */
    unsigned j = (i & 7) + 1;             /* 1..8 */
    return ((size_t)1 << k) + ((size_t)j << (k - 3));
}

/* Ceiling class of a block need (a multiple of 16, 32 .. RP_TC_MAX_BLOCK). */
static inline unsigned rp_tc_class_of_need(size_t need)
{
    if (RP_LIKELY(need <= RP_TC_SMALL_MAX))
        return (unsigned)(need >> 4) - 2;
    size_t t = need - 1;
    unsigned k = rp_fls(t);
    unsigned j = (unsigned)((t - ((size_t)1 << k)) >> (k - 3)); /* 0..7 */
    return RP_TC_SMALL_CLASSES + ((k - 10) << 3) + j;
}

/* Floor class of a block size (a multiple of 16, >= 32). Returns RP_TC_CLASSES or more for
 * blocks too big to cache. */
static inline unsigned rp_tc_class_of_block(size_t size)
{
    if (RP_LIKELY(size <= RP_TC_SMALL_MAX))
        return (unsigned)(size >> 4) - 2;
    unsigned k = rp_fls(size);
    if (k > 16)
        return RP_TC_CLASSES;
    unsigned j = (unsigned)((size - ((size_t)1 << k)) >> (k - 3)); /* 0..7 */
    return RP_TC_SMALL_CLASSES + ((k - 10) << 3) + j - 1;
}

#endif
