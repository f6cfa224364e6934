#include "siphash.h"

uint64_t rp_siphash(const rp_sip_key *k, const void *msg, size_t len, unsigned c, unsigned d)
{
    rp_sip_state s = rp_sip_init(k);
    const unsigned char *in = msg;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = 0;
        for (unsigned j = 0; j < 8; j++)
            m |= (uint64_t)in[i + j] << (8 * j);
        s.v3 ^= m;
        for (unsigned r = 0; r < c; r++)
            rp_sip_round(&s);
        s.v0 ^= m;
    }
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; j < (len & 7); j++)
        last |= (uint64_t)in[whole + j] << (8 * j);
    s.v3 ^= last;
    for (unsigned r = 0; r < c; r++)
        rp_sip_round(&s);
    s.v0 ^= last;
    s.v2 ^= 0xff;
    for (unsigned r = 0; r < d; r++)
        rp_sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
