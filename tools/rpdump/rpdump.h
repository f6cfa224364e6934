/* rpdump: the subcommands and what they share. */
#ifndef RPDUMP_RPDUMP_H
#define RPDUMP_RPDUMP_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dump_parser.h"
#include "json_out.h"

/* Exit codes (documented in tools/rpdump/README.md). */
enum {
    RPDUMP_OK = 0,
    RPDUMP_FOUND = 1,     /* check: invariants violated; diff --fail-on-growth: something grew */
    RPDUMP_BAD_DUMP = 2,  /* the dump is malformed, truncated, or cannot be read */
    RPDUMP_USAGE = 64,
};

#define RPD_MAX_TIMELINE 65536 /* dumps a timeline takes at most */

/* Where the site commands count sites from (sites.h). */
enum { RPD_FROM_AUTO = 0, RPD_FROM_BLOCKS = 1, RPD_FROM_SAMPLES = 2 };

/* Which block states a command looks at (bit 1 << RPD_STATE_*). */
#define STATE_BIT(s) (1u << (s))

typedef struct rpd_options {
    int json;
    const char *heap;          /* --heap NAME: only this heap */
    uint64_t limit;            /* --limit N: at most N rows (0 = all) */
    unsigned states;           /* --state: STATE_BIT mask (0 = the command's default) */
    unsigned tiers;            /* --tier: 1 << RPD_TIER_* mask (0 = all) */
    uint64_t min_size, max_size; /* --min-size / --max-size (usable or free bytes) */
    int have_site;
    uint32_t site;             /* --site ID: allocation stack id */
    unsigned frames;           /* --frames N: frames shown per stack (default 8) */
    const char *symbolizer;    /* --symbolizer auto|none|PATH */
    int all;                   /* diff --all: shrinking sites too */
    const char *output;        /* map, flame, timeline: -o FILE.svg; pprof: -o FILE */
    unsigned width;            /* map, flame, timeline: --width PX */
    int folded;                /* sites --folded: folded stacks */
    int symbols;               /* pprof --symbols: names inside the profile */
    int from;                  /* --from: RPD_FROM_* (site commands' source) */
    uint64_t max_errors;       /* check --max-errors N (default 100) */
    size_t mem_cap;            /* --memory-cap BYTES (default 1 GiB) */
} rpd_options;

/* The defaults of every option (what rpdump uses when the command line says nothing). */
void rpd_options_init(rpd_options *o);

/* An opened dump with its path, for error messages. */
typedef struct rpd_input {
    const char *path;
    rpd_source src;
    rpd_dump dump;
} rpd_input;

/* Prints a malformed-dump error (text to stderr; also a JSON error object on stdout with
 * --json) and returns RPDUMP_BAD_DUMP. */
int rpd_report_error(const rpd_options *o, const char *path, const rpd_error *err);

/* For commands that stream JSON: ends the open document with an "error" member (so it
 * stays valid JSON), prints the error on stderr, returns RPDUMP_BAD_DUMP. */
int rpd_report_error_in_json(json_out *j, const char *path, const rpd_error *err);

/* The heaps a command covers: all, or the one --heap names. */
static inline int rpd_heap_selected(const rpd_options *o, const rpd_heap_info *h)
{
    return !o->heap || strcmp(o->heap, h->rec.name) == 0;
}

/* Writes the JSON fields describing the dump itself (format, version, flavour, pid...). */
void rpd_json_dump_info(json_out *j, const rpd_dump *d, const char *path);
/* Starts a JSON document on stdout about one dump: its opening brace and description. */
void rpd_json_begin(json_out *j, const rpd_dump *d, const char *path);
/* The members "same_program" and "warnings" (an array holding warning, if not empty). */
void rpd_json_program_check(json_out *j, int same_program, const char *warning);
/* One text line describing the dump. */
void rpd_text_dump_info(FILE *f, const rpd_dump *d, const char *path);

int cmd_summary(rpd_input *in, const rpd_options *o);
int cmd_blocks(rpd_input *in, const rpd_options *o);
int cmd_sites(rpd_input *in, const rpd_options *o);
int cmd_diff(rpd_input *a, rpd_input *b, const rpd_options *o);
int cmd_check(rpd_input *in, const rpd_options *o);
int cmd_map(rpd_input *in, const rpd_options *o);
int cmd_flame(rpd_input *in, const rpd_options *o);
int cmd_pprof(rpd_input *in, const rpd_options *o);
/* inputs[0..n): dumps of one program over time, in any order (sorted by time inside). */
int cmd_timeline(rpd_input *inputs, size_t n, const rpd_options *o);

/* A path given on the command line, as the caller meant it: under `bazel run` the working
 * directory is the runfiles tree, and BUILD_WORKING_DIRECTORY names the caller's; a relative
 * path is taken from there. Returns the path to use as a new string (free it), or NULL when
 * path itself is right (or no memory is left for the new one). */
char *rpd_caller_path(const char *path);

#endif
