/* The keyed MAC of block headers: the check word of block.h (K1) is the low 32 bits of a
 * keyed pseudorandom function of the header's address and fields, under a per-heap 128-bit
 * secret key. Without the key an attacker can neither forge a header (in memory rampart
 * does not own, or over a neighbour's) nor move, replay or alter one: each guess passes with
 * probability 2^-32, and a failed guess is reported (and aborts by default). Headers an
 * attacker reads tell nothing about the key or about other headers: the function is not
 * linear in anything the attacker controls (the multiply-and-shift mix it replaced was, and a
 * header copied 16 bytes further with prev_size - 16 passed in about half the processes).
 *
 * Two constructions, chosen once per key from what the CPU has when the key is made:
 *   - with AES-NI: four AES rounds (each SubBytes, ShiftRows, MixColumns and a round key) over
 *     the 128-bit message whitened by a first round key, five independent 128-bit round keys
 *     derived from the secret by SipHash (the structure of the Pelican MAC's compression);
 *   - otherwise SipHash-1-3 (siphash.h) of the same 16 bytes under the secret itself.
 * The AES rounds are the cheaper of the two where the CPU has them (docs/BENCHMARKS.md).
 *
 * Where the key lives: a heap's control block (mapped on its own), the arenas' shared key in
 * the library's data, thread caches; never in a region, a span or a block, so no read past a
 * block can reach it. */
#ifndef RP_HEADER_MAC_H
#define RP_HEADER_MAC_H

#include <stdint.h>

#include "siphash.h"

typedef struct rp_mac_key {
    _Alignas(16) unsigned char round_keys[5][16]; /* AES construction */
    rp_sip_key sip;                               /* the secret; SipHash construction */
    int use_aes;                                  /* which construction (fixed per key) */
} rp_mac_key;

/* A fresh key (rp_secret_key128), with the construction the CPU allows. Not for hot paths. */
rp_mac_key rp_mac_key_new(uint64_t salt);

/* The MAC of the 16-byte message m0 || m1 under k (64 bits; callers keep the low 32). */
uint64_t rp_header_mac(const rp_mac_key *k, uint64_t m0, uint64_t m1);

/* Forces the SipHash construction on k (tests: both constructions must hold up on any CPU). */
void rp_mac_key_use_siphash(rp_mac_key *k);

#endif
