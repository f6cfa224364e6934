/* The hardened profile as a program meets it through librampart_malloc.so (hardened_test.sh):
 *   hardened_program misuse   (RAMPART_OPTIONS=hardened=1) every block keeps its request
 *       (malloc_usable_size says it), an overflow of 1 or 32 bytes past it is reported at the
 *       free, a memcpy/memset past a block or into a freed one is reported at the call and writes
 *       nothing, an underflow into the block below is reported at the free, free_sized checks
 *       the request; each report abandons the operation (the free, the copy);
 *   hardened_program clean    (any options) a workload of every size and alignment, copies and
 *       fills within bounds, reallocs, cross-thread frees: no report.
 * Reports are counted through rp_set_report_fn, found with dlsym (the program is built against
 * the C library's malloc, as any program). Prints "hardened ok". */
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


static int reports[RP_ERR_KIND_COUNT];
static int total_reports;
static const void *last_address;
static char last_message[256];

static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    if (r->kind < RP_ERR_KIND_COUNT)
        reports[r->kind]++;
    total_reports++;
    last_address = r->address;
    snprintf(last_message, sizeof last_message, "%s", r->message);
}

static void reset(void)
{
    memset(reports, 0, sizeof reports);
    total_reports = 0;
    last_address = NULL;
    last_message[0] = 0;
}

/* Through pointers, so the compiler neither removes nor inlines the calls. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile do_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile do_memset)(void *, int, size_t) = memset;
static void (*free_sized_fn)(void *, size_t);
static size_t (*rp_usable_size_fn)(const void *);

static const size_t sizes[] = {8, 100, 1000, 2000, 4096, 40000, 256 << 10, 40 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static unsigned char source[(256 << 10) + 64];

/* One byte, then 32 bytes past the request: reported at the free, which is abandoned (the
 * block stays: undone, it frees cleanly). */
static void misuse_overflow(void)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        size_t n = sizes[i];
        for (size_t past = 0; past < 32; past += 31) {
            unsigned char *p = do_malloc(n);
            CHECKF(p && malloc_usable_size(p) == n, "%zu bytes: usable %zu, not the request", n, malloc_usable_size(p));
            reset();
            p[n + past] ^= 0x41;
            do_free(p);
            CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1 && total_reports == 1,
                   "%zu bytes, byte %zu past the request written: %d overflow reports, %d in all (%s)", n, past,
                   reports[RP_ERR_HEAP_BUFFER_OVERFLOW], total_reports, last_message);
            p[n + past] ^= 0x41;
            reset();
            do_free(p);
            CHECKF(total_reports == 0, "%zu bytes: the free after the undo reported: %s", n, last_message);
        }
    }
}

/* A copy or a fill past the request, or into a freed block: reported at the call, nothing
 * written. */
static void misuse_writes(void)
{
    for (unsigned i = 0; i < NSIZES - 1; i++) {
        size_t n = sizes[i];
        unsigned char *p = do_malloc(n);
        reset();
        do_memcpy(p, source, n + 1);
        CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1, "memcpy of %zu + 1 bytes into %zu: %d overflow reports", n, n,
               reports[RP_ERR_HEAP_BUFFER_OVERFLOW]);
        reset();
        do_memset(p + 1, 0, n);
        CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1, "memset of %zu bytes at +1: %d reports", n,
               reports[RP_ERR_HEAP_BUFFER_OVERFLOW]);
        reset();
        do_memmove(p, source, n + 32);
        CHECKF(reports[RP_ERR_HEAP_BUFFER_OVERFLOW] == 1, "memmove of %zu + 32 bytes: %d reports", n,
               reports[RP_ERR_HEAP_BUFFER_OVERFLOW]);
        reset();
        do_memcpy(p - 1, source, n);
        CHECKF(total_reports == 1, "memcpy of %zu bytes one byte below the block: %d reports", n, total_reports);
        reset();
        do_memcpy(p, source, n); /* within bounds */
        do_memset(p, 7, n);
        do_memmove(p + 1, p, n - 1);
        do_free(p); /* the refused writes wrote nothing: the seal holds */
        CHECKF(total_reports == 0, "%zu bytes: writes within the request, then free: %s", n, last_message);
        reset();
        do_memset(p, 'A', n);
        CHECKF(reports[RP_ERR_USE_AFTER_FREE_WRITE] == 1, "memset of a freed %zu-byte block: %d reports (%s)", n,
               reports[RP_ERR_USE_AFTER_FREE_WRITE], last_message);
    }
}

/* An underflow from a span block into the one below it: reported at the free. */
static void misuse_underflow(void)
{
    int seen = 0;
    void *keep[64];
    unsigned kept = 0;
    for (int tries = 0; tries < 64 && !seen; tries++) {
        unsigned char *a = do_malloc(3000), *b = do_malloc(3000);
        keep[kept++] = a;
        if (rp_usable_size_fn && (unsigned char *)b - 16 == a + rp_usable_size_fn(a)) {
            seen = 1;
            reset();
            b[-32] ^= 0x41;
            do_free(b);
            CHECKF(total_reports == 1 && reports[RP_ERR_HEAP_BUFFER_UNDERFLOW] == 1,
                   "32 bytes below a span block: %d underflow reports, %d in all (%s)",
                   reports[RP_ERR_HEAP_BUFFER_UNDERFLOW], total_reports, last_message);
            b[-32] ^= 0x41;
            reset();
        }
        do_free(b);
    }
    CHECKF(seen, "no two adjacent 3000-byte span blocks in 64 tries");
    while (kept)
        do_free(keep[--kept]);
    CHECKF(total_reports == 0, "frees after the underflow case: %s", last_message);
}

/* free_sized with the request frees; with more than it, an invalid free that leaves the block. */
static void misuse_sized(void)
{
    if (!free_sized_fn) {
        CHECKF(0, "free_sized not found");
        return;
    }
    for (unsigned i = 0; i < NSIZES; i++) {
        void *p = do_malloc(sizes[i]);
        reset();
        free_sized_fn(p, sizes[i] + 1);
        CHECKF(reports[RP_ERR_INVALID_FREE] == 1, "free_sized(%zu + 1): %d reports", sizes[i],
               reports[RP_ERR_INVALID_FREE]);
        reset();
        free_sized_fn(p, sizes[i]);
        CHECKF(total_reports == 0, "free_sized(%zu): %s", sizes[i], last_message);
    }
}

/* realloc moves, keeps the bytes, and the new block keeps the new request; calloc zeroes. */
static void clean_realloc_calloc(int hardened)
{
    unsigned char *p = do_malloc(100);
    for (int i = 0; i < 100; i++)
        p[i] = (unsigned char)i;
    uintptr_t old = (uintptr_t)p;
    unsigned char *q = realloc(p, 5000);
    CHECKF(q && (!hardened || (uintptr_t)q != old), "realloc(100 -> 5000) kept the block in the hardened profile");
    for (int i = 0; i < 100; i++)
        CHECKF(q[i] == (unsigned char)i, "realloc lost byte %d", i);
    unsigned char *r = realloc(q, 50);
    for (int i = 0; i < 50; i++)
        CHECKF(r[i] == (unsigned char)i, "realloc to 50 lost byte %d", i);
    if (hardened)
        CHECKF(malloc_usable_size(r) == 50, "realloc to 50: usable %zu", malloc_usable_size(r));
    do_free(r);
    size_t csizes[] = {1, 64, 3000, 300000};
    for (unsigned i = 0; i < 4; i++) {
        unsigned char *c = calloc(1, csizes[i]);
        size_t nz = 0;
        for (size_t k = 0; k < csizes[i]; k++)
            nz += c[k] != 0;
        CHECKF(nz == 0, "calloc(%zu): %zu bytes not zero", csizes[i], nz);
        do_free(c);
    }
    void *a = NULL;
    CHECKF(posix_memalign(&a, 64, 100) == 0 && ((uintptr_t)a & 63) == 0, "posix_memalign");
    if (hardened)
        CHECKF(malloc_usable_size(a) == 100, "posix_memalign(64, 100): usable %zu", malloc_usable_size(a));
    do_free(a);
    void *b = aligned_alloc(4096, 5000);
    CHECKF(b && ((uintptr_t)b & 4095) == 0, "aligned_alloc");
    do_free(b);
}

/* Threads allocate every size and alignment, copy and fill within bounds, and free each
 * other's blocks through a shared table. */
#define SLOTS 256
static void *_Atomic shared[SLOTS];

static void *worker(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < 60000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (x >> 8) % 9 == 0 ? (x >> 20) % 70000 : (x >> 20) % 600;
        unsigned char *p;
        if ((x >> 40) % 5 == 0) {
            void *q = NULL;
            if (posix_memalign(&q, (size_t)16 << ((x >> 44) % 9), n) != 0)
                continue;
            p = q;
        } else {
            p = do_malloc(n);
        }
        if (!p)
            continue;
        if (n) {
            do_memset(p, (int)(x & 0xff), n);
            do_memcpy(p, source, n < sizeof source ? n : sizeof source);
            if (n > 2)
                do_memmove(p + 1, p, n - 2);
        }
        if ((x >> 50) % 7 == 0)
            p = realloc(p, n + (x >> 52) % 300 + 1);
        void *old = atomic_exchange(&shared[(x >> 32) % SLOTS], p);
        do_free(old);
    }
    return NULL;
}

static void clean_threads(void)
{
    run_threads(worker, 4);
    for (int i = 0; i < SLOTS; i++)
        do_free(atomic_exchange(&shared[i], NULL));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    free_sized_fn = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    rp_usable_size_fn = (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "rp_usable_size");
    if (set_report_function(count_report) != 0)
        return 2;
    for (size_t i = 0; i < sizeof source; i++)
        source[i] = (unsigned char)(i * 7);
    int hardened = strcmp(mode, "misuse") == 0;
    if (hardened) {
        misuse_overflow();
        misuse_writes();
        misuse_underflow();
        misuse_sized();
    }
    reset();
    clean_realloc_calloc(hardened);
    clean_threads();
    CHECKF(total_reports == 0, "the clean workload: %d reports (last: %s)", total_reports, last_message);
    if (failures)
        return 1;
    puts("hardened ok");
    return 0;
}
