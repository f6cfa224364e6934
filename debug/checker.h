/* The debug half of rp_heap_check, and the periodic check (option check_interval).
 *
 * rp_heap_check (src/check.c) verifies the core's invariants and calls, for every used
 * block, rp_hook_check_block — P1..P7 of block_meta.h — and at the end rp_hook_check_heap:
 * F1 (poison.h: the free pattern in every free span byte), Q1..Q4 (quarantine.h) and S1..S3
 * (stack_depot.h). Messages start with the invariant's name, like the core's.
 *
 * With check_interval=N every N-th allocation, free or in-place resize of a heap runs the full
 * check under the heap lock; a violation is reported (kind, address and, for the runtime's own
 * invariants, the block's history) and periodic checks of that heap stop. */
#ifndef RP_DEBUG_CHECKER_H
#define RP_DEBUG_CHECKER_H

#include "src/heap.h"

/* Counts one operation on h and runs the check when the interval is reached (heap locked). */
void rp_debug_periodic_check(rp_heap *h, rp_fault *fault);

#endif
