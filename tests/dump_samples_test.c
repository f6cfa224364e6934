/* Sampled heap profiles in dumps (format 1.3, rampart_dump.h's sample source), tested with a
 * synthetic sampler standing in for the malloc drop-in's: it samples this test's allocations
 * from a release heap by Poisson sampling of the allocated bytes (exponential intervals of
 * mean RATE, fixed seed), as the real one will, and hands its live samples and stacks to the
 * dump writer. Three sites allocate known totals: many small blocks, fewer medium ones, a
 * few large ones. From the samples alone, rpdump's sites, flame, pprof, diff and timeline
 * must estimate each site's blocks and bytes within 10 %; summary and check read the samples
 * section; the blocks stay countable with --from blocks; frees drop samples and the
 * estimates follow; a dump without a source has an empty section; a malformed samples
 * section is refused and a sample naming a missing stack is a check violation (P1). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"

#define RATE 4096
#define MAX_SAMPLES 8192

enum { SMALL = 1, MEDIUM = 2, LARGE = 3, NSITES = 4 };
static const struct {
    size_t size, count;
} plan[NSITES] = {{0, 0}, {48, 100000}, {2048, 4000}, {256 << 10, 16}};

typedef struct fake_sample {
    void *addr;
    size_t size;
    uint32_t stack;
    uint64_t alloc_ns;
    int live;
} fake_sample;

static fake_sample samples[MAX_SAMPLES];
static size_t nsamples;
static double until_next; /* bytes to the next sample point */
static test_rng rng = {0x5eed};
static uint64_t truth_blocks[NSITES], truth_bytes[NSITES];

static double exp_interval(void)
{
    double u = (double)(rng_next(&rng) >> 11) * 0x1p-53; /* [0, 1) */
    return -log1p(-u) * RATE;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* An allocation and the sampler's step: sampled when a sample point falls in its bytes. Returns
 * the sample's index + 1, or 0. */
static size_t sampled_alloc(rp_heap *h, int site, void **out)
{
    *out = rp_alloc(h, plan[site].size, 0);
    REQUIRE(*out);
    truth_blocks[site]++;
    truth_bytes[site] += plan[site].size;
    until_next -= (double)plan[site].size;
    if (until_next > 0)
        return 0;
    while (until_next <= 0)
        until_next += exp_interval();
    REQUIRE(nsamples < MAX_SAMPLES);
    samples[nsamples] = (fake_sample){*out, plan[site].size, (uint32_t)site, now_ns(), 1};
    return ++nsamples;
}

static void sampled_free(int site, void *p, size_t sample)
{
    if (sample)
        samples[sample - 1].live = 0;
    truth_blocks[site]--;
    truth_bytes[site] -= plan[site].size;
    rp_free(p);
}

/* ---- the sample source ------------------------------------------------------------------ */

__attribute__((noinline)) void site_small(void) { __asm__ volatile(""); }
__attribute__((noinline)) void site_medium(void) { __asm__ volatile(""); }
__attribute__((noinline)) void site_large(void) { __asm__ volatile(""); }

static void foreach_sample(void *ctx, rp_dump_sample_fn put, void *arg)
{
    (void)ctx;
    for (size_t i = 0; i < nsamples; i++) {
        if (!samples[i].live)
            continue;
        rp_dump_sample s = {samples[i].addr, samples[i].size, RATE, samples[i].alloc_ns, samples[i].stack, 0};
        if (put(arg, &s))
            return;
    }
}

static void foreach_stack(void *ctx, rp_dump_stack_fn put, void *arg)
{
    (void)ctx;
    void (*const fn[NSITES])(void) = {NULL, site_small, site_medium, site_large};
    for (uint32_t id = 1; id < NSITES; id++) {
        /* "return addresses" one byte into the site's function and into this one: the
         * symboliser looks up the byte before (the call), the function's first */
        uintptr_t frames[2] = {(uintptr_t)fn[id] + 1, (uintptr_t)foreach_stack + 1};
        if (put(arg, id, frames, 2))
            return;
    }
}

static const rp_dump_sample_source source = {foreach_sample, foreach_stack, NULL};

static void dump_to(rp_heap *h, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
}

/* ---- checks ------------------------------------------------------------------------------ */

static int within(double estimate, double truth, double tolerance)
{
    return fabs(estimate - truth) <= tolerance * truth;
}

static const jv *site_named(const jv *v, uint64_t stack)
{
    for (size_t i = 0; i < jv_len(jv_get(v, "sites")); i++)
        if (jv_get(jv_at(jv_get(v, "sites"), i), "stack")->type == JV_NUMBER &&
            jv_u64(jv_get(jv_at(jv_get(v, "sites"), i), "stack")) == stack)
            return jv_at(jv_get(v, "sites"), i);
    return NULL;
}

static size_t live_samples(int site)
{
    size_t n = 0;
    for (size_t i = 0; i < nsamples; i++)
        n += samples[i].live && (site == 0 || samples[i].stack == (uint32_t)site);
    return n;
}

/* sites --json from the samples: every site within 10 % of the truth. */
static void check_estimates(const char *path, const char *when)
{
    tool_run r;
    jv *v = rpdump_json(&r, "sites", "--json", "--limit", "0", path, NULL);
    REQUIRE(v);
    CHECK(r.status == 0 && !strcmp(jv_str(jv_get(v, "from")), "samples") &&
          !strcmp(jv_str(jv_get(v, "bytes_are")), "estimated"));
    CHECK(jv_u64(jv_get(v, "total_samples")) == live_samples(0));
    for (int site = SMALL; site < NSITES; site++) {
        const jv *s = site_named(v, (uint64_t)site);
        if (!truth_blocks[site]) {
            CHECKF(!s, "%s: site %d has no live block but an estimate", when, site);
            continue;
        }
        REQUIRE(s);
        double blocks = (double)jv_u64(jv_get(s, "blocks")), bytes = (double)jv_u64(jv_get(s, "bytes"));
        printf("%s: site %d: %llu blocks, %llu bytes; estimated %.0f blocks, %.0f bytes from %llu samples\n", when,
               site, (unsigned long long)truth_blocks[site], (unsigned long long)truth_bytes[site], blocks, bytes,
               (unsigned long long)jv_u64(jv_get(s, "samples")));
        CHECKF(within(blocks, (double)truth_blocks[site], 0.10) && within(bytes, (double)truth_bytes[site], 0.10),
               "%s: site %d estimated %.0f blocks / %.0f bytes, truth %llu / %llu", when, site, blocks, bytes,
               (unsigned long long)truth_blocks[site], (unsigned long long)truth_bytes[site]);
        CHECK(jv_u64(jv_get(s, "samples")) == live_samples(site));
    }
    jv_free(v);
    tool_run_free(&r);
}

static void check_other_commands(const char *path)
{
    uint64_t total = truth_bytes[SMALL] + truth_bytes[MEDIUM] + truth_bytes[LARGE];
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", path, NULL);
    REQUIRE(v);
    CHECK(jv_u64(jv_path(v, "samples.count")) == live_samples(0) && jv_u64(jv_path(v, "samples.min_rate")) == RATE &&
          jv_u64(jv_path(v, "samples.max_rate")) == RATE && jv_u64(jv_path(v, "samples.outside_heaps")) == 0);
    CHECK(within((double)jv_u64(jv_path(v, "samples.estimated_bytes")), (double)total, 0.10));
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "summary", path, NULL);
    CHECKF(strstr(r.out, "heap profile: ") && strstr(r.out, "sampled live blocks (sampling every 4.00 KiB on average)"),
           "%s", r.out);
    tool_run_free(&r);
    rpdump_run(&r, "check", path, NULL);
    CHECKF(r.status == 0, "check: %s", r.out);
    tool_run_free(&r);

    const char *svg = tmp_path("sampled_flame.svg"), *png = tmp_path("sampled_flame.png");
    v = rpdump_json(&r, "flame", "--json", "-o", svg, path, NULL);
    CHECK(v && r.status == 0 && within((double)jv_u64(jv_get(v, "total_bytes")), (double)total, 0.10) &&
          jv_u64(jv_get(v, "samples")) == live_samples(0));
    jv_free(v);
    tool_run_free(&r);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0);

    /* pprof: the estimates, read back by google-pprof; with the blocks, one stackless site */
    const char *profile = tmp_path("sampled.heap");
    rpdump_run(&r, "pprof", "--symbols", "-o", profile, path, NULL);
    CHECK(r.status == 0);
    tool_run_free(&r);
    const char *tool = find_program("google-pprof");
    REQUIRE(tool);
    char tool_path[4096];
    snprintf(tool_path, sizeof tool_path, "%s", tool);
    char *argv[] = {tool_path, "--text", "--inuse_objects", (char *)profile, NULL};
    REQUIRE(run_tool(argv, NULL, &r) == 0);
    long objects = -1;
    const char *line = strstr(r.out, "\nTotal: ");
    if (line)
        objects = strtol(line + 8, NULL, 10);
    else if (!strncmp(r.out, "Total: ", 7))
        objects = strtol(r.out + 7, NULL, 10);
    uint64_t blocks = truth_blocks[SMALL] + truth_blocks[MEDIUM] + truth_blocks[LARGE];
    CHECKF(r.status == 0 && within((double)objects, (double)blocks, 0.10), "google-pprof: %ld objects, truth %llu\n%s",
           objects, (unsigned long long)blocks, r.out);
    tool_run_free(&r);
    v = rpdump_json(&r, "sites", "--json", "--from", "blocks", path, NULL);
    CHECK(v && !strcmp(jv_str(jv_get(v, "from")), "blocks") && !strcmp(jv_str(jv_path(v, "sites.0.stack")), "none") &&
          jv_u64(jv_get(v, "total_blocks")) == blocks);
    jv_free(v);
    tool_run_free(&r);
}

/* The symbolised names of the sampler's stacks reach the output. */
static void check_names(const char *path)
{
    if (access("/usr/bin/llvm-symbolizer", X_OK) != 0 && access("/usr/bin/addr2line", X_OK) != 0) {
        printf("no symbolizer: names not checked\n");
        return;
    }
    tool_run r;
    rpdump_run(&r, "sites", "--folded", path, NULL);
    CHECKF(strstr(r.out, ";site_small ") && strstr(r.out, ";site_medium ") && strstr(r.out, ";site_large "),
           "folded:\n%s", r.out);
    tool_run_free(&r);
}

static void check_malformed(const char *path)
{
    size_t len;
    uint8_t *buf = read_file(path, &len);
    REQUIRE(buf);
    rpd_entry samples_sec = {0};
    size_t index = 0;
    for (size_t i = 0; i < dump_section_count(buf, len); i++) {
        rpd_entry e;
        rpd_entry_decode(buf + dump_entry_offset(buf, len, i), &e);
        if (e.type == RPD_SEC_SAMPLES)
            samples_sec = e, index = i;
    }
    REQUIRE(samples_sec.type == RPD_SEC_SAMPLES && samples_sec.count > 0 && samples_sec.heap == RPD_NO_HEAP &&
            samples_sec.record_bytes == RPD_SAMPLE_BYTES);
    const char *bad = tmp_path("bad_samples.rpd");
    tool_run r;
    /* the section's table entry: a heap index, records too short for a sample */
    uint8_t *entry = buf + dump_entry_offset(buf, len, index);
    rpd_put32(entry + 4, 0);
    REQUIRE(dump_reseal(buf, len) == 0 && write_file(bad, buf, len) == 0);
    rpdump_run(&r, "summary", bad, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "samples section has heap index 0"), "%d %s", r.status, r.err);
    tool_run_free(&r);
    rpd_put32(entry + 4, RPD_NO_HEAP);
    rpd_put32(entry + 32, 32);
    REQUIRE(dump_reseal(buf, len) == 0 && write_file(bad, buf, len) == 0);
    rpdump_run(&r, "summary", bad, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "samples section has 32-byte records, at least 40 expected"), "%d %s",
           r.status, r.err);
    tool_run_free(&r);
    rpd_put32(entry + 32, RPD_SAMPLE_BYTES);
    /* reserved flags (bit 0 says "a slab block") */
    rpd_put32(buf + samples_sec.offset + 36, 2);
    REQUIRE(dump_reseal(buf, len) == 0 && write_file(bad, buf, len) == 0);
    rpdump_run(&r, "sites", bad, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "reserved"), "%d %s", r.status, r.err);
    tool_run_free(&r);
    rpd_put32(buf + samples_sec.offset + 36, 0);
    /* a stack id the dump does not have: P1, and the site "unknown stack" */
    rpd_put32(buf + samples_sec.offset + 32, 99);
    REQUIRE(dump_reseal(buf, len) == 0 && write_file(bad, buf, len) == 0);
    rpdump_run(&r, "check", bad, NULL);
    CHECKF(r.status == 1 && strstr(r.out, "FP1:") && strstr(r.out, "stack 99"), "%d %s", r.status, r.out);
    tool_run_free(&r);
    jv *v = rpdump_json(&r, "sites", "--json", bad, NULL);
    int unknown = 0;
    for (size_t i = 0; v && i < jv_len(jv_get(v, "sites")); i++)
        unknown |= !strcmp(jv_str(jv_get(jv_at(jv_get(v, "sites"), i), "stack")), "unknown");
    CHECK(unknown);
    jv_free(v);
    tool_run_free(&r);
    free(buf);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    rp_heap_config cfg = {0};
    cfg.name = "profiled";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    until_next = exp_interval();
    static void *blocks[NSITES][100000];
    static size_t sample_of[NSITES][100000];
    for (size_t i = 0; i < plan[SMALL].count; i++) {
        sample_of[SMALL][i] = sampled_alloc(h, SMALL, &blocks[SMALL][i]);
        if (i < plan[MEDIUM].count)
            sample_of[MEDIUM][i] = sampled_alloc(h, MEDIUM, &blocks[MEDIUM][i]);
        if (i < plan[LARGE].count)
            sample_of[LARGE][i] = sampled_alloc(h, LARGE, &blocks[LARGE][i]);
    }
    rp_dump_set_sample_source(&source);
    const char *a = tmp_path("sampled_a.rpd");
    dump_to(h, a);
    check_estimates(a, "all allocated");
    check_other_commands(a);
    check_names(a);

    /* Three quarters of the small blocks and every large one freed: their samples go. */
    for (size_t i = 0; i < plan[SMALL].count; i++)
        if (i % 4)
            sampled_free(SMALL, blocks[SMALL][i], sample_of[SMALL][i]);
    for (size_t i = 0; i < plan[LARGE].count; i++)
        sampled_free(LARGE, blocks[LARGE][i], sample_of[LARGE][i]);
    const char *b = tmp_path("sampled_b.rpd");
    dump_to(h, b);
    check_estimates(b, "after the frees");

    tool_run r;
    jv *v = rpdump_json(&r, "diff", "--json", "--all", a, b, NULL);
    REQUIRE(v);
    const jv *large = site_named(v, LARGE), *small = site_named(v, SMALL);
    CHECK(large && within(-(double)strtoll(jv_get(large, "delta_bytes")->text, NULL, 10), 16.0 * (256 << 10), 0.10));
    CHECK(small && within(-(double)strtoll(jv_get(small, "delta_bytes")->text, NULL, 10), 75000.0 * 48, 0.10));
    CHECK(!site_named(v, MEDIUM)); /* unchanged: the same samples */
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "timeline", "--json", b, a, NULL);
    CHECK(v && jv_u64(jv_path(v, "peak.dump")) == 0 && !strcmp(jv_str(jv_get(v, "bytes_are")), "estimated") &&
          !strcmp(jv_str(jv_path(v, "dumps.0.file")), a));
    jv_free(v);
    tool_run_free(&r);

    check_malformed(a);

    /* No source: an empty samples section, and sites count the blocks. */
    rp_dump_set_sample_source(NULL);
    const char *c = tmp_path("unsampled.rpd");
    dump_to(h, c);
    v = rpdump_json(&r, "summary", "--json", c, NULL);
    CHECK(v && jv_path(v, "samples") && jv_u64(jv_path(v, "samples.count")) == 0 &&
          !strcmp(jv_str(jv_get(v, "version")), "1.4"));
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "sites", "--json", c, NULL);
    CHECK(v && !strcmp(jv_str(jv_get(v, "from")), "blocks") && !strcmp(jv_str(jv_get(v, "bytes_are")), "usable"));
    jv_free(v);
    tool_run_free(&r);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
