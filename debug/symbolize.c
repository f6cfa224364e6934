#define _GNU_SOURCE
#include "symbolize.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "rampart_debug.h"

void rp_symbolize_pc(uintptr_t pc, rp_frame_info *out)
{
    memset(out, 0, sizeof *out);
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (pc == 0 || dladdr((void *)(pc - 1), &info) == 0)
        return;
    out->module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : NULL;
    out->module_off = pc - (uintptr_t)info.dli_fbase;
    if (info.dli_sname && info.dli_saddr) {
        out->function = info.dli_sname;
        out->function_off = pc - (uintptr_t)info.dli_saddr;
    }
}

size_t rp_symbolize_frame(unsigned index, uintptr_t pc, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    Dl_info info;
    memset(&info, 0, sizeof info);
    /* A return address points after its call; pc - 1 lies in the calling function even when
     * the call is its last instruction. Offsets are printed for pc itself (as ASan does). */
    int found = pc != 0 && dladdr((void *)(pc - 1), &info) != 0;
    const char *module = found && info.dli_fname && info.dli_fname[0] ? info.dli_fname : "<unknown module>";
    uintptr_t module_off = found ? pc - (uintptr_t)info.dli_fbase : pc;
    int n;
    if (found && info.dli_sname && info.dli_saddr)
        n = snprintf(buf, len, "    #%u 0x%lx in %s+0x%lx (%s+0x%lx)\n", index, (unsigned long)pc, info.dli_sname,
                     (unsigned long)(pc - (uintptr_t)info.dli_saddr), module, (unsigned long)module_off);
    else
        n = snprintf(buf, len, "    #%u 0x%lx in ?? (%s+0x%lx)\n", index, (unsigned long)pc, module,
                     (unsigned long)module_off);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

size_t rp_symbolize_stack(uint32_t id, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    unsigned n = rp_depot_get(id, frames, RP_STACK_MAX_FRAMES);
    size_t used = 0;
    buf[0] = 0;
    if (n == 0) {
        int k = snprintf(buf, len, "    <no stack recorded>\n");
        return k < 0 ? 0 : ((size_t)k < len ? (size_t)k : len - 1);
    }
    for (unsigned i = 0; i < n; i++) {
        char line[512];
        size_t k = rp_symbolize_frame(i, frames[i], line, sizeof line);
        if (used + k + 1 > len)
            break;
        memcpy(buf + used, line, k + 1);
        used += k;
    }
    return used;
}

size_t rp_stack_format(uint32_t id, char *buf, size_t len) { return rp_symbolize_stack(id, buf, len); }
