/* The leak report behind rp_leak_report (rampart_debug.h), for the runtime's exit-time
 * checks (exit_check.c). */
#ifndef RP_DEBUG_LEAK_REPORT_H
#define RP_DEBUG_LEAK_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "src/heap.h"

/* The stack address from which a leak check started in the calling function scans the
 * program's stack. The program's stack is scanned from the entry point's caller up; the entry
 * point's own frame may hold stale copies of pointers the scan looks for (left there by
 * earlier calls at the same depth), so it is left out — except the caller's callee-saved
 * registers, which __builtin_unwind_init makes the prologue push right below the return
 * address (x86-64: at most rbp, rbx, r12-r15: six slots below the return address's), where
 * nothing stale can be; the slot below them is the frame's padding or a local, often stale.
 * Elsewhere the scan starts at a local of the entry point. Use it in the entry point itself. */
#if defined(__x86_64__)
#define RP_CALLER_SP()                                                                                                 \
    __extension__({                                                                                                    \
        __builtin_unwind_init();                                                                                       \
        (uintptr_t)__builtin_dwarf_cfa() - 7 * sizeof(uintptr_t);                                                      \
    })
#else
#define RP_CALLER_SP()                                                                                                 \
    __extension__({                                                                                                    \
        __builtin_unwind_init();                                                                                       \
        volatile uintptr_t marker_ = 0;                                                                                \
        (uintptr_t)&marker_;                                                                                           \
    })
#endif

/* Scans for leaks and reports those of heap `only` (NULL = every heap) to fd (negative = the
 * report destination). The calling thread's stack is read from caller_sp up (RP_CALLER_SP() in
 * the entry point), with regs[0..nregs) as further roots (registers the caller had that are
 * not stored in that range). Returns the number of leaked blocks reported. */
size_t rp_leak_check_from(rp_heap *only, int fd, uintptr_t caller_sp, const uintptr_t *regs, size_t nregs);

#endif
