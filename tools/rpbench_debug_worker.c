/* rpbench worker linked against the debug flavour (//src:rampart_debug): the "debug" and
 * "debug-nobt" rows (rp_alloc/rp_free with every debug check on), plus one measurement of its
 * own: the cost of one stack capture (`--worker rp capture`). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rampart_debug.h"
#include "rpbench_worker.h"

/* A stack capture (unw_backtrace + trimming + depot lookup) from a stack `levels` frames
 * deeper than the caller. */
__attribute__((noinline)) static uint32_t capture_at_depth(int levels)
{
    uint32_t id = levels ? capture_at_depth(levels - 1) : rp_stack_capture(0);
    __asm__ volatile("" ::: "memory");
    return id;
}

/* Prints the "lib" line and the ns per capture, as every worker prints its numbers. */
static int worker_capture(int n)
{
    printf("lib rampart %s flavour (stack capture)\n", rp_flavour());
    capture_at_depth(20);
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (int i = 0; i < n; i++)
        capture_at_depth(20);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    printf("%.1f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[3], "capture") == 0)
        return worker_capture(200000);
    return rpbench_worker_main(argc, argv);
}
