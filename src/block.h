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
 * check word: a hash of the heap's secret, the header's address and its three other fields.
 * rp_free recomputes it before trusting anything in the header, so a pointer rampart never
 * returned, an interior pointer or a header overwritten by the program is recognised, and a
 * second free finds the FREE bit set. A free block keeps its free-list links in the first
 * 16 bytes after its header (so the minimum block is 32 bytes).
 *
 * Invariants (checked by rp_heap_check for every span):
 *   K1  every header's check word matches (secret, address, prev_size, size, bits);
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

/* The check word of a header at address addr holding these fields: the high half of one
 * 64-bit multiply by an odd constant of (secret ^ addr) + (size:prev_size), XOR bits times
 * another odd constant (mod 2^32). Each step is injective in every field for the others
 * fixed, and a change of any single bit of the product's input changes its high half, so a
 * header that was overwritten, moved to another address or forged without the secret
 * matches with probability about 2^-32. size:prev_size is the header's first 8 bytes as one
 * little-endian word (rp_header_live loads it so), and the second multiply is a 32-bit one
 * by an immediate: free() validates a header on every call, and this keeps it to two loads,
 * one multiply on the critical path and no shifts of the fields. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rp_block_check_word takes size:prev_size as one little-endian word"
#endif
static inline uint32_t rp_block_check_word(uint64_t secret, uintptr_t addr, uint64_t size_prev, uint32_t bits)
{
    uint64_t x = ((secret ^ (uint64_t)addr) + size_prev) ^ (uint32_t)(bits * 0x2545f491u);
    return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32);
}

static inline uint32_t rp_block_check_fields(uint64_t secret, uintptr_t addr, uint32_t prev_size, uint32_t size,
                                             uint32_t bits)
{
    return rp_block_check_word(secret, addr, (uint64_t)size << 32 | prev_size, bits);
}

RP_NO_SANITIZE_ADDRESS
static inline uint32_t rp_block_check_value(uint64_t secret, const rp_block *b)
{
    return rp_block_check_fields(secret, (uintptr_t)b, b->prev_size, b->size, b->bits);
}

RP_NO_SANITIZE_ADDRESS
static inline int rp_block_valid(uint64_t secret, const rp_block *b)
{
    return b->check == rp_block_check_value(secret, b);
}

/* Writes all four header fields (recomputing the check). */
RP_NO_SANITIZE_ADDRESS
static inline void rp_block_write(uint64_t secret, rp_block *b, uint32_t prev_size, uint32_t size,
                                  uint32_t bits)
{
    b->prev_size = prev_size;
    b->size = size;
    b->bits = bits;
    b->check = rp_block_check_value(secret, b);
}

RP_NO_SANITIZE_ADDRESS
static inline void rp_block_reseal(uint64_t secret, rp_block *b)
{
    b->check = rp_block_check_value(secret, b);
}

#endif
