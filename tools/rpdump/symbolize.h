/* Symbolising stack frames from a dump: with elfutils' libdw when it is installed (the
 * symboliser the debug runtime's reports use, debug/dwarf_symbols.h), else llvm-symbolizer or
 * addr2line when present (found in PATH), else module + offset.
 *
 * A frame's module is the dumped mapping holding it; the address given to the tool is the
 * address inside the ELF file (pc - load bias, minus 1 because frames are return addresses).
 * A module is symbolised only if its file exists, is a regular ELF file and, when the dump
 * recorded a build-id, carries the same build-id: a rebuilt binary would give wrong names.
 * Usage: queue the frames to print (sym_want), resolve them all (sym_run: one tool run per
 * module and batch of addresses), then read the results (sym_get). */
#ifndef RPDUMP_SYMBOLIZE_H
#define RPDUMP_SYMBOLIZE_H

#include "dump_parser.h"
#include "json_out.h"

typedef struct symbolizer symbolizer;

typedef struct frame_text {
    const rpd_mapping_info *module; /* NULL: the pc is in no dumped mapping */
    uint64_t offset;                /* pc - module's load bias (the ELF address) */
    const char *function;           /* NULL when unknown */
    const char *location;           /* "file:line", NULL when unknown */
    const char *note;               /* why it was not symbolised, or NULL */
} frame_text;

/* choice: "auto" (libdw, then llvm-symbolizer, then addr2line, from PATH), "libdw", "none",
 * or a tool's path
 * (an addr2line if its name contains "addr2line", else llvm-symbolizer-compatible). */
symbolizer *sym_new(const char *choice);
void sym_free(symbolizer *s);
void sym_want(symbolizer *s, const rpd_dump *d, uint64_t pc);
void sym_run(symbolizer *s);
void sym_get(symbolizer *s, const rpd_dump *d, uint64_t pc, frame_text *out);

/* Prints one frame as "#i 0xPC in function file:line (module+0xoff)". */
void sym_print_frame(FILE *f, unsigned i, uint64_t pc, const frame_text *t);
/* Writes one frame as a compact JSON object (fields in tools/rpdump/README.md). */
void sym_json_frame(json_out *j, uint64_t pc, const frame_text *t);

#endif
