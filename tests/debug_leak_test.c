/* Leak reports: a program that leaks from two call sites gets a report listing exactly those
 * two, with the right counts and bytes, largest first, and nothing else (not freed blocks,
 * quarantined blocks, blocks marked with rp_set_not_leak, or heaps marked reachable by design).
 * Checked at exit (leak_report=1, leak_exit_code) in a child process, and on demand with
 * rp_leak_report(heap, fd) in this process. Reachability across heaps and caller regions: a
 * block in a caller region held in .bss is leaked when nothing points to it (the region is
 * not a root), its child in another heap is an indirect leak, a pointer into the middle of a
 * block keeps it, and a block marked with rp_set_not_leak keeps what it points to. Copies of a
 * block's address left on the dead stack below the caller (where the functions that handled it
 * ran, and where the scan and the libraries it calls run next) are no roots: the block is
 * still leaked, on demand and at exit; a block main holds when it calls exit() is not. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child_process.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "debug_testing.h"
#include "testing.h"

static rp_heap *target; /* NULL = the default heap */

__attribute__((noinline)) void *leak_site_a(void)
{
    void *p = rp_alloc(target, 100, 0);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *leak_site_b(void)
{
    void *p = rp_alloc(target, 7, 0);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *temporary_site(size_t n)
{
    void *p = rp_alloc(target, n, 0);
    KEEP_FRAME();
    return p;
}

/* Trip counts the compiler cannot see: unrolled (gcc -O2 peels loops of 2 or 3 known
 * iterations), each call would have its own return address, so its own stack and group. */
static volatile int three = 3, two = 2;

/* Leaks 3 x 100 bytes from site a and 2 x 7 from site b; everything else is freed, marked,
 * or in a heap marked as reachable by design. */
__attribute__((noinline)) void leaky_program(void)
{
    for (int i = 0; i < three; i++)
        leak_site_a();
    for (int i = 0; i < two; i++)
        leak_site_b();
    for (int i = 0; i < 10; i++)
        rp_free(temporary_site(1000)); /* freed: some still quarantined */
    void *grown = rp_realloc(target, temporary_site(10), 5000);
    rp_free(grown);
    void *cache = temporary_site(64);
    REQUIRE(rp_set_not_leak(cache) == 0);
    void *large = temporary_site(300000); /* page tier, freed */
    rp_free(large);
    KEEP_FRAME();
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The function name of frame #k after the line holding `header`. */
static void frame_name(const char *header, int k, char *out, size_t len)
{
    out[0] = 0;
    const char *p = header;
    for (int i = 0; i <= k && p; i++)
        p = strchr(p + 1, '\n');
    if (!p)
        return;
    const char *in = strstr(p, " in ");
    if (!in)
        return;
    in += 4;
    size_t n = strcspn(in, "+ \n");
    if (n >= len)
        n = len - 1;
    memcpy(out, in, n);
    out[n] = 0;
}

static void check_two_site_report(const char *text, const char *heap_name, const char *caller)
{
    CHECKF(count_of(text, "leak of ") == 2, "expected two groups:\n%s", text);
    const char *a = strstr(text, "Direct leak of 300 byte(s) in 3 object(s) allocated from:");
    const char *b = strstr(text, "Direct leak of 14 byte(s) in 2 object(s) allocated from:");
    CHECKF(a && b && a < b, "groups wrong or not largest first:\n%s", text);
    char name[96];
    if (a) {
        frame_name(a, 0, name, sizeof name);
        CHECKF(strcmp(name, "leak_site_a") == 0, "group a frame #0 is '%s'", name);
        frame_name(a, 1, name, sizeof name);
        CHECKF(strcmp(name, caller) == 0, "group a frame #1 is '%s'", name);
    }
    if (b) {
        frame_name(b, 0, name, sizeof name);
        CHECKF(strcmp(name, "leak_site_b") == 0, "group b frame #0 is '%s'", name);
    }
    char summary[128];
    if (heap_name)
        snprintf(summary, sizeof summary, "SUMMARY: rampart: 314 byte(s) leaked in 5 allocation(s) (heap '%s').",
                 heap_name);
    else
        snprintf(summary, sizeof summary, "SUMMARY: rampart: 314 byte(s) leaked in 5 allocation(s).");
    CHECKF(strstr(text, summary) != NULL, "no '%s' in:\n%s", summary, text);
    CHECKF(strstr(text, "temporary_site") == NULL, "freed or marked blocks reported:\n%s", text);
}

/* On demand, in this process: a private heap, the report into a file. */
__attribute__((noinline)) void on_demand_program(void)
{
    leaky_program();
    KEEP_FRAME();
}

/* A new report file under TEST_TMPDIR. */
static int report_file(const char *name)
{
    const char *dir = getenv("TEST_TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "/tmp", name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    return fd;
}

/* The file's text, in a buffer the next call overwrites. */
static const char *report_text(int fd)
{
    static char text[65536];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = 0;
    return text;
}

/* A block whose address its handlers left all over the stack below the caller. */
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static uintptr_t stale_hidden;

__attribute__((noinline)) void *stale_site(void)
{
    void *p = rp_alloc(NULL, 33, 0);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) static void spread_copies(void *p)
{
    volatile uintptr_t copies[4096];
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++)
        copies[i] = (uintptr_t)p;
    KEEP_FRAME();
}

__attribute__((noinline)) static void leave_stale_copies(void)
{
    void *p = stale_site();
    spread_copies(p);
    stale_hidden = (uintptr_t)p ^ HIDE;
    KEEP_FRAME();
}

/* Must run before any other scan of this process: the first one installs the stop signal. */
static void check_stale_copies(void)
{
    leave_stale_copies();
    int fd = report_file("stale.txt");
    CHECK(rp_leak_report(NULL, fd) == 1);
    const char *text = report_text(fd);
    CHECKF(strstr(text, "Direct leak of 33 byte(s) in 1 object(s)") && strstr(text, "in stale_site"),
           "stale copies kept the block:\n%s", text);
    close(fd);
    rp_free((void *)(stale_hidden ^ HIDE));
}

static void check_on_demand(void)
{
    rp_heap_config cfg = {0};
    cfg.name = "leaky";
    target = rp_heap_create(&cfg);
    REQUIRE(target);
    on_demand_program();
    int fd = report_file("leaks.txt");
    CHECK(rp_leak_report(target, fd) == 5);
    check_two_site_report(report_text(fd), "leaky", "leaky_program");

    /* A heap marked reachable by design reports nothing. */
    rp_heap_set_not_leak(target, 1);
    CHECK(rp_leak_report(target, fd) == 0);
    rp_heap_set_not_leak(target, 0);
    CHECK(rp_leak_report(target, -1 /* report destination; not read here */) == 5);

    /* Bad pointers for rp_set_not_leak. */
    int local;
    errno = 0;
    CHECK(rp_set_not_leak(&local) == -1 && errno == EINVAL);
    CHECK(rp_set_not_leak(NULL) == -1);

    /* Once the leaked blocks are freed (found through the walk), nothing is left to report. */
    rp_heap_destroy(target);
    target = rp_heap_create(NULL);
    void *p = leak_site_a();
    rp_free(p);
    off_t end = lseek(fd, 0, SEEK_END);
    CHECK(rp_leak_report(target, fd) == 0);
    CHECK(lseek(fd, 0, SEEK_END) == end); /* wrote nothing */
    rp_heap_destroy(target);
    target = NULL;
    close(fd);
}

static char region_memory[256 << 10] __attribute__((aligned(64))); /* .bss: a writable segment */
void *middle_pointer;                                                  /* a global: a root */

__attribute__((noinline)) void *region_parent(rp_heap *region_heap, rp_heap *other)
{
    void **parent = rp_alloc(region_heap, 40, 0);
    REQUIRE(parent);
    parent[0] = rp_alloc(other, 24, 0); /* its child, in another heap */
    KEEP_FRAME();
    return parent;
}

__attribute__((noinline)) void keep_through_middle(rp_heap *h)
{
    char *p = rp_alloc(h, 64, 0);
    middle_pointer = p + 30;
    KEEP_FRAME();
}

__attribute__((noinline)) void keep_through_marked(rp_heap *h)
{
    void **holder = rp_alloc(h, 16, 0);
    holder[0] = rp_alloc(h, 8, 0);
    REQUIRE(rp_set_not_leak(holder) == 0);
    KEEP_FRAME();
}

/* The blocks of the reachability case, made in a frame that is gone when the scan runs (a
 * live frame may keep a copy of a leaked pointer at -O0 or under ASan). */
__attribute__((noinline)) void make_reachability_case(rp_heap *region_heap, rp_heap *other)
{
    __asm__ volatile("" ::"r"(region_parent(region_heap, other)) : "memory");
    keep_through_middle(other);
    keep_through_marked(other);
    KEEP_FRAME();
}

__attribute__((noinline)) void wipe_stack(void)
{
    volatile char scratch[16384];
    for (size_t i = 0; i < sizeof scratch; i++)
        scratch[i] = 0;
    KEEP_FRAME();
}

static void check_reachability(void)
{
    rp_heap_config cfg = {0};
    cfg.name = "region";
    cfg.flags = RP_HEAP_NO_OS;
    rp_heap *region_heap = rp_heap_create(&cfg);
    REQUIRE(region_heap && rp_heap_add_region(region_heap, region_memory, sizeof region_memory) == 0);
    cfg.name = "other";
    cfg.flags = 0;
    rp_heap *other = rp_heap_create(&cfg);
    REQUIRE(other);
    make_reachability_case(region_heap, other);
    wipe_stack();

    int fd = report_file("reach.txt");
    CHECK(rp_leak_report(region_heap, fd) == 1);
    const char *text = report_text(fd);
    CHECKF(count_of(text, "leak of ") == 1 && strstr(text, "Direct leak of 40 byte(s) in 1 object(s)") &&
               strstr(text, "in region_parent"),
           "region heap:\n%s", text);
    REQUIRE(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
    CHECK(rp_leak_report(other, fd) == 1);
    text = report_text(fd);
    CHECKF(count_of(text, "leak of ") == 1 && strstr(text, "Indirect leak of 24 byte(s) in 1 object(s)") &&
               strstr(text, "in region_parent") && !strstr(text, "keep_through"),
           "other heap:\n%s", text);
    close(fd);
    rp_heap_destroy(region_heap);
    rp_heap_destroy(other);
    middle_pointer = NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "leaky") == 0) {
        /* Another heap, marked as reachable by design: its blocks are never reported. */
        rp_heap *arena = rp_heap_create(NULL);
        rp_heap_set_not_leak(arena, 1);
        rp_alloc(arena, 50, 0);
        leaky_program();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "stale") == 0) {
        leave_stale_copies();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "exit_holding") == 0) {
        /* exit() called while main's frame still holds the block: not a leak. */
        void *volatile held = rp_alloc(NULL, 44, 0);
        exit(held ? 0 : 1);
    }
    static child_result r;
    REQUIRE(run_child("leaky", "leak_report=1:leak_exit_code=23", &r) == 0);
    CHECKF(r.exited && r.code == 23, "exit status %d (signal %d), expected 23", r.code, r.signal);
    check_two_site_report(r.err, NULL, "leaky_program");
    CHECKF(count_of(r.err, "detected memory leaks") == 1, "one heap should report:\n%s", r.err);
    /* leak_report off: no report, normal exit. */
    REQUIRE(run_child("leaky", "leak_exit_code=23", &r) == 0);
    CHECKF(r.exited && r.code == 0 && strstr(r.err, "leak of") == NULL, "report without leak_report:\n%s", r.err);
    REQUIRE(run_child("stale", "leak_report=1:leak_exit_code=23", &r) == 0);
    CHECKF(r.exited && r.code == 23 && strstr(r.err, "Direct leak of 33 byte(s) in 1 object(s)") &&
               strstr(r.err, "in stale_site"),
           "exit status %d; stale copies kept the block at exit:\n%s", r.code, r.err);
    REQUIRE(run_child("exit_holding", "leak_report=1:leak_exit_code=23", &r) == 0);
    CHECKF(r.exited && r.code == 0 && !strstr(r.err, "leak of"),
           "exit status %d; a block main held when it called exit() was reported:\n%s", r.code, r.err);
    check_stale_copies();
    check_on_demand();
    check_reachability();
    TEST_MAIN_END();
}
