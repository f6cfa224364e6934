/* Blocks kept outside every heap: the malloc drop-in's guarded blocks (src/malloc/guard_pool.h)
 * live in a pool of their own, which no heap walk reaches. The part that keeps such blocks
 * registers here how to enumerate them, and the debug flavour's leak scan (debug/leak_scan.h)
 * counts them like any heap's blocks and never takes their memory as a root. The core itself
 * keeps none. */
#ifndef RP_OUTSIDE_BLOCKS_H
#define RP_OUTSIDE_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

/* Called once per live block: its user pointer, the bytes asked for, its allocation stack
 * (a stack depot id, 0 = none). */
typedef void (*rp_outside_block_fn)(const void *user, size_t size, uint32_t alloc_stack, void *arg);

typedef struct rp_outside_blocks {
    uintptr_t lo, hi; /* the memory the blocks lie in */
    /* Enumerates the live blocks (taking what lock it needs; never allocates). */
    void (*walk)(rp_outside_block_fn fn, void *arg);
} rp_outside_blocks;

/* Registers o (kept by pointer; one registrant: a second replaces the first). */
void rp_outside_blocks_set(const rp_outside_blocks *o);

/* The registrant, or NULL. */
const rp_outside_blocks *rp_outside_blocks_get(void);

#endif
