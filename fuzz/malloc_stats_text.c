/* The malloc_api harness's reading of the drop-in's statistics: see malloc_stats_text.h. */
#define _GNU_SOURCE
#include "fuzz/malloc_stats_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/expect.h"
#include "src/malloc/malloc_slabs.h"
#include "src/options.h"

/* ---- snapshots --------------------------------------------------------------------------- */

static void arena_sums(const stats_snapshot *s, size_t *n, size_t *in_use, size_t *os)
{
    *n = *in_use = *os = 0;
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        if (!s->has[i])
            continue;
        ++*n;
        *in_use += s->arena[i].bytes_in_use;
        *os += s->arena[i].os_bytes;
    }
    *in_use += s->slab.live_bytes;
    *os += s->slab.slab_bytes;
}

static void read_arenas(stats_snapshot *s)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        s->has[i] = h && rp_heap_stats(h, &s->arena[i]) == 0;
    }
    rp_ms_totals(&s->slab);
}

void stats_snapshot_take(stats_snapshot *s)
{
    static rp_malloc_stats_t last; /* the counters are cumulative for the process */
    stats_snapshot first;
    read_arenas(&first);
    EXPECT(rp_malloc_stats(&s->ms) == 0, "rp_malloc_stats failed");
    EXPECT(rp_malloc_totals(&s->tot, sizeof s->tot) == 0, "rp_malloc_totals failed");
    EXPECT(s->tot.cache_hits <= s->tot.allocs && s->tot.live_bytes <= s->tot.peak_live_bytes,
           "rp_malloc_totals: %llu cache hits of %llu allocations, %zu bytes live, peak %zu",
           (unsigned long long)s->tot.cache_hits, (unsigned long long)s->tot.allocs, s->tot.live_bytes,
           s->tot.peak_live_bytes);
    read_arenas(s);
    const rp_malloc_stats_t *m = &s->ms;
    size_t n, in_use, os, n0, in_use0, os0;
    arena_sums(s, &n, &in_use, &os);
    arena_sums(&first, &n0, &in_use0, &os0);
    EXPECT(m->arenas >= 1 && m->arenas == n && n <= rp_arena_count(),
           "rp_malloc_stats: %zu arenas, %zu exist (at most %u)", m->arenas, n, rp_arena_count());
    if (in_use == in_use0 && os == os0) /* nothing moved while the stats were read */
        EXPECT(m->bytes_in_use == in_use && m->os_bytes == os,
               "rp_malloc_stats: %zu bytes in use and %zu from the OS; the arenas say %zu and %zu", m->bytes_in_use,
               m->os_bytes, in_use, os);
    EXPECT(m->bytes_in_use <= m->os_bytes, "rp_malloc_stats: %zu bytes in use of %zu mapped", m->bytes_in_use,
           m->os_bytes);
    EXPECT(m->thread_caches >= 1 && m->cached_bytes <= m->thread_caches * m->cache_bytes_limit,
           "rp_malloc_stats: %zu bytes cached by %zu caches of at most %zu", m->cached_bytes, m->thread_caches,
           m->cache_bytes_limit);
    /* Each arena's transfer cache holds at most four thread caches' worth. */
    EXPECT(m->transfer_bytes <= m->arenas * 4 * m->cache_bytes_limit,
           "rp_malloc_stats: %zu bytes in transfer caches, above %zu arenas' caps", m->transfer_bytes, m->arenas);
    /* A cached slab block counts as the span block of its class would, 16 bytes over its stride. */
    EXPECT(m->cached_bytes + m->transfer_bytes <= m->bytes_in_use + 16 * s->slab.live_blocks,
           "rp_malloc_stats: %zu bytes cached and %zu in transfer caches, but only %zu in use (%zu live slab blocks)",
           m->cached_bytes, m->transfer_bytes, m->bytes_in_use, s->slab.live_blocks);
    EXPECT(m->transfer_takes <= m->transfer_puts, "rp_malloc_stats: %llu batches taken, only %llu put",
           (unsigned long long)m->transfer_takes, (unsigned long long)m->transfer_puts);
    EXPECT(m->refills >= last.refills && m->flushes >= last.flushes && m->foreign_frees >= last.foreign_frees &&
               m->transfer_puts >= last.transfer_puts && m->transfer_takes >= last.transfer_takes,
           "rp_malloc_stats: a cumulative counter went down");
    last = *m;
}

/* ---- the text ---------------------------------------------------------------------------- */

void stats_text_write(void *arg, const char *chunk)
{
    stats_text *t = arg;
    size_t len = strlen(chunk);
    EXPECT(t->n + len < sizeof t->s, "the statistics text is longer than %zu bytes", sizeof t->s);
    memcpy(t->s + t->n, chunk, len + 1);
    t->n += len;
}

static const char *text_from; /* the call being checked, for messages */
static int text_line;

__attribute__((noreturn, format(printf, 1, 2))) static void text_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    expect_fail("%s, line %d of its text: %s", text_from, text_line, msg);
}

#define TEXT_EXPECT(cond, ...)                                                                 \
    do {                                                                                       \
        if (!(cond))                                                                           \
            text_fail(__VA_ARGS__);                                                            \
    } while (0)

static int between(unsigned long long v, unsigned long long a, unsigned long long b)
{
    return a <= b ? a <= v && v <= b : b <= v && v <= a;
}

/* A size printed as "123" (bytes) or "12.3K" (powers of 1024, truncated to tenths): it must
 * be consistent with some value between a and b. */
static void expect_human(const char *s, size_t a, size_t b, const char *what)
{
    static const char units[] = "BKMGTP";
    unsigned long long whole, tenths;
    char unit, rest;
    int n = sscanf(s, "%llu.%llu%c%c", &whole, &tenths, &unit, &rest);
    size_t lo = a < b ? a : b, hi = a < b ? b : a;
    if (n == 1) {
        TEXT_EXPECT(strspn(s, "0123456789") == strlen(s) && whole < 1024 && between(whole, lo, hi),
                    "%s printed as '%s', expected %zu..%zu bytes", what, s, lo, hi);
        return;
    }
    const char *u = n == 3 ? strchr(units + 1, unit) : NULL;
    TEXT_EXPECT(u && tenths < 10 && whole >= 1 && (whole < 1024 || unit == 'P'), "%s: '%s' is not a size", what, s);
    unsigned long long scale = 1ull << (10 * (u - units));
    unsigned long long plo = whole * scale + tenths * scale / 10;
    unsigned long long phi = whole * scale + (tenths + 1) * scale / 10 + scale / 1024;
    TEXT_EXPECT(plo <= hi && lo < phi, "%s printed as '%s' (%llu..%llu), expected %zu..%zu bytes", what, s, plo, phi,
                lo, hi);
}

/* One heap row: name, in use, blocks, free, os now, os peak, allocs, frees. */
typedef struct row {
    char name[40], in_use[24], free[24], os_now[24], os_peak[24];
    unsigned long long blocks, allocs, frees;
} row;

static int parse_row(const char *line, row *r)
{
    int end = 0;
    int n = sscanf(line, "  %39s %23s %llu %23s %23s %23s %llu %llu%n", r->name, r->in_use, &r->blocks, r->free,
                   r->os_now, r->os_peak, &r->allocs, &r->frees, &end);
    return n == 8 && line[end] == '\0';
}

/* An arena's row against its counters in the two snapshots. */
static void check_arena_row(const row *r, const rp_heap_stats_t *a, const rp_heap_stats_t *b)
{
    expect_human(r->in_use, a->bytes_in_use, b->bytes_in_use, "bytes in use");
    expect_human(r->free, a->bytes_free, b->bytes_free, "free bytes");
    expect_human(r->os_now, a->os_bytes, b->os_bytes, "OS bytes");
    expect_human(r->os_peak, a->os_bytes_peak, b->os_bytes_peak, "OS peak");
    TEXT_EXPECT(between(r->blocks, a->blocks_in_use, b->blocks_in_use) && between(r->allocs, a->alloc_calls, b->alloc_calls) &&
                    between(r->frees, a->free_calls, b->free_calls),
                "%s: %llu blocks, %llu allocations, %llu frees; its counters say %zu, %llu, %llu", r->name, r->blocks,
                r->allocs, r->frees, b->blocks_in_use, (unsigned long long)b->alloc_calls,
                (unsigned long long)b->free_calls);
}

void stats_text_check(const char *text, const stats_snapshot *before, const stats_snapshot *after, const char *from)
{
    const rp_malloc_stats_t *m0 = &before->ms, *m1 = &after->ms;
    static char buf[sizeof ((stats_text *)0)->s];
    snprintf(buf, sizeof buf, "%s", text);
    text_from = from;
    text_line = 0;
    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    char flavour[16];
    int pid = 0;
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "rampart %15[^:]: malloc statistics (pid %d)", flavour, &pid) == 2 &&
                    strcmp(flavour, rp_flavour()) == 0 && pid == (int)getpid(),
                "the title is '%s'", line ? line : "(none)");
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && strncmp(line, "  heap ", 7) == 0, "no column header: '%s'", line ? line : "(none)");
    int seen[RP_MAX_ARENAS] = {0};
    unsigned long long blocks = 0, allocs = 0, frees = 0;
    row r;
    for (;;) {
        line = strtok_r(NULL, "\n", &save);
        text_line++;
        TEXT_EXPECT(line, "the text ends before the total row");
        if (strncmp(line, "  (", 3) == 0) {
            size_t more;
            TEXT_EXPECT(sscanf(line, "  (%zu more heaps not shown", &more) == 1 && more > 0, "'%s'", line);
            continue;
        }
        TEXT_EXPECT(parse_row(line, &r), "not a heap row: '%s'", line);
        if (strcmp(r.name, "total") == 0)
            break;
        blocks += r.blocks;
        allocs += r.allocs;
        frees += r.frees;
        unsigned i;
        char tail;
        if (sscanf(r.name, "malloc-%u%c", &i, &tail) == 1 && i < RP_MAX_ARENAS && before->has[i]) {
            TEXT_EXPECT(!seen[i], "arena %u has two rows", i);
            seen[i] = 1;
            check_arena_row(&r, &before->arena[i], &after->arena[i]);
        }
    }
    TEXT_EXPECT(r.blocks == blocks && r.allocs == allocs && r.frees == frees,
                "the total row says %llu blocks, %llu allocations, %llu frees; the rows add up to %llu, %llu, %llu",
                r.blocks, r.allocs, r.frees, blocks, allocs, frees);
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++)
        TEXT_EXPECT(!before->has[i] || seen[i], "arena malloc-%u has no row", i);

    size_t caches;
    char cap[24], held[24];
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  thread caches: %zu live, cap %23s each; holding %23s (counted as in use)",
                               &caches, cap, held) == 3,
                "not the thread-cache line: '%s'", line ? line : "(none)");
    TEXT_EXPECT(between(caches, m0->thread_caches, m1->thread_caches), "%zu thread caches, expected %zu", caches,
                m1->thread_caches);
    expect_human(cap, m0->cache_bytes_limit, m1->cache_bytes_limit, "the cache cap");
    expect_human(held, m0->cached_bytes, m1->cached_bytes, "bytes cached");

    unsigned long long refills, flushes, foreign;
    size_t arenas;
    unsigned of;
    char mapped[24];
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  cache refills %llu, flushes %llu; arenas %zu of %u; foreign frees ignored %llu; %23s mapped by rampart",
                               &refills, &flushes, &arenas, &of, &foreign, mapped) == 6,
                "not the counters line: '%s'", line ? line : "(none)");
    TEXT_EXPECT(strcmp(mapped, r.os_now) == 0, "%s mapped, but the total row says %s", mapped, r.os_now);
    TEXT_EXPECT(between(refills, m0->refills, m1->refills) && between(flushes, m0->flushes, m1->flushes) &&
                    between(foreign, m0->foreign_frees, m1->foreign_frees) && arenas == m1->arenas &&
                    of == rp_arena_count(),
                "refills %llu, flushes %llu, arenas %zu of %u, foreign frees %llu; rp_malloc_stats says %llu, %llu, %zu "
                "of %u, %llu",
                refills, flushes, arenas, of, foreign, (unsigned long long)m1->refills,
                (unsigned long long)m1->flushes, m1->arenas, rp_arena_count(), (unsigned long long)m1->foreign_frees);

    unsigned long long puts, takes;
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  transfer caches: holding %23s (counted as in use); batches in %llu, out %llu",
                               held, &puts, &takes) == 3,
                "not the transfer-cache line: '%s'", line ? line : "(none)");
    expect_human(held, m0->transfer_bytes, m1->transfer_bytes, "bytes in transfer caches");
    TEXT_EXPECT(between(puts, m0->transfer_puts, m1->transfer_puts) &&
                    between(takes, m0->transfer_takes, m1->transfer_takes),
                "%llu batches in and %llu out; rp_malloc_stats says %llu and %llu", puts, takes,
                (unsigned long long)m1->transfer_puts, (unsigned long long)m1->transfer_takes);
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    if (rp_ms_on()) {
        size_t slabs, kept;
        char bytes[24], live[24];
        TEXT_EXPECT(line &&
                        sscanf(line, "  slabs: %zu held (%23[^,], not in the rows above), %23s in live blocks, %zu kept empty",
                               &slabs, bytes, live, &kept) == 4,
                    "not the slabs line: '%s'", line ? line : "(none)");
        TEXT_EXPECT(between(slabs, before->slab.slabs, after->slab.slabs) &&
                        between(kept, before->slab.empty_slabs, after->slab.empty_slabs),
                    "%zu slabs held, %zu kept empty; the pools say %zu, %zu", slabs, kept, after->slab.slabs,
                    after->slab.empty_slabs);
        expect_human(bytes, before->slab.slab_bytes, after->slab.slab_bytes, "slab bytes");
        expect_human(live, before->slab.live_bytes, after->slab.live_bytes, "live slab bytes");
    } else {
        TEXT_EXPECT(line && strcmp(line, "  slabs: off") == 0, "not the slabs line: '%s'", line ? line : "(none)");
    }
    char dirty[24], released[24], retain[24];
    unsigned delay;
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  arenas' free pages: %23s resident, %23s given back to the OS; retain_bytes %23[^,], "
                                     "purge_delay_ms %u",
                               dirty, released, retain, &delay) == 4,
                "not the free-pages line: '%s'", line ? line : "(none)");
    size_t dirty0 = 0, dirty1 = 0, released0 = 0, released1 = 0;
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        if (before->has[i]) {
            dirty0 += before->arena[i].page_dirty_bytes;
            released0 += before->arena[i].os_released;
        }
        if (after->has[i]) {
            dirty1 += after->arena[i].page_dirty_bytes;
            released1 += after->arena[i].os_released;
        }
    }
    expect_human(dirty, dirty0, dirty1, "the arenas' resident free pages");
    expect_human(released, released0, released1, "bytes given back to the OS");
    expect_human(retain, rp_options_get()->retain_bytes, rp_options_get()->retain_bytes, "retain_bytes");
    TEXT_EXPECT(delay == rp_options_get()->purge_delay_ms, "purge_delay_ms %u, the option says %u", delay,
                rp_options_get()->purge_delay_ms);
    /* The totals (rp_malloc_totals): the program's calls, the live bytes and their peak. */
    const rp_malloc_totals_t *t0 = &before->tot, *t1 = &after->tot;
    unsigned long long calls, hits, locked, freed;
    char share[16], requested[24], live[24], peak[24];
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  malloc calls %llu: %llu (%15[0-9.]%%) from thread caches, %llu through a lock; frees "
                                     "%llu; %23s requested",
                               &calls, &hits, share, &locked, &freed, requested) == 6,
                "not the calls line: '%s'", line ? line : "(none)");
    TEXT_EXPECT(between(calls, t0->allocs, t1->allocs) && hits + locked == calls && between(freed, t0->frees, t1->frees),
                "%llu calls (%llu + %llu), %llu frees; rp_malloc_totals says %llu..%llu calls, %llu..%llu frees", calls,
                hits, locked, freed, (unsigned long long)t0->allocs, (unsigned long long)t1->allocs,
                (unsigned long long)t0->frees, (unsigned long long)t1->frees);
    expect_human(requested, t0->bytes_allocated, t1->bytes_allocated, "bytes requested");
    unsigned long long secs, ms;
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    TEXT_EXPECT(line && sscanf(line, "  live %23s now, peak %23s at %llu.%llu s", live, peak, &secs, &ms) == 4,
                "not the live-bytes line: '%s'", line ? line : "(none)");
    expect_human(live, t0->live_bytes, t1->live_bytes, "live bytes");
    expect_human(peak, t0->peak_live_bytes, t1->peak_live_bytes, "peak live bytes");
    line = strtok_r(NULL, "\n", &save);
    text_line++;
    if (t1->profiling) {
        TEXT_EXPECT(line && strncmp(line, "  heap profile: rate ", 21) == 0, "not the heap profile line: '%s'",
                    line ? line : "(none)");
        line = strtok_r(NULL, "\n", &save);
        text_line++;
    }
    TEXT_EXPECT(!line, "more text after the totals: '%s'", line);
    TEXT_EXPECT(text[strlen(text) - 1] == '\n', "the text does not end with a newline");
}
