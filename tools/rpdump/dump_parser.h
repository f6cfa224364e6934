/* Reading rampart dumps (debug/DUMP_FORMAT.md), treating every byte as hostile.
 *
 * rpd_open checks everything that has a fixed size: header, footer, section table (the
 * sections must tile the file), every section's CRC-32C, the per-heap grouping, the small
 * sections (process, heaps, regions, classes, quarantine, mappings) and the framing of every
 * stack record. Blocks and stacks are then read streaming, through a fixed 64 KiB buffer, so a
 * dump of a million blocks is processed in bounded memory; each record is decoded and its
 * enumerations and indexes checked as it is read.
 *
 * Every error carries the byte offset where it was found. Memory the reader allocates is
 * counted against a cap (rpd_open's mem_cap), so a dump cannot make it allocate more than
 * that, and every loop is bounded by the file's size. */
#ifndef RPDUMP_DUMP_PARSER_H
#define RPDUMP_DUMP_PARSER_H

#include <stddef.h>
#include <stdint.h>

#include "debug/dump_format.h"

typedef struct rpd_error {
    uint64_t offset;   /* byte offset in the dump the error is about */
    char message[320]; /* one line, no newline */
} rpd_error;

/* Records an error (the first one wins); returns -1 for `return rpd_fail(...)`. */
int rpd_fail(rpd_error *err, uint64_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Where the bytes come from: a memory buffer or a regular file (read with pread). */
typedef struct rpd_source {
    const uint8_t *data; /* memory source, or NULL */
    int fd;              /* file source, or -1 */
    uint64_t size;
} rpd_source;

void rpd_source_memory(rpd_source *s, const void *data, size_t len);
/* Opens path read-only; -1 with err (offset 0) if it cannot be opened or is not a file. */
int rpd_source_file(rpd_source *s, const char *path, rpd_error *err);
void rpd_source_close(rpd_source *s);

/* Reads exactly len bytes at off; a read past the end is an error naming off. */
int rpd_source_read(const rpd_source *s, uint64_t off, void *buf, size_t len, rpd_error *err);

/* A sequential reader over [pos, end) through a fixed buffer. */
#define RPD_READER_BUFFER ((size_t)64 << 10)
typedef struct rpd_reader {
    const rpd_source *src;
    uint64_t pos, end;      /* next byte to hand out; end of the range */
    uint64_t buf_start;     /* file offset of buf[0] */
    size_t buf_len;
    uint8_t buf[RPD_READER_BUFFER];
} rpd_reader;

void rpd_reader_init(rpd_reader *r, const rpd_source *src, uint64_t start, uint64_t end);
/* Points *p at the next n bytes (n <= RPD_READER_BUFFER) and advances. -1 with err if fewer
 * than n bytes are left in the range. */
int rpd_reader_take(rpd_reader *r, size_t n, const uint8_t **p, rpd_error *err);

/* A mapping record with its variable parts. */
typedef struct rpd_mapping_info {
    rpd_mapping m;
    uint8_t build_id[RPD_MAX_BUILD_ID];
    char *path;       /* NUL-terminated; NUL bytes inside the recorded path end it early */
    uint64_t offset;  /* of the record */
} rpd_mapping_info;

typedef struct rpd_heap_info {
    rpd_heap rec;
    uint32_t index;              /* the heap's index in the dump */
    const rpd_entry *heap_sec, *regions_sec, *classes_sec, *blocks_sec, *quarantine_sec;
    rpd_region *regions;
    size_t nregions;
    rpd_class *classes;          /* sorted by (tier, min_bytes) */
    size_t nclasses;
    rpd_quarantine quarantine;
} rpd_heap_info;

typedef struct rpd_dump {
    rpd_source src;
    rpd_header header;
    rpd_footer footer;
    rpd_entry *sections;
    size_t nsections;
    rpd_process process;
    rpd_heap_info *heaps;
    size_t nheaps;
    const rpd_entry *stacks;     /* the STACKS section */
    const rpd_entry *samples;    /* the SAMPLES section (1.3), or NULL */
    rpd_mapping_info *mappings;  /* sorted by start */
    size_t nmappings;
    size_t mem_used, mem_cap;    /* bytes allocated by the reader, and the cap */
} rpd_dump;

/* Limits beyond which a dump is refused as absurd (documented in DUMP_FORMAT.md). */
#define RPD_MAX_HEAPS 4096
#define RPD_MAX_REGIONS ((size_t)1 << 20)  /* per heap */
#define RPD_MAX_CLASSES 4096               /* per heap */
#define RPD_MAX_MAPPINGS 65536
#define RPD_DEFAULT_MEM_CAP ((size_t)1 << 30)

/* Opens and checks a dump read from src (which must stay valid until rpd_close). mem_cap:
 * bytes the reader may allocate for this dump and anything built on it (0 = default).
 * Returns 0, or -1 with err; rpd_close is needed in both cases. */
int rpd_open(rpd_dump *d, const rpd_source *src, size_t mem_cap, rpd_error *err);
void rpd_close(rpd_dump *d);

/* Allocation counted against the dump's cap: zeroed memory, or NULL with err (naming offset,
 * the place in the dump that asked for it). rpd_free takes the same size back. */
void *rpd_alloc(rpd_dump *d, size_t n, uint64_t offset, rpd_error *err);
void rpd_free(rpd_dump *d, void *p, size_t n);

/* Streaming blocks of one heap, in file order. */
typedef struct rpd_block_iter {
    const rpd_dump *d;
    const rpd_heap_info *heap;
    uint64_t index, count;
    uint32_t record_bytes;
    rpd_reader reader;
} rpd_block_iter;

typedef struct rpd_block_at {
    rpd_block b;
    uint64_t offset; /* of the record */
    uint64_t index;  /* in the heap's blocks section */
} rpd_block_at;

void rpd_blocks_begin(rpd_block_iter *it, const rpd_dump *d, const rpd_heap_info *heap);
/* 1 = *out holds the next block, 0 = no more, -1 = error (bad state, tier, region index...). */
int rpd_blocks_next(rpd_block_iter *it, rpd_block_at *out, rpd_error *err);

/* Streaming stacks (the STACKS section). */
typedef struct rpd_stack {
    uint32_t id;
    unsigned nframes;
    uint64_t frames[RPD_MAX_FRAMES];
    uint64_t offset; /* of the record */
} rpd_stack;

typedef struct rpd_stack_iter {
    const rpd_dump *d;
    uint64_t index, count;
    rpd_reader reader;
} rpd_stack_iter;

void rpd_stacks_begin(rpd_stack_iter *it, const rpd_dump *d);
int rpd_stacks_next(rpd_stack_iter *it, rpd_stack *out, rpd_error *err);

/* Streaming samples (the SAMPLES section; none when the dump has no such section). */
typedef struct rpd_sample_iter {
    const rpd_dump *d;
    uint64_t index, count;
    uint32_t record_bytes;
    rpd_reader reader;
} rpd_sample_iter;

typedef struct rpd_sample_at {
    rpd_sample s;
    uint64_t offset; /* of the record */
    uint64_t index;
} rpd_sample_at;

void rpd_samples_begin(rpd_sample_iter *it, const rpd_dump *d);
/* 1 = *out holds the next sample, 0 = no more, -1 = error (reserved bits set). */
int rpd_samples_next(rpd_sample_iter *it, rpd_sample_at *out, rpd_error *err);

/* Calls fn for every sample in file order (fn's non-zero return stops the walk). Returns 0,
 * or -1 with err (a malformed record, the memory cap). */
int rpd_samples_each(rpd_dump *d, int (*fn)(const rpd_sample_at *s, void *arg), void *arg, rpd_error *err);

/* The unbiased estimates one sample stands for (DUMP_FORMAT.md, samples): with Poisson
 * sampling of mean interval rate, a block of size bytes is sampled with probability
 * p = 1 - exp(-size / rate), so it stands for 1/p blocks and size/p bytes (rate 0: p = 1).
 * A 0-byte block counts as 1 byte. */
void rpd_sample_weight(const rpd_sample *s, double *blocks, double *bytes);

/* Whether the dump carries sampled blocks. */
static inline int rpd_has_samples(const rpd_dump *d) { return d->samples && d->samples->count > 0; }

/* The mapping holding pc, or NULL. */
const rpd_mapping_info *rpd_mapping_of(const rpd_dump *d, uint64_t pc);

/* Index of the region [base, base + pages*page) of heap h holding addr, or -1. */
long rpd_region_of(const rpd_heap_info *h, uint64_t addr);

/* Index in h->classes of the class of tier `tier` whose range holds size, or -1. */
long rpd_class_of(const rpd_heap_info *h, unsigned tier, uint64_t size);

/* The heap with this name, or NULL. */
const rpd_heap_info *rpd_heap_named(const rpd_dump *d, const char *name);

/* Whether the dump records requested sizes and stacks (debug flavour). */
static inline int rpd_is_debug(const rpd_dump *d) { return (d->header.flags & RPD_FLAG_DEBUG) != 0; }

/* Fuzzing and test entry point: opens the dump in [data, data+len), reads every block of
 * every heap and every stack, and runs the invariant checker, with a memory cap of
 * mem_cap bytes (0 = default). Returns 0 if the dump is well-formed (whether or not its
 * invariants hold; *violations receives their number if non-NULL), -1 with err otherwise. */
int rpd_parse_buffer(const uint8_t *data, size_t len, size_t mem_cap, size_t *violations, rpd_error *err);

#endif
