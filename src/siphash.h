/* SipHash (Aumasson and Bernstein, 2012): a keyed pseudorandom function of a message under a
 * 128-bit secret key, built from add-rotate-xor rounds. Without the key its output cannot be
 * predicted from any number of (message, output) pairs, and it is not linear in anything an
 * attacker controls. Block header check words (header_mac.h) are made with it where the CPU
 * has no AES instructions, and it derives their AES round keys where it has.
 *
 * rp_siphash13_2w is SipHash-1-3 (one compression round per 8-byte word, three finalisation
 * rounds, the variant Python and Rust use for their hash tables) of the 16-byte message
 * m0 || m1 (each little-endian), written out for that fixed length: six rounds in all, no
 * loads. rp_siphash is the general form (any message, any round counts), for the tests that
 * pin the fast form to the published test vectors. */
#ifndef RP_SIPHASH_H
#define RP_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* A 128-bit key. */
typedef struct rp_sip_key {
    uint64_t k0, k1;
} rp_sip_key;

static inline uint64_t rp_rotl64(uint64_t x, unsigned b) { return (x << b) | (x >> (64 - b)); }

typedef struct rp_sip_state {
    uint64_t v0, v1, v2, v3;
} rp_sip_state;

static inline void rp_sip_round(rp_sip_state *s)
{
    s->v0 += s->v1;
    s->v1 = rp_rotl64(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rp_rotl64(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rp_rotl64(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rp_rotl64(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rp_rotl64(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rp_rotl64(s->v2, 32);
}

static inline rp_sip_state rp_sip_init(const rp_sip_key *k)
{
    rp_sip_state s = {k->k0 ^ 0x736f6d6570736575ull, k->k1 ^ 0x646f72616e646f6dull, k->k0 ^ 0x6c7967656e657261ull,
                      k->k1 ^ 0x7465646279746573ull};
    return s;
}

/* One compression round of word m. */
static inline void rp_sip_absorb1(rp_sip_state *s, uint64_t m)
{
    s->v3 ^= m;
    rp_sip_round(s);
    s->v0 ^= m;
}

static inline uint64_t rp_sip_final3(rp_sip_state *s)
{
    s->v2 ^= 0xff;
    rp_sip_round(s);
    rp_sip_round(s);
    rp_sip_round(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* SipHash-1-3 of the 16 bytes m0 || m1. */
static inline uint64_t rp_siphash13_2w(const rp_sip_key *k, uint64_t m0, uint64_t m1)
{
    rp_sip_state s = rp_sip_init(k);
    rp_sip_absorb1(&s, m0);
    rp_sip_absorb1(&s, m1);
    rp_sip_absorb1(&s, (uint64_t)16 << 56); /* the last word: the length, no bytes left over */
    return rp_sip_final3(&s);
}

/* SipHash-c-d of len bytes at msg (the general form; not for hot paths). */
uint64_t rp_siphash(const rp_sip_key *k, const void *msg, size_t len, unsigned c, unsigned d);

#endif
