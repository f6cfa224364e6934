/* rpdump's command line, for every command: relative paths are the caller's directory's
 * under `bazel run` (BUILD_WORKING_DIRECTORY), and a malformed dump gets exactly one line on
 * stderr, "rpdump: FILE: offset N (0xN): what", exit status 2, and with --json a document
 * with an "error" member; nothing else is written (no partial picture or profile). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "testing.h"

static void write_good(const char *path)
{
    synth_stack st = {5, 2, {0x400100, 0x400200}};
    synth_block blocks[] = {{10, RPD_STATE_USED, 5}, {20, RPD_STATE_USED, 0}};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 1, .region_base = 0x10000000, .blocks = blocks,
                    .nblocks = 2, .stacks = &st, .nstacks = 1};
    REQUIRE(synth_write(&s, path) == 0);
}

/* Runs rpdump with BUILD_WORKING_DIRECTORY=dir from the test's own directory (the runfiles,
 * where the relative names do not exist). */
static int run_in(tool_run *r, const char *dir, char *const args[])
{
    char *argv[16], env[4200];
    int n = 0;
    argv[n++] = (char *)rpdump_path;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    snprintf(env, sizeof env, "BUILD_WORKING_DIRECTORY=%s", dir);
    char *envs[] = {env, NULL};
    return run_tool(argv, envs, r);
}

static int exists(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void test_caller_directory(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("caller"));
    mkdir(dir, 0755);
    char dump[4200];
    snprintf(dump, sizeof dump, "%s/app.rpd", dir);
    write_good(dump);
    REQUIRE(access("app.rpd", F_OK) != 0);
    char *const commands[][8] = {
        {"summary", "app.rpd", NULL},
        {"map", "-o", "map.svg", "app.rpd", NULL},
        {"flame", "-o", "flame.svg", "app.rpd", NULL},
        {"pprof", "-o", "app.heap", "app.rpd", NULL},
        {"timeline", "-o", "timeline.svg", "app.rpd", "app.rpd", NULL},
        {"diff", "app.rpd", "app.rpd", NULL},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        tool_run r;
        REQUIRE(run_in(&r, dir, commands[i]) == 0);
        CHECKF(r.status == 0, "%s with BUILD_WORKING_DIRECTORY: %d %s", commands[i][0], r.status, r.err);
        tool_run_free(&r);
    }
    CHECK(exists(dir, "map.svg") && exists(dir, "flame.svg") && exists(dir, "app.heap") &&
          exists(dir, "timeline.svg"));
    CHECK(access("map.svg", F_OK) != 0 && access("flame.svg", F_OK) != 0);
    /* absolute paths are left alone */
    char *const absolute[] = {"summary", dump, NULL};
    tool_run r;
    REQUIRE(run_in(&r, "/nonexistent", absolute) == 0);
    CHECK(r.status == 0);
    tool_run_free(&r);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Every command on a damaged dump (a flipped byte, one cut short, one whose block record
 * has an impossible state behind valid checksums, found only while streaming the blocks):
 * one line, status 2, no output file. */
static void test_malformed_everywhere(void)
{
    const char *good = tmp_path("good.rpd"), *bad = tmp_path("bad.rpd"), *cut = tmp_path("cut.rpd");
    write_good(good);
    size_t len;
    uint8_t *buf = read_file(good, &len);
    REQUIRE(buf);
    REQUIRE(write_file(cut, buf, len - 7) == 0);
    buf[len / 2] ^= 0x40; /* a section's checksum catches it */
    REQUIRE(write_file(bad, buf, len) == 0);
    buf[len / 2] ^= 0x40;
    const char *state = tmp_path("state.rpd");
    for (size_t i = 0; i < dump_section_count(buf, len); i++) {
        rpd_entry e;
        rpd_entry_decode(buf + dump_entry_offset(buf, len, i), &e);
        if (e.type == RPD_SEC_BLOCKS)
            buf[e.offset + e.record_bytes * 2 + 52] = 9; /* the third block's state */
    }
    REQUIRE(dump_reseal(buf, len) == 0 && write_file(state, buf, len) == 0);
    free(buf);
    const char *out = tmp_path("out.file");
    const char *const damaged[] = {bad, cut, state};
    for (int k = 0; k < 3; k++) {
        const char *d = damaged[k];
        const char *const commands[][8] = {
            {"summary", d, NULL},
            {"blocks", d, NULL},
            {"sites", d, NULL},
            {"sites", "--folded", d, NULL},
            {"check", d, NULL},
            {"map", "-o", out, d, NULL},
            {"flame", "-o", out, d, NULL},
            {"pprof", d, NULL},
            {"pprof", "--symbols", "-o", out, d, NULL},
            {"diff", good, d, NULL},
            {"diff", d, good, NULL},
            {"timeline", good, d, NULL},
            {"timeline", "-o", out, d, good, NULL},
        };
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            for (int json = 0; json < 2; json++) {
                if (json && !strcmp(commands[i][1], "--folded"))
                    continue;
                if (json && !strcmp(commands[i][0], "pprof") && strcmp(commands[i][1], "--symbols") != 0)
                    continue; /* pprof --json needs -o */
                unlink(out);
                char *argv[12];
                int n = 0;
                argv[n++] = (char *)rpdump_path;
                if (json)
                    argv[n++] = "--json";
                for (int a = 0; commands[i][a]; a++)
                    argv[n++] = (char *)commands[i][a];
                argv[n] = NULL;
                tool_run r;
                REQUIRE(run_tool(argv, NULL, &r) == 0);
                char prefix[4200];
                snprintf(prefix, sizeof prefix, "rpdump: %s: offset ", d);
                /* blocks streams: what it printed before the damage stands */
                int streams = !strcmp(commands[i][0], "blocks") && k == 2;
                CHECKF(r.status == 2 && count_lines(r.err) == 1 && !strncmp(r.err, prefix, strlen(prefix)),
                       "%s%s on %s: status %d, stderr: %s", json ? "--json " : "", commands[i][0], d, r.status,
                       r.err);
                CHECKF(access(out, F_OK) != 0, "%s left %s behind", commands[i][0], out);
                if (json) {
                    char why[200];
                    jv *v = jv_parse(r.out, why, sizeof why);
                    CHECKF(v && jv_get(v, "error") && !strcmp(jv_str(jv_path(v, "error.file")), d),
                           "--json %s: %s", commands[i][0], r.out);
                    jv_free(v);
                } else if (!streams) {
                    CHECKF(r.out[0] == 0, "%s printed: %s", commands[i][0], r.out);
                }
                tool_run_free(&r);
            }
        }
    }
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    test_caller_directory();
    test_malformed_everywhere();
    TEST_MAIN_END();
}
