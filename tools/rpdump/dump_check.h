/* `rpdump check`: the heap's invariants, verified offline on a dump.
 *
 * The dump records the heap as the core sees it, so the core's invariants (region.h,
 * page_tier.h, block.h, free_index.h, heap.h) can be restated on it. Each restatement has a
 * label of its own: F (the dump file) and the core label it restates, so FD1 is D1 on a dump:
 *   FR1 a region's page area is page-aligned, non-empty and inside its memory;
 *   FH3 regions are sorted by address, do not overlap, and match the heap's region counters;
 *   FD1 the page-tier records (free pages, large blocks, spans) tile each region's page area
 *       in address order; every region has records;
 *   FD2 a large block's user area starts a whole number of pages in and runs to its end;
 *   FD3 a free page block is 2^k pages, aligned to its size in absolute page numbers;
 *   FD4 a region's free-page counter equals the pages of its free page blocks;
 *   FB3 no free page block's buddy is a free block of the same size (they would have merged);
 *   FB4 free page blocks per order equal the page tier's counters;
 *   FK2 the blocks of a span tile it from its first byte to the 16-byte sentinel; sizes are
 *       multiples of 16 and at least 32;
 *   FK5 no two adjacent span blocks are free;
 *   FI3 every free span block falls in a free-space class of the span tier;
 *   FI5 free span blocks per class equal the free index's counters;
 *   FH1 live blocks (used + quarantined), their bytes and usable bytes equal the counters;
 *   FH2 spans, span bytes and large blocks equal the counters;
 *   FH4 at most one block is the spare span; it is free and covers a whole span;
 *   FF1 free totals (blocks, bytes, page bytes) and the largest free block equal the counters;
 *   FU1 a live span block's user pointer is user_offset bytes in and its usable size the rest;
 *       every live block's user area lies inside the block and honours its alignment;
 *   FU2 (debug dumps) the requested size is at most the usable size;
 *   FQ1 the quarantine record's totals equal the quarantined blocks found;
 *   FS1 every non-zero stack id of a block is in the stack section;
 *   FS2 stack ids are unique;
 *   FP1 every non-zero stack id of a sample (the heap profiler's) is in the stack section;
 *   FC1 free-space classes of one tier do not overlap;
 *   FW1 the writer walked the whole heap (a damaged heap stops the walk; the dump says why).
 * The checker streams the blocks (bounded memory) and reports each violation with the byte
 * offset of the record concerned. */
#ifndef RPDUMP_DUMP_CHECK_H
#define RPDUMP_DUMP_CHECK_H

#include "dump_parser.h"

typedef struct rpd_violation {
    const char *invariant; /* "FK5", ... */
    const char *heap;      /* heap name */
    uint64_t offset;       /* of the record concerned */
    char message[320];
} rpd_violation;

typedef void (*rpd_violation_fn)(const rpd_violation *v, void *arg);

/* Checks every heap of d (or only `only`, if non-NULL). fn receives at most max violations
 * (0 = all), in file order. Returns the number of violations found (all of them, also beyond
 * max), or -1 with err when the dump is malformed. */
long rpd_check(rpd_dump *d, const rpd_heap_info *only, rpd_violation_fn fn, void *arg, size_t max, rpd_error *err);

#endif
