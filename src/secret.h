/* Per-heap secrets, mixed into every block header check so a forged or stale header (a
 * pointer rampart never returned, a block freed twice) is recognised. */
#ifndef RP_SECRET_H
#define RP_SECRET_H

#include <stdint.h>

/* A fresh 64-bit secret: process randomness from the kernel (AT_RANDOM) mixed with the
 * clock, a counter and the caller's salt. Never 0. Not for the hot path. */
uint64_t rp_secret_new(uint64_t salt);

/* 16 fresh random bytes for a 128-bit key: the kernel's random generator (getrandom), or
 * two rp_secret_new draws where the kernel refuses. Not for the hot path (a system call). */
void rp_secret_key128(uint64_t out[2], uint64_t salt);

#endif
