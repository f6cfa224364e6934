/* Leak detection by reachability, as LeakSanitizer does it: with every heap locked and every
 * other thread stopped (stop_world.h), the roots (leak_roots.h) are scanned for words that
 * point into live blocks — anywhere inside [user, user + requested), interior pointers
 * included — and every block reached is scanned in turn. Blocks marked with rp_set_not_leak
 * and the blocks of heaps marked with rp_heap_set_not_leak are roots themselves. A live block
 * not reached is leaked: *indirectly* when another leaked block points to it, *directly*
 * otherwise (a cycle of leaked blocks is all indirect, as in LeakSanitizer).
 *
 * The scan covers the blocks of every heap (malloc arenas, heaps the program created, caller
 * regions); rampart's own memory is never a root. Scratch memory only, from the OS.
 *
 * Invariants of a finished scan:
 *   L1  blocks are sorted by lo and do not overlap; lo <= hi;
 *   L2  tag is RP_LEAK_REACHABLE, RP_LEAK_IGNORED, RP_LEAK_DIRECT or RP_LEAK_INDIRECT;
 *   L3  a block tagged DIRECT or INDIRECT is pointed to by no root and no reachable block. */
#ifndef RP_DEBUG_LEAK_SCAN_H
#define RP_DEBUG_LEAK_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "src/heap.h"

enum {
    RP_LEAK_UNSEEN = 0,    /* during the scan only */
    RP_LEAK_REACHABLE = 1, /* pointed to from a root or a reachable block */
    RP_LEAK_IGNORED = 2,   /* reachable by design (rp_set_not_leak, rp_heap_set_not_leak) */
    RP_LEAK_DIRECT = 3,    /* leaked, no leaked block points to it */
    RP_LEAK_INDIRECT = 4,  /* leaked, pointed to by another leaked block */
};

typedef struct rp_leak_block {
    uintptr_t lo, hi;    /* user area [user, user + requested); a pointer to lo reaches a
                            block of 0 bytes too */
    rp_heap *heap;
    uint32_t stack;      /* allocation stack (depot id, 0 = none) */
    uint32_t tag;        /* RP_LEAK_* */
} rp_leak_block;

typedef struct rp_leak_scan {
    rp_leak_block *blocks;
    size_t n;
    size_t map_len;
    size_t threads;      /* threads whose stacks were scanned (the caller included) */
    size_t not_stopped;  /* threads that could not be stopped (then every writable mapping was scanned) */
    int failed;          /* no memory for the tables: nothing was scanned, nothing is reported */
} rp_leak_scan;

/* Runs the scan. caller_sp is the caller's stack pointer at its call into rampart (frames
 * below it are rampart's and hold no program pointers); regs/nregs the caller's callee-saved
 * registers at that point. Scans are serialised. */
void rp_leak_scan_run(rp_leak_scan *s, uintptr_t caller_sp, const uintptr_t *regs, size_t nregs);

/* Gives back the scan's memory. */
void rp_leak_scan_free(rp_leak_scan *s);

#endif
