/* Leak suppressions in LeakSanitizer's format, from the file named by the suppressions
 * option: one `leak:PATTERN` per line, `#` comments and blank lines ignored. A leak is
 * suppressed when any frame of its allocation stack has a function name, source file or
 * module path that PATTERN matches: `*` matches any run of characters, a leading `^` and a
 * trailing `$` anchor the match, and otherwise the pattern may match anywhere (as a
 * substring). Lines of other kinds (LeakSanitizer ignores them too) are skipped with a
 * warning. Loaded once per process, into static memory (no allocation).
 *
 * Invariant: every loaded pattern is non-empty and NUL-terminated within its array. */
#ifndef RP_DEBUG_SUPPRESSIONS_H
#define RP_DEBUG_SUPPRESSIONS_H

#include <stddef.h>
#include <stdint.h>

#include "report_sink.h"

#define RP_SUPPRESSIONS_MAX 256
#define RP_SUPPRESSION_LEN 256

/* Index of the first suppression matching one of the frames, or -1. Loads the file on first
 * use (a file that cannot be read gets one warning on the report destination). */
int rp_suppression_match(const uintptr_t *frames, unsigned n);

/* Records that suppression idx hid `count` leaked blocks totalling `bytes`. */
void rp_suppression_used(int idx, size_t count, size_t bytes);

/* Prints LeakSanitizer's "Suppressions used:" table when any was used since the last call,
 * and resets the counts. */
void rp_suppressions_print_used(rp_sink_buf *b);

/* 1 when pattern matches text under the rules above (exposed for tests). */
int rp_suppression_pattern_matches(const char *pattern, const char *text);

#endif
