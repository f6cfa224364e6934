/* For tests of the debug flavour: the names of a recorded stack's frames (dladdr on each
 * return address - 1, the call instruction; tests are linked with -rdynamic so their own
 * functions are in the dynamic symbol table), and a capture at a chosen depth. Include after
 * defining _GNU_SOURCE. */
#ifndef RP_TEST_STACK_NAMES_H
#define RP_TEST_STACK_NAMES_H

#include <dlfcn.h>
#include <stdint.h>

#include "rampart_debug.h"

/* The function holding the call that returns to pc, or "??". */
static inline const char *function_of(uintptr_t pc)
{
    Dl_info info;
    if (!dladdr((void *)(pc - 1), &info) || !info.dli_sname)
        return "??";
    return info.dli_sname;
}

/* A stack captured `levels` frames deeper than the caller (one frame per level: no inlining,
 * no tail call), for checks of the recorded depth. */
static __attribute__((noinline, unused)) uint32_t capture_at_depth(unsigned levels)
{
    uint32_t id = levels ? capture_at_depth(levels - 1) : rp_stack_capture(0);
    __asm__ volatile("" ::: "memory");
    return id;
}

/* The function of frame k of depot stack `stack`, or "" past its end. */
static inline const char *top_frame(uint32_t stack, unsigned k)
{
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    unsigned n = rp_depot_get(stack, frames, RP_STACK_MAX_FRAMES);
    return k < n ? function_of(frames[k]) : "";
}

#endif
