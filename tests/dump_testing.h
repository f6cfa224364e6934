/* Helpers for the heap dump tests: running rpdump as a subprocess (exit status, output, peak
 * memory), temporary files, reading dumps into memory and re-sealing a dump after a test
 * changed it on purpose (recomputing every checksum, so the change reaches the checks behind
 * them). */
#ifndef RP_TESTS_DUMP_TESTING_H
#define RP_TESTS_DUMP_TESTING_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tool_run {
    int status;      /* exit status, or 128 + signal */
    char *out, *err; /* everything written to stdout / stderr, NUL-terminated */
    long maxrss_kb;  /* peak resident set of the process */
} tool_run;

/* Runs argv (NULL-terminated) with extra environment entries env (NULL-terminated, may be
 * NULL), capturing its output. Returns 0 if it could be run. */
int run_tool(char *const argv[], char *const env[], tool_run *r);
void tool_run_free(tool_run *r);

/* rpdump's path (set from the test's first argument) and a helper running it with up to 8
 * arguments: rpdump_run(&r, "summary", "--json", path, NULL). */
extern const char *rpdump_path;
int rpdump_run(tool_run *r, ...);
int rpdump_runv(tool_run *r, va_list ap);

/* rpdump_run, then parses stdout as JSON (NULL, with a message on stderr, if it is not). */
struct jv *rpdump_json(tool_run *r, ...);

/* The full path of program `name` found in PATH (then /usr/bin), in a static buffer; NULL
 * when there is none. */
const char *find_program(const char *name);

/* Renders the SVG at svg into a PNG at png with rsvg-convert (librsvg, tools/setup.sh), the
 * real renderer the tests hold every picture to. The PNG's pixel size and file size go to
 * the out parameters. Returns 0, or -1 after printing why (renderer missing or failing, not
 * a PNG). */
int svg_render(const char *svg, const char *png, unsigned *width, unsigned *height, size_t *png_bytes);

/* $TEST_TMPDIR/name (static buffer rotation: up to 8 live results). */
const char *tmp_path(const char *name);

/* Reads a whole file; NULL on failure. */
uint8_t *read_file(const char *path, size_t *len);
int write_file(const char *path, const void *data, size_t len);

/* Recomputes every section's CRC in the table, the table's CRC and the footer's CRC of the
 * dump in buf (which must have a readable footer and table). Returns 0 or -1. */
int dump_reseal(uint8_t *buf, size_t len);

/* File offset of table entry i, and the entry itself. */
uint64_t dump_entry_offset(const uint8_t *buf, size_t len, size_t i);
size_t dump_section_count(const uint8_t *buf, size_t len);

#endif
