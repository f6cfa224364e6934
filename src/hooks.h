/* The core's hook interface to the debug flavour.
 *
 * The core calls these at fixed points; in the release flavour they are empty inline
 * functions and the prefix/suffix sizes are 0, so release code contains none of them.
 * With RAMPART_DEBUG the declarations below are implemented in debug/ (the debug runtime),
 * which depends on src/, never the reverse.
 *
 * Every hook taking a heap is called with that heap locked, except rp_hook_report.
 * Memory layout the hooks rely on:
 *   - every block's user area is preceded by RP_HOOK_PREFIX bytes the debug runtime owns
 *     (span blocks: right after the 16-byte header; page-tier blocks: the end of a lead page
 *     placed before the user pointer), and followed by at least RP_HOOK_SUFFIX bytes beyond
 *     the requested size (room for a trailer canary).
 */
#ifndef RP_HOOKS_H
#define RP_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "rampart.h"

/* Core functions that read and write allocator metadata sitting next to user memory are not
 * instrumented by AddressSanitizer, so the debug flavour can poison headers, padding and free
 * memory and still let the core touch them. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RP_ASAN 1
#endif
#ifdef RP_ASAN
#define RP_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
#else
#define RP_NO_SANITIZE_ADDRESS
#endif

struct rp_fault;

/* Defined by the malloc drop-in (src/malloc/malloc_init.c), weak: present exactly when the
 * process's malloc, free, ... in this link are rampart's. */
int rp_malloc_ready(void) __attribute__((weak));

/* What the debug runtime decides about a free. */
enum {
    RP_HOOK_FREE_NOW = 0,   /* the core returns the block to free space now */
    RP_HOOK_FREE_LATER = 1, /* held in quarantine; the runtime calls rp_core_release later */
    RP_HOOK_FREE_REFUSE = 2 /* an error was recorded in the fault; the block is left alone */
};

/* Core services for the debug runtime (implemented in src/ for both flavours; called with
 * the heap locked). */
/* Returns a block the runtime held back (RP_HOOK_FREE_LATER) to free space. */
void rp_core_release(rp_heap *h, void *user, struct rp_fault *fault);
/* rp_heap_check for a heap whose lock the caller holds. */
int rp_heap_check_locked(rp_heap *h, char *why, size_t len);

#ifdef RAMPART_DEBUG

#define RP_HOOK_PREFIX 32u
#define RP_HOOK_SUFFIX 8u

void rp_hook_heap_created(rp_heap *h);
void rp_hook_heap_destroying(rp_heap *h);
/* A block was just allocated: user area [user, user+usable), requested bytes, alignment.
 * A problem found meanwhile (the periodic check) is recorded in fault; the block stays valid. */
void rp_hook_alloc(rp_heap *h, void *user, size_t requested, size_t usable, size_t align,
                   struct rp_fault *fault);
/* How many bytes from the start of a fresh block of `requested` bytes rp_hook_alloc writes
 * (its fill pattern): rp_calloc zeroes only those when the rest is fresh memory. */
size_t rp_hook_alloc_written(size_t requested);
/* The program frees user (already validated by the core). */
int rp_hook_free(rp_heap *h, void *user, size_t usable, struct rp_fault *fault);
/* An in-place realloc changed the requested size (usable may have changed too). */
void rp_hook_resize(rp_heap *h, void *user, size_t requested, size_t usable, struct rp_fault *fault);
/* rp_realloc (for_realloc 1) or rp_usable_size (0) got a pointer that is live for the core:
 * the runtime checks it is live for the program too (not quarantined) and, for realloc, that
 * its cookies are intact. 0 = go on; non-zero = a fault was recorded, the call is abandoned. */
int rp_hook_access(rp_heap *h, void *user, size_t usable, int for_realloc, struct rp_fault *fault);
/* The memory of region [lo, hi) is leaving the heap: unmapped, or handed back to the caller
 * by rp_heap_destroy (sanitizer bookkeeping must be dropped before the OS reuses it). */
void rp_hook_region_leaving(rp_heap *h, void *lo, size_t len);
/* Span memory [p, p+len) has just become free payload (not header or links). */
void rp_hook_span_freed(rp_heap *h, void *p, size_t len);
/* Span memory [p, p+len), free payload until now, is being handed out as a user area. */
void rp_hook_span_reused(rp_heap *h, void *p, size_t len, struct rp_fault *fault);
/* rp_usable_size: the debug flavour answers the requested size (the trailer canary follows). */
size_t rp_hook_usable(rp_heap *h, void *user, size_t usable);
/* 1 when rp_realloc must move every block (never resize in place), as ASan does: the old
 * block is freed into quarantine, so a use of the old pointer is caught. */
int rp_hook_realloc_moves(void);
/* Adds the debug view of a used block (requested size, stacks, quarantined) to *info. */
void rp_hook_block_info(rp_heap *h, rp_block_info *info);
/* rp_heap_check: verifies the debug invariants of one block; returns 0 or writes why. */
int rp_hook_check_block(rp_heap *h, const rp_block_info *info, char *why, size_t len);
/* rp_heap_check: verifies the runtime's own structures for the heap; 0 or writes why. */
int rp_hook_check_heap(rp_heap *h, char *why, size_t len);
/* A report is about to be delivered (heap unlocked). f is the fault it comes from;
 * default_handler says whether the report function is still the default one. Returns 1 when
 * the runtime has fully handled the report (printed it and, per its options, chose to
 * continue), so the default handler must not run; 0 to call the report function as usual. */
int rp_hook_report(const struct rp_fault *f, rp_report *r, int default_handler);

#else /* release: every hook compiles to nothing */

#define RP_HOOK_PREFIX 0u
#define RP_HOOK_SUFFIX 0u

static inline void rp_hook_heap_created(rp_heap *h) { (void)h; }
static inline void rp_hook_heap_destroying(rp_heap *h) { (void)h; }
static inline void rp_hook_alloc(rp_heap *h, void *user, size_t requested, size_t usable, size_t align,
                                 struct rp_fault *fault)
{
    (void)h, (void)user, (void)requested, (void)usable, (void)align, (void)fault;
}
static inline size_t rp_hook_alloc_written(size_t requested)
{
    (void)requested;
    return 0;
}
static inline int rp_hook_free(rp_heap *h, void *user, size_t usable, struct rp_fault *fault)
{
    (void)h, (void)user, (void)usable, (void)fault;
    return RP_HOOK_FREE_NOW;
}
static inline void rp_hook_resize(rp_heap *h, void *user, size_t requested, size_t usable,
                                  struct rp_fault *fault)
{
    (void)h, (void)user, (void)requested, (void)usable, (void)fault;
}
static inline int rp_hook_access(rp_heap *h, void *user, size_t usable, int for_realloc, struct rp_fault *fault)
{
    (void)h, (void)user, (void)usable, (void)for_realloc, (void)fault;
    return 0;
}
static inline void rp_hook_region_leaving(rp_heap *h, void *lo, size_t len) { (void)h, (void)lo, (void)len; }
static inline void rp_hook_span_freed(rp_heap *h, void *p, size_t len) { (void)h, (void)p, (void)len; }
static inline void rp_hook_span_reused(rp_heap *h, void *p, size_t len, struct rp_fault *fault)
{
    (void)h, (void)p, (void)len, (void)fault;
}
static inline size_t rp_hook_usable(rp_heap *h, void *user, size_t usable)
{
    (void)h, (void)user;
    return usable;
}
static inline int rp_hook_realloc_moves(void) { return 0; }
static inline void rp_hook_block_info(rp_heap *h, rp_block_info *info) { (void)h, (void)info; }
static inline int rp_hook_check_block(rp_heap *h, const rp_block_info *info, char *why, size_t len)
{
    (void)h, (void)info, (void)why, (void)len;
    return 0;
}
static inline int rp_hook_check_heap(rp_heap *h, char *why, size_t len)
{
    (void)h, (void)why, (void)len;
    return 0;
}
static inline int rp_hook_report(const struct rp_fault *f, rp_report *r, int default_handler)
{
    (void)f, (void)r, (void)default_handler;
    return 0;
}

#endif /* RAMPART_DEBUG */

#endif
