/* The dump's stack depot in memory: stack id -> frames, for the checker (which ids exist),
 * `sites` and `diff` (frames to print and compare). Its size is bounded by the STACKS section
 * (and the reader's memory cap), never by the number of blocks. */
#ifndef RPDUMP_STACK_TABLE_H
#define RPDUMP_STACK_TABLE_H

#include "dump_parser.h"

typedef struct rpd_stack_table {
    rpd_dump *d;
    size_t count;            /* distinct stacks */
    uint32_t *ids;           /* per stack */
    uint64_t *offsets;       /* per stack: file offset of its record */
    uint32_t *nframes;       /* per stack (NULL when frames are not kept) */
    size_t *first_frame;     /* per stack: index into frames */
    uint64_t *frames;
    size_t nframes_total;
    uint32_t *slots;         /* open addressing: stack index + 1, 0 = empty */
    size_t nslots;
    size_t duplicates;       /* records whose id was already seen (kept: the first) */
    uint64_t duplicate_offset; /* offset of the first such record */
    size_t bytes;            /* allocated, for rpd_free */
} rpd_stack_table;

/* Loads the STACKS section; keep_frames 0 keeps only the ids. Returns 0 or -1 with err. */
int rpd_stack_table_load(rpd_stack_table *t, rpd_dump *d, int keep_frames, rpd_error *err);
void rpd_stack_table_free(rpd_stack_table *t);

/* Index of stack `id`, or -1 (id 0 is never present). */
long rpd_stack_table_find(const rpd_stack_table *t, uint32_t id);

/* Frames of the stack at index i (needs keep_frames). */
static inline const uint64_t *rpd_stack_frames(const rpd_stack_table *t, size_t i, unsigned *n)
{
    *n = t->nframes[i];
    return t->frames + t->first_frame[i];
}

#endif
