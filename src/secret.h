/* Per-heap secrets, mixed into every block header check so a forged or stale header (a
 * pointer rampart never returned, a block freed twice) is recognised. */
#ifndef RP_SECRET_H
#define RP_SECRET_H

#include <stdint.h>

/* A fresh 64-bit secret: process randomness from the kernel (AT_RANDOM) mixed with the
 * clock, a counter and the caller's salt. Never 0. Not for the hot path. */
uint64_t rp_secret_new(uint64_t salt);

#endif
