/*
 * rampart debug flavour — extra API for programs linked with //src:rampart_debug.
 *
 * The debug flavour is the same allocator as release (rampart.h applies unchanged) with:
 * guard cookies before and after every user area, poisoned fresh and freed memory, a
 * quarantine of freed blocks, allocation and free stacks (libunwind) kept in a deduplicating
 * stack depot, an extended invariant checker, ASan-style error reports, LSan-style leak reports,
 * and AddressSanitizer / Valgrind integration. It is configured with RAMPART_OPTIONS (see the
 * README's "Debug flavour" section): poison, alloc_fill, free_fill, quarantine_bytes,
 * backtrace_depth, check_interval, on_error, leak_report, leak_exit_code, report_path.
 *
 * Differences a program can observe against release:
 *   - rp_usable_size returns the size requested, not the rounded size (bytes after it hold the
 *     trailer cookie, so writing there is an overflow);
 *   - fresh blocks hold alloc_fill bytes (0xbe), freed ones free_fill (0x6b);
 *   - a freed block's memory is reused only after quarantine_bytes more bytes were freed;
 *   - errors print a full report (to report_path) and then abort, or continue with
 *     on_error=continue; a report function installed with rp_set_report_fn is called after
 *     the report is printed.
 * Every function here is thread-safe.
 */
#ifndef RAMPART_DEBUG_H
#define RAMPART_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "rampart.h"
#include "stack_depot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Looks for leaks as LeakSanitizer does and writes a report to fd (negative = the report
 * destination, report_path): every other thread is stopped (a real-time signal, SIGRTMAX-3),
 * the roots are scanned for pointers into live blocks — the writable segments of every loaded
 * module, every thread's stack and registers, TLS and the loader's thread vectors — and every
 * block reached is scanned in turn (a pointer anywhere inside a block keeps it). A live block
 * of heap h (NULL = every heap) that nothing reaches is leaked: "indirect" when another leaked
 * block points to it, "direct" otherwise. Blocks marked with rp_set_not_leak, the blocks of
 * heaps marked with rp_heap_set_not_leak and blocks the dynamic loader allocated are reachable
 * by design, and so is what they point to; leaks whose allocation stack matches a line of the
 * suppressions file (option suppressions, LeakSanitizer's leak:PATTERN format) are left out
 * and counted under "Suppressions used". Groups by kind and allocation stack, direct first,
 * largest total first:
 *
 *   Direct leak of 300 byte(s) in 3 object(s) allocated from:
 *       #0 0x55d0c0a1b2c3 in load_config+0x33 (/usr/bin/prog+0x2c3)
 *       ...
 *   Indirect leak of 60 byte(s) in 3 object(s) allocated from:
 *       ...
 *   SUMMARY: rampart: 360 byte(s) leaked in 6 allocation(s).
 *
 * Writes nothing when there is no leak. Returns the number of leaked blocks reported. Does not
 * allocate from any rampart heap; every heap is locked while the threads are stopped. */
size_t rp_leak_report(rp_heap *h, int fd);

/* Marks the live block p as reachable by design: leak reports leave it out. Returns 0, or -1
 * with errno EINVAL when p is not a live block of a rampart heap. */
int rp_set_not_leak(const void *p);

/* Marks every block of heap h, now and later, as reachable by design (on = 1), or undoes it
 * (on = 0). For heaps whose blocks are meant to live until exit (caches, arenas). */
void rp_heap_set_not_leak(rp_heap *h, int on);

/* Releases every quarantined block of h (NULL = the default heap) now, verifying each one's
 * free pattern and cookies first (a violation is reported). Returns the blocks released. */
size_t rp_quarantine_flush(rp_heap *h);

/* The history behind a report, for report functions (rp_set_report_fn). */
typedef struct rp_report_history {
    uint32_t alloc_stack;  /* depot id of the allocation of the block concerned (0 = unknown) */
    uint32_t free_stack;   /* depot id of its free (double free, use after free; 0 = none) */
    uint32_t detect_stack; /* depot id of the call that detected the error */
    size_t requested;      /* size the block was allocated with (0 = unknown) */
} rp_report_history;

/* Fills *out for report r; valid only while the report function handles r. Returns 0, or -1
 * when r is not the report being delivered on this thread. */
int rp_report_get_history(const rp_report *r, rp_report_history *out);

/* Formats stack `id` of the depot into buf, one "    #N 0xPC in function+0xOFF file:line
 * (module+0xOFF)" line per frame: function names from the modules' symbol tables and DWARF,
 * source lines from DWARF (elfutils' libdw when it is installed; separate debug files by
 * build-id under /usr/lib/debug), module offsets of the call for addr2line; a frame no symbol
 * covers is "    #N 0xPC (module+0xOFF)". Returns the length written (buf is always
 * NUL-terminated). */
size_t rp_stack_format(uint32_t id, char *buf, size_t len);

/* Counters of the debug runtime for heap h (NULL = the default heap). */
typedef struct rp_debug_stats {
    size_t quarantined_blocks; /* blocks held in h's quarantine */
    size_t quarantined_bytes;  /* their bytes (charged against quarantine_bytes) */
    size_t stacks;             /* distinct stacks in the process-wide depot */
    size_t depot_bytes;        /* OS memory the depot holds */
} rp_debug_stats;

/* Fills *out. Returns 0, or -1 with errno EINVAL for a NULL out or no heap. */
int rp_debug_get_stats(rp_heap *h, rp_debug_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* RAMPART_DEBUG_H */
