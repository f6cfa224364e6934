/* Symbolising stack frames with dladdr: function + offset for humans, module + offset for
 * offline tools (addr2line -e MODULE OFFSET, or llvm-symbolizer). Functions a program wants
 * named must be in the dynamic symbol table (link executables with -rdynamic); otherwise the
 * frame shows "in ??" with its module offset. Error path only: no allocation, no locks. */
#ifndef RP_DEBUG_SYMBOLIZE_H
#define RP_DEBUG_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* What is known about one frame. Strings stay valid for the life of the process. */
typedef struct rp_frame_info {
    const char *module;      /* path of the module holding the pc, NULL when none */
    uintptr_t module_off;    /* pc - the module's load bias: addr2line -e module (module_off - 1) */
    const char *function;    /* NULL when unknown */
    uintptr_t function_off;  /* pc - the function's start */
    const char *file;        /* source file, NULL when unknown */
    unsigned line;           /* 0 when unknown */
} rp_frame_info;

/* Describes return address pc (looked up at pc - 1, inside the call). */
void rp_symbolize_pc(uintptr_t pc, rp_frame_info *out);

/* Writes "    #index 0xPC in function+0xOFF (module+0xOFF)" and a newline into buf (always
 * NUL-terminated); returns the length written. */
size_t rp_symbolize_frame(unsigned index, uintptr_t pc, char *buf, size_t len);

/* Writes every frame of depot stack id, one line each, into buf (NUL-terminated, truncated at
 * a line boundary); "    <no stack recorded>\n" for id 0 or an unknown id. Returns the length. */
size_t rp_symbolize_stack(uint32_t id, char *buf, size_t len);

#endif
