#include "resident.h"

/* The bits of word w that lie in [first, first + n), as a mask. */
static inline uint64_t word_mask(size_t w, size_t first, size_t end)
{
    size_t lo = w << 6, hi = lo + 64;
    size_t a = first > lo ? first - lo : 0;
    size_t b = end < hi ? end - lo : 64;
    uint64_t upper = b == 64 ? ~(uint64_t)0 : (((uint64_t)1 << b) - 1);
    return upper & (~(uint64_t)0 << a);
}

size_t rp_resident_set(uint64_t *bits, size_t first, size_t n)
{
    size_t end = first + n, was_clear = 0;
    for (size_t w = first >> 6; n && (w << 6) < end; w++) {
        uint64_t m = word_mask(w, first, end);
        was_clear += (size_t)__builtin_popcountll(m & ~bits[w]);
        bits[w] |= m;
    }
    return was_clear;
}

size_t rp_resident_clear(uint64_t *bits, size_t first, size_t n)
{
    size_t end = first + n, was_set = 0;
    for (size_t w = first >> 6; n && (w << 6) < end; w++) {
        uint64_t m = word_mask(w, first, end);
        was_set += (size_t)__builtin_popcountll(m & bits[w]);
        bits[w] &= ~m;
    }
    return was_set;
}

size_t rp_resident_count(const uint64_t *bits, size_t first, size_t n)
{
    size_t end = first + n, set = 0;
    for (size_t w = first >> 6; n && (w << 6) < end; w++)
        set += (size_t)__builtin_popcountll(word_mask(w, first, end) & bits[w]);
    return set;
}
