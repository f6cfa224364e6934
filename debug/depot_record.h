/* The stack depot's record of one stored stack (stack_depot.c), and how records are filed:
 * the layout its invariants S1..S3 (stack_depot.h) speak about. The rest of rampart uses the
 * depot only through stack_depot.h; white-box tests use this to damage a record on purpose
 * and check that rp_depot_check names the invariant broken. */
#ifndef RP_DEBUG_DEPOT_RECORD_H
#define RP_DEBUG_DEPOT_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Hash chains: a stack with hash x is on the chain of bucket x mod RP_DEPOT_BUCKETS (S2). */
#define RP_DEPOT_BUCKET_BITS 16
#define RP_DEPOT_BUCKETS ((size_t)1 << RP_DEPOT_BUCKET_BITS)

typedef struct rp_depot_record {
    struct rp_depot_record *next; /* chain of its bucket */
    uint32_t id;                  /* S1: the id that names it */
    uint32_t hash;                /* S2: hash of frames[0 .. n) */
    uint32_t n;                   /* S2: 1 .. RP_STACK_MAX_FRAMES */
    uint32_t reserved;
    uintptr_t frames[];
} rp_depot_record;

/* The record of stack id, or NULL for 0 or an id not stored. */
rp_depot_record *rp_depot_record_of(uint32_t id);

#endif
