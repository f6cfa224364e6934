/* rpdump sites and diff. Synthetic debug dumps give known stacks: sites must rank them by
 * bytes with the right counts, and diff between two dumps of "two processes" (other load
 * addresses, other stack ids) must find the one planted leak site and nothing else. A live
 * release heap checks diff on real dumps (all blocks in the "no stack" site). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"
#include "tools/rpdump/dump_parser.h"

#define LIB "/nonexistent/libapp.so"

/* One "process": its library is loaded at lib_base; its stack ids start at first_id. */
typedef struct process_view {
    uint64_t lib_base, region_base;
    uint32_t id_parse, id_alloc, id_raw; /* stack ids of the three sites */
} process_view;

static void make_stacks(const process_view *pv, synth_stack st[3], synth_mapping *map)
{
    uint64_t b = pv->lib_base;
    synth_stack parse = {pv->id_parse, 3, {b + 0x1000, b + 0x2000, b + 0x3000}};
    synth_stack alloc = {pv->id_alloc, 2, {b + 0x1100, b + 0x2000}};
    synth_stack raw = {pv->id_raw, 1, {0x7f0000000010}}; /* in no mapping: compared as is */
    st[0] = parse;
    st[1] = alloc;
    st[2] = raw;
    synth_mapping m = {b + 0x1000, b + 0x9000, b, LIB, "\x01\x02\x03\x04", 4};
    *map = m;
}

/* Blocks: parse 10 x 100, alloc n_alloc x 1000, raw n_raw x 40, 2 x 64 without stack, one
 * quarantined 24-byte block from parse, and free holes between some of them. */
static size_t make_blocks(const process_view *pv, synth_block *out, int n_alloc, int n_raw)
{
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        out[n++] = (synth_block){100, RPD_STATE_USED, pv->id_parse};
    out[n++] = (synth_block){200, RPD_STATE_FREE, 0};
    for (int i = 0; i < n_alloc; i++)
        out[n++] = (synth_block){1000, RPD_STATE_USED, pv->id_alloc};
    for (int i = 0; i < n_raw; i++)
        out[n++] = (synth_block){40, RPD_STATE_USED, pv->id_raw};
    out[n++] = (synth_block){64, RPD_STATE_USED, 0};
    out[n++] = (synth_block){300, RPD_STATE_FREE, 0};
    out[n++] = (synth_block){64, RPD_STATE_USED, 0};
    out[n++] = (synth_block){24, RPD_STATE_QUARANTINED, pv->id_parse};
    return n;
}

static void write_view(const process_view *pv, int n_alloc, int n_raw, uint64_t pid, const char *path)
{
    synth_stack st[3];
    synth_mapping map;
    synth_block blocks[64];
    make_stacks(pv, st, &map);
    size_t n = make_blocks(pv, blocks, n_alloc, n_raw);
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = pid, .region_base = pv->region_base, .blocks = blocks,
                        .nblocks = n, .stacks = st, .nstacks = 3, .maps = &map, .nmaps = 1};
    REQUIRE(synth_write(&s, path) == 0);
}

static void test_sites(void)
{
    process_view a = {0x555500000000, 0x10000000, 7, 9, 12};
    const char *path = tmp_path("sites.rpd");
    write_view(&a, 4, 3, 100, path);
    tool_run r;
    rpdump_run(&r, "check", path, NULL);
    CHECKF(r.status == 0, "synthetic dump fails check:\n%s%s", r.out, r.err);
    tool_run_free(&r);

    jv *v = rpdump_json(&r, "sites", "--json", "--symbolizer", "none", path, NULL);
    REQUIRE(v);
    CHECK(r.status == 0);
    CHECK(!strcmp(jv_str(jv_get(v, "bytes_are")), "requested"));
    CHECK(jv_u64(jv_get(v, "total_sites")) == 4);
    /* ranked by bytes: alloc 4000, parse 1000, no stack 128, raw 120 */
    CHECK(jv_u64(jv_path(v, "sites.0.stack")) == 9 && jv_u64(jv_path(v, "sites.0.blocks")) == 4 &&
          jv_u64(jv_path(v, "sites.0.bytes")) == 4000);
    CHECK(jv_u64(jv_path(v, "sites.1.stack")) == 7 && jv_u64(jv_path(v, "sites.1.blocks")) == 10 &&
          jv_u64(jv_path(v, "sites.1.bytes")) == 1000);
    CHECK(!strcmp(jv_str(jv_path(v, "sites.2.stack")), "none") && jv_u64(jv_path(v, "sites.2.bytes")) == 128);
    CHECK(jv_u64(jv_path(v, "sites.3.stack")) == 12 && jv_u64(jv_path(v, "sites.3.blocks")) == 3 &&
          jv_u64(jv_path(v, "sites.3.bytes")) == 120);
    CHECK(jv_u64(jv_path(v, "sites.1.usable_bytes")) == 10 * (synth_block_size(100) - 48));
    CHECK(jv_u64(jv_path(v, "sites.1.block_bytes")) == 10 * synth_block_size(100));
    /* frames: module + offset from the dumped mapping; the unmapped pc stands alone */
    const jv *f = jv_path(v, "sites.1.frames");
    CHECK(jv_len(f) == 3);
    CHECK(!strcmp(jv_str(jv_get(jv_at(f, 0), "module")), LIB));
    CHECK(!strcmp(jv_str(jv_get(jv_at(f, 0), "offset")), "0x1000"));
    CHECK(!strcmp(jv_str(jv_get(jv_at(f, 2), "pc")), "0x555500003000"));
    CHECK(jv_get(jv_path(v, "sites.3.frames.0"), "module") == NULL);
    jv_free(v);
    tool_run_free(&r);

    /* text: symbolisation falls back to module + offset (the library does not exist) */
    rpdump_run(&r, "sites", path, NULL);
    CHECK(r.status == 0 && strstr(r.out, "stack 9: 4 blocks") && strstr(r.out, "libapp.so+0x1100") &&
          strstr(r.out, "(no stack): 2 blocks"));
    tool_run_free(&r);

    /* --state quarantined: the one quarantined block; --limit, --frames */
    v = rpdump_json(&r, "sites", "--json", "--state", "quarantined", path, NULL);
    CHECK(v && jv_len(jv_get(v, "sites")) == 1 && jv_u64(jv_path(v, "sites.0.stack")) == 7 &&
          jv_u64(jv_path(v, "sites.0.bytes")) == 24);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "sites", "--json", "--limit", "1", "--frames", "1", path, NULL);
    CHECK(v && jv_len(jv_get(v, "sites")) == 1 && jv_len(jv_path(v, "sites.0.frames")) == 1 &&
          jv_u64(jv_get(v, "total_sites")) == 4);
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "sites", "--limit", "2", path, NULL);
    CHECK(strstr(r.out, "... 2 more sites"));
    tool_run_free(&r);

    /* blocks --site, summary of a debug dump */
    v = rpdump_json(&r, "blocks", "--json", "--site", "9", path, NULL);
    CHECK(v && jv_u64(jv_get(v, "matched")) == 4 && jv_u64(jv_path(v, "blocks.0.requested")) == 1000 &&
          jv_u64(jv_path(v, "blocks.0.alloc_stack")) == 9);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "summary", "--json", path, NULL);
    CHECK(v && !strcmp(jv_str(jv_get(v, "flavour")), "debug"));
    CHECK(jv_u64(jv_path(v, "heaps.0.live.requested_bytes")) == 4000 + 1000 + 120 + 128);
    CHECK(jv_u64(jv_path(v, "heaps.0.quarantine.blocks")) == 1 && jv_path(v, "heaps.0.quarantine.enabled")->boolean);
    jv_free(v);
    tool_run_free(&r);

    /* A block naming a stack the dump does not have: its own site, and a check failure. */
    synth_stack st[3];
    synth_mapping map;
    make_stacks(&a, st, &map);
    synth_block blocks[] = {{10, RPD_STATE_USED, 7}, {10, RPD_STATE_USED, 99}};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 1, .region_base = a.region_base, .blocks = blocks,
                        .nblocks = 2, .stacks = st, .nstacks = 3, .maps = &map, .nmaps = 1};
    const char *unknown = tmp_path("unknown.rpd");
    REQUIRE(synth_write(&s, unknown) == 0);
    v = rpdump_json(&r, "sites", "--json", unknown, NULL);
    CHECK(v && jv_len(jv_get(v, "sites")) == 2);
    int unknown_seen = 0;
    for (size_t i = 0; v && i < jv_len(jv_get(v, "sites")); i++) {
        const jv *site = jv_at(jv_get(v, "sites"), i);
        if (!strcmp(jv_str(jv_get(site, "stack")), "unknown"))
            unknown_seen = jv_u64(jv_get(site, "blocks")) == 1;
    }
    CHECK(unknown_seen);
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "check", unknown, NULL);
    CHECK(r.status == 1 && strstr(r.out, "FS1:") && strstr(r.out, "stack 99"));
    tool_run_free(&r);
}

static void test_diff(void)
{
    /* Two processes: other library base, other heap address, other stack ids. */
    process_view a = {0x555500000000, 0x10000000, 7, 9, 12};
    process_view b = {0x5600aa000000, 0x7f1200000000, 21, 22, 23};
    const char *pa = tmp_path("a.rpd"), *pb = tmp_path("b.rpd");
    write_view(&a, 4, 3, 100, pa);
    write_view(&b, 9, 2, 200, pb); /* alloc leaks 5 more blocks; raw shrinks by one */

    tool_run r;
    jv *v = rpdump_json(&r, "diff", "--json", "--symbolizer=none", pa, pb, NULL);
    REQUIRE(v);
    CHECK(r.status == 0);
    CHECKF(jv_u64(jv_get(v, "changed_sites")) == 1 && jv_len(jv_get(v, "sites")) == 1, "diff found %llu sites:\n%s",
           (unsigned long long)jv_u64(jv_get(v, "changed_sites")), r.out);
    const jv *s = jv_path(v, "sites.0");
    CHECK(jv_u64(jv_get(s, "stack")) == 22 && !strcmp(jv_str(jv_get(s, "stack_from")), "b"));
    CHECK(jv_u64(jv_get(s, "blocks_a")) == 4 && jv_u64(jv_get(s, "blocks_b")) == 9);
    CHECK(jv_u64(jv_get(s, "bytes_a")) == 4000 && jv_u64(jv_get(s, "bytes_b")) == 9000);
    CHECK(!strcmp(jv_get(s, "delta_bytes")->text, "5000") && !strcmp(jv_get(s, "delta_blocks")->text, "5"));
    CHECK(!strcmp(jv_str(jv_get(jv_at(jv_get(s, "frames"), 0), "offset")), "0x1100"));
    CHECK(!strcmp(jv_get(v, "delta_bytes")->text, "4960"));
    jv_free(v);
    tool_run_free(&r);

    rpdump_run(&r, "diff", pa, pb, NULL);
    CHECKF(r.status == 0 && strstr(r.out, "1 site grew") && strstr(r.out, "stack 22 (of B): +5000 bytes, +5 blocks"),
           "diff text:\n%s", r.out);
    tool_run_free(&r);

    /* --all also shows what shrank */
    v = rpdump_json(&r, "diff", "--json", "--all", pa, pb, NULL);
    CHECK(v && jv_u64(jv_get(v, "changed_sites")) == 2);
    CHECK(v && !strcmp(jv_path(v, "sites.1.delta_bytes")->text, "-40") && jv_u64(jv_path(v, "sites.1.stack")) == 23);
    jv_free(v);
    tool_run_free(&r);

    /* A dump against itself: nothing grew. */
    v = rpdump_json(&r, "diff", "--json", pa, pa, NULL);
    CHECK(v && jv_u64(jv_get(v, "changed_sites")) == 0 && jv_len(jv_get(v, "sites")) == 0);
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "diff", pa, NULL);
    CHECK(r.status == 64);
    tool_run_free(&r);
}

/* A dump of "program" exe whose main executable's mapping carries build-id byte `id` (0: the
 * dump has no mapping for the executable). */
static void write_program(const char *path, const char *exe, uint8_t id)
{
    synth_stack st = {5, 1, {0x400100}};
    synth_mapping m = {0x400000, 0x500000, 0, exe, &id, 1};
    synth_block blocks[] = {{10, RPD_STATE_USED, 5}};
    synth_dump s = {.debug = 1, .heap_name = "app", .pid = 1, .region_base = 0x10000000, .blocks = blocks,
                    .nblocks = 1, .stacks = &st, .nstacks = 1, .maps = &m, .nmaps = id ? 1 : 0, .exe = exe};
    REQUIRE(synth_write(&s, path) == 0);
}

/* diff warns when its dumps come from different programs: build-ids decide when both dumps
 * have them (one build installed under two paths is one program), else the paths. */
static void test_diff_programs(void)
{
    static const struct {
        const char *exe_a, *exe_b;
        uint8_t id_a, id_b;
        int same;
    } cases[] = {
        {"/opt/a/app", "/opt/b/app", 0xaa, 0xaa, 1}, /* same build, two paths */
        {"/opt/app", "/opt/app", 0xaa, 0xbb, 0},     /* rebuilt in place */
        {"/opt/app", "/opt/app", 0, 0, 1},           /* no build-ids: the paths agree */
        {"/opt/app", "/opt/other", 0, 0, 0},
    };
    const char *pa = tmp_path("prog_a.rpd"), *pb = tmp_path("prog_b.rpd");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_program(pa, cases[i].exe_a, cases[i].id_a);
        write_program(pb, cases[i].exe_b, cases[i].id_b);
        tool_run r;
        jv *v = rpdump_json(&r, "diff", "--json", pa, pb, NULL);
        REQUIRE(v);
        int warned = strstr(r.err, "rpdump: warning: the dumps come from different programs") != NULL;
        CHECKF(r.status == 0 && jv_get(v, "same_program")->boolean == cases[i].same && warned == !cases[i].same &&
                   jv_len(jv_get(v, "warnings")) == (size_t)!cases[i].same,
               "case %zu: status %d, same_program %d, stderr: %s", i, r.status, jv_get(v, "same_program")->boolean,
               r.err);
        jv_free(v);
        tool_run_free(&r);
        rpdump_run(&r, "diff", pa, pb, NULL);
        CHECK(r.status == 0 && (strstr(r.out, "warning: the dumps come from different programs") != NULL) ==
                                   !cases[i].same);
        if (cases[i].id_b == 0xbb)
            CHECKF(strstr(r.out, "build-id aa;") && strstr(r.out, "build-id bb)"), "%s", r.out);
        tool_run_free(&r);
    }
}

/* Symbolisation: a synthetic stack made of this program's own functions, with the mapping a
 * real dump recorded for it. With the right build-id the symboliser names the functions;
 * with another build-id, rpdump refuses to trust the file and prints module + offset. */
__attribute__((noinline)) void *marker_allocation_site(rp_heap *h)
{
    void *p = rp_alloc(h, 77, 0);
    __asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
    return p;
}

int main(int argc, char **argv);

static int have_symbolizer(void)
{
    return access("/usr/bin/llvm-symbolizer", X_OK) == 0 || access("/usr/bin/addr2line", X_OK) == 0;
}

/* The build-id readelf sees in this executable, as hex; "" if readelf is not there. */
static void readelf_build_id(char *hex, size_t len)
{
    hex[0] = 0;
    char exe[4096], cmd[4200];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = 0;
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", exe);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "Build ID: ");
        if (at && sscanf(at + 10, "%127[0-9a-f]", hex) == 1 && strlen(hex) < len)
            break;
        hex[0] = 0;
    }
    pclose(f);
}

/* Dumps a heap holding a block from marker_allocation_site to tmp/NAME and opens it in d;
 * returns the file's bytes (free them after rpd_close). */
static uint8_t *open_real_dump(const char *name, rpd_dump *d)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(marker_allocation_site(h));
    const char *real = tmp_path(name);
    int fd = open(real, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
    rp_heap_destroy(h);
    size_t len;
    uint8_t *buf = read_file(real, &len);
    REQUIRE(buf);
    rpd_source src;
    rpd_source_memory(&src, buf, len);
    rpd_error err = {0, ""};
    REQUIRE(rpd_open(d, &src, 0, &err) == 0);
    return buf;
}

/* A real dump records this executable's mapping with its build-id (what lets rpdump tell a
 * rebuilt binary from the one that ran), equal to the one in the ELF file. */
static void test_build_id_recorded(void)
{
    static rpd_dump d;
    uint8_t *buf = open_real_dump("buildid.rpd", &d);
    const rpd_mapping_info *mi = rpd_mapping_of(&d, (uint64_t)(uintptr_t)main + 8);
    REQUIRE(mi);
    CHECKF(mi->m.build_id_len >= 8, "the executable's mapping has a %u-byte build-id", (unsigned)mi->m.build_id_len);
    char want[128], have[129] = "";
    readelf_build_id(want, sizeof want);
    for (unsigned i = 0; i < mi->m.build_id_len && 2 * i + 2 < sizeof have; i++)
        snprintf(have + 2 * i, 3, "%02x", mi->build_id[i]);
    if (want[0])
        CHECKF(strcmp(want, have) == 0, "dump build-id %s, readelf says %s", have, want);
    else
        printf("no readelf: build-id recorded (%s), not compared\n", have);
    rpd_close(&d);
    free(buf);
}

static void test_symbolize(void)
{
    if (!have_symbolizer()) {
        printf("no llvm-symbolizer or addr2line: symbolisation not tested\n");
        return;
    }
    static rpd_dump d;
    uint8_t *buf = open_real_dump("real.rpd", &d);
    uint64_t pc_site = (uint64_t)(uintptr_t)marker_allocation_site + 8, pc_main = (uint64_t)(uintptr_t)main + 8;
    const rpd_mapping_info *mi = rpd_mapping_of(&d, pc_site);
    REQUIRE(mi && rpd_mapping_of(&d, pc_main) == mi);
    synth_mapping m = {mi->m.start, mi->m.end, mi->m.load_bias, mi->path, mi->build_id, mi->m.build_id_len};
    synth_stack st = {3, 2, {pc_site, pc_main}};
    synth_block blocks[] = {{77, RPD_STATE_USED, 3}};
    synth_dump s = {.debug = 1, .heap_name = "sym", .pid = 1, .region_base = 0x10000000, .blocks = blocks,
                        .nblocks = 1, .stacks = &st, .nstacks = 1, .maps = &m, .nmaps = 1};
    const char *path = tmp_path("sym.rpd");
    REQUIRE(synth_write(&s, path) == 0);
    tool_run r;
    jv *v = rpdump_json(&r, "sites", "--json", path, NULL);
    CHECKF(v && !strcmp(jv_str(jv_path(v, "sites.0.frames.0.function")), "marker_allocation_site") &&
               !strcmp(jv_str(jv_path(v, "sites.0.frames.1.function")), "main"),
           "symbolised frames:\n%s\n%s", r.out, r.err);
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "sites", path, NULL);
    CHECK(strstr(r.out, " in marker_allocation_site") != NULL);
    tool_run_free(&r);
    v = rpdump_json(&r, "sites", "--json", "--symbolizer", "/usr/bin/addr2line", path, NULL);
    CHECK(v && !strcmp(jv_str(jv_path(v, "sites.0.frames.0.function")), "marker_allocation_site"));
    jv_free(v);
    tool_run_free(&r);

    /* Another build-id: not the file that ran. (gcc's driver always gives a GNU build-id;
     * lld gives one only with --build-id.) */
    if (!mi->m.build_id_len) {
        printf("the test binary has no build-id: build-id mismatch not tested\n");
        rpd_close(&d);
        free(buf);
        return;
    }
    uint8_t other[64];
    memcpy(other, mi->build_id, mi->m.build_id_len);
    other[0] ^= 0xff;
    m.build_id = other;
    REQUIRE(synth_write(&s, path) == 0);
    v = rpdump_json(&r, "sites", "--json", path, NULL);
    CHECK(v && jv_path(v, "sites.0.frames.0.function") == NULL && jv_path(v, "sites.0.frames.0.module") != NULL);
    jv_free(v);
    tool_run_free(&r);
    rpd_close(&d);
    free(buf);
}

/* Real release dumps: every block is in the "no stack" site; a planted leak shows there. */
static void test_diff_live_heap(void)
{
    rp_heap *h = rp_heap_create(NULL);
    for (int i = 0; i < 50; i++)
        REQUIRE(rp_alloc(h, 100, 0));
    const char *pa = tmp_path("live_a.rpd"), *pb = tmp_path("live_b.rpd");
    int fd = open(pa, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
    size_t leaked = 0;
    for (int i = 0; i < 30; i++) {
        void *p = rp_alloc(h, 500, 0);
        leaked += rp_usable_size(p);
        rp_free(rp_alloc(h, 64, 0)); /* churn that leaves nothing */
    }
    fd = open(pb, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
    tool_run r;
    jv *v = rpdump_json(&r, "diff", "--json", pa, pb, NULL);
    CHECK(v && jv_len(jv_get(v, "sites")) == 1 && !strcmp(jv_str(jv_path(v, "sites.0.site")), "none"));
    CHECK(v && jv_u64(jv_path(v, "sites.0.blocks_b")) - jv_u64(jv_path(v, "sites.0.blocks_a")) == 30);
    CHECK(v && strtoll(jv_path(v, "sites.0.delta_bytes")->text, NULL, 10) == (long long)leaked);
    jv_free(v);
    tool_run_free(&r);
    rp_heap_destroy(h);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    test_sites();
    test_diff();
    test_diff_programs();
    test_build_id_recorded();
    test_symbolize();
    test_diff_live_heap();
    TEST_MAIN_END();
}
