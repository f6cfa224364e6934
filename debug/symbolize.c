#define _GNU_SOURCE
#include "symbolize.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dwarf_symbols.h"
#include "src/hooks.h"
#include "rampart_debug.h"
#include "sanitizer_track.h"

#ifdef RP_ASAN
#define RP_SYMBOLIZE_UNDER_ASAN 1
#else
#define RP_SYMBOLIZE_UNDER_ASAN 0
#endif

/* The process's modules for libdw, added as frames in them come up; kept for the life of the
 * process (the strings frames point to live in it). */
static rp_dwarf *process_dwarf;
static int dwarf_unavailable;
static pthread_mutex_t dwarf_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while this thread symbolises: a report raised meanwhile (libdw's allocations run on a
 * rampart heap) is symbolised with dladdr only. Initial-exec: no allocation on access. */
static __thread int symbolising __attribute__((tls_model("initial-exec")));

static void from_dwarf(uintptr_t pc, const struct link_map *lm, uintptr_t bias, rp_frame_info *out)
{
    if (symbolising)
        return;
    symbolising = 1;
    pthread_mutex_lock(&dwarf_lock);
    if (!process_dwarf && !dwarf_unavailable) {
        /* Under Valgrind, memcheck's own traces carry the lines, and libdw's search trees
         * (glibc's tsearch keeps a colour bit in its pointers) would show as possibly lost.
         * Under AddressSanitizer the drop-in is not the process's malloc for other modules:
         * libdw's blocks come from ASan's allocator and some of its frees reach glibc's free,
         * which aborts; ASan's own symbolizer names the lines there. */
        process_dwarf = rp_san_on_valgrind() || RP_SYMBOLIZE_UNDER_ASAN ? NULL : rp_dwarf_new();
        dwarf_unavailable = process_dwarf == NULL;
    }
    if (process_dwarf) {
        uint64_t call = (uint64_t)pc - 1;
        if (!rp_dwarf_has(process_dwarf, call)) {
            /* The main program's link map has no name: its file is /proc/self/exe. */
            const char *path = lm && lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
            rp_dwarf_add_module(process_dwarf, path, bias);
        }
        rp_dwarf_symbol s;
        if (rp_dwarf_lookup(process_dwarf, call, &s) == 0) {
            if (s.function) {
                out->function = s.function;
                out->function_off = (uintptr_t)s.function_off + 1;
            }
            out->inlined = s.inlined;
            out->file = s.file;
            out->line = s.line;
        }
    }
    pthread_mutex_unlock(&dwarf_lock);
    symbolising = 0;
}

void rp_symbolize_pc(uintptr_t pc, rp_frame_info *out)
{
    memset(out, 0, sizeof *out);
    Dl_info info;
    struct link_map *lm = NULL;
    memset(&info, 0, sizeof info);
    /* A return address points after its call; pc - 1 lies in the calling function even when
     * the call is its last instruction. */
    if (pc == 0 || dladdr1((void *)(pc - 1), &info, (void **)&lm, RTLD_DL_LINKMAP) == 0)
        return;
    uintptr_t bias = lm ? (uintptr_t)lm->l_addr : (uintptr_t)info.dli_fbase;
    out->module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : NULL;
    out->module_off = pc - 1 - bias;
    if (info.dli_sname && info.dli_saddr) {
        out->function = info.dli_sname;
        out->function_off = pc - (uintptr_t)info.dli_saddr;
    }
    from_dwarf(pc, lm, bias, out);
}

size_t rp_symbolize_frame(unsigned index, uintptr_t pc, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    rp_frame_info f;
    rp_symbolize_pc(pc, &f);
    char where[40] = "";
    if (f.file)
        snprintf(where, sizeof where, ":%u", f.line);
    const char *module = f.module ? f.module : "<unknown module>";
    uintptr_t module_off = f.module ? f.module_off : pc;
    /* Symbol versions ("@@GLIBC_2.34") are left out, as ASan does. */
    int fn_len = f.function ? (int)strcspn(f.function, "@") : 0;
    int n;
    if (f.inlined && f.function && f.file)
        n = snprintf(buf, len, "    #%u 0x%lx in %s %s%s, inlined in %.*s+0x%lx (%s+0x%lx)\n", index,
                     (unsigned long)pc, f.inlined, f.file, where, fn_len, f.function, (unsigned long)f.function_off,
                     module, (unsigned long)module_off);
    else if (f.function)
        n = snprintf(buf, len, "    #%u 0x%lx in %.*s+0x%lx%s%s%s (%s+0x%lx)\n", index, (unsigned long)pc, fn_len,
                     f.function, (unsigned long)f.function_off, f.file ? " " : "", f.file ? f.file : "", where, module,
                     (unsigned long)module_off);
    else
        n = snprintf(buf, len, "    #%u 0x%lx (%s+0x%lx)\n", index, (unsigned long)pc, module,
                     (unsigned long)module_off);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

#define LINE_MAX_BYTES 1024

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
        char line[LINE_MAX_BYTES];
        size_t k = rp_symbolize_frame(i, frames[i], line, sizeof line);
        if (used + k + 1 > len)
            break;
        memcpy(buf + used, line, k + 1);
        used += k;
    }
    return used;
}

void rp_symbolize_stack_to(rp_sink_buf *b, uint32_t id)
{
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    unsigned n = rp_depot_get(id, frames, RP_STACK_MAX_FRAMES);
    if (n == 0) {
        rp_sink_printf(b, "    <no stack recorded>\n");
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        char line[LINE_MAX_BYTES];
        size_t k = rp_symbolize_frame(i, frames[i], line, sizeof line);
        rp_sink_puts(b, line, k);
    }
}

size_t rp_stack_format(uint32_t id, char *buf, size_t len) { return rp_symbolize_stack(id, buf, len); }
