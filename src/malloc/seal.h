/* The hardened profile's seal (hardened.h): every block the drop-in hands out under option
 * hardened=1 keeps the size the program asked for, and bytes past it that nothing may write.
 *
 * A request of n bytes takes a block of at least n + RP_SEAL_TAIL bytes. With U its usable
 * bytes (what malloc_usable_size would say without the seal), the block's last 8 bytes hold
 * the seal word n ^ c, where c = MAC(key, block address) (header_mac.h, under the arenas'
 * block key, a domain of its own); the canary repeats c's bytes over the RP_SEAL_CHECKED bytes
 * after the request and the RP_SEAL_CHECKED bytes before the seal word (all of [n, U - 8)
 * when that is shorter), so an overflow out of the block and an underflow into it from the
 * block above both meet it. The block is checked at its free (and by realloc and
 * malloc_usable_size): a write past the request — a linear overflow of 1 byte or of dozens —
 * changes a canary byte or the seal word, and a seal word that does not decode to a size that
 * fits is reported as well. Without the key neither c nor a seal can be forged: a blind guess
 * passes with probability 2^-64, and a failed one is reported.
 *
 * Invariant (checked at every free of a sealed block; rp_seal_open):
 *   HS1  a live block of a hardened process holds, in its last 8 bytes, n ^ c with
 *        n + RP_SEAL_TAIL <= U, and its canary bytes equal c's bytes (byte i of the block, for
 *        n <= i < min(U - 8, n + RP_SEAL_CHECKED) and for max(n, U - 8 - RP_SEAL_CHECKED) <= i
 *        < U - 8, is byte i % 8 of c). */
#ifndef RP_SEAL_H
#define RP_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "src/header_mac.h"

/* Bytes a sealed block needs past its request: at least 8 canary bytes and the seal word. */
#define RP_SEAL_TAIL 16u
/* Canary bytes written and checked at most at each end of a block's slack (the rest of it
 * stays zero). */
#define RP_SEAL_CHECKED 32u

/* The block size to ask for to seal a request of n bytes; SIZE_MAX when n is too big (the
 * allocation then fails as it would have). */
static inline size_t rp_seal_need(size_t n) { return n > SIZE_MAX - RP_SEAL_TAIL ? SIZE_MAX : n + RP_SEAL_TAIL; }

/* Seals block p (usable bytes, at least rp_seal_need(n)) for a request of n bytes. */
void rp_seal_close(const rp_mac_key *k, void *p, size_t n, size_t usable);

/* The request of sealed block p (usable bytes), or SIZE_MAX when HS1 does not hold: then
 * *bad is the first byte found changed (the seal word's first byte when it does not decode). */
size_t rp_seal_open(const rp_mac_key *k, const void *p, size_t usable, const unsigned char **bad);

/* The seal word of block p (usable bytes), read with acquire: 0 while the block is not sealed
 * (fresh, or being freed: rp_seal_clear). */
static inline uint64_t rp_seal_word(const void *p, size_t usable)
{
    return __atomic_load_n((const uint64_t *)(const void *)((const unsigned char *)p + usable - 8), __ATOMIC_ACQUIRE);
}

/* Unseals block p (usable bytes) at its free, before it is wiped: from here on another thread
 * checking it as a neighbour (neighbour_check.h) skips it. */
void rp_seal_clear(void *p, size_t usable);

/* The request the seal word of p decodes to (its canary not read), or SIZE_MAX when it does not
 * fit the block: the checked writes' bound (guarded_memory.h). */
size_t rp_seal_request(const rp_mac_key *k, const void *p, size_t usable);

/* The first damaged byte of p's seal word or of the canary before it (the bytes an underflow
 * from the block above reaches first), or NULL: a neighbour's check (neighbour_check.h). */
const unsigned char *rp_seal_tail_damage(const rp_mac_key *k, const void *p, size_t usable);

/* Reports a broken seal of block p (usable bytes) found by `what` (free, realloc, ...) at bad:
 * a heap-buffer-overflow. */
void rp_seal_report(const void *p, size_t usable, const unsigned char *bad, const char *what);

#endif
