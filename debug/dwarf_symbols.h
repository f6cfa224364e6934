/* Function names and source lines for code addresses, from the modules' symbol tables and
 * DWARF line tables, with elfutils' libdw (libdwfl): one symboliser for the debug runtime's
 * reports (symbolize.h, in the process itself) and for rpdump (offline, from a dump's
 * mappings). Separate debug files are found by build-id under /usr/lib/debug (.build-id/xx/
 * yyyy.debug) or by .gnu_debuglink, as libdwfl's standard lookup does; a module without debug
 * information still gets function names from its symbol tables (.symtab, else .dynsym).
 *
 * libdw is loaded with dlopen on first use, so neither the runtime nor rpdump needs it to
 * start: without it rp_dwarf_new returns NULL and callers fall back to what they had.
 * Not thread-safe: one rp_dwarf per thread, or a lock around it. Allocates with malloc. */
#ifndef RP_DEBUG_DWARF_SYMBOLS_H
#define RP_DEBUG_DWARF_SYMBOLS_H

#include <stdint.h>

typedef struct rp_dwarf rp_dwarf;

typedef struct rp_dwarf_symbol {
    const char *function;  /* from the symbol tables; NULL when no symbol covers the address */
    uint64_t function_off; /* address - the symbol's start */
    const char *inlined;   /* the innermost inlined function at the address, or NULL */
    const char *file;      /* source file of the line table's row, NULL when unknown */
    unsigned line;         /* 0 when unknown */
} rp_dwarf_symbol;

/* A new, empty set of modules; NULL when libdw cannot be loaded. */
rp_dwarf *rp_dwarf_new(void);

/* Gives back everything (strings from lookups become invalid). NULL is fine. */
void rp_dwarf_free(rp_dwarf *d);

/* Adds the ELF file at path, loaded with load bias `bias` (runtime address = file address +
 * bias). 0, or -1 (not a readable ELF file, or it overlaps a module already added). */
int rp_dwarf_add_module(rp_dwarf *d, const char *path, uint64_t bias);

/* 1 when addr lies in a module already added. */
int rp_dwarf_has(rp_dwarf *d, uint64_t addr);

/* Describes the code at runtime address addr (for a return address, pass it minus 1, so the
 * call's own line comes out). 0 when addr lies in an added module (fields may still be NULL),
 * -1 otherwise. Strings stay valid until rp_dwarf_free. */
int rp_dwarf_lookup(rp_dwarf *d, uint64_t addr, rp_dwarf_symbol *out);

#endif
