/* rpdump check: a dump of a healthy heap passes; corruptions planted in copies of the file
 * (and re-sealed, so they get past the checksums) are each found, named by the invariant they
 * break and the offset of the record concerned. A heap damaged in memory still gets a dump,
 * marked incomplete. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "debug/dump_format.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"
#include "tools/rpdump/dump_parser.h"

static uint8_t *dump;
static size_t dump_len;

/* The known record offsets of the healthy dump. */
typedef struct landmarks {
    uint64_t heap_record;   /* heap section */
    uint64_t used_between_free; /* a used span block with free neighbours on both sides */
    uint64_t used_span;     /* a used span block followed by another span block */
    uint64_t free_page;     /* a free page-tier block */
} landmarks;

static landmarks find_landmarks(void)
{
    landmarks l = {0, 0, 0, 0};
    rpd_source src;
    rpd_source_memory(&src, dump, dump_len);
    static rpd_dump d;
    rpd_error err = {0, ""};
    REQUIRE(rpd_open(&d, &src, 0, &err) == 0);
    l.heap_record = d.heaps[0].heap_sec->offset;
    static rpd_block_iter it;
    rpd_blocks_begin(&it, &d, &d.heaps[0]);
    rpd_block_at prev2 = {0}, prev = {0}, cur;
    while (rpd_blocks_next(&it, &cur, &err) == 1) {
        if (!l.used_between_free && prev.b.state == RPD_STATE_USED && prev.b.tier == RPD_TIER_SPAN &&
            prev2.b.state == RPD_STATE_FREE && prev2.b.tier == RPD_TIER_SPAN && cur.b.state == RPD_STATE_FREE &&
            cur.b.tier == RPD_TIER_SPAN)
            l.used_between_free = prev.offset;
        if (!l.used_span && prev.b.state == RPD_STATE_USED && prev.b.tier == RPD_TIER_SPAN && cur.b.tier == RPD_TIER_SPAN)
            l.used_span = prev.offset;
        if (!l.free_page && cur.b.state == RPD_STATE_FREE && cur.b.tier == RPD_TIER_PAGE)
            l.free_page = cur.offset;
        prev2 = prev;
        prev = cur;
    }
    rpd_close(&d);
    REQUIRE(l.used_between_free && l.used_span && l.free_page);
    return l;
}

/* Writes a copy of the dump with `change` applied and re-sealed; runs rpdump check --json. */
static jv *check_changed(void (*change)(uint8_t *buf, const landmarks *l), const landmarks *l, tool_run *r,
                         int reseal)
{
    uint8_t *copy = malloc(dump_len);
    memcpy(copy, dump, dump_len);
    change(copy, l);
    if (reseal)
        REQUIRE(dump_reseal(copy, dump_len) == 0);
    const char *path = tmp_path("changed.rpd");
    REQUIRE(write_file(path, copy, dump_len) == 0);
    free(copy);
    return rpdump_json(r, "check", "--json", path, NULL);
}

/* The violation with this invariant, or NULL. */
static const jv *violation(const jv *v, const char *invariant)
{
    const jv *all = jv_get(v, "violations");
    for (size_t i = 0; i < jv_len(all); i++)
        if (!strcmp(jv_str(jv_get(jv_at(all, i), "invariant")), invariant))
            return jv_at(all, i);
    return NULL;
}

/* Block record fields (dump_format.h): block_size at +8, state at +52. */
static void grow_block(uint8_t *buf, const landmarks *l)
{
    rpd_put64(buf + l->used_span + 8, rpd_get64(buf + l->used_span + 8) + 16);
}
static void free_a_used_block(uint8_t *buf, const landmarks *l)
{
    buf[l->used_between_free + 52] = RPD_STATE_FREE;
    /* a free block records itself as address and size */
    rpd_put64(buf + l->used_between_free + 16, rpd_get64(buf + l->used_between_free));
    rpd_put64(buf + l->used_between_free + 24, rpd_get64(buf + l->used_between_free + 8));
}
static void miscount_live_blocks(uint8_t *buf, const landmarks *l)
{
    /* heap record: counters start at +72; blocks_in_use is the third */
    rpd_put64(buf + l->heap_record + 72 + 16, rpd_get64(buf + l->heap_record + 72 + 16) + 1);
}
static void misalign_free_pages(uint8_t *buf, const landmarks *l)
{
    /* a free page block of 3 pages cannot be a buddy block */
    rpd_put64(buf + l->free_page + 8, 3 * 4096);
    rpd_put64(buf + l->free_page + 24, 3 * 4096);
}
static void flip_a_byte(uint8_t *buf, const landmarks *l) { buf[l->used_span + 3] ^= 0x40; }

static void test_planted_corruptions(void)
{
    landmarks l = find_landmarks();
    tool_run r;

    jv *v = check_changed(grow_block, &l, &r, 1);
    REQUIRE(v);
    CHECK(r.status == 1 && !jv_get(v, "ok")->boolean);
    const jv *u1 = violation(v, "FU1"), *k2 = violation(v, "FK2");
    CHECKF(u1 && jv_u64(jv_get(u1, "offset")) == l.used_span, "U1 at the grown block expected:\n%s", r.out);
    CHECKF(k2 && jv_u64(jv_get(k2, "offset")) == l.used_span + RPD_BLOCK_BYTES, "K2 at the next block expected:\n%s",
           r.out);
    CHECK(violation(v, "FH1") != NULL); /* the bytes no longer add up either */
    jv_free(v);
    tool_run_free(&r);

    v = check_changed(free_a_used_block, &l, &r, 1);
    REQUIRE(v);
    const jv *k5 = violation(v, "FK5");
    CHECKF(r.status == 1 && k5 && jv_u64(jv_get(k5, "offset")) == l.used_between_free, "K5 expected:\n%s", r.out);
    CHECK(violation(v, "FH1") && violation(v, "FI5"));
    jv_free(v);
    tool_run_free(&r);

    v = check_changed(miscount_live_blocks, &l, &r, 1);
    REQUIRE(v);
    CHECKF(r.status == 1 && jv_u64(jv_get(v, "violation_count")) == 1 && violation(v, "FH1") &&
               jv_u64(jv_get(violation(v, "FH1"), "offset")) == l.heap_record + 72,
           "exactly one H1 expected:\n%s", r.out);
    jv_free(v);
    tool_run_free(&r);

    v = check_changed(misalign_free_pages, &l, &r, 1);
    REQUIRE(v);
    const jv *d3 = violation(v, "FD3");
    CHECKF(r.status == 1 && d3 && jv_u64(jv_get(d3, "offset")) == l.free_page, "D3 expected:\n%s", r.out);
    CHECK(violation(v, "FD1") != NULL); /* the next record no longer follows */
    jv_free(v);
    tool_run_free(&r);

    /* Not re-sealed: the checksum catches it before any invariant is looked at. */
    v = check_changed(flip_a_byte, &l, &r, 0);
    CHECK(r.status == 2 && strstr(r.err, "checksum") && strstr(r.err, "offset"));
    jv_free(v);
    tool_run_free(&r);

    /* text output names invariant and offset */
    rpdump_run(&r, "check", tmp_path("changed.rpd"), NULL); /* still the flipped copy */
    CHECK(r.status == 2);
    tool_run_free(&r);
    uint8_t *copy = malloc(dump_len);
    memcpy(copy, dump, dump_len);
    miscount_live_blocks(copy, &l);
    dump_reseal(copy, dump_len);
    write_file(tmp_path("miscount.rpd"), copy, dump_len);
    free(copy);
    rpdump_run(&r, "check", tmp_path("miscount.rpd"), NULL);
    char expect[80];
    snprintf(expect, sizeof expect, "FH1: heap 'checked', offset %llu", (unsigned long long)(l.heap_record + 72));
    CHECKF(r.status == 1 && strstr(r.out, expect) && strstr(r.out, "1 violation"), "text check:\n%s", r.out);
    tool_run_free(&r);
    /* --max-errors bounds the list, not the count */
    v = check_changed(grow_block, &l, &r, 1);
    jv_free(v);
    tool_run_free(&r);
    v = rpdump_json(&r, "check", "--json", "--max-errors", "1", tmp_path("changed.rpd"), NULL);
    CHECK(v && jv_len(jv_get(v, "violations")) == 1 && jv_u64(jv_get(v, "violation_count")) > 1);
    jv_free(v);
    tool_run_free(&r);
}

/* A heap damaged in memory: the dump is still written, says so, and check reports it. */
static void test_damaged_heap(void)
{
    rp_heap *h = rp_heap_create(NULL);
    void *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = rp_alloc(h, 64, 0);
    /* Overwrite the size field of p[3]'s header (the 16 bytes before it in release). */
    ((uint32_t *)p[3])[-3] = 7;
    const char *path = tmp_path("damaged.rpd");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    CHECK(rp_heap_dump(h, fd) == 0);
    close(fd);
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", path, NULL);
    CHECK(v && r.status == 0 && jv_get(jv_path(v, "heaps.0"), "complete")->boolean == 0);
    CHECK(v && strstr(jv_str(jv_path(v, "heaps.0.incomplete_reason")), "impossible size"));
    jv_free(v);
    tool_run_free(&r);
    rpdump_run(&r, "check", path, NULL);
    CHECK(r.status == 1 && strstr(r.out, "FW1:"));
    tool_run_free(&r);
    /* The heap is beyond repair; unmap it without touching its blocks. */
    rp_heap_destroy(h);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    rp_heap_config cfg = {0};
    cfg.name = "checked";
    rp_heap *h = rp_heap_create(&cfg);
    void *p[200];
    for (int i = 0; i < 200; i++)
        p[i] = rp_alloc(h, 24 + (i % 7) * 40, 0);
    for (int i = 0; i < 200; i += 2)
        rp_free(p[i]);
    for (int i = 0; i < 4; i++)
        REQUIRE(rp_alloc(h, 200 << 10, 0));
    const char *path = tmp_path("healthy.rpd");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
    dump = read_file(path, &dump_len);
    REQUIRE(dump);
    tool_run r;
    rpdump_run(&r, "check", path, NULL);
    CHECKF(r.status == 0, "healthy heap fails check:\n%s%s", r.out, r.err);
    tool_run_free(&r);
    test_planted_corruptions();
    test_damaged_heap();
    free(dump);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
