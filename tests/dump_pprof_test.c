/* rpdump pprof: the heap profile text format of gperftools' pprof, read back by the real
 * google-pprof (Debian's google-perftools, tools/setup.sh). A synthetic debug dump with known
 * stacks gives exact profile lines; google-pprof --text reads the profile with its embedded
 * names (--symbols) and must report the sites' objects and shares of bytes as the dump has
 * them. The plain form (pprof symbolises from the binaries) is checked on a real heap in
 * dump_debug_e2e_test. */
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
    {7, 3, {B + 0x1000, B + 0x2000, B + 0x3000}}, /* 10 x 100 */
    {9, 3, {B + 0x1100, B + 0x2000, B + 0x3000}}, /* 4 x 1000 */
    {12, 1, {0x7f0000000010}},                    /* 3 x 40, in no mapping */
};

static void write_dump(const char *path)
{
    synth_block blocks[32];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        blocks[n++] = (synth_block){100, RPD_STATE_USED, 7};
    for (int i = 0; i < 4; i++)
        blocks[n++] = (synth_block){1000, RPD_STATE_USED, 9};
    for (int i = 0; i < 3; i++)
        blocks[n++] = (synth_block){40, RPD_STATE_USED, 12};
    blocks[n++] = (synth_block){64, RPD_STATE_USED, 0};
    blocks[n++] = (synth_block){64, RPD_STATE_USED, 0};
    synth_mapping map = {B + 0x1000, B + 0x9000, B, "/nonexistent/libapp.so", "\x01\x02", 2};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 100, .region_base = 0x10000000, .blocks = blocks,
                    .nblocks = n, .stacks = stacks, .nstacks = 3, .maps = &map, .nmaps = 1};
    REQUIRE(synth_write(&s, path) == 0);
}

static void test_format(const char *path)
{
    tool_run r;
    rpdump_run(&r, "pprof", "--symbolizer", "none", path, NULL);
    const char *expected = "heap profile:     19:     5248 [    19:     5248] @ heapprofile\n"
                           "     4:     4000 [     4:     4000] @ 0x555500001100 0x555500002000 0x555500003000\n"
                           "    10:     1000 [    10:     1000] @ 0x555500001000 0x555500002000 0x555500003000\n"
                           "     2:      128 [     2:      128] @ 0x1\n"
                           "     3:      120 [     3:      120] @ 0x7f0000000010\n"
                           "\n"
                           "MAPPED_LIBRARIES:\n"
                           "555500001000-555500009000 r-xp 00000000 00:00 0 /nonexistent/libapp.so\n";
    CHECKF(r.status == 0 && !strcmp(r.out, expected), "pprof: status %d\n%s%s", r.status, r.out, r.err);
    tool_run_free(&r);

    /* --symbols: the names first, each pc once */
    rpdump_run(&r, "pprof", "--symbols", "--symbolizer", "none", path, NULL);
    CHECKF(r.status == 0 && !strncmp(r.out, "--- symbol\nbinary=/synthetic/program\n0x1 [no stack]\n", 51) &&
               strstr(r.out, "\n0x555500002000 libapp.so+0x2000\n0x555500003000 libapp.so+0x3000\n"
                             "0x7f0000000010 0x7f0000000010\n---\nheap profile:"),
           "%s", r.out);
    tool_run_free(&r);

    /* -o with --json; usage errors */
    const char *out = tmp_path("p.heap");
    jv *v = rpdump_json(&r, "pprof", "--json", "-o", out, path, NULL);
    CHECK(v && r.status == 0 && jv_u64(jv_get(v, "sites")) == 4 && jv_u64(jv_get(v, "total_bytes")) == 5248 &&
          jv_u64(jv_get(v, "total_blocks")) == 19 && !jv_get(v, "symbols")->boolean);
    jv_free(v);
    tool_run_free(&r);
    size_t len;
    char *text = (char *)read_file(out, &len);
    CHECK(text && len > 100 && !strncmp(text, "heap profile:", 13));
    free(text);
    rpdump_run(&r, "pprof", "--json", path, NULL);
    CHECK(r.status == 64 && strstr(r.err, "needs -o"));
    tool_run_free(&r);
    rpdump_run(&r, "sites", "--symbols", path, NULL);
    CHECK(r.status == 64 && strstr(r.err, "--symbols"));
    tool_run_free(&r);
}

/* The line of google-pprof --text output naming fn, or NULL. */
static const char *line_of(const char *out, const char *fn)
{
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line), k = strlen(fn);
        if (n > k && !strncmp(line + n - k, fn, k) && line[n - k - 1] == ' ')
            return line;
    }
    return NULL;
}

static void test_google_pprof(const char *path)
{
    const char *pprof = find_program("google-pprof");
    if (!pprof)
        pprof = find_program("pprof");
    REQUIRE(pprof); /* tools/setup.sh installs google-perftools */
    char tool[4096];
    snprintf(tool, sizeof tool, "%s", pprof);
    const char *profile = tmp_path("s.heap");
    tool_run r;
    rpdump_run(&r, "pprof", "--symbols", "--symbolizer", "none", "-o", profile, path, NULL);
    REQUIRE(r.status == 0);
    tool_run_free(&r);

    /* objects: exact counts per function, flat and cumulative */
    char *objects[] = {tool, "--text", "--inuse_objects", (char *)profile, NULL};
    REQUIRE(run_tool(objects, NULL, &r) == 0);
    CHECKF(r.status == 0 && strstr(r.out, "Total: 19 objects"), "google-pprof: %d\n%s%s", r.status, r.out, r.err);
    const char *l = line_of(r.out, "libapp.so+0x1000");
    CHECKF(l && !strncmp(l, "      10  52.6%  52.6%       10  52.6% ", 39), "%s", r.out);
    l = line_of(r.out, "libapp.so+0x2000");
    CHECKF(l && strstr(l, "      14  73.7% libapp.so+0x2000"), "%s", r.out); /* cumulative */
    CHECKF(line_of(r.out, "[no stack]") && strstr(line_of(r.out, "[no stack]"), " 2  10.5%"), "%s", r.out);
    tool_run_free(&r);

    /* bytes: the shares */
    char *bytes[] = {tool, "--text", (char *)profile, NULL};
    REQUIRE(run_tool(bytes, NULL, &r) == 0);
    l = line_of(r.out, "libapp.so+0x1100");
    CHECKF(r.status == 0 && l && strstr(l, "76.2%  76.2%"), "google-pprof: %d\n%s%s", r.status, r.out, r.err);
    tool_run_free(&r);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    const char *path = tmp_path("pprof.rpd");
    write_dump(path);
    test_format(path);
    test_google_pprof(path);
    TEST_MAIN_END();
}
