#define _GNU_SOURCE
#include "dwarf_symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The libdw functions used, resolved from libdw.so.1 once. */
static struct {
    __typeof__(&dwfl_begin) begin;
    __typeof__(&dwfl_end) end;
    __typeof__(&dwfl_report_begin_add) report_begin_add;
    __typeof__(&dwfl_report_elf) report_elf;
    __typeof__(&dwfl_report_end) report_end;
    __typeof__(&dwfl_addrmodule) addrmodule;
    __typeof__(&dwfl_module_addrinfo) module_addrinfo;
    __typeof__(&dwfl_module_getsrc) module_getsrc;
    __typeof__(&dwfl_lineinfo) lineinfo;
    __typeof__(&dwfl_module_addrdie) module_addrdie;
    __typeof__(&dwarf_getscopes) getscopes;
    __typeof__(&dwarf_tag) tag;
    __typeof__(&dwarf_diename) diename;
    __typeof__(&dwfl_build_id_find_elf) build_id_find_elf;
    __typeof__(&dwfl_standard_find_debuginfo) standard_find_debuginfo;
    __typeof__(&dwfl_offline_section_address) offline_section_address;
} dw;
static int dw_ready;
static pthread_once_t dw_once = PTHREAD_ONCE_INIT;

#define RESOLVE(field, name)                                                                                           \
    do {                                                                                                               \
        *(void **)&dw.field = dlsym(lib, #name);                                                                       \
        if (!dw.field)                                                                                                 \
            return;                                                                                                    \
    } while (0)

static void load(void)
{
    void *lib = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    RESOLVE(begin, dwfl_begin);
    RESOLVE(end, dwfl_end);
    RESOLVE(report_begin_add, dwfl_report_begin_add);
    RESOLVE(report_elf, dwfl_report_elf);
    RESOLVE(report_end, dwfl_report_end);
    RESOLVE(addrmodule, dwfl_addrmodule);
    RESOLVE(module_addrinfo, dwfl_module_addrinfo);
    RESOLVE(module_getsrc, dwfl_module_getsrc);
    RESOLVE(lineinfo, dwfl_lineinfo);
    RESOLVE(module_addrdie, dwfl_module_addrdie);
    RESOLVE(getscopes, dwarf_getscopes);
    RESOLVE(tag, dwarf_tag);
    RESOLVE(diename, dwarf_diename);
    RESOLVE(build_id_find_elf, dwfl_build_id_find_elf);
    RESOLVE(standard_find_debuginfo, dwfl_standard_find_debuginfo);
    RESOLVE(offline_section_address, dwfl_offline_section_address);
    dw_ready = 1;
}

struct rp_dwarf {
    Dwfl *dwfl;
    Dwfl_Callbacks callbacks;
    char *debuginfo_path; /* NULL: libdwfl's default search (with /usr/lib/debug) */
};

rp_dwarf *rp_dwarf_new(void)
{
    pthread_once(&dw_once, load);
    if (!dw_ready)
        return NULL;
    rp_dwarf *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->callbacks.find_elf = dw.build_id_find_elf;
    d->callbacks.find_debuginfo = dw.standard_find_debuginfo;
    d->callbacks.section_address = dw.offline_section_address;
    d->callbacks.debuginfo_path = &d->debuginfo_path;
    d->dwfl = dw.begin(&d->callbacks);
    if (!d->dwfl) {
        free(d);
        return NULL;
    }
    return d;
}

void rp_dwarf_free(rp_dwarf *d)
{
    if (!d)
        return;
    dw.end(d->dwfl);
    free(d);
}

int rp_dwarf_add_module(rp_dwarf *d, const char *path, uint64_t bias)
{
    if (!d || !path || !path[0])
        return -1;
    dw.report_begin_add(d->dwfl);
    /* A module that overlaps one already there is refused (a failed report would also spoil
     * the earlier one): callers check rp_dwarf_has first. */
    Dwfl_Module *m = dw.report_elf(d->dwfl, path, path, -1, (GElf_Addr)bias, false);
    dw.report_end(d->dwfl, NULL, NULL);
    return m ? 0 : -1;
}

int rp_dwarf_has(rp_dwarf *d, uint64_t addr) { return d && dw.addrmodule(d->dwfl, (Dwarf_Addr)addr) != NULL; }

/* The innermost function (inlined or not) whose code holds addr, from the DWARF scopes. */
static const char *innermost_function(Dwfl_Module *m, Dwarf_Addr addr, int *inlined)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dw.module_addrdie(m, addr, &bias);
    if (!cu)
        return NULL;
    Dwarf_Die *scopes = NULL;
    int n = dw.getscopes(cu, addr - bias, &scopes);
    const char *name = NULL;
    for (int i = 0; i < n && !name; i++) {
        int tag = dw.tag(&scopes[i]);
        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
            name = dw.diename(&scopes[i]);
            *inlined = tag == DW_TAG_inlined_subroutine;
        }
    }
    free(scopes);
    return name;
}

int rp_dwarf_lookup(rp_dwarf *d, uint64_t addr, rp_dwarf_symbol *out)
{
    memset(out, 0, sizeof *out);
    Dwfl_Module *m = d ? dw.addrmodule(d->dwfl, (Dwarf_Addr)addr) : NULL;
    if (!m)
        return -1;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dw.module_addrinfo(m, (GElf_Addr)addr, &off, &sym, NULL, NULL, NULL);
    if (name && name[0]) {
        out->function = name;
        out->function_off = off;
    }
    Dwfl_Line *line = dw.module_getsrc(m, (Dwarf_Addr)addr);
    if (line) {
        int lineno = 0;
        const char *file = dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (file && file[0] && lineno > 0) {
            out->file = file;
            out->line = (unsigned)lineno;
        }
        int inlined = 0;
        const char *inner = innermost_function(m, (Dwarf_Addr)addr, &inlined);
        if (inner && inlined)
            out->inlined = inner;
        else if (inner && !out->function)
            out->function = inner; /* a symbol-less function the DWARF names */
    }
    return 0;
}
