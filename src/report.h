/* Error reports. Everything the heap detects goes through rp_report_fault(), which calls the
 * one replaceable report function (rp_set_report_fn). Faults are collected while the heap is
 * locked and reported after it is unlocked, so a handler may use the heap. */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stdint.h>

#include "rampart.h"

/* A detected fault, filled under the heap lock. kind 0 = no fault. */
typedef struct rp_fault {
    rp_error_kind kind;
    const void *address;
    const void *block;
    size_t block_size;
    const rp_heap *heap;
    /* Debug flavour: the block's history, filled by the runtime after rp_fault_set (stack
     * depot ids, size asked for); rp_fault_set clears them and the core never sets them. */
    uint32_t alloc_stack, free_stack;
    size_t requested;
    /* 'R' or 'W' when the fault was caught at the access (a guard page: src/malloc/guard_pool.h),
     * 0 when found afterwards (a cookie, a pattern, a header). */
    char access;
    uint32_t access_stack; /* with access: the stack of the faulting access (depot id) */
    char message[160];
} rp_fault;

/* Records a fault (the first one wins if several are recorded). fmt is printf-style;
 * formatting happens only on this error path. */
void rp_fault_set(rp_fault *f, rp_error_kind kind, const rp_heap *h, const void *address,
                  const void *block, size_t block_size, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* For checkers: writes a printf-style message into why (if non-NULL and len > 0, truncated
 * and NUL-terminated) and returns 1, the "invariant violated" result. */
int rp_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Delivers a recorded fault to the report function; no-op when f->kind is 0. */
void rp_report_fault(const rp_fault *f);

/* Reports p, a pointer in no rampart heap that was passed to a function taking a block: a
 * double free when p was a mapped block unmapped recently (rp_mapped_block_freed_recently),
 * an invalid free otherwise. `who` prefixes the message (the entry point, or ""). */
void rp_report_foreign(const void *p, const char *who);

#endif
