/* Malformed dumps: every truncation point, every flipped byte, absurd counts, sizes and
 * offsets (re-sealed so they pass the checksums), and random damage. The reader must answer
 * each with a clean error naming an offset — in process (rpd_parse_buffer, every case; run
 * this test under --config=asan too) and through rpdump (exit status 2, message on stderr) —
 * and never crash, hang or use unbounded memory. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"
#include "tools/rpdump/dump_parser.h"

static uint8_t *dump;
static size_t dump_len;

/* In process: must fail with a message; returns the error. */
static rpd_error parse_fails(const uint8_t *buf, size_t len)
{
    rpd_error err = {0, ""};
    int rc = rpd_parse_buffer(buf, len, (size_t)64 << 20, NULL, &err);
    if (rc != -1 || !err.message[0])
        fprintf(stderr, "parse of %zu bytes: rc %d, message '%s'\n", len, rc, err.message);
    CHECK(rc == -1 && err.message[0]);
    return err;
}

/* Through rpdump: exit status 2 and "offset N" on stderr. */
static void rpdump_fails(const uint8_t *buf, size_t len, const char *expect_message, const rpd_error *err)
{
    const char *path = tmp_path("bad.rpd");
    REQUIRE(write_file(path, buf, len) == 0);
    tool_run r;
    rpdump_run(&r, "summary", path, NULL);
    char offset[64];
    snprintf(offset, sizeof offset, "offset %llu (", (unsigned long long)err->offset);
    CHECKF(r.status == 2 && strstr(r.err, offset) && (!expect_message || strstr(r.err, expect_message)),
           "rpdump on a %zu-byte damaged dump: status %d, stderr: %s (expected '%s' and '%s')", len, r.status, r.err,
           offset, expect_message ? expect_message : "");
    tool_run_free(&r);
}

static void test_truncations(void)
{
    /* Every prefix fails in process; rpdump is run on every 16th and around each boundary. */
    size_t nsections = dump_section_count(dump, dump_len);
    uint64_t table = dump_entry_offset(dump, dump_len, 0);
    for (size_t len = 0; len < dump_len; len++) {
        rpd_error err = parse_fails(dump, len);
        int boundary = len < RPD_HEADER_BYTES + 2 || len + RPD_FOOTER_BYTES + 2 > dump_len || len == table;
        for (size_t i = 0; i < nsections && !boundary; i++) {
            rpd_entry e;
            rpd_entry_decode(dump + dump_entry_offset(dump, dump_len, i), &e);
            boundary = len + 1 >= e.offset && len <= e.offset + 1;
        }
        if (boundary || len % 16 == 0)
            rpdump_fails(dump, len, len < 8 ? "not a rampart dump" : NULL, &err);
    }
}

static void test_flipped_bytes(void)
{
    /* Every byte is covered by a magic, a size or a checksum: any change is detected. */
    uint8_t *copy = malloc(dump_len);
    for (size_t at = 0; at < dump_len; at++) {
        memcpy(copy, dump, dump_len);
        copy[at] ^= (uint8_t)(1u << (at % 8));
        rpd_error err = parse_fails(copy, dump_len);
        if (at % 97 == 0)
            rpdump_fails(copy, dump_len, NULL, &err);
    }
    free(copy);
}

/* ---- absurd values, re-sealed ------------------------------------------------------------ */

/* Index of the first section of this type (and heap, unless any_heap). */
static size_t section(const uint8_t *buf, size_t len, uint32_t type, rpd_entry *out)
{
    size_t n = dump_section_count(buf, len);
    for (size_t i = 0; i < n; i++) {
        rpd_entry_decode(buf + dump_entry_offset(buf, len, i), out);
        if (out->type == type)
            return i;
    }
    REQUIRE(!"section not found");
    return 0;
}

typedef struct absurd {
    const char *what;
    void (*change)(uint8_t *buf, size_t len);
    const char *message; /* expected in the error */
} absurd;

static void set_entry_field(uint8_t *buf, size_t len, uint32_t type, size_t field, uint64_t v, int bytes)
{
    rpd_entry e;
    size_t i = section(buf, len, type, &e);
    uint8_t *raw = buf + dump_entry_offset(buf, len, i) + field;
    if (bytes == 8)
        rpd_put64(raw, v);
    else
        rpd_put32(raw, (uint32_t)v);
}

static uint8_t *first_record(uint8_t *buf, size_t len, uint32_t type)
{
    rpd_entry e;
    section(buf, len, type, &e);
    return buf + e.offset;
}

static void version_2(uint8_t *b, size_t n) { (void)n, rpd_put16(b + 8, 2), rpd_put16(b + 10, 0); }
static void big_endian(uint8_t *b, size_t n) { (void)n, b[12] = 2; }
static void header_64(uint8_t *b, size_t n) { (void)n, rpd_put16(b + 14, 64); }
static void footer_size(uint8_t *b, size_t n) { rpd_put64(b + n - RPD_FOOTER_BYTES + 8, n + 100); }
static void many_sections(uint8_t *b, size_t n) { rpd_put32(b + n - RPD_FOOTER_BYTES + 16, 0xffffffffu); }
static void table_at_zero(uint8_t *b, size_t n) { rpd_put64(b + n - RPD_FOOTER_BYTES, 0); }
static void entry_shifted(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_REGIONS, 8, first_record(b, n, RPD_SEC_REGIONS) - b + 8, 8); }
static void entry_huge(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_BLOCKS, 16, (uint64_t)1 << 62, 8); }
static void count_huge(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_BLOCKS, 24, (uint64_t)1 << 60, 8); }
static void record_tiny(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_BLOCKS, 32, 8, 4); }
static void heap_variable(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_HEAP, 32, 0, 4); }
static void heap_5000(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_BLOCKS, 4, 5000, 4); }
static void orphan(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_REGIONS, 4, 1, 4); }
static void no_process(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_PROCESS, 0, 99, 4); }
static void block_state(uint8_t *b, size_t n) { first_record(b, n, RPD_SEC_BLOCKS)[RPD_BLOCK_BYTES + 52] = 9; }
static void block_tier(uint8_t *b, size_t n) { first_record(b, n, RPD_SEC_BLOCKS)[53] = 3; }
static void block_region(uint8_t *b, size_t n) { rpd_put32(first_record(b, n, RPD_SEC_BLOCKS) + 48, 7); }
static void block_align(uint8_t *b, size_t n) { first_record(b, n, RPD_SEC_BLOCKS)[54] = 200; }
static void region_kind(uint8_t *b, size_t n) { rpd_put32(first_record(b, n, RPD_SEC_REGIONS) + 64, 9); }
static void region_pages(uint8_t *b, size_t n) { rpd_put64(first_record(b, n, RPD_SEC_REGIONS) + 8, (uint64_t)1 << 60); }
static void class_tier(uint8_t *b, size_t n) { rpd_put32(first_record(b, n, RPD_SEC_CLASSES), 7); }
static void class_range(uint8_t *b, size_t n) { rpd_put64(first_record(b, n, RPD_SEC_CLASSES) + 8, (uint64_t)1 << 40); }
static void mapping_path(uint8_t *b, size_t n) { rpd_put16(first_record(b, n, RPD_SEC_MAPPINGS) + 36, 60000); }
static void mapping_build_id(uint8_t *b, size_t n) { first_record(b, n, RPD_SEC_MAPPINGS)[38] = 200; }
static void mapping_range(uint8_t *b, size_t n) { rpd_put64(first_record(b, n, RPD_SEC_MAPPINGS) + 8, 0); }
static void mapping_count(uint8_t *b, size_t n) { set_entry_field(b, n, RPD_SEC_MAPPINGS, 24, 3, 8); }
static void mapping_padding(uint8_t *b, size_t n)
{
    rpd_entry e;
    section(b, n, RPD_SEC_MAPPINGS, &e);
    for (uint8_t *m = b + e.offset; m < b + e.offset + e.length;) {
        size_t bytes = (size_t)rpd_mapping_record_bytes(m[38], rpd_get16(m + 36));
        if (bytes > (size_t)RPD_MAPPING_HEAD_BYTES + m[38] + rpd_get16(m + 36)) {
            m[bytes - 1] = 0x55;
            return;
        }
        m += bytes;
    }
    REQUIRE(!"no mapping record with padding");
}
static void bad_magic(uint8_t *b, size_t n) { (void)n, b[1] = 'X'; }

static const absurd cases[] = {
    {"newer major version", version_2, "version 2.0 is not supported"},
    {"big-endian", big_endian, "byte order"},
    {"header size", header_64, "header size"},
    {"footer file size", footer_size, "footer says"},
    {"4 billion sections", many_sections, "does not end at the footer"},
    {"table at offset 0", table_at_zero, "does not end at the footer"},
    {"section shifted", entry_shifted, "must tile"},
    {"section 2^62 bytes", entry_huge, "runs past"},
    {"2^60 blocks", count_huge, "do not make"},
    {"8-byte block records", record_tiny, "at least 56"},
    {"heap record variable", heap_variable, "expected fixed records"},
    {"heap index 5000", heap_5000, "beyond the limit"},
    {"regions of a heap that does not exist", orphan, "which has no heap section"},
    {"no process section", no_process, "no process section"},
    {"block state 9", block_state, "state 9"},
    {"block tier 3", block_tier, "tier 3"},
    {"block region 7", block_region, "names region 7"},
    {"block alignment 2^200", block_align, "alignment"},
    {"region kind 9", region_kind, "kind 9"},
    {"region of 2^60 pages", region_pages, "overflow"},
    {"class tier 7", class_tier, "tier 7"},
    {"class range inverted", class_range, "smallest size"},
    {"mapping path 60000 bytes", mapping_path, "path of 60000 bytes"},
    {"mapping build-id 200 bytes", mapping_build_id, "build-id of 200 bytes"},
    {"mapping empty range", mapping_range, "inverted"},
    {"mapping count", mapping_count, "after the last mapping"},
    {"mapping padding", mapping_padding, "non-zero padding"},
    {"bad magic", bad_magic, "not a rampart dump"},
};

static void test_absurd_values(void)
{
    uint8_t *copy = malloc(dump_len);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(copy, dump, dump_len);
        cases[i].change(copy, dump_len);
        if (cases[i].change != footer_size && cases[i].change != many_sections && cases[i].change != table_at_zero)
            REQUIRE(dump_reseal(copy, dump_len) == 0);
        else {
            /* the footer itself changed: recompute its CRC only */
            rpd_footer f;
            rpd_footer_decode(copy + dump_len - RPD_FOOTER_BYTES, &f);
            rpd_footer_encode(&f, copy + dump_len - RPD_FOOTER_BYTES);
        }
        rpd_error err = parse_fails(copy, dump_len);
        CHECKF(strstr(err.message, cases[i].message), "%s: got '%s', expected '%s'", cases[i].what, err.message,
               cases[i].message);
        rpdump_fails(copy, dump_len, cases[i].message, &err);
    }
    free(copy);

    /* Garbage after a complete dump, an empty file, a directory. */
    uint8_t *longer = calloc(1, dump_len + 10);
    memcpy(longer, dump, dump_len);
    rpd_error err = parse_fails(longer, dump_len + 10);
    CHECK(strstr(err.message, "no end marker"));
    rpdump_fails(longer, dump_len + 10, "no end marker", &err);
    free(longer);
    err = parse_fails(dump, 0);
    rpdump_fails(dump, 0, "not a rampart dump", &err);
    tool_run r;
    rpdump_run(&r, "summary", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", NULL);
    CHECK(r.status == 2 && strstr(r.err, "not a regular file"));
    tool_run_free(&r);
    rpdump_run(&r, "summary", "/nonexistent/dump.rpd", NULL);
    CHECK(r.status == 2 && strstr(r.err, "cannot open"));
    tool_run_free(&r);
}

/* Stacks: more frames than allowed, id 0; a memory cap smaller than the stack section. */
static void test_stacks(void)
{
    synth_stack stacks[2] = {{5, 2, {0x1000, 0x2000}}, {6, 1, {0x3000}}};
    synth_block blocks[1] = {{16, RPD_STATE_USED, 5}};
    synth_dump s = {.debug = 1, .heap_name = "s", .pid = 1, .region_base = 0x10000000, .blocks = blocks, .nblocks = 1,
                        .stacks = stacks, .nstacks = 2};
    const char *path = tmp_path("stacks.rpd");
    REQUIRE(synth_write(&s, path) == 0);
    size_t len;
    uint8_t *buf = read_file(path, &len);
    REQUIRE(buf);
    rpd_entry e;
    section(buf, len, RPD_SEC_STACKS, &e);
    rpd_put32(buf + e.offset + 4, 1000);
    dump_reseal(buf, len);
    rpd_error err = parse_fails(buf, len);
    CHECK(strstr(err.message, "1000 frames") && err.offset == e.offset + 4);
    rpdump_fails(buf, len, "1000 frames", &err);
    rpd_put32(buf + e.offset + 4, 2);
    rpd_put32(buf + e.offset, 0);
    dump_reseal(buf, len);
    err = parse_fails(buf, len);
    CHECK(strstr(err.message, "id 0"));
    free(buf);

    /* 25000 stacks of 8 frames: 1.8 MB of stack records; rpdump sites with a 1 MiB cap. */
    static synth_stack many[25000];
    for (uint32_t i = 0; i < 25000; i++) {
        many[i].id = i + 1;
        many[i].n = 8;
        for (unsigned k = 0; k < 8; k++)
            many[i].frames[k] = 0x400000 + i * 64 + k;
    }
    s.stacks = many;
    s.nstacks = 25000;
    REQUIRE(synth_write(&s, path) == 0);
    tool_run r;
    rpdump_run(&r, "sites", "--memory-cap", "1M", path, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "memory cap"), "memory cap: %d %s", r.status, r.err);
    tool_run_free(&r);
    rpdump_run(&r, "sites", path, NULL); /* with the default cap it works */
    CHECK(r.status == 0 && strstr(r.out, "stack 5: 1 blocks"));
    tool_run_free(&r);
}

/* Random damage, re-sealed so it reaches the structural checks: no crash, no hang. */
static void test_random_damage(void)
{
    test_rng rng = {20240611};
    uint8_t *copy = malloc(dump_len);
    size_t accepted = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, dump, dump_len);
        int changes = 1 + (int)rng_below(&rng, 4);
        for (int c = 0; c < changes; c++) {
            size_t at = RPD_HEADER_BYTES + rng_below(&rng, dump_len - RPD_HEADER_BYTES - RPD_FOOTER_BYTES);
            copy[at] = (uint8_t)rng_next(&rng);
        }
        dump_reseal(copy, dump_len);
        rpd_error err = {0, ""};
        size_t violations = 0;
        if (rpd_parse_buffer(copy, dump_len, (size_t)64 << 20, &violations, &err) == 0)
            accepted++; /* damage in a field the format does not constrain: check's business */
        else
            CHECK(err.message[0] != 0);
    }
    printf("random damage: %zu of 3000 damaged dumps were well-formed (check's business)\n", accepted);
    free(copy);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    /* A small real dump: a few blocks. */
    rp_heap_config cfg = {0};
    cfg.name = "small";
    rp_heap *h = rp_heap_create(&cfg);
    for (int i = 0; i < 6; i++)
        REQUIRE(rp_alloc(h, 40 + 100 * i, 0));
    REQUIRE(rp_alloc(h, 100 << 10, 0));
    const char *path = tmp_path("small.rpd");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
    dump = read_file(path, &dump_len);
    REQUIRE(dump);
    rpd_error err = {0, ""};
    size_t violations = 1;
    REQUIRE(rpd_parse_buffer(dump, dump_len, 0, &violations, &err) == 0 && violations == 0);
    printf("small dump: %zu bytes\n", dump_len);
    test_truncations();
    test_flipped_bytes();
    test_absurd_values();
    test_stacks();
    test_random_damage();
    free(dump);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
