/* Helpers for rpdump's text output. */
#ifndef RPDUMP_TEXT_OUT_H
#define RPDUMP_TEXT_OUT_H

#include <stddef.h>
#include <stdint.h>

/* "1.5 MiB", "640 B": the short human form of a byte count. Returns buf. */
const char *text_size(char *buf, size_t len, uint64_t bytes);

/* Copies s into buf, replacing bytes outside printable ASCII by '?', so names and paths
 * from a dump cannot send control sequences to a terminal. Returns buf. */
const char *text_clean(char *buf, size_t len, const char *s);

/* Fragmentation of free space: 1 - largest / total, 0 when nothing is free. */
double text_fragmentation(uint64_t largest_free, uint64_t total_free);

#endif
