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
 *   I5  free_blocks / free_bytes / class_blocks[fl] count exactly the listed blocks;
 *   I6  good fit (TLSF's guarantee): rp_free_index_find(ix, n) returns NULL only when no listed
 *       block has at least rp_good_fit(n) bytes, n rounded up to its class's upper boundary
 *       (the blocks of n's own class that are smaller than that are the ones it may miss);
 *       checked as: for every class holding blocks, a search for its lower bound finds one.
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

/* The smallest size every block of a class at or above n's rounded class has: n itself below
 * 512 (classes of one size each), else n rounded up to a multiple of its class's width. Any
 * listed block of at least this many bytes satisfies a search for n (I6). */
static inline size_t rp_good_fit(size_t n)
{
    if (n < ((size_t)1 << RP_FL_SHIFT))
        return n;
    size_t width = (size_t)1 << (rp_fls(n) - RP_SL_LOG);
    return (n + width - 1) & ~(width - 1);
}

/* The smallest block size of class (fl, sl). */
static inline size_t rp_class_floor(unsigned fl, unsigned sl)
{
    return fl == 0 ? (size_t)sl << 4 : (size_t)(RP_SL_COUNT + sl) << (fl + RP_FL_SHIFT - 1 - RP_SL_LOG);
}

/* Head of the class `size` itself falls in (its blocks may be smaller than size), or NULL. */
rp_block *rp_free_index_exact_head(const rp_free_index *ix, size_t size);

/* Size of the largest listed block (looks through the highest non-empty class). */
size_t rp_free_index_largest(const rp_free_index *ix);

/* The hot operations are inline: they run on every allocation and free.
 *   rp_free_index_insert: files b at the head of its class (LIFO).
 *   rp_free_index_listed: 1 if b's links are consistent (I4: both list neighbours, or the
 *                         class head, point back at b), so that removing it would succeed.
 *   rp_free_index_unlink: unlinks b, whose links rp_free_index_listed has found consistent.
 *   rp_free_index_remove: unlinks b; -1 if its links are inconsistent (nothing changed).
 *   rp_free_index_find:   head of the first non-empty class whose every block has at least
 *                         `size` bytes, or NULL. */
RP_NO_SANITIZE_ADDRESS
static inline void rp_free_index_insert(rp_free_index *ix, rp_block *b)
{
    unsigned fl, sl;
    rp_class_of(b->size, &fl, &sl);
    rp_block *head = ix->heads[fl][sl];
    rp_links(b)->next = head;
    rp_links(b)->prev = NULL;
    if (head)
        rp_links(head)->prev = b;
    ix->heads[fl][sl] = b;
    ix->sl_bitmap[fl] |= 1u << sl;
    ix->fl_bitmap |= 1u << fl;
    ix->free_blocks++;
    ix->free_bytes += b->size;
    ix->class_blocks[fl]++;
}

RP_NO_SANITIZE_ADDRESS
static inline int rp_free_index_listed(const rp_free_index *ix, rp_block *b)
{
    unsigned fl, sl;
    rp_class_of(b->size, &fl, &sl);
    rp_block *next = rp_links(b)->next;
    rp_block *prev = rp_links(b)->prev;
    return !(next && rp_links(next)->prev != b) && (prev ? rp_links(prev)->next == b : ix->heads[fl][sl] == b);
}

RP_NO_SANITIZE_ADDRESS
static inline void rp_free_index_unlink(rp_free_index *ix, rp_block *b)
{
    unsigned fl, sl;
    rp_class_of(b->size, &fl, &sl);
    rp_block *next = rp_links(b)->next;
    rp_block *prev = rp_links(b)->prev;
    if (next)
        rp_links(next)->prev = prev;
    if (prev) {
        rp_links(prev)->next = next;
    } else {
        ix->heads[fl][sl] = next;
        if (!next) {
            ix->sl_bitmap[fl] &= ~(1u << sl);
            if (!ix->sl_bitmap[fl])
                ix->fl_bitmap &= ~(1u << fl);
        }
    }
    ix->free_blocks--;
    ix->free_bytes -= b->size;
    ix->class_blocks[fl]--;
}

RP_NO_SANITIZE_ADDRESS
static inline int rp_free_index_remove(rp_free_index *ix, rp_block *b)
{
    /* Cheap hardening: both neighbours must point back at b (I4). */
    if (!rp_free_index_listed(ix, b))
        return -1;
    rp_free_index_unlink(ix, b);
    return 0;
}

static inline rp_block *rp_free_index_search_from(const rp_free_index *ix, unsigned fl, unsigned sl)
{
    uint32_t sl_map = fl < RP_FL_COUNT ? ix->sl_bitmap[fl] & (~0u << sl) : 0;
    if (!sl_map) {
        uint32_t fl_map = fl + 1 < 32 ? ix->fl_bitmap & (~0u << (fl + 1)) : 0;
        if (!fl_map)
            return NULL;
        fl = rp_ctz(fl_map);
        sl_map = ix->sl_bitmap[fl];
    }
    return ix->heads[fl][rp_ctz(sl_map)];
}

static inline rp_block *rp_free_index_find(const rp_free_index *ix, size_t size)
{
    /* Round up to the next class boundary so any block of the class found is big enough. */
    if (size >= ((size_t)1 << RP_FL_SHIFT))
        size += ((size_t)1 << (rp_fls(size) - RP_SL_LOG)) - 1;
    if (size > RP_MAX_SPAN_BLOCK)
        return NULL;
    unsigned fl, sl;
    rp_class_of(size, &fl, &sl);
    return rp_free_index_search_from(ix, fl, sl);
}


#endif
