/* Synthetic dumps for the tests: a consistent heap (one region, one span, the rest free
 * pages), with stacks and mappings the test chooses, written with the real encoder. Used to
 * test the format and rpdump where a live heap cannot give known stacks (the release
 * flavour records none) or where the test needs to control addresses (diffs across
 * processes). The dumps pass `rpdump check` unless the test asks otherwise. */
#ifndef RP_TESTS_DUMP_SYNTH_H
#define RP_TESTS_DUMP_SYNTH_H

#include <stddef.h>
#include <stdint.h>

typedef struct synth_block {
    uint64_t requested; /* bytes asked for (the block is sized from it) */
    int state;          /* RPD_STATE_USED / FREE / QUARANTINED */
    uint32_t stack;     /* allocation stack id (0 = none) */
} synth_block;

typedef struct synth_stack {
    uint32_t id;
    unsigned n;
    uint64_t frames[8];
} synth_stack;

typedef struct synth_mapping {
    uint64_t start, end, load_bias;
    const char *path;
    const void *build_id; /* build_id_len bytes */
    unsigned build_id_len;
} synth_mapping;

typedef struct synth_dump {
    int debug;                 /* header flag: requested sizes and stacks are meaningful */
    const char *heap_name;
    uint64_t pid;
    uint64_t region_base;      /* aligned to 1 MiB */
    const synth_block *blocks; /* laid out in order in one span; a free tail is added */
    size_t nblocks;
    const synth_stack *stacks;
    size_t nstacks;
    const synth_mapping *maps;
    size_t nmaps;
    int version_1_0;           /* write a 1.0 file: minor version 0, 360-byte heap record */
    uint64_t purge_delay_ms;   /* the heap record's (1.1) */
    const char *exe;           /* the process record's; NULL: "/synthetic/program" */
    uint64_t time;             /* seconds since the epoch; 0: 1700000000 */
    uint32_t time_ns;          /* nanoseconds (1.2) */
    uint64_t sequence;
    int version_1_1;           /* write a 1.1 file: minor version 1, no time_ns */
    int version_1_2;           /* write a 1.2 file: minor version 2 (no samples section either way) */
} synth_dump;

/* Writes the dump to path. Returns 0 or -1. */
int synth_write(const synth_dump *s, const char *path);

/* Bytes of a span block for `requested` bytes (debug layout: 48-byte prefix, 8-byte suffix). */
uint64_t synth_block_size(uint64_t requested);

#endif
