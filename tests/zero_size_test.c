/* malloc(0) (zero_size.h): unique pointers into an inaccessible range, so that a read or a
 * write through one faults at the access; free, realloc and malloc_usable_size know them; a
 * second free and an address inside a slot are reported. Default options, drop-in linked
 * statically, white-box. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "report_count.h"
#include "src/malloc/zero_size.h"
#include "testing.h"

static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_realloc)(void *, size_t) = realloc;
static void *(*volatile do_calloc)(size_t, size_t) = calloc;

static void check_malloc(const char *when)
{
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s: %s", when, why);
}

static void test_unique_and_recognised(void)
{
    enum { N = 5000 };
    static void *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = i % 2 ? do_malloc(0) : do_calloc(0, 8);
        REQUIRE(p[i]);
        CHECK(rp_zs_contains(p[i]) && rp_zs_live(p[i]));
        CHECK(malloc_usable_size(p[i]) == 0);
    }
    int dup = 0;
    for (int i = 1; i < N; i++)
        dup += p[i] == p[i - 1];
    CHECK(dup == 0);
    check_malloc("with zero-size blocks live");
    for (int i = 0; i < N; i++)
        do_free(p[i]);
    check_malloc("after freeing them");
    /* A freed slot is not handed out again at once. */
    void *a = do_malloc(0);
    do_free(a);
    void *b = do_malloc(0);
    CHECK(a != b);
    do_free(b);
}

static void test_misuse_reported(void)
{
    memset(reports, 0, sizeof reports);
    void *p = do_malloc(0);
    do_free(p);
    do_free(p);
    CHECK(reports[RP_ERR_DOUBLE_FREE] == 1 && last_address == p);
    void *q = do_malloc(0);
    do_free((char *)q + 8);
    CHECK(reports[RP_ERR_INVALID_FREE] == 1 && last_address == (char *)q + 8);
    errno = 0;
    CHECK(do_realloc(p, 10) == NULL && errno == EINVAL && reports[RP_ERR_DOUBLE_FREE] == 2);
    /* realloc of a live one: an ordinary block, the zero-size one freed. */
    char *r = do_realloc(q, 100);
    REQUIRE(r && !rp_zs_contains(r));
    memset(r, 1, 100);
    CHECK(!rp_zs_live(q));
    do_free(r);
    check_malloc("after misuse");
}

/* A read and a write through a zero-size block fault (in a child). */
static void test_access_faults(void)
{
    for (int write = 0; write <= 1; write++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            volatile char *p = do_malloc(0);
            if (write)
                p[0] = 1;
            else
                (void)p[0];
            _exit(0);
        }
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        /* SIGSEGV, or under a sanitizer its report and a failing exit */
        CHECKF(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "a %s through malloc(0) did not fault",
               write ? "write" : "read");
    }
}

int main(void)
{
    void *old_arg;
    rp_set_report_fn(count_report, NULL, &old_arg);
    test_unique_and_recognised();
    test_misuse_reported();
    test_access_faults();
    TEST_MAIN_END();
}
