/* The free-space index of the segregated-fit tier: a two-level segregated fit (TLSF).
 *
 * A block size s (a multiple of 16, at least 32) maps to a class (fl, sl):
 *   s < 512:  fl = 0, sl = s / 16                          (32 exact classes of 16 bytes)
 *   s >= 512: fl = fls(s) - 8, sl = the 5 bits below the top one (32 linear subdivisions of
 *             each power of two).
 * Each class has a LIFO list of free blocks; bit sl of sl_bitmap[fl] says the list is
 * non-empty, bit fl of fl_bitmap says sl_bitmap[fl] is non-zero.
 *
 * A search for n bytes first rounds n up to the next class boundary, so every block in the
 * class found fits: the search is two find-first-set operations and examines one block —
 * the list head — whatever the number of free blocks (no list is ever walked). Callers
 * needing alignment search for size + alignment slack, so any block found can be carved.
 *
 * Invariants (checked by rp_heap_check):
 *   I1  bit sl of sl_bitmap[fl] is set iff heads[fl][sl] is non-NULL;
 *   I2  bit fl of fl_bitmap is set iff sl_bitmap[fl] is non-zero;
 *   I3  every block on list (fl, sl) is free, valid (K1) and maps to (fl, sl);
 *   I4  links are consistent: the head's prev is NULL, next->prev == self;
 *   I5  free_blocks / free_bytes / class_blocks[fl] count exactly the listed blocks.
 */
#ifndef RP_FREE_INDEX_H
#define RP_FREE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"

#define RP_SL_LOG 5
#define RP_SL_COUNT (1u << RP_SL_LOG)
#define RP_FL_SHIFT (RP_SL_LOG + 4) /* sizes below 2^9 = 512 form the linear first level */
#define RP_FL_COUNT 24               /* block sizes below 2^32 */
#define RP_MAX_SPAN_BLOCK ((size_t)0xfffff000u) /* largest block a span can hold */

typedef struct rp_free_index {
    uint32_t fl_bitmap;
    uint32_t sl_bitmap[RP_FL_COUNT];
    rp_block *heads[RP_FL_COUNT][RP_SL_COUNT];
    size_t free_blocks;
    size_t free_bytes;
    size_t class_blocks[RP_FL_COUNT];
} rp_free_index;

/* Class of a block of `size` bytes (where it is filed). */
static inline void rp_class_of(size_t size, unsigned *fl, unsigned *sl)
{
    if (size < ((size_t)1 << RP_FL_SHIFT)) {
        *fl = 0;
        *sl = (unsigned)(size >> 4);
    } else {
        unsigned top = rp_fls(size);
        *fl = top - (RP_FL_SHIFT - 1);
        *sl = (unsigned)(size >> (top - RP_SL_LOG)) & (RP_SL_COUNT - 1);
    }
}

void rp_free_index_insert(rp_free_index *ix, rp_block *b);

/* Unlinks b. Returns 0, or -1 if b's links are inconsistent (nothing is changed then). */
int rp_free_index_remove(rp_free_index *ix, rp_block *b);

/* Head of the first non-empty class whose every block has at least `size` bytes, or NULL. */
rp_block *rp_free_index_find(const rp_free_index *ix, size_t size);

/* Head of the class `size` itself falls in (its blocks may be smaller than size), or NULL. */
rp_block *rp_free_index_exact_head(const rp_free_index *ix, size_t size);

/* Size of the largest listed block (looks through the highest non-empty class). */
size_t rp_free_index_largest(const rp_free_index *ix);

#endif
