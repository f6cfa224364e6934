/* Which block contains an address: for reports about pointers that are not a block's start
 * (an interior free, a corrupted neighbour), so the report can name the block and show its
 * history. Error path only; takes the heap's lock itself (call it unlocked). */
#ifndef RP_DEBUG_OWNER_H
#define RP_DEBUG_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include "block_meta.h"
#include "src/heap.h"

typedef struct rp_debug_owner {
    void *user;          /* user pointer of the used block containing the address */
    size_t usable;       /* the core's usable size */
    rp_debug_meta meta;  /* copy of its metadata */
    int meta_ok;         /* the metadata passed its seal (P1) */
} rp_debug_owner;

/* 0 and *out filled when addr lies in a used (live or quarantined) block of h — its header,
 * metadata, user area or trailer; -1 otherwise (or when the span is too damaged to walk). */
int rp_debug_find_owner(rp_heap *h, const void *addr, rp_debug_owner *out);

/* 1 when user is where the user area of a span block of h starts whose header is damaged:
 * walking the span from its first block, every header is valid up to the one RP_USER_OFFSET
 * bytes before user. (An underflow of more than the debug metadata leaves the core nothing to
 * recognise the block by.) Takes the heap's lock itself. */
int rp_debug_damaged_block_at(rp_heap *h, const void *user);

#endif
