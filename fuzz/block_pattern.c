/* The fuzz harnesses' block content pattern: see block_pattern.h. */
#include "fuzz/block_pattern.h"

#include <string.h>

NO_FEEDBACK static inline uint64_t pattern_word(uint64_t id, size_t word)
{
    uint64_t x = id * 0x9e3779b97f4a7c15ull + word * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    return x * 0x94d049bb133111ebull;
}

NO_FEEDBACK static inline unsigned char pattern_byte(uint64_t id, size_t i)
{
    return (unsigned char)(pattern_word(id, i / 8) >> (8 * (i % 8)));
}

/* Applies fn to the byte ranges of a block that hold the pattern: all of it up to
 * PATTERN_FULL_FILL, beyond that the first and last 4 KiB and 64 bytes at each page
 * boundary. fn returns the offset of a bad byte or PATTERN_OK; so does this. */
typedef size_t (*range_fn)(unsigned char *p, size_t from, size_t to, uint64_t id);

NO_FEEDBACK static size_t for_each_range(unsigned char *p, size_t usable, size_t limit, uint64_t id, range_fn fn)
{
    if (limit > usable)
        limit = usable;
    if (usable <= PATTERN_FULL_FILL)
        return fn(p, 0, limit, id);
    for (size_t at = 0; at < limit; at += 4096) {
        size_t to = at + (at == 0 ? 4096 : 64);
        size_t bad = fn(p, at, to < limit ? to : limit, id);
        if (bad != PATTERN_OK)
            return bad;
    }
    size_t tail = usable - 4096;
    return tail < limit ? fn(p, tail, limit, id) : PATTERN_OK;
}

NO_FEEDBACK static size_t fill_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        p[i] = pattern_byte(id, i);
    for (; i + 8 <= to; i += 8) {
        uint64_t w = pattern_word(id, i / 8);
        memcpy(p + i, &w, 8);
    }
    for (; i < to; i++)
        p[i] = pattern_byte(id, i);
    return PATTERN_OK;
}

NO_FEEDBACK static size_t verify_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    size_t i = from;
    for (; i < to && (i & 7); i++)
        if (p[i] != pattern_byte(id, i))
            return i;
    for (; i + 8 <= to; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != pattern_word(id, i / 8))
            break; /* the byte loop below finds which byte */
    }
    for (; i < to; i++)
        if (p[i] != pattern_byte(id, i))
            return i;
    return PATTERN_OK;
}

NO_FEEDBACK static size_t zero_range(unsigned char *p, size_t from, size_t to, uint64_t id)
{
    (void)id;
    for (size_t i = from; i < to; i++)
        if (p[i])
            return i;
    return PATTERN_OK;
}

void pattern_fill(unsigned char *p, size_t usable, uint64_t id) { for_each_range(p, usable, usable, id, fill_range); }

size_t pattern_find_bad(const unsigned char *p, size_t usable, size_t limit, uint64_t id)
{
    return for_each_range((unsigned char *)p, usable, limit, id, verify_range);
}

size_t pattern_find_nonzero(const unsigned char *p, size_t len)
{
    return for_each_range((unsigned char *)p, len, len, 0, zero_range);
}
