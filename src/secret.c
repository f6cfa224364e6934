#define _GNU_SOURCE
#include "secret.h"

#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

#include "bits.h"

uint64_t rp_secret_new(uint64_t salt)
{
    static uint64_t counter; /* atomic */
    uint64_t seed[2] = {0, 0};
    const void *at_random = (const void *)getauxval(AT_RANDOM);
    if (at_random)
        memcpy(seed, at_random, sizeof seed);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    uint64_t x = rp_mix64(seed[0] ^ rp_mix64(seed[1] + n * 0x9e3779b97f4a7c15ull));
    x = rp_mix64(x ^ salt ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec);
    return x ? x : 0x5bd1e9955bd1e995ull;
}

void rp_secret_key128(uint64_t out[2], uint64_t salt)
{
    /* Without blocking: a process started before the kernel's pool is ready, or a seccomp
     * filter that refuses the call, takes the fallback. */
    if (getrandom(out, 2 * sizeof out[0], GRND_NONBLOCK) == (ssize_t)(2 * sizeof out[0]))
        return;
    out[0] = rp_secret_new(salt);
    out[1] = rp_secret_new(salt ^ 0x6b65792d68616c66ull);
}
