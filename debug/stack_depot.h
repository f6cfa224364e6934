/* The stack depot: a process-wide, deduplicating store of call stacks.
 *
 * Every allocation and free in the debug flavour records its call stack here once; block
 * metadata holds only the 32-bit id. Identical stacks (the common case: a program allocates
 * from a few hundred call sites) share one entry. Memory comes from the OS module, never from
 * a rampart heap, and is never returned (ids stay valid for the life of the process).
 *
 * Lookups take no lock; insertions are serialised by the depot's own lock (taken while a heap
 * lock may be held; the depot never takes a heap lock). Thread-safe.
 *
 * Invariants (checked by rp_depot_check, run by rp_heap_check in the debug flavour; the records
 * they speak about are laid out in depot_record.h):
 *   S1  ids run from 1 to rp_depot_count() without gaps; id i names exactly one stored stack;
 *   S2  every stored stack has 1..RP_STACK_MAX_FRAMES frames and its hash is the hash of its
 *       frames; it is on the chain of bucket (hash mod buckets), and every chain holds only
 *       stacks of its bucket;
 *   S3  no two stored stacks have the same frames (deduplication). */
#ifndef RP_STACK_DEPOT_H
#define RP_STACK_DEPOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RP_STACK_MAX_FRAMES 64

/* Captures the caller's stack (libunwind unw_backtrace), skipping `skip` innermost frames,
 * at most the configured depth; stores it once; returns its id (0 = none / capture off).
 * Frame 0 (skip 0) is the function that called rp_stack_capture. */
uint32_t rp_stack_capture(unsigned skip);

/* Stores frames (deduplicated by hash of the frames); returns the id, 0 on failure
 * (n 0 or above RP_STACK_MAX_FRAMES, or no memory). */
uint32_t rp_depot_put(const uintptr_t *frames, unsigned n);

/* Copies up to max frames of stack `id` into frames; returns how many (0 = unknown id). */
unsigned rp_depot_get(uint32_t id, uintptr_t *frames, unsigned max);

/* Calls fn for every stored stack, in id order; stops and returns fn's value if non-zero. */
int rp_depot_foreach(int (*fn)(uint32_t id, const uintptr_t *frames, unsigned n, void *arg), void *arg);

/* Number of stacks stored. */
size_t rp_depot_count(void);

/* Bytes of OS memory the depot holds. */
size_t rp_depot_bytes(void);

/* Verifies S1..S3. 0, or 1 and a message naming the first violation in why. */
int rp_depot_check(char *why, size_t len);

/* rp_depot_check, skipped when no stack was stored since the last check that passed (the
 * depot only grows): what rp_heap_check runs, so frequent checks stay cheap. */
int rp_depot_check_if_grown(char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
