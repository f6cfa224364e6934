/* Dump format compatibility (debug/DUMP_FORMAT.md, "Compatibility"): this writer's files are
 * version 1.4 (1.4 named the interval and peak dump reasons), which may carry a samples section
 * (since 1.3, the heap profiler's; tested in dump_samples_test), whose process record carries the dump time's nanoseconds (since 1.2)
 * and whose heap record ends with purge_delay_ms (368 bytes, since 1.1); rpdump still reads
 * 1.2 files, 1.1 files (no nanoseconds) and 1.0 files, whose heap record stops before
 * purge_delay_ms (360 bytes), and says a field is not recorded instead of inventing a value.
 * The same synthetic heap is written all four ways, and a real heap's dump carries its
 * configured delay and a time. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_synth.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"

static const synth_block blocks[] = {
    {100, RPD_STATE_USED, 0}, {40, RPD_STATE_FREE, 0}, {3000, RPD_STATE_USED, 0}, {64, RPD_STATE_USED, 0}};

/* The record_bytes of the heap section of the dump at path (0 if there is none). */
static uint32_t heap_record_bytes(const char *path)
{
    size_t len = 0;
    uint8_t *buf = read_file(path, &len);
    REQUIRE(buf);
    uint32_t bytes = 0;
    for (size_t i = 0; i < dump_section_count(buf, len); i++) {
        rpd_entry e;
        rpd_entry_decode(buf + dump_entry_offset(buf, len, i), &e);
        if (e.type == RPD_SEC_HEAP)
            bytes = e.record_bytes;
    }
    free(buf);
    return bytes;
}

/* The JSON text of v (a number or null). */
static const char *number_or_null(const jv *v)
{
    return !v ? "(missing)" : v->type == JV_NULL ? "null" : v->type == JV_NUMBER ? v->text : "(not a number)";
}

/* summary --json of path: its version, the dump's nanoseconds (NULL: any number), the
 * heap's purge delay ("null" when not recorded) and live blocks. */
static void check_summary(const char *path, const char *version, const char *time_ns, const char *delay,
                          uint64_t live_blocks)
{
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", path, NULL);
    CHECKF(r.status == 0, "summary of %s: status %d: %s", path, r.status, r.err);
    REQUIRE(v);
    CHECKF(!strcmp(jv_str(jv_path(v, "version")), version), "%s: version %s", path, jv_str(jv_path(v, "version")));
    /* no synthetic dump carries a samples section: null (older dumps cannot have one); this
     * writer's always does (empty without a sample source) */
    const jv *samples = jv_path(v, "samples");
    CHECKF(samples && (time_ns ? samples->type == JV_NULL : jv_path(v, "samples.count") != NULL), "%s: samples",
           path);
    const char *ns = number_or_null(jv_path(v, "time_ns"));
    CHECKF(time_ns ? !strcmp(ns, time_ns) : jv_path(v, "time_ns")->type == JV_NUMBER, "%s: time_ns %s", path, ns);
    const jv *d = jv_path(v, "heaps.0.config.purge_delay_ms");
    REQUIRE(d);
    const char *got = d->type == JV_NULL ? "null" : d->type == JV_NUMBER ? d->text : "(not a number)";
    CHECKF(!strcmp(got, delay), "%s: purge_delay_ms %s, expected %s", path, got, delay);
    CHECK(jv_u64(jv_path(v, "heaps.0.live.blocks")) == live_blocks);
    jv_free(v);
    tool_run_free(&r);
    /* And the offline checker finds nothing wrong with either version. */
    CHECK(rpdump_run(&r, "check", path, NULL) == 0 && r.status == 0);
    tool_run_free(&r);
}

static void test_synthetic_1_0_to_1_3(void)
{
    synth_dump s = {.debug = 1, .heap_name = "compat", .pid = 42, .region_base = 0x7f0000000000ull, .blocks = blocks,
                        .nblocks = 4, .purge_delay_ms = 5000};
    s.time_ns = 123456789;
    const char *now = tmp_path("compat-1.2.rpd");
    REQUIRE(synth_write(&s, now) == 0);
    CHECK(heap_record_bytes(now) == RPD_HEAP_BYTES && RPD_HEAP_BYTES == 368);
    check_summary(now, "1.4", "123456789", "5000", 3);

    s.version_1_2 = 1;
    const char *v12 = tmp_path("compat-1.2.rpd");
    REQUIRE(synth_write(&s, v12) == 0);
    check_summary(v12, "1.2", "123456789", "5000", 3);

    s.version_1_2 = 0;
    s.version_1_1 = 1;
    const char *v11 = tmp_path("compat-1.1.rpd");
    REQUIRE(synth_write(&s, v11) == 0);
    check_summary(v11, "1.1", "null", "5000", 3);

    s.version_1_1 = 0;
    s.version_1_0 = 1;
    const char *old = tmp_path("compat-1.0.rpd");
    REQUIRE(synth_write(&s, old) == 0);
    CHECK(heap_record_bytes(old) == RPD_HEAP_BYTES_1_0 && RPD_HEAP_BYTES_1_0 == 360);
    check_summary(old, "1.0", "null", "null", 3);
}

/* A 1.2 process record with 10^9 nanoseconds or more is malformed (exit status 2). */
static void test_bad_nanoseconds(void)
{
    synth_dump s = {.debug = 1, .heap_name = "compat", .pid = 42, .region_base = 0x7f0000000000ull, .blocks = blocks,
                        .nblocks = 4, .purge_delay_ms = 5000};
    s.time_ns = 1000000000u;
    const char *path = tmp_path("compat-bad-ns.rpd");
    REQUIRE(synth_write(&s, path) == 0);
    tool_run r;
    rpdump_run(&r, "summary", path, NULL);
    CHECKF(r.status == 2 && strstr(r.err, "nanoseconds"), "status %d: %s", r.status, r.err);
    tool_run_free(&r);
}

static void test_real_heap_records_its_delay(void)
{
    rp_heap_config cfg = {0};
    cfg.name = "delayed";
    cfg.purge_delay_ms = 1234;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);
    void *p = rp_alloc(h, 100, 16);
    REQUIRE(p);
    const char *path = tmp_path("delayed.rpd");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    CHECK(rp_heap_dump(h, fd) == 0);
    close(fd);
    char version[8];
    snprintf(version, sizeof version, "%u.%u", RPD_VERSION_MAJOR, RPD_VERSION_MINOR);
    check_summary(path, version, NULL, "1234", 1);
    rp_free(p);
    rp_heap_destroy(h);
}

int main(int argc, char **argv)
{
    REQUIRE(argc >= 2);
    rpdump_path = argv[1];
    test_synthetic_1_0_to_1_3();
    test_bad_nanoseconds();
    test_real_heap_records_its_delay();
    TEST_MAIN_END();
}
