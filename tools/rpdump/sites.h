/* What the site commands (sites, flame, pprof, diff, timeline) share: per-site totals, and
 * printing a site's stack. A site is an allocation stack; blocks without a stack (release
 * dumps, capture off) form the site "no stack", blocks naming an id missing from the stack
 * section the site "unknown stack".
 *
 * Sites are counted from one of two sources: the blocks (exact; debug dumps record each
 * block's stack), or the heap profiler's samples (release dumps with profiling on): each
 * sample then adds the blocks and bytes it stands for (rpd_sample_weight), and a site's
 * figures are the rounded sums of those estimates. --from blocks|samples picks; by default
 * release dumps with samples use them, and every other dump its blocks. */
#ifndef RPDUMP_SITES_H
#define RPDUMP_SITES_H

#include "rpdump.h"
#include "stack_table.h"
#include "symbolize.h"

enum { SITE_NO_STACK = 0, SITE_UNKNOWN_STACK = 1, SITE_FIRST_STACK = 2 };

typedef struct site_stats {
    uint64_t blocks;      /* estimated when counted from samples */
    uint64_t bytes;       /* requested bytes in debug dumps, usable bytes in release ones,
                             estimated requested bytes from samples */
    uint64_t usable;      /* (0 from samples) */
    uint64_t block_bytes; /* bytes the blocks occupy, metadata included (0 from samples) */
    uint64_t samples;     /* samples behind the estimates (0 from blocks) */
    double est_blocks, est_bytes; /* the samples' weights, summed before rounding */
} site_stats;

/* Whether the site commands count dump d from its samples (see above). */
int site_from_samples(const rpd_dump *d, const rpd_options *o);

/* What a site's bytes are: "requested" (debug blocks), "usable" (release blocks) or
 * "estimated" (requested bytes estimated from samples). */
const char *site_bytes_are(const rpd_dump *d, const rpd_options *o);

/* The site index (SITE_*, or SITE_FIRST_STACK + stack index) of a block's allocation stack. */
size_t site_of_block(const rpd_stack_table *t, const rpd_block *b);

void site_add(site_stats *s, const rpd_dump *d, const rpd_block *b);

/* The states a site command counts: --state, by default used blocks only. */
unsigned site_states(const rpd_options *o);

/* Adds the blocks of the selected heaps and states into stats[site_of_block()], or, counting
 * from samples, the samples (of blocks in the selected heaps' regions, with --heap) into
 * the stats of their stacks' sites. */
int site_collect(rpd_dump *d, const rpd_stack_table *t, const rpd_options *o, site_stats *stats, rpd_error *err);

/* The live sites of one dump: the stack table (with frames) and per-site totals of the
 * selected heaps and states. Sites are SITE_NO_STACK, SITE_UNKNOWN_STACK, then
 * SITE_FIRST_STACK + the stack's index in `stacks`. */
typedef struct live_sites {
    rpd_stack_table stacks;
    site_stats *stats; /* nsites entries, counted against the dump's memory cap */
    size_t nsites;
    size_t live;       /* sites holding at least one block */
    site_stats total;  /* of every site */
} live_sites;

/* Loads the stacks and adds up the blocks. Returns 0, or -1 with err (live_sites_free is
 * needed in both cases). */
int live_sites_load(live_sites *ls, rpd_dump *d, const rpd_options *o, rpd_error *err);
void live_sites_free(live_sites *ls);

/* The frames of a site (innermost first); NULL with *n = 0 for the special sites. */
const uint64_t *live_sites_frames(const live_sites *ls, size_t site, unsigned *n);

/* The stack id of a site (0 for the special sites). */
uint32_t live_sites_id(const live_sites *ls, size_t site);

/* A name for special sites: "(no stack)", "(unknown stack)". */
const char *site_special_name(size_t site);

/* Queues, then prints (text or JSON array "frames") the first o->frames frames of a stack. */
void site_want_frames(symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n, const rpd_options *o);
void site_print_frames(FILE *f, symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n,
                       const rpd_options *o);
void site_json_frames(json_out *j, symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n,
                      const rpd_options *o);

#endif
