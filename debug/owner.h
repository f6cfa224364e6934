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

#endif
