#define _GNU_SOURCE
#include "malloc_totals.h"

#include <errno.h>
#include <string.h>

#include "arena.h"
#include "debug/dump_request.h"
#include "free_batch.h"
#include "malloc_init.h"
#include "malloc_slabs.h"
#include "profile.h"
#include "thread_cache.h"
#include "src/clock.h"
#include "src/heap.h"
#include "src/options.h"

static size_t peak_bytes;      /* atomic: the highest live figure seen */
static uint64_t peak_ms;       /* atomic: when (rp_clock_ms) */
static size_t peak_step;       /* dump_peak_step with dump_on_peak, else 0 */
static size_t last_peak_dump;  /* atomic: the live bytes that asked for the last peak dump */
static uint64_t peak_dumps;    /* atomic: peak dumps asked for */
static uint64_t start_ms;      /* rp_clock_ms at set-up */

void rp_malloc_totals_setup(void)
{
    const rp_options *o = rp_options_get();
    start_ms = rp_clock_ms();
    if (o->dump_on_peak)
        peak_step = o->dump_peak_step ? o->dump_peak_step : 1;
}

size_t rp_malloc_live_bytes(void)
{
    size_t live = 0;
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (!h)
            continue;
        rp_slab_pool *pool = rp_ms_pool_of(h);
        rp_lock_acquire(&h->lock);
        live += h->bytes_usable + (pool ? pool->bytes_live : 0);
        rp_lock_release(&h->lock);
    }
    return live;
}

void rp_malloc_totals_observe(void)
{
    size_t live = rp_malloc_live_bytes();
    size_t peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
    while (live > peak) {
        if (__atomic_compare_exchange_n(&peak_bytes, &peak, live, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            __atomic_store_n(&peak_ms, rp_clock_ms() - start_ms, __ATOMIC_RELAXED);
            break;
        }
    }
    if (!peak_step)
        return;
    size_t last = __atomic_load_n(&last_peak_dump, __ATOMIC_RELAXED);
    /* One thread wins each step; a dumper that cannot be asked (none running) is not asked again
     * until the next step. */
    if (live > last && live - last >= peak_step &&
        __atomic_compare_exchange_n(&last_peak_dump, &last, live, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
        rpd_request(RPD_REQUEST_PEAK) == 0)
        __atomic_fetch_add(&peak_dumps, 1, __ATOMIC_RELAXED);
}

int rp_malloc_totals(rp_malloc_totals_t *out, size_t size)
{
    if (!out || size == 0) {
        errno = EINVAL;
        return -1;
    }
    (void)rp_malloc_init(); /* the profiler's settings, before the first allocation too */
    if (rp_tc_self) /* the calling thread's collected frees (T5 in thread_cache.h) are counted */
        rp_malloc_free_collected(rp_tc_self);
    rp_malloc_totals_t t;
    memset(&t, 0, sizeof t);
    rp_tc_counts c;
    rp_tc_counts_sum(&c);
    t.allocs = c.allocs;
    t.cache_hits = c.allocs > c.misses ? c.allocs - c.misses : 0;
    t.frees = c.frees;
    t.bytes_allocated = c.bytes;
    t.live_bytes = rp_malloc_live_bytes();
    /* The live figure just read is a look too: the peak is never below it. */
    size_t peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
    if (t.live_bytes > peak) {
        rp_malloc_totals_observe();
        peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
    }
    t.peak_live_bytes = peak > t.live_bytes ? peak : t.live_bytes;
    t.peak_ms = __atomic_load_n(&peak_ms, __ATOMIC_RELAXED);
    t.peak_dumps = __atomic_load_n(&peak_dumps, __ATOMIC_RELAXED);
    rp_prof_stats ps;
    rp_prof_get_stats(&ps);
    t.profiling = ps.enabled;
    t.profile_rate = ps.rate;
    t.samples = ps.samples;
    t.samples_live = ps.live;
    t.samples_dropped = ps.dropped;
    t.freed_bytes_estimate = (uint64_t)(ps.est_freed_bytes + 0.5);
    t.temporaries_estimate = (uint64_t)(ps.est_temporaries + 0.5);
    t.temporary_bytes_estimate = (uint64_t)(ps.est_temporary_bytes + 0.5);
    t.temporary_ms = rp_options_get()->temporary_ms;
    memcpy(out, &t, size < sizeof t ? size : sizeof t);
    return 0;
}
