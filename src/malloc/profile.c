#define _GNU_SOURCE
#include "profile.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cache_mark.h"
#include "debug/rampart_dump.h"
#include "debug/stack_depot.h"
#include "malloc_slabs.h"
#include "malloc_totals.h"
#include "profile_stack.h"
#include "profile_table.h"
#include "sample_math.h"
#include "src/heap.h"
#include "src/lock.h"
#include "src/options.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "src/xorshift.h"

/* Tells the options parser that this library has the heap profiler (src/options.h). */
const char rp_options_part_profile = 1;

int rp_prof_enabled;
size_t rp_prof_live;

static size_t rate;          /* profile_rate; 0 = every allocation */
static uint64_t seed;        /* profile_seed, or from the clock */
static uint64_t temporary_ns; /* temporary_ms */

/* Under lock: the table and the counters. */
static rp_lock lock = PTHREAD_MUTEX_INITIALIZER;
static rp_pt_table table;
static rp_prof_stats counters;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- the dump writer's sample source ------------------------------------------------------ */

typedef struct put_arg {
    rp_dump_sample_fn put;
    void *arg;
} put_arg;

static int put_record(void *arg, const rp_pt_record *r)
{
    put_arg *a = arg;
    rp_dump_sample s = {(const void *)r->addr, r->size, r->rate, r->alloc_ns, r->stack,
                        rp_ms_contains((const void *)r->addr) ? RP_DUMP_SAMPLE_SLAB : 0};
    return a->put(a->arg, &s);
}

static void foreach_sample(void *ctx, rp_dump_sample_fn put, void *arg)
{
    (void)ctx;
    put_arg a = {put, arg};
    rp_lock_acquire(&lock);
    rp_pt_foreach(&table, put_record, &a);
    rp_lock_release(&lock);
}

typedef struct stack_arg {
    rp_dump_stack_fn put;
    void *arg;
} stack_arg;

static int put_stack(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    stack_arg *a = arg;
    return a->put(a->arg, id, frames, n);
}

/* Every stack of the depot: in the release flavour it holds only the samples' stacks. */
static void foreach_stack(void *ctx, rp_dump_stack_fn put, void *arg)
{
    (void)ctx;
    stack_arg a = {put, arg};
    rp_depot_foreach(put_stack, &a);
}

static const rp_dump_sample_source source = {foreach_sample, foreach_stack, NULL};

/* ---- set-up and the clock ------------------------------------------------------------------ */

void rp_prof_setup(void)
{
    const rp_options *o = rp_options_get();
    temporary_ns = (uint64_t)o->temporary_ms * 1000000u;
#ifdef RAMPART_DEBUG
    /* The debug flavour records every block's stack already (the options warn about profile). */
    return;
#endif
    if (!o->profile)
        return;
    rate = o->profile_rate;
    seed = o->profile_seed ? o->profile_seed : now_ns() ^ (uint64_t)(uintptr_t)&seed;
    /* During set-up: pthread_atfork may allocate, which then takes the direct path. */
    pthread_atfork(rp_prof_fork_prepare, rp_prof_fork_parent, rp_prof_fork_child);
    rp_dump_set_sample_source(&source);
    __atomic_store_n(&rp_prof_enabled, 1, __ATOMIC_RELEASE);
}

/* The state is never 0 (rp_prof_clock_start). */
static uint64_t next_random(rp_prof_clock *c) { return rp_xorshift_next(&c->rng); }

/* Bytes to the next sample point: exponential of mean rate, at least 1. */
static intptr_t next_interval(rp_prof_clock *c)
{
    double u = (double)((next_random(c) >> 11) + 1) * 0x1p-53; /* (0, 1] */
    double d = -rp_sample_ln(u) * (double)rate;
    return d < 1 ? 1 : d > 0x1p62 ? (intptr_t)1 << 62 : (intptr_t)d;
}

void rp_prof_clock_start(rp_prof_clock *c, uint64_t index)
{
    memset(c, 0, sizeof *c);
    c->rng = rp_mix64(seed + 0x9e3779b97f4a7c15ull * (index + 1)) | 1;
    intptr_t first = RP_PROF_FOLD_BYTES;
    if (__atomic_load_n(&rp_prof_enabled, __ATOMIC_ACQUIRE))
        first = rate ? next_interval(c) : 0;
    c->left = c->armed = first;
}

uint64_t rp_prof_clock_bytes(const rp_prof_clock *c)
{
    intptr_t armed = __atomic_load_n(&c->armed, __ATOMIC_RELAXED), left = __atomic_load_n(&c->left, __ATOMIC_RELAXED);
    return __atomic_load_n(&c->bytes, __ATOMIC_RELAXED) + ((uint64_t)armed - (uint64_t)left);
}

void rp_prof_clock_every(rp_prof_clock *c)
{
    c->due = c->left;
    c->every = 1;
    c->left = c->armed = -1; /* bytes + armed - left stays the bytes counted */
}

/* An event of a clock in every-event mode: size counted at once, the real countdown in due.
 * A request of 2^63 bytes or more (which fails) leaves left positive: the next event the
 * caller forces (rp_prof_clock_rearm) sets it back. */
static int every_event(rp_prof_clock *c, size_t size)
{
    __atomic_store_n(&c->bytes, c->bytes + size, __ATOMIC_RELAXED);
    __atomic_store_n(&c->armed, (intptr_t)-1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->left, (intptr_t)-1, __ATOMIC_RELAXED);
    c->due = (intptr_t)((uintptr_t)c->due - (uintptr_t)size);
    if (c->due >= 0)
        return RP_PROF_QUIET;
    int sample = __atomic_load_n(&rp_prof_enabled, __ATOMIC_ACQUIRE);
    c->due = sample ? (rate ? next_interval(c) : 0) : RP_PROF_FOLD_BYTES;
    return sample;
}

void rp_prof_clock_rearm(rp_prof_clock *c)
{
    if (c->every)
        __atomic_store_n(&c->left, (intptr_t)-1, __ATOMIC_RELAXED);
}

int rp_prof_event(rp_prof_clock *c, size_t size)
{
    if (c->every)
        return every_event(c, size);
    __atomic_store_n(&c->bytes, c->bytes + ((uint64_t)c->armed - (uint64_t)c->left), __ATOMIC_RELAXED);
    intptr_t left = RP_PROF_FOLD_BYTES;
    int sample = __atomic_load_n(&rp_prof_enabled, __ATOMIC_ACQUIRE);
    /* A sample point fell in this allocation (several may fall in a big block: still one
     * sample). The points form a Poisson process, so the next one after the allocation's end
     * lies at an exponential distance from it, whatever came before (memorylessness). */
    if (sample)
        left = rate ? next_interval(c) : 0;
    __atomic_store_n(&c->armed, left, __ATOMIC_RELAXED);
    __atomic_store_n(&c->left, left, __ATOMIC_RELAXED);
    return sample;
}

void rp_prof_after_event(void *p, size_t size, const void *ra, int sample)
{
    if (sample == RP_PROF_QUIET)
        return;
    if (sample)
        rp_prof_record(p, size, ra);
    int saved = errno;
    rp_malloc_totals_observe();
    errno = saved;
}

/* ---- marks ---------------------------------------------------------------------------------- */

/* Sets or clears the mark saying p is sampled, where p's kind of block has one (profile.h). */
static void mark(const void *p, int sampled)
{
    if (rp_ms_contains(p)) {
        rp_cache_mark_put(rp_cache_mark_of_slab(p), sampled ? RP_CACHE_MARK_SAMPLED : 0);
        return;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || !(r->heap->flags & RP_HEAP_MALLOC_ARENA))
        return;
    rp_page *d = rp_page_of(r, p);
    if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) {
        uint8_t *m = rp_cache_mark_in(r, p);
        if (m)
            rp_cache_mark_put(m, sampled ? RP_CACHE_MARK_SAMPLED : 0);
    } else if (d->state == RP_PAGE_LARGE && d->u.large.lead_pages == 0 && ((uintptr_t)p & (RP_PAGE_SIZE - 1)) == 0) {
        uint8_t f = __atomic_load_n(&d->flags, __ATOMIC_RELAXED);
        f = sampled ? (uint8_t)(f | RP_PAGEF_SAMPLED) : (uint8_t)(f & ~RP_PAGEF_SAMPLED);
        __atomic_store_n(&d->flags, f, __ATOMIC_RELAXED);
    }
}

/* ---- samples -------------------------------------------------------------------------------- */

/* The probability that a block of size bytes was sampled at mean interval r (0: every block). */
static double probability(size_t size, size_t r)
{
    if (!r)
        return 1;
    return rp_sample_one_minus_exp_neg((double)(size ? size : 1) / (double)r);
}

void rp_prof_record(void *p, size_t size, const void *ra)
{
    if (!p)
        return;
    int saved = errno;
    rp_pt_record rec = {(uintptr_t)p, size, rate, now_ns(), rp_prof_stack_capture(ra, RP_PROF_DEPTH), 0};
    double w = 1 / probability(size, rate);
    rp_lock_acquire(&lock);
    int ok = rp_pt_insert(&table, &rec) == 0;
    if (ok) {
        counters.samples++;
        counters.est_allocs += w;
        __atomic_store_n(&rp_prof_live, table.count, __ATOMIC_RELAXED);
    } else {
        counters.dropped++;
    }
    rp_lock_release(&lock);
    if (ok)
        mark(p, 1);
    errno = saved;
}

/* Counts a freed sample (lock held). */
static void count_freed(const rp_pt_record *rec, uint64_t now)
{
    double p = probability(rec->size, rec->rate);
    counters.est_freed += 1 / p;
    counters.est_freed_bytes += (double)rec->size / p;
    if (now - rec->alloc_ns <= temporary_ns) {
        counters.est_temporaries += 1 / p;
        counters.est_temporary_bytes += (double)rec->size / p;
    }
}

int rp_prof_forget(const void *p)
{
    if (!__atomic_load_n(&rp_prof_live, __ATOMIC_RELAXED))
        return 0;
    int saved = errno;
    uint64_t now = now_ns();
    rp_pt_record rec;
    rp_lock_acquire(&lock);
    int found = rp_pt_remove(&table, (uintptr_t)p, &rec);
    if (found) {
        count_freed(&rec, now);
        __atomic_store_n(&rp_prof_live, table.count, __ATOMIC_RELAXED);
    }
    rp_lock_release(&lock);
    if (found)
        mark(p, 0);
    errno = saved;
    return found;
}

int rp_prof_detach(const void *p, rp_prof_saved *saved)
{
    if (!__atomic_load_n(&rp_prof_live, __ATOMIC_RELAXED))
        return 0;
    int err = errno;
    rp_pt_record rec;
    rp_lock_acquire(&lock);
    int found = rp_pt_remove(&table, (uintptr_t)p, &rec);
    if (found)
        __atomic_store_n(&rp_prof_live, table.count, __ATOMIC_RELAXED);
    rp_lock_release(&lock);
    if (found) {
        mark(p, 0);
        *saved = (rp_prof_saved){rec.addr, rec.size, rec.rate, rec.alloc_ns, rec.stack};
    }
    errno = err;
    return found;
}

void rp_prof_reattach(const rp_prof_saved *saved, const void *q)
{
    int err = errno;
    rp_pt_record rec = {saved->addr, saved->size, saved->rate, saved->alloc_ns, saved->stack, 0};
    int stayed = !q;
    rp_lock_acquire(&lock);
    if (!stayed)
        count_freed(&rec, now_ns());
    else if (rp_pt_insert(&table, &rec) == 0)
        __atomic_store_n(&rp_prof_live, table.count, __ATOMIC_RELAXED);
    else
        counters.dropped++;
    rp_lock_release(&lock);
    if (stayed)
        mark((const void *)saved->addr, 1);
    errno = err;
}

void rp_prof_forget_marked(const void *p)
{
    if (!rp_prof_forget(p))
        mark(p, 0); /* a mark left behind (the block was freed past the drop-in, rp_free) */
}

void rp_prof_get_stats(rp_prof_stats *out)
{
    rp_lock_acquire(&lock);
    *out = counters;
    out->live = table.count;
    out->table_bytes = rp_pt_bytes(&table);
    rp_lock_release(&lock);
    out->enabled = __atomic_load_n(&rp_prof_enabled, __ATOMIC_ACQUIRE);
    out->rate = rate;
}

void rp_prof_fork_prepare(void) { rp_lock_acquire(&lock); }
void rp_prof_fork_parent(void) { rp_lock_release(&lock); }
void rp_prof_fork_child(void) { rp_lock_init(&lock); }
