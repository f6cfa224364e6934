/* Verifying one block's debug invariants P1..P7 (block_meta.h): on free, realloc, quarantine
 * eviction and in rp_heap_check. Heap locked. */
#ifndef RP_DEBUG_BLOCK_CHECK_H
#define RP_DEBUG_BLOCK_CHECK_H

#include <stddef.h>

#include "block_meta.h"
#include "src/heap.h"

/* Which invariant failed (0 = all hold). */
enum { RP_VERIFY_OK = 0, RP_VERIFY_P1 = 1, RP_VERIFY_P2, RP_VERIFY_P3, RP_VERIFY_P4, RP_VERIFY_P5, RP_VERIFY_P6,
       RP_VERIFY_P7 };

/* Verifies the block at user (usable: the core's usable size); *m receives a copy of its
 * metadata. On a violation records in fault the kind a user should read (underflow for the
 * canary, overflow for the trailer, use-after-free write for a quarantined block's pattern),
 * the first bad byte and the block's history, and returns the RP_VERIFY_* code. */
int rp_block_verify(rp_heap *h, void *user, size_t usable, rp_debug_meta *m, rp_fault *fault);

/* A free or realloc of a span block also checks the header of the block right after it (the
 * core's K1), which an overflow that skips the trailer lands in; the core would otherwise
 * only notice when the block leaves quarantine. 0, or 1 with a corrupted-block fault that
 * names the block and its history (*m). */
int rp_block_check_next_header(rp_heap *h, void *user, size_t usable, const rp_debug_meta *m, rp_fault *fault);

/* Name of a RP_VERIFY_* code ("P1".."P7"). */
const char *rp_verify_name(int code);

#endif
