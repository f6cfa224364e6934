/* Pointer validation: from a pointer the program passes in to the block it names.
 *
 * rp_free, rp_realloc and rp_usable_size all start here: the address map gives the region,
 * the page descriptor the tier, and for span blocks the header's check word (keyed by the
 * heap's secret) proves the pointer is the start of a live block. Anything else becomes a
 * fault naming the address: invalid-free (never returned by rampart, interior pointer,
 * metadata) or double-free. Runs with the heap locked. */
#ifndef RP_LOCATE_H
#define RP_LOCATE_H

#include "heap.h"

typedef struct rp_located {
    int tier;         /* RP_TIER_SPAN or RP_TIER_PAGE */
    rp_block *block;  /* span blocks */
    rp_page *head;    /* large blocks */
    size_t usable;
    size_t align;
} rp_located;

/* 0 and *loc filled when p is the user pointer of a live block of h (region r);
 * -1 and a fault otherwise. */
int rp_locate(rp_heap *h, rp_region *r, const void *p, rp_located *loc, rp_fault *f);

#endif
