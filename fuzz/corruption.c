/* corruption: a valid sequence of heap operations on the debug flavour, then exactly one
 * program bug chosen by the input, which the debug runtime must report exactly:
 *   overflow by k bytes (1..64) past the requested size, underflow by k bytes before the
 *   block, a write after free at the start, middle or end of a block still in quarantine or
 *   already out of it, a double free, the free of an interior pointer, of a stack or global
 *   address, and the realloc of a freed pointer.
 * The runtime runs with on_error=continue; reports are captured in-process
 * (report_capture.h): the structured report with its history, and the text it printed.
 *
 * Expectations. Before the fault: no report at all, after every operation; the quarantine
 * holds exactly the blocks a FIFO model under the byte budget says (quarantine_model.h);
 * live blocks keep their pattern and rp_usable_size is the size asked. The fault: exactly
 * one report, of the right kind, naming the first bad byte (or the pointer passed), the
 * block concerned and the offset from its start, with the block's history (the size it was
 * asked for, its free stack for a freed block); the printed report says the same. Faults
 * that leave damage in memory (overflow, underflow, writes after free) must also be named by
 * rp_heap_check before anything touches them — a write after free out of quarantine is one
 * only the checker sees — and the heap must pass rp_heap_check once the harness puts the
 * bytes back (or the runtime re-poisoned them); then everything is freed cleanly.
 *
 * Input (fuzz/seeds.py writes the seeds and documents the encoding):
 *   fault[0]  the fault (low four bits, modulo 8: FAULT_*)
 *   fault[1]  its parameter: k - 1 for overflow/underflow (modulo 64); where (modulo 3: start,
 *             middle, end) and how many bytes (bits 2-3, 1..4) for writes after free; the
 *             variant for frees (double free, realloc of a freed block: bit 0 = out of
 *             quarantine; foreign free: bit 0 = a global); the offset for interior frees
 *   fault[2]  which block (a slot, or an index into the quarantine) and the byte written
 *   then operations until the input ends: an opcode byte (low four bits; 6..15 do nothing)
 *   and its arguments, little-endian (OP_*).
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug/config.h"
#include "fuzz/block_pattern.h"
#include "fuzz/expect.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/op_mutator.h"
#include "fuzz/quarantine_model.h"
#include "fuzz/report_capture.h"
#include "fuzz/size_codes.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "src/block.h"
#include "src/pagemap.h"
#include "src/region.h"

#define NSLOTS 64
#define MAX_OPS 512
#define HEAP_CAP ((size_t)32 << 20)
#define SPAN_PREFIX RP_USER_OFFSET /* a span block's header and debug metadata */

typedef struct cblock {
    unsigned char *p; /* NULL = empty slot */
    size_t size;      /* requested: what rp_usable_size must answer */
    size_t charged;   /* the core's usable size (what the quarantine charges) */
    uint64_t id;      /* pattern seed */
} cblock;

static struct {
    rp_heap *h;
    cblock slots[NSLOTS];
    uint64_t next_id;
    unsigned long op;
    const char *op_name;
    const char *fault_name;
} model;

static void where(FILE *out)
{
    fprintf(out, "corruption: operation %lu (%s), fault %s: ", model.op, model.op_name ? model.op_name : "-",
            model.fault_name ? model.fault_name : "not injected yet");
}

static void printed_reports(FILE *out)
{
    const char *text = capture_text();
    if (*text)
        fprintf(out, "printed report(s):\n%s", text);
}

/* ---- the heap as the model sees it ------------------------------------------------------ */

static void expect_no_report(void)
{
    EXPECT(capture_count() == 0, "unexpected report %s at %p: %s", rp_error_kind_name(capture_first()->kind),
           capture_first()->address, capture_first()->message);
    EXPECT(!*capture_text(), "a report was printed without being delivered");
}

static void expect_heap_ok(const char *when)
{
    char why[256];
    EXPECT(rp_heap_check(model.h, why, sizeof why) == 0, "rp_heap_check %s: %s", when, why);
    EXPECT(qmodel_matches(model.h, why, sizeof why) == 0, "quarantine %s: %s", when, why);
}

/* The core's usable size of the live block p (what the quarantine charges when it is freed). */
typedef struct find_block {
    const void *p;
    size_t usable;
} find_block;

static int find_used(const rp_block_info *b, void *arg)
{
    find_block *f = arg;
    if (b->state != RP_BLOCK_USED || b->addr != f->p)
        return 0;
    f->usable = b->size;
    return 1;
}

static size_t core_usable(const void *p)
{
    find_block f = {p, 0};
    EXPECT(rp_heap_walk(model.h, find_used, &f) == 1, "the walk does not show live block %p", p);
    return f.usable;
}

static void verify(const cblock *b, const char *when)
{
    size_t bad = pattern_find_bad(b->p, b->size, b->size, b->id);
    if (bad != PATTERN_OK)
        expect_fail("block %p (%zu bytes): byte %zu changed %s", (void *)b->p, b->size, bad, when);
}

static void adopt(int s, unsigned char *p, size_t size, uint64_t id)
{
    EXPECT(rp_usable_size(p) == size, "debug rp_usable_size(%p) = %zu, requested %zu", (void *)p, rp_usable_size(p),
           size);
    cblock *b = &model.slots[s];
    b->p = p;
    b->size = size;
    b->charged = core_usable(p);
    b->id = id;
    pattern_fill(p, size, id);
}

/* Frees slot s's block through rp_free (the valid way): it enters the quarantine model. */
static void free_slot(int s)
{
    cblock *b = &model.slots[s];
    if (!b->p)
        return;
    verify(b, "before free");
    TRACE("  slot %d: free %p (%zu bytes, charged %zu)\n", s, (void *)b->p, b->size, b->charged);
    rp_free(b->p);
    expect_no_report();
    qmodel_free(b->p, b->charged, b->size);
    b->p = NULL;
}

static void alloc_slot(int s, size_t size, size_t align)
{
    free_slot(s);
    errno = 0;
    unsigned char *p = rp_alloc(model.h, size, align);
    expect_no_report();
    TRACE("  slot %d: rp_alloc(%zu, %zu) = %p\n", s, size, align, (void *)p);
    if (!p) {
        EXPECT(errno == ENOMEM || errno == EINVAL, "rp_alloc(%zu, %zu) failed with errno %d", size, align, errno);
        return;
    }
    adopt(s, p, size, ++model.next_id);
}

static void realloc_slot(int s, size_t size)
{
    cblock *b = &model.slots[s];
    if (!b->p) {
        alloc_slot(s, size, 0);
        return;
    }
    verify(b, "before realloc");
    errno = 0;
    unsigned char *q = rp_realloc(model.h, b->p, size);
    expect_no_report();
    TRACE("  slot %d: rp_realloc(%p, %zu) = %p\n", s, (void *)b->p, size, (void *)q);
    if (!q) {
        EXPECT(errno == ENOMEM, "rp_realloc(%zu) failed with errno %d", size, errno);
        verify(b, "by a failed realloc");
        return;
    }
    cblock old = *b;
    if (q != old.p) /* moved: the old block was freed */
        qmodel_free(old.p, old.charged, old.size);
    size_t kept = old.size < size ? old.size : size;
    size_t bad = pattern_find_bad(q, old.size, kept, old.id); /* laid out for the old size */
    EXPECT(bad == PATTERN_OK, "realloc lost byte %zu of %p", bad, (void *)old.p);
    adopt(s, q, size, old.id);
}

/* ---- the faults ------------------------------------------------------------------------- */

enum {
    FAULT_OVERFLOW,
    FAULT_UNDERFLOW,
    FAULT_UAF_QUARANTINED,
    FAULT_UAF_RELEASED,
    FAULT_DOUBLE_FREE,
    FAULT_INTERIOR_FREE,
    FAULT_FOREIGN_FREE,
    FAULT_REALLOC_FREED,
    FAULT_COUNT
};

static const char *const fault_names[FAULT_COUNT] = {
    "overflow", "underflow", "write after free (quarantined)", "write after free (released)", "double free",
    "interior free", "foreign free", "realloc of a freed block"};

/* Bytes written on purpose, put back afterwards. */
static struct {
    unsigned char *at;
    size_t len;
    unsigned char bytes[64];
} damage;

RP_NO_SANITIZE_ADDRESS static void write_bytes(unsigned char *at, size_t len, unsigned char value)
{
    volatile unsigned char *v = at;
    damage.at = at;
    damage.len = len;
    for (size_t i = 0; i < len; i++) {
        damage.bytes[i] = v[i];
        v[i] = value;
    }
}

RP_NO_SANITIZE_ADDRESS static void undo_damage(void)
{
    volatile unsigned char *v = damage.at;
    for (size_t i = 0; i < damage.len; i++)
        v[i] = damage.bytes[i];
    damage.len = 0;
}

/* What the fault must produce. */
typedef struct expected {
    rp_error_kind kind;
    const void *address;   /* first bad byte, or the pointer passed */
    const void *block;     /* user pointer of the block concerned (NULL: none) */
    size_t requested;      /* its requested size in the history (0: not checked) */
    int freed;             /* the history names a free stack */
    const char *check;     /* rp_heap_check must fail naming this invariant first (NULL: not run) */
    /* An underflow past the canary also lies past the end of the block before, when one is
     * there: the report may blame that block's overflow instead (debug_report.c), naming a
     * byte of [blame_lo, address] beyond its requested end. NULL: no such reading. */
    const unsigned char *blame_lo;
} expected;

/* The report blames the block before the damage for an overflow, as e->blame_lo allows: a
 * block below the damage (the model's or the harness's own), whose requested end the named
 * byte is past, with that block's history. */
static int blamed_block_before(const captured_report *r, const expected *e)
{
    if (!e->blame_lo || r->kind != RP_ERR_HEAP_BUFFER_OVERFLOW)
        return 0;
    const unsigned char *a = r->address, *p = r->block;
    size_t requested = r->history.requested;
    EXPECT(r->has_history && p && a >= e->blame_lo && a <= (const unsigned char *)e->address &&
               a >= p + requested && r->offset == (long)(a - p),
           "an underflow of %p blamed on block %p (%zu bytes) as an overflow at %p (offset %ld, damage from %p): %s",
           e->block, r->block, requested, (void *)a, r->offset, (const void *)e->blame_lo, r->message);
    return 1;
}

/* Does the checker's message name an address among the bytes written, or a block whose header
 * or free-list links (its first RP_MIN_BLOCK bytes) they reach into? */
static int names_damaged_byte(const char *why)
{
    for (const char *h = strstr(why, "0x"); h; h = strstr(h + 2, "0x")) {
        const unsigned char *a = (const unsigned char *)(uintptr_t)strtoull(h, NULL, 16);
        if (a + RP_MIN_BLOCK > damage.at && a < damage.at + damage.len)
            return 1;
    }
    return 0;
}

/* rp_heap_check must see the damage: the invariant expected, naming the first bad byte, or
 * (when the bytes reach into a neighbour, whose header or quarantined contents the checker
 * may look at first) another invariant naming a byte among those written. */
static void expect_checker_sees(const expected *e)
{
    char why[256], addr[32];
    EXPECT(rp_heap_check(model.h, why, sizeof why) != 0, "rp_heap_check does not see the damage at %p",
           e->address);
    snprintf(addr, sizeof addr, "%p", e->address);
    int as_expected = strncmp(why, e->check, strlen(e->check)) == 0 && strstr(why, addr);
    EXPECT(as_expected || names_damaged_byte(why),
           "rp_heap_check names the wrong damage (expected %s at %s): %s", e->check, addr, why);
    expect_no_report();
}

/* Exactly one report, as expected, printed as delivered. */
static void expect_the_report(const expected *e)
{
    EXPECT(capture_count() == 1, "expected one %s report about %p, got %d", rp_error_kind_name(e->kind), e->address,
           capture_count());
    const captured_report *r = capture_first();
    if (blamed_block_before(r, e)) {
        capture_reset();
        return;
    }
    EXPECT(r->kind == e->kind, "reported %s, not %s, at %p: %s", rp_error_kind_name(r->kind),
           rp_error_kind_name(e->kind), r->address, r->message);
    EXPECT(r->address == e->address, "the %s report names %p, not %p: %s", rp_error_kind_name(e->kind), r->address,
           e->address, r->message);
    EXPECT(r->block == e->block, "the %s report names block %p, not %p: %s", rp_error_kind_name(e->kind), r->block,
           e->block, r->message);
    long offset = (long)((const char *)e->address - (const char *)e->block);
    EXPECT(!e->block || r->offset == offset, "the %s report gives offset %ld, not %ld: %s",
           rp_error_kind_name(e->kind), r->offset, offset, r->message);
    EXPECT(r->has_history, "rp_report_get_history failed during the report");
    EXPECT(!e->requested || r->history.requested == e->requested, "the history gives %zu bytes, not %zu",
           r->history.requested, e->requested);
    EXPECT(!e->freed || r->history.free_stack != 0, "the history of freed block %p has no free stack", e->block);
    /* The printed report says the same. */
    char line[160];
    const char *text = capture_text();
    snprintf(line, sizeof line, "ERROR: rampart: %s on address %p ", rp_error_kind_name(e->kind), e->address);
    EXPECT(strstr(text, line), "the printed report lacks \"%s\"", line);
    if (e->block) {
        snprintf(line, sizeof line, "SUMMARY: rampart: %s %p at offset %ld of the ", rp_error_kind_name(e->kind),
                 e->address, offset);
        EXPECT(strstr(text, line), "the printed report lacks \"%s\"", line);
    }
    capture_reset();
}

/* A live block for a fault: slot `sel` if it holds one of at least `min_size` bytes charged
 * at most `max_charged`, else the first such slot after it, else a new block of
 * 24 + sel * 8 bytes in that slot. */
static cblock *live_victim(uint8_t sel, size_t min_size, size_t max_charged)
{
    for (int i = 0; i < NSLOTS; i++) {
        cblock *b = &model.slots[(sel + i) % NSLOTS];
        if (b->p && b->size >= min_size && b->charged <= max_charged)
            return b;
    }
    int s = sel % NSLOTS;
    alloc_slot(s, 24 + (size_t)sel * 8 < min_size ? min_size : 24 + (size_t)sel * 8, 0);
    EXPECT(model.slots[s].p, "no memory for the fault's block");
    return &model.slots[s];
}

/* A block in quarantine: entry `sel` of the model (modulo its count), or a live block freed
 * now. Returns its model entry (copied). */
static qmodel_entry quarantined_victim(uint8_t sel)
{
    if (qmodel_count() > 0)
        return *qmodel_held(sel % qmodel_count());
    cblock *b = live_victim(sel, 1, rp_debug_config_get()->quarantine_bytes);
    unsigned char *p = b->p;
    free_slot((int)(b - model.slots));
    EXPECT(qmodel_holds(p), "block %p freed just now is not held", (void *)p);
    return *qmodel_held(qmodel_count() - 1);
}

/* Is [p, p + len) inside the payload of one free span block (past its header and links,
 * where the free pattern is checked)? */
typedef struct free_payload {
    const unsigned char *p;
    size_t len;
    int inside;
    const unsigned char *block; /* the free block's first byte */
} free_payload;

static int find_free_payload(const rp_block_info *b, void *arg)
{
    free_payload *f = arg;
    const unsigned char *lo = (const unsigned char *)b->addr + RP_MIN_BLOCK, *hi = (const unsigned char *)b->addr + b->size;
    if (b->state == RP_BLOCK_FREE && b->tier == RP_TIER_SPAN && f->p >= lo && f->p + f->len <= hi) {
        f->inside = 1;
        f->block = b->addr;
        return 1;
    }
    return 0;
}

static free_payload payload_of(const unsigned char *p, size_t len)
{
    free_payload f = {p, len, 0, NULL};
    rp_heap_walk(model.h, find_free_payload, &f);
    return f;
}

/* A block out of quarantine whose whole user area is free span memory (not reused), or NULL.
 * Builds one when the history left none: a block, blocks worth more than the budget allocated
 * before it is freed and freed after it (pushing it out first, with no allocation after),
 * and a live block after it keeping its span in use. */
static const qmodel_entry *released_victim(uint8_t sel)
{
    for (size_t i = 0; i < qmodel_released_count(); i++) {
        const qmodel_entry *e = qmodel_released((sel + i) % qmodel_released_count());
        if (payload_of(e->p, e->charged).inside)
            return e;
    }
    size_t budget = rp_debug_config_get()->quarantine_bytes;
    size_t filler = budget / 4 + 16;
    int victim = sel % 8, guard = victim + 8;
    alloc_slot(victim, 64 + (size_t)(sel & 7) * 16, 0);
    alloc_slot(guard, 32, 0);
    for (int i = 0; i < 5; i++)
        alloc_slot(16 + i, filler, 0);
    if (!model.slots[victim].p)
        return NULL;
    free_slot(victim);
    for (int i = 0; i < 5; i++)
        free_slot(16 + i);
    const qmodel_entry *e = qmodel_released(0);
    for (size_t i = 0; i < qmodel_released_count(); i++, e = qmodel_released(i))
        if (payload_of(e->p, e->charged).inside)
            return e;
    return NULL;
}

/* Where a write after free lands in a block of `charged` usable bytes. */
static size_t uaf_offset(uint8_t param, size_t charged, size_t len)
{
    switch (param % 3) {
    case 0:
        return 0;
    case 1:
        return (charged - len) / 2;
    default:
        return charged - len;
    }
}

/* How many bytes past the user pointer p can be written without leaving its region. */
static size_t room_after(const unsigned char *p, size_t want)
{
    rp_region *r = rp_pagemap_lookup(p);
    while (want && rp_pagemap_lookup(p + want - 1) != r)
        want--;
    return want;
}

/* Overflow or underflow by k bytes of a live block; detected when it is freed. */
static void fault_bounds(int under, uint8_t param, uint8_t sel)
{
    cblock *b = live_victim(sel, 1, SIZE_MAX);
    size_t k = 1 + param % 64;
    unsigned char value = (unsigned char)(sel & 0x7f); /* never a cookie byte (top bit set) */
    expected e = {.block = b->p, .requested = b->size};
    if (under) {
        /* Past the 8-byte canary the write reaches the sealed metadata (the history is then
         * gone), past 32 bytes a span block's header. */
        if (k > 8) {
            e.requested = 0;
            e.blame_lo = b->p - k;
        }
        write_bytes(b->p - k, k, value);
        e.kind = RP_ERR_HEAP_BUFFER_UNDERFLOW;
        e.address = b->p - 1;
        e.check = "P4";
    } else {
        k = room_after(b->p + b->size, k);
        write_bytes(b->p + b->size, k, value);
        e.kind = RP_ERR_HEAP_BUFFER_OVERFLOW;
        e.address = b->p + b->size;
        e.check = "P5";
    }
    TRACE("  %s by %zu bytes of %p (%zu bytes)\n", under ? "underflow" : "overflow", k, (void *)b->p, b->size);
    expect_checker_sees(&e);
    rp_free(b->p);
    expect_the_report(&e);
    verify(b, "by a refused free");
    undo_damage();
    expect_heap_ok("after the damage was put back");
}

static void fault_uaf_quarantined(uint8_t param, uint8_t sel)
{
    qmodel_entry v = quarantined_victim(sel);
    size_t len = 1 + (param >> 2) % 4;
    if (len > v.charged)
        len = v.charged;
    size_t at = uaf_offset(param, v.charged, len);
    unsigned char fill = rp_debug_config_get()->free_fill;
    write_bytes(v.p + at, len, (unsigned char)(fill ^ (1 + sel % 255)));
    TRACE("  write after free at %p + %zu (%zu bytes, in quarantine)\n", (void *)v.p, at, len);
    expected e = {RP_ERR_USE_AFTER_FREE_WRITE, v.p + at, v.p, v.requested, 1, "P7", NULL};
    expect_checker_sees(&e);
    rp_quarantine_flush(model.h); /* the damaged block leaves quarantine, verified */
    qmodel_flush();
    expect_the_report(&e);
    damage.len = 0; /* the runtime poisoned the block again when it released it */
    expect_heap_ok("after the quarantine was flushed");
}

/* A write after free out of quarantine: only the checker (or a later reuse) sees it. */
static void fault_uaf_released(uint8_t param, uint8_t sel)
{
    const qmodel_entry *v = released_victim(sel);
    if (!v) { /* no block out of quarantine could be had (no memory): the quarantined case */
        fault_uaf_quarantined(param, sel);
        return;
    }
    size_t len = 1 + (param >> 2) % 4;
    if (len > v->charged)
        len = v->charged;
    size_t at = uaf_offset(param, v->charged, len);
    unsigned char fill = rp_debug_config_get()->free_fill;
    write_bytes(v->p + at, len, (unsigned char)(fill ^ (1 + sel % 255)));
    TRACE("  write after free at %p + %zu (%zu bytes, out of quarantine)\n", (void *)v->p, at, len);
    expected e = {RP_ERR_USE_AFTER_FREE_WRITE, v->p + at, NULL, 0, 0, "F1", NULL};
    expect_checker_sees(&e);
    undo_damage();
    expect_heap_ok("after the damage was put back");
}

/* A freed block for a double free or a realloc: in quarantine, or (param bit 0) out of it
 * with its header intact (a free block starts where it started). */
static const unsigned char *freed_victim(uint8_t param, uint8_t sel, expected *e)
{
    if (param & 1) {
        const qmodel_entry *v = released_victim(sel);
        if (v && payload_of(v->p, 1).block == v->p - SPAN_PREFIX) {
            *e = (expected){RP_ERR_DOUBLE_FREE, v->p, v->p, 0, 0, NULL, NULL};
            return v->p;
        }
    }
    qmodel_entry v = quarantined_victim(sel);
    *e = (expected){RP_ERR_DOUBLE_FREE, v.p, v.p, v.requested, 1, NULL, NULL};
    return v.p;
}

static void fault_double_free(uint8_t param, uint8_t sel, int by_realloc)
{
    expected e = {0};
    const unsigned char *p = freed_victim(param, sel, &e);
    TRACE("  %s of freed %p\n", by_realloc ? "realloc" : "free", (const void *)p);
    if (by_realloc) {
        errno = 0;
        EXPECT(rp_realloc(model.h, (void *)p, 100) == NULL && errno == EINVAL, "rp_realloc of freed %p",
               (const void *)p);
    } else {
        rp_free((void *)p);
    }
    expect_the_report(&e);
    expect_heap_ok("after the refused call");
}

static void fault_interior_free(uint8_t param, uint8_t sel)
{
    cblock *b = live_victim(sel, 2, SIZE_MAX);
    unsigned char *p = b->p + 1 + param % (b->size - 1);
    TRACE("  free of %p, inside %p (%zu bytes)\n", (void *)p, (void *)b->p, b->size);
    rp_free(p);
    expected e = {RP_ERR_INVALID_FREE, p, b->p, b->size, 0, NULL, NULL};
    expect_the_report(&e);
    verify(b, "by a refused interior free");
    expect_heap_ok("after the refused free");
}

static void fault_foreign_free(uint8_t param)
{
    static char global_bytes[64];
    char local[64];
    void *p = (param & 1) ? (void *)(global_bytes + 16) : (void *)(local + 16);
    TRACE("  free of %s address %p\n", (param & 1) ? "a global" : "a stack", p);
    rp_free(p);
    expected e = {RP_ERR_INVALID_FREE, p, NULL, 0, 0, NULL, NULL};
    expect_the_report(&e);
    expect_heap_ok("after the refused free");
}

static void inject(uint8_t fault, uint8_t param, uint8_t sel)
{
    model.fault_name = fault_names[fault];
    model.op_name = "fault";
    switch (fault) {
    case FAULT_OVERFLOW:
    case FAULT_UNDERFLOW:
        fault_bounds(fault == FAULT_UNDERFLOW, param, sel);
        break;
    case FAULT_UAF_QUARANTINED:
        fault_uaf_quarantined(param, sel);
        break;
    case FAULT_UAF_RELEASED:
        fault_uaf_released(param, sel);
        break;
    case FAULT_DOUBLE_FREE:
    case FAULT_REALLOC_FREED:
        fault_double_free(param, sel, fault == FAULT_REALLOC_FREED);
        break;
    case FAULT_INTERIOR_FREE:
        fault_interior_free(param, sel);
        break;
    default:
        fault_foreign_free(param);
        break;
    }
}

/* ---- the valid operations ---------------------------------------------------------------- */

static const size_t special_sizes[] = {0, 1, 8, 15, 16, 17, 24, 4096, 3072, 65535, 65536, 65537, (size_t)1 << 20,
                                       (size_t)1 << 44, SIZE_MAX};
static const size_t special_aligns[] = {3, 24, 4097, 6144, (size_t)1 << 40, (size_t)1 << 63, SIZE_MAX, 12288};

enum {
    OP_ALLOC,     /* slot, size16, align8 */
    OP_FREE,      /* slot */
    OP_REALLOC,   /* slot, size16 */
    OP_CHECK,     /* every block's pattern, rp_heap_check */
    OP_ALLOC_RUN, /* first slot, count8, size16 */
    OP_FREE_RUN,  /* first slot, count8 */
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"alloc", "free", "realloc", "check", "alloc-run", "free-run"};

static size_t decode_size(uint16_t v) { return size_code(v, LARGE_PAGES, CODE_TABLE(special_sizes)); }

/* Bytes of each operation, for the structure-aware mutator (fuzz/op_mutator.h). */
static size_t op_length(const uint8_t *op, size_t left)
{
    (void)left;
    static const uint8_t length[OP_COUNT] = {5, 2, 4, 1, 5, 3};
    return (op[0] & 15) < OP_COUNT ? length[op[0] & 15] : 1;
}

static const op_grammar grammar = {3, op_length, (1u << OP_COUNT) - 1};
OP_MUTATOR(grammar)

static void run(fuzz_input *in)
{
    uint8_t fault = fuzz_u8(in) % FAULT_COUNT, param = fuzz_u8(in), sel = fuzz_u8(in);
    for (model.op = 0; model.op < MAX_OPS && fuzz_more(in); model.op++) {
        int op = fuzz_opcode(in, op_names, OP_COUNT, &model.op_name);
        if (op < 0)
            continue;
        int s = op == OP_CHECK ? 0 : fuzz_u8(in) % NSLOTS;
        switch (op) {
        case OP_ALLOC: {
            size_t size = decode_size(fuzz_u16(in));
            alloc_slot(s, size, align_code(fuzz_u8(in), special_aligns));
            break;
        }
        case OP_FREE:
            free_slot(s);
            break;
        case OP_REALLOC:
            realloc_slot(s, decode_size(fuzz_u16(in)));
            break;
        case OP_CHECK:
            for (int i = 0; i < NSLOTS; i++)
                if (model.slots[i].p)
                    verify(&model.slots[i], "while live");
            break;
        case OP_ALLOC_RUN: {
            int count = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            for (int i = 0; i < count; i++)
                alloc_slot((s + i) % NSLOTS, size, 0);
            break;
        }
        case OP_FREE_RUN: {
            int count = fuzz_u8(in);
            for (int i = 0; i < count; i++)
                free_slot((s + i) % NSLOTS);
            break;
        }
        }
        expect_no_report();
        expect_heap_ok("after the operation");
    }
    TRACE("fault %s, parameter %u, selector %u\n", fault_names[fault], param, sel);
    inject(fault, param, sel);
    model.op_name = "teardown";
    for (int s = 0; s < NSLOTS; s++)
        free_slot(s);
    expect_no_report();
    expect_heap_ok("after freeing everything");
}

/* Report and go on; a small quarantine, so blocks leave it within a few operations; short
 * stacks (the free stack is checked, not its frames); reports printed into the capture. Set
 * by a constructor that runs before the runtime's own (the dump triggers read the options,
 * once, before main): the priority orders constructors within one executable, hence
 * linkstatic in fuzz/BUILD. */
static char options[256];

__attribute__((constructor(101))) static void set_options(void)
{
    snprintf(options, sizeof options,
             "on_error=continue:quarantine_bytes=65536:backtrace_depth=4:check_interval=0:poison=1:%s",
             capture_sink_options());
    setenv("RAMPART_OPTIONS", options, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    expect_tracing = getenv("CORRUPTION_TRACE") != NULL;
    capture_install();
    const rp_debug_config *cfg = rp_debug_config_get();
    if (!cfg->poison || cfg->abort_on_error || cfg->quarantine_bytes != 65536) {
        fprintf(stderr, "corruption: the debug runtime ignored RAMPART_OPTIONS=%s\n", options);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    expect_context(where, printed_reports);
    memset(&model, 0, sizeof model);
    capture_reset();
    qmodel_reset(rp_debug_config_get()->quarantine_bytes);
    rp_heap_config cfg = {.name = "corruption", .max_bytes = HEAP_CAP};
    model.h = rp_heap_create(&cfg);
    EXPECT(model.h, "rp_heap_create failed (errno %d)", errno);
    fuzz_input in = fuzz_input_of(data, size);
    run(&in);
    rp_heap_destroy(model.h);
    return 0;
}
