/* The heap's one clock: milliseconds of CLOCK_MONOTONIC, read only by the delayed retention
 * policy (heap.c), on the release of pages above the retention limit, never on a hot path.
 * A vDSO call on Linux (no system call). */
#ifndef RP_CLOCK_H
#define RP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rp_clock_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0; /* cannot happen on Linux; 0 only makes a delay start late */
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
