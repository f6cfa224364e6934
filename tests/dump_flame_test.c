/* rpdump flame and sites --folded: the live bytes by stack. A synthetic debug dump with known
 * stacks (two sharing their two outer frames, one outside any mapping, one repeated under a
 * second id, blocks without a stack) must give exactly the expected folded lines and an
 * icicle graph whose bars, titles and sizes match; the SVG is rendered by rsvg-convert and
 * its pixel size checked. Hostile module paths (markup, control characters) must not reach
 * the outputs raw, and a dump without live blocks still gives a picture. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "testing.h"

#define B 0x555500000000ull

static const synth_stack stacks[] = {
    {7, 3, {B + 0x1000, B + 0x2000, B + 0x3000}}, /* parse: 10 x 100 */
    {9, 3, {B + 0x1100, B + 0x2000, B + 0x3000}}, /* alloc: 4 x 1000 */
    {12, 1, {0x7f0000000010}},                    /* raw: 3 x 40, in no mapping */
    {13, 3, {B + 0x1100, B + 0x2000, B + 0x3000}}, /* alloc again under another id: 1 x 500 */
};

static size_t blocks_of(synth_block *out)
{
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        out[n++] = (synth_block){100, RPD_STATE_USED, 7};
    out[n++] = (synth_block){200, RPD_STATE_FREE, 0};
    for (int i = 0; i < 4; i++)
        out[n++] = (synth_block){1000, RPD_STATE_USED, 9};
    for (int i = 0; i < 3; i++)
        out[n++] = (synth_block){40, RPD_STATE_USED, 12};
    out[n++] = (synth_block){500, RPD_STATE_USED, 13};
    out[n++] = (synth_block){64, RPD_STATE_USED, 0};
    out[n++] = (synth_block){64, RPD_STATE_USED, 0};
    out[n++] = (synth_block){24, RPD_STATE_QUARANTINED, 7};
    return n;
}

static void write_dump(const char *path, const char *lib_path)
{
    synth_block blocks[32];
    size_t n = blocks_of(blocks);
    synth_mapping map = {B + 0x1000, B + 0x9000, B, lib_path, "\x01\x02\x03\x04", 4};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 100, .region_base = 0x10000000, .blocks = blocks,
                    .nblocks = n, .stacks = stacks, .nstacks = 4, .maps = &map, .nmaps = 1};
    REQUIRE(synth_write(&s, path) == 0);
}

static void test_folded(const char *path)
{
    tool_run r;
    rpdump_run(&r, "sites", "--folded", "--symbolizer", "none", path, NULL);
    const char *expected = "libapp.so+0x3000;libapp.so+0x2000;libapp.so+0x1100 4500\n"
                           "libapp.so+0x3000;libapp.so+0x2000;libapp.so+0x1000 1000\n"
                           "(no stack) 128\n"
                           "0x7f0000000010 120\n";
    CHECKF(r.status == 0 && !strcmp(r.out, expected), "sites --folded: status %d\n%s%s", r.status, r.out, r.err);
    tool_run_free(&r);
    /* --state quarantined: the one quarantined block */
    rpdump_run(&r, "sites", "--folded", "--state", "quarantined", "--symbolizer", "none", path, NULL);
    CHECKF(r.status == 0 && !strcmp(r.out, "libapp.so+0x3000;libapp.so+0x2000;libapp.so+0x1000 24\n"), "%s", r.out);
    tool_run_free(&r);
    /* --folded is a text format */
    rpdump_run(&r, "sites", "--folded", "--json", path, NULL);
    CHECK(r.status == 64 && strstr(r.err, "--folded"));
    tool_run_free(&r);
}

static void test_flame(const char *path)
{
    const char *svg = tmp_path("flame.svg"), *png = tmp_path("flame.png");
    tool_run r;
    jv *v = rpdump_json(&r, "flame", "--json", "--symbolizer", "none", "-o", svg, path, NULL);
    REQUIRE(v);
    CHECK(r.status == 0);
    CHECK(!strcmp(jv_str(jv_get(v, "bytes_are")), "requested"));
    CHECK(jv_u64(jv_get(v, "total_bytes")) == 5748 && jv_u64(jv_get(v, "total_blocks")) == 20);
    CHECK(jv_u64(jv_get(v, "sites")) == 5);
    /* all, +0x3000, +0x2000, +0x1100, +0x1000, (no stack), 0x7f0000000010 */
    CHECKF(jv_u64(jv_get(v, "nodes")) == 7 && jv_u64(jv_get(v, "drawn")) == 7 && jv_u64(jv_get(v, "omitted")) == 0,
           "%s", r.out);
    CHECK(jv_u64(jv_get(v, "depth")) == 3);
    CHECK(jv_u64(jv_get(v, "width")) == 1220);
    unsigned height = (unsigned)jv_u64(jv_get(v, "height"));
    jv_free(v);
    tool_run_free(&r);

    size_t len;
    char *text = (char *)read_file(svg, &len);
    REQUIRE(text);
    text[len - 1] = 0;
    /* hover titles: name, module, size, share, blocks */
    CHECKF(strstr(text, "<title>libapp.so+0x1100 (libapp.so)&#10;4.39 KiB requested (4500 bytes), 78.29%, 5 blocks"
                        "</title>"),
           "no title for +0x1100 in\n%s", text);
    CHECK(strstr(text, "<title>all&#10;5.61 KiB requested (5748 bytes), 100.00%, 20 blocks</title>"));
    CHECK(strstr(text, "<title>(no stack)&#10;128 B requested (128 bytes), 2.23%, 2 blocks</title>"));
    /* widths proportional to bytes: the root spans 1200 px, +0x1100 is 4500/5748 of it */
    CHECK(strstr(text, "<rect x=\"10.00\" y=\"58\" width=\"1200.00\""));
    char bar[64];
    snprintf(bar, sizeof bar, "width=\"%.2f\"", 1200.0 * 4500 / 5748);
    CHECKF(strstr(text, bar), "no bar %s", bar);
    free(text);

    unsigned w, h;
    size_t png_bytes;
    REQUIRE(svg_render(svg, png, &w, &h, &png_bytes) == 0);
    CHECKF(w == 1220 && h == height && png_bytes > 5000, "rendered %ux%u, %zu bytes (expected 1220x%u)", w, h,
           png_bytes, height);

    /* the text form, and the width option */
    rpdump_run(&r, "flame", "--width", "400", "-o", svg, path, NULL);
    CHECKF(r.status == 0 && strstr(r.out, "wrote ") && strstr(r.out, "420 x"), "%s%s", r.out, r.err);
    tool_run_free(&r);
    rpdump_run(&r, "flame", path, NULL);
    CHECK(r.status == 64 && strstr(r.err, "flame needs -o"));
    tool_run_free(&r);
    rpdump_run(&r, "flame", "-o", "/nonexistent/dir/f.svg", path, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "cannot write"), "%d %s", r.status, r.err);
    tool_run_free(&r);
}

/* Nothing live: a picture saying so, still rendered. */
static void test_empty(void)
{
    synth_dump s = {.debug = 1, .heap_name = "empty", .pid = 1, .region_base = 0x10000000};
    const char *path = tmp_path("empty.rpd"), *svg = tmp_path("empty.svg"), *png = tmp_path("empty.png");
    REQUIRE(synth_write(&s, path) == 0);
    tool_run r;
    jv *v = rpdump_json(&r, "flame", "--json", "-o", svg, path, NULL);
    CHECK(v && r.status == 0 && jv_u64(jv_get(v, "total_bytes")) == 0 && jv_u64(jv_get(v, "nodes")) == 1 &&
          jv_u64(jv_get(v, "drawn")) == 0 && jv_u64(jv_get(v, "omitted")) == 0);
    jv_free(v);
    tool_run_free(&r);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0 && w == 1220);
    rpdump_run(&r, "sites", "--folded", path, NULL);
    CHECK(r.status == 0 && r.out[0] == 0);
    tool_run_free(&r);
}

/* A module path with markup and control characters: escaped in the SVG (which must still
 * render), cleaned in the folded lines. */
static void test_hostile_names(void)
{
    const char *path = tmp_path("hostile.rpd"), *svg = tmp_path("hostile.svg"), *png = tmp_path("hostile.png");
    write_dump(path, "/x/<b>&\"lib;\x1b[31m\n.so");
    tool_run r;
    rpdump_run(&r, "flame", "--symbolizer", "none", "-o", svg, path, NULL);
    CHECK(r.status == 0);
    tool_run_free(&r);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0);
    size_t len;
    char *text = (char *)read_file(svg, &len);
    REQUIRE(text);
    text[len - 1] = 0;
    CHECK(!strstr(text, "<b>") && !strchr(text, 0x1b) && strstr(text, "&lt;b&gt;&amp;&quot;lib;?[31m?.so+0x1100"));
    free(text);
    rpdump_run(&r, "sites", "--folded", "--symbolizer", "none", path, NULL);
    CHECKF(r.status == 0 && strstr(r.out, "&\"lib??[31m?.so+0x3000;") && !strchr(r.out, 0x1b), "%s", r.out);
    tool_run_free(&r);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    const char *path = tmp_path("flame.rpd");
    write_dump(path, "/nonexistent/libapp.so");
    test_folded(path);
    test_flame(path);
    test_empty();
    test_hostile_names();
    TEST_MAIN_END();
}
