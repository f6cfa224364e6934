/* Per-block debug metadata: the RP_HOOK_PREFIX (32) bytes the core reserves immediately
 * before every user pointer (span blocks: after the 16-byte header; large blocks: the end of
 * the lead page), plus the trailer after the requested size.
 *
 *   ... core header | requested | alloc_stack free_stack | state flags seal | canary | user ...
 *                     8 bytes     4 + 4                    2 + 2 + 4          8
 *   ... user[0 .. requested) | trailer pattern up to the end of the usable area ...
 *
 * Invariants of a block the core sees as used (checked by rp_heap_check through
 * rp_hook_check_block, and on every free, realloc and quarantine eviction):
 *   P1  seal == rp_meta_seal(secret, user, requested, alloc_stack, free_stack, state, flags):
 *       the fields below were written by the runtime, not by a stray store;
 *   P2  state is RP_META_LIVE or RP_META_QUARANTINED; a live block has free_stack 0;
 *   P3  requested <= the core's usable size for the block;
 *   P4  canary == rp_cookie_lead(secret, user) (the 8 bytes right before the user area);
 *   P5  every byte from user + requested to the end of the usable area holds the trailer
 *       pattern (cookie.h) — at least RP_HOOK_SUFFIX (8) bytes, byte-precise — unless the
 *       block is quarantined with poisoning on (then P7 covers those bytes);
 *   P6  alloc_stack and free_stack are 0 or ids the stack depot knows (stack_depot.h);
 *   P7  a quarantined block's whole usable area holds the free pattern (when poisoning is on)
 *       and the block is in its heap's quarantine exactly once (Q3/Q4 in quarantine.h).
 * "secret" is the heap's cookie secret (rp_debug_secret). The user area of a live block is
 * the program's and is never checked. */
#ifndef RP_DEBUG_BLOCK_META_H
#define RP_DEBUG_BLOCK_META_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sanitizer_track.h"
#include "src/hooks.h"

enum {
    RP_META_LIVE = 0x4c1f,        /* allocated, owned by the program */
    RP_META_QUARANTINED = 0x9a7e, /* freed by the program, held back by the runtime */
};
enum {
    RP_META_NOT_LEAK = 1u << 0, /* rp_set_not_leak: reachable by design, left out of leak reports */
};

typedef struct rp_debug_meta {
    uint64_t requested;   /* bytes the program asked for (what rp_usable_size answers) */
    uint32_t alloc_stack; /* depot id of the allocating stack (0 = not recorded) */
    uint32_t free_stack;  /* depot id of the freeing stack (quarantined blocks) */
    uint16_t state;       /* RP_META_LIVE / RP_META_QUARANTINED */
    uint16_t flags;       /* RP_META_* flags */
    uint32_t seal;        /* P1 */
    uint64_t canary;      /* P4: last 8 bytes before the user area */
} rp_debug_meta;

_Static_assert(sizeof(rp_debug_meta) == RP_HOOK_PREFIX, "the metadata fills the core's prefix exactly");

static inline rp_debug_meta *rp_meta_of(const void *user)
{
    return (rp_debug_meta *)((char *)user - sizeof(rp_debug_meta));
}

static inline uint32_t rp_meta_seal(uint64_t secret, const void *user, const rp_debug_meta *m)
{
    uint64_t x = secret ^ (uint64_t)(uintptr_t)user;
    x ^= m->requested * 0x9e3779b97f4a7c15ull;
    x ^= ((uint64_t)m->alloc_stack << 32 | m->free_stack) * 0xc2b2ae3d27d4eb4full;
    x ^= ((uint64_t)m->state << 16 | m->flags) * 0x165667b19e3779f9ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint32_t)x;
}

/* Copies the metadata of the block at user (the bytes are opened for ASan / memcheck only
 * for the copy). */
static inline void rp_meta_load(const void *user, rp_debug_meta *out)
{
    const rp_debug_meta *m = rp_meta_of(user);
    rp_san_open(m, sizeof *m);
    memcpy(out, m, sizeof *m);
    rp_san_close_meta(m, sizeof *m);
}

/* Seals *m (P1) and writes it as the metadata of the block at user. */
static inline void rp_meta_store(uint64_t secret, void *user, rp_debug_meta *m)
{
    rp_debug_meta *dst = rp_meta_of(user);
    m->seal = rp_meta_seal(secret, user, m);
    rp_san_open(dst, sizeof *dst);
    memcpy(dst, m, sizeof *dst);
    rp_san_close_meta(dst, sizeof *dst);
}

#endif
