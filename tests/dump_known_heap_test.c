/* Known heaps, dumped and inspected: rpdump's text and JSON output must agree with what the
 * program knows — its own pointers and sizes, rp_heap_stats, rp_heap_walk — for summary,
 * blocks, sites, check and map. Also: the writer allocates nothing from the heap it dumps,
 * dumps several heaps (one of them in caller memory) into one file, and reports write errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "json_lite.h"
#include "dump_testing.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"

#define SMALL 100      /* 48-byte blocks; every other one freed */
#define ALIGNED 10     /* 1000 bytes aligned to 64 */
#define LARGE 3        /* 100 KiB: page tier */

typedef struct known {
    void *small[SMALL], *aligned[ALIGNED], *large[LARGE], *page;
    size_t live_blocks, live_usable;
} known;

static void build(rp_heap *h, known *k)
{
    memset(k, 0, sizeof *k);
    for (int i = 0; i < SMALL; i++)
        k->small[i] = rp_alloc(h, 48, 0);
    for (int i = 0; i < ALIGNED; i++)
        k->aligned[i] = rp_alloc(h, 1000, 64);
    for (int i = 0; i < LARGE; i++)
        k->large[i] = rp_alloc(h, 100 << 10, 0);
    k->page = rp_alloc(h, 4096, 4096);
    for (int i = 0; i < SMALL; i += 2) {
        rp_free(k->small[i]);
        k->small[i] = NULL;
    }
    void **all[] = {k->small, k->aligned, k->large, &k->page};
    size_t counts[] = {SMALL, ALIGNED, LARGE, 1};
    for (size_t g = 0; g < 4; g++)
        for (size_t i = 0; i < counts[g]; i++)
            if (all[g][i]) {
                k->live_blocks++;
                k->live_usable += rp_usable_size(all[g][i]);
            }
}

/* Free space seen by the public walk: the program's own view of fragmentation. */
typedef struct free_view {
    size_t blocks, bytes, largest;
} free_view;

static int see_free(const rp_block_info *b, void *arg)
{
    free_view *f = arg;
    if (b->state == RP_BLOCK_FREE) {
        f->blocks++;
        f->bytes += b->size;
        if (b->size > f->largest)
            f->largest = b->size;
    }
    return 0;
}

static int is_known_pointer(const known *k, uint64_t addr, size_t *usable)
{
    void *const *all[] = {k->small, k->aligned, k->large, &k->page};
    size_t counts[] = {SMALL, ALIGNED, LARGE, 1};
    for (size_t g = 0; g < 4; g++)
        for (size_t i = 0; i < counts[g]; i++)
            if (all[g][i] && (uint64_t)(uintptr_t)all[g][i] == addr) {
                *usable = rp_usable_size(all[g][i]);
                return 1;
            }
    return 0;
}

static void test_one_heap(void)
{
    rp_heap_config cfg = {0};
    cfg.name = "known";
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    known k;
    build(h, &k);
    CHECK_HEAP(h);
    rp_heap_stats_t before, after;
    rp_heap_stats(h, &before);
    free_view fv = {0, 0, 0};
    rp_heap_walk(h, see_free, &fv);

    const char *path = tmp_path("known.rpd");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    CHECK(rp_heap_dump(h, fd) == 0);
    close(fd);
    /* The writer never allocates from the heap being dumped (nor frees, nor changes it). */
    rp_heap_stats(h, &after);
    CHECK(after.alloc_calls == before.alloc_calls && after.free_calls == before.free_calls);
    CHECK(after.bytes_in_use == before.bytes_in_use && after.os_bytes == before.os_bytes);
    CHECK(before.blocks_in_use == k.live_blocks && before.bytes_usable == k.live_usable);

    /* summary --json */
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", path, NULL);
    CHECK(r.status == 0);
    REQUIRE(v);
    CHECK(!strcmp(jv_str(jv_path(v, "format")), "rampart-dump"));
    CHECK(!strcmp(jv_str(jv_path(v, "flavour")), "release"));
    CHECK(jv_u64(jv_path(v, "pid")) == (uint64_t)getpid());
    CHECK(!strcmp(jv_str(jv_path(v, "reason")), "call"));
    CHECK(jv_len(jv_path(v, "heaps")) == 1);
    CHECK(!strcmp(jv_str(jv_path(v, "heaps.0.name")), "known"));
    CHECK(jv_u64(jv_path(v, "heaps.0.live.blocks")) == k.live_blocks);
    CHECK(jv_u64(jv_path(v, "heaps.0.live.usable_bytes")) == k.live_usable);
    CHECK(jv_u64(jv_path(v, "heaps.0.live.bytes")) == before.bytes_in_use);
    CHECK(jv_u64(jv_path(v, "heaps.0.free.blocks")) == fv.blocks && fv.blocks == before.blocks_free);
    CHECK(jv_u64(jv_path(v, "heaps.0.free.bytes")) == fv.bytes && fv.bytes == before.bytes_free);
    CHECK(jv_u64(jv_path(v, "heaps.0.free.largest")) == fv.largest && fv.largest == before.largest_free);
    double frag = 1.0 - (double)before.largest_free / (double)before.bytes_free;
    CHECKF(fabs(jv_num(jv_path(v, "heaps.0.free.fragmentation")) - frag) < 1e-5, "fragmentation %s, expected %f",
           jv_path(v, "heaps.0.free.fragmentation") ? jv_path(v, "heaps.0.free.fragmentation")->text : "?", frag);
    CHECK(jv_u64(jv_path(v, "heaps.0.large_blocks")) == LARGE + 1);
    CHECK(jv_u64(jv_path(v, "heaps.0.spans.count")) == before.spans);
    CHECK(jv_u64(jv_path(v, "heaps.0.counters.alloc_calls")) == before.alloc_calls);
    CHECK(jv_u64(jv_path(v, "heaps.0.counters.free_calls")) == SMALL / 2);
    CHECK(jv_len(jv_path(v, "heaps.0.regions")) == before.regions);
    CHECK(!strcmp(jv_str(jv_path(v, "heaps.0.regions.0.kind")), "os"));
    CHECK(jv_path(v, "heaps.0.quarantine.enabled")->boolean == 0);
    /* Free-space classes add up to the free totals; the 48-byte holes are one class. */
    uint64_t class_blocks = 0, class_bytes = 0;
    const jv *classes = jv_path(v, "heaps.0.free_classes");
    for (size_t i = 0; i < jv_len(classes); i++) {
        class_blocks += jv_u64(jv_get(jv_at(classes, i), "blocks"));
        class_bytes += jv_u64(jv_get(jv_at(classes, i), "bytes"));
        CHECK(jv_u64(jv_get(jv_at(classes, i), "blocks")) == jv_u64(jv_get(jv_at(classes, i), "counted_blocks")));
    }
    CHECK(class_blocks == fv.blocks && class_bytes == fv.bytes);
    jv_free(v);
    tool_run_free(&r);

    /* summary, text */
    rpdump_run(&r, "summary", path, NULL);
    CHECK(r.status == 0);
    char line[160];
    snprintf(line, sizeof line, "live         %zu blocks", k.live_blocks);
    CHECKF(strstr(r.out, line) != NULL, "no '%s' in:\n%s", line, r.out);
    snprintf(line, sizeof line, "fragmentation %.3f", frag);
    CHECKF(strstr(r.out, line) != NULL, "no '%s' in:\n%s", line, r.out);
    CHECK(strstr(r.out, "heap 'known'") != NULL);
    tool_run_free(&r);

    /* blocks: every live pointer of the program, with its usable size, and nothing else */
    v = rpdump_json(&r, "blocks", "--json", "--state", "used", path, NULL);
    REQUIRE(v);
    CHECK(r.status == 0);
    const jv *blocks = jv_get(v, "blocks");
    CHECK(jv_len(blocks) == k.live_blocks && jv_u64(jv_get(v, "matched")) == k.live_blocks);
    for (size_t i = 0; i < jv_len(blocks); i++) {
        const jv *b = jv_at(blocks, i);
        uint64_t addr = strtoull(jv_str(jv_get(b, "address")), NULL, 16);
        size_t usable = 0;
        CHECKF(is_known_pointer(&k, addr, &usable), "block 0x%llx is not the program's", (unsigned long long)addr);
        CHECK(jv_u64(jv_get(b, "size")) == usable);
        CHECK(!strcmp(jv_str(jv_get(b, "state")), "used"));
    }
    jv_free(v);
    tool_run_free(&r);
    /* size filter: the ten 1000-byte blocks (usable 1008..1100) */
    v = rpdump_json(&r, "blocks", "--json", "--state=used", "--min-size", "1000", "--max-size", "2000", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == ALIGNED);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "blocks", "--json", "--state=used", "--min-size", "1000", "--max-size=1100", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == ALIGNED);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "blocks", "--json", "--state=used", "--limit=5", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == k.live_blocks && jv_u64(jv_get(v, "shown")) == 5 &&
          jv_len(jv_get(v, "blocks")) == 5);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "blocks", "--json", "--state", "free", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == fv.blocks);
    jv_free(v);
    tool_run_free(&r);
    /* a range cutting through the program's sizes: the count the program computes */
    size_t in_range = 0;
    for (int i = 1; i < SMALL; i += 2)
        in_range += rp_usable_size(k.small[i]) >= 40 && rp_usable_size(k.small[i]) <= 64;
    v = rpdump_json(&r, "blocks", "--json", "--state", "used", "--min-size", "40", "--max-size", "64", path, NULL);
    CHECK(v && in_range == SMALL / 2 && jv_u64(jv_get(v, "matched")) == in_range);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "blocks", "--json", "--tier", "page", "--state=used,quarantined", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == LARGE + 1);
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "blocks", "--state", "used", path, NULL);
    snprintf(line, sizeof line, "%zu blocks matched, %zu shown", k.live_blocks, k.live_blocks);
    CHECKF(r.status == 0 && strstr(r.out, line), "no '%s' in blocks output", line);
    tool_run_free(&r);

    /* sites: a release dump has no stacks: one site, all live blocks, usable bytes */
    v = rpdump_json(&r, "sites", "--json", path, NULL);
    CHECK(v && r.status == 0);
    CHECK(jv_len(jv_get(v, "sites")) == 1 && !strcmp(jv_str(jv_path(v, "sites.0.stack")), "none"));
    CHECK(jv_u64(jv_path(v, "sites.0.blocks")) == k.live_blocks);
    CHECK(jv_u64(jv_path(v, "sites.0.bytes")) == k.live_usable);
    CHECK(!strcmp(jv_str(jv_get(v, "bytes_are")), "usable"));
    jv_free(v);
    tool_run_free(&r);

    /* check */
    rpdump_run(&r, "check", path, NULL);
    CHECKF(r.status == 0 && strstr(r.out, "ok: every invariant holds"), "check: %d %s %s", r.status, r.out, r.err);
    tool_run_free(&r);
    v = rpdump_json(&r, "check", "--json", path, NULL);
    CHECK(v && jv_get(v, "ok")->boolean && jv_u64(jv_get(v, "violation_count")) == 0);
    jv_free(v);
    tool_run_free(&r);

    /* map: every byte of every region is drawn in some category; used = usable bytes */
    const char *svg = tmp_path("known.svg");
    v = rpdump_json(&r, "map", "--json", "-o", svg, path, NULL);
    CHECK(v && r.status == 0);
    const jv *regions = jv_get(v, "regions");
    CHECK(jv_len(regions) == before.regions);
    uint64_t used = 0, free_bytes = 0;
    for (size_t i = 0; i < jv_len(regions); i++) {
        const jv *g = jv_at(regions, i);
        uint64_t sum = jv_u64(jv_get(g, "used_bytes")) + jv_u64(jv_get(g, "padding_bytes")) +
                       jv_u64(jv_get(g, "free_bytes")) + jv_u64(jv_get(g, "returned_bytes")) +
                       jv_u64(jv_get(g, "quarantined_bytes"));
        CHECK(sum == jv_u64(jv_get(g, "bytes")));
        used += jv_u64(jv_get(g, "used_bytes"));
        free_bytes += jv_u64(jv_get(g, "free_bytes")) + jv_u64(jv_get(g, "returned_bytes"));
    }
    CHECK(used == k.live_usable && free_bytes == fv.bytes);
    unsigned map_w = (unsigned)jv_u64(jv_get(v, "width")), map_h = (unsigned)jv_u64(jv_get(v, "height"));
    uint64_t shapes = jv_u64(jv_get(v, "shapes"));
    jv_free(v);
    tool_run_free(&r);
    size_t svg_len;
    uint8_t *svg_text = read_file(svg, &svg_len);
    CHECK(svg_text && svg_len > 100 && !memcmp(svg_text, "<?xml", 5));
    if (svg_text) {
        svg_text[svg_len - 1] = 0;
        /* colours as classes, address ticks, the legend */
        CHECK(strstr((char *)svg_text, "class=\"u\"") && strstr((char *)svg_text, "class=\"f\"") &&
              strstr((char *)svg_text, ">+0x0</text>") && strstr((char *)svg_text, ">free, returned to the OS<") &&
              strstr((char *)svg_text, "</svg>"));
        /* one shape per run at most: subpaths "M" plus the background rectangles */
        uint64_t subpaths = 0;
        for (const char *p = (char *)svg_text; (p = strstr(p, "M")) != NULL; p++)
            subpaths += p[1] >= '0' && p[1] <= '9';
        CHECKF(shapes >= subpaths && shapes <= subpaths + 2 * before.regions, "%llu shapes, %llu subpaths",
               (unsigned long long)shapes, (unsigned long long)subpaths);
    }
    free(svg_text);
    unsigned w, ht;
    size_t png_bytes;
    CHECK(svg_render(svg, tmp_path("known.png"), &w, &ht, &png_bytes) == 0);
    CHECKF(w == map_w && ht == map_h && map_w == 1024 + 92 + 20, "map rendered %ux%u, announced %ux%u", w, ht, map_w,
           map_h);
    /* a narrow picture: the legend wraps instead of overlapping, and it still renders */
    v = rpdump_json(&r, "map", "--json", "--width", "200", "-o", svg, path, NULL);
    CHECK(v && r.status == 0);
    unsigned narrow_h = v ? (unsigned)jv_u64(jv_get(v, "height")) : 0;
    jv_free(v);
    tool_run_free(&r);
    CHECK(svg_render(svg, tmp_path("narrow.png"), &w, &ht, &png_bytes) == 0 && w == 200 + 92 + 20 &&
          ht == narrow_h);
    rpdump_run(&r, "map", path, NULL);
    CHECK(r.status == 64 && strstr(r.err, "map needs -o"));
    tool_run_free(&r);

    rp_heap_destroy(h);
}

/* Several heaps in one file, one living in caller memory; --heap selects one. */
static _Alignas(4096) unsigned char arena[1 << 20];

static void test_all_heaps(void)
{
    rp_heap_config a = {0}, b = {0};
    a.name = "net";
    b.name = "arena";
    b.flags = RP_HEAP_NO_OS;
    rp_heap *net = rp_heap_create(&a), *shm = rp_heap_create(&b);
    REQUIRE(net && shm);
    REQUIRE(rp_heap_add_region(shm, arena, sizeof arena) == 0);
    for (int i = 0; i < 7; i++)
        REQUIRE(rp_alloc(net, 200, 0));
    for (int i = 0; i < 5; i++)
        REQUIRE(rp_alloc(shm, 3000, 0));
    char written[4096];
    CHECK(rp_dump_to_path(tmp_path("all.%p.%n.%%.rpd"), written, sizeof written) == 0);
    char expect[64];
    snprintf(expect, sizeof expect, "all.%d.0.%%.rpd", (int)getpid());
    CHECKF(strstr(written, expect) != NULL, "dump path %s, expected ...%s", written, expect);
    CHECK(access(written, R_OK) == 0);

    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", written, NULL);
    REQUIRE(v);
    size_t found = 0;
    for (size_t i = 0; i < jv_len(jv_get(v, "heaps")); i++) {
        const jv *hp = jv_at(jv_get(v, "heaps"), i);
        if (!strcmp(jv_str(jv_get(hp, "name")), "net")) {
            found++;
            CHECK(jv_u64(jv_path(hp, "live.blocks")) == 7);
        }
        if (!strcmp(jv_str(jv_get(hp, "name")), "arena")) {
            found++;
            CHECK(jv_u64(jv_path(hp, "live.blocks")) == 5);
            CHECK(!strcmp(jv_str(jv_path(hp, "regions.0.kind")), "caller"));
            uint64_t base = strtoull(jv_str(jv_path(hp, "regions.0.base")), NULL, 16);
            CHECK(base >= (uintptr_t)arena && base < (uintptr_t)arena + sizeof arena);
        }
    }
    CHECK(found == 2);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "summary", "--json", "--heap", "arena", written, NULL);
    CHECK(v && jv_len(jv_get(v, "heaps")) == 1 && !strcmp(jv_str(jv_path(v, "heaps.0.name")), "arena"));
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "summary", "--heap", "nosuch", written, NULL);
    CHECK(r.status == 64 && strstr(r.err, "no heap named"));
    tool_run_free(&r);
    rpdump_run(&r, "check", written, NULL);
    CHECKF(r.status == 0, "check of the multi-heap dump: %s%s", r.out, r.err);
    tool_run_free(&r);
    /* The next dump takes the next sequence number. */
    CHECK(rp_dump_to_path(tmp_path("all.%p.%n.rpd"), written, sizeof written) == 0);
    snprintf(expect, sizeof expect, "all.%d.1.rpd", (int)getpid());
    CHECK(strstr(written, expect) != NULL);
    rp_heap_destroy(net);
    rp_heap_destroy(shm);
}

/* Write errors come back as -1 with errno; a pipe works like a file. */
static void test_write_errors(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(rp_alloc(h, 10, 0));
    errno = 0;
    CHECK(rp_heap_dump(h, -1) == -1 && errno == EINVAL);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    errno = 0;
    CHECK(rp_heap_dump(h, fds[1]) == -1 && errno == EPIPE);
    close(fds[1]);
    int ro = open(tmp_path("readonly.rpd"), O_RDONLY | O_CREAT, 0644);
    errno = 0;
    CHECK(rp_heap_dump(h, ro) == -1 && errno == EBADF);
    close(ro);
    char out[64];
    errno = 0;
    CHECK(rp_dump_to_path("/nonexistent-dir/x.%p.rpd", out, sizeof out) == -1 && errno == ENOENT);
    char longer[6000];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    errno = 0;
    CHECK(rp_dump_to_path(longer, out, sizeof out) == -1 && errno == ENAMETOOLONG);
    rp_heap_destroy(h);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    test_one_heap();
    test_all_heaps();
    test_write_errors();
    TEST_MAIN_END();
}
