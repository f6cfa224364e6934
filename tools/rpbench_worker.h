/* rpbench workers: the measurements themselves. One worker process runs one measurement of
 * one allocator and prints its numbers on stdout; the driver (rpbench.h) starts workers,
 * interleaves allocators and repetitions, and reports medians.
 *
 * A worker is any binary whose main calls rpbench_worker_main: rpbench itself, or a binary
 * linked against another flavour (for instance the debug flavour of rampart), named in the
 * driver's allocator table. Command line:
 *
 *   WORKER --worker API SCENARIO ARGS...
 *     API       malloc  posix_memalign/malloc/free of whatever malloc the process has
 *                       (LD_PRELOAD chooses it)
 *               rp      rp_alloc/rp_free on one rampart heap (the flavour linked in)
 *     SCENARIO  seed CASE ROUNDS PER_ROUND   ns/op of each round
 *               churn CASE OPS               ns/op, then p99.9 latency in ns
 *               memory CASE ROUNDS PER_ROUND peak RSS / bytes requested
 *               pairs THREADS OPS            ops/s (ops = mallocs + frees)
 *               prodcons THREADS OPS         ops/s
 *               grow PATTERN MAX_MIB         CPU ms, then MiB reached (PATTERN x1.5, +64k or
 *                                            again: MAX_MIB / 8 allocated and freed 25 times)
 *               grid SIZE ALIGN ROUNDS PER_ROUND OPS
 *                                            ns/op of each no-free round, then churn ns/op
 *
 * seed, churn, grid and grow measure the worker thread's CPU time (a shared machine's descheduling does
 * not count, page faults do); pairs and prodcons measure wall time (scaling is the point);
 * the churn p99.9 latency times each op with the TSC.
 * The first output line names the library malloc came from ("lib PATH"), so the driver can
 * check that LD_PRELOAD took effect; the second holds the numbers. Exit status 0 = valid. */
#ifndef RPBENCH_WORKER_H
#define RPBENCH_WORKER_H

#include <stddef.h>

typedef struct rpb_shape {
    size_t size, align; /* align 0: plain malloc */
} rpb_shape;

typedef struct rpb_case {
    const char *name;
    rpb_shape shapes[8]; /* cycled through, one per allocation */
    int nshapes;
} rpb_case;

/* The seed scenario's cases (the heap core issue's), shared by driver and workers. */
extern const rpb_case rpb_cases[];
extern const int rpb_ncases;

int rpbench_worker_main(int argc, char **argv);

#endif
