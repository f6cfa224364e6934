/* Symbolising the frames of reports in the process itself: for each return address, the
 * function (symbol tables and DWARF, dwarf_symbols.h; dladdr when libdw is missing), the
 * source file and line of the call (looked up at pc - 1, inside the call), and the module
 * with the call's offset in it, for offline tools (addr2line -e MODULE OFFSET gives the same
 * line). Error path only: allocates (libdw, with malloc) but never under a heap lock, and a
 * report raised while symbolising falls back to dladdr instead of recursing.
 *
 * Frame lines, in the format ASan users know:
 *     #0 0x55d1a2c0363b in make_buffer+0x22 /src/app.c:12 (/srv/app+0x363a)
 *     #1 0x7f3c2a02724a in __libc_start_call_main+0x7a (/lib/x86_64-linux-gnu/libc.so.6+0x27249)
 *     #2 0x7f3c2a0272c0 (/usr/lib/libfoo.so+0x1bf)          no symbol covers the address
 * and, for code inlined into the function of the symbol:
 *     #0 0x... in inner_helper /src/app.c:30, inlined in make_buffer+0x22 (/srv/app+0x363a) */
#ifndef RP_DEBUG_SYMBOLIZE_H
#define RP_DEBUG_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "report_sink.h"

/* What is known about one frame. Strings stay valid for the life of the process. */
typedef struct rp_frame_info {
    const char *module;      /* path of the module holding the pc, NULL when none */
    uintptr_t module_off;    /* the call's address in the module's file: pc - 1 - load bias */
    const char *function;    /* NULL when unknown */
    uintptr_t function_off;  /* pc - the function's start */
    const char *inlined;     /* innermost function inlined at the call, or NULL */
    const char *file;        /* source file of the call, NULL when unknown */
    unsigned line;           /* 0 when unknown */
} rp_frame_info;

/* Describes return address pc. */
void rp_symbolize_pc(uintptr_t pc, rp_frame_info *out);

/* Writes frame line `index` for pc (format above, newline included) into buf (always
 * NUL-terminated); returns the length written. */
size_t rp_symbolize_frame(unsigned index, uintptr_t pc, char *buf, size_t len);

/* Writes every frame of depot stack id, one line each, into buf (NUL-terminated, truncated at
 * a line boundary); "    <no stack recorded>\n" for id 0 or an unknown id. Returns the length. */
size_t rp_symbolize_stack(uint32_t id, char *buf, size_t len);

/* The same, straight into a report being assembled. */
void rp_symbolize_stack_to(rp_sink_buf *b, uint32_t id);

#endif
