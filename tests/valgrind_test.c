/* Valgrind integration: memcheck, run on a program using a rampart heap (debug flavour),
 * reports its leak and its use after free through rampart's client requests, and nothing
 * else (no false reports from rampart's own metadata accesses or from stack capture); rampart's
 * exit-time check reports the same write after free (run with on_error=continue, so the run
 * ends normally and memcheck prints its leak summary).
 *
 * Valgrind cannot run a program built with ASan or TSan: in those configurations the test
 * says so and checks nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "child_process.h"
#include "debug_testing.h"
#include "testing.h"

#if defined(UNDER_ASAN) || defined(UNDER_TSAN)
static const int under_sanitizer = 1;
#else
static const int under_sanitizer = 0;
#endif

static child_result r;

/* The text of the memcheck error block that starts with `title`. */
static const char *block_after(const char *title)
{
    return strstr(r.err, title);
}

int main(int argc, char **argv)
{
    if (under_sanitizer) {
        printf("sanitizer build: Valgrind cannot run it; nothing checked\n");
        return 0;
    }
    REQUIRE(argc == 2);
    char *cmd[] = {"valgrind", "--leak-check=full", "--num-callers=12", argv[1], NULL};
    REQUIRE(run_argv(cmd, "on_error=continue", &r) == 0);
    CHECKF(r.exited && r.code == 0 && strstr(r.out, "sum 496"), "valgrind run failed (%d):\n%s", r.code, r.err);
    const char *ours = strstr(r.err, "ERROR: rampart: use-after-free-write");
    CHECKF(ours && strstr(ours, "Block freed here:") && strstr(ours, "write_after_free"),
           "rampart's exit-time check did not report the write after free:\n%s", r.err);
    /* The use after free: memcheck's own report, in the program's function, naming the freed
     * block rampart described with FREELIKE. */
    const char *uaf = block_after("Invalid write of size 1");
    CHECKF(uaf && strstr(uaf, "write_after_free") && strstr(uaf, "is 10 bytes inside a block of size 64 free'd"),
           "no use-after-free report:\n%s", r.err);
    /* The leak: 100 bytes definitely lost, allocated from leak_one_block. */
    const char *leak = block_after("100 bytes in 1 blocks are definitely lost");
    CHECKF(leak && strstr(leak, "leak_one_block"), "no leak report:\n%s", r.err);
    CHECKF(strstr(r.err, "definitely lost: 100 bytes in 1 blocks") && strstr(r.err, "possibly lost: 0 bytes"),
           "leak summary:\n%s", r.err);
    /* Exactly those two errors: nothing about rampart's metadata, quarantine or stack capture. */
    CHECKF(strstr(r.err, "ERROR SUMMARY: 2 errors from 2 contexts") != NULL, "unexpected errors:\n%s", r.err);
    TEST_MAIN_END();
}
