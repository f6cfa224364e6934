/* Guard cookies: the leading canary (the last 8 bytes of the block metadata, right before the
 * user area) and the trailer pattern (from the requested size to the end of the usable area;
 * at least 8 bytes, since the core leaves RP_HOOK_SUFFIX bytes of room).
 *
 * Both are derived from the heap's cookie secret and the user pointer, so they differ for
 * every block and cannot be predicted or copied from a neighbour. Every byte has its top bit
 * set: a stray NUL terminator or any ASCII byte never matches, so such a one-byte overflow or
 * underflow is always caught; any other byte value is caught with probability 127/128. */
#ifndef RP_DEBUG_COOKIE_H
#define RP_DEBUG_COOKIE_H

#include <stddef.h>
#include <stdint.h>

/* The leading canary of the block at user. */
uint64_t rp_cookie_lead(uint64_t secret, const void *user);

/* Writes the trailer pattern over [user + requested, end). The caller opens those bytes for
 * the sanitizers; the same holds for the check. */
void rp_cookie_write_trailer(uint64_t secret, void *user, size_t requested, const void *end);

/* The first byte of [user + requested, end) that differs from the trailer pattern (the one
 * an overflow reaches first), or NULL when all hold. */
const unsigned char *rp_cookie_check_trailer(uint64_t secret, const void *user, size_t requested, const void *end);

struct rp_debug_meta;
/* Distance back from user of the byte of the leading canary in *m (a copy of the block's
 * metadata) nearest the user area that differs — the one an underflow reaches first, 1..8 —
 * or 0 when the canary holds. */
unsigned rp_cookie_check_lead(uint64_t secret, const void *user, const struct rp_debug_meta *m);

#endif
