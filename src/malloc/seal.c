#include "seal.h"

#include <string.h>

#include "malloc_slabs.h"
#include "src/pagemap.h"
#include "src/report.h"

/* Keeps seals apart from header check words under the same key: no header message has this
 * second word (a header's carries its size fields, never all these bits). */
#define SEAL_DOMAIN 0x5365616c65645f21ull

static uint64_t canary_of(const rp_mac_key *k, const void *p)
{
    return rp_header_mac(k, (uint64_t)(uintptr_t)p, SEAL_DOMAIN);
}

/* The canary of a request of n bytes in a block of usable bytes: [n, head_end) after the
 * request and [tail_start, usable - 8) before the seal word (one range when they meet). */
static size_t head_end(size_t n, size_t usable)
{
    size_t end = usable - 8;
    return end - n > RP_SEAL_CHECKED ? n + RP_SEAL_CHECKED : end;
}
static size_t tail_start(size_t n, size_t usable)
{
    size_t end = usable - 8;
    return end - n > RP_SEAL_CHECKED ? end - RP_SEAL_CHECKED : end;
}

/* Eight canary bytes at a time where the block's offset is a multiple of 8 (byte i of a block
 * is byte i % 8 of c, and blocks are 16-byte aligned): stores and loads of whole words, never
 * calls (this library's memcpy is a checked one: guarded_memory.h). */
typedef uint64_t __attribute__((may_alias)) seal_word;

static void fill(unsigned char *b, size_t i, size_t end, uint64_t c)
{
    for (; i < end && (i & 7); i++)
        b[i] = (unsigned char)(c >> (8 * (i & 7)));
    for (; i + 8 <= end; i += 8)
        *(seal_word *)(void *)(b + i) = c;
    for (; i < end; i++)
        b[i] = (unsigned char)(c >> (8 * (i & 7)));
}

/* The first byte of [i, end) of b that is not the canary, or NULL. */
static const unsigned char *differs(const unsigned char *b, size_t i, size_t end, uint64_t c)
{
    for (; i < end && (i & 7); i++)
        if (b[i] != (unsigned char)(c >> (8 * (i & 7))))
            return b + i;
    for (; i + 8 <= end; i += 8)
        if (*(const seal_word *)(const void *)(b + i) != c)
            break; /* the byte loop below finds which */
    for (; i < end; i++)
        if (b[i] != (unsigned char)(c >> (8 * (i & 7))))
            return b + i;
    return NULL;
}

void rp_seal_close(const rp_mac_key *k, void *p, size_t n, size_t usable)
{
    unsigned char *b = p;
    uint64_t c = canary_of(k, p);
    fill(b, n, head_end(n, usable), c);
    fill(b, tail_start(n, usable), usable - 8, c);
    /* The word last, released: a reader that sees it sees the canary (rp_seal_open from another
     * thread, neighbour_check.h). */
    __atomic_store_n((uint64_t *)(void *)(b + usable - 8), (uint64_t)n ^ c, __ATOMIC_RELEASE);
}

void rp_seal_clear(void *p, size_t usable)
{
    __atomic_store_n((uint64_t *)(void *)((unsigned char *)p + usable - 8), 0, __ATOMIC_RELEASE);
}

/* The request the seal word of p decodes to under canary c, or SIZE_MAX when it does not fit. */
static size_t decode(const void *p, size_t usable, uint64_t c)
{
    uint64_t n = rp_seal_word(p, usable) ^ c;
    return usable < RP_SEAL_TAIL || n > usable - RP_SEAL_TAIL ? SIZE_MAX : (size_t)n;
}

size_t rp_seal_request(const rp_mac_key *k, const void *p, size_t usable)
{
    return decode(p, usable, canary_of(k, p));
}

size_t rp_seal_open(const rp_mac_key *k, const void *p, size_t usable, const unsigned char **bad)
{
    const unsigned char *b = p;
    uint64_t c = canary_of(k, p);
    size_t n = decode(p, usable, c);
    const unsigned char *at = n == SIZE_MAX ? b + usable - 8 : differs(b, n, head_end(n, usable), c);
    if (!at && n != SIZE_MAX)
        at = differs(b, tail_start(n, usable), usable - 8, c);
    *bad = at;
    return at ? SIZE_MAX : n;
}

const unsigned char *rp_seal_tail_damage(const rp_mac_key *k, const void *p, size_t usable)
{
    const unsigned char *b = p;
    uint64_t c = canary_of(k, p);
    size_t n = decode(p, usable, c);
    return n == SIZE_MAX ? b + usable - 8 : differs(b, tail_start(n, usable), usable - 8, c);
}

void rp_seal_report(const void *p, size_t usable, const unsigned char *bad, const char *what)
{
    rp_region *r = rp_ms_contains(p) ? NULL : rp_pagemap_lookup(p);
    rp_heap *h = rp_ms_contains(p) ? rp_ms_owner(rp_slab_of(&rp_ms_space, p)) : r ? r->heap : NULL;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_HEAP_BUFFER_OVERFLOW, h, bad, p, usable,
                 "%s(%p): written past the requested size (byte %zu of the %zu-byte block: the hardened "
                 "profile's canary or seal)",
                 what, p, (size_t)(bad - (const unsigned char *)p), usable);
    rp_report_fault(&f);
}
