/* xorshift64*: a fast pseudo-random generator for choices that need no secret (which
 * quarantined block leaves next, where the heap profiler samples next). The state must never
 * be 0: the caller seeds it with a non-zero value. */
#ifndef RP_XORSHIFT_H
#define RP_XORSHIFT_H

#include <stdint.h>

/* Advances *state and returns the next 64-bit value. */
static inline uint64_t rp_xorshift_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

#endif
