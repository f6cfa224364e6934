/* The malloc_api harness's reading of the drop-in's statistics: rp_malloc_stats checked
 * against the arenas' own counters, and the text of rp_malloc_stats_print / malloc_stats()
 * parsed back and checked against snapshots taken just before and just after it was
 * printed (a value printed must lie between the two; with nothing running meanwhile they are
 * equal). Failures go through expect_fail (expect.h). */
#ifndef RP_FUZZ_MALLOC_STATS_TEXT_H
#define RP_FUZZ_MALLOC_STATS_TEXT_H

#include <stddef.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/malloc/arena.h"
#include "src/malloc/malloc_slabs.h"

typedef struct stats_snapshot {
    rp_malloc_stats_t ms;
    int has[RP_MAX_ARENAS];              /* arena i exists */
    rp_heap_stats_t arena[RP_MAX_ARENAS]; /* its counters */
    rp_ms_totals_t slab; /* the arenas' slab pools (malloc_slabs.h) */
    rp_malloc_totals_t tot; /* rp_malloc_totals */
} stats_snapshot;

/* Reads rp_malloc_stats and every arena's rp_heap_stats, and checks what must hold between
 * them whatever the program did: as many arenas as exist, in-use and OS bytes the sums of
  * the arenas' (when nothing changed meanwhile), cached bytes within the caches' caps,
 * transfer bytes within the arenas' caps, no more batches taken than put. */
void stats_snapshot_take(stats_snapshot *s);

/* Checks the statistics text (NUL-terminated; `from` names the call that printed it): the
 * title (flavour, pid), a row for every arena whose counters lie between the snapshots, the
 * total row summing the rows, the thread-cache, arena, transfer-cache and slab lines. */
void stats_text_check(const char *text, const stats_snapshot *before, const stats_snapshot *after, const char *from);

/* An in-memory writer for rp_malloc_stats_print (arg: a stats_text). */
typedef struct stats_text {
    char s[32768];
    size_t n;
} stats_text;
void stats_text_write(void *arg, const char *chunk);

#endif
