/* Capturing call stacks with libunwind's unw_backtrace, trimmed to the program's own frames.
 *
 * A hook runs several frames below the program's call (hook, core function, public entry
 * point), and how many depends on inlining, so frames are not skipped by count: at start-up
 * the runtime asks libunwind for the address range of every public entry point (rp_alloc,
 * rp_free, rp_realloc, ...), and a captured stack is cut after the last consecutive frame that
 * lies in one of them. With the malloc drop-in linked in (rampart as malloc), the ranges of
 * its malloc, free, calloc, ... are known too, and the cut also crosses the drop-in's internal
 * frames up to the one of those the program called. Frame 0 of a recorded stack is therefore
 * the program's call site (or a wrapper outside rampart, such as C++'s operator new). */
#ifndef RP_DEBUG_BACKTRACE_H
#define RP_DEBUG_BACKTRACE_H

#include <stdint.h>

#include "stack_depot.h"

/* Resolves the entry points' ranges (idempotent, thread-safe). */
void rp_backtrace_init(void);

/* The program's stack at this rampart call, stored in the depot: its id, or 0 when
 * backtraces are off (backtrace_depth=0) or nothing could be captured. For hooks. */
uint32_t rp_backtrace_program_stack(void);

/* The program's stack at the call that is reporting a fault (called under rp_report_fault):
 * cut after rp_report_fault, its caller and any entry points. Captured even when backtraces
 * are off (16 frames then). Returns the depot id or 0. */
uint32_t rp_backtrace_report_stack(const char **entry_name);

#endif
