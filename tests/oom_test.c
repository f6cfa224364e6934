/* Out of memory, everywhere: a scenario that grows the heap several times, uses both tiers,
 * reallocates across them and gives memory back is first run to count its OS calls (K); then
 * for every N in 1..K+2 it runs again with the N-th OS call failing. Every failed operation
 * must return NULL with ENOMEM, rp_heap_check must pass after every operation, the heap must
 * be usable once the OS recovers, and after destroy no mapping may be left behind. */
#include <errno.h>
#include <stdint.h>

#include "rampart.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "testing.h"

#define MAXP 512

static int failures_seen;

static void *checked(rp_heap *h, void *p, const char *what)
{
    if (!p) {
        CHECKF(errno == ENOMEM, "%s failed with errno %d", what, errno);
        failures_seen++;
    }
    char why[256];
    CHECKF(rp_heap_check(h, why, sizeof why) == 0, "after %s: %s", what, why);
    return p;
}

static void scenario(rp_heap *h)
{
    static void *p[MAXP];
    int n = 0;
    for (int i = 0; i < 120; i++) {
        errno = 0;
        p[n++] = checked(h, rp_alloc(h, (size_t)(16 + 37 * i), (size_t)(i % 4 ? 0 : 64)), "small alloc");
    }
    for (int i = 0; i < 40; i++) {
        errno = 0;
        p[n++] = checked(h, rp_alloc(h, 4096, 4096), "page alloc");
    }
    for (int i = 0; i < 12; i++) {
        errno = 0;
        p[n++] = checked(h, rp_alloc(h, (size_t)(100000 + 150000 * i), 0), "large alloc");
    }
    errno = 0;
    p[n++] = checked(h, rp_alloc(h, (size_t)40 << 20, (size_t)1 << 20), "huge aligned alloc");
    for (int i = 0; i < 20; i++) {
        errno = 0;
        p[n++] = checked(h, rp_calloc(h, 16, 4096, 65536), "calloc");
    }
    for (int i = 0; i < n; i += 2) {
        rp_free(p[i]);
        p[i] = NULL;
        checked(h, (void *)1, "free");
    }
    for (int i = 1; i < n; i += 4) {
        if (!p[i])
            continue;
        errno = 0;
        void *q = rp_realloc(h, p[i], (size_t)(300000 + 1000 * i));
        if (checked(h, q, "realloc grow"))
            p[i] = q;
    }
    for (int i = 0; i < n; i++) {
        rp_free(p[i]);
        checked(h, (void *)1, "free");
    }
    rp_heap_trim(h, 0);
    checked(h, (void *)1, "trim");
}

/* Bytes mapped by rampart, not counting address-map tables (kept for reuse by design). */
static size_t mapped(void) { return rp_os_mapped_bytes() - rp_pagemap_bytes(); }

int main(void)
{
    rp_heap_config cfg = {0};
    cfg.retain_bytes = 1 << 20; /* so frees give memory back to the OS, and those calls fail too */
    cfg.region_bytes = 1 << 20;
    size_t base = mapped();
    uint64_t c0 = rp_os_calls();
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    scenario(h);
    rp_heap_destroy(h);
    uint64_t k = rp_os_calls() - c0;
    CHECK(failures_seen == 0);
    CHECK(mapped() == base);
    printf("scenario makes %llu OS calls\n", (unsigned long long)k);
    REQUIRE(k > 20);

    int heap_create_failed = 0, runs_with_failures = 0;
    for (uint64_t nth = 1; nth <= k + 2; nth++) {
        failures_seen = 0;
        rp_os_fail_at(nth);
        errno = 0;
        h = rp_heap_create(&cfg);
        if (!h) {
            CHECK(errno == ENOMEM);
            heap_create_failed++;
            rp_os_fail_at(0);
            continue;
        }
        scenario(h);
        rp_os_fail_at(0);
        runs_with_failures += failures_seen > 0;
        /* Usable again once the OS recovers: both tiers, alignment, growth. */
        void *a = rp_alloc(h, 100, 0), *b = rp_alloc(h, 4096, 4096), *c = rp_alloc(h, 3 << 20, 0);
        CHECKF(a && b && c, "heap unusable after the failure at call %llu", (unsigned long long)nth);
        rp_free(a);
        rp_free(b);
        rp_free(c);
        CHECK_HEAP(h);
        rp_heap_stats_t st;
        rp_heap_stats(h, &st);
        CHECK(st.blocks_in_use == 0);
        rp_heap_destroy(h);
        CHECKF(mapped() == base, "failure at call %llu: %lld bytes still mapped after destroy",
               (unsigned long long)nth, (long long)(mapped() - base));
        if (test_failures)
            break;
    }
    printf("%llu runs: heap creation failed in %d, operations failed in %d\n", (unsigned long long)(k + 2),
           heap_create_failed, runs_with_failures);
    CHECK(heap_create_failed == 1);
    /* Most OS calls are madvise/trims whose failure is absorbed by design; every region growth
     * the scenario needs is an operation that fails. The 40 MiB block (a mapping of its own in
     * the release flavour, src/mapped_block.h) falls back to a shared region when one of its
     * mappings fails, so it fails only with that region's growth. */
    CHECK(runs_with_failures >= 3);
    TEST_MAIN_END();
}
