/* Checks at exit (check_at_exit, on by default): a program that overflows or underflows a
 * block it never frees, or writes to a block it freed that is still in quarantine, gets the
 * report at exit — kind, first bad byte, the block's allocation (and free) stack — and aborts
 * (a write through the pointer realloc moved from, too: realloc always moves in debug);
 * with on_error=continue every violation is reported and the exit status is the program's;
 * a clean program prints nothing; check_at_exit=0 turns the check off. Each case runs in a
 * child process (this binary again). */
#define _GNU_SOURCE
#include <string.h>

#include "child_process.h"
#include "debug_testing.h"
#include "rampart.h"
#include "report_parse.h"
#include "testing.h"

__attribute__((noinline)) char *never_freed(size_t n)
{
    char *p = rp_alloc(NULL, n, 0);
    KEEP_FRAME();
    return p;
}

TEST_NO_ASAN __attribute__((noinline)) void overflow_kept_block(void)
{
    char *p = never_freed(24);
    ((volatile char *)p)[24] = 'x'; /* one past the end; the block is never freed */
    KEEP_FRAME();
}

TEST_NO_ASAN __attribute__((noinline)) void underflow_kept_block(void)
{
    char *p = never_freed(40);
    ((volatile char *)p)[-3] = 'y';
    KEEP_FRAME();
}

__attribute__((noinline)) void release(char *p)
{
    rp_free(p);
    KEEP_FRAME();
}

TEST_NO_ASAN __attribute__((noinline)) void write_after_free_in_quarantine(void)
{
    char *p = never_freed(56);
    release(p);
    ((volatile char *)p)[7] = 'z';
    KEEP_FRAME();
}

/* realloc moves every block in the debug flavour: the old one is quarantined, even when the
 * block could have grown in place (nothing follows it here). */
__attribute__((noinline)) char *resize(char *p, size_t n)
{
    char *q = rp_realloc(NULL, p, n);
    KEEP_FRAME();
    return q;
}

TEST_NO_ASAN __attribute__((noinline)) void write_through_old_pointer(void)
{
    char *p = never_freed(32);
    char *q = resize(p, 48);
    ((volatile char *)p)[5] = 'w';
    __asm__ volatile("" ::"r"(q) : "memory");
    KEEP_FRAME();
}

static int child(const char *mode)
{
    if (strcmp(mode, "overflow") == 0)
        overflow_kept_block();
    else if (strcmp(mode, "underflow") == 0)
        underflow_kept_block();
    else if (strcmp(mode, "uaf") == 0)
        write_after_free_in_quarantine();
    else if (strcmp(mode, "realloc") == 0)
        write_through_old_pointer();
    else if (strcmp(mode, "all") == 0) {
        overflow_kept_block();
        underflow_kept_block();
        write_after_free_in_quarantine();
    } else if (strcmp(mode, "clean") == 0) {
        char *p = never_freed(100);
        p[99] = 1;
        release(p);
    }
    return 7; /* the program's own status */
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void expect(const char *mode, const char *kind, long offset, const char *allocator, const char *freer)
{
    static child_result r;
    REQUIRE(run_child(mode, NULL, &r) == 0);
    CHECKF(!r.exited && r.signal == SIGABRT, "%s: expected an abort at exit, exited=%d code=%d\n%s", mode, r.exited,
           r.code, r.err);
    parsed_report p;
    parse_report(r.err, &p);
    CHECKF(p.found && strcmp(p.kind, kind) == 0 && p.has_offset && p.offset == offset,
           "%s: expected %s at offset %ld\n%s", mode, kind, offset, r.err);
    CHECKF(p.has_alloc && strcmp(p.alloc[0], "never_freed") == 0 && strcmp(p.alloc[1], allocator) == 0,
           "%s: allocation stack\n%s", mode, r.err);
    if (freer)
        CHECKF(p.has_free && strcmp(p.freed[0], freer) == 0,
               "%s: free stack\n%s", mode, r.err);
    else
        CHECKF(!p.has_free, "%s: a free stack for a live block\n%s", mode, r.err);
}

int main(int argc, char **argv)
{
    if (argc == 2)
        return child(argv[1]);
    expect("overflow", "heap-buffer-overflow", 24, "overflow_kept_block", NULL);
    expect("underflow", "heap-buffer-underflow", -3, "underflow_kept_block", NULL);
    expect("uaf", "use-after-free-write", 7, "write_after_free_in_quarantine", "release");
    expect("realloc", "use-after-free-write", 5, "write_through_old_pointer", "resize");

    static child_result r;
    REQUIRE(run_child("all", "on_error=continue", &r) == 0);
    CHECKF(r.exited && r.code == 7 && count_of(r.err, "ERROR: rampart:") == 3 &&
               strstr(r.err, "heap-buffer-overflow") && strstr(r.err, "heap-buffer-underflow") &&
               strstr(r.err, "use-after-free-write"),
           "continue: code %d\n%s", r.code, r.err);
    REQUIRE(run_child("clean", NULL, &r) == 0);
    CHECKF(r.exited && r.code == 7 && r.err[0] == 0, "clean: code %d\n%s", r.code, r.err);
    REQUIRE(run_child("all", "check_at_exit=0", &r) == 0);
    CHECKF(r.exited && r.code == 7 && strstr(r.err, "rampart") == NULL, "off: code %d\n%s", r.code, r.err);
    TEST_MAIN_END();
}
