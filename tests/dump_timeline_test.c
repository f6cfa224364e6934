/* rpdump timeline: a series of synthetic dumps of one program that grows then shrinks, given
 * out of order (as a shell sorts app.10.rpd before app.2.rpd). The timeline must order them by
 * the times they record (seconds, then nanoseconds), find the peak, rank the site that grew
 * with its bytes in every dump, draw a chart that rsvg-convert renders at the announced size,
 * fall back to dump numbers when the dumps share one time (1.1 dumps have no nanoseconds),
 * and warn when the dumps come from different programs. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "testing.h"

#define B 0x555500000000ull
#define STEPS 5

static const synth_stack stacks[] = {
    {7, 2, {B + 0x1100, B + 0x2000}}, /* grows: n x 1000 */
    {9, 2, {B + 0x1200, B + 0x2000}}, /* steady: 3 x 200 */
    {11, 1, {B + 0x1300}},            /* only at the start: 2 x 300 */
};

/* Dump `step` of the series: growth[step] blocks of the growing site. */
static const int growth[STEPS] = {1, 3, 6, 4, 0};

static void write_step(const char *path, int step, int version_1_1, uint64_t time, uint32_t ns, const char *exe)
{
    synth_block blocks[32];
    size_t n = 0;
    for (int i = 0; i < growth[step]; i++)
        blocks[n++] = (synth_block){1000, RPD_STATE_USED, 7};
    for (int i = 0; i < 3; i++)
        blocks[n++] = (synth_block){200, RPD_STATE_USED, 9};
    for (int i = 0; step == 0 && i < 2; i++)
        blocks[n++] = (synth_block){300, RPD_STATE_USED, 11};
    synth_mapping map = {B + 0x1000, B + 0x9000, B, "/nonexistent/libapp.so", "\x05\x06", 2};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 4242, .region_base = 0x10000000, .blocks = blocks,
                    .nblocks = n, .stacks = stacks, .nstacks = 3, .maps = &map, .nmaps = 1, .exe = exe,
                    .time = time, .time_ns = ns, .sequence = (uint64_t)step, .version_1_1 = version_1_1};
    REQUIRE(synth_write(&s, path) == 0);
}

/* The series: steps 0..4 at 100.0, 100.25, 100.5, 101.0, 101.75 s; written under names whose
 * order differs from the steps'. */
static const char *series_path(int step)
{
    static char paths[STEPS][4096];
    char name[64];
    snprintf(name, sizeof name, "app.%d.rpd", (STEPS - 1 - step) * 7 % 5);
    snprintf(paths[step], sizeof paths[step], "%s", tmp_path(name));
    return paths[step];
}

static void write_series(void)
{
    static const uint32_t ns[STEPS] = {0, 250000000, 500000000, 0, 750000000};
    static const uint64_t s[STEPS] = {100, 100, 100, 101, 101};
    for (int i = 0; i < STEPS; i++)
        write_step(series_path(i), i, 0, s[i], ns[i], NULL);
}

static void test_series(void)
{
    write_series();
    char svg[4096], png[4096]; /* tmp_path's buffers rotate: series_path uses them too */
    snprintf(svg, sizeof svg, "%s", tmp_path("timeline.svg"));
    snprintf(png, sizeof png, "%s", tmp_path("timeline.png"));
    tool_run r;
    /* arguments in the reverse of the steps' order */
    jv *v = rpdump_json(&r, "timeline", "--json", "--symbolizer", "none", "-o", svg, series_path(4), series_path(3),
                        series_path(2), series_path(1), series_path(0), NULL);
    REQUIRE(v);
    CHECK(r.status == 0 && r.err[0] == 0);
    CHECK(jv_get(v, "by_time")->boolean && jv_get(v, "same_program")->boolean &&
          jv_len(jv_get(v, "warnings")) == 0);
    const jv *dumps = jv_get(v, "dumps");
    REQUIRE(jv_len(dumps) == STEPS);
    static const double elapsed[STEPS] = {0, 0.25, 0.5, 1.0, 1.75};
    for (int i = 0; i < STEPS; i++) {
        const jv *d = jv_at(dumps, (size_t)i);
        uint64_t bytes = (uint64_t)growth[i] * 1000 + 600 + (i == 0 ? 600 : 0);
        CHECKF(!strcmp(jv_str(jv_get(d, "file")), series_path(i)), "dump %d is %s", i, jv_str(jv_get(d, "file")));
        CHECKF(jv_num(jv_get(d, "elapsed")) > elapsed[i] - 1e-6 && jv_num(jv_get(d, "elapsed")) < elapsed[i] + 1e-6,
               "dump %d at %f s", i, jv_num(jv_get(d, "elapsed")));
        CHECKF(jv_u64(jv_get(d, "live_bytes")) == bytes, "dump %d: %llu bytes, expected %llu", i,
               (unsigned long long)jv_u64(jv_get(d, "live_bytes")), (unsigned long long)bytes);
        CHECK(jv_u64(jv_get(d, "sequence")) == (uint64_t)i);
    }
    CHECK(jv_u64(jv_path(v, "peak.dump")) == 2 && jv_u64(jv_path(v, "peak.live_bytes")) == 6600);
    CHECK(jv_u64(jv_get(v, "first_bytes")) == 1600 + 600 && jv_u64(jv_get(v, "last_bytes")) == 600);
    /* sites: the growing one first (+5000 to the peak), then the steady one (0), then the
     * one gone by the peak (-600) */
    const jv *sites = jv_get(v, "sites");
    CHECKF(jv_len(sites) == 3, "%s", r.out);
    const jv *s0 = jv_at(sites, 0);
    CHECK(jv_u64(jv_get(s0, "stack")) == 7 && !strcmp(jv_get(s0, "growth_bytes")->text, "5000") &&
          jv_u64(jv_get(s0, "peak_bytes")) == 6000);
    for (int i = 0; i < STEPS; i++)
        CHECK(jv_u64(jv_at(jv_get(s0, "bytes"), (size_t)i)) == (uint64_t)growth[i] * 1000 &&
              jv_u64(jv_at(jv_get(s0, "blocks"), (size_t)i)) == (uint64_t)growth[i]);
    CHECK(!strcmp(jv_str(jv_get(s0, "label")), "libapp.so+0x1100 < libapp.so+0x2000"));
    CHECK(!strcmp(jv_str(jv_get(jv_at(jv_get(s0, "frames"), 0), "offset")), "0x1100"));
    CHECK(jv_u64(jv_get(jv_at(sites, 1), "stack")) == 9 && !strcmp(jv_get(jv_at(sites, 1), "growth_bytes")->text, "0"));
    CHECK(jv_u64(jv_get(jv_at(sites, 2), "stack")) == 11 &&
          !strcmp(jv_get(jv_at(sites, 2), "growth_bytes")->text, "-600"));
    unsigned width = (unsigned)jv_u64(jv_get(v, "width")), height = (unsigned)jv_u64(jv_get(v, "height"));
    CHECK(width == 900 && !strcmp(jv_str(jv_get(v, "output")), svg));
    jv_free(v);
    tool_run_free(&r);

    unsigned w, h;
    size_t png_bytes;
    REQUIRE(svg_render(svg, png, &w, &h, &png_bytes) == 0);
    CHECKF(w == width && h == height && png_bytes > 10000, "rendered %ux%u, %zu bytes (expected %ux%u)", w, h,
           png_bytes, width, height);
    size_t len;
    char *text = (char *)read_file(svg, &len);
    REQUIRE(text);
    text[len - 1] = 0;
    CHECK(strstr(text, "peak 6.45 KiB") && strstr(text, "+4.88 KiB to the peak: libapp.so+0x1100 &lt; libapp.so+0x2000"));
    free(text);

    /* text: the table in time order with the peak starred, the growing site with its series */
    rpdump_run(&r, "timeline", "--limit", "1", "--symbolizer", "none", series_path(3), series_path(0), series_path(4),
               series_path(1), series_path(2), NULL);
    CHECKF(r.status == 0 && strstr(r.out, "timeline of 5 dumps") && strstr(r.out, "   2*      0.500     6.45 KiB") &&
               strstr(r.out, "peak: 6.45 KiB live in 9 blocks at dump 2 (0.500 s)") &&
               strstr(r.out, "1 site grew most") &&
               strstr(r.out, "bytes by dump: 1000 B 2.93 KiB 5.86 KiB 3.91 KiB 0 B") &&
               strstr(r.out, "+4.88 KiB to the peak (1000 B -> 5.86 KiB, 0 B at the end)"),
           "timeline text:\n%s%s", r.out, r.err);
    tool_run_free(&r);
}

/* One dump: a table of one row and a chart that still renders. */
static void test_single(void)
{
    char svg[4096], png[4096];
    snprintf(svg, sizeof svg, "%s", tmp_path("one.svg"));
    snprintf(png, sizeof png, "%s", tmp_path("one.png"));
    tool_run r;
    jv *v = rpdump_json(&r, "timeline", "--json", "-o", svg, series_path(2), NULL);
    CHECK(v && r.status == 0 && jv_len(jv_get(v, "dumps")) == 1 && !jv_get(v, "by_time")->boolean &&
          jv_u64(jv_path(v, "peak.dump")) == 0);
    jv_free(v);
    tool_run_free(&r);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0 && w == 900);
}

/* 1.1 dumps written in one second: no time to order by beyond the sequence, so the x axis
 * counts dumps. */
static void test_same_second(void)
{
    const char *paths[3] = {tmp_path("old.0.rpd"), tmp_path("old.1.rpd"), tmp_path("old.2.rpd")};
    for (int i = 0; i < 3; i++)
        write_step(paths[i], i, 1, 200, 0, NULL);
    const char *svg = tmp_path("old.svg"), *png = tmp_path("old.png");
    tool_run r;
    jv *v = rpdump_json(&r, "timeline", "--json", "-o", svg, paths[2], paths[0], paths[1], NULL);
    REQUIRE(v);
    CHECK(r.status == 0 && !jv_get(v, "by_time")->boolean);
    for (int i = 0; i < 3; i++)
        CHECK(!strcmp(jv_str(jv_get(jv_at(jv_get(v, "dumps"), (size_t)i), "file")), paths[i]) &&
              jv_get(jv_at(jv_get(v, "dumps"), (size_t)i), "time_ns")->type == JV_NULL);
    CHECK(jv_u64(jv_path(v, "peak.dump")) == 2);
    jv_free(v);
    tool_run_free(&r);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0);
    size_t len;
    char *text = (char *)read_file(svg, &len);
    CHECK(text && strstr(text, "dump (the dumps record no distinct times)"));
    free(text);
}

static void test_other_program(void)
{
    const char *other = tmp_path("other.rpd");
    write_step(other, 1, 0, 102, 0, "/usr/bin/another");
    tool_run r;
    jv *v = rpdump_json(&r, "timeline", "--json", series_path(0), other, NULL);
    CHECK(v && r.status == 0 && !jv_get(v, "same_program")->boolean && jv_len(jv_get(v, "warnings")) == 1 &&
          strstr(r.err, "rpdump: warning: the dumps come from different programs"));
    jv_free(v);
    tool_run_free(&r);
}

static void test_usage(void)
{
    tool_run r;
    rpdump_run(&r, "timeline", NULL);
    CHECK(r.status == 64 && strstr(r.err, "timeline needs dumps"));
    tool_run_free(&r);
    rpdump_run(&r, "timeline", series_path(0), "/nonexistent/x.rpd", NULL);
    CHECK(r.status == 2 && strstr(r.err, "/nonexistent/x.rpd") && strstr(r.err, "cannot open"));
    tool_run_free(&r);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    test_series();
    test_single();
    test_same_second();
    test_other_program();
    test_usage();
    TEST_MAIN_END();
}
