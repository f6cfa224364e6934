/* The hardened profile of the malloc drop-in (option hardened=1, release flavour): what a
 * program that writes freed memory, or reads what it should not, gets from the allocator when
 * speed matters less than that. On top of the default checks (every pointer classified at its
 * call, keyed header check words, cache marks apart from the blocks):
 *   - freed memory is wiped at the free: a class-bin block or a page-bin block is zeroed, a
 *     larger page-tier block's pages are given back to the OS (they read as zeros); so no
 *     secret outlives its block, a stale read sees zeros, and malloc hands out zeroed memory;
 *   - a quarantine per thread: a freed block waits in a ring of RP_HQ_SLOTS blocks and at most
 *     RP_HQ_BYTES before anything can have it again, and leaves it at random (so neither the
 *     block just freed nor the order of reuse can be predicted); while it waits it stays
 *     marked as held by a cache, so a second free is still reported;
 *   - write-after-free checks: a block leaving the quarantine must still be zero (all of a
 *     small block, the first and last lines of a larger one), else the write is reported;
 *     at exit the exiting thread's quarantine is checked the same way;
 *   - the header after a span block is checked at its free (an overflow into it is reported),
 *     as the heap itself checks it when a block goes back to it;
 *   - guard pages between the slab space's chunks (slab.h), so a linear overflow out of one
 *     chunk faults;
 *   - a slab refill's blocks, fresh ones included (no run, T6), go into the bin shuffled, so
 *     neither the order of fresh blocks nor their neighbours can be predicted;
 *   - every block sealed (seal.h), its neighbours checked at its free (neighbour_check.h), and
 *     the preload library's memcpy/memmove/memset checked (guarded_memory.h).
 * Invariant (rp_tc_check):
 *   T7  quarantine[0 .. hq_n-1] are blocks held by this cache's quarantine: a class-bin block
 *       with its cache mark set, or a page-tier block of an arena with RP_PAGEF_CACHED; hq_n <=
 *       RP_HQ_SLOTS, hq_bytes is the sum of their bytes and at most RP_HQ_BYTES (one block
 *       larger than that waits alone). */
#ifndef RP_HARDENED_H
#define RP_HARDENED_H

#include <stddef.h>
#include <stdint.h>

#define RP_HQ_SLOTS 64
#define RP_HQ_BYTES ((size_t)4 << 20)

struct rp_tcache;
struct rp_tc_bin;
struct rp_page;

/* What a quarantined block goes back to when it leaves. */
enum { RP_HQ_CLASS = 1, RP_HQ_PAGES = 2, RP_HQ_DIRECT = 3 };

typedef struct rp_hq_entry {
    void *p;
    void *home;    /* RP_HQ_CLASS: its class bin; RP_HQ_PAGES / RP_HQ_DIRECT: its head descriptor */
    size_t bytes;  /* what it occupies (usable bytes, or its pages) */
    uint32_t kind; /* RP_HQ_* */
    uint32_t pad;
} rp_hq_entry;

/* 1 if the option hardened is set (read once by the caches' set-up). */
int rp_hardened_on(void);

/* A freed class-bin block p (usable bytes, its cache mark clear, bin its class's): wiped,
 * marked and quarantined. */
void rp_hq_put_class(struct rp_tcache *tc, struct rp_tc_bin *bin, void *p, uint8_t *mark, size_t usable);

/* A freed page-tier block p of an arena (head descriptor d, not cached): wiped, flagged and
 * quarantined; it goes to its page bin when it leaves if it fits one, else to its heap. */
void rp_hq_put_pages(struct rp_tcache *tc, void *p, struct rp_page *d);

/* Every quarantined block leaves (checked), as at thread exit or a flush. */
void rp_hq_drain(struct rp_tcache *tc);

/* T7 for tc. 0, or 1 with a message. */
int rp_hq_check(const struct rp_tcache *tc, char *why, size_t len);

#endif
