#include "cookie.h"

#include <string.h>

#include "block_meta.h"
#include "src/bits.h"

#define COOKIE_TOP_BITS 0x8080808080808080ull

uint64_t rp_cookie_lead(uint64_t secret, const void *user)
{
    return rp_mix64(secret ^ (uint64_t)(uintptr_t)user) | COOKIE_TOP_BITS;
}

/* The trailer is a different function of the same inputs, so a canary copied from before a
 * user area does not fit after it. */
static inline uint64_t trailer_word(uint64_t secret, const void *user)
{
    return rp_mix64(secret ^ (uint64_t)(uintptr_t)user ^ 0x7472616966657221ull) | COOKIE_TOP_BITS;
}

/* Trailers up to this long are written and checked one 8-byte word at a time; longer ones
 * (the up to a page of slack after a page-tier block) through libc's memcpy and memcmp, which
 * move far more bytes per cycle. */
#define SHORT_TRAILER 64

/* The trailer word as it stands at a position k bytes into the trailer (k mod 8 bytes into
 * the pattern): w rotated right by k mod 8 bytes (little-endian). */
static inline uint64_t word_at(uint64_t w, size_t k)
{
    unsigned shift = (unsigned)(k & 7) * 8;
    return shift ? (w >> shift) | (w << (64 - shift)) : w;
}

/* Byte k of the trailer (k counted from user + requested) is byte k mod 8 of the trailer
 * word: the pattern is the word repeated from the first byte after the requested size. */
void rp_cookie_write_trailer(uint64_t secret, void *user, size_t requested, const void *end)
{
    uint64_t w = trailer_word(secret, user);
    unsigned char *p = (unsigned char *)user + requested;
    const unsigned char *e = end;
    size_t n = (size_t)(e - p);
    if (n > SHORT_TRAILER) {
        /* The pattern has period 8: copy what is written after itself, doubling it. */
        memcpy(p, &w, 8);
        for (size_t done = 8; done < n; done *= 2)
            memcpy(p + done, p, done < n - done ? done : n - done);
        return;
    }
    if (n < 8) { /* not from the core, which leaves RP_HOOK_SUFFIX bytes; kept for safety */
        for (size_t k = 0; k < n; k++)
            p[k] = (unsigned char)(word_at(w, k) & 0xff);
        return;
    }
    /* Whole words, then one last word ending exactly at the end (overlapping the one before). */
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        memcpy(p + k, &w, 8);
    if (k < n) {
        uint64_t last = word_at(w, n - 8);
        memcpy(p + n - 8, &last, 8);
    }
}

/* 1 when the trailer [p, p+n) holds the pattern of w (n >= 8), word by word. */
static inline int short_trailer_intact(const unsigned char *p, size_t n, uint64_t w)
{
    uint64_t v, diff = 0;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        memcpy(&v, p + k, 8);
        diff |= v ^ w;
    }
    if (k < n) {
        memcpy(&v, p + n - 8, 8);
        diff |= v ^ word_at(w, n - 8);
    }
    return diff == 0;
}

const unsigned char *rp_cookie_check_trailer(uint64_t secret, const void *user, size_t requested, const void *end)
{
    uint64_t w = trailer_word(secret, user);
    const unsigned char *p = (const unsigned char *)user + requested;
    const unsigned char *e = end;
    size_t n = (size_t)(e - p);
    /* A long trailer holds the pattern when its first 8 bytes do and every byte equals the one
     * 8 before it (period 8); only a damaged trailer is searched byte by byte below, for the
     * first byte an overflow changed. */
    if (n > SHORT_TRAILER) {
        if (memcmp(p, &w, 8) == 0 && memcmp(p, p + 8, n - 8) == 0)
            return NULL;
    } else if (n >= 8 && RP_LIKELY(short_trailer_intact(p, n, w))) {
        return NULL;
    }
    for (size_t k = 0; k < n; k++)
        if (p[k] != (unsigned char)(word_at(w, k) & 0xff))
            return p + k;
    return NULL;
}

unsigned rp_cookie_check_lead(uint64_t secret, const void *user, const rp_debug_meta *m)
{
    uint64_t want = rp_cookie_lead(secret, user);
    if (RP_LIKELY(m->canary == want))
        return 0;
    const unsigned char *have = (const unsigned char *)&m->canary;
    const unsigned char *expect = (const unsigned char *)&want;
    for (unsigned k = 8; k-- > 0;)
        if (have[k] != expect[k])
            return 8 - k;
    return 0;
}
