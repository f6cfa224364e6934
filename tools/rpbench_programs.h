/* rpbench's program scenario: whole programs run under each allocator by LD_PRELOAD, which is
 * what users of a debug build experience (the microbenchmarks' tight alloc/free loops never
 * touch the memory, so fixed costs such as a stack capture dominate there).
 *
 * The workloads form a table: each names an executable, how it gets its generated script
 * (written once into a work directory) and its environment. A run measures wall-clock time and
 * the CPU time (user + system) of the process and its children and its peak resident set
 * (which is where an allocator's per-block overhead shows in a real program), and hashes what
 * it printed, so
 * the driver can check that every allocator produced the same output. */
#ifndef RPBENCH_PROGRAMS_H
#define RPBENCH_PROGRAMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct rpb_program {
    const char *name;         /* row label */
    const char *what;         /* one line for the header */
    const char *exe;          /* executable: /usr/bin/<exe>, else searched on PATH */
    const char *script;       /* file name of the generated script in the work directory */
    int script_on_stdin;      /* 1: `exe DB < script` (a fresh database file); 0: `exe script` */
    const char *env[3];       /* NAME=value for the run (NULL-terminated) */
    void (*generate)(FILE *f); /* writes the script */
} rpb_program;

extern const rpb_program rpb_programs[];
extern const int rpb_nprograms;

/* Writes every workload's script into dir (which exists). 0, or -1 with errno. */
int rpb_programs_prepare(const char *dir);

/* Finds workload p's executable; 0 and its path in path, or -1. */
int rpb_program_find(int p, char *path, size_t len);

typedef struct rpb_run {
    double wall_s, cpu_s;  /* elapsed; user + system of the process and its children */
    double peak_rss_mib;   /* the largest resident set of the process or one of its children */
    uint64_t output_hash;  /* FNV-1a of stdout */
    char error[240];       /* why the run failed ("" = it did not) */
} rpb_run;

/* Writes the ASAN_OPTIONS value of a row into buf: detect_leaks=0 (an ASan runtime in
 * LD_PRELOAD must not report the program's leaks), then extra (NULL = nothing) after a ':'. */
void rpb_asan_options(const char *extra, char *buf, size_t len);

/* Runs workload p (executable exe) once in dir with LD_PRELOAD=preload (NULL or "" = none),
 * RAMPART_OPTIONS=options (NULL = unset) and ASAN_OPTIONS from rpb_asan_options(asan_options).
 * Fails (error set, -1) when the program fails, the library could not be preloaded, or an
 * allocator printed an error report. */
int rpb_program_run(int p, const char *exe, const char *dir, const char *preload, const char *options,
                    const char *asan_options, rpb_run *out);

#endif
