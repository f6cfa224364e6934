/* How harnesses read sizes, alignments and counts from their input: compact codes whose
 * every value means something, so that every size class, page edge, alignment and absurd
 * value is a few bit flips away. Each harness passes its own table of special values (what
 * is absurd differs: a capped heap may be asked for anything, the process's malloc must only
 * be asked for sizes that either fit or cannot exist). fuzz/seeds.py writes these codes. */
#ifndef RP_FUZZ_SIZE_CODES_H
#define RP_FUZZ_SIZE_CODES_H

#include <stddef.h>
#include <stdint.h>

#define CODE_TABLE(t) (t), (sizeof(t) / sizeof((t)[0]))

/* A 16-bit size: the top three bits choose a range (0: 0..63, 1: 0..1023, 2: 0..8191,
 * 3: x*8, 4: x*64, 5: whole pages, up to 4 MiB or (SMALL_PAGES) 1 MiB, 6: around a page
 * boundary up to 1 MiB), 7 an entry of `special` (the low 13 bits modulo its length). */
enum { LARGE_PAGES = 0x3ff, SMALL_PAGES = 0xff };

static inline size_t size_code(uint16_t v, unsigned page_mask, const size_t *special, size_t nspecial)
{
    size_t x = v & 0x1fff;
    switch (v >> 13) {
    case 0:
        return x & 0x3f;
    case 1:
        return x & 0x3ff;
    case 2:
        return x;
    case 3:
        return x << 3;
    case 4:
        return x << 6;
    case 5:
        return (x & page_mask) << 12; /* whole pages */
    case 6: {                     /* around a page boundary */
        size_t s = (x & 0xff) << 12;
        size_t delta = (x >> 8) * 16; /* 0 .. 496 */
        return s + delta >= 256 ? s + delta - 256 : 0;
    }
    default:
        return special[x % nspecial];
    }
}

/* An alignment byte's low five bits: 0, 1..23 for 2^(v-1) (1 B .. 4 MiB), 24..31 for the
 * eight entries of `special` (not powers of two, or huge). */
static inline size_t align_code(uint8_t v, const size_t special[8])
{
    v &= 31;
    if (v == 0)
        return 0;
    if (v <= 23)
        return (size_t)1 << (v - 1);
    return special[v - 24];
}

/* A count byte: its value below 0xf0, else an entry of `special`. */
static inline size_t count_code(uint8_t n, const size_t *special, size_t nspecial)
{
    return n < 0xf0 ? n : special[(n - 0xf0) % nspecial];
}

#endif
