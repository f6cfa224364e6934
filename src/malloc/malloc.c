/* The C allocation functions (malloc, free, ... and glibc's extras and aliases) on top of
 * rampart: thread caches first (thread_cache.h), the arenas' heaps behind them (arena.h).
 *
 * Every entry point lives in this one file, so that linking librampart_malloc.a pulls all
 * of them in together: a program can never end up with rampart's malloc and glibc's free.
 *
 * Semantics follow glibc: 16-byte alignment; malloc(0) returns a unique pointer;
 * realloc(p, 0) frees p and returns NULL; posix_memalign returns EINVAL/ENOMEM and never
 * touches errno; memalign rounds a non-power-of-two alignment up; aligned_alloc rejects one
 * with EINVAL (glibc 2.38 and C17); sizes that overflow fail with ENOMEM; free() keeps errno.
 * Every pointer is classified at its call, from rampart's own metadata (the slab space's
 * range, the address map) before any byte in front of it is read: pointers rampart never
 * returned (a stack or global address, another allocator's block) are reported as invalid
 * frees by free(), malloc_usable_size() and realloc() (option ignore_foreign_free: free()
 * counts and ignores them, malloc_usable_size() returns 0); pointers inside rampart's memory
 * that are not live blocks (double, interior or corrupted frees) are reported like rp_free
 * does. Only pointers into the slab space, which belongs to the arenas alone and is never
 * unmapped, are examined later, in the thread's free batch (T5 in thread_cache.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "cache_mark.h"
#include "free_batch.h"
#include "guard_pool.h"
#include "guarded_memory.h"
#include "malloc_slabs.h"
#include "malloc_stats.h"
#include "neighbour_check.h"
#include "profile.h"
#include "rampart_malloc.h"
#include "seal.h"
#include "size_class.h"
#include "src/header_snapshot.h"
#include "src/heap.h"
#include "src/mapped_block.h"
#include "src/options.h"
#include "src/pagemap.h"
#include "src/report.h"
#include "src/span.h"
#include "src/tier.h"
#include "src/xorshift.h"
#include "thread_cache.h"
#include "transfer_cache.h"
#include "zero_size.h"

#define RP_NOINLINE __attribute__((noinline))

/* 1 where the drop-in shares the process with another allocator by construction (the
 * sanitizer builds, src/malloc/BUILD: the runtime keeps its own malloc for libc), so a pointer
 * rampart never handed out is that allocator's: free() ignores it instead of reporting it. */
#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0
#endif

/* Option ignore_foreign_free (error paths only). */
static int rp_malloc_ignores_foreign(void) { return rp_options_get()->ignore_foreign_free; }

/* Largest request a thread cache serves. */
#define TC_MAX_REQUEST (RP_TC_MAX_BLOCK - RP_USER_OFFSET - RP_HOOK_SUFFIX)


/* ---- allocation ------------------------------------------------------------------------ */

/* Requests of at most 1008 bytes (blocks of at most 1 KiB, the exact-step classes): the
 * class is ceil(size / 16) - 1, and 0 for size 0. */
#define SMALL_REQUEST (RP_TC_SMALL_MAX - RP_USER_OFFSET - RP_HOOK_SUFFIX)

/* The class bin of a request of at most TC_MAX_REQUEST bytes at the minimum alignment: the
 * exact step up to SMALL_REQUEST (no table, no bit scan), the ceiling class of its block need
 * above. */
static inline unsigned min_align_class(size_t size)
{
    if (RP_LIKELY(size <= SMALL_REQUEST)) {
        unsigned i = (unsigned)((size + 15) >> 4);
        return i - (i != 0);
    }
    return rp_tc_class_of_need(rp_span_block_need(size));
}

/* The class bin an aligned request is served from (align > 16, at most RP_TC_MAX_BLOCK;
 * size at most TC_MAX_REQUEST). With slabs (tc->slab_len), a request whose size rounded up to
 * its alignment is at most RP_SLAB_MAX_STRIDE takes the slab class of that stride: every
 * block of a slab of it is aligned (the stride is a multiple of align, slabs are 64 KiB
 * aligned), and there is no header to make room for. Otherwise the span tier's request: the
 * smallest class that holds the request's aligned block need. A class bin holds blocks of
 * every alignment its size allows (size_class.h C4), so the block taken must be checked.
 * RP_TC_CLASSES when none does. */
static inline unsigned aligned_class(const rp_tcache *tc, size_t size, size_t align)
{
    if (tc->slab_len && align <= RP_SLAB_MAX_STRIDE && size <= RP_SLAB_MAX_STRIDE) {
        size_t stride = rp_align_up(size ? size : 1, align);
        if (stride <= RP_SLAB_MAX_STRIDE)
            return rp_slab_class_of(stride);
    }
    size_t need = rp_align_up(rp_span_block_need(size), align);
    return need <= RP_TC_MAX_BLOCK ? rp_tc_class_of_need(need) : RP_TC_CLASSES;
}

/* What a request (align a power of two >= 16) can take from the thread cache tc without a
 * call, so without touching errno: for an alignment of 16 its class bin's top block; for
 * a request the page tier serves, of at most RP_TC_PAGE_BINS pages (tier.h: page alignment,
 * or e.g. 3072 bytes aligned to 1024, which a span would pad to a page anyway), its page
 * bin's top block; for any other request a class bin serves, that bin's top block. In each
 * case only if the block is aligned enough; NULL otherwise (the general path decides). */
static inline __attribute__((always_inline)) void *aligned_cached(rp_tcache *tc, size_t align, size_t size)
{
    if (RP_HOOK_PREFIX != 0)
        return NULL;
    if (align <= RP_MIN_ALIGN) {
        if (size > TC_MAX_REQUEST)
            return NULL;
        unsigned c = min_align_class(size);
        return tc->bins[c].count != 0 ? rp_tc_pop(tc, c) : NULL;
    }
    /* The size is bounded before it is rounded: near SIZE_MAX the rounding wraps. */
    if (size > ((size_t)RP_TC_PAGE_BINS << RP_PAGE_SHIFT))
        return NULL;
    if (rp_wants_pages(tc->arena, size, align))
        /* Alignments above RP_MAX_ALIGN fail (ENOMEM) on the general path, even when a cached
         * page happens to lie on such a boundary. */
        return size != 0 && align <= RP_MAX_ALIGN ? rp_tc_page_pop(tc, (size + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT, align)
                                                  : NULL;
    if (size > TC_MAX_REQUEST || align > RP_TC_MAX_BLOCK)
        return NULL;
    unsigned c = aligned_class(tc, size, align);
    if (c >= RP_TC_CLASSES)
        return NULL;
    void *p = rp_tc_top(tc, c);
    if (p)
        return ((uintptr_t)p & (align - 1)) == 0 ? rp_tc_pop(tc, c) : NULL;
    /* An empty bin of a slab class takes its run's next fresh block (T6) here, not after the
     * general path: aligned requests that are never freed (the seed scenario) live on runs.
     * Not while frees are collected (T5): the general path examines them first, so a block
     * the thread freed is reused before a fresh one. */
    return tc->freed_n == 0 && rp_tc_run_ready(tc, c, align) ? rp_tc_run_take(tc, c) : NULL;
}

/* Any request: align is a power of two >= 16. The cache serves it when it fits a class
 * (a class whose size is a multiple of align: refill batches then keep every block aligned,
 * size_class.h C4) or a page bin; the block handed out must be aligned. */
/* For a request past the cache's fast path: the thread's cache (set up now if need be; NULL
 * while it cannot be) with its collected frees examined, so what the thread freed is reused
 * before the heap grows, and in *h the heap the request goes to. */
static rp_tcache *cache_for_slow_path(rp_heap **h)
{
    rp_tcache *tc = rp_tc_self;
    if (!tc)
        tc = rp_tc_get_slow();
    else
        rp_malloc_free_collected(tc);
    *h = tc ? tc->arena : rp_arena_fallback();
    return tc;
}

static inline void *aligned_impl(size_t align, size_t size);
/* The usable bytes of p if it is a live block of an arena (a slab, span or page-tier block,
 * mapped ones included), read from rampart's metadata without the lock and without reporting
 * anything; 0 for anything else, and (rarely) for a span block whose header another thread is
 * rewriting (header_snapshot.h). Where a sealed block's seal sits (seal.h). */
static size_t arena_block_usable(const void *p);

/* The mark of span block p's header granule (cache_mark.h), or NULL for other blocks. */
static uint8_t *sealed_head_mark(const void *p)
{
    if (rp_ms_contains(p))
        return NULL;
    rp_region *r = rp_pagemap_lookup(p);
    uint8_t state = rp_page_of(r, p)->state;
    return state == RP_PAGE_SPAN || state == RP_PAGE_SPAN_TAIL ? rp_cache_mark_in(r, (const char *)p - RP_GRANULE)
                                                               : NULL;
}

/* The usable bytes of p, a block just allocated (so known live): from the fields that do not
 * change while it is live, read without checking the header's check word, which another
 * thread's free or carving of its left neighbour may be rewriting at this moment. */
static size_t fresh_usable(const void *p)
{
    uint32_t stride;
    if (rp_slab_block_live(&rp_ms_space, p, &stride))
        return stride;
    rp_region *r = rp_pagemap_lookup(p);
    rp_page *d = rp_page_of(r, p);
    if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL)
        return __atomic_load_n(&rp_block_of_user(p)->size, __ATOMIC_RELAXED) - RP_USER_OFFSET;
    return rp_large_usable(d);
}

/* Clears the mark of p's header granule if it is RP_CACHE_MARK_SEALED_HEAD (a value no user
 * granule's mark takes, so nothing else is ever cleared), p anything. */
static void clear_head_mark(const void *p)
{
    if (rp_ms_contains(p) || ((uintptr_t)p & (RP_GRANULE - 1)))
        return;
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || (uintptr_t)p < r->base + RP_GRANULE)
        return;
    uint8_t state = rp_page_of(r, p)->state;
    uint8_t *head = state == RP_PAGE_SPAN || state == RP_PAGE_SPAN_TAIL ? rp_cache_mark_in(r, (const char *)p - RP_GRANULE)
                                                                      : NULL;
    uint8_t expected = RP_CACHE_MARK_SEALED_HEAD;
    if (head)
        __atomic_compare_exchange_n(head, &expected, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Seals the fresh block p for a request of size bytes (seal.h); a span block's header granule
 * is marked (RP_CACHE_MARK_SEALED_HEAD). */
static void seal(void *p, size_t size)
{
    rp_seal_close(rp_arena_key(), p, size, fresh_usable(p));
    uint8_t *head = sealed_head_mark(p);
    if (head)
        rp_cache_mark_put(head, RP_CACHE_MARK_SEALED_HEAD);
}

/* A hardened allocation by a thread without a cache (seal.h): straight from the heap, sealed. */
static RP_NOINLINE void *alloc_sealed_uncached(rp_heap *h, size_t size, size_t align)
{
    void *p = rp_alloc(h, rp_seal_need(size), align);
    if (p)
        seal(p, size);
    return p;
}

static RP_NOINLINE void *alloc_general(size_t size, size_t align)
{
    rp_heap *h;
    /* A thread with a cache counted this allocation (rp_tc_tick). */
    int counted = rp_tc_self != NULL;
    rp_tcache *tc = cache_for_slow_path(&h);
    if (!counted && tc) /* the thread's first allocation made its cache: counted now */
        return aligned_impl(align, size);
    if (tc)
        rp_prof_clock_rearm(&tc->clock);
    else if (RP_UNLIKELY(rp_hardened_on()))
        return alloc_sealed_uncached(h, size, align);
    if (tc && size <= RP_MAX_REQUEST) {
        void *p = aligned_cached(tc, align, size);
        if (p)
            return p;
        /* A class bin with no block aligned enough refills (with blocks of that alignment). */
        if (size <= TC_MAX_REQUEST && align <= RP_TC_MAX_BLOCK && !rp_wants_pages(h, size, align)) {
            unsigned c = aligned_class(tc, size, align);
            if (c < RP_TC_CLASSES) {
                if (counted)
                    rp_tc_count_miss(tc);
                return rp_tc_refill(tc, c, size, align);
            }
        }
    }
    if (counted)
        rp_tc_count_miss(tc);
    return rp_alloc(h, size, align);
}

/* A miss in class bin c: the thread's collected frees go to their bins first (T5; they may
 * hold a block of this class), then the bin refills. */
static RP_NOINLINE void *malloc_miss(rp_tcache *tc, unsigned c, size_t size)
{
    rp_malloc_free_collected(tc);
    if (tc->bins[c].count != 0)
        return rp_tc_pop(tc, c);
    rp_tc_count_miss(tc);
    return rp_tc_refill(tc, c, size, RP_MIN_ALIGN);
}

static RP_NOINLINE void *malloc_cached(rp_tcache *tc, size_t size)
{
    unsigned c = min_align_class(size);
    if (tc->bins[c].count != 0)
        return rp_tc_pop(tc, c);
    if (tc->freed_n == 0 && rp_tc_run_ready(tc, c, RP_MIN_ALIGN)) /* as in aligned_cached */
        return rp_tc_run_take(tc, c);
    return malloc_miss(tc, c, size);
}

/* malloc(0): an inaccessible zero-size block (zero_size.h), or where there is none, a block
 * of one byte's class. */
static RP_NOINLINE void *malloc_zero(void)
{
    void *p = rp_zs_alloc();
    if (p)
        return p;
    rp_tcache *tc = rp_tc_self;
    return tc ? malloc_cached(tc, 1) : alloc_general(1, RP_MIN_ALIGN);
}

/* malloc for the thread's cache tc (NULL: none yet, or no more), without counting it or running
 * the clock: malloc_impl does that first. */
static inline __attribute__((always_inline)) void *malloc_body(rp_tcache *tc, size_t size)
{
    /* 1 .. SMALL_REQUEST bytes (size 0 wraps around and takes malloc_cached): the class is
     * then (size - 1) / 16, min_align_class without its test for 0. */
    if (RP_LIKELY(size - 1 < SMALL_REQUEST && RP_HOOK_PREFIX == 0)) {
        if (RP_LIKELY(tc != NULL)) {
            /* The block size of the request's class (class (size - 1) / 16, whose blocks
             * have 16 * class + 32 bytes) gives its bin. */
            rp_tc_bin *bin = rp_tc_small_bin_of_block(tc, ((size - 1) & ~(size_t)15) + 32);
            if (RP_LIKELY(bin->count != 0))
                return rp_tc_pop_bin(tc, bin);
            return malloc_cached(tc, size); /* the refill; the bin is not kept live for it */
        }
    } else if (RP_UNLIKELY(size == 0)) {
        return malloc_zero();
    } else if (tc != NULL && size <= TC_MAX_REQUEST)
        return malloc_cached(tc, size);
    return alloc_general(size, RP_MIN_ALIGN);
}

/* An aligned allocation (align a power of two) for tc, not counted (see malloc_body). */
static inline __attribute__((always_inline)) void *aligned_body(rp_tcache *tc, size_t align, size_t size)
{
    if (align <= RP_MIN_ALIGN)
        return malloc_body(tc, size);
    void *p = RP_LIKELY(tc != NULL) ? aligned_cached(tc, align, size) : NULL;
    return p ? p : alloc_general(size, align);
}

/* The hardened profile's allocation (seal.h): a block of the request plus the seal's tail,
 * sealed. A request of 0 bytes at the minimum alignment keeps its inaccessible zero-size block. */
static RP_NOINLINE void *alloc_sealed(rp_tcache *tc, size_t align, size_t size)
{
    if (size == 0 && align <= RP_MIN_ALIGN)
        return malloc_zero();
    void *p = aligned_body(tc, align, rp_seal_need(size));
    if (p)
        seal(p, size);
    return p;
}

/* An allocation whose clock ran out (profile.h): the clock's event, then the allocation, then,
 * when it is sampled, its record. ra: the entry point's return address (profile_stack.h). */
/* 1 when this allocation is to be guarded (guard_pool.h): every one with guard=all, one in N
 * on average with guard=sample:N (a countdown drawn uniformly from 1 .. 2N - 1). */
static inline int guard_this(rp_tcache *tc)
{
    if (RP_LIKELY(!rp_gp_on))
        return 0;
    if (--tc->guard_countdown != 0)
        return 0;
    unsigned long n = rp_options_get()->guard;
    tc->guard_countdown = n <= 1 ? 1 : 1 + rp_xorshift_next(&tc->hq_rng) % (2 * (uint64_t)n - 1);
    return 1;
}

static RP_NOINLINE void *alloc_sampled(size_t align, size_t size, const void *ra)
{
    rp_tcache *tc = rp_tc_self;
    int sample = rp_prof_event(&tc->clock, size);
    void *p = guard_this(tc) ? rp_gp_alloc(size, align, ra) : NULL;
    if (!p)
        p = RP_UNLIKELY(tc->hardened) ? alloc_sealed(tc, align, size) : aligned_body(tc, align, size);
    rp_prof_after_event(p, size, ra, sample);
    return p;
}

/* Every allocation through a cache counts and runs the clock first (profile.h): a subtraction
 * and a sign test on the fast path. The entry points the program calls inline these, so the
 * return address is the program's. */
static inline __attribute__((always_inline)) void *malloc_impl(size_t size)
{
    rp_tcache *tc = rp_tc_self;
    if (RP_LIKELY(tc != NULL) && RP_UNLIKELY(rp_tc_tick(tc, size)))
        return alloc_sampled(RP_MIN_ALIGN, size, __builtin_return_address(0));
    return malloc_body(tc, size);
}

/* align: a power of two. */
static inline __attribute__((always_inline)) void *aligned_impl(size_t align, size_t size)
{
    rp_tcache *tc = rp_tc_self;
    if (RP_LIKELY(tc != NULL) && RP_UNLIKELY(rp_tc_tick(tc, size)))
        return alloc_sampled(align, size, __builtin_return_address(0));
    return aligned_body(tc, align, size);
}

/* ---- pointer classification ------------------------------------------------------------ */

/* The size of the live span block of a malloc arena whose user pointer is p (r = p's
 * region), validated like rp_free validates (alignment, header check word, not free), or 0
 * for anything else. */
static inline size_t arena_span_block(rp_region *r, const void *p)
{
    rp_heap *h = r->heap;
    if (!(h->flags & RP_HEAP_MALLOC_ARENA) || ((uintptr_t)p & (RP_GRANULE - 1)))
        return 0;
    rp_page *d = rp_page_of(r, p);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return 0;
    return rp_header_live_size(&h->key, rp_block_of_user(p));
}

/* The head descriptor of the live page-tier block of a malloc arena whose user pointer (its
 * first page) is p, or NULL. */
static inline rp_page *arena_page_block(rp_region *r, const void *p)
{
    if (!(r->heap->flags & RP_HEAP_MALLOC_ARENA) || ((uintptr_t)p & (RP_PAGE_SIZE - 1)) || RP_HOOK_PREFIX != 0)
        return NULL;
    rp_page *d = rp_page_of(r, p);
    return d->state == RP_PAGE_LARGE && d->u.large.lead_pages == 0 ? d : NULL;
}

static size_t arena_block_usable(const void *p)
{
    if (rp_ms_contains(p)) {
        uint32_t stride;
        return rp_slab_block_live(&rp_ms_space, p, &stride) ? stride : 0;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!r)
        return 0;
    size_t span = arena_span_block(r, p);
    if (span)
        return span - RP_USER_OFFSET;
    rp_page *d = arena_page_block(r, p);
    return d ? rp_large_usable(d) : 0;
}

/* The hardened profile's checks of the live block p (usable bytes) being freed: its seal must
 * hold (HS1 in seal.h), else the overflow is reported; then its neighbours (neighbour_check.h).
 * 0 when all hold: the block is unsealed then, so that other threads stop checking it as a
 * neighbour; -1 after a report (whose function returned): the free is abandoned. */
static RP_NOINLINE int hardened_free_checks(void *p, size_t usable)
{
    const unsigned char *bad;
    if (rp_seal_open(rp_arena_key(), p, usable, &bad) == SIZE_MAX) {
        rp_seal_report(p, usable, bad, "free");
        return -1;
    }
    int damaged;
    if (rp_ms_contains(p)) {
        damaged = rp_check_after_slab(p, (uint32_t)usable);
    } else {
        rp_region *r = rp_pagemap_lookup(p);
        uint8_t state = rp_page_of(r, p)->state;
        damaged = state == RP_PAGE_SPAN || state == RP_PAGE_SPAN_TAIL ? rp_check_below_span(r, p)
                                                                      : rp_check_below_pages(r, p);
    }
    if (damaged)
        return -1;
    clear_head_mark(p);
    rp_seal_clear(p, usable);
    return 0;
}

/* 1 if p, a live arena block, sits in some thread's cache (T4 in thread_cache.h). */
static int cached_anywhere(rp_region *r, const void *p)
{
    if (arena_span_block(r, p)) {
        const uint8_t *mark = rp_cache_mark_in(r, p);
        return mark && rp_cache_marked(mark);
    }
    rp_page *d = arena_page_block(r, p);
    return d && rp_tc_page_cached(d);
}

static RP_NOINLINE void report_cached(const void *p, const char *what)
{
    rp_heap *h = rp_ms_contains(p) ? rp_ms_owner(rp_slab_of(&rp_ms_space, p)) : rp_pagemap_lookup(p)->heap;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_DOUBLE_FREE, h, p, p, 0,
                 "%s(%p): the block in heap '%s' is not allocated (held in a thread cache: freed already, or "
                 "never handed out)", what, p, h ? h->name : "?");
    rp_report_fault(&f);
}

/* A pointer into the slab space that is not a live slab block (slab.h): freed before (its
 * allocated bit is clear) or never a block (inside one, past a slab's last block, a slab not
 * in use). */
static RP_NOINLINE void report_slab(const void *p, const char *what)
{
    rp_heap *h = rp_ms_owner(rp_slab_of(&rp_ms_space, p));
    int is_free;
    const char *is = rp_slab_describe(&rp_ms_space, p, &is_free);
    rp_fault f;
    f.kind = 0;
    if (is_free)
        rp_fault_set(&f, RP_ERR_DOUBLE_FREE, h, p, p, 0,
                     "%s(%p): the block in heap '%s' is already free (back in its slab)", what, p, h ? h->name : "?");
    else
        rp_fault_set(&f, RP_ERR_INVALID_FREE, h, p, NULL, 0, "%s(%p): not a block rampart handed out (slab memory: %s)",
                     what, p, is);
    rp_report_fault(&f);
}

/* 1 if the live slab block p sits in some cache (its mark, T4 in thread_cache.h). */
static int slab_cached(const void *p) { return rp_cache_marked(rp_cache_mark_of_slab(p)); }

/* ---- free ------------------------------------------------------------------------------ */

/* A pointer in no rampart heap: a mapped block freed before is a double free, always reported;
 * anything else (a stack or global address, another allocator's block) is counted, and
 * reported as an invalid free unless option ignore_foreign_free says to ignore it, or another
 * allocator is known to share the process (RP_MALLOC_COEXISTS). */
static RP_NOINLINE void free_foreign(void *p)
{
    if (rp_gp_contains(p)) { /* a guarded block (guard_pool.h) */
        int saved = errno;
        rp_gp_free(p, "free");
        errno = saved;
        return;
    }
    int freed_before = rp_mapped_block_freed_recently(p);
    if (!freed_before) {
        rp_malloc_count_foreign_free();
        if (RP_MALLOC_COEXISTS || rp_malloc_ignores_foreign())
            return;
    }
    int saved = errno;
    rp_report_foreign(p, "free: ");
    errno = saved;
}

/* rp_free, keeping errno (trimming the heap may set it). */
static RP_NOINLINE void free_direct(void *p)
{
    if (RP_UNLIKELY(rp_hardened_on())) {
        /* A span block's header is read without the lock: a check word being rewritten by
         * another thread reads as no block, so a miss is read again (a few times: a writer
         * holds the line for nanoseconds), before p is left to the heap as no block. */
        size_t usable = 0;
        for (int i = 0; i < 4 && !usable; i++)
            usable = arena_block_usable(p);
        if (usable && hardened_free_checks(p, usable))
            return;
        if (!usable)
            clear_head_mark(p); /* a block the reads missed must not leave its mark behind */
    }
    int saved = errno;
    rp_prof_forget(p); /* blocks without a mark (profile.h); nothing to do without samples */
    rp_free(p);
    errno = saved;
}

/* free() found p's cache mark set: a sampled block (profile.h) is forgotten and freed as any
 * other (1); a cached one is a double free, reported (0). */
static RP_NOINLINE int free_marked(void *p, const uint8_t *mark)
{
    if (__atomic_load_n(mark, __ATOMIC_RELAXED) == RP_CACHE_MARK_SAMPLED) {
        rp_prof_forget_marked(p);
        return 1;
    }
    report_cached(p, "free");
    return 0;
}

/* Caches the live arena span block p of size bytes (or reports it if it is cached already);
 * one too big to cache goes back to its heap. A slab block's slow paths pass its stride plus
 * a header: the size of a span block of its class. */
static inline void free_span_block(rp_tcache *tc, void *p, size_t size, uint8_t *mark)
{
    rp_tc_bin *bin;
    if (RP_UNLIKELY(mark == NULL)) { /* memory that keeps no cache marks: never cached */
        free_direct(p);
        return;
    }
    if (RP_LIKELY(size <= RP_TC_SMALL_MAX)) {
        bin = rp_tc_small_bin_of_block(tc, size); /* the class of exactly this size */
    } else {
        unsigned c = rp_tc_class_of_block(size);
        if (RP_UNLIKELY(c >= RP_TC_CLASSES)) {
            free_direct(p);
            return;
        }
        bin = &tc->bins[c];
    }
    if (RP_UNLIKELY(rp_cache_mark_busy(mark)) && !free_marked(p, mark))
        return;
    if (RP_UNLIKELY(tc->hardened)) {
        if (hardened_free_checks(p, size - RP_USER_OFFSET))
            return;
        rp_hq_put_class(tc, bin, p, mark, size - RP_USER_OFFSET);
        return;
    }
    rp_tc_push_bin(tc, bin, p, mark);
}

static void free_page_aligned(void *p);

/* A pointer in the slab space, examined (slabs on, tc a cache): a live slab block goes to the
 * bin of its class (rp_tc_small_bin_of_block of its stride plus a header) or is reported if
 * it is cached already; anything else is reported. */
static inline __attribute__((always_inline)) void free_slab_block(rp_tcache *tc, void *p)
{
    uint32_t stride = rp_slab_live_stride(tc->slab_meta, tc->slab_bits, (uintptr_t)p - tc->slab_lo);
    if (RP_UNLIKELY(stride == 0)) {
        report_slab(p, "free");
        return;
    }
    /* The bin of its class: a span block of the same usable size is a header longer. */
    rp_tc_bin *bin = rp_tc_small_bin_of_block(tc, stride + RP_USER_OFFSET);
    uint8_t *mark = tc->slab_marks + (((uintptr_t)p - tc->slab_lo) >> 4);
    if (RP_UNLIKELY(rp_cache_mark_busy(mark)) && !free_marked(p, mark))
        return;
    if (RP_UNLIKELY(tc->hardened)) {
        if (hardened_free_checks(p, stride))
            return;
        rp_hq_put_class(tc, bin, p, mark, stride);
        return;
    }
    rp_tc_push_bin(tc, bin, p, mark);
}

/* free's common case for a slab block at offset off of the slab space (release flavour): a
 * live block whose mark is clear, its bin below its limit, the cache not hardened, goes to its
 * bin; 0 for anything else, which free_slab_block sorts out. Only reads and stores: free's
 * fast path then ends in jumps and saves no registers. */
static inline __attribute__((always_inline)) int cache_slab_block(rp_tcache *tc, void *p, uintptr_t off)
{
    uint32_t stride = rp_slab_live_stride(tc->slab_meta, tc->slab_bits, off);
    if (RP_UNLIKELY(stride == 0))
        return 0;
    rp_tc_bin *bin = rp_tc_small_bin_of_block(tc, stride + RP_USER_OFFSET);
    uint8_t *mark = tc->slab_marks + (off >> 4);
    uint32_t count = bin->count;
    if (RP_UNLIKELY(rp_cache_mark_busy(mark) || count >= bin->limit || tc->hardened))
        return 0;
    bin->slots[count] = p;
    __atomic_store_n(&bin->count, count + 1, __ATOMIC_RELAXED);
    rp_cache_mark_set(mark);
    return 1;
}

/* A pointer in the slab space the fast path did not take (the thread has no cache, or p is
 * not 16-byte aligned): through the thread's cache if it can have one, else straight back to
 * its slab. */
static RP_NOINLINE void free_slab_slow(void *p)
{
    uint32_t stride;
    rp_slab *d = rp_slab_block_live(&rp_ms_space, p, &stride);
    if (!d) {
        report_slab(p, "free");
        return;
    }
    rp_tcache *tc = rp_tc_self;
    if (!tc)
        tc = rp_tc_get_slow();
    if (tc) {
        free_span_block(tc, p, stride + RP_USER_OFFSET, rp_cache_mark_of_slab(p));
        return;
    }
    if (slab_cached(p)) {
        report_cached(p, "free");
        return;
    }
    if (RP_UNLIKELY(rp_hardened_on())) { /* freed memory reads as zeros (hardened.h) */
        if (hardened_free_checks(p, stride))
            return;
        rp_memset_unchecked(p, 0, stride);
    }
    rp_prof_forget(p);
    int saved = errno;
    rp_ms_give_back(rp_ms_owner(d), &p, 1);
    errno = saved;
}

/* The free of a page-tier block by a thread without a cache: as in free_slow, a thread that
 * only frees gets one too, then p is freed again through it (or goes to its heap when the
 * thread cannot have one). Out of line, so that the common path saves no registers. */
static RP_NOINLINE void free_page_without_cache(void *p)
{
    if (rp_tc_get_slow())
        free_page_aligned(p);
    else
        free_direct(p);
}

/* The page-tier block p (head descriptor d) when its page bin is full or the cache is at its
 * cap: cached after making room, or back to its heap. Out of line, so that free_page_aligned
 * makes only tail calls. */
static RP_NOINLINE void free_page_no_room(rp_tcache *tc, void *p, rp_page *d)
{
    if (!rp_tc_page_push_slow(tc, p, d))
        free_direct(p);
}

/* Everything but the common small free and page-tier blocks (free_page_aligned): span blocks
 * the fast path did not take (page-aligned ones, frees without a cache), blocks of other
 * heaps, bad pointers. Kept out of free()'s body so that the small path stays a leaf
 * function without register saves. */
static RP_NOINLINE void free_slow(void *p)
{
    if (rp_ms_contains(p)) {
        free_slab_slow(p);
        return;
    }
    if (rp_zs_contains(p)) {
        int saved = errno;
        (void)rp_zs_free(p, "free: ");
        errno = saved;
        return;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (RP_UNLIKELY(r == NULL)) {
        free_foreign(p);
        return;
    }
    rp_tcache *tc = rp_tc_self;
    if (r->heap->flags & RP_HEAP_MALLOC_ARENA) {
        /* A thread that only frees (a consumer) gets a cache too, so its frees flush in
         * batches to the blocks' arenas instead of each taking a heap lock. */
        if (!tc)
            tc = rp_tc_get_slow();
        rp_page *d = rp_page_of(r, p);
        if ((d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) && ((uintptr_t)p & (RP_GRANULE - 1)) == 0) {
            size_t size = rp_header_live_size(&r->heap->key, rp_block_of_user(p));
            uint8_t *mark = rp_cache_mark_in(r, p);
            if (size && tc) {
                free_span_block(tc, p, size, mark);
                return;
            }
            if (size && mark && rp_cache_marked(mark)) {
                report_cached(p, "free");
                return;
            }
        }
    }
    /* Not cached: other heaps, big blocks, no cache, bad pointers (the core reports them). */
    free_direct(p);
}

/* A page-aligned pointer: usually the user pointer of a page-tier block of an arena (which
 * has no header: only its page descriptor tells), which goes into its page bin (at most
 * RP_TC_PAGE_BINS pages, room permitting; else back to its heap), or is reported if it is
 * cached already. Anything else (a page-aligned span block, another heap's block, not
 * rampart's) takes free_slow. Every call here is a tail call, so the common path sets up no
 * frame. */
static RP_NOINLINE void free_page_aligned(void *p)
{
    if (rp_tc_self) /* counted here (a thread without a cache comes back once it has one) */
        rp_tc_count_frees(rp_tc_self, 1);
    rp_region *r = rp_pagemap_lookup(p);
    if (RP_UNLIKELY(r == NULL || !(r->heap->flags & RP_HEAP_MALLOC_ARENA))) {
        free_slow(p);
        return;
    }
    rp_page *d = rp_page_of(r, p);
    if (RP_UNLIKELY(d->state != RP_PAGE_LARGE || d->u.large.lead_pages != 0 || RP_HOOK_PREFIX != 0)) {
        free_slow(p);
        return;
    }
    if (RP_UNLIKELY(rp_tc_page_flagged(d))) {
        if (rp_tc_page_cached(d)) {
            report_cached(p, "free");
            return;
        }
        rp_prof_forget_marked(p); /* sampled (profile.h) */
    }
    rp_tcache *tc = rp_tc_self;
    if (RP_UNLIKELY(!tc)) {
        free_page_without_cache(p);
        return;
    }
    if (RP_UNLIKELY(tc->hardened)) {
        if (hardened_free_checks(p, arena_block_usable(p)))
            return;
        rp_hq_put_pages(tc, p, d);
        return;
    }
    if (RP_UNLIKELY(d->npages > RP_TC_PAGE_BINS)) {
        free_direct(p);
        return;
    }
    if (RP_UNLIKELY(!rp_tc_page_push_fast(tc, p, d)))
        free_page_no_room(tc, p, d);
}

/* A 16-byte aligned pointer outside the slab space whose header would lie in its own page (it
 * is not page aligned), examined at its call: if its page belongs to a span of a malloc arena
 * (the address map says so before anything of the block is read, so a header forged outside
 * rampart's memory is never looked at) and the header in front of it is live under the key all
 * arenas share (A3), it goes to its bin, or is reported if it is cached already;
 * everything else (other heaps' blocks, foreign and bad pointers) takes free_slow. */
static inline __attribute__((always_inline)) void free_span_examined(rp_tcache *tc, void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    uint32_t size;
    if (RP_LIKELY(r != NULL && (r->heap->flags & RP_HEAP_MALLOC_ARENA))) {
        uint8_t state = rp_page_of(r, p)->state;
        const rp_block *b = rp_block_of_user(p);
        if (RP_LIKELY((state == RP_PAGE_SPAN || state == RP_PAGE_SPAN_TAIL) && rp_header_live(&tc->block_key, b, &size))) {
            /* Hardened: the next header too (the span's sentinel at the end); a block
             * overflowed into it goes to the heap, which checks it under the lock and
             * reports it. */
            if (RP_UNLIKELY(tc->hardened) && !rp_header_sound(&tc->block_key, (const rp_block *)((const char *)b + size)))
                free_direct(p);
            else
                free_span_block(tc, p, size, rp_cache_mark_in(r, p));
            return;
        }
    }
    free_slow(p);
}

/* Examines the first n collected frees of tc (T5 in thread_cache.h), in call order: pointers in
 * the slab space, each a live slab block or nothing (free_slab_block). The common case, a live
 * block not cached yet whose bin is not full, is done here, in place; anything else goes to
 * free_slab_block out of line, which may call the report function, which may free memory
 * itself and so overwrite tc->freed: the entries not examined yet are copied out before the
 * first such call. (Not before the loop: the array was just written by 8-byte stores, and a
 * wider copy would wait for them.) */
static RP_NOINLINE void examine_slow(rp_tcache *tc, void *p) { free_slab_block(tc, p); }

/* free_span_examined out of line: free's fast path calls nothing but in tail position. */
static RP_NOINLINE void free_span_out_of_line(rp_tcache *tc, void *p) { free_span_examined(tc, p); }

static RP_NOINLINE void examine_collected(rp_tcache *tc, uint32_t n)
{
    void *rest[RP_TC_FREED_MAX];
    void *const *batch = tc->freed;
    tc->freed_n = 0;
    rp_tc_count_frees(tc, n);
    const uintptr_t slab_lo = tc->slab_lo;
    const uint64_t *slab_meta = tc->slab_meta, *slab_bits = tc->slab_bits;
    uint8_t *slab_marks = tc->slab_marks;
    const int hardened = tc->hardened; /* its frees take free_slab_block (quarantine) */
    for (uint32_t i = 0; i < n; i++) {
        void *p = batch[i];
        uintptr_t off = (uintptr_t)p - slab_lo;
        uint32_t stride = rp_slab_live_stride(slab_meta, slab_bits, off);
        if (RP_LIKELY(stride != 0)) {
            rp_tc_bin *bin = rp_tc_small_bin_of_block(tc, stride + RP_USER_OFFSET);
            uint8_t *mark = slab_marks + (off >> 4);
            size_t count = bin->count;
            if (RP_LIKELY(!rp_cache_mark_busy(mark) && count < bin->limit && !hardened)) {
                bin->slots[count] = p;
                __atomic_store_n(&bin->count, (uint32_t)(count + 1), __ATOMIC_RELAXED);
                rp_cache_mark_set(mark);
                continue;
            }
        }
        if (batch == tc->freed) {
            memcpy(rest + i + 1, tc->freed + i + 1, (n - i - 1) * sizeof rest[0]);
            batch = rest;
        }
        examine_slow(tc, p);
    }
}

void rp_malloc_free_collected(rp_tcache *tc)
{
    if (tc->freed_n != 0)
        examine_collected(tc, tc->freed_n);
}

/* Records p, a pointer in the slab space, in tc's free batch (T5), examining the batch when it
 * is full. Examining reads the slab's metadata (no header: slab.h) and writes p's cache mark;
 * nothing of the block itself. */
static inline __attribute__((always_inline)) void collect_free(rp_tcache *tc, void *p)
{
    uint32_t n = tc->freed_n;
    rp_prefetch_for_write(tc->slab_marks + (((uintptr_t)p - tc->slab_lo) >> 4));
    tc->freed[n] = p;
    if (RP_UNLIKELY(++n >= tc->freed_limit))
        examine_collected(tc, n);
    else
        tc->freed_n = n;
}

static inline __attribute__((always_inline)) void free_impl(void *p)
{
    rp_tcache *tc = rp_tc_self;
    /* Fast paths, for a 16-byte aligned pointer with a cache. In the slab space (reserved for
     * the arenas' slabs and never unmapped, so a pointer in it may be examined later without
     * knowing anything more of it now) outside the thread's near region: collected into its
     * free batch with its line prefetched, nothing of it read now (T5 in thread_cache.h); a full
     * batch is examined at once. Inside the near region (a block this thread most likely took
     * itself, still in this CPU's cache) and in the debug flavour (whose hooks report from
     * free's own frame): examined here. Elsewhere, a pointer that is not page aligned is
     * examined here (free_span_examined). Everything else, NULL included, takes the
     * page-aligned or the slow path at its call. */
    if (RP_LIKELY(tc != NULL && ((uintptr_t)p & (RP_GRANULE - 1)) == 0)) {
        if (RP_LIKELY((uintptr_t)p - tc->slab_lo < tc->slab_len)) {
            if (RP_HOOK_PREFIX == 0 && (uintptr_t)p - tc->near_lo >= tc->near_len) {
                collect_free(tc, p); /* counted when examined */
            } else {
                rp_tc_count_frees(tc, 1);
                if (RP_HOOK_PREFIX != 0)
                    free_slab_block(tc, p);
                else if (RP_UNLIKELY(!cache_slab_block(tc, p, (uintptr_t)p - tc->slab_lo)))
                    examine_slow(tc, p);
            }
            return;
        }
        if (((uintptr_t)p & (RP_PAGE_SIZE - RP_GRANULE)) != 0) {
            rp_tc_count_frees(tc, 1);
            if (RP_HOOK_PREFIX != 0)
                free_span_examined(tc, p);
            else
                free_span_out_of_line(tc, p);
            return;
        }
    }
    if (((uintptr_t)p & (RP_PAGE_SIZE - 1)) == 0) {
        if (p)
            free_page_aligned(p);
        return;
    }
    free_slow(p);
}

/* ---- realloc ---------------------------------------------------------------------------- */

/* realloc of a pointer in no rampart heap: its size is unknown, it cannot be moved. Reported
 * whatever ignore_foreign_free says (the program would read past the end of whatever it is). */
static RP_NOINLINE void *realloc_foreign(void *p)
{
    rp_report_foreign(p, "realloc: ");
    errno = EINVAL;
    return NULL;
}

/* realloc of a pointer in the slab space: a live slab block stays where it is if the size
 * fits its stride and uses at least half of it, else moves (through the thread caches, like
 * small span blocks). */
static RP_NOINLINE void *realloc_slab(void *p, size_t size)
{
    uint32_t stride;
    if (!rp_slab_block_live(&rp_ms_space, p, &stride)) {
        report_slab(p, "realloc");
        errno = EINVAL;
        return NULL;
    }
    if (slab_cached(p)) {
        report_cached(p, "realloc");
        errno = EINVAL;
        return NULL;
    }
    if (size <= stride && size >= (stride >> 1))
        return p;
    void *q = malloc_impl(size);
    if (q) {
        memcpy(q, p, stride < size ? stride : size);
        free_impl(p);
    }
    return q;
}

/* realloc of a pointer in the zero-size range: a zero-size block has no bytes to keep. */
static RP_NOINLINE void *realloc_zero(void *p, size_t size)
{
    if (!rp_zs_live(p)) {
        (void)rp_zs_free(p, "realloc: "); /* reports it */
        errno = EINVAL;
        return NULL;
    }
    void *q = malloc_impl(size);
    if (q)
        (void)rp_zs_free(p, "realloc: ");
    return q;
}

/* realloc by the heap (rp_realloc: larger blocks grow or shrink in place, or move): an
 * allocation and a free for the counts and the clock (profile.h). A sample of p is forgotten
 * before the heap may free p's memory for another thread to reuse; a sampled new block is
 * recorded. */
static RP_NOINLINE void *realloc_core(void *p, size_t size, const void *ra)
{
    rp_tcache *tc = rp_tc_self;
    int event = 0, sample = 0;
    if (tc) {
        rp_tc_count_frees(tc, 1);
        rp_tc_count_miss(tc);
        if ((event = rp_tc_tick(tc, size)) != 0)
            sample = rp_prof_event(&tc->clock, size);
    }
    rp_prof_saved saved;
    int was_sampled = rp_prof_detach(p, &saved);
    void *q = rp_realloc(NULL, p, size);
    if (was_sampled)
        rp_prof_reattach(&saved, q);
    if (event)
        rp_prof_after_event(q, size, ra, sample);
    return q;
}

/* The usable bytes of block p, whatever the profile (a sealed block's seal included), or 0 with
 * a report for a pointer that is not a block (what: the call, "malloc_usable_size"; prefix:
 * the same as a report's prefix, "malloc_usable_size: "). */
static size_t block_usable(void *p, const char *what, const char *prefix);

/* 1 if p is a block held by a thread cache or quarantine (freed), reported then as a double
 * free by `what`. */
static int block_cached(const void *p, const char *what);

/* realloc in the hardened profile: always a new sealed block (the old one is checked, then
 * quarantined like any free), so no block keeps a stale seal and a pointer kept past the
 * realloc points to freed memory. */
static RP_NOINLINE void *realloc_sealed(void *p, size_t size)
{
    if (rp_zs_contains(p))
        return realloc_zero(p, size);
    size_t usable = block_usable(p, "realloc", "realloc: ");
    if (!usable || block_cached(p, "realloc")) {
        errno = EINVAL;
        return NULL;
    }
    const unsigned char *bad;
    size_t n = rp_seal_open(rp_arena_key(), p, usable, &bad);
    if (n == SIZE_MAX) {
        rp_seal_report(p, usable, bad, "realloc");
        errno = EINVAL;
        return NULL;
    }
    void *q = malloc_impl(size);
    if (q) {
        memcpy(q, p, n < size ? n : size);
        free_impl(p);
    }
    return q;
}

/* realloc of a guarded block (guard_pool.h): always a new block (guarded or not, as any
 * allocation), the old one quarantined. */
static RP_NOINLINE void *realloc_guarded(void *p, size_t size)
{
    size_t n = rp_gp_usable(p, "realloc");
    if (!n) {
        errno = EINVAL;
        return NULL;
    }
    void *q = malloc_impl(size);
    if (q) {
        memcpy(q, p, n < size ? n : size);
        int saved = errno;
        rp_gp_free(p, "realloc");
        errno = saved;
    }
    return q;
}

static void *realloc_impl(void *p, size_t size)
{
    if (!p)
        return malloc_impl(size);
    if (size == 0) {
        free_impl(p);
        return NULL;
    }
    if (RP_UNLIKELY(rp_gp_contains(p)))
        return realloc_guarded(p, size);
    if (RP_UNLIKELY(rp_hardened_on()))
        return realloc_sealed(p, size);
    /* A block this thread freed and has not examined yet (T5) is found cached below. */
    if (rp_tc_self)
        rp_malloc_free_collected(rp_tc_self);
    if (rp_ms_contains(p))
        return realloc_slab(p, size);
    if (rp_zs_contains(p))
        return realloc_zero(p, size);
    rp_region *r = rp_pagemap_lookup(p);
    if (!r)
        return realloc_foreign(p);
    if (cached_anywhere(r, p)) {
        report_cached(p, "realloc");
        errno = EINVAL;
        return NULL;
    }
    size_t span_size = arena_span_block(r, p);
    if (span_size && RP_HOOK_PREFIX == 0) {
        size_t usable = span_size - RP_USER_OFFSET;
        /* Fits, and does not waste more than half the block: keep it. */
        if (size <= usable && size >= (usable >> 1))
            return p;
        /* Small blocks move through the thread caches (no lock); the core keeps the
         * in-place growth and shrinking of larger ones. */
        if (size <= TC_MAX_REQUEST && usable <= TC_MAX_REQUEST) {
            void *q = malloc_impl(size);
            if (q) {
                memcpy(q, p, usable < size ? usable : size);
                free_impl(p);
            }
            return q;
        }
    }
    return realloc_core(p, size, __builtin_return_address(0));
}

/* ---- the C and POSIX functions ----------------------------------------------------------- */

void *malloc(size_t size) { return malloc_impl(size); }

void free(void *p) { free_impl(p); }

/* calloc of more than the page bins hold: from the heap, which knows whether the pages are
 * fresh from the OS (zero already, not to be faulted in by a memset: rp_calloc). */
static RP_NOINLINE void *calloc_from_heap(size_t total, const void *ra)
{
    if (RP_UNLIKELY(rp_hardened_on() || rp_gp_on)) { /* a sealed or guarded block: zeroed up to the request */
        void *p = malloc_impl(total);
        if (p)
            memset(p, 0, total);
        return p;
    }
    rp_heap *h;
    rp_tcache *tc = cache_for_slow_path(&h);
    int event = 0, sample = 0;
    if (tc) {
        rp_tc_count_miss(tc);
        if ((event = rp_tc_tick(tc, total)) != 0)
            sample = rp_prof_event(&tc->clock, total);
    }
    void *p = rp_calloc(h, 1, total, 0);
    if (event)
        rp_prof_after_event(p, total, ra, sample);
    return p;
}

void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (total > ((size_t)RP_TC_PAGE_BINS << RP_PAGE_SHIFT))
        return calloc_from_heap(total, __builtin_return_address(0));
    void *p = malloc_impl(total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *realloc(void *p, size_t size) { return realloc_impl(p, size); }

void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_impl(p, total);
}

/* posix_memalign for what aligned_cached cannot serve, or (ra non-NULL) an allocation whose
 * clock ran out (alloc_sampled): the general path may set errno, which posix_memalign must
 * leave alone. */
static RP_NOINLINE int posix_memalign_general(void **out, size_t align, size_t size, const void *ra)
{
    int *err = &errno;
    int saved = *err;
    rp_tcache *tc = rp_tc_self;
    void *p = ra ? alloc_sampled(align, size, ra) : aligned_body(tc, align, size);
    *err = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

int posix_memalign(void **out, size_t align, size_t size)
{
    /* A power of two and a multiple of sizeof(void *); errno is left alone either way. */
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    rp_tcache *tc = rp_tc_self;
    if (RP_LIKELY(tc != NULL) && RP_UNLIKELY(rp_tc_tick(tc, size)))
        return posix_memalign_general(out, align, size, __builtin_return_address(0));
    void *p = RP_LIKELY(tc != NULL) ? aligned_cached(tc, align, size) : NULL;
    if (RP_LIKELY(p != NULL)) {
        *out = p;
        return 0;
    }
    return posix_memalign_general(out, align, size, NULL);
}

void *aligned_alloc(size_t align, size_t size)
{
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return aligned_impl(align, size);
}

/* memalign's body. Callers inside the drop-in use it, not memalign: glibc declares memalign
 * alloc_align(1), and an alignment of 0 or a non-power of two is no alignment to assume. */
static void *memalign_impl(size_t align, size_t size)
{
    if (align > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (align & (align - 1))
        align = (size_t)1 << (rp_fls(align) + 1);
    return aligned_impl(align, size);
}

void *memalign(size_t align, size_t size) { return memalign_impl(align, size); }

void *valloc(size_t size) { return aligned_impl(RP_PAGE_SIZE, size); }

void *pvalloc(size_t size)
{
    if (size > SIZE_MAX - RP_PAGE_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned_impl(RP_PAGE_SIZE, rp_align_up(size ? size : 1, RP_PAGE_SIZE));
}

static size_t block_usable(void *p, const char *what, const char *prefix)
{
    if (rp_ms_contains(p)) {
        uint32_t stride;
        if (rp_slab_block_live(&rp_ms_space, p, &stride))
            return stride;
        report_slab(p, what);
        return 0;
    }
    if (rp_zs_contains(p)) { /* a zero-size block has no usable byte */
        if (!rp_zs_live(p))
            (void)rp_zs_free(p, prefix); /* reports it */
        return 0;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!r) {
        if (!RP_MALLOC_COEXISTS && !rp_malloc_ignores_foreign())
            rp_report_foreign(p, prefix);
        return 0;
    }
    size_t span_size = arena_span_block(r, p);
    if (span_size && RP_HOOK_PREFIX == 0)
        return span_size - RP_USER_OFFSET;
    return rp_usable_size(p);
}

static int block_cached(const void *p, const char *what)
{
    uint32_t stride;
    rp_region *r;
    int cached = rp_ms_contains(p) ? rp_slab_block_live(&rp_ms_space, p, &stride) && slab_cached(p)
                                   : (r = rp_pagemap_lookup(p)) != NULL && cached_anywhere(r, p);
    if (cached)
        report_cached(p, what);
    return cached;
}

/* The request of sealed block p (hardened profile, seal.h), or 0 with a report for a freed
 * block, a pointer that is not a block, or a broken seal. A zero-size block: 0. */
static size_t sealed_request(void *p, const char *what, const char *prefix)
{
    if (rp_zs_contains(p))
        return block_usable(p, what, prefix);
    if (block_cached(p, what))
        return 0;
    size_t usable = block_usable(p, what, prefix);
    if (!usable)
        return 0;
    const unsigned char *bad;
    size_t n = rp_seal_open(rp_arena_key(), p, usable, &bad);
    if (n != SIZE_MAX)
        return n;
    rp_seal_report(p, usable, bad, what);
    return 0;
}

size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (RP_UNLIKELY(rp_gp_contains(p)))
        return rp_gp_usable(p, "malloc_usable_size");
    if (RP_UNLIKELY(rp_hardened_on()))
        return sealed_request(p, "malloc_usable_size", "malloc_usable_size: ");
    return block_usable(p, "malloc_usable_size", "malloc_usable_size: ");
}

/* Old names and glibc's internal aliases some programs call directly (functions, not
 * aliases: gcc and clang disagree on how an alias inherits the libc declarations). */
void cfree(void *p);
void cfree(void *p) { free_impl(p); }
/* free_sized, free_aligned_sized and C++'s sized operator delete: the size the program gives
 * must fit the block (C23 and C++ leave a mismatch undefined; ASan reports it as a
 * new-delete type mismatch). A block smaller than that size is reported as an invalid free
 * and left alone; anything else is freed as by free(). */
static RP_NOINLINE void report_size_mismatch(void *p, size_t size, size_t usable, const char *what)
{
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_INVALID_FREE, rp_heap_of(p), p, p, usable,
                 "%s(%p, %zu): the block holds %zu bytes: freed as something bigger (another type, or "
                 "another allocation's size)",
                 what, p, size, usable);
    rp_report_fault(&f);
}

static RP_NOINLINE void free_with_size_checked(void *p, size_t size, const char *what)
{
    if (p && size) {
        size_t usable = malloc_usable_size(p);
        if (usable && size > usable) {
            report_size_mismatch(p, size, usable, what);
            return;
        }
    }
    free_impl(p);
}

/* The common case inline: a pointer into a slab of blocks of at least the size given (a live
 * block's usable size is its slab's stride), read from the slab's metadata word, which no
 * allocation writes; whether a live block starts there is free's to find out, as for any
 * pointer into the slab space. Not in the hardened profile, whose check is against the request
 * its seal keeps, nor in the debug flavour (the request in the block's metadata). */
static inline __attribute__((always_inline)) void free_with_size(void *p, size_t size, const char *what)
{
    rp_tcache *tc = rp_tc_self;
    if (RP_HOOK_PREFIX == 0 && RP_LIKELY(tc != NULL) && !tc->hardened && ((uintptr_t)p & (RP_GRANULE - 1)) == 0) {
        uintptr_t off = (uintptr_t)p - tc->slab_lo;
        if (RP_LIKELY(off < tc->slab_len)) {
            uint32_t stride = rp_slab_stride_at(tc->slab_meta, off);
            if (RP_LIKELY(stride != 0 && size <= stride)) {
                free_impl(p);
                return;
            }
        }
    }
    free_with_size_checked(p, size, what);
}

void free_sized(void *p, size_t size);
void free_sized(void *p, size_t size) { free_with_size(p, size, "free_sized"); }
void free_aligned_sized(void *p, size_t align, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size)
{
    (void)align;
    free_with_size(p, size, "free_aligned_sized");
}
/* operator delete(void *, size_t), operator delete[](void *, size_t) and their align_val_t
 * forms (what C++14 programs call to delete an object of known size). */
void _ZdlPvm(void *p, size_t size);
void _ZdlPvm(void *p, size_t size) { free_with_size(p, size, "operator delete"); }
void _ZdaPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size) { free_with_size(p, size, "operator delete[]"); }
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
    (void)align;
    free_with_size(p, size, "operator delete");
}
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
    (void)align;
    free_with_size(p, size, "operator delete[]");
}
/* ---- C++ operator new and delete ------------------------------------------------------ */

/* Not under a sanitizer: its runtime brings operators that pair with its own allocator, which
 * keeps serving the runtime and libc there (src/malloc/sanitizers.bzl); a fuzzer's C++ runtime
 * mixing the two failed on its first delete. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RP_CXX_OPERATORS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RP_CXX_OPERATORS 0
#endif
#endif
#ifndef RP_CXX_OPERATORS
#define RP_CXX_OPERATORS 1
#endif
#if RP_CXX_OPERATORS

/* The C++ runtime's operators would each add a call through the PLT around malloc and free;
 * these are the same fast paths, and the return address the heap profiler records is the
 * program's. operator new never returns NULL: when rampart has no block, the next definition
 * of the same operator (the C++ runtime's: RTLD_NEXT) takes over, which calls malloc again,
 * runs the program's new_handler and throws std::bad_alloc (the nothrow forms return NULL),
 * exactly as without rampart. Alignments that are not powers of two go there too. */
static RP_NOINLINE void *cxx_new_next(const char *name, size_t size, size_t align, const void *nothrow, int form)
{
    void *next = dlsym(RTLD_NEXT, name);
    if (!next) { /* a program calling operator new has a C++ runtime: cannot happen */
        static const char line[] = "rampart: operator new: out of memory and no C++ runtime to throw std::bad_alloc\n";
        if (write(STDERR_FILENO, line, sizeof line - 1) < 0)
            abort();
        abort();
    }
    switch (form) {
    case 0:
        return ((void *(*)(size_t))next)(size);
    case 1:
        return ((void *(*)(size_t, const void *))next)(size, nothrow);
    case 2:
        return ((void *(*)(size_t, size_t))next)(size, align);
    default:
        return ((void *(*)(size_t, size_t, const void *))next)(size, align, nothrow);
    }
}

static inline __attribute__((always_inline)) void *cxx_new_aligned(size_t size, size_t align)
{
    return align != 0 && (align & (align - 1)) == 0 ? aligned_impl(align, size) : NULL;
}

#define RP_CXX_NEW(name)                                                                                               \
    void *name(size_t size);                                                                                           \
    void *name(size_t size)                                                                                            \
    {                                                                                                                  \
        void *p = malloc_impl(size);                                                                                   \
        return RP_LIKELY(p != NULL) ? p : cxx_new_next(#name, size, 0, NULL, 0);                                       \
    }
#define RP_CXX_NEW_NOTHROW(name)                                                                                       \
    void *name(size_t size, const void *nothrow);                                                                      \
    void *name(size_t size, const void *nothrow)                                                                       \
    {                                                                                                                  \
        void *p = malloc_impl(size);                                                                                   \
        return RP_LIKELY(p != NULL) ? p : cxx_new_next(#name, size, 0, nothrow, 1);                                    \
    }
#define RP_CXX_NEW_ALIGNED(name)                                                                                       \
    void *name(size_t size, size_t align);                                                                             \
    void *name(size_t size, size_t align)                                                                              \
    {                                                                                                                  \
        void *p = cxx_new_aligned(size, align);                                                                        \
        return RP_LIKELY(p != NULL) ? p : cxx_new_next(#name, size, align, NULL, 2);                                   \
    }
#define RP_CXX_NEW_ALIGNED_NOTHROW(name)                                                                               \
    void *name(size_t size, size_t align, const void *nothrow);                                                        \
    void *name(size_t size, size_t align, const void *nothrow)                                                         \
    {                                                                                                                  \
        void *p = cxx_new_aligned(size, align);                                                                        \
        return RP_LIKELY(p != NULL) ? p : cxx_new_next(#name, size, align, nothrow, 3);                                \
    }
/* operator delete without a size (with one: _ZdlPvm above), in every form: free(). The
 * alignment and nothrow_t arguments change nothing. */
#define RP_CXX_DELETE(name)                                                                                            \
    void name(void *p);                                                                                                \
    void name(void *p) { free_impl(p); }
#define RP_CXX_DELETE_WITH(name, extra)                                                                                \
    void name(void *p, extra);                                                                                         \
    void name(void *p, extra unused) { (void)unused; free_impl(p); }
#define RP_CXX_DELETE_ALIGNED_NOTHROW(name)                                                                            \
    void name(void *p, size_t align, const void *nothrow);                                                             \
    void name(void *p, size_t align, const void *nothrow)                                                              \
    {                                                                                                                  \
        (void)align;                                                                                                   \
        (void)nothrow;                                                                                                 \
        free_impl(p);                                                                                                  \
    }

RP_CXX_NEW(_Znwm)                                          /* operator new(size_t) */
RP_CXX_NEW(_Znam)                                          /* operator new[](size_t) */
RP_CXX_NEW_NOTHROW(_ZnwmRKSt9nothrow_t)                    /* operator new(size_t, nothrow_t const&) */
RP_CXX_NEW_NOTHROW(_ZnamRKSt9nothrow_t)                    /* operator new[](size_t, nothrow_t const&) */
RP_CXX_NEW_ALIGNED(_ZnwmSt11align_val_t)                   /* operator new(size_t, align_val_t) */
RP_CXX_NEW_ALIGNED(_ZnamSt11align_val_t)                   /* operator new[](size_t, align_val_t) */
RP_CXX_NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t) /* ... align_val_t, nothrow_t const&) */
RP_CXX_NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t)
RP_CXX_DELETE(_ZdlPv)                                           /* operator delete(void *) */
RP_CXX_DELETE(_ZdaPv)                                           /* operator delete[](void *) */
RP_CXX_DELETE_WITH(_ZdlPvRKSt9nothrow_t, const void *)          /* operator delete(void *, nothrow_t const&) */
RP_CXX_DELETE_WITH(_ZdaPvRKSt9nothrow_t, const void *)
RP_CXX_DELETE_WITH(_ZdlPvSt11align_val_t, size_t)               /* operator delete(void *, align_val_t) */
RP_CXX_DELETE_WITH(_ZdaPvSt11align_val_t, size_t)
RP_CXX_DELETE_ALIGNED_NOTHROW(_ZdlPvSt11align_val_tRKSt9nothrow_t)
RP_CXX_DELETE_ALIGNED_NOTHROW(_ZdaPvSt11align_val_tRKSt9nothrow_t)
#endif /* RP_CXX_OPERATORS */

void *__libc_malloc(size_t size);
void *__libc_malloc(size_t size) { return malloc_impl(size); }
void __libc_free(void *p);
void __libc_free(void *p) { free_impl(p); }
void *__libc_calloc(size_t n, size_t size);
void *__libc_calloc(size_t n, size_t size) { return calloc(n, size); }
void *__libc_realloc(void *p, size_t size);
void *__libc_realloc(void *p, size_t size) { return realloc_impl(p, size); }
void *__libc_memalign(size_t align, size_t size);
void *__libc_memalign(size_t align, size_t size) { return memalign_impl(align, size); }
void *__libc_valloc(size_t size);
void *__libc_valloc(size_t size) { return valloc(size); }
void *__libc_pvalloc(size_t size);
void *__libc_pvalloc(size_t size) { return pvalloc(size); }

/* ---- glibc's malloc.h extras ------------------------------------------------------------- */

int malloc_trim(size_t pad)
{
    rp_malloc_thread_flush();
    size_t released = 0;
    int drained = 0;
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (!h)
            continue;
        if (rp_xfer_of(h)) {
            int saved = errno;
            rp_xfer_drain(rp_xfer_of(h), h);
            errno = saved;
        }
        released += rp_heap_trim(h, pad);
        drained = 1;
    }
    /* After the transfer caches were drained (their slab blocks went back to their pools). */
    if (drained)
        released += rp_ms_trim() << RP_SLAB_SHIFT;
    return released > 0;
}

void malloc_stats(void) { rp_malloc_stats_print(NULL, NULL); }

int mallopt(int param, int value)
{
    (void)param, (void)value;
    return 1; /* accepted; rampart is tuned through RAMPART_OPTIONS */
}

struct mallinfo2 mallinfo2(void)
{
    struct mallinfo2 mi;
    memset(&mi, 0, sizeof mi);
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap_stats_t st;
        rp_heap *h = rp_arena_get(i);
        if (!h || rp_heap_stats(h, &st) != 0)
            continue;
        mi.arena += st.os_bytes;
        mi.ordblks += st.blocks_free;
        mi.hblks += st.large_blocks;
        mi.uordblks += st.bytes_in_use;
        mi.fordblks += st.bytes_free;
        mi.keepcost += st.page_free_bytes;
    }
    /* Slabs (malloc_slabs.h): their memory, their live blocks, the rest of them free. */
    rp_ms_totals_t t;
    rp_ms_totals(&t);
    mi.arena += t.slab_bytes;
    mi.uordblks += t.live_bytes;
    mi.fordblks += t.slab_bytes - t.live_bytes;
    return mi;
}

struct mallinfo mallinfo(void)
{
    struct mallinfo2 m = mallinfo2();
    struct mallinfo mi;
    memset(&mi, 0, sizeof mi);
    mi.arena = (int)m.arena;
    mi.ordblks = (int)m.ordblks;
    mi.hblks = (int)m.hblks;
    mi.uordblks = (int)m.uordblks;
    mi.fordblks = (int)m.fordblks;
    mi.keepcost = (int)m.keepcost;
    return mi;
}
