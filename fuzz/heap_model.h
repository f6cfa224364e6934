/* The shadow model behind the heap_ops harness (heap_ops.c decodes the input into
 * operations): what the program holds, the checks run after every operation, and the helpers
 * the misuse (heap_misuse.c) and damage (heap_damage.c) operations share. A violated
 * expectation prints what and where, then aborts: libFuzzer records the input. */
#ifndef RP_FUZZ_HEAP_MODEL_H
#define RP_FUZZ_HEAP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz/block_pattern.h"
#include "fuzz/expect.h"
#include "rampart.h"
#include "src/block.h"
#include "src/free_index.h"
#include "src/heap.h"
#include "src/mapped_block.h"
#include "src/os.h"
#include "src/page_tier.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "src/span.h"

#ifdef RAMPART_DEBUG
#define DEBUG_FLAVOUR 1
#else
#define DEBUG_FLAVOUR 0
#endif

#define NSLOTS 256
#define MAX_OPS 4096
#define NHEAPS 2
#define NREGIONS 8
#define STALE_RING 16
#define ARENA_BYTES ((size_t)8 << 20)

typedef struct block {
    unsigned char *p; /* NULL = empty slot */
    size_t size;      /* bytes requested */
    size_t usable;    /* rp_usable_size when allocated or resized */
    size_t align;     /* alignment asked for, normalised (16 .. ) */
    uint64_t id;      /* pattern seed */
    int heap;         /* index into heaps[] */
} block;

typedef struct caller_region {
    unsigned char *base;
    size_t len;
} caller_region;

typedef struct heap_model {
    rp_heap *h;
    rp_heap_config cfg;
    size_t live;           /* blocks the program holds */
    size_t usable_sum;     /* sum of their usable sizes (release: equals bytes_usable) */
    uint64_t allocs;       /* successful allocations, moves by realloc included */
    uint64_t frees;        /* blocks freed (debug: some may sit in quarantine) */
    size_t os_bytes_start; /* os_bytes right after creation: the control block */
    size_t os_released;    /* last seen, must never go down */
    caller_region regions[NREGIONS];
    int nregions;
} heap_model;

struct heap_state {
    heap_model heaps[NHEAPS];
    block slots[NSLOTS];
    void *stale[STALE_RING]; /* pointers freed recently, for double-free attempts */
    unsigned stale_next;
    uint64_t next_id;
    unsigned long op;       /* index of the current operation, for messages */
    const char *op_name;
    uint64_t os_fail_target; /* value of rp_os_calls() at which the injected failure fires */
    size_t kept_slack;       /* slack adopt accepts besides a fresh block's: set for a block a
                                realloc kept whole because the OS refused to take pages back */
};

/* The model: both heaps, the program's blocks (slots), recently freed pointers. */
extern struct heap_state model;

/* Caller memory for ADD_REGION (and foreign pointers). */
extern unsigned char arena[ARENA_BYTES];

/* ---- failure, tracing, reports ---------------------------------------------------------- */

/* Failure messages start with where the harness is (operation, flavour). EXPECT, TRACE:
 * expect.h (HEAP_OPS_TRACE=1 in the environment turns tracing on). */
void heap_ops_where(FILE *out);

/* The report function the harness installs: counts reports, keeps the first. */
void capture_report(const rp_report *r, void *arg);
void reset_reports(void);
void expect_no_report(void);
/* Exactly one report, of one of the kinds in `kinds` (KIND bits), naming address p (the
 * pointer passed, or the header found corrupted). */
void expect_report(unsigned kinds, const void *p);
void expect_report_either(unsigned kinds, const void *p, const void *alt);
#define KIND(k) (1u << (k))


/* ---- blocks and their pattern ------------------------------------------------------------- */

void fill_block(block *b);
/* The first `limit` bytes of b still hold its pattern. */
void verify_block(const block *b, size_t limit, const char *when);
/* A calloc block's len bytes are zero. */
void verify_zeroed(unsigned char *p, size_t len);
int ranges_overlap(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);
/* Bytes a block occupies for overlap checks (at least 1). */
size_t extent(const block *b);
/* The live block containing p (or starting at it), or NULL. */
block *live_block_at(const void *p);
/* A live span block of heap k (looking from slot `from` on), or its header; NULL if none. */
block *live_span_slot(int k, unsigned from);
rp_block *live_span_header(int k, unsigned from);

/* ---- the model's bookkeeping and checks ----------------------------------------------------- */

/* Was an injected OS failure pending when rp_os_calls() was calls_before? */
int injection_armed(uint64_t calls_before);
/* After a failed allocation: fails unless the heap was really out of memory. */
void expect_real_oom(heap_model *m, size_t size, size_t align, uint64_t calls_before);
/* The fit oracle (span.h FT1, FT2): before a span-tier allocation, what the free index lists (the
 * harness's own reading of the lists, its own class rounding and alignment arithmetic);
 * after it, a new span taken while a listed block had a good fit, or a failure while one
 * could hold the block, fails the run. */
typedef struct fit_probe {
    int span_tier;       /* the request is the span tier's (else nothing is checked) */
    size_t need, want;   /* block needed; with an alignment, plus its slack */
    size_t spans;        /* the heap's spans before the call */
    const void *good;    /* a listed block of at least the good fit of want, or NULL */
    size_t good_size;
    const void *host;    /* a listed block able to hold need at the alignment, or NULL */
    size_t host_size;
} fit_probe;
void fit_before(heap_model *m, size_t size, size_t align, fit_probe *p);
void fit_after(heap_model *m, const fit_probe *p, const void *result, size_t size, size_t align);

/* The retention oracle (heap.h RT1-RT5): what the heap's free pages, OS bytes and releases were
 * before a free, a realloc, a trim or an allocation, checked against the policy afterwards. */
typedef struct retention_probe {
    heap_model *m;
    size_t dirty, released, os_bytes;
    size_t resident_pages; /* the page tier's (page_tier.h B5) */
    int mapped;         /* the block freed has a mapping of its own */
    uint64_t os_calls;  /* rp_os_calls() before: an injected OS failure excuses the policy */
} retention_probe;
void retention_before(heap_model *m, const void *p, retention_probe *r);
/* After a release (free, or a realloc when plain_free is 0: it may also allocate). */
void retention_after(const retention_probe *r, int plain_free, const char *what);
void retention_after_trim(const retention_probe *r, size_t keep);
/* After an allocation (RT5). */
void retention_after_take(const retention_probe *r, const char *what);

/* rp_heap_check and the counters of rp_heap_stats against the model. */
void check_heap(heap_model *m);
/* No report pending, and check_heap on every heap. */
void check_all(void);
/* Checks a block just returned by the heap (alignment, ownership, usable size, overlap,
 * regions), files it in slot s and fills it with its pattern. */
void adopt(int s, int heap, unsigned char *p, size_t size, size_t align, uint64_t id);
void remember_stale(void *p);
/* Forgets slot s (its block was freed or moved). */
void drop(int s);
/* Verifies and frees slot s's block (rp_free(NULL) for an empty slot). */
void free_slot(int s);
/* The second heap, created on first use. */
heap_model *second_heap(void);
/* Every block's pattern, rp_usable_size, rp_heap_of, and rp_heap_walk against the model. */
void do_check(void);

/* ---- bytes changed on purpose and put back -------------------------------------------------- */

void save_bytes(void *p, size_t len);
/* Puts back everything saved since the last call, newest first. */
void restore_bytes(void);
void xor_u32(uint32_t *p, uint32_t x);
void set_ptr(void *slot, void *value);
void add_size(size_t *p, size_t delta);

/* ---- operations in other files -------------------------------------------------------------- */

/* OP_MISUSE (heap_misuse.c): program bugs that must be reported and change nothing. */
void do_misuse(uint8_t kind, int s, uint16_t offset);
/* OP_CORRUPT (heap_damage.c): damage rp_heap_check must find; repaired afterwards. */
void do_corrupt(uint8_t kind, uint16_t sel, uint8_t x);
/* OP_BATCH (heap_batch.c): rp_alloc_batch into slots s.. (flags bit 0 clear), or
 * rp_free_batch of slots s, s+stride, ... with bits 1-3 the stride - 1 (7: stride -1) and
 * bits 4-5 one bad pointer (1 twice in the batch, 2 the second heap's, 3 foreign). */
void do_batch(uint8_t flags, int s, uint8_t count, size_t size, size_t align);
/* OP_FRESH_REGION (heap_batch.c): caller memory where the address map has no chunk table yet, which
 * the OS refuses to map: ENOMEM, nothing changed. */
void do_fresh_region(uint8_t where);

#endif
