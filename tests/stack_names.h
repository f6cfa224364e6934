/* Names of the frames of a recorded stack, for tests of the debug flavour: dladdr on each
 * return address - 1 (the call instruction; tests are linked with -rdynamic so their own
 * functions are in the dynamic symbol table). Include after defining _GNU_SOURCE. */
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

/* The function of frame k of depot stack `stack`, or "" past its end. */
static inline const char *top_frame(uint32_t stack, unsigned k)
{
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    unsigned n = rp_depot_get(stack, frames, RP_STACK_MAX_FRAMES);
    return k < n ? function_of(frames[k]) : "";
}

#endif
