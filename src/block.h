/* Blocks of the segregated-fit tier and their 16-byte header.
 *
 * A span (pages from the page tier) is tiled by blocks and ends with a 16-byte sentinel
 * header. Each block starts with this header; the user area follows it (after the debug
 * flavour's prefix, RP_HOOK_PREFIX bytes, which is 0 in release):
 *
 *     | prev_size | size | bits | check | [debug prefix] user data ...          |
 *       4 bytes    4      4      4
 *
 * The header keeps a boundary tag (prev_size) so both neighbours are found in O(1), and a
 * check word: a keyed pseudorandom function (header_mac.h) under the heap's secret key of the
 * header's address and its three other fields.
 * rp_free recomputes it before trusting anything in the header, so a pointer rampart never
 * returned, an interior pointer or a header overwritten by the program is recognised, and a
 * second free finds the FREE bit set. A free block keeps its free-list links in the first
 * 16 bytes after its header (so the minimum block is 32 bytes).
 *
 * Invariants (checked by rp_heap_check for every span):
 *   K1  every header's check word matches (key, address, prev_size, size, bits), and its bits
 *       fit in 16 (RP_HDR_BITS_MAX);
 *   K2  sizes are multiples of 16 and at least RP_MIN_BLOCK; the blocks tile the span from its
 *       first byte exactly up to the sentinel (size 0, bit SENTINEL), the span's last 16 bytes;
 *   K3  prev_size equals the size of the physically previous block (0 for the first block);
 *   K4  bit PREV_FREE equals the FREE bit of the previous block (0 for the first block);
 *   K5  no two adjacent blocks are free (free blocks always coalesce with both neighbours);
 *   K6  a free block is on exactly the free-index list of its size class (free_index.h).
 */
#ifndef RP_BLOCK_H
#define RP_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "bits.h"
#include "hooks.h"
#include "header_mac.h"

typedef struct rp_block {
    uint32_t prev_size; /* bytes of the physically previous block; 0 for the first */
    uint32_t size;      /* bytes of this block, header included; 0 for the sentinel */
    uint32_t bits;      /* RP_BLOCK_* flags | alignment log2 << RP_HDR_ALIGN_SHIFT */
    uint32_t check;     /* rp_block_check_value() */
} rp_block;

_Static_assert(sizeof(rp_block) == 16, "release block header is 16 bytes");

/* Free-list links of a free block, just after its header. */
typedef struct rp_free_links {
    rp_block *next;
    rp_block *prev;
} rp_free_links;

enum {
    RP_HDR_FREE = 1u << 0,
    RP_HDR_PREV_FREE = 1u << 1,
    RP_HDR_SENTINEL = 1u << 2,
};
#define RP_HDR_ALIGN_SHIFT 8
#define RP_HDR_ALIGN_MASK (0x3fu << RP_HDR_ALIGN_SHIFT)

#define RP_GRANULE 16u                       /* block sizes and user pointers are multiples */
#define RP_HEADER ((uint32_t)sizeof(rp_block)) /* 16 */
#define RP_MIN_BLOCK 32u                     /* header + free-list links */
/* Distance from a block's start to its user pointer. */
#define RP_USER_OFFSET (RP_HEADER + RP_HOOK_PREFIX)

_Static_assert(RP_HOOK_PREFIX % RP_GRANULE == 0, "debug prefix keeps user pointers aligned");

/* Helpers that read a header are RP_NO_SANITIZE_ADDRESS like every core function touching
 * block memory: the debug flavour poisons headers under ASan. */
static inline rp_free_links *rp_links(rp_block *b) { return (rp_free_links *)(b + 1); }
RP_NO_SANITIZE_ADDRESS
static inline rp_block *rp_block_next(rp_block *b) { return (rp_block *)((char *)b + b->size); }
RP_NO_SANITIZE_ADDRESS
static inline rp_block *rp_block_prev(rp_block *b) { return (rp_block *)((char *)b - b->prev_size); }
static inline void *rp_block_user(rp_block *b) { return (char *)b + RP_USER_OFFSET; }
static inline rp_block *rp_block_of_user(const void *p) { return (rp_block *)((char *)p - RP_USER_OFFSET); }
RP_NO_SANITIZE_ADDRESS
static inline size_t rp_block_usable(const rp_block *b) { return b->size - RP_USER_OFFSET; }
RP_NO_SANITIZE_ADDRESS
static inline unsigned rp_block_align_log2(const rp_block *b)
{
    return (b->bits & RP_HDR_ALIGN_MASK) >> RP_HDR_ALIGN_SHIFT;
}

/* The check word of a header at address addr holding these fields: the low 32 bits of the
 * heap's header MAC (header_mac.h, a keyed pseudorandom function) of addr << 16 | bits and
 * size:prev_size (the header's first 8 bytes as one little-endian word, as rp_header_live
 * loads them). Without the key, a header that was overwritten, moved to another address or
 * forged matches with probability 2^-32 whatever else the forger knows (other headers
 * included), and no relation between headers (a copy shifted by 16 bytes with prev_size - 16,
 * two fresh headers of one span) holds more often than chance. The message is injective in
 * the fields because header addresses are below 2^48 (the address map covers 47 bits) and a
 * valid header's bits fit in 16 (RP_HDR_BITS_MAX: rp_block_bits_ok). */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rp_block_check_word takes size:prev_size as one little-endian word"
#endif
#define RP_HDR_BITS_MAX 0xffffu

static inline int rp_block_bits_ok(uint32_t bits) { return bits <= RP_HDR_BITS_MAX; }

static inline uint32_t rp_block_check_word(const rp_mac_key *key, uintptr_t addr, uint64_t size_prev, uint32_t bits)
{
    return (uint32_t)rp_header_mac(key, (uint64_t)addr << 16 | bits, size_prev);
}

static inline uint32_t rp_block_check_fields(const rp_mac_key *key, uintptr_t addr, uint32_t prev_size, uint32_t size,
                                             uint32_t bits)
{
    return rp_block_check_word(key, addr, (uint64_t)size << 32 | prev_size, bits);
}

RP_NO_SANITIZE_ADDRESS
static inline uint32_t rp_block_check_value(const rp_mac_key *key, const rp_block *b)
{
    return rp_block_check_fields(key, (uintptr_t)b, b->prev_size, b->size, b->bits);
}

RP_NO_SANITIZE_ADDRESS
static inline int rp_block_valid(const rp_mac_key *key, const rp_block *b)
{
    return rp_block_bits_ok(b->bits) && b->check == rp_block_check_value(key, b);
}

/* Header fields are written under the heap's lock, but read without it by the malloc
 * drop-in's free and usable-size paths (header_snapshot.h), which validate what they read by
 * its check word. Every write is therefore a relaxed atomic store (a plain mov on x86-64), so
 * the racing read is defined behaviour. */
RP_NO_SANITIZE_ADDRESS
static inline void rp_block_store(uint32_t *field, uint32_t value) { __atomic_store_n(field, value, __ATOMIC_RELAXED); }

/* Writes all four header fields (recomputing the check). */
RP_NO_SANITIZE_ADDRESS
static inline void rp_block_write(const rp_mac_key *key, rp_block *b, uint32_t prev_size, uint32_t size,
                                  uint32_t bits)
{
    rp_block_store(&b->prev_size, prev_size);
    rp_block_store(&b->size, size);
    rp_block_store(&b->bits, bits);
    rp_block_store(&b->check, rp_block_check_fields(key, (uintptr_t)b, prev_size, size, bits));
}

RP_NO_SANITIZE_ADDRESS
static inline void rp_block_reseal(const rp_mac_key *key, rp_block *b)
{
    rp_block_store(&b->check, rp_block_check_value(key, b));
}

#endif
