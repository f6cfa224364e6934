/* The heap profiler's live samples (profile.h): a hash table from a sampled block's user
 * pointer to what was recorded when it was allocated (size, sampling interval, time, stack).
 *
 * Open addressing with linear probing; a removal shifts the records after it back, so there are
 * no tombstones and a lookup stops at the first empty slot. The slots live in memory mapped from
 * the OS (never from a heap: the table is used inside malloc and free), doubled when the table
 * is half full. No lock of its own: the profiler serialises every call (profile.c).
 *
 * Invariants (rp_pt_check):
 *   PT1  cap is 0 (no slots yet) or a power of two >= RP_PT_MIN_CAP, and 2 * count <= cap;
 *   PT2  count is the number of slots holding a record (addr != 0); no two hold the same addr;
 *   PT3  a record is found from its home slot (rp_pt_home) by probing forward (wrapping)
 *        without passing an empty slot. */
#ifndef RP_PROFILE_TABLE_H
#define RP_PROFILE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define RP_PT_MIN_CAP 1024u

/* One live sample. */
typedef struct rp_pt_record {
    uintptr_t addr;    /* the block's user pointer; 0 = an empty slot */
    size_t size;       /* bytes requested */
    size_t rate;       /* mean sampling interval in bytes when it was sampled (0: every allocation) */
    uint64_t alloc_ns; /* CLOCK_MONOTONIC at the allocation */
    uint32_t stack;    /* its stack's id in the stack depot (0 = none) */
    uint32_t pad;
} rp_pt_record;

typedef struct rp_pt_table {
    rp_pt_record *slots; /* cap slots, mapped from the OS */
    size_t cap;          /* PT1 */
    size_t count;        /* PT2 */
} rp_pt_table;

/* The slot a record of addr is looked up from first (PT3). */
size_t rp_pt_home(const rp_pt_table *t, uintptr_t addr);

/* Adds rec (rec->addr != 0); a record of the same address is replaced (a block freed without
 * the profiler seeing it, whose memory was handed out and sampled again). Returns 0, or -1
 * when the table had to grow and the OS refused the memory (nothing changed). */
int rp_pt_insert(rp_pt_table *t, const rp_pt_record *rec);

/* Removes the record of addr into *out (if non-NULL). Returns 1 when there was one, else 0. */
int rp_pt_remove(rp_pt_table *t, uintptr_t addr, rp_pt_record *out);

/* Copies the record of addr into *out (if non-NULL) without removing it. 1 or 0. */
int rp_pt_find(const rp_pt_table *t, uintptr_t addr, rp_pt_record *out);

/* Calls fn for every record (in slot order); stops when fn returns non-zero and returns it. */
int rp_pt_foreach(const rp_pt_table *t, int (*fn)(void *arg, const rp_pt_record *rec), void *arg);

/* Empties the table and gives its memory back. */
void rp_pt_clear(rp_pt_table *t);

/* Bytes of OS memory the table holds. */
size_t rp_pt_bytes(const rp_pt_table *t);

/* Verifies PT1..PT3. 0, or 1 with the first violation in why. */
int rp_pt_check(const rp_pt_table *t, char *why, size_t len);

#endif
