/* Is a pointer a live block of one of the malloc drop-in's arenas, and if not, why not? The
 * malloc harnesses check every block they receive with it. Its answer names the cause: a
 * pointer in no rampart memory means the call did not reach rampart's malloc (the harness is
 * linked wrong), while one inside an arena's memory that rampart does not take for a live
 * block points at damage (a header overwritten by its neighbour's overflow) or a block
 * handed out twice, which is a rampart bug, not a harness one. */
#ifndef RP_FUZZ_ARENA_BLOCK_H
#define RP_FUZZ_ARENA_BLOCK_H

#include <stddef.h>

/* NULL when p is a live block of a malloc arena; otherwise writes why not into buf (len
 * bytes) and returns buf. */
const char *arena_block_problem(const void *p, char *buf, size_t len);

#endif
