/* Guarded blocks (src/malloc/guard_pool.h) as a program meets them through a drop-in library
 * in LD_PRELOAD (guard_program_test.sh):
 *   guard_program faults   (RAMPART_OPTIONS=guard=all) each bug is reported once, at the access
 *       for reads and writes past the end and after the free, at the call for frees and
 *       checked copies; the report function returns, so the access goes on; faults-left the
 *       same with guard_left=1 (a read before the block faults instead); both then run a
 *       tenth of the clean workload;
 *   guard_program abort KIND   (guard=all, the default report function) the bug KIND ends the
 *       process with SIGABRT after its report (stderr checked by the script);
 *   guard_program clean    (guard=all, guard=sample:N) a threaded workload: no report.
 * Reports are counted through rp_set_report_fn, found with dlsym. Prints "guard ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload_check.h"
#include "src/rampart.h"


/* Written by the report function, which runs inside the fault handler of the access being
 * checked: volatile, so the checks read them after the access. */
static volatile int reports[RP_ERR_KIND_COUNT];
static volatile int total_reports;

static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    if (r->kind < RP_ERR_KIND_COUNT)
        reports[r->kind]++;
    total_reports++;
}

static void reset(void)
{
    for (int k = 0; k < RP_ERR_KIND_COUNT; k++)
        reports[k] = 0;
    total_reports = 0;
}

static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_memcpy)(void *, const void *, size_t) = memcpy;
static unsigned char source[8192];

/* Each bug reported once, of its kind; sizes that fill their 16-byte granule exactly fault on
 * the first byte past the end (left: placed at a page's start, the byte before it faults). */
static void faults(int left)
{
    const size_t sizes[] = {16, 64, 4096, 100000};
    for (unsigned i = 0; i < 4; i++) {
        size_t n = sizes[i];
        volatile unsigned char *p = do_malloc(n);
        CHECKF(p && malloc_usable_size((void *)p) == n, "%zu bytes: usable %zu", n, malloc_usable_size((void *)p));
        reset();
        unsigned char past = left ? p[-1] : p[n];
        (void)past;
        int kind = left ? RP_ERR_HEAP_BUFFER_UNDERFLOW : RP_ERR_HEAP_BUFFER_OVERFLOW;
        CHECKF(reports[kind] == 1 && total_reports == 1,
               "%zu bytes: a read one byte %s: %d reports of the kind, %d in all", n, left ? "before" : "past the end",
               reports[kind], total_reports);
        reset();
        if (n <= sizeof source) {
            do_memcpy((void *)p, source, n + 1);
            CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1 && total_reports == 1,
                   "%zu bytes: memcpy of one byte more: %d reports", n, total_reports);
        }
        reset();
        do_free((void *)p);
        CHECKF(total_reports == 0, "%zu bytes: the free reported %d", n, total_reports);
        unsigned char after = p[0];
        (void)after;
        CHECKF(reports[RP_ERR_USE_AFTER_FREE] == 1 && total_reports == 1,
               "%zu bytes: a read after free: %d use-after-free reports, %d in all", n, reports[RP_ERR_USE_AFTER_FREE],
               total_reports);
        reset();
        do_free((void *)p);
        CHECKF(reports[RP_ERR_DOUBLE_FREE] == 1 && total_reports == 1, "%zu bytes: a double free: %d reports", n,
               total_reports);
    }
    /* a block that does not fill its granule: the slack after it is checked at the free */
    unsigned char *q = do_malloc(10);
    reset();
    q[12] = 1;
    do_free(q);
    CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1 && total_reports == 1, "10 bytes, byte 12 written: %d reports",
           total_reports);
    q[12] = 0xbe; /* the slack pattern back: the free goes through */
    reset();
    do_free(q);
    CHECKF(total_reports == 0, "10 bytes, the free after the undo: %d reports", total_reports);
    /* realloc moves the block and keeps its bytes */
    unsigned char *r = do_malloc(32);
    memset(r, 7, 32);
    unsigned char *s = realloc(r, 5000);
    CHECKF(s && s[0] == 7 && s[31] == 7, "realloc lost the bytes");
    do_free(s);
}

static void abort_with(const char *kind)
{
    volatile unsigned char *p = do_malloc(32);
    if (strcmp(kind, "overflow-read") == 0) {
        printf("%d\n", p[32]);
    } else if (strcmp(kind, "use-after-free-write") == 0) {
        do_free((void *)p);
        p[5] = 1;
    } else if (strcmp(kind, "double-free") == 0) {
        do_free((void *)p);
        do_free((void *)p);
    }
    puts("not caught");
}

#define SLOTS 128
static void *_Atomic shared[SLOTS];
/* Allocations per worker thread: the whole workload in mode clean; after the fault cases a
 * tenth (every block of it guarded: a mapping and two protection changes each). */
static int worker_ops = 20000;

static void *worker(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < worker_ops; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = 1 + (x >> 20) % ((x >> 8) % 9 == 0 ? 70000 : 600);
        unsigned char *p = do_malloc(n);
        if (!p)
            continue;
        memset(p, (int)(x & 0xff), n);
        do_memcpy(p, source, n < sizeof source ? n : sizeof source);
        if ((x >> 50) % 7 == 0)
            p = realloc(p, n + (x >> 52) % 300 + 1);
        void *old = atomic_exchange(&shared[(x >> 32) % SLOTS], p);
        do_free(old);
    }
    return NULL;
}

static void clean(void)
{
    run_threads(worker, 4);
    for (int i = 0; i < SLOTS; i++)
        do_free(atomic_exchange(&shared[i], NULL));
    CHECKF(total_reports == 0, "the clean workload: %d reports", total_reports);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    if (strcmp(mode, "abort") == 0) {
        abort_with(argc > 2 ? argv[2] : "");
        return 0;
    }
    if (set_report_function(count_report) != 0)
        return 2;
    if (strncmp(mode, "faults", 6) == 0) {
        faults(strcmp(mode, "faults-left") == 0);
        worker_ops = 2000;
    }
    reset();
    clean();
    if (failures)
        return 1;
    puts("guard ok");
    return 0;
}
