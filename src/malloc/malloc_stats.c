/* Statistics and checks of the malloc drop-in: rp_malloc_stats_print and rp_malloc_stats_json
 * (also printed at exit with option stats=1, as JSON with stats_json=1), rp_malloc_stats,
 * rp_malloc_check, rp_malloc_thread_flush. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "src/heap.h"
#include "free_batch.h"
#include "guard_pool.h"
#include "malloc_slabs.h"
#include "malloc_stats.h"
#include "malloc_totals.h"
#include "src/options.h"
#include "rampart_malloc.h"
#include "thread_cache.h"
#include "transfer_cache.h"
#include "zero_size.h"
#ifdef RAMPART_DEBUG
#include "debug/rampart_debug.h"
#endif

static uint64_t foreign_frees; /* atomic */

void rp_malloc_count_foreign_free(void) { __atomic_fetch_add(&foreign_frees, 1, __ATOMIC_RELAXED); }

/* What the report shows of one heap; copied out under the heap list lock, printed after it
 * is released (the writer may allocate). */
typedef struct heap_row {
    char name[32];
    int arena;
    rp_heap_stats_t st;
    size_t held_blocks, held_bytes; /* the debug flavour's quarantine (part of st's in use) */
} heap_row;

#define MAX_ROWS 64

typedef struct rows {
    heap_row row[MAX_ROWS];
    size_t n, more;
} rows;

static void collect(rp_heap *h, void *arg)
{
    rows *rs = arg;
    if (rs->n == MAX_ROWS) {
        rs->more++;
        return;
    }
    heap_row *row = &rs->row[rs->n];
    if (rp_heap_stats(h, &row->st) != 0)
        return;
    snprintf(row->name, sizeof row->name, "%s", rp_heap_name(h));
    row->arena = (h->flags & RP_HEAP_MALLOC_ARENA) != 0;
    row->held_blocks = row->held_bytes = 0;
#ifdef RAMPART_DEBUG
    rp_debug_stats ds = {0, 0, 0, 0};
    if (rp_debug_get_stats(h, &ds) == 0) {
        row->held_blocks = ds.quarantined_blocks;
        row->held_bytes = ds.quarantined_bytes;
    }
#endif
    rs->n++;
}

/* The rows of every heap (arenas, the default heap, the program's), copied under the heap list
 * lock. */
static void collect_rows(rows *rs)
{
    rs->n = rs->more = 0;
    rp_heaps_foreach(collect, rs);
}

/* "123.4K"-style sizes (powers of 1024), integer arithmetic only. */
static const char *human(size_t v, char *buf, size_t len)
{
    static const char units[] = "BKMGTP";
    unsigned u = 0;
    size_t whole = v, tenths = 0;
    while (whole >= 1024 && u < sizeof units - 2) {
        tenths = (whole % 1024) * 10 / 1024;
        whole /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zu", v);
    else
        snprintf(buf, len, "%zu.%zu%c", whole, tenths, units[u]);
    return buf;
}

/* Writer for a file descriptor passed as the argument. */
static void to_fd(void *arg, const char *text)
{
    int fd = (int)(intptr_t)arg;
    size_t n = strlen(text);
    while (n) {
        ssize_t w = write(fd, text, n);
        if (w <= 0)
            return;
        text += w;
        n -= (size_t)w;
    }
}

void rp_malloc_stats_print_fd(int fd) { rp_malloc_stats_print(to_fd, (void *)(intptr_t)fd); }

__attribute__((format(printf, 3, 4))) static void out(rp_malloc_write_fn emit, void *arg, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(arg, line);
}

/* Debug builds show the quarantine apart from what is in use: freed by the program, held back. */
#ifdef RAMPART_DEBUG
#define HELD_COLUMN 1
#else
#define HELD_COLUMN 0
#endif

static void print_row(rp_malloc_write_fn emit, void *arg, const char *name, const rp_heap_stats_t *st,
                      size_t held_bytes)
{
    char a[24], b[24], c[24], d[24], e[24];
    if (HELD_COLUMN)
        out(emit, arg, "  %-16s %9s %9s %9zu %9s %9s %9s %12llu %12llu\n", name,
            human(st->bytes_in_use - held_bytes, a, sizeof a), human(held_bytes, e, sizeof e), st->blocks_in_use,
            human(st->bytes_free, b, sizeof b), human(st->os_bytes, c, sizeof c), human(st->os_bytes_peak, d, sizeof d),
            (unsigned long long)st->alloc_calls, (unsigned long long)st->free_calls);
    else
        out(emit, arg, "  %-16s %9s %9zu %9s %9s %9s %12llu %12llu\n", name, human(st->bytes_in_use, a, sizeof a),
            st->blocks_in_use, human(st->bytes_free, b, sizeof b), human(st->os_bytes, c, sizeof c),
            human(st->os_bytes_peak, d, sizeof d), (unsigned long long)st->alloc_calls,
            (unsigned long long)st->free_calls);
}

/* "98.7" for part of whole, integer arithmetic. */
static const char *percent(uint64_t part, uint64_t whole, char *buf, size_t len)
{
    uint64_t permille = whole ? (part * 1000 + whole / 2) / whole : 0;
    snprintf(buf, len, "%llu.%llu", (unsigned long long)(permille / 10), (unsigned long long)(permille % 10));
    return buf;
}

static void examine_own_frees(void);

void rp_malloc_stats_print(rp_malloc_write_fn emit, void *arg)
{
    examine_own_frees();
    if (!emit) {
        emit = to_fd;
        arg = (void *)(intptr_t)STDERR_FILENO;
    }
    rows rs;
    collect_rows(&rs);
    rp_malloc_stats_t ms;
    rp_malloc_stats(&ms);
    rp_malloc_totals_t tot;
    rp_malloc_totals(&tot, sizeof tot);

    char a[24], b[24], c[24];
    out(emit, arg, "rampart %s: malloc statistics (pid %d)\n", rp_flavour(), (int)getpid());
    if (HELD_COLUMN)
        out(emit, arg, "  %-16s %9s %9s %9s %9s %9s %9s %12s %12s\n", "heap", "in use", "quarant.", "blocks", "free",
            "os now", "os peak", "heap allocs", "heap frees");
    else
        out(emit, arg, "  %-16s %9s %9s %9s %9s %9s %12s %12s\n", "heap", "in use", "blocks", "free", "os now",
            "os peak", "heap allocs", "heap frees");
    rp_heap_stats_t total;
    size_t total_held = 0;
    memset(&total, 0, sizeof total);
    for (int pass = 0; pass < 2; pass++) {
        /* arenas first, then the other heaps */
        for (size_t i = 0; i < rs.n; i++) {
            const heap_row *row = &rs.row[i];
            if (row->arena != !pass)
                continue;
            print_row(emit, arg, row->name, &row->st, row->held_bytes);
            total_held += row->held_bytes;
            total.bytes_in_use += row->st.bytes_in_use;
            total.blocks_in_use += row->st.blocks_in_use;
            total.bytes_free += row->st.bytes_free;
            total.os_bytes += row->st.os_bytes;
            total.os_bytes_peak += row->st.os_bytes_peak;
            total.alloc_calls += row->st.alloc_calls;
            total.free_calls += row->st.free_calls;
        }
    }
    if (rs.more)
        out(emit, arg, "  (%zu more heaps not shown, not in the total)\n", rs.more);
    print_row(emit, arg, "total", &total, total_held);
    out(emit, arg, "  thread caches: %zu live, cap %s each; holding %s (counted as in use)\n",
        ms.thread_caches, human(ms.cache_bytes_limit, a, sizeof a), human(ms.cached_bytes, b, sizeof b));
    out(emit, arg, "  cache refills %llu, flushes %llu; arenas %zu of %u; foreign frees ignored %llu; %s mapped by rampart\n",
        (unsigned long long)ms.refills, (unsigned long long)ms.flushes, ms.arenas, rp_arena_count(),
        (unsigned long long)ms.foreign_frees, human(total.os_bytes, c, sizeof c));
    out(emit, arg, "  transfer caches: holding %s (counted as in use); batches in %llu, out %llu\n",
        human(ms.transfer_bytes, a, sizeof a), (unsigned long long)ms.transfer_puts,
        (unsigned long long)ms.transfer_takes);
    if (rp_ms_on())
        out(emit, arg, "  slabs: %zu held (%s, not in the rows above), %s in live blocks, %zu kept empty\n", ms.slabs,
            human(ms.slab_bytes, a, sizeof a), human(ms.slab_live_bytes, b, sizeof b), ms.slabs_empty);
    else
        out(emit, arg, "  slabs: off\n");
    /* The retention policy of the arenas (heap.h): what is kept, what went back. */
    size_t dirty = 0, released = 0;
    for (size_t i = 0; i < rs.n; i++) {
        if (rs.row[i].arena) {
            dirty += rs.row[i].st.page_dirty_bytes;
            released += rs.row[i].st.os_released;
        }
    }
    const rp_options *o = rp_options_get();
    out(emit, arg, "  arenas' free pages: %s resident, %s given back to the OS; retain_bytes %s, purge_delay_ms %u\n",
        human(dirty, a, sizeof a), human(released, b, sizeof b), human(o->retain_bytes, c, sizeof c),
        o->purge_delay_ms);
    /* The program's calls (the rows count the heaps' own: a thread cache refill is one). */
    out(emit, arg, "  malloc calls %llu: %llu (%s%%) from thread caches, %llu through a lock; frees %llu; %s requested\n",
        (unsigned long long)tot.allocs, (unsigned long long)tot.cache_hits, percent(tot.cache_hits, tot.allocs, c, sizeof c),
        (unsigned long long)(tot.allocs - tot.cache_hits), (unsigned long long)tot.frees,
        human(tot.bytes_allocated, a, sizeof a));
    out(emit, arg, "  live %s now, peak %s at %llu.%03llu s\n", human(tot.live_bytes, a, sizeof a),
        human(tot.peak_live_bytes, b, sizeof b), (unsigned long long)(tot.peak_ms / 1000),
        (unsigned long long)(tot.peak_ms % 1000));
    if (tot.profiling)
        out(emit, arg,
            "  heap profile: rate %s, %llu samples (%llu live, %llu dropped); estimated %s freed, %llu temporaries "
            "(%s) freed within %u ms\n",
            human(tot.profile_rate, a, sizeof a), (unsigned long long)tot.samples, (unsigned long long)tot.samples_live,
            (unsigned long long)tot.samples_dropped, human(tot.freed_bytes_estimate, b, sizeof b),
            (unsigned long long)tot.temporaries_estimate, human(tot.temporary_bytes_estimate, c, sizeof c),
            tot.temporary_ms);
}

/* The calling thread's collected frees (T5 in thread_cache.h) examined, so that the counts
 * include every free it made (errno kept, as free() keeps it). */
static void examine_own_frees(void)
{
    if (rp_tc_self)
        rp_malloc_free_collected(rp_tc_self);
}

int rp_malloc_stats(rp_malloc_stats_t *o)
{
    if (!o) {
        errno = EINVAL;
        return -1;
    }
    examine_own_frees();
    memset(o, 0, sizeof *o);
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        rp_heap_stats_t st;
        if (!h || rp_heap_stats(h, &st) != 0)
            continue;
        o->arenas++;
        o->bytes_in_use += st.bytes_in_use;
        o->os_bytes += st.os_bytes;
    }
    rp_tc_totals(&o->thread_caches, &o->cached_bytes, &o->refills, &o->flushes);
    o->cache_bytes_limit = rp_tc_cap();
    o->foreign_frees = __atomic_load_n(&foreign_frees, __ATOMIC_RELAXED);
    rp_xfer_totals(&o->transfer_bytes, &o->transfer_puts, &o->transfer_takes);
    rp_ms_totals_t t;
    rp_ms_totals(&t);
    o->slabs = t.slabs;
    o->slab_bytes = t.slab_bytes;
    o->slab_live_bytes = t.live_bytes;
    o->slabs_empty = t.empty_slabs;
    o->bytes_in_use += o->slab_live_bytes;
    o->os_bytes += o->slab_bytes;
    return 0;
}

void rp_malloc_thread_flush(void)
{
    rp_tcache *tc = rp_tc_self;
    if (tc) {
        int saved = errno;
        rp_tc_flush_all(tc);
        errno = saved;
    }
}

int rp_malloc_check(char *why, size_t len)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (h && rp_heap_check(h, why, len) != 0)
            return 1;
        if (h && rp_xfer_of(h) && rp_xfer_check(rp_xfer_of(h), h, why, len) != 0)
            return 1;
    }
    if (rp_ms_check(why, len) != 0 || rp_zs_check(why, len) != 0 || rp_gp_check(why, len) != 0)
        return 1;
    rp_tcache *tc = rp_tc_self;
    return tc ? rp_tc_check(tc, why, len) : 0;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

/* A JSON writer into a fixed buffer, flushed to emit as it fills (no allocation). */
typedef struct jw {
    rp_malloc_write_fn emit;
    void *arg;
    char buf[1024];
    size_t n;
    int first; /* no member written yet in the current object or array */
} jw;

static void jw_flush(jw *w)
{
    if (w->n) {
        w->buf[w->n] = 0;
        w->emit(w->arg, w->buf);
        w->n = 0;
    }
}

__attribute__((format(printf, 2, 3))) static void jw_put(jw *w, const char *fmt, ...)
{
    char piece[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    size_t len = (size_t)k < sizeof piece ? (size_t)k : sizeof piece - 1;
    if (w->n + len + 1 > sizeof w->buf)
        jw_flush(w);
    memcpy(w->buf + w->n, piece, len);
    w->n += len;
}

/* The separator before a member or element. */
static void jw_sep(jw *w)
{
    if (!w->first)
        jw_put(w, ",");
    w->first = 0;
}

static void jw_open(jw *w, const char *key, char bracket)
{
    jw_sep(w);
    if (key)
        jw_put(w, "\"%s\":%c", key, bracket);
    else
        jw_put(w, "%c", bracket);
    w->first = 1;
}

static void jw_close(jw *w, char bracket)
{
    jw_put(w, "%c", bracket);
    w->first = 0;
}

static void jw_u64(jw *w, const char *key, uint64_t v)
{
    jw_sep(w);
    jw_put(w, "\"%s\":%llu", key, (unsigned long long)v);
}

/* A string member, escaped (heap names come from the program). */
static void jw_str(jw *w, const char *key, const char *v)
{
    char esc[200];
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)v; *c && k + 7 < sizeof esc; c++) {
        if (*c == '"' || *c == '\\')
            k += (size_t)snprintf(esc + k, sizeof esc - k, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            k += (size_t)snprintf(esc + k, sizeof esc - k, "\\u%04x", *c);
        else
            esc[k++] = (char)*c;
    }
    esc[k] = 0;
    jw_sep(w);
    jw_put(w, "\"%s\":\"%s\"", key, esc);
}

static void json_heap(jw *w, const heap_row *row)
{
    const rp_heap_stats_t *st = &row->st;
    jw_open(w, NULL, '{');
    jw_str(w, "name", row->name);
    jw_sep(w);
    jw_put(w, "\"arena\":%s", row->arena ? "true" : "false");
    jw_u64(w, "bytes_in_use", st->bytes_in_use);
    jw_u64(w, "bytes_usable", st->bytes_usable);
    jw_u64(w, "blocks_in_use", st->blocks_in_use);
    if (HELD_COLUMN) {
        jw_u64(w, "quarantined_blocks", row->held_blocks);
        jw_u64(w, "quarantined_bytes", row->held_bytes);
    }
    jw_u64(w, "bytes_free", st->bytes_free);
    jw_u64(w, "blocks_free", st->blocks_free);
    jw_u64(w, "largest_free", st->largest_free);
    jw_u64(w, "span_bytes", st->span_bytes);
    jw_u64(w, "spans", st->spans);
    jw_u64(w, "large_blocks", st->large_blocks);
    jw_u64(w, "page_free_bytes", st->page_free_bytes);
    jw_u64(w, "page_dirty_bytes", st->page_dirty_bytes);
    jw_u64(w, "regions", st->regions);
    jw_u64(w, "region_bytes", st->region_bytes);
    jw_u64(w, "os_bytes", st->os_bytes);
    jw_u64(w, "os_bytes_peak", st->os_bytes_peak);
    jw_u64(w, "os_released", st->os_released);
    jw_u64(w, "alloc_calls", st->alloc_calls);
    jw_u64(w, "free_calls", st->free_calls);
    jw_u64(w, "blocks_examined", st->blocks_examined);
    jw_u64(w, "max_examined", st->max_examined);
    jw_close(w, '}');
}

void rp_malloc_stats_json(rp_malloc_write_fn emit, void *arg)
{
    examine_own_frees();
    jw w;
    w.emit = emit ? emit : to_fd;
    w.arg = emit ? arg : (void *)(intptr_t)STDERR_FILENO;
    w.n = 0;
    w.first = 1;
    rows rs;
    collect_rows(&rs);
    rp_malloc_stats_t ms;
    rp_malloc_stats(&ms);
    rp_malloc_totals_t t;
    rp_malloc_totals(&t, sizeof t);

    jw_put(&w, "{");
    jw_str(&w, "flavour", rp_flavour());
    jw_u64(&w, "pid", (uint64_t)getpid());
    jw_open(&w, "heaps", '[');
    size_t dirty = 0, released = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < rs.n; i++) {
            if (rs.row[i].arena != !pass)
                continue;
            json_heap(&w, &rs.row[i]);
            if (rs.row[i].arena) {
                dirty += rs.row[i].st.page_dirty_bytes;
                released += rs.row[i].st.os_released;
            }
        }
    }
    jw_close(&w, ']');
    jw_u64(&w, "heaps_not_shown", rs.more);
    jw_open(&w, "caches", '{');
    jw_u64(&w, "arenas", ms.arenas);
    jw_u64(&w, "arena_limit", rp_arena_count());
    jw_u64(&w, "thread_caches", ms.thread_caches);
    jw_u64(&w, "cached_bytes", ms.cached_bytes);
    jw_u64(&w, "cache_bytes_limit", ms.cache_bytes_limit);
    jw_u64(&w, "refills", ms.refills);
    jw_u64(&w, "flushes", ms.flushes);
    jw_u64(&w, "foreign_frees", ms.foreign_frees);
    jw_close(&w, '}');
    jw_open(&w, "transfer", '{');
    jw_u64(&w, "transfer_bytes", ms.transfer_bytes);
    jw_u64(&w, "transfer_puts", ms.transfer_puts);
    jw_u64(&w, "transfer_takes", ms.transfer_takes);
    jw_close(&w, '}');
    jw_open(&w, "slabs", '{');
    jw_sep(&w);
    jw_put(&w, "\"on\":%s", rp_ms_on() ? "true" : "false");
    jw_u64(&w, "slabs", ms.slabs);
    jw_u64(&w, "slab_bytes", ms.slab_bytes);
    jw_u64(&w, "slab_live_bytes", ms.slab_live_bytes);
    jw_u64(&w, "slabs_empty", ms.slabs_empty);
    jw_close(&w, '}');
    jw_open(&w, "totals", '{');
    jw_u64(&w, "allocs", t.allocs);
    jw_u64(&w, "cache_hits", t.cache_hits);
    jw_u64(&w, "frees", t.frees);
    jw_u64(&w, "bytes_allocated", t.bytes_allocated);
    jw_u64(&w, "live_bytes", t.live_bytes);
    jw_u64(&w, "peak_live_bytes", t.peak_live_bytes);
    jw_u64(&w, "peak_ms", t.peak_ms);
    jw_u64(&w, "peak_dumps", t.peak_dumps);
    jw_sep(&w);
    jw_put(&w, "\"profiling\":%s", t.profiling ? "true" : "false");
    jw_u64(&w, "profile_rate", t.profile_rate);
    jw_u64(&w, "samples", t.samples);
    jw_u64(&w, "samples_live", t.samples_live);
    jw_u64(&w, "samples_dropped", t.samples_dropped);
    jw_u64(&w, "freed_bytes_estimate", t.freed_bytes_estimate);
    jw_u64(&w, "temporaries_estimate", t.temporaries_estimate);
    jw_u64(&w, "temporary_bytes_estimate", t.temporary_bytes_estimate);
    jw_u64(&w, "temporary_ms", t.temporary_ms);
    jw_close(&w, '}');
    const rp_options *o = rp_options_get();
    jw_open(&w, "retention", '{');
    jw_u64(&w, "dirty_bytes", dirty);
    jw_u64(&w, "released_bytes", released);
    jw_u64(&w, "retain_bytes", o->retain_bytes);
    jw_u64(&w, "purge_delay_ms", o->purge_delay_ms);
    jw_close(&w, '}');
    jw_put(&w, "}\n");
    jw_flush(&w);
}

void rp_malloc_stats_json_fd(int fd) { rp_malloc_stats_json(to_fd, (void *)(intptr_t)fd); }
