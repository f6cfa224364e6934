/* The slab checkers: SS1..SS3 of the space, SL1..SL5 and SP1..SP2 of a pool (slab.h), verified
 * from the metadata alone (slab memory is never read: fresh slabs may never have been
 * touched). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bits.h"
#include "slab.h"

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
    /* SS1 */
    if ((s->base | s->len) & (RP_SLAB_BYTES - 1) || s->nslabs != s->len >> RP_SLAB_SHIFT ||
        s->nchunks != (s->nslabs + RP_SLAB_CHUNK_SLABS - 1) / RP_SLAB_CHUNK_SLABS || s->next_chunk > s->nchunks) {
        rc = fail(why, len, "SS1: space %#lx + %zu, %zu slabs, %zu chunks, %zu handed out", (unsigned long)s->base,
                  s->len, s->nslabs, s->nchunks, s->next_chunk);
        goto out;
    }
    size_t used = 0;
    for (size_t c = 0; c < s->nchunks; c++) {
        if (s->chunk_used[c] > rp_slab_chunk_slabs(s, c) || (c >= s->next_chunk && s->chunk_used[c])) {
            rc = fail(why, len, "SS1: chunk %zu counts %u slabs used (of %zu; %zu chunks handed out)", c,
                      s->chunk_used[c], rp_slab_chunk_slabs(s, c), s->next_chunk);
            goto out;
        }
        used += s->chunk_used[c];
    }
    /* SS2: the released stack and the dirty list (bounded, so a cycle cannot hang the check) */
    size_t on_stack = 0, dirty = 0;
    for (int list = 0; list < 2; list++) {
        const rp_slab *prev = NULL;
        for (rp_slab *d = list ? s->dirty : s->released; d; prev = d, d = d->next) {
            if (++on_stack > used || d < s->desc || d >= s->desc + s->nslabs ||
                !rp_slab_ever_used(s, rp_slab_desc_index(s, d))) {
                rc = fail(why, len, "SS2: the released slabs include one never used, or a cycle");
                goto out;
            }
            size_t i = rp_slab_desc_index(s, d);
            if (d->pool || d->stride || __atomic_load_n(&s->meta[i], __ATOMIC_RELAXED) ||
                !all_zero(rp_slab_bits(s, d), RP_SLAB_WORDS * 8)) {
                rc = fail(why, len, "SS2: released slab %zu belongs to a pool, holds a class or has allocated bits", i);
                goto out;
            }
            if (d->dirty != list || (list && d->prev != prev) || (list && !d->next && s->dirty_tail != d)) {
                rc = fail(why, len, "SS2: released slab %zu is on the %s list with dirty %u (links broken?)", i,
                          list ? "dirty" : "decommitted", d->dirty);
                goto out;
            }
            dirty += list;
        }
    }
    if (on_stack != s->released_n || dirty != s->dirty_n || (!s->dirty) != (!s->dirty_tail)) {
        rc = fail(why, len, "SS2: %zu slabs released (%zu resident), %zu and %zu counted", on_stack, dirty,
                  s->released_n, s->dirty_n);
        goto out;
    }
    /* Every slab used is held or released. Of the ones never used, the next each chunk would
     * hand out (and the first of the next chunk) must be zero: reading them all would be the
     * checker's main cost, and fault in reserved pages nothing has written. */
    size_t held = 0, top = s->next_chunk * RP_SLAB_CHUNK_SLABS;
    for (size_t i = 0; i < s->nslabs && i < top; i++)
        held += rp_slab_ever_used(s, i) && s->desc[i].pool != NULL;
    for (size_t c = 0; c <= s->next_chunk && c < s->nchunks; c++) {
        size_t i = c * RP_SLAB_CHUNK_SLABS + s->chunk_used[c];
        if (s->chunk_used[c] < rp_slab_chunk_slabs(s, c) && !slab_zero(s, i)) {
            rc = fail(why, len, "SS2: slab %zu was never used but its metadata is not zero", i);
            goto out;
        }
    }
    if (held + on_stack != used) {
        rc = fail(why, len, "SS2: %zu slabs used, %zu held and %zu released", used, held, on_stack);
        goto out;
    }
    /* SS3 */
    if (held != s->slabs_held)
        rc = fail(why, len, "SS3: %zu slabs held by pools, %zu counted", held, s->slabs_held);
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

/* SL1, SL2 for slab idx of s, holding a class. */
static int check_slab(const rp_slab_space *s, size_t idx, const rp_slab *d, char *why, size_t len)
{
    uint64_t meta = __atomic_load_n(&s->meta[idx], __ATOMIC_RELAXED);
    if (d->cls >= RP_SLAB_CLASSES || d->stride != rp_slab_stride(d->cls) ||
        d->colour != rp_slab_colour(idx, d->stride) || d->nblocks != (RP_SLAB_BYTES - d->colour) / d->stride ||
        meta != rp_slab_meta_of(d->stride, d->nblocks))
        return fail(why, len, "SL1: slab %zu: class %u, stride %u, colour %u, %u blocks, metadata word %#llx", idx,
                    d->cls, d->stride, d->colour, d->nblocks, (unsigned long long)meta);
    const uint64_t *map = rp_slab_bits(s, d);
    if (d->fresh > d->nblocks || popcount_bits(map) != d->live)
        return fail(why, len, "SL2: slab %zu: %u live but %u bits set, fresh %u of %u", idx, d->live, popcount_bits(map),
                    d->fresh, d->nblocks);
    /* Word by word: bits only where a block below fresh starts, and every such bit set in the
     * words under the scan hint. */
    uint32_t k = d->stride >> 4, recip = (uint32_t)(meta >> 32), c0 = d->colour >> 4;
    uint32_t fresh_g = c0 + (uint32_t)d->fresh * k;
    for (uint32_t w = 0; w < RP_SLAB_WORDS; w++) {
        uint64_t bits = __atomic_load_n(&map[w], __ATOMIC_RELAXED);
        uint64_t starts = rp_slab_start_mask(k, recip, c0, w) & rp_slab_below_granule(w, fresh_g);
        if (bits & ~starts)
            return fail(why, len, "SL2: slab %zu: granule %u is marked but starts no block below the fresh mark %u", idx,
                        (w << 6) + rp_ctz(bits & ~starts), d->fresh);
        if (w < d->scan && (~bits & starts))
            return fail(why, len, "SL2: slab %zu: the block at granule %u is free below the scan hint (word %u)", idx,
                        (w << 6) + rp_ctz(~bits & starts), d->scan);
    }
    if ((size_t)d->scan * 64 > fresh_g + 63u)
        return fail(why, len, "SL2: slab %zu: scan hint %u past the fresh mark %u", idx, d->scan, d->fresh);
    return 0;
}

int rp_slab_pool_check(rp_slab_pool *pool, char *why, size_t len)
{
    rp_slab_space *s = pool->space;
    size_t top = rp_slab_space_top(s);
    rp_lock_acquire(&s->lock);
    size_t handed = s->next_chunk;
    rp_lock_release(&s->lock);
    /* SP2 */
    if (pool->chunk > handed)
        return fail(why, len, "SP2: the pool's chunk %zu was never handed out (%zu were)", pool->chunk - 1, handed);
    size_t slabs = 0, blocks = 0, bytes = 0, on_avail = 0, empty = 0;
    for (size_t i = 0; i < top; i++) {
        const rp_slab *d = &s->desc[i];
        if (__atomic_load_n(&d->pool, __ATOMIC_RELAXED) != pool)
            continue; /* another pool's, whose owner may be changing it */
        slabs++;
        if (d->stride == 0) {
            /* SL5: only kept empty slabs hold no class */
            if (d->live || d->fresh || d->on_avail || s->meta[i] || popcount_bits(rp_slab_bits(s, d)))
                return fail(why, len, "SL5: slab %zu holds no class but has live blocks, metadata or a list", i);
            empty++;
            continue;
        }
        if (check_slab(s, i, d, why, len))
            return -1;
        blocks += d->live;
        bytes += (size_t)d->live * d->stride;
        /* SL3 */
        if (d->on_avail != (d->live < d->fresh))
            return fail(why, len, "SL3: slab %zu: %u live below fresh %u, but %s avail", i, d->live, d->fresh,
                        d->on_avail ? "on" : "not on");
        on_avail += d->on_avail;
        /* SL4 */
        if (d->fresh < d->nblocks && pool->cur[d->cls] != d)
            return fail(why, len, "SL4: slab %zu of class %u has fresh blocks but is not the class's current slab", i,
                        d->cls);
    }
    /* SL3: the lists hold exactly the slabs marked, each of its class, well linked */
    size_t listed = 0;
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++) {
        const rp_slab *prev = NULL;
        for (const rp_slab *d = pool->avail[c]; d; prev = d, d = d->next) {
            if (++listed > on_avail || d < s->desc || d >= s->desc + top || d->pool != pool || d->cls != c ||
                !d->on_avail || d->prev != prev)
                return fail(why, len, "SL3: avail list of class %u holds a slab not marked for it (or a cycle)", c);
        }
        const rp_slab *cur = pool->cur[c];
        if (cur && (cur < s->desc || cur >= s->desc + top || cur->pool != pool || cur->stride == 0 || cur->cls != c ||
                    cur->fresh >= cur->nblocks))
            return fail(why, len, "SL4: class %u's current slab is not one of its slabs with fresh blocks", c);
    }
    if (listed != on_avail)
        return fail(why, len, "SL3: %zu slabs marked avail, %zu on the lists", on_avail, listed);
    /* SL5 */
    size_t kept = 0;
    for (const rp_slab *d = pool->empty; d; d = d->next)
        if (++kept > empty || d < s->desc || d >= s->desc + top || d->pool != pool || d->stride)
            return fail(why, len, "SL5: the empty list holds a slab in use or not the pool's (or a cycle)");
    if (kept != empty || kept != pool->empty_n || kept > pool->keep_empty)
        return fail(why, len, "SL5: %zu slabs hold no class, %zu on the empty list, %zu counted (keep %zu)", empty, kept,
                    pool->empty_n, pool->keep_empty);
    /* SP1 */
    if (slabs != pool->slabs || blocks != pool->blocks_live || bytes != pool->bytes_live)
        return fail(why, len, "SP1: %zu slabs, %zu live blocks, %zu bytes; counted %zu, %zu, %zu", slabs, blocks, bytes,
                    pool->slabs, pool->blocks_live, pool->bytes_live);
    return 0;
}

