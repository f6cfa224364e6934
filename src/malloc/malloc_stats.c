/* Statistics and checks of the malloc drop-in: rp_malloc_stats_print (also printed at exit
 * with option stats=1), rp_malloc_stats, rp_malloc_check, rp_malloc_thread_flush. */
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
#include "malloc_slabs.h"
#include "malloc_stats.h"
#include "src/options.h"
#include "rampart_malloc.h"
#include "thread_cache.h"
#include "transfer_cache.h"
#include "zero_size.h"

static uint64_t foreign_frees; /* atomic */

void rp_malloc_count_foreign_free(void) { __atomic_fetch_add(&foreign_frees, 1, __ATOMIC_RELAXED); }

/* What the report shows of one heap; copied out under the heap list lock, printed after it
 * is released (the writer may allocate). */
typedef struct heap_row {
    char name[32];
    int arena;
    rp_heap_stats_t st;
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
    rs->n++;
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

static void print_row(rp_malloc_write_fn emit, void *arg, const char *name, const rp_heap_stats_t *st)
{
    char a[24], b[24], c[24], d[24];
    out(emit, arg, "  %-16s %9s %9zu %9s %9s %9s %12llu %12llu\n", name, human(st->bytes_in_use, a, sizeof a),
        st->blocks_in_use, human(st->bytes_free, b, sizeof b), human(st->os_bytes, c, sizeof c),
        human(st->os_bytes_peak, d, sizeof d), (unsigned long long)st->alloc_calls,
        (unsigned long long)st->free_calls);
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
    rs.n = rs.more = 0;
    rp_heaps_foreach(collect, &rs);
    rp_malloc_stats_t ms;
    rp_malloc_stats(&ms);

    char a[24], b[24], c[24];
    out(emit, arg, "rampart %s: malloc statistics (pid %d)\n", rp_flavour(), (int)getpid());
    out(emit, arg, "  %-16s %9s %9s %9s %9s %9s %12s %12s\n", "heap", "in use", "blocks", "free", "os now",
        "os peak", "allocs", "frees");
    rp_heap_stats_t total;
    memset(&total, 0, sizeof total);
    for (int pass = 0; pass < 2; pass++) {
        /* arenas first, then the other heaps */
        for (size_t i = 0; i < rs.n; i++) {
            const heap_row *row = &rs.row[i];
            if (row->arena != !pass)
                continue;
            print_row(emit, arg, row->name, &row->st);
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
    print_row(emit, arg, "total", &total);
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
    if (rp_ms_check(why, len) != 0 || rp_zs_check(why, len) != 0)
        return 1;
    rp_tcache *tc = rp_tc_self;
    return tc ? rp_tc_check(tc, why, len) : 0;
}
