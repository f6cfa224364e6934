#include "slab.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bits.h"
#include "os.h"

/* ---- the space ------------------------------------------------------------------------- */

int rp_slab_space_init(rp_slab_space *s, size_t len)
{
    memset(s, 0, sizeof *s);
    len &= ~(RP_SLAB_BYTES - 1);
    if (len == 0)
        return -1;
    size_t nslabs = len >> RP_SLAB_SHIFT;
    size_t nchunks = (nslabs + RP_SLAB_CHUNK_SLABS - 1) / RP_SLAB_CHUNK_SLABS;
    size_t meta_bytes = nslabs * sizeof(uint64_t), bits_bytes = nslabs * RP_SLAB_WORDS * sizeof(uint64_t);
    size_t desc_bytes = nslabs * sizeof(rp_slab);
    size_t marks_off = rp_align_up(meta_bytes + bits_bytes + desc_bytes + nchunks, RP_OS_PAGE);
    size_t arrays_bytes = marks_off + (len >> 4); /* a cache mark per 16-byte granule */
    /* Chunks aligned to their size: each is whole 2 MiB pages, advised or not (space_take). */
    void *base = rp_os_reserve(len, RP_SLAB_CHUNK_BYTES);
    if (!base)
        return -1;
    char *arrays = rp_os_reserve(arrays_bytes, RP_OS_PAGE);
    if (!arrays) {
        (void)rp_os_unreserve(base, len);
        return -1;
    }
    s->base = (uintptr_t)base;
    s->len = len;
    s->nslabs = nslabs;
    s->meta = (uint64_t *)(void *)arrays;
    s->bits = (uint64_t *)(void *)(arrays + meta_bytes);
    s->desc = (rp_slab *)(void *)(arrays + meta_bytes + bits_bytes);
    s->chunk_used = (uint8_t *)(arrays + meta_bytes + bits_bytes + desc_bytes);
    s->marks = (uint8_t *)(arrays + marks_off);
    s->nchunks = nchunks;
    s->arrays = arrays;
    s->arrays_bytes = arrays_bytes;
    rp_lock_init(&s->lock);
    return 0;
}

void rp_slab_space_fini(rp_slab_space *s)
{
    if (!s->arrays)
        return;
    (void)rp_os_unreserve((void *)s->base, s->len);
    (void)rp_os_unreserve(s->arrays, s->arrays_bytes);
    rp_lock_fini(&s->lock);
    memset(s, 0, sizeof *s);
}

static inline size_t slab_index(const rp_slab_space *s, const rp_slab *d) { return (size_t)(d - s->desc); }

static inline uintptr_t slab_addr(const rp_slab_space *s, const rp_slab *d)
{
    return s->base + ((uintptr_t)slab_index(s, d) << RP_SLAB_SHIFT);
}

/* Slabs of chunk c that hold blocks (the guard slab excluded, S1). */
static size_t chunk_slabs(const rp_slab_space *s, size_t c)
{
    size_t left = s->nslabs - c * RP_SLAB_CHUNK_SLABS;
    size_t n = left < RP_SLAB_CHUNK_SLABS ? left : RP_SLAB_CHUNK_SLABS;
    return s->guard_chunks && n > 1 ? n - 1 : n;
}

/* 1 if slab i was ever handed out (S2), under the space's lock. */
static int slab_used(const rp_slab_space *s, size_t i)
{
    size_t c = i / RP_SLAB_CHUNK_SLABS;
    return c < s->next_chunk && i - c * RP_SLAB_CHUNK_SLABS < s->chunk_used[c];
}

/* A slab for pool: the next one of its chunk (its memory untouched), else of a new chunk,
 * else the last one given back. */
static rp_slab *space_take(rp_slab_space *s, rp_slab_pool *pool)
{
    rp_lock_acquire(&s->lock);
    rp_slab *d = NULL;
    size_t c = pool->chunk - 1; /* SIZE_MAX with no chunk */
    size_t advise = SIZE_MAX;   /* a chunk to advise huge pages for, once the lock is released */
    if (pool->chunk == 0 || s->chunk_used[c] == chunk_slabs(s, c)) {
        c = SIZE_MAX;
        if (s->next_chunk < s->nchunks) {
            c = s->next_chunk++;
            pool->chunk = c + 1;
            /* Not a pool's first chunk: most pools (a thread's arena) hold a few slabs, and
             * the first block written in an advised 2 MiB page faults in all of it (a
             * program of 100 KB of small blocks paid 2 MiB of RSS). A pool that has used up a
             * chunk is a heavy user, for whom one fault per 2 MiB beats one per 4 KiB. */
            if (pool->chunks_taken++ > 0 && s->advise_huge_pages)
                advise = c;
            /* The guard slab: an overflow running out of the chunk faults there. If the OS
             * refuses, the chunk simply has no guard. */
            if (s->guard_chunks && chunk_slabs(s, c) > 0)
                (void)rp_os_make_inaccessible((void *)(s->base + (c << RP_SLAB_CHUNK_SHIFT) +
                                                       (chunk_slabs(s, c) << RP_SLAB_SHIFT)),
                                              RP_SLAB_BYTES);
        }
    }
    if (c != SIZE_MAX) {
        d = &s->desc[c * RP_SLAB_CHUNK_SLABS + s->chunk_used[c]++];
    } else if (s->released) {
        d = s->released;
        s->released = d->next;
        s->released_n--;
    }
    if (d) {
        d->next = NULL;
        __atomic_store_n(&d->pool, pool, __ATOMIC_RELAXED);
        s->slabs_held++;
    }
    rp_lock_release(&s->lock);
    if (advise != SIZE_MAX)
        rp_os_advise_huge_pages((void *)(s->base + (advise << RP_SLAB_CHUNK_SHIFT)),
                                chunk_slabs(s, advise) << RP_SLAB_SHIFT);
    return d;
}

int rp_slab_pool_exhausted(rp_slab_pool *pool)
{
    rp_slab_space *s = pool->space;
    rp_lock_acquire(&s->lock);
    int full = (pool->chunk == 0 || s->chunk_used[pool->chunk - 1] == chunk_slabs(s, pool->chunk - 1)) &&
               s->next_chunk == s->nchunks && !s->released && !pool->empty;
    rp_lock_release(&s->lock);
    return full;
}

/* Gives an empty slab (stride 0, no bit set) back: its memory to the OS, then the slab to
 * the released stack. */
static void space_give(rp_slab_space *s, rp_slab *d)
{
    int refused = rp_os_decommit((void *)slab_addr(s, d), RP_SLAB_BYTES) != 0;
    rp_lock_acquire(&s->lock);
    __atomic_store_n(&d->pool, NULL, __ATOMIC_RELAXED);
    d->prev = NULL;
    d->next = s->released;
    s->released = d;
    s->released_n++;
    s->slabs_held--;
    s->releases++;
    s->decommit_failures += (uint64_t)refused;
    rp_lock_release(&s->lock);
}

const char *rp_slab_describe(const rp_slab_space *s, const void *p, int *is_free)
{
    *is_free = 0;
    uintptr_t off = (uintptr_t)p - s->base;
    size_t slab = off >> RP_SLAB_SHIFT;
    uint64_t m = __atomic_load_n(&s->meta[slab], __ATOMIC_RELAXED);
    if (m == 0)
        return "not in a slab in use";
    uint32_t o = (uint32_t)(off & (RP_SLAB_BYTES - 1)), colour = s->desc[slab].colour;
    if (o < colour)
        return "before the first block of its slab";
    uint32_t i = rp_slab_index((uint32_t)(m >> 32), o - colour), stride = (uint32_t)(m >> 16) & 0xffff;
    if (i >= (uint32_t)(m & 0xffff))
        return "past the last block of its slab";
    if (i * stride != o - colour)
        return "inside a block";
    uint32_t g = o >> 4;
    if (!((__atomic_load_n(&s->bits[slab * RP_SLAB_WORDS + (g >> 6)], __ATOMIC_RELAXED) >> (g & 63)) & 1)) {
        *is_free = 1;
        return "a free block";
    }
    return "a live block";
}

/* ---- slabs ----------------------------------------------------------------------------- */

/* The granules below granule g: a mask of word w. */
static uint64_t below_granule(uint32_t w, uint32_t g)
{
    uint32_t lo = w << 6;
    return g <= lo ? 0 : g - lo >= 64 ? ~0ull : (1ull << (g - lo)) - 1;
}

/* The granules of bitmap word w (granules 64w .. 64w + 63) where a block starts, in a slab
 * whose blocks start at granule c0 (its colour / 16), k granules apart (its stride / 16);
 * recip is the stride's reciprocal (D1). */
static uint64_t start_mask(uint32_t k, uint32_t recip, uint32_t c0, uint32_t w)
{
    uint32_t lo = w << 6;
    if (k == 1)
        return ~below_granule(w, c0);
    uint32_t g = c0;
    if (lo > c0) {
        g = c0 + rp_slab_index(recip, (lo - c0) << 4) * k; /* the last start at or before lo */
        if (g < lo)
            g += k;
    }
    uint64_t mask = 0;
    for (; g < lo + 64; g += k)
        mask |= 1ull << (g - lo);
    return mask;
}

/* The granules below granule g: a mask of word w. */
/* Sets up slab d of space s (empty, stride 0) for class cls: all its blocks fresh. */
static void slab_format(rp_slab_space *s, rp_slab *d, unsigned cls)
{
    uint32_t stride = (uint32_t)rp_slab_stride(cls);
    d->cls = (uint8_t)cls;
    d->stride = stride;
    d->colour = (uint16_t)rp_slab_colour(slab_index(s, d), stride);
    d->nblocks = (uint16_t)((RP_SLAB_BYTES - d->colour) / stride); /* set-up only: no division on free */
    d->live = 0;
    d->fresh = 0;
    d->scan = 0;
    d->on_avail = 0;
    d->next = d->prev = NULL;
    __atomic_store_n(&s->meta[slab_index(s, d)], rp_slab_meta_of(stride, d->nblocks), __ATOMIC_RELAXED);
}

/* Makes an empty slab (no bit set) hold no class (D5's state): free() then refuses every
 * pointer into it. */
static void slab_unformat(rp_slab_space *s, rp_slab *d)
{
    __atomic_store_n(&s->meta[slab_index(s, d)], 0, __ATOMIC_RELAXED);
    d->stride = 0;
    d->nblocks = 0;
    d->colour = 0;
    d->live = d->fresh = 0;
    d->scan = 0;
    d->on_avail = 0;
    d->next = d->prev = NULL;
}

static void avail_push(rp_slab_pool *pool, rp_slab *d)
{
    rp_slab **head = &pool->avail[d->cls];
    d->prev = NULL;
    d->next = *head;
    if (*head)
        (*head)->prev = d;
    *head = d;
    d->on_avail = 1;
}

static void avail_remove(rp_slab_pool *pool, rp_slab *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        pool->avail[d->cls] = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->next = d->prev = NULL;
    d->on_avail = 0;
}

/* A slab for class cls: a kept empty one, else one from the space. NULL when none is left. */
static rp_slab *pool_new_slab(rp_slab_pool *pool, unsigned cls)
{
    rp_slab *d = pool->empty;
    if (d) {
        pool->empty = d->next;
        pool->empty_n--;
    } else {
        d = space_take(pool->space, pool);
        if (!d)
            return NULL;
        pool->slabs++;
    }
    slab_format(pool->space, d, cls);
    return d;
}

/* Slab d has no live block left and is not its class's current slab: kept or released. */
static void pool_retire(rp_slab_pool *pool, rp_slab *d)
{
    if (d->on_avail)
        avail_remove(pool, d);
    slab_unformat(pool->space, d);
    if (pool->empty_n < pool->keep_empty) {
        d->next = pool->empty;
        pool->empty = d;
        pool->empty_n++;
        return;
    }
    pool->slabs--;
    space_give(pool->space, d);
}

void rp_slab_pool_init(rp_slab_pool *pool, rp_slab_space *s, size_t keep_empty)
{
    memset(pool, 0, sizeof *pool);
    pool->space = s;
    pool->keep_empty = keep_empty;
}

size_t rp_slab_take_recycled(rp_slab_pool *pool, unsigned cls, void **out, size_t n)
{
    size_t got = 0;
    const uint32_t stride = (uint32_t)rp_slab_stride(cls), k = stride >> 4;
    while (got < n && pool->avail[cls]) {
        rp_slab *d = pool->avail[cls];
        uintptr_t base = slab_addr(pool->space, d);
        uint64_t *map = rp_slab_bits(pool->space, d);
        uint32_t recip = (uint32_t)(pool->space->meta[slab_index(pool->space, d)] >> 32);
        uint32_t c0 = d->colour >> 4;
        uint32_t fresh_g = c0 + (uint32_t)d->fresh * k; /* the granules up to the fresh mark */
        uint32_t words = (fresh_g + 63) >> 6;
        uint32_t w = d->scan;
        size_t before = got;
        /* D3: a free block lies below fresh, and D2: not in the words below scan. */
        for (; w < words && got < n; w++) {
            uint64_t bits = map[w];
            uint64_t freebits = ~bits & start_mask(k, recip, c0, w) & below_granule(w, fresh_g);
            while (freebits && got < n) {
                unsigned b = rp_ctz(freebits);
                freebits &= freebits - 1;
                bits |= 1ull << b;
                out[got++] = (void *)(base + ((uintptr_t)((w << 6) + b) << 4));
            }
            __atomic_store_n(&map[w], bits, __ATOMIC_RELAXED);
            if (freebits)
                break; /* n reached with free blocks left in this word */
        }
        d->scan = (uint8_t)w; /* D2: the words passed have no free block below fresh */
        d->live = (uint16_t)(d->live + (got - before));
        pool->blocks_live += got - before;
        pool->bytes_live += (got - before) * stride;
        pool->taken += got - before;
        if (d->live == d->fresh)
            avail_remove(pool, d);
    }
    return got;
}

size_t rp_slab_take_fresh(rp_slab_pool *pool, unsigned cls, size_t n, void **first)
{
    rp_slab *d = pool->cur[cls];
    if (!d) {
        d = pool_new_slab(pool, cls);
        if (!d)
            return 0;
        pool->cur[cls] = d;
    }
    uint32_t lo = d->fresh, left = (uint32_t)d->nblocks - lo;
    uint32_t k = n < left ? (uint32_t)n : left;
    uint64_t *map = rp_slab_bits(pool->space, d);
    for (uint32_t g = (d->colour >> 4) + lo * (d->stride >> 4), j = 0; j < k; j++, g += d->stride >> 4)
        __atomic_store_n(&map[g >> 6], map[g >> 6] | 1ull << (g & 63), __ATOMIC_RELAXED);
    d->fresh = (uint16_t)(lo + k);
    d->live = (uint16_t)(d->live + k);
    pool->blocks_live += k;
    pool->bytes_live += (size_t)k * d->stride;
    pool->taken += k;
    if (d->fresh == d->nblocks)
        pool->cur[cls] = NULL;
    *first = (void *)(slab_addr(pool->space, d) + d->colour + (uintptr_t)lo * d->stride);
    return k;
}

void rp_slab_give_back(rp_slab_pool *pool, void *const *blocks, size_t n)
{
    rp_slab_space *s = pool->space;
    for (size_t k = 0; k < n; k++) {
        uintptr_t off = (uintptr_t)blocks[k] - s->base;
        size_t slab = off >> RP_SLAB_SHIFT;
        rp_slab *d = &s->desc[slab];
        uint32_t g = (uint32_t)(off & (RP_SLAB_BYTES - 1)) >> 4;
        uint32_t w = g >> 6;
        uint64_t *word = &s->bits[slab * RP_SLAB_WORDS + w];
        __atomic_store_n(word, *word & ~(1ull << (g & 63)), __ATOMIC_RELAXED);
        if (w < d->scan)
            d->scan = (uint8_t)w;
        d->live--;
        pool->blocks_live--;
        pool->given++;
        pool->bytes_live -= d->stride;
        if (d->live == 0) {
            if (pool->cur[d->cls] == d) {
                /* The current slab starts over: every block is a fresh one again. */
                if (d->on_avail)
                    avail_remove(pool, d);
                d->fresh = 0;
                d->scan = 0;
            } else {
                pool_retire(pool, d);
            }
        } else if (!d->on_avail) {
            avail_push(pool, d); /* D3: block i < fresh is free now */
        }
    }
}

size_t rp_slab_pool_trim(rp_slab_pool *pool)
{
    size_t n = 0;
    while (pool->empty) {
        rp_slab *d = pool->empty;
        pool->empty = d->next;
        pool->empty_n--;
        pool->slabs--;
        space_give(pool->space, d);
        n++;
    }
    return n;
}

/* The slabs of the chunks handed out so far (every slab ever used lies below). */
static size_t slabs_below_next_chunk(rp_slab_space *s)
{
    rp_lock_acquire(&s->lock);
    size_t top = s->next_chunk * RP_SLAB_CHUNK_SLABS;
    rp_lock_release(&s->lock);
    return top < s->nslabs ? top : s->nslabs;
}

void rp_slab_pool_reset(rp_slab_pool *pool)
{
    rp_slab_space *s = pool->space;
    size_t top = slabs_below_next_chunk(s);
    for (size_t i = 0; i < top; i++) {
        rp_slab *d = &s->desc[i];
        if (__atomic_load_n(&d->pool, __ATOMIC_RELAXED) != pool)
            continue;
        slab_unformat(s, d);
        uint64_t *map = rp_slab_bits(s, d);
        for (unsigned w = 0; w < RP_SLAB_WORDS; w++)
            __atomic_store_n(&map[w], 0, __ATOMIC_RELAXED);
        space_give(s, d);
    }
    void *owner = pool->owner;
    /* Its chunk is still its own: the slabs left in it are for this pool. */
    size_t chunk = pool->chunk, chunks_taken = pool->chunks_taken;
    uint64_t taken = pool->taken, given = pool->taken; /* every block is dead: given back */
    rp_slab_pool_init(pool, s, pool->keep_empty);
    pool->owner = owner;
    pool->chunk = chunk;
    pool->chunks_taken = chunks_taken;
    pool->taken = taken;
    pool->given = given;
}

/* ---- checks ---------------------------------------------------------------------------- */

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* 1 if the n bytes at p (8-byte aligned, n a multiple of 8) are all zero. */
static int all_zero(const void *p, size_t n)
{
    const uint64_t *w = p;
    uint64_t any = 0;
    for (size_t i = 0; i < n / 8; i++)
        any |= w[i];
    return any == 0;
}

/* 1 if slab i was never used by the look of it: descriptor, metadata word and bitmap zero. */
static int slab_zero(const rp_slab_space *s, size_t i)
{
    return all_zero(&s->desc[i], sizeof s->desc[i]) && s->meta[i] == 0 &&
           all_zero(s->bits + i * RP_SLAB_WORDS, RP_SLAB_WORDS * 8);
}

int rp_slab_space_check(rp_slab_space *s, char *why, size_t len)
{
    int rc = 0;
    rp_lock_acquire(&s->lock);
    /* S1 */
    if ((s->base | s->len) & (RP_SLAB_BYTES - 1) || s->nslabs != s->len >> RP_SLAB_SHIFT ||
        s->nchunks != (s->nslabs + RP_SLAB_CHUNK_SLABS - 1) / RP_SLAB_CHUNK_SLABS || s->next_chunk > s->nchunks) {
        rc = fail(why, len, "S1: space %#lx + %zu, %zu slabs, %zu chunks, %zu handed out", (unsigned long)s->base,
                  s->len, s->nslabs, s->nchunks, s->next_chunk);
        goto out;
    }
    size_t used = 0;
    for (size_t c = 0; c < s->nchunks; c++) {
        if (s->chunk_used[c] > chunk_slabs(s, c) || (c >= s->next_chunk && s->chunk_used[c])) {
            rc = fail(why, len, "S1: chunk %zu counts %u slabs used (of %zu; %zu chunks handed out)", c,
                      s->chunk_used[c], chunk_slabs(s, c), s->next_chunk);
            goto out;
        }
        used += s->chunk_used[c];
    }
    /* S2: the released stack (bounded, so a cycle cannot hang the check) */
    size_t on_stack = 0;
    for (rp_slab *d = s->released; d; d = d->next) {
        if (++on_stack > used || d < s->desc || d >= s->desc + s->nslabs || !slab_used(s, slab_index(s, d))) {
            rc = fail(why, len, "S2: the released stack holds a slab never used or a cycle");
            goto out;
        }
        size_t i = slab_index(s, d);
        if (d->pool || d->stride || __atomic_load_n(&s->meta[i], __ATOMIC_RELAXED) ||
            !all_zero(rp_slab_bits(s, d), RP_SLAB_WORDS * 8)) {
            rc = fail(why, len, "S2: released slab %zu belongs to a pool, holds a class or has allocated bits", i);
            goto out;
        }
    }
    if (on_stack != s->released_n) {
        rc = fail(why, len, "S2: %zu slabs on the released stack, %zu counted", on_stack, s->released_n);
        goto out;
    }
    /* Every slab used is held or released. Of the ones never used, the next each chunk would
     * hand out (and the first of the next chunk) must be zero: reading them all would be the
     * checker's main cost, and fault in reserved pages nothing has written. */
    size_t held = 0, top = s->next_chunk * RP_SLAB_CHUNK_SLABS;
    for (size_t i = 0; i < s->nslabs && i < top; i++)
        held += slab_used(s, i) && s->desc[i].pool != NULL;
    for (size_t c = 0; c <= s->next_chunk && c < s->nchunks; c++) {
        size_t i = c * RP_SLAB_CHUNK_SLABS + s->chunk_used[c];
        if (s->chunk_used[c] < chunk_slabs(s, c) && !slab_zero(s, i)) {
            rc = fail(why, len, "S2: slab %zu was never used but its metadata is not zero", i);
            goto out;
        }
    }
    if (held + on_stack != used) {
        rc = fail(why, len, "S2: %zu slabs used, %zu held and %zu released", used, held, on_stack);
        goto out;
    }
    /* S3 */
    if (held != s->slabs_held)
        rc = fail(why, len, "S3: %zu slabs held by pools, %zu counted", held, s->slabs_held);
out:
    rp_lock_release(&s->lock);
    return rc;
}

static unsigned popcount_bits(const uint64_t *map)
{
    unsigned n = 0;
    for (unsigned w = 0; w < RP_SLAB_WORDS; w++)
        n += (unsigned)__builtin_popcountll(__atomic_load_n(&map[w], __ATOMIC_RELAXED));
    return n;
}

/* D1, D2 for slab idx of s, holding a class. */
static int check_slab(const rp_slab_space *s, size_t idx, const rp_slab *d, char *why, size_t len)
{
    uint64_t meta = __atomic_load_n(&s->meta[idx], __ATOMIC_RELAXED);
    if (d->cls >= RP_SLAB_CLASSES || d->stride != rp_slab_stride(d->cls) ||
        d->colour != rp_slab_colour(idx, d->stride) || d->nblocks != (RP_SLAB_BYTES - d->colour) / d->stride ||
        meta != rp_slab_meta_of(d->stride, d->nblocks))
        return fail(why, len, "D1: slab %zu: class %u, stride %u, colour %u, %u blocks, metadata word %#llx", idx,
                    d->cls, d->stride, d->colour, d->nblocks, (unsigned long long)meta);
    const uint64_t *map = rp_slab_bits(s, d);
    if (d->fresh > d->nblocks || popcount_bits(map) != d->live)
        return fail(why, len, "D2: slab %zu: %u live but %u bits set, fresh %u of %u", idx, d->live, popcount_bits(map),
                    d->fresh, d->nblocks);
    /* Word by word: bits only where a block below fresh starts, and every such bit set in the
     * words under the scan hint. */
    uint32_t k = d->stride >> 4, recip = (uint32_t)(meta >> 32), c0 = d->colour >> 4;
    uint32_t fresh_g = c0 + (uint32_t)d->fresh * k;
    for (uint32_t w = 0; w < RP_SLAB_WORDS; w++) {
        uint64_t bits = __atomic_load_n(&map[w], __ATOMIC_RELAXED);
        uint64_t starts = start_mask(k, recip, c0, w) & below_granule(w, fresh_g);
        if (bits & ~starts)
            return fail(why, len, "D2: slab %zu: granule %u is marked but starts no block below the fresh mark %u", idx,
                        (w << 6) + rp_ctz(bits & ~starts), d->fresh);
        if (w < d->scan && (~bits & starts))
            return fail(why, len, "D2: slab %zu: the block at granule %u is free below the scan hint (word %u)", idx,
                        (w << 6) + rp_ctz(~bits & starts), d->scan);
    }
    if ((size_t)d->scan * 64 > fresh_g + 63u)
        return fail(why, len, "D2: slab %zu: scan hint %u past the fresh mark %u", idx, d->scan, d->fresh);
    return 0;
}

int rp_slab_pool_check(rp_slab_pool *pool, char *why, size_t len)
{
    rp_slab_space *s = pool->space;
    size_t top = slabs_below_next_chunk(s);
    rp_lock_acquire(&s->lock);
    size_t handed = s->next_chunk;
    rp_lock_release(&s->lock);
    /* P2 */
    if (pool->chunk > handed)
        return fail(why, len, "P2: the pool's chunk %zu was never handed out (%zu were)", pool->chunk - 1, handed);
    size_t slabs = 0, blocks = 0, bytes = 0, on_avail = 0, empty = 0;
    for (size_t i = 0; i < top; i++) {
        const rp_slab *d = &s->desc[i];
        if (__atomic_load_n(&d->pool, __ATOMIC_RELAXED) != pool)
            continue; /* another pool's, whose owner may be changing it */
        slabs++;
        if (d->stride == 0) {
            /* D5: only kept empty slabs hold no class */
            if (d->live || d->fresh || d->on_avail || s->meta[i] || popcount_bits(rp_slab_bits(s, d)))
                return fail(why, len, "D5: slab %zu holds no class but has live blocks, metadata or a list", i);
            empty++;
            continue;
        }
        if (check_slab(s, i, d, why, len))
            return -1;
        blocks += d->live;
        bytes += (size_t)d->live * d->stride;
        /* D3 */
        if (d->on_avail != (d->live < d->fresh))
            return fail(why, len, "D3: slab %zu: %u live below fresh %u, but %s avail", i, d->live, d->fresh,
                        d->on_avail ? "on" : "not on");
        on_avail += d->on_avail;
        /* D4 */
        if (d->fresh < d->nblocks && pool->cur[d->cls] != d)
            return fail(why, len, "D4: slab %zu of class %u has fresh blocks but is not the class's current slab", i,
                        d->cls);
    }
    /* D3: the lists hold exactly the slabs marked, each of its class, well linked */
    size_t listed = 0;
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++) {
        const rp_slab *prev = NULL;
        for (const rp_slab *d = pool->avail[c]; d; prev = d, d = d->next) {
            if (++listed > on_avail || d < s->desc || d >= s->desc + top || d->pool != pool || d->cls != c ||
                !d->on_avail || d->prev != prev)
                return fail(why, len, "D3: avail list of class %u holds a slab not marked for it (or a cycle)", c);
        }
        const rp_slab *cur = pool->cur[c];
        if (cur && (cur < s->desc || cur >= s->desc + top || cur->pool != pool || cur->stride == 0 || cur->cls != c ||
                    cur->fresh >= cur->nblocks))
            return fail(why, len, "D4: class %u's current slab is not one of its slabs with fresh blocks", c);
    }
    if (listed != on_avail)
        return fail(why, len, "D3: %zu slabs marked avail, %zu on the lists", on_avail, listed);
    /* D5 */
    size_t kept = 0;
    for (const rp_slab *d = pool->empty; d; d = d->next)
        if (++kept > empty || d < s->desc || d >= s->desc + top || d->pool != pool || d->stride)
            return fail(why, len, "D5: the empty list holds a slab in use or not the pool's (or a cycle)");
    if (kept != empty || kept != pool->empty_n || kept > pool->keep_empty)
        return fail(why, len, "D5: %zu slabs hold no class, %zu on the empty list, %zu counted (keep %zu)", empty, kept,
                    pool->empty_n, pool->keep_empty);
    /* P1 */
    if (slabs != pool->slabs || blocks != pool->blocks_live || bytes != pool->bytes_live)
        return fail(why, len, "P1: %zu slabs, %zu live blocks, %zu bytes; counted %zu, %zu, %zu", slabs, blocks, bytes,
                    pool->slabs, pool->blocks_live, pool->bytes_live);
    return 0;
}

void rp_slab_space_fork_prepare(rp_slab_space *s) { rp_lock_acquire(&s->lock); }
void rp_slab_space_fork_parent(rp_slab_space *s) { rp_lock_release(&s->lock); }
void rp_slab_space_fork_child(rp_slab_space *s) { rp_lock_init(&s->lock); }
