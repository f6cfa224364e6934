/* rpbench: running one outside program under one allocator. The program scenario, the
 * mimalloc-bench suite and its security tests all start a program with an allocator in
 * LD_PRELOAD (and maybe RAMPART_OPTIONS), wait for it with a time limit, and read how long it
 * ran, its peak resident set and what it printed. */
#ifndef RPBENCH_EXEC_H
#define RPBENCH_EXEC_H

#include <stddef.h>

typedef struct rpb_command {
    const char *const *argv; /* argv[0] is a path; NULL-terminated */
    const char *cwd;         /* NULL = rpbench's */
    const char *stdin_path;  /* NULL = /dev/null */
    const char *stdout_path; /* NULL = /dev/null */
    const char *stderr_path; /* NULL = /dev/null */
    const char *preload;     /* LD_PRELOAD; NULL or "" = unset (the system malloc) */
    const char *options;     /* RAMPART_OPTIONS; NULL = unset */
    const char *const *env;  /* further NAME=value settings, NULL-terminated, or NULL */
    double timeout_s;        /* killed (with its process group) after this long; 0 = no limit */
} rpb_command;

typedef struct rpb_exec_result {
    int exited;          /* 1: exit status in code; 0: killed by signal `signal` */
    int code, signal;
    int timed_out;       /* killed by rpbench at the time limit */
    double wall_s;       /* elapsed */
    double user_s, sys_s; /* of the process and its waited-for children */
    double peak_rss_mib; /* the largest resident set of the process or one of its children */
} rpb_exec_result;

/* Runs the command and waits for it. 0 when it could be started and waited for (whatever its
 * status), -1 with errno otherwise. The program is started through the calling binary's
 * `--spawn` mode (rpb_spawn_main), so the calling binary must dispatch it. */
int rpb_exec(const rpb_command *cmd, rpb_exec_result *out);

/* What went wrong in a run, in words ("exited with status 3", "killed by signal 11 (SIGSEGV)",
 * "timed out after 5 s"), or "" for a run that exited with 0. */
void rpb_exec_describe(const rpb_exec_result *r, double timeout_s, char *buf, size_t len);

/* The `--spawn` mode of a binary that calls rpb_exec: argv = {self, "--spawn", FD, PRELOAD,
 * OPTIONS, NENV, ENV..., PROGRAM, ARGS...}. Runs the program, writes "maxrss_kb user_s
 * sys_s" of it to FD, and ends as the program ended. */
int rpb_spawn_main(int argc, char **argv);

#endif
