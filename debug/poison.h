/* Poisoning: fresh user areas are filled with alloc_fill (their first alloc_fill_max bytes),
 * freed memory with free_fill (options poison, alloc_fill, free_fill, alloc_fill_max).
 *
 * Invariant F1 (checked by rp_heap_check through rp_hook_check_heap, and on every reuse):
 * while poisoning is on, every byte of free span memory outside block headers and free-list
 * links — the bytes the core announces with rp_hook_span_freed — holds free_fill. A block
 * carved from free memory is verified before it is handed out (rp_hook_span_reused), so a
 * write through a dangling pointer into memory already released from quarantine is still
 * caught, only without the block's history. Quarantined blocks hold free_fill over their whole
 * usable area (P7, block_meta.h) and are verified when they leave quarantine.
 * Page-tier memory is not covered: free pages may have been given back to the OS and read
 * back as zeros. */
#ifndef RP_DEBUG_POISON_H
#define RP_DEBUG_POISON_H

#include <stddef.h>

/* Fills [p, p+len) with byte. The caller opens the bytes for the sanitizers. */
void rp_poison_fill(void *p, size_t len, unsigned char byte);

/* The first byte of [p, p+len) that is not byte, or NULL. Reads without ASan checks, so
 * poisoned allocator memory needs no opening (Valgrind still needs it addressable). */
const unsigned char *rp_poison_find_mismatch(const void *p, size_t len, unsigned char byte);

struct rp_block_info;
/* F1 for one block of a walk: for a free span block (with poisoning on), the first byte of its
 * payload after the header and free-list links that does not hold free_fill, its value in
 * *found; NULL for every other block and when all hold. */
const unsigned char *rp_poison_check_free_block(const struct rp_block_info *info, unsigned *found);

#endif
