/* The debug runtime's settings: the debug keys of RAMPART_OPTIONS (src/options.h), read once
 * per process. Every file of the runtime reads them through rp_debug_config_get(). */
#ifndef RP_DEBUG_CONFIG_H
#define RP_DEBUG_CONFIG_H

#include <stddef.h>

typedef struct rp_debug_config {
    int poison;                    /* fill fresh/freed memory and verify the free pattern */
    unsigned char alloc_fill;      /* byte written into fresh user areas */
    unsigned char free_fill;       /* byte written into freed memory */
    size_t alloc_fill_max;         /* bytes of a fresh user area (from its start) filled */
    size_t quarantine_bytes;       /* per-heap budget of freed bytes held back (resolved: never
                                      RP_QUARANTINE_AUTO) */
    unsigned backtrace_depth;      /* frames per stack, 0 = no stacks */
    int fast_unwind;               /* allocation and free stacks by frame pointers (frame_walk.h) */
    unsigned long check_interval;  /* rp_heap_check every N operations per heap, 0 = off */
    int abort_on_error;            /* default handler: abort after a report (else continue) */
    int leak_report;               /* leak report for every heap at exit */
    int check_at_exit;             /* verify every block at exit (exit_check.c) */
    int leak_exit_code;            /* exit status when the exit-time report finds leaks, 0 = keep */
    unsigned long guard;           /* 0 off, 1 every block, N: 1 in N blocks guarded */
    int guard_left;                /* guarded blocks start at a page boundary */
} rp_debug_config;

/* The snapshot and whether it is filled (set with release order once it is); use
 * rp_debug_config_get. */
extern rp_debug_config rp_debug_config_snapshot;
extern int rp_debug_config_ready;

/* The quarantine budget when quarantine_bytes is left to the runtime: ASan's 256 MiB, at most
 * an eighth of the machine's RAM. */
size_t rp_debug_quarantine_auto(void);

/* Fills the snapshot (once per process, thread-safe). */
void rp_debug_config_fill(void);

/* The process's settings (parsed on first call; thread-safe). Inline: the hooks ask for them
 * several times per allocation and free, so a call each time showed in profiles. */
static inline const rp_debug_config *rp_debug_config_get(void)
{
    if (__builtin_expect(!__atomic_load_n(&rp_debug_config_ready, __ATOMIC_ACQUIRE), 0))
        rp_debug_config_fill();
    return &rp_debug_config_snapshot;
}

#endif
