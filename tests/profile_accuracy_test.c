/* The release heap profiler (src/malloc/profile.h) end to end: this binary runs on the malloc
 * drop-in linked in, with RAMPART_OPTIONS=profile=1 (BUILD: a pinned rate and seed, and the
 * default rate with a random seed). Four sites allocate known totals through malloc and
 * realloc: many small blocks (slab blocks), medium ones (span blocks), a few large ones
 * (page-tier blocks past the page bins) and buffers grown by realloc (moved and resized by the
 * heap). The dumps' samples, read by rpdump sites --json, must estimate every site's live
 * blocks and bytes within the tolerance below; after frees of most small and medium blocks
 * and of every large one, the estimates follow (frees of sampled blocks are recognised on
 * every free path); frame 0 of each site's stack is the site's function (the cut after the
 * entry point); the totals' estimate of the freed bytes follows too.
 *
 * Tolerance: 10 % with a pinned seed (argument "strict"; the rate then makes a deviation of
 * 10 % about three standard deviations or more); with a random seed, 10 % or 4.5 standard
 * deviations of the site's estimate where that is more (few samples at the default rate), so
 * the test holds whatever the seed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dump_testing.h"
#include "json_lite.h"
#include "rampart_dump.h"
#include "rampart_malloc.h"
#include "testing.h"

enum { SMALL, MEDIUM, LARGE, GROWN, NSITES };
static const char *const names[NSITES] = {"small", "medium", "large", "grown"};
static const size_t sizes[NSITES] = {48, 2048, 512 << 10, 1 << 20};
static const size_t counts[NSITES] = {320000, 8000, 32, 16};

static void **blocks[NSITES];
static uint64_t live_blocks[NSITES], live_bytes[NSITES], freed_bytes;
static double freed_var; /* variance of the estimate of freed_bytes (see tolerance) */
static size_t rate;

/* A block of size bytes freed (or left by a realloc: to the sampler a free and an allocation). */
static void count_freed(size_t size)
{
    freed_bytes += size;
    double p = rate ? -expm1(-(double)size / (double)rate) : 1;
    freed_var += (1 - p) / p * (double)size * (double)size;
}

/* The sites: each writes its block, so the call to malloc is no tail call and its return
 * address lies inside the site. */
__attribute__((noinline)) static void *site_small(void)
{
    char *p = malloc(sizes[SMALL]);
    REQUIRE(p);
    p[0] = 1;
    return p;
}

__attribute__((noinline)) static void *site_medium(void)
{
    char *p = malloc(sizes[MEDIUM]);
    REQUIRE(p);
    p[0] = 1;
    return p;
}

__attribute__((noinline)) static void *site_large(void)
{
    char *p = malloc(sizes[LARGE]);
    REQUIRE(p);
    p[0] = 1;
    return p;
}

/* Grows a buffer from 4 KiB to 1 MiB, doubling: each step a realloc the heap serves (in place
 * or moving the block). */
__attribute__((noinline)) static void *site_grown(void)
{
    size_t size = 4096;
    char *p = malloc(size);
    REQUIRE(p);
    while (size < sizes[GROWN]) {
        count_freed(size);
        size *= 2;
        p = realloc(p, size);
        REQUIRE(p);
        p[size - 1] = 1;
    }
    return p;
}

static void *(*const site_fn[NSITES])(void) = {site_small, site_medium, site_large, site_grown};

/* The site whose function holds return address pc (the closest start below it), or -1. */
static int site_of_pc(uintptr_t pc)
{
    int best = -1;
    uintptr_t best_start = 0;
    for (int s = 0; s < NSITES; s++) {
        uintptr_t start = (uintptr_t)site_fn[s];
        if (start < pc && start >= best_start) {
            best = s;
            best_start = start;
        }
    }
    return best >= 0 && pc - best_start < 512 ? best : -1;
}

static int strict; /* argv[2] "strict": a pinned seed, 10 % whatever the variance */

/* The estimate of a site of N blocks of size bytes sampled with probability p each is a sum of
 * N independent terms worth 1/p with probability p: relative deviation sqrt((1 - p) / (N p)). */
static double tolerance(int site)
{
    if (strict || !rate || !live_blocks[site])
        return 0.10;
    double p = -expm1(-(double)sizes[site] / (double)rate);
    double t = 4.5 * sqrt((1 - p) / ((double)live_blocks[site] * p));
    return t > 0.10 ? t : 0.10;
}

static int within(double estimate, double truth, double tol) { return fabs(estimate - truth) <= tol * truth; }

static void check_dump(const char *when)
{
    const char *path = tmp_path("profile.rpd");
    char written[4096];
    REQUIRE(rp_dump_to_path(path, written, sizeof written) == 0);
    tool_run r;
    jv *v = rpdump_json(&r, "sites", "--json", "--limit", "0", "--symbolizer", "none", path, NULL);
    REQUIRE(v && r.status == 0);
    CHECK(!strcmp(jv_str(jv_get(v, "from")), "samples") && !strcmp(jv_str(jv_get(v, "bytes_are")), "estimated"));
    double est_blocks[NSITES] = {0}, est_bytes[NSITES] = {0};
    for (size_t i = 0; i < jv_len(jv_get(v, "sites")); i++) {
        const jv *s = jv_at(jv_get(v, "sites"), i);
        const jv *f0 = jv_at(jv_get(s, "frames"), 0);
        if (!f0)
            continue;
        int site = site_of_pc((uintptr_t)strtoull(jv_str(jv_get(f0, "pc")), NULL, 16));
        if (site < 0)
            continue; /* the test's own allocations (rpdump's output, ...) */
        est_blocks[site] += (double)jv_u64(jv_get(s, "blocks"));
        est_bytes[site] += (double)jv_u64(jv_get(s, "bytes"));
    }
    for (int s = 0; s < NSITES; s++) {
        double tol = tolerance(s);
        printf("%s: %-6s %7llu blocks, %10llu bytes; estimated %7.0f blocks, %10.0f bytes (tolerance %.0f %%)\n",
               when, names[s], (unsigned long long)live_blocks[s], (unsigned long long)live_bytes[s], est_blocks[s],
               est_bytes[s], tol * 100);
        if (!live_blocks[s]) {
            CHECKF(est_blocks[s] == 0, "%s: %s has no live block, estimated %.0f", when, names[s], est_blocks[s]);
            continue;
        }
        CHECKF(within(est_blocks[s], (double)live_blocks[s], tol) && within(est_bytes[s], (double)live_bytes[s], tol),
               "%s: %s estimated %.0f blocks / %.0f bytes, truth %llu / %llu", when, names[s], est_blocks[s],
               est_bytes[s], (unsigned long long)live_blocks[s], (unsigned long long)live_bytes[s]);
    }
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "check", path, NULL);
    CHECKF(r.status == 0, "check: %s", r.out);
    tool_run_free(&r);
}

static void allocate_all(void)
{
    for (int s = 0; s < NSITES; s++) {
        blocks[s] = calloc(counts[s], sizeof(void *));
        REQUIRE(blocks[s]);
    }
    /* Interleaved, as a program's allocations are. */
    for (size_t i = 0; i < counts[SMALL]; i++) {
        for (int s = 0; s < NSITES; s++) {
            if (i % (counts[SMALL] / counts[s]) || i / (counts[SMALL] / counts[s]) >= counts[s])
                continue;
            blocks[s][i / (counts[SMALL] / counts[s])] = site_fn[s]();
            live_blocks[s]++;
            live_bytes[s] += sizes[s];
        }
    }
}

/* Frees 3 of 4 small blocks, half the medium ones, every large one. */
static void free_most(void)
{
    for (size_t i = 0; i < counts[SMALL]; i++) {
        if (i % 4) {
            free(blocks[SMALL][i]);
            live_blocks[SMALL]--;
            live_bytes[SMALL] -= sizes[SMALL];
            count_freed(sizes[SMALL]);
        }
    }
    for (size_t i = 0; i < counts[MEDIUM]; i += 2) {
        free(blocks[MEDIUM][i]);
        live_blocks[MEDIUM]--;
        live_bytes[MEDIUM] -= sizes[MEDIUM];
        count_freed(sizes[MEDIUM]);
    }
    for (size_t i = 0; i < counts[LARGE]; i++) {
        free(blocks[LARGE][i]);
        count_freed(sizes[LARGE]);
    }
    live_blocks[LARGE] = live_bytes[LARGE] = 0;
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    strict = argc > 2 && !strcmp(argv[2], "strict");
    rp_malloc_totals_t t0, t1;
    REQUIRE(rp_malloc_totals(&t0, sizeof t0) == 0);
    REQUIRE(t0.profiling); /* BUILD sets profile=1 */
    rate = t0.profile_rate;

    allocate_all();
    check_dump("all allocated");
    free_most();
    check_dump("after the frees");

    /* The freed samples' estimate: the sites' frees and what realloc left behind (the test's own
     * frees add a little). */
    REQUIRE(rp_malloc_totals(&t1, sizeof t1) == 0);
    double freed = (double)(t1.freed_bytes_estimate - t0.freed_bytes_estimate);
    printf("freed %llu bytes; estimated %.0f\n", (unsigned long long)freed_bytes, freed);
    /* the same bound for the sum over the freed blocks (those realloc left included) */
    double tol = strict ? 0.10 : 4.5 * sqrt(freed_var) / (double)freed_bytes;
    CHECKF(within(freed, (double)freed_bytes, tol < 0.10 ? 0.10 : tol), "freed bytes estimated %.0f, truth %llu", freed,
           (unsigned long long)freed_bytes);
    CHECK(t1.samples_dropped == 0 && t1.samples_live <= t1.samples);

    for (int s = 0; s < NSITES; s++) {
        for (size_t i = 0; i < counts[s]; i++)
            if (!(s == SMALL && i % 4) && !(s == MEDIUM && i % 2 == 0) && s != LARGE)
                free(blocks[s][i]);
        free(blocks[s]);
    }
    TEST_MAIN_END();
}
