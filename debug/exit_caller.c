#define UNW_LOCAL_ONLY /* this process only: the _UL entry points of libunwind */
#include "exit_caller.h"

#include <libunwind.h>
#include <stdlib.h>

#define MAX_DEPTH 64 /* frames between a destructor and exit() are a handful */

#if defined(__x86_64__)
static const int callee_saved[] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                   UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};
#elif defined(__aarch64__)
static const int callee_saved[] = {UNW_AARCH64_X19, UNW_AARCH64_X20, UNW_AARCH64_X21, UNW_AARCH64_X22,
                                   UNW_AARCH64_X23, UNW_AARCH64_X24, UNW_AARCH64_X25, UNW_AARCH64_X26,
                                   UNW_AARCH64_X27, UNW_AARCH64_X28, UNW_AARCH64_X29};
#else
static const int callee_saved[] = {UNW_REG_IP}; /* none known: the return address only */
#endif

_Static_assert(sizeof callee_saved / sizeof callee_saved[0] <= RP_EXIT_CALLER_REGS, "room for the registers");

int rp_exit_caller_find(rp_exit_caller *out)
{
    out->sp = 0;
    out->nregs = 0;
    unw_proc_info_t exit_info;
    void (*exit_fn)(int) = exit;
    if (unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)(uintptr_t)exit_fn, &exit_info, NULL) != 0)
        return -1;
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0)
        return -1;
    for (int depth = 0; depth < MAX_DEPTH; depth++) {
        unw_proc_info_t info;
        int in_exit = unw_get_proc_info(&cursor, &info) == 0 && info.start_ip == exit_info.start_ip;
        if (unw_step(&cursor) <= 0)
            return -1;
        if (!in_exit)
            continue;
        unw_word_t sp;
        if (unw_get_reg(&cursor, UNW_REG_SP, &sp) != 0 || sp == 0)
            return -1;
        out->sp = (uintptr_t)sp;
        for (size_t i = 0; i < sizeof callee_saved / sizeof callee_saved[0]; i++) {
            unw_word_t v;
            if (unw_get_reg(&cursor, callee_saved[i], &v) == 0)
                out->regs[out->nregs++] = (uintptr_t)v;
        }
        return 0;
    }
    return -1;
}
