/* Runtime options: RAMPART_OPTIONS="key=value:key=value" (or "key=value, key=value").
 *
 * One table of every key (malloc drop-in, debug flavour, dumps), so a key is "unknown" only if
 * no part of rampart knows it. Items are separated by ':' or ',' (as in jemalloc's
 * MALLOC_CONF); blanks (spaces, tabs) around items, keys and values are trimmed; keys match
 * without regard to case. An unknown key or a bad value produces one warning line and is
 * ignored; parsing never allocates, never crashes and accepts any bytes. Sizes take K, M, G
 * suffixes (powers of 1024); booleans 0/1/true/false/yes/no/on/off; signals a number or a name
 * (SIGUSR2, USR2). A key the running flavour does not use (the debug flavour's keys in
 * release, the thread-cache keys in debug) is parsed and stored as usual, and warned about once
 * per parse: the setting has no effect. help=1 prints every key (meaning, default, flavours)
 * and verbose=1 the effective values, on stderr, when the process reads its options. */
#ifndef RP_OPTIONS_H
#define RP_OPTIONS_H

#include <stddef.h>

#define RP_OPTION_PATH_MAX 256
/* quarantine_bytes left to the debug runtime: ASan's scale, bounded by the machine's RAM. */
#define RP_QUARANTINE_AUTO ((size_t)-1)

typedef struct rp_options {
    /* malloc drop-in */
    size_t cache_bytes;        /* cache_bytes: per-thread cache cap (default 1M) */
    unsigned free_batch;       /* free_batch: frees collected before they are examined, 0..64
                                  (default 32; 0 and 1: each at its call; thread_cache.h T5) */
    size_t retain_bytes;       /* retain_bytes: free page memory kept mapped per heap (default 32M) */
    unsigned purge_delay_ms;   /* purge_delay_ms: how long memory beyond retain_bytes stays
                                  before it goes back (default 10000) */
    size_t mapped_block_bytes; /* mapped_block_bytes: large blocks from this size get a mapping
                                  of their own (default 32M; 0 = never; raised to 2M) */
    int huge_pages;            /* huge_pages: RP_HEAP_HUGE_PAGES on the malloc heaps (default 1) */
    int slabs;                 /* slabs: small blocks from header-free slabs (default 1;
                                  malloc_slabs.h) */
    int stats;                 /* stats: print rp_malloc_stats_print() at exit (default 0) */
    unsigned arenas;           /* arenas: heaps malloc spreads threads over, 1..64 (default 0 =
                                  one per CPU the process may run on, at least 2, at most 64) */
    int ignore_foreign_free;   /* ignore_foreign_free: free() of a pointer rampart never handed
                                  out is counted and ignored instead of reported (default 0) */
    int hardened;              /* hardened: the hardened profile (malloc drop-in, release;
                                  src/malloc/hardened.h; default 0) */
    int stats_json;            /* stats_json: the exit statistics as JSON (default 0) */
    unsigned temporary_ms;     /* temporary_ms: a block freed within this many ms of its
                                  allocation is a temporary (statistics; default 10) */
    /* heap profiler (release malloc drop-in, src/malloc/profile.h) */
    int profile;               /* profile: sampled heap profiling (default 0) */
    size_t profile_rate;       /* profile_rate: mean bytes between samples (default 512K; 0 =
                                  every allocation) */
    unsigned long profile_seed; /* profile_seed: seed of the sampling intervals, 0 = random */
    /* debug flavour */
    int poison;                /* poison: fill fresh and freed blocks (default 1) */
    unsigned alloc_fill;       /* alloc_fill: byte for fresh blocks (default 0xbe) */
    unsigned free_fill;        /* free_fill: byte for freed blocks (default 0x6b) */
    size_t alloc_fill_max;     /* alloc_fill_max: bytes of a fresh block filled with alloc_fill,
                                  from its start (default 1M; a 4 GiB block is not written) */
    size_t quarantine_bytes;   /* quarantine_bytes: freed bytes held back FIFO per heap (default
                                  256M, at most an eighth of the RAM) */
    unsigned backtrace_depth;  /* backtrace_depth: frames per stack, 0 = off (default 16, max 64) */
    int fast_unwind;           /* fast_unwind: allocation/free stacks by frame pointers (default 0) */
    unsigned long check_interval; /* check_interval: rp_heap_check every N operations, 0 = off */
    int abort_on_error;        /* on_error: abort | continue (default abort) */
    int leak_report;           /* leak_report: leak report at exit (default 0) */
    int check_at_exit;         /* check_at_exit: verify every block's cookies and poison at exit
                                  (default 1) */
    unsigned leak_exit_code;   /* leak_exit_code: exit status when the exit-time leak report
                                  finds leaks, 0 = leave the status alone (default 0) */
    char report_path[RP_OPTION_PATH_MAX]; /* report_path: stderr (default), stdout or a file
                                             path; %p = pid, /dev/fd/N = a descriptor */
    char suppressions[RP_OPTION_PATH_MAX]; /* suppressions: file of leak suppressions in
                                              LeakSanitizer's format (default "": none) */
    unsigned long guard;       /* guard: off (0, default), all (1) or sample:N (1 in N blocks
                                  placed against an inaccessible page) */
    int guard_left;            /* guard_left: guarded blocks start at the page boundary (an
                                  underflow faults) instead of ending at it (default 0) */
    /* dumps */
    int dump_signal;           /* dump_signal: signal that requests a heap dump, 0 = off */
    int dump_at_exit;          /* dump_at_exit: write a dump at exit (default 0) */
    char dump_path[RP_OPTION_PATH_MAX]; /* dump_path: pattern, %p = pid, %n = sequence
                                           (default rampart.%p.%n.rpd) */
    unsigned dump_interval;    /* dump_interval: a dump every this many seconds, 0 = off */
    int dump_on_peak;          /* dump_on_peak: a dump each time live bytes pass the last peak
                                  dump's by dump_peak_step (default 0) */
    size_t dump_peak_step;     /* dump_peak_step: see dump_on_peak (default 16M) */
    /* about the options themselves */
    int help;                  /* help: print every key, its meaning, default and flavours */
    int verbose;               /* verbose: print the effective values */
} rp_options;

/* Which flavour reads the options: what decides the "has no effect" warnings. */
typedef enum rp_options_flavour { RP_OPTIONS_RELEASE, RP_OPTIONS_DEBUG } rp_options_flavour;

/* The flavour this library was built as. */
rp_options_flavour rp_options_flavour_built(void);

/* Receives one line of text: a warning, or a line of help (no trailing newline). */
typedef void (*rp_option_warn_fn)(const char *line, void *arg);

void rp_options_defaults(rp_options *o);

/* 1 for the signals a fault raises synchronously (SEGV, BUS, FPE, ILL, TRAP, ABRT, SYS), which
 * dump_signal refuses: a handler that returns would run again at the same instruction. */
int rp_options_fault_signal(int sig);

/* Parses text into *o (fields not mentioned keep their values) for this library's flavour.
 * Returns the number of warnings; each is also passed to warn (if non-NULL). text NULL or ""
 * is fine. */
int rp_options_parse(const char *text, rp_options *o, rp_option_warn_fn warn, void *arg);

/* Parts of rampart a library may lack, beyond its flavour: a key acted on by a part the
 * library does not have is stored and warned about once, as a key of the other flavour is. */
enum {
    RP_OPTIONS_PART_MALLOC = 1,        /* the malloc drop-in (src/malloc) */
    RP_OPTIONS_PART_DUMP = 2,          /* the dump writer (debug/dump_*) */
    RP_OPTIONS_PART_PROFILE = 4,       /* the release drop-in's heap profiler */
    RP_OPTIONS_PART_DEBUG_RUNTIME = 8, /* the debug runtime (no key needs it today) */
    RP_OPTIONS_PARTS_ALL = 15
};

/* The parts linked into this library (what the process's options are checked against). */
unsigned rp_options_parts_linked(void);

/* Defined, as 1, by the parts a library may have: the malloc drop-in
 * (src/malloc/malloc_init.c), the dump writer (debug/dump_trigger.c) and the release heap
 * profiler (src/malloc/profile.c). Weak: an absent part's address reads as NULL. */
extern const char rp_options_part_malloc __attribute__((weak));
extern const char rp_options_part_dump __attribute__((weak));
extern const char rp_options_part_profile __attribute__((weak));

/* rp_options_parse_as for a library holding only `parts` (RP_OPTIONS_PART_*). */
int rp_options_parse_in(const char *text, rp_options *o, rp_options_flavour flavour, unsigned parts,
                        rp_option_warn_fn warn, void *arg);

/* rp_options_parse as the given flavour would with every part (tests and the fuzz oracle run
 * both flavours). */
int rp_options_parse_as(const char *text, rp_options *o, rp_options_flavour flavour, rp_option_warn_fn warn,
                        void *arg);

/* Passes one line per key to fn: name, kind of value, default, the flavours using it and its
 * meaning (what help=1 prints). */
void rp_options_help(rp_option_warn_fn fn, void *arg);

/* Passes one line "key=value" per key the flavour uses to fn, the value written so that
 * parsing the line gives it back (what verbose=1 prints); a path left empty (no suppressions
 * file) is not listed. */
void rp_options_describe(const rp_options *o, rp_options_flavour flavour, rp_option_warn_fn fn, void *arg);

/* The process's options: defaults plus RAMPART_OPTIONS, parsed on first call (warnings to
 * stderr, prefixed "rampart: "). Thread-safe; never allocates. */
const rp_options *rp_options_get(void);

/* The documented keys, for help texts and tests: name, a one-line description and which
 * flavours use the key ("both", "debug" or "release"). */
typedef struct rp_option_doc {
    const char *name;
    const char *help;
    const char *flavours;
} rp_option_doc;
const rp_option_doc *rp_options_docs(size_t *count);

#endif
