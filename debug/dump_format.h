/* The rampart heap dump format, version 1.4 — see debug/DUMP_FORMAT.md for the prose.
 *
 * This file holds the format itself: constants, the record layouts with their encoders and
 * decoders, and the checksum (CRC-32C). The writer (debug/dump_writer.c) and the reader
 * (tools/rpdump) both use it, and it depends on nothing but libc, so the reader can be built
 * and fuzzed without a heap.
 *
 * Every integer is little-endian whatever the host: encoders and decoders go byte by byte,
 * so no layout depends on a compiler's struct padding or on the host's byte order.
 *
 * File layout:
 *
 *     header (32 bytes) | section 0 | section 1 | ... | section table | footer (40 bytes)
 *
 * The sections, the table and the footer tile the file exactly (no gaps, no overlap), and
 * every byte is covered by a checksum: the header and footer by their own CRC field, each
 * section by the CRC in its table entry, the table by the CRC in the footer. So any changed
 * byte is detected. The table sits at the end because the writer streams: it learns a
 * section's length, record count and checksum only after writing it.
 */
#ifndef RPD_DUMP_FORMAT_H
#define RPD_DUMP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define RPD_MAGIC "\x89RPDUMP\n"   /* 8 bytes: \x89 catches 7-bit transfers, \n text mode */
#define RPD_END_MAGIC "\x89RPDEND\n"
#define RPD_MAGIC_BYTES 8
#define RPD_VERSION_MAJOR 1        /* readers refuse a newer major version */
#define RPD_VERSION_MINOR 4        /* minor versions only append fields / add section types */
#define RPD_BYTE_ORDER_LITTLE 1

#define RPD_HEADER_BYTES 32
#define RPD_FOOTER_BYTES 40
#define RPD_ENTRY_BYTES 40         /* one section-table entry */

/* Section types. A reader skips types it does not know (after checking their CRC). */
enum rpd_section_type {
    RPD_SEC_PROCESS = 1,    /* one rpd_process record */
    RPD_SEC_HEAP = 2,       /* one rpd_heap record (per heap) */
    RPD_SEC_REGIONS = 3,    /* rpd_region records (per heap), in the heap's region order */
    RPD_SEC_CLASSES = 4,    /* rpd_class records (per heap): free-space classes and counters */
    RPD_SEC_BLOCKS = 5,     /* rpd_block records (per heap), in address order per region */
    RPD_SEC_QUARANTINE = 6, /* one rpd_quarantine record (per heap) */
    RPD_SEC_STACKS = 7,     /* variable records: the stack depot (process-wide) */
    RPD_SEC_MAPPINGS = 8,   /* variable records: executable mappings (process-wide) */
    RPD_SEC_SAMPLES = 9,    /* rpd_sample records (process-wide): the heap profiler's sampled
                               live blocks (1.3; optional) */
};
#define RPD_NO_HEAP 0xffffffffu /* heap index of process-wide sections */

enum { RPD_FLAG_DEBUG = 1u << 0 }; /* header flags: written by the debug flavour */

/* rpd_sample.flags (1.4): the block lies in the malloc drop-in's slab space, which belongs to
 * the arenas but to no region of a heap, so the blocks sections do not list it. */
enum { RPD_SAMPLE_SLAB = 1u << 0 };

/* Block states and tiers. RPD_STATE_SPAN is a page-tier block handed to the span tier: the
 * span's own blocks (tier SPAN) follow it. */
enum { RPD_STATE_USED = 1, RPD_STATE_FREE = 2, RPD_STATE_QUARANTINED = 3, RPD_STATE_SPAN = 4 };
enum { RPD_TIER_SPAN = 1, RPD_TIER_PAGE = 2 };
enum {
    RPD_BLOCK_DECOMMITTED = 1u << 0, /* free pages of an OS region known not to be resident:
                                        never used since mapped, or given back (madvise) */
    RPD_BLOCK_SPARE_SPAN = 1u << 1,  /* the heap's one spare free span */
};
enum { RPD_REASON_CALL = 0, RPD_REASON_SIGNAL = 1, RPD_REASON_EXIT = 2, RPD_REASON_INTERVAL = 3, RPD_REASON_PEAK = 4 };
enum { RPD_REGION_OS = 1, RPD_REGION_CALLER = 2 };
enum { RPD_HEAP_WALK_INCOMPLETE = 1u << 0 }; /* rpd_heap.dump_flags */

#define RPD_MAX_FRAMES 64      /* frames per stack, at most */
#define RPD_MAX_BUILD_ID 64    /* bytes of a build-id, at most */
#define RPD_MAX_PATH 4095      /* bytes of a mapping's path, at most */
#define RPD_NAME_BYTES 32      /* heap name field, NUL-padded */
#define RPD_EXE_BYTES 256      /* executable path field, NUL-padded (may be truncated) */
#define RPD_NOTE_BYTES 128     /* heap walk error message, NUL-padded */
#define RPD_SPAN_SENTINEL 16   /* bytes at the end of every span that belong to no block */

/* ---- fixed parts ------------------------------------------------------------------------ */

typedef struct rpd_header {
    uint16_t major, minor;
    uint8_t byte_order;    /* RPD_BYTE_ORDER_LITTLE */
    uint8_t pointer_bytes; /* 8 */
    uint16_t header_bytes; /* RPD_HEADER_BYTES */
    uint32_t flags;        /* RPD_FLAG_* */
    uint32_t crc;          /* decode: the stored CRC of bytes 0..27 */
} rpd_header;

typedef struct rpd_footer {
    uint64_t table_offset;
    uint64_t file_bytes;
    uint32_t section_count;
    uint32_t table_crc;
    uint32_t crc; /* decode: the stored CRC of bytes 0..27 */
} rpd_footer;

typedef struct rpd_entry {
    uint32_t type, heap;
    uint64_t offset, length, count;
    uint32_t record_bytes; /* fixed-size records: their size (>= the v1 size); 0 = variable */
    uint32_t crc;
} rpd_entry;

/* ---- records ---------------------------------------------------------------------------- */

#define RPD_PROCESS_BYTES 304
typedef struct rpd_process {
    uint64_t pid;
    uint64_t time;      /* seconds since the epoch */
    uint64_t sequence;  /* the %n of the dump path (0 for direct calls) */
    uint32_t reason;    /* RPD_REASON_* */
    uint32_t page_size;
    char exe[RPD_EXE_BYTES]; /* NUL-terminated after decoding */
    uint32_t time_ns;   /* 1.2: nanoseconds within `time` (bytes 288..291, reserved before);
                           the reader sets RPD_UNRECORDED_NS for older dumps */
} rpd_process;
#define RPD_UNRECORDED_NS UINT32_MAX

#define RPD_HEAP_BYTES 368     /* written since 1.1 */
#define RPD_HEAP_BYTES_1_0 360 /* the 1.0 record, without purge_delay_ms; readers accept both */
#define RPD_UNRECORDED UINT64_MAX /* a field the dump's version does not have */
typedef struct rpd_heap {
    char name[RPD_NAME_BYTES]; /* NUL-terminated after decoding */
    uint64_t address;          /* the heap's control block: identifies it across dumps */
    uint64_t large_threshold, retain_bytes, max_bytes;
    uint32_t config_flags;     /* rp_heap_config.flags */
    uint32_t dump_flags;       /* RPD_HEAP_* */
    /* counters, as rp_heap_stats reports them at the moment of the dump */
    uint64_t bytes_in_use, bytes_usable, blocks_in_use;
    uint64_t bytes_free, blocks_free, largest_free;
    uint64_t span_bytes, spans, large_blocks, page_free_bytes;
    uint64_t regions, region_bytes;
    uint64_t os_bytes, os_bytes_peak, os_released;
    uint64_t alloc_calls, free_calls, blocks_examined, max_examined;
    uint32_t user_offset;      /* span blocks: bytes from block start to user pointer */
    uint32_t page_size;
    char note[RPD_NOTE_BYTES]; /* why the walk stopped, if RPD_HEAP_WALK_INCOMPLETE */
    uint64_t purge_delay_ms;   /* 1.1: rp_heap_config.purge_delay_ms; RPD_UNRECORDED in 1.0 */
} rpd_heap;

#define RPD_REGION_BYTES 72
typedef struct rpd_region {
    uint64_t base, pages, free_pages;
    uint64_t mem_lo, mem_hi;     /* all memory the region occupies (metadata included) */
    uint64_t map_base, map_len;  /* OS mapping (0 for caller memory) */
    uint64_t header;             /* address of the region's header */
    uint32_t kind;               /* RPD_REGION_* */
} rpd_region;

#define RPD_CLASS_BYTES 32
typedef struct rpd_class {
    uint32_t tier;      /* RPD_TIER_*: which free structure the class belongs to */
    uint32_t index;     /* first-level class (span tier) or buddy order (page tier) */
    uint64_t min_bytes; /* smallest block size filed in this class */
    uint64_t max_bytes; /* largest (inclusive) */
    uint64_t blocks;    /* the core's counter of free blocks in the class */
} rpd_class;

#define RPD_BLOCK_BYTES 56
typedef struct rpd_block {
    uint64_t block;      /* first byte, metadata included */
    uint64_t block_size; /* bytes the block occupies */
    uint64_t addr;       /* user pointer (used/quarantined), == block otherwise */
    uint64_t size;       /* usable bytes (used/quarantined), block_size otherwise */
    uint64_t requested;  /* bytes asked for (debug flavour; 0 in release) */
    uint32_t alloc_stack, free_stack; /* stack ids (debug flavour; 0 = none) */
    uint32_t region;     /* index into the heap's regions section */
    uint8_t state;       /* RPD_STATE_* */
    uint8_t tier;        /* RPD_TIER_* */
    uint8_t align_log2;  /* log2 of the alignment asked for (used blocks) */
    uint8_t flags;       /* RPD_BLOCK_* */
} rpd_block;

#define RPD_QUARANTINE_BYTES 32
typedef struct rpd_quarantine {
    uint64_t limit_bytes; /* the quarantine's cap (0 when there is none) */
    uint64_t blocks;      /* quarantined blocks found by the walk */
    uint64_t bytes;       /* their usable bytes */
    uint32_t enabled;     /* 1 in the debug flavour */
} rpd_quarantine;

/* A sampled live block (the heap profiler's): what it stands for is estimated from its size
 * and the sampling rate in force when it was sampled (DUMP_FORMAT.md; the reader's
 * rpd_sample_weight computes it). */
#define RPD_SAMPLE_BYTES 40
#define RPD_AGE_UNKNOWN UINT64_MAX
typedef struct rpd_sample {
    uint64_t addr;   /* user pointer of the sampled block */
    uint64_t size;   /* bytes requested */
    uint64_t rate;   /* mean sampling interval in bytes (Poisson sampling of the allocated bytes);
                        0: every allocation is recorded (the sample stands for itself) */
    uint64_t age_ns; /* nanoseconds from the allocation to the dump; RPD_AGE_UNKNOWN */
    uint32_t stack;  /* allocation stack id (0 = none) */
    uint32_t flags;  /* RPD_SAMPLE_* (1.4); other bits reserved, 0 */
} rpd_sample;

/* Stack record: u32 id, u32 nframes, then nframes u64 return addresses (innermost first). */
#define RPD_STACK_HEAD_BYTES 8
/* Mapping record: the fixed head below, build_id_len bytes of build-id, path_len bytes of
 * path, zero padding to a multiple of 8. */
#define RPD_MAPPING_HEAD_BYTES 40
typedef struct rpd_mapping {
    uint64_t start, end;   /* executable range [start, end) in the dumped process */
    uint64_t load_bias;    /* pc - load_bias = the address inside the ELF file */
    uint64_t file_offset;  /* offset of the segment in the file */
    uint32_t flags;        /* ELF p_flags of the segment */
    uint16_t path_len;
    uint8_t build_id_len;
} rpd_mapping;

static inline uint64_t rpd_mapping_record_bytes(unsigned build_id_len, unsigned path_len)
{
    return ((uint64_t)RPD_MAPPING_HEAD_BYTES + build_id_len + path_len + 7) & ~(uint64_t)7;
}

/* ---- little-endian access --------------------------------------------------------------- */

static inline void rpd_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static inline void rpd_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rpd_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rpd_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rpd_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rpd_get64(const uint8_t *p) { return rpd_get32(p) | (uint64_t)rpd_get32(p + 4) << 32; }

/* ---- encoders and decoders --------------------------------------------------------------
 * Encoders write exactly the record's v1 size and compute embedded CRCs (header, footer).
 * Decoders read the v1 fields from at least that many bytes and never fail: checking the
 * values is the reader's job. */

void rpd_header_encode(const rpd_header *h, uint8_t out[RPD_HEADER_BYTES]);
void rpd_header_decode(const uint8_t in[RPD_HEADER_BYTES], rpd_header *h);
void rpd_footer_encode(const rpd_footer *f, uint8_t out[RPD_FOOTER_BYTES]);
void rpd_footer_decode(const uint8_t in[RPD_FOOTER_BYTES], rpd_footer *f);
void rpd_entry_encode(const rpd_entry *e, uint8_t out[RPD_ENTRY_BYTES]);
void rpd_entry_decode(const uint8_t in[RPD_ENTRY_BYTES], rpd_entry *e);
void rpd_process_encode(const rpd_process *p, uint8_t out[RPD_PROCESS_BYTES]);
void rpd_process_decode(const uint8_t in[RPD_PROCESS_BYTES], rpd_process *p);
void rpd_heap_encode(const rpd_heap *h, uint8_t out[RPD_HEAP_BYTES]);
/* in holds len bytes of the record: RPD_HEAP_BYTES_1_0 or more (fields beyond len are
 * RPD_UNRECORDED). */
void rpd_heap_decode(const uint8_t *in, size_t len, rpd_heap *h);
void rpd_region_encode(const rpd_region *r, uint8_t out[RPD_REGION_BYTES]);
void rpd_region_decode(const uint8_t in[RPD_REGION_BYTES], rpd_region *r);
void rpd_class_encode(const rpd_class *c, uint8_t out[RPD_CLASS_BYTES]);
void rpd_class_decode(const uint8_t in[RPD_CLASS_BYTES], rpd_class *c);
void rpd_block_encode(const rpd_block *b, uint8_t out[RPD_BLOCK_BYTES]);
void rpd_block_decode(const uint8_t in[RPD_BLOCK_BYTES], rpd_block *b);
void rpd_quarantine_encode(const rpd_quarantine *q, uint8_t out[RPD_QUARANTINE_BYTES]);
void rpd_quarantine_decode(const uint8_t in[RPD_QUARANTINE_BYTES], rpd_quarantine *q);
void rpd_sample_encode(const rpd_sample *s, uint8_t out[RPD_SAMPLE_BYTES]);
void rpd_sample_decode(const uint8_t in[RPD_SAMPLE_BYTES], rpd_sample *s);
void rpd_mapping_head_encode(const rpd_mapping *m, uint8_t out[RPD_MAPPING_HEAD_BYTES]);
void rpd_mapping_head_decode(const uint8_t in[RPD_MAPPING_HEAD_BYTES], rpd_mapping *m);

/* Names used in text and JSON output ("used", "span", ...); "?" for unknown values. */
const char *rpd_state_name(unsigned state);
const char *rpd_tier_name(unsigned tier);
const char *rpd_reason_name(unsigned reason);
const char *rpd_region_kind_name(unsigned kind);
const char *rpd_section_name(unsigned type);

/* ---- checksum ----------------------------------------------------------------------------
 * CRC-32C (Castagnoli polynomial, reflected, initial and final XOR 0xffffffff), as used by
 * iSCSI and ext4: rpd_crc32c("123456789") == 0xe3069283. Incremental: pass the previous
 * result as crc (0 to start). */
uint32_t rpd_crc32c(uint32_t crc, const void *data, size_t len);

#endif
