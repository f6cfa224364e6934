/* The corruption suite of the debug flavour: every kind of heap misuse provoked on purpose in
 * a child process (this binary re-executed with a case name and its own RAMPART_OPTIONS),
 * asserting on the printed report: the kind, the address of the first bad byte, its offset in
 * the block, and the top frames of the detecting, allocating and freeing stacks — which must
 * be this file's own functions (linked with -rdynamic, so dladdr can name them).
 *
 * The deliberate corruptions go through corrupt_bytes(), which ASan does not instrument: under
 * --config=asan this suite still tests rampart's own detection (asan_poison_test tests ASan's). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child_process.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "report_parse.h"
#include "debug_testing.h"
#include "testing.h"

/* ---- the program under test: call sites whose names the reports must show ---- */

__attribute__((noinline)) char *alloc_site(size_t n)
{
    char *p = rp_alloc(NULL, n, 0);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void free_site(void *p)
{
    rp_free(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void second_free_site(void *p)
{
    rp_free(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void *realloc_site(void *p, size_t n)
{
    void *q = rp_realloc(NULL, p, n);
    KEEP_FRAME();
    return q;
}

__attribute__((noinline)) size_t usable_site(void *p)
{
    size_t n = rp_usable_size(p);
    KEEP_FRAME();
    return n;
}

__attribute__((noinline)) void flush_site(void)
{
    rp_quarantine_flush(NULL);
    KEEP_FRAME();
}

/* A stray write by the program, ASan or not. */
__attribute__((noinline)) TEST_NO_ASAN void corrupt_bytes(char *p, long from, long count, char value)
{
    for (long i = from; i < from + count; i++)
        p[i] = value;
    KEEP_FRAME();
}

__attribute__((noinline)) TEST_NO_ASAN unsigned char read_byte(const char *p, long at)
{
    return (unsigned char)p[at];
}

/* The report's address and its offset in the block (reports that name no block). */
static void expect(const void *address, long offset)
{
    printf("EXPECT %p %ld\n", address, offset);
    fflush(stdout);
}

/* The same for a report about the size-byte block at block, whose location line the parent
 * checks too. */
static void expect_in(const char *block, size_t size, long offset)
{
    printf("BLOCK %p %zu\n", (const void *)block, size);
    expect(block + offset, offset);
}

/* ---- cases (child side) ---- */

__attribute__((noinline)) void case_overflow_by_1(void)
{
    char *p = alloc_site(17);
    expect_in(p, 17, 17);
    corrupt_bytes(p, 17, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_overflow_by_16(void)
{
    char *p = alloc_site(40); /* 8 bytes of trailer, then the next block's header */
    expect_in(p, 40, 40);
    corrupt_bytes(p, 40, 16, 'y');
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_overflow_past_trailer(void)
{
    /* Skips the trailer and lands in the next block's header: the core's header check finds
     * it, and the report blames the block whose end was crossed, with its allocation. */
    char *p = alloc_site(40);
    char *q = alloc_site(40);
    (void)q;
    expect_in(p, 40, 48);
    corrupt_bytes(p, 52, 4, 0x7f);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_underflow_by_1(void)
{
    char *p = alloc_site(24);
    expect_in(p, 24, -1);
    corrupt_bytes(p, -1, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_underflow_over_header(void)
{
    /* 40 bytes: the canary, the metadata and half the core's header. The core finds no block
     * at p; the report is still the underflow, at the canary byte nearest the block (the
     * history went with the metadata). */
    char *p = alloc_site(24);
    expect(p - 1, -1);
    corrupt_bytes(p, -40, 40, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_uaf_start(void)
{
    char *p = alloc_site(64);
    free_site(p);
    expect_in(p, 64, 0);
    corrupt_bytes(p, 0, 1, 'A');
    flush_site();
    KEEP_FRAME();
}

__attribute__((noinline)) void case_uaf_middle(void)
{
    char *p = alloc_site(64);
    free_site(p);
    expect_in(p, 64, 32);
    corrupt_bytes(p, 32, 4, 0);
    flush_site();
    KEEP_FRAME();
}

__attribute__((noinline)) void case_uaf_periodic_check(void)
{
    /* check_interval=1: the next allocation runs the checker, which finds the write. */
    char *p = alloc_site(64);
    free_site(p);
    expect_in(p, 64, 10);
    corrupt_bytes(p, 10, 1, 1);
    alloc_site(8);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_uaf_on_reuse(void)
{
    /* quarantine_bytes=0: the block goes straight back to free space; its reuse finds the
     * write (the block's history is gone by then). */
    char *p = alloc_site(64);
    free_site(p);
    expect(p + 5, 5);
    corrupt_bytes(p, 5, 1, 1);
    alloc_site(64);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_double_free(void)
{
    char *p = alloc_site(32);
    free_site(p);
    expect_in(p, 32, 0);
    second_free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_interior_free(void)
{
    char *p = alloc_site(64);
    expect_in(p, 64, 16);
    free_site(p + 16);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_stack_free(void)
{
    char local[64] = {0};
    expect(local + 8, 0);
    free_site(local + 8);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_free_list_link(void)
{
    /* quarantine_bytes=0:check_interval=1: b goes on a free list; a stale write replaces its
     * prev link (16 bytes into its 16-byte header's free-list links: b + 24). */
    char *a = alloc_site(64);
    char *b = alloc_site(64);
    char *c = alloc_site(64);
    (void)a, (void)c;
    free_site(b);
    char *block = b - 48; /* header 16 + debug metadata 32 */
    char why[256];
    corrupt_bytes(block, 24, 8, 0x11);
    int bad = rp_heap_check(NULL, why, sizeof why);
    printf("CHECK %d %s\n", bad, why);
    expect(block, 0);
    alloc_site(200);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_realloc_overflow(void)
{
    char *p = alloc_site(20);
    expect_in(p, 20, 21);
    corrupt_bytes(p, 21, 1, '!');
    realloc_site(p, 100);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_realloc_freed(void)
{
    char *p = alloc_site(20);
    free_site(p);
    expect_in(p, 20, 0);
    realloc_site(p, 100);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_usable_size_freed(void)
{
    char *p = alloc_site(20);
    free_site(p);
    expect_in(p, 20, 0);
    usable_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_large_overflow(void)
{
    char *p = alloc_site(200000); /* page tier */
    expect_in(p, 200000, 200000);
    corrupt_bytes(p, 200000, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_large_underflow(void)
{
    char *p = alloc_site(100000);
    expect_in(p, 100000, -3);
    corrupt_bytes(p, -3, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_large_uaf(void)
{
    char *p = alloc_site(70000);
    free_site(p);
    expect_in(p, 70000, 69999);
    corrupt_bytes(p, 69999, 1, 0);
    flush_site();
    KEEP_FRAME();
}

__attribute__((noinline)) void case_continue(void)
{
    /* on_error=continue: the report is printed, the free is abandoned, the program goes on. */
    char *p = alloc_site(10);
    expect_in(p, 10, 10);
    corrupt_bytes(p, 10, 1, 0);
    free_site(p);
    char *q = alloc_site(10);
    printf("continued %d\n", q != NULL && rp_usable_size(p) == 10);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_no_backtraces(void)
{
    char *p = alloc_site(10);
    expect_in(p, 10, 10);
    corrupt_bytes(p, 10, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_poison_off(void)
{
    /* poison=0: a write after free is not noticed, an overflow still is. */
    char *p = alloc_site(64);
    free_site(p);
    corrupt_bytes(p, 0, 8, 'A');
    flush_site();
    char *q = alloc_site(10);
    expect_in(q, 10, 10);
    corrupt_bytes(q, 10, 1, 0);
    free_site(q);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_fill_patterns(void)
{
    /* alloc_fill=0x11:free_fill=0x22: fresh bytes and freed bytes hold the patterns. */
    char *p = alloc_site(100);
    int fresh = 1, freed = 1;
    for (long i = 0; i < 100; i++)
        fresh &= read_byte(p, i) == 0x11;
    free_site(p);
    for (long i = 0; i < 100; i++)
        freed &= read_byte(p, i) == 0x22;
    printf("FILL %d %d\n", fresh, freed);
}

__attribute__((noinline)) void case_report_path(void)
{
    char *p = alloc_site(33);
    expect_in(p, 33, 33);
    corrupt_bytes(p, 33, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

__attribute__((noinline)) void case_report_fd(void)
{
    char *p = alloc_site(5);
    expect_in(p, 5, 5);
    corrupt_bytes(p, 5, 1, 0);
    free_site(p);
    KEEP_FRAME();
}

typedef struct test_case {
    const char *name;
    void (*run)(void);
    const char *options;   /* extra RAMPART_OPTIONS */
    const char *kind;      /* expected report kind; NULL = no report */
    int aborts;            /* 1: the child dies with SIGABRT */
    const char *detect;    /* expected frame #0 of the detecting stack */
    const char *alloc;     /* expected frame #0 of the allocation stack (NULL: no such section) */
    const char *freed;     /* expected frame #0 of the free stack (NULL: no such section) */
} test_case;

static const test_case cases[] = {
    {"overflow_by_1", case_overflow_by_1, "", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
    {"overflow_by_16", case_overflow_by_16, "", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
    {"overflow_past_trailer", case_overflow_past_trailer, "", "heap-buffer-overflow", 1, "free_site", "alloc_site",
     NULL},
    {"underflow_by_1", case_underflow_by_1, "", "heap-buffer-underflow", 1, "free_site", "alloc_site", NULL},
    {"underflow_over_header", case_underflow_over_header, "", "heap-buffer-underflow", 1, "free_site", NULL, NULL},
    {"uaf_start", case_uaf_start, "", "use-after-free-write", 1, "flush_site", "alloc_site", "free_site"},
    {"uaf_middle", case_uaf_middle, "", "use-after-free-write", 1, "flush_site", "alloc_site", "free_site"},
    {"uaf_periodic_check", case_uaf_periodic_check, "check_interval=1", "use-after-free-write", 1, "alloc_site",
     "alloc_site", "free_site"},
    {"uaf_on_reuse", case_uaf_on_reuse, "quarantine_bytes=0", "use-after-free-write", 1, "alloc_site", NULL, NULL},
    {"double_free", case_double_free, "", "double-free", 1, "second_free_site", "alloc_site", "free_site"},
    {"interior_free", case_interior_free, "", "invalid-free", 1, "free_site", "alloc_site", NULL},
    {"stack_free", case_stack_free, "", "invalid-free", 1, "free_site", NULL, NULL},
    {"free_list_link", case_free_list_link, "quarantine_bytes=0:check_interval=1", "corrupted-free-list", 1,
     "alloc_site", NULL, NULL},
    {"realloc_overflow", case_realloc_overflow, "", "heap-buffer-overflow", 1, "realloc_site", "alloc_site", NULL},
    {"realloc_freed", case_realloc_freed, "", "double-free", 1, "realloc_site", "alloc_site", "free_site"},
    {"usable_size_freed", case_usable_size_freed, "", "double-free", 1, "usable_site", "alloc_site", "free_site"},
    {"large_overflow", case_large_overflow, "", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
    {"large_underflow", case_large_underflow, "", "heap-buffer-underflow", 1, "free_site", "alloc_site", NULL},
    {"large_uaf", case_large_uaf, "", "use-after-free-write", 1, "flush_site", "alloc_site", "free_site"},
    {"continue", case_continue, "on_error=continue", "heap-buffer-overflow", 0, "free_site", "alloc_site", NULL},
    {"no_backtraces", case_no_backtraces, "backtrace_depth=0", "heap-buffer-overflow", 1, "free_site", "", NULL},
    {"poison_off", case_poison_off, "poison=0", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
    {"fill_patterns", case_fill_patterns, "alloc_fill=0x11:free_fill=0x22", NULL, 0, NULL, NULL, NULL},
    {"report_path", case_report_path, "report_path=", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
    {"report_fd", case_report_fd, "report_path=/dev/fd/1", "heap-buffer-overflow", 1, "free_site", "alloc_site", NULL},
};
#define NCASES (sizeof cases / sizeof cases[0])

static const test_case *find_case(const char *name)
{
    for (size_t i = 0; i < NCASES; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

/* ---- parent side ---- */

static char report_file[512];

/* The location line names the block the child announced (its BLOCK line) and where the
 * address lies in it: "A is located N bytes after|before|inside the S-byte block [B, B+S)". A
 * report without a block prints no such line. */
static void check_location(const test_case *c, const parsed_report *p, const char *out, const char *text)
{
    void *block = NULL;
    size_t size = 0;
    const char *b = strstr(out, "BLOCK ");
    if (!b || sscanf(b, "BLOCK %p %zu", &block, &size) != 2) {
        CHECKF(!p->location.found, "%s: unexpected location line\n%s", c->name, text);
        return;
    }
    unsigned long lo = (unsigned long)(uintptr_t)block, hi = lo + size, a = p->address;
    const char *where = a < lo ? "before" : a >= hi ? "after" : "inside";
    unsigned long distance = a < lo ? lo - a : a >= hi ? a - hi : a - lo;
    const parsed_location *l = &p->location;
    CHECKF(l->found && l->address == a && strcmp(l->where, where) == 0 && l->distance == distance &&
               l->size == size && l->start == lo && l->end == hi,
           "%s: expected '0x%lx is located %lu bytes %s the %zu-byte block [0x%lx, 0x%lx)'\n%s", c->name, a, distance,
           where, size, lo, hi, text);
}

/* A frame in one of this program's functions names the program as its module (the child ran
 * as /proc/self/exe, which dladdr reports as the main program's name) at an offset consistent
 * with dladdr: the module offset is the call's (return address - 1), so module offset + 1 -
 * function offset is where the function lies in the binary, the same in this process as in
 * the child (a PIE: its load bias is its base). */
static void check_module(const test_case *c, const parsed_frame *f, const char *text)
{
    void *fn = dlsym(RTLD_DEFAULT, f->function);
    Dl_info info;
    CHECKF(fn && dladdr(fn, &info) && info.dli_fbase, "%s: frame function '%s' not found", c->name, f->function);
    if (!fn || !info.dli_fbase)
        return;
    unsigned long in_binary = (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_fbase);
    CHECKF(strcmp(f->module, "/proc/self/exe") == 0 && f->module_offset + 1 - f->function_offset == in_binary &&
               f->pc - f->module_offset != 0 && f->function_offset != 0,
           "%s: frame 0x%lx in %s+0x%lx (%s+0x%lx): expected (/proc/self/exe+0x%lx)\n%s", c->name, f->pc,
           f->function, f->function_offset, f->module, f->module_offset, in_binary + f->function_offset - 1, text);
}

static void check_case(const test_case *c)
{
    char options[1024];
    if (strcmp(c->name, "report_path") == 0) {
        const char *dir = getenv("TEST_TMPDIR");
        snprintf(report_file, sizeof report_file, "%s/rampart-report.txt", dir ? dir : "/tmp");
        unlink(report_file);
        snprintf(options, sizeof options, "report_path=%s", report_file);
    } else {
        snprintf(options, sizeof options, "%s", c->options);
    }
    static child_result r;
    REQUIRE(run_child(c->name, options, &r) == 0);
    const char *text = r.err;
    static char file_text[65536];
    if (strcmp(c->name, "report_path") == 0) {
        FILE *f = fopen(report_file, "r");
        CHECKF(f != NULL, "%s: report file %s missing", c->name, report_file);
        size_t n = f ? fread(file_text, 1, sizeof file_text - 1, f) : 0;
        file_text[n] = 0;
        if (f)
            fclose(f);
        CHECKF(strstr(r.err, "ERROR: rampart") == NULL, "%s: report went to stderr too", c->name);
        text = file_text;
    }
    if (strcmp(c->name, "report_fd") == 0) { /* report_path=/dev/fd/1: the report is on stdout */
        CHECKF(strstr(r.err, "ERROR: rampart") == NULL, "%s: report went to stderr", c->name);
        text = r.out;
    }
    if (c->aborts)
        CHECKF(!r.exited && r.signal == SIGABRT, "%s: expected abort, exited=%d code=%d signal=%d\n%s", c->name,
               r.exited, r.code, r.signal, r.err);
    else
        CHECKF(r.exited && r.code == 0, "%s: expected exit 0, exited=%d code=%d signal=%d\n%s", c->name, r.exited,
               r.code, r.signal, r.err);
    parsed_report p;
    parse_report(text, &p);
    if (!c->kind) {
        CHECKF(!p.found, "%s: unexpected report\n%s", c->name, text);
        return;
    }
    CHECKF(p.found && strcmp(p.kind, c->kind) == 0, "%s: kind '%s', expected '%s'\n%s", c->name, p.kind, c->kind,
           text);
    void *want_addr = NULL;
    long want_off = 0;
    const char *e = strstr(r.out, "EXPECT ");
    CHECKF(e && sscanf(e, "EXPECT %p %ld", &want_addr, &want_off) == 2, "%s: no EXPECT line", c->name);
    CHECKF(p.address == (unsigned long)want_addr, "%s: address 0x%lx, expected %p\n%s", c->name, p.address,
           want_addr, text);
    check_location(c, &p, r.out, text);
    if (c->alloc)
        CHECKF(p.has_offset && p.offset == want_off, "%s: offset %ld, expected %ld\n%s", c->name, p.offset, want_off,
               text);
    CHECKF(strcmp(p.detect[0], c->detect) == 0, "%s: detecting frame #0 '%s', expected '%s'\n%s", c->name,
           p.detect[0], c->detect, text);
    if (c->alloc && c->alloc[0]) {
        CHECKF(p.has_alloc && strcmp(p.alloc[0], c->alloc) == 0, "%s: allocation frame #0 '%s', expected '%s'\n%s",
               c->name, p.alloc[0], c->alloc, text);
        char caller[96];
        snprintf(caller, sizeof caller, "case_%s", c->name);
        CHECKF(strcmp(p.alloc[1], caller) == 0, "%s: allocation frame #1 '%s', expected '%s'", c->name, p.alloc[1],
               caller);
    } else if (c->alloc) {
        CHECKF(p.has_alloc && strstr(text, "Block allocated here:\n    <no stack recorded>"),
               "%s: expected an allocation section without a stack\n%s", c->name, text);
    } else {
        CHECKF(!p.has_alloc, "%s: unexpected allocation stack\n%s", c->name, text);
    }
    if (c->freed) {
        CHECKF(p.has_free && strcmp(p.freed[0], c->freed) == 0, "%s: free frame #0 '%s', expected '%s'\n%s", c->name,
               p.freed[0], c->freed, text);
        char caller[96];
        snprintf(caller, sizeof caller, "case_%s", c->name);
        CHECKF(strcmp(p.freed[1], caller) == 0, "%s: free frame #1 '%s', expected '%s'", c->name, p.freed[1],
               caller);
    } else {
        CHECKF(!p.has_free, "%s: unexpected free stack\n%s", c->name, text);
    }
    /* The detecting call's caller is the case itself. */
    char caller[96];
    snprintf(caller, sizeof caller, "case_%s", c->name);
    CHECKF(strcmp(p.detect[1], caller) == 0, "%s: detecting frame #1 '%s', expected '%s'", c->name, p.detect[1],
           caller);
    for (int k = 0; k < 2; k++) {
        check_module(c, &p.detect_frames[k], text);
        if (c->alloc && c->alloc[0])
            check_module(c, &p.alloc_frames[k], text);
        if (c->freed)
            check_module(c, &p.freed_frames[k], text);
    }
}

static void check_extras(void)
{
    static child_result r;
    /* The free-list case also printed rp_heap_check's verdict: invariant I4, naming the block. */
    REQUIRE(run_child("free_list_link", "quarantine_bytes=0:check_interval=1", &r) == 0);
    int bad = 0;
    char why[300] = "";
    const char *line = strstr(r.out, "CHECK ");
    CHECKF(line && sscanf(line, "CHECK %d %299[^\n]", &bad, why) == 2 && bad && strncmp(why, "I4:", 3) == 0,
           "rp_heap_check: %s", line ? line : r.out);
    void *want = NULL;
    long off;
    const char *e = strstr(r.out, "EXPECT ");
    if (e && sscanf(e, "EXPECT %p %ld", &want, &off) == 2) {
        char addr[32];
        snprintf(addr, sizeof addr, "%p", want);
        CHECKF(strstr(why, addr) != NULL, "rp_heap_check message does not name block %s: %s", addr, why);
    }
    REQUIRE(run_child("continue", "on_error=continue", &r) == 0);
    CHECKF(strstr(r.out, "continued 1") != NULL, "continue: %s", r.out);
    REQUIRE(run_child("fill_patterns", "alloc_fill=0x11:free_fill=0x22", &r) == 0);
    CHECKF(strstr(r.out, "FILL 1 1") != NULL, "fill patterns: %s", r.out);
    /* Without options: default patterns. */
    REQUIRE(run_child("fill_patterns", "alloc_fill=0xbe:free_fill=0x6b", &r) == 0);
    CHECKF(strstr(r.out, "FILL 0 0") != NULL, "fill patterns (other bytes): %s", r.out);
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        const test_case *c = find_case(argv[1]);
        if (!c)
            return 2;
        c->run();
        return 0;
    }
    for (size_t i = 0; i < NCASES; i++)
        check_case(&cases[i]);
    check_extras();
    TEST_MAIN_END();
}
