/* End to end in the debug flavour: a program with two allocation sites is dumped; rpdump
 * sites finds both, symbolised, with the right block counts and requested bytes. Then a leak
 * is planted at a third site (and freed churn goes through the quarantine); rpdump diff finds
 * the leak site and nothing else, check passes on both dumps, and summary shows the
 * quarantine. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"

#define SMALL_BLOCKS 100
#define BIG_BLOCKS 10
#define LEAKS 7

static void *keep[SMALL_BLOCKS + BIG_BLOCKS + LEAKS];
static size_t kept;

/* The sites: noinline, and the asm keeps each call from becoming a tail call. */
__attribute__((noinline)) void small_site(rp_heap *h)
{
    keep[kept++] = rp_alloc(h, 40, 0);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void big_site(rp_heap *h)
{
    keep[kept++] = rp_alloc(h, 3000, 0);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void leaky_site(rp_heap *h)
{
    keep[kept++] = rp_alloc(h, 500, 0);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *churn_site(rp_heap *h)
{
    void *p = rp_alloc(h, 64, 0);
    __asm__ volatile("" ::: "memory");
    return p;
}

static void dump_to(rp_heap *h, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
}

/* Whether one of a site's frames was symbolised as fn. */
static int has_frame(const jv *site, const char *fn)
{
    const jv *frames = jv_get(site, "frames");
    for (size_t i = 0; i < jv_len(frames); i++)
        if (!strcmp(jv_str(jv_get(jv_at(frames, i), "function")), fn))
            return 1;
    return 0;
}

/* The folded line whose innermost frame is fn: its bytes, or 0. */
static uint64_t folded_bytes(const char *out, const char *fn)
{
    char key[128];
    snprintf(key, sizeof key, ";%s ", fn);
    const char *at = strstr(out, key);
    return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

/* google-pprof --text --inuse_objects EXE PROFILE: the flat objects of fn, or -1. */
static long pprof_objects(const char *profile, const char *fn)
{
    const char *tool = find_program("google-pprof");
    REQUIRE(tool); /* tools/setup.sh installs google-perftools */
    char tool_path[4096], exe[4096];
    snprintf(tool_path, sizeof tool_path, "%s", tool);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    REQUIRE(n > 0);
    exe[n] = 0;
    char *argv[] = {tool_path, "--text", "--inuse_objects", exe, (char *)profile, NULL};
    tool_run r;
    REQUIRE(run_tool(argv, NULL, &r) == 0);
    long objects = -1;
    for (char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char name[128];
        long flat;
        if (sscanf(line, "%ld %*s %*s %*s %*s %127s", &flat, name) == 2 && !strcmp(name, fn))
            objects = flat;
    }
    if (objects < 0)
        fprintf(stderr, "google-pprof has no %s (status %d):\n%s%s\n", fn, r.status, r.out, r.err);
    tool_run_free(&r);
    return objects;
}

static void test_exports(const char *dump)
{
    tool_run r;
    rpdump_run(&r, "sites", "--folded", dump, NULL);
    CHECKF(r.status == 0 && folded_bytes(r.out, "small_site") == SMALL_BLOCKS * 40 &&
               folded_bytes(r.out, "big_site") == BIG_BLOCKS * 3000,
           "sites --folded:\n%s", r.out);
    tool_run_free(&r);

    const char *svg = tmp_path("e2e_flame.svg"), *png = tmp_path("e2e_flame.png");
    jv *v = rpdump_json(&r, "flame", "--json", "-o", svg, dump, NULL);
    CHECK(v && r.status == 0 && jv_u64(jv_get(v, "total_bytes")) >= SMALL_BLOCKS * 40 + BIG_BLOCKS * 3000);
    unsigned height = v ? (unsigned)jv_u64(jv_get(v, "height")) : 0;
    jv_free(v);
    tool_run_free(&r);
    size_t len;
    char *text = (char *)read_file(svg, &len);
    CHECK(text && strstr(text, "<title>big_site (") && strstr(text, "29.3 KiB requested (30000 bytes)"));
    free(text);
    unsigned w, h;
    size_t png_bytes;
    CHECK(svg_render(svg, png, &w, &h, &png_bytes) == 0 && w == 1220 && h == height);

    const char *profile = tmp_path("e2e.heap");
    rpdump_run(&r, "pprof", "-o", profile, dump, NULL);
    CHECK(r.status == 0);
    tool_run_free(&r);
    CHECK(pprof_objects(profile, "small_site") == SMALL_BLOCKS);
    CHECK(pprof_objects(profile, "big_site") == BIG_BLOCKS);
}

static const jv *site_with(const jv *v, const char *fn)
{
    const jv *sites = jv_get(v, "sites");
    for (size_t i = 0; i < jv_len(sites); i++)
        if (has_frame(jv_at(sites, i), fn))
            return jv_at(sites, i);
    return NULL;
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    REQUIRE(!strcmp(rp_flavour(), "debug"));
    rp_heap_config cfg = {0};
    cfg.name = "e2e";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    for (int i = 0; i < SMALL_BLOCKS; i++)
        small_site(h);
    for (int i = 0; i < BIG_BLOCKS; i++)
        big_site(h);
    const char *a = tmp_path("e2e_a.rpd"), *b = tmp_path("e2e_b.rpd");
    dump_to(h, a);

    tool_run r;
    jv *v = rpdump_json(&r, "sites", "--json", "--frames", "6", a, NULL);
    REQUIRE(v);
    CHECK(r.status == 0 && !strcmp(jv_str(jv_get(v, "flavour")), "debug"));
    const jv *small = site_with(v, "small_site"), *big = site_with(v, "big_site");
    CHECKF(small && big, "sites without symbolised small_site / big_site frames:\n%s", r.out);
    CHECK(small && jv_u64(jv_get(small, "blocks")) == SMALL_BLOCKS && jv_u64(jv_get(small, "bytes")) == SMALL_BLOCKS * 40);
    CHECK(big && jv_u64(jv_get(big, "blocks")) == BIG_BLOCKS && jv_u64(jv_get(big, "bytes")) == BIG_BLOCKS * 3000);
    CHECK(jv_u64(jv_path(v, "sites.0.bytes")) == BIG_BLOCKS * 3000); /* ranked by bytes */
    jv_free(v);
    tool_run_free(&r);

    test_exports(a);

    /* The leak, and churn that leaves only quarantined blocks. */
    for (int i = 0; i < LEAKS; i++)
        leaky_site(h);
    for (int i = 0; i < 50; i++)
        rp_free(churn_site(h));
    dump_to(h, b);

    v = rpdump_json(&r, "diff", "--json", "--frames", "6", a, b, NULL);
    REQUIRE(v);
    CHECKF(r.status == 0 && jv_u64(jv_get(v, "changed_sites")) == 1, "diff:\n%s", r.out);
    const jv *leak = jv_path(v, "sites.0");
    CHECKF(leak && has_frame(leak, "leaky_site"), "the site that grew is not leaky_site:\n%s", r.out);
    CHECK(jv_u64(jv_get(leak, "blocks_a")) == 0 && jv_u64(jv_get(leak, "blocks_b")) == LEAKS);
    CHECK(!strcmp(jv_get(leak, "delta_bytes")->text, "3500"));
    uint64_t leak_stack = jv_u64(jv_get(leak, "stack"));
    jv_free(v);
    tool_run_free(&r);

    rpdump_run(&r, "diff", a, b, NULL);
    CHECKF(strstr(r.out, "1 site grew") && strstr(r.out, " in leaky_site"), "diff text:\n%s", r.out);
    tool_run_free(&r);

    char site[32];
    snprintf(site, sizeof site, "%llu", (unsigned long long)leak_stack);
    v = rpdump_json(&r, "blocks", "--json", "--site", site, b, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == LEAKS && jv_u64(jv_path(v, "blocks.0.requested")) == 500);
    jv_free(v);
    tool_run_free(&r);

    v = rpdump_json(&r, "summary", "--json", b, NULL);
    CHECK(v && jv_path(v, "heaps.0.quarantine.enabled")->boolean);
    CHECKF(v && jv_u64(jv_path(v, "heaps.0.quarantine.blocks")) == 50, "quarantined: %llu",
           (unsigned long long)jv_u64(jv_path(v, "heaps.0.quarantine.blocks")));
    CHECK(v && jv_u64(jv_path(v, "heaps.0.live.requested_bytes")) == SMALL_BLOCKS * 40 + BIG_BLOCKS * 3000 + LEAKS * 500);
    jv_free(v);
    tool_run_free(&r);
    /* The quarantined churn blocks carry their free stacks. */
    v = rpdump_json(&r, "blocks", "--json", "--state", "quarantined", b, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == 50 && jv_u64(jv_path(v, "blocks.0.free_stack")) != 0);
    jv_free(v);
    tool_run_free(&r);

    const char *both[] = {a, b};
    for (int i = 0; i < 2; i++) {
        rpdump_run(&r, "check", both[i], NULL);
        CHECKF(r.status == 0, "check %s:\n%s%s", both[i], r.out, r.err);
        tool_run_free(&r);
    }
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
