#include "header_mac.h"

#include "secret.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define RP_MAC_HAS_AES_PATH 1
#else
#define RP_MAC_HAS_AES_PATH 0
#endif

#if RP_MAC_HAS_AES_PATH
static int cpu_has_aes(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AES);
}

/* Compiled for AES-NI whatever the build's flags; only ever run when the key says the CPU has
 * it (use_aes, set from cpuid when the key was made). */
__attribute__((target("aes"))) static uint64_t mac_aes(const rp_mac_key *k, uint64_t m0, uint64_t m1)
{
    const __m128i *rk = (const __m128i *)(const void *)k->round_keys;
    __m128i x = _mm_xor_si128(_mm_set_epi64x((long long)m1, (long long)m0), _mm_load_si128(&rk[0]));
    x = _mm_aesenc_si128(x, _mm_load_si128(&rk[1]));
    x = _mm_aesenc_si128(x, _mm_load_si128(&rk[2]));
    x = _mm_aesenc_si128(x, _mm_load_si128(&rk[3]));
    x = _mm_aesenc_si128(x, _mm_load_si128(&rk[4]));
    return (uint64_t)_mm_cvtsi128_si64(x);
}
#else
static int cpu_has_aes(void) { return 0; }
static uint64_t mac_aes(const rp_mac_key *k, uint64_t m0, uint64_t m1) { return rp_siphash13_2w(&k->sip, m0, m1); }
#endif

rp_mac_key rp_mac_key_new(uint64_t salt)
{
    rp_mac_key k;
    uint64_t raw[2];
    rp_secret_key128(raw, salt);
    k.sip.k0 = raw[0];
    k.sip.k1 = raw[1];
    /* Round keys: SipHash-2-4 of a counter under the secret, two words each, so that they are
     * independent of one another for anyone without the secret. */
    for (unsigned i = 0; i < 5; i++)
        for (unsigned half = 0; half < 2; half++) {
            uint64_t counter = 2 * i + half, w = rp_siphash(&k.sip, &counter, sizeof counter, 2, 4);
            for (unsigned j = 0; j < 8; j++)
                k.round_keys[i][8 * half + j] = (unsigned char)(w >> (8 * j));
        }
    k.use_aes = cpu_has_aes();
    return k;
}

void rp_mac_key_use_siphash(rp_mac_key *k) { k->use_aes = 0; }

uint64_t rp_header_mac(const rp_mac_key *k, uint64_t m0, uint64_t m1)
{
    return k->use_aes ? mac_aes(k, m0, m1) : rp_siphash13_2w(&k->sip, m0, m1);
}
