/* Streaming writer of the dump format: the header, then sections one after the other, then
 * the section table and the footer. Bytes go to a file descriptor through one fixed buffer
 * with write(2); the encoder never allocates (the caller gives it the buffer and the table
 * space), so it can run while a heap is locked, with rampart as the process's malloc.
 *
 * Errors are sticky: the first failing write(2) (or a full table) is remembered, later calls
 * do nothing, and rpd_enc_finish reports it. */
#ifndef RPD_DUMP_ENCODER_H
#define RPD_DUMP_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "dump_format.h"

typedef struct rpd_encoder {
    int fd;
    uint8_t *buf;
    size_t cap, used;      /* buffered bytes not yet written */
    uint64_t offset;       /* file offset of the next byte put */
    rpd_entry *table;
    size_t table_cap, sections;
    int in_section;
    rpd_entry current;     /* the section being written */
    int error;             /* first errno; 0 while all is well */
} rpd_encoder;

/* Starts a dump on fd and buffers the header. buf (cap bytes, at least 256) and table
 * (table_cap entries) must live until rpd_enc_finish. flags: RPD_FLAG_*. */
void rpd_enc_init(rpd_encoder *e, int fd, void *buf, size_t cap, rpd_entry *table, size_t table_cap,
                  uint32_t flags);

/* Opens a section. heap: the heap's index in this dump, or RPD_NO_HEAP. record_bytes: the
 * size of its fixed records, 0 for variable-length ones. A full table sets ENOSPC. */
void rpd_enc_begin(rpd_encoder *e, uint32_t type, uint32_t heap, uint32_t record_bytes);

/* Appends n bytes to the open section. */
void rpd_enc_put(rpd_encoder *e, const void *p, size_t n);

/* Appends n bytes and counts one record. */
void rpd_enc_record(rpd_encoder *e, const void *p, size_t n);

/* Appends one STACKS record (u32 id, u32 n, n u64 frames) and counts it; frames beyond
 * RPD_MAX_FRAMES are dropped. */
void rpd_enc_stack(rpd_encoder *e, uint32_t id, const uintptr_t *frames, unsigned n);

/* Closes the open section (its table entry gets length, count and checksum). */
void rpd_enc_end(rpd_encoder *e);

/* Writes the table and footer and flushes. Returns 0, or -1 with errno set to the first
 * error (EIO-like errors from write(2), ENOSPC for a full table, EINVAL for misuse). */
int rpd_enc_finish(rpd_encoder *e);

#endif
