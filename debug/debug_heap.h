/* The debug runtime's state for one heap (rp_heap.debug), created with the heap and dropped
 * with it. Mapped from the OS, never from a heap.
 *
 * Invariants: the quarantine's (quarantine.h); ops_since_check < check_interval whenever the
 * periodic check is on; fill_skip_lo/hi are NULL outside a quarantine eviction. */
#ifndef RP_DEBUG_HEAP_H
#define RP_DEBUG_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "quarantine.h"
#include "src/heap.h"

typedef struct rp_debug_heap {
    rp_quarantine quarantine;
    unsigned long ops_since_check; /* operations since the last periodic check */
    int periodic_check_off;        /* a periodic check failed: reported once, then stopped */
    int not_leak;                  /* rp_heap_set_not_leak: blocks reachable by design */
    /* During an eviction: the user area just verified to hold the free pattern, which
     * rp_hook_span_freed then need not fill again. */
    char *fill_skip_lo, *fill_skip_hi;
    /* The first problem the runtime's own checks found in the current rp_heap_check, with
     * the block's history, for the periodic check's report. kind 0 = none. */
    rp_fault check_fault;
    size_t map_len;
} rp_debug_heap;

/* h's state, or NULL if it could not be mapped (the heap then runs without quarantine). */
static inline rp_debug_heap *rp_debug_of(const rp_heap *h) { return (rp_debug_heap *)h->debug; }

/* The heap's cookie secret: derived from the heap's own secret (src/secret.h), so canaries
 * differ between heaps and runs and cannot be forged from outside. */
static inline uint64_t rp_debug_secret(const rp_heap *h) { return rp_mix64(h->key.sip.k0 ^ rp_mix64(h->key.sip.k1 ^ 0x636f6f6b69657321ull)); }

#endif
