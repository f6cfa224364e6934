/* Bit and alignment helpers. Everything here is a handful of instructions: no division. */
#ifndef RP_BITS_H
#define RP_BITS_H

#include <stddef.h>
#include <stdint.h>

/* Index of the highest set bit; x must be non-zero. */
static inline unsigned rp_fls(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

/* Index of the lowest set bit; x must be non-zero. */
static inline unsigned rp_ctz(uint64_t x) { return (unsigned)__builtin_ctzll(x); }

static inline int rp_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Smallest k with 2^k >= x (0 for x <= 1). */
static inline unsigned rp_ceil_log2(size_t x) { return x <= 1 ? 0 : rp_fls(x - 1) + 1; }

/* a must be a power of two. */
static inline size_t rp_align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }
static inline size_t rp_align_down(size_t x, size_t a) { return x & ~(a - 1); }
static inline uintptr_t rp_ptr_align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

/* Asks for the cache line at p in a writable state, without waiting and without faulting
 * (a hint: any address is fine). On x86-64 it is PREFETCHW, which takes the line exclusive in
 * one step: a line last written by another CPU then needs no second transfer when it is
 * written after being read. CPUs without the instruction execute it as a no-op. */
static inline void rp_prefetch_for_write(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* Asks for the cache line at p to be read soon (shared: a line another CPU keeps writing is
 * not taken from it). A hint, like rp_prefetch_for_write. */
static inline void rp_prefetch_for_read(const void *p) { __builtin_prefetch(p, 0, 3); }

/* A 64-bit mixer (xor-shift-multiply); used for header checks and secrets. */
static inline uint64_t rp_mix64(uint64_t x)
{
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return x;
}

#define RP_LIKELY(x) __builtin_expect(!!(x), 1)
#define RP_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
