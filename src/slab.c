#include "slab.h"

#include <stdlib.h>
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
    /* Chunks aligned to their size: each is whole 2 MiB pages, advised or not (space_take).
     * A chunk's length of inaccessible address space goes first, so an underflow out of the
     * first chunk (a pointer run back from the first blocks handed out) faults. */
    char *reserved = rp_os_reserve(RP_SLAB_LEAD_GUARD + len, RP_SLAB_CHUNK_BYTES);
    if (!reserved)
        return -1;
    void *base = reserved + RP_SLAB_LEAD_GUARD;
    if (rp_os_make_inaccessible(reserved, RP_SLAB_LEAD_GUARD) != 0) {
        (void)rp_os_unreserve(reserved, RP_SLAB_LEAD_GUARD + len);
        return -1;
    }
    char *arrays = rp_os_reserve(arrays_bytes, RP_OS_PAGE);
    if (!arrays) {
        (void)rp_os_unreserve(reserved, RP_SLAB_LEAD_GUARD + len);
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
    (void)rp_os_unreserve((void *)(s->base - RP_SLAB_LEAD_GUARD), RP_SLAB_LEAD_GUARD + s->len);
    (void)rp_os_unreserve(s->arrays, s->arrays_bytes);
    rp_lock_fini(&s->lock);
    memset(s, 0, sizeof *s);
}


static inline uintptr_t slab_addr(const rp_slab_space *s, const rp_slab *d)
{
    return s->base + ((uintptr_t)rp_slab_desc_index(s, d) << RP_SLAB_SHIFT);
}

/* Slabs of chunk c that hold blocks (the guard slab excluded, SS1). */
size_t rp_slab_chunk_slabs(const rp_slab_space *s, size_t c)
{
    size_t left = s->nslabs - c * RP_SLAB_CHUNK_SLABS;
    size_t n = left < RP_SLAB_CHUNK_SLABS ? left : RP_SLAB_CHUNK_SLABS;
    return s->guard_chunks && n > 1 ? n - 1 : n;
}

/* 1 if slab i was ever handed out (SS2), under the space's lock. */
int rp_slab_ever_used(const rp_slab_space *s, size_t i)
{
    size_t c = i / RP_SLAB_CHUNK_SLABS;
    return c < s->next_chunk && i - c * RP_SLAB_CHUNK_SLABS < s->chunk_used[c];
}

/* A slab for pool: the last one given back whose pages are still resident (nothing to fault
 * in, and no fresh memory while freed memory lies idle), else the next one of its chunk (its
 * memory untouched), else of a new chunk, else the last one given back decommitted. */
static rp_slab *space_take(rp_slab_space *s, rp_slab_pool *pool)
{
    rp_lock_acquire(&s->lock);
    rp_slab *d = NULL;
    size_t c = pool->chunk - 1; /* SIZE_MAX with no chunk */
    size_t advise = SIZE_MAX;   /* a chunk to advise huge pages for, once the lock is released */
    if (s->dirty) {
        d = s->dirty;
        s->dirty = d->next;
        if (s->dirty)
            s->dirty->prev = NULL;
        else
            s->dirty_tail = NULL;
        d->dirty = 0;
        s->dirty_n--;
        s->released_n--;
        c = SIZE_MAX;
    } else if (pool->chunk == 0 || s->chunk_used[c] == rp_slab_chunk_slabs(s, c)) {
        c = SIZE_MAX;
        if (s->next_chunk < s->nchunks) {
            c = s->next_chunk++;
            pool->chunk = c + 1;
            /* Not a pool's first two chunks: most pools (a thread's arena) hold a few slabs,
             * and the first block written in an advised 2 MiB page faults in all of it: a
             * small program would pay a huge page for a few KiB of blocks. One slab per class
             * already fills most of a chunk, so a program of a few MiB would pay one for the
             * few slabs in its second chunk (docs/BENCHMARKS.md, "Huge pages"). A pool that
             * has used up two chunks is a heavy user, for whom one fault per 2 MiB beats one
             * per 4 KiB. */
            if (pool->chunks_taken++ >= RP_SLAB_CHUNKS_BEFORE_HUGE && s->advise_huge_pages)
                advise = c;
            /* The guard slab: an overflow running out of the chunk faults there. If the OS
             * refuses, the chunk simply has no guard. */
            if (s->guard_chunks && rp_slab_chunk_slabs(s, c) > 0)
                (void)rp_os_make_inaccessible((void *)(s->base + (c << RP_SLAB_CHUNK_SHIFT) +
                                                       (rp_slab_chunk_slabs(s, c) << RP_SLAB_SHIFT)),
                                              RP_SLAB_BYTES);
        }
    }
    if (!d && c != SIZE_MAX) {
        d = &s->desc[c * RP_SLAB_CHUNK_SLABS + s->chunk_used[c]++];
    } else if (!d && s->released) {
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
                                rp_slab_chunk_slabs(s, advise) << RP_SLAB_SHIFT);
    return d;
}

int rp_slab_pool_exhausted(rp_slab_pool *pool)
{
    rp_slab_space *s = pool->space;
    rp_lock_acquire(&s->lock);
    int full = (pool->chunk == 0 || s->chunk_used[pool->chunk - 1] == rp_slab_chunk_slabs(s, pool->chunk - 1)) &&
               s->next_chunk == s->nchunks && !s->released && !s->dirty && !pool->empty;
    rp_lock_release(&s->lock);
    return full;
}

/* Gives an empty slab (stride 0, no bit set) back to the space, its pages resident (the dirty
 * list, SS2); beyond dirty_max such slabs, the oldest half goes back to the OS. Calling the OS
 * for each slab that empties (64 KiB at a time) cost a program that fills and empties slabs
 * in turn a system call and 16 page faults per slab. */
static void space_give(rp_slab_space *s, rp_slab *d)
{
    rp_lock_acquire(&s->lock);
    __atomic_store_n(&d->pool, NULL, __ATOMIC_RELAXED);
    d->dirty = 1;
    d->prev = NULL;
    d->next = s->dirty;
    if (s->dirty)
        s->dirty->prev = d;
    else
        s->dirty_tail = d;
    s->dirty = d;
    s->dirty_n++;
    s->released_n++;
    s->slabs_held--;
    s->releases++;
    int over = s->dirty_n > s->dirty_max;
    rp_lock_release(&s->lock);
    if (over)
        rp_slab_space_purge(s, s->dirty_max / 2);
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(rp_slab *const *)a, y = (uintptr_t)*(rp_slab *const *)b;
    return x < y ? -1 : x > y;
}

size_t rp_slab_space_purge(rp_slab_space *s, size_t keep)
{
    size_t done = 0;
    for (;;) {
        rp_slab *batch[64];
        size_t k = 0;
        /* Off the dirty list first (no one can take them while their pages go), oldest
         * first; back on the released stack once decommitted. */
        rp_lock_acquire(&s->lock);
        while (s->dirty_n > keep && k < sizeof batch / sizeof batch[0]) {
            rp_slab *d = s->dirty_tail;
            s->dirty_tail = d->prev;
            if (s->dirty_tail)
                s->dirty_tail->next = NULL;
            else
                s->dirty = NULL;
            d->prev = d->next = NULL;
            d->dirty = 0;
            s->dirty_n--;
            s->released_n--;
            batch[k++] = d;
        }
        rp_lock_release(&s->lock);
        if (k == 0)
            return done;
        qsort(batch, k, sizeof batch[0], by_address);
        uint64_t calls = 0, refused = 0;
        for (size_t i = 0; i < k;) {
            size_t j = i + 1;
            while (j < k && batch[j] == batch[j - 1] + 1) /* neighbours in the space */
                j++;
            refused += rp_os_decommit((void *)slab_addr(s, batch[i]), (j - i) << RP_SLAB_SHIFT) != 0;
            calls++;
            i = j;
        }
        rp_lock_acquire(&s->lock);
        for (size_t i = 0; i < k; i++) {
            batch[i]->next = s->released;
            s->released = batch[i];
        }
        s->released_n += k;
        s->purges += calls;
        s->decommit_failures += refused;
        rp_lock_release(&s->lock);
        done += k;
    }
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

int rp_slab_block_at(const rp_slab_space *s, const void *p, uintptr_t *start, uint32_t *stride)
{
    uintptr_t off = (uintptr_t)p - s->base;
    size_t slab = off >> RP_SLAB_SHIFT;
    uint64_t m = __atomic_load_n(&s->meta[slab], __ATOMIC_RELAXED);
    if (m == 0)
        return RP_SLAB_AT_NONE;
    uint32_t o = (uint32_t)(off & (RP_SLAB_BYTES - 1)), colour = s->desc[slab].colour;
    uint32_t st = (uint32_t)(m >> 16) & 0xffff;
    if (o < colour)
        return RP_SLAB_AT_NONE;
    uint32_t i = rp_slab_index((uint32_t)(m >> 32), o - colour);
    if (i >= (uint32_t)(m & 0xffff))
        return RP_SLAB_AT_NONE;
    uint32_t first = colour + i * st, g = first >> 4;
    *start = s->base + (slab << RP_SLAB_SHIFT) + first;
    *stride = st;
    uint64_t w = __atomic_load_n(&s->bits[slab * RP_SLAB_WORDS + (g >> 6)], __ATOMIC_RELAXED);
    return (w >> (g & 63)) & 1 ? RP_SLAB_AT_LIVE : RP_SLAB_AT_FREE;
}

/* ---- slabs ----------------------------------------------------------------------------- */

/* The granules below granule g: a mask of word w. */
uint64_t rp_slab_below_granule(uint32_t w, uint32_t g)
{
    uint32_t lo = w << 6;
    return g <= lo ? 0 : g - lo >= 64 ? ~0ull : (1ull << (g - lo)) - 1;
}

/* The granules of bitmap word w (granules 64w .. 64w + 63) where a block starts, in a slab
 * whose blocks start at granule c0 (its colour / 16), k granules apart (its stride / 16);
 * recip is the stride's reciprocal (SL1). */
uint64_t rp_slab_start_mask(uint32_t k, uint32_t recip, uint32_t c0, uint32_t w)
{
    uint32_t lo = w << 6;
    if (k == 1)
        return ~rp_slab_below_granule(w, c0);
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
    d->colour = (uint16_t)rp_slab_colour(rp_slab_desc_index(s, d), stride);
    d->nblocks = (uint16_t)((RP_SLAB_BYTES - d->colour) / stride); /* set-up only: no division on free */
    d->live = 0;
    d->fresh = 0;
    d->scan = 0;
    d->on_avail = 0;
    d->next = d->prev = NULL;
    __atomic_store_n(&s->meta[rp_slab_desc_index(s, d)], rp_slab_meta_of(stride, d->nblocks), __ATOMIC_RELAXED);
}

/* Makes an empty slab (no bit set) hold no class (SL5's state): free() then refuses every
 * pointer into it. */
static void slab_unformat(rp_slab_space *s, rp_slab *d)
{
    __atomic_store_n(&s->meta[rp_slab_desc_index(s, d)], 0, __ATOMIC_RELAXED);
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
        uint32_t recip = (uint32_t)(pool->space->meta[rp_slab_desc_index(pool->space, d)] >> 32);
        uint32_t c0 = d->colour >> 4;
        uint32_t fresh_g = c0 + (uint32_t)d->fresh * k; /* the granules up to the fresh mark */
        uint32_t words = (fresh_g + 63) >> 6;
        uint32_t w = d->scan;
        size_t before = got;
        /* SL3: a free block lies below fresh, and SL2: not in the words below scan. */
        for (; w < words && got < n; w++) {
            uint64_t bits = map[w];
            uint64_t freebits = ~bits & rp_slab_start_mask(k, recip, c0, w) & rp_slab_below_granule(w, fresh_g);
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
        d->scan = (uint8_t)w; /* SL2: the words passed have no free block below fresh */
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
            avail_push(pool, d); /* SL3: block i < fresh is free now */
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
size_t rp_slab_space_top(rp_slab_space *s)
{
    rp_lock_acquire(&s->lock);
    size_t top = s->next_chunk * RP_SLAB_CHUNK_SLABS;
    rp_lock_release(&s->lock);
    return top < s->nslabs ? top : s->nslabs;
}

void rp_slab_pool_reset(rp_slab_pool *pool)
{
    rp_slab_space *s = pool->space;
    size_t top = rp_slab_space_top(s);
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

void rp_slab_space_fork_prepare(rp_slab_space *s) { rp_lock_acquire(&s->lock); }
void rp_slab_space_fork_parent(rp_slab_space *s) { rp_lock_release(&s->lock); }
void rp_slab_space_fork_child(rp_slab_space *s) { rp_lock_init(&s->lock); }
