/* What flame graphs, folded stacks, pprof symbols and timeline legends call a frame: the
 * function when symbolised, else module+0xoffset (the address inside the file), else the
 * raw address. Names come from binaries and dumps, so the label keeps printable ASCII only:
 * other bytes become '?'. */
#ifndef RPDUMP_FRAME_LABEL_H
#define RPDUMP_FRAME_LABEL_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"

/* Writes the frame's label into buf (len >= 32) and returns buf. */
const char *frame_label(char *buf, size_t len, const frame_text *t, uint64_t pc);

/* The file name of the frame's module ("" when the pc is in no dumped mapping). */
const char *frame_module_name(const frame_text *t);

/* Copies s into buf (len bytes, NUL-terminated), keeping printable ASCII and replacing
 * other bytes and any of `avoid` by '?'. Returns buf. */
const char *label_clean(char *buf, size_t len, const char *s, const char *avoid);

#endif
