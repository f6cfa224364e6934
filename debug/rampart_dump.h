/*
 * rampart heap dumps: a snapshot of one heap or of every heap of the process, in the
 * versioned binary format of debug/DUMP_FORMAT.md, for `rpdump` (tools/rpdump) to inspect
 * offline: totals, regions, every block, free-space classes, and in the debug flavour the
 * allocation stacks and quarantine, with the executable mappings and build-ids needed to
 * symbolise the stacks elsewhere.
 *
 * Available in both flavours: the malloc drop-ins include it (//src/malloc:rampart_malloc,
 * //dist:librampart_malloc.so and their debug builds); with the heap API, link //debug:dump with
 * the release library, or //src:rampart_debug (which includes it).
 *
 * Dumps are streamed to the file descriptor through a fixed buffer with write(2): nothing is
 * allocated from any heap, and no stdio is used, so dumping works with rampart as the
 * process's malloc. A heap is locked while its sections are written (other threads using it
 * wait); the stack depot and mappings are written after every heap lock is released.
 * Writing to a pipe whose reader has gone raises SIGPIPE as any write(2) does.
 *
 * Automatic dumps (RAMPART_OPTIONS, see src/options.h):
 *   dump_signal=SIGUSR2   the signal requests a dump of every heap. The handler only writes
 *                         one byte to a pipe (async-signal-safe); a dumper thread started at
 *                         load time writes the dump, outside the handler's restrictions.
 *                         Requests arriving while a dump is being written are merged into the
 *                         next one. A handler the program installs later for the same signal
 *                         replaces rampart's; a forked child does not dump on the signal.
 *   dump_interval=N       a dump every N seconds (counted from the end of the previous dump),
 *                         written by the same dumper thread.
 *   dump_on_peak=1        a dump each time the live bytes of the malloc drop-in's arenas pass
 *                         the last such dump's by dump_peak_step (default 16M); the drop-in
 *                         looks at its live bytes every few MiB each thread allocates
 *                         (src/malloc/malloc_totals.h) and wakes the dumper thread.
 *   dump_at_exit=1        a dump of every heap is written at exit (atexit, registered at load
 *                         time, so it runs after the program's own atexit handlers).
 *   dump_path=PATTERN     file name pattern: %p = pid, %n = sequence number (0, 1, ... per
 *                         process, over every kind of dump: a series numbers itself), %% = '%'. Default rampart.%p.%n.rpd. Each dump is written
 *                         under PATH.tmp and renamed, so PATH appears complete or not at all.
 * Each automatic dump prints one line to stderr: "rampart: heap dump written to PATH" (or why
 * it failed); its process record says why it was written (signal, interval, peak, exit). A
 * forked child has no dumper thread: its signal, interval and peak dumps are off.
 */
#ifndef RAMPART_DUMP_H
#define RAMPART_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "rampart.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a dump of heap h (NULL = the default heap) to fd, which stays open. Returns 0, or
 * -1 with errno: EBADF and the other errors of write(2), ENOMEM when the writer's scratch
 * memory (mapped from the OS, never from a heap) cannot be mapped. A heap too damaged to
 * walk still gets a dump: its blocks section stops at the damage and the heap record says
 * why (rpdump summary prints it, rpdump check fails on it). */
int rp_heap_dump(rp_heap *h, int fd);

/* Writes every heap of the process into one dump on fd. Heaps created while the dump is
 * being written may be left out. Returns 0 or -1 with errno, as rp_heap_dump. */
int rp_dump_all(int fd);

/* Writes every heap into a new file named by pattern (NULL = the dump_path option), after
 * expanding %p, %n (taking the next sequence number) and %%. The file is created with mode
 * 0644 (less the umask) under PATH.tmp and renamed to PATH once complete. On success the path
 * is copied to path_out (if non-NULL; truncated to len bytes, NUL-terminated). Returns 0, or
 * -1 with errno (ENAMETOOLONG when the expanded path does not fit in 4096 bytes, the errors
 * of open(2), write(2) and rename(2)). */
int rp_dump_to_path(const char *pattern, char *path_out, size_t len);

/* ---- sampled heap profiles -----------------------------------------------------------------
 * A heap profiler (the malloc drop-in's sampler, or a program's own) hands its sampled live
 * blocks to every dump through a sample source. Each dump then carries them in its samples
 * section (debug/DUMP_FORMAT.md), with the sampler's stacks when the flavour has no stack
 * depot, and rpdump's sites, flame, pprof, diff and timeline count each sample as the blocks
 * and bytes it stands for: 1/p blocks and size/p bytes, p = 1 - exp(-size/rate), the
 * probability that Poisson sampling of the allocated bytes at mean interval `rate` picks a
 * block of `size` bytes (rate 0: every block is recorded, p = 1). */

/* One sampled block that is still allocated. */
typedef struct rp_dump_sample {
    const void *addr;  /* the pointer the allocation returned */
    size_t size;       /* bytes requested */
    size_t rate;       /* mean sampling interval in bytes when it was sampled (0: not sampled,
                          every allocation recorded) */
    uint64_t alloc_ns; /* CLOCK_MONOTONIC time of the allocation in ns; 0 = unknown */
    uint32_t stack;    /* its allocation stack's id (0 = none) */
    uint32_t flags;    /* RP_DUMP_SAMPLE_* (0 for a block of a heap) */
} rp_dump_sample;

/* rp_dump_sample.flags: the block is a small block of the malloc drop-in's slabs (rampart_malloc.h),
 * which belong to no heap's regions: dumps list no slab blocks, only their samples. */
#define RP_DUMP_SAMPLE_SLAB 1u

/* Callbacks the source calls once per sample / per stack; a non-zero return asks it to stop
 * (the dump's output failed). */
typedef int (*rp_dump_sample_fn)(void *arg, const rp_dump_sample *sample);
typedef int (*rp_dump_stack_fn)(void *arg, uint32_t id, const uintptr_t *frames, unsigned nframes);

typedef struct rp_dump_sample_source {
    /* Calls put for every live sampled block, in any order. Called once per dump, in the
     * thread writing it, with no heap lock held; it may take the sampler's own lock, and must
     * not allocate from a heap or call the dump API. */
    void (*foreach_sample)(void *ctx, rp_dump_sample_fn put, void *arg);
    /* Calls put for every stack a sample may name (ids never 0 and never reused, frames
     * innermost first, at most 64 are kept), after foreach_sample. In the debug flavour stacks
     * come from the stack depot: set NULL there and give depot ids in the samples. */
    void (*foreach_stack)(void *ctx, rp_dump_stack_fn put, void *arg);
    void *ctx;
} rp_dump_sample_source;

/* Makes every later dump read source (which must stay valid until replaced); NULL removes
 * it. Safe to call from any thread; a dump already being written keeps the source it read. */
void rp_dump_set_sample_source(const rp_dump_sample_source *source);

#ifdef __cplusplus
}
#endif
#endif /* RAMPART_DUMP_H */
