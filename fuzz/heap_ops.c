/* heap_ops: the fuzzer's bytes become a sequence of heap operations, run against a shadow
 * model that knows what every live block must look like. Built for both flavours (targets
 * heap_ops and heap_ops_debug share this file and the corpus fuzz/corpus/heap_ops).
 *
 * Input: three bytes of heap shape, then operations until the input ends (see decode_* and the
 * OP_* list; fuzz/seeds.py writes the seed corpus in this format and documents it):
 *   shape[0]  bits 0-3 max_bytes = (v+1) * 512 KiB, bits 4-6 region_bytes = 16 KiB << v,
 *             bit 7 RP_HEAP_NO_OS (memory only from ADD_REGION)
 *   shape[1]  bits 0-2 large_threshold = 4 KiB << v, bits 3-5 retain_bytes = 32 KiB << v,
 *             bit 6 RP_HEAP_HUGE_PAGES (regions of 2 MiB and more are advised), bit 7 a purge
 *             delay of one hour (free memory beyond retain_bytes is kept: only trim returns it)
 *   shape[2]  bits 0-1 mapped_block_bytes: the default (32 MiB, beyond the cap), 2 MiB, 3 MiB
 *             or never (SIZE_MAX); bit 2 RP_HEAP_HUGE_PAGES_LATE; bits 3-7 are ignored
 * The heap is small and capped, so out-of-memory paths, region growth, retention and release
 * to the OS are all reached within a few operations. A second, plain heap receives blocks
 * moved by cross-heap realloc.
 *
 * After every operation: rp_heap_check on both heaps, and the counters of rp_heap_stats
 * against the model (live blocks, allocation and free calls, usable bytes, the OS cap).
 * For every new block: alignment, ownership (rp_heap_of), rp_usable_size (>= size, and at
 * most the rounding the tiers allow), no overlap with any live block or region metadata,
 * inside a caller region when the heap has no OS memory; then it is filled with a pattern
 * derived from its id, verified when it is freed, resized or checked. An allocation that
 * fails with ENOMEM although a fresh region would have fitted under the cap (and the OS was
 * not told to fail) is a spurious out-of-memory. Misuse operations (double, interior,
 * foreign, forged-header frees; regions overlapping live memory) must each produce exactly
 * the expected report and change nothing. At the end every block is freed, both heaps must
 * be empty and consistent, and (release) destroying them must return every byte mapped.
 *
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_OPS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HEAP_OPS_ASAN)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

#include "fuzz/fuzz_input.h"
#include "fuzz/heap_model.h"
#include "fuzz/op_mutator.h"
#include "fuzz/size_codes.h"

/* ---- decoding ---------------------------------------------------------------------------- */

static const size_t special_sizes[] = {
    0, 1, 15, 16, 17, 24, 4096, 3072, 64512, 65535, 65536, 65537, (size_t)1 << 20, (size_t)1 << 32,
    0xfffff000u, (size_t)1 << 43, ((size_t)1 << 43) + 1, SIZE_MAX / 2, SIZE_MAX - 4095, SIZE_MAX,
};

static size_t decode_size(uint16_t v) { return size_code(v, LARGE_PAGES, CODE_TABLE(special_sizes)); }

static const size_t special_aligns[] = {3, 24, 4097, 6144, (size_t)1 << 40, (size_t)1 << 63, SIZE_MAX, 12288};

static size_t decode_align(uint8_t v) { return align_code(v, special_aligns); }

static int align_valid(size_t a) { return a == 0 || (a & (a - 1)) == 0; }
static size_t align_normal(size_t a) { return a < 16 ? 16 : a; }

static const size_t special_counts[] = {0, 1, 2, 3, 7, 100, 4096, (size_t)1 << 32, SIZE_MAX / 2, SIZE_MAX};


/* ---- operations -------------------------------------------------------------------------- */

enum {
    OP_ALLOC,      /* slot, size16, align8 (bit 7: second heap) */
    OP_CALLOC,     /* slot, count8, size16, align8 */
    OP_REALLOC,    /* slot, size16, flags8 (bit 0: pass NULL as heap, bit 1: into the second heap) */
    OP_FREE,       /* slot */
    OP_ADD_REGION, /* offset16, len16, misalign8 */
    OP_CHECK,      /* verify every block, walk both heaps against the model */
    OP_TRIM,       /* keep8 */
    OP_OS_FAIL,    /* n8: the n-th OS call from now fails */
    OP_MISUSE,     /* kind8, slot, offset16 */
    OP_ALLOC_RUN,  /* first slot, count8, size16, align8: the seed scenario's runs of one shape */
    OP_FREE_RUN,   /* first slot, count8, stride8 */
    OP_CORRUPT,    /* kind8, sel16, x8: damage one structure, rp_heap_check must say so, repair */
    OP_EDGES,      /* argument edge cases of the API (NULL heaps, bad configs, bad arguments) */
    OP_BATCH,      /* flags8, slot, count8, size16, align8: rp_alloc_batch / rp_free_batch */
    OP_FRESH_REGION, /* where8: caller memory needing a new address-map table the OS refuses */
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"alloc", "calloc", "realloc", "free", "add-region", "check",
                                               "trim", "os-fail", "misuse", "alloc-run", "free-run",
                                               "corrupt", "edges", "batch", "fresh-region"};

static void do_alloc(int s, int heap, size_t size, size_t align)
{
    heap_model *m = heap ? second_heap() : &model.heaps[0];
    if (model.slots[s].p)
        free_slot(s);
    uint64_t calls = rp_os_calls();
    fit_probe fit;
    fit_before(m, size, align, &fit);
    retention_probe ret;
    retention_before(m, NULL, &ret);
    errno = 0;
    unsigned char *p = rp_alloc(m->h, size, align);
    TRACE("  slot %d: rp_alloc(heap %d, %zu, %zu) = %p\n", s, heap, size, align, (void *)p);
    expect_no_report();
    retention_after_take(&ret, "rp_alloc");
    fit_after(m, &fit, p, size, align);
    if (!p) {
        if (!align_valid(align)) {
            EXPECT(errno == EINVAL, "rp_alloc(%zu, align %zu) failed with errno %d, not EINVAL", size, align, errno);
            return;
        }
        EXPECT(errno == ENOMEM, "rp_alloc(%zu, align %zu) failed with errno %d, not ENOMEM", size, align, errno);
        expect_real_oom(m, size, align_normal(align), calls);
        return;
    }
    EXPECT(align_valid(align), "rp_alloc accepted alignment %zu", align);
    m->allocs++;
    adopt(s, heap, p, size, align_normal(align), ++model.next_id);
}

static void do_calloc(int s, size_t n, size_t size, size_t align)
{
    heap_model *m = &model.heaps[0];
    if (model.slots[s].p)
        free_slot(s);
    size_t total;
    int overflow = __builtin_mul_overflow(n, size, &total);
    uint64_t calls = rp_os_calls();
    fit_probe fit = {0};
    if (!overflow)
        fit_before(m, total, align, &fit);
    retention_probe ret;
    retention_before(m, NULL, &ret);
    errno = 0;
    unsigned char *p = rp_calloc(m->h, n, size, align);
    expect_no_report();
    retention_after_take(&ret, "rp_calloc");
    fit_after(m, &fit, p, total, align);
    if (!p) {
        int want = overflow ? ENOMEM : (align_valid(align) ? ENOMEM : EINVAL);
        EXPECT(errno == want, "rp_calloc(%zu, %zu, align %zu) failed with errno %d, expected %d", n, size, align,
               errno, want);
        if (!overflow && align_valid(align))
            expect_real_oom(m, total, align_normal(align), calls);
        return;
    }
    EXPECT(!overflow && align_valid(align), "rp_calloc(%zu, %zu, align %zu) succeeded", n, size, align);
    verify_zeroed(p, total);
    m->allocs++;
    adopt(s, 0, p, total, align_normal(align), ++model.next_id);
}

static void do_realloc(int s, size_t size, uint8_t flags)
{
    block *b = &model.slots[s];
    int to_second = (flags & 2) != 0;
    heap_model *target = to_second ? second_heap() : (b->p ? &model.heaps[b->heap] : &model.heaps[0]);
    int target_index = (int)(target - model.heaps);
    rp_heap *arg = (flags & 1) && !to_second ? NULL : target->h;
    if (!b->p && !arg)
        arg = target->h; /* realloc(NULL, ...) with a NULL heap would use the default heap */
    uint64_t calls = rp_os_calls();
    retention_probe ret;
    retention_before(b->p ? &model.heaps[b->heap] : target, b->p, &ret);
    errno = 0;
    unsigned char *q = rp_realloc(arg, b->p, size);
    TRACE("  slot %d: rp_realloc(%p, %zu) = %p\n", s, (void *)b->p, size, (void *)q);
    expect_no_report();
    retention_after(&ret, 0, "rp_realloc");
    if (!b->p) {
        if (!q) {
            EXPECT(errno == ENOMEM, "rp_realloc(NULL, %zu) failed with errno %d", size, errno);
            expect_real_oom(target, size, 16, calls);
            return;
        }
        target->allocs++;
        adopt(s, target_index, q, size, 16, ++model.next_id);
        return;
    }
    block old = *b;
    if (!q) {
        EXPECT(errno == ENOMEM, "rp_realloc(%p, %zu) failed with errno %d", (void *)old.p, size, errno);
        EXPECT(rp_usable_size(old.p) == old.usable, "failed realloc changed the usable size of %p", (void *)old.p);
        verify_block(&old, old.usable, "by a failed realloc");
        expect_real_oom(target, size, old.align, calls);
        return;
    }
    size_t keep = old.usable < size ? old.usable : size;
    heap_model *om = &model.heaps[old.heap];
    drop(s);
    if (q != old.p) {
        /* Moved: a new block was allocated (in the target heap) and the old one freed. */
        target->allocs++;
        om->frees++;
        remember_stale(old.p);
    } else {
        EXPECT(target_index == old.heap, "realloc into another heap returned the same pointer");
    }
    /* The old contents, as far as they fit, must have come along. */
    block moved = old;
    moved.p = q;
    verify_block(&moved, keep, "by realloc");
    /* A shrink in place whose giving back of pages the OS refused (an injected failure) keeps
     * the block as it was (mapped_block.c, rp_mapped_block_shrink): its old usable size, more
     * slack than a block of this size has otherwise. Anything else is checked as usual. */
    if (q == old.p && injection_armed(calls) && size < old.usable && rp_usable_size(q) == old.usable)
        model.kept_slack = old.usable - size;
    adopt(s, target_index, q, size, old.align, old.id);
    model.kept_slack = 0;
}

static void do_add_region(uint16_t offset, uint16_t len16, uint8_t misalign)
{
    heap_model *m = &model.heaps[0];
    size_t off = ((size_t)offset * 128 + (misalign & 63)) % ARENA_BYTES;
    size_t len = (size_t)(len16 & 0x7fff) * 128 + (size_t)(misalign >> 6) * 16;
    if (len > ARENA_BYTES - off)
        len = ARENA_BYTES - off;
    unsigned char *base = arena + off;
    int overlaps = 0;
    for (int k = 0; k < NHEAPS; k++)
        for (int r = 0; r < model.heaps[k].nregions; r++)
            overlaps |= len && ranges_overlap(model.heaps[k].regions[r].base, model.heaps[k].regions[r].len, base, len);
    rp_heap_stats_t before, after;
    rp_heap_stats(m->h, &before);
    errno = 0;
    int rc = rp_heap_add_region(m->h, base, len);
    expect_no_report();
    rp_heap_stats(m->h, &after);
    if (rc != 0) {
        EXPECT(rc == -1 && errno == EINVAL, "rp_heap_add_region failed with rc %d errno %d", rc, errno);
        size_t enough = 64 + sizeof(rp_region) + sizeof(rp_page) + 2 * 4096;
        EXPECT(overlaps || len < enough, "rp_heap_add_region(%p, %zu) refused a region that fits and overlaps nothing",
               (void *)base, len);
        EXPECT(after.regions == before.regions && after.region_bytes == before.region_bytes,
               "a refused region changed the heap");
        return;
    }
    EXPECT(!overlaps, "rp_heap_add_region(%p, %zu) accepted memory that overlaps another region", (void *)base, len);
    EXPECT(after.regions == before.regions + 1 && after.region_bytes > before.region_bytes &&
               after.region_bytes - before.region_bytes <= len,
           "region accepted but counters say %zu regions, %zu bytes", after.regions, after.region_bytes);
    if (m->nregions < NREGIONS) {
        m->regions[m->nregions].base = base;
        m->regions[m->nregions].len = len;
        m->nregions++;
    } else {
        expect_fail("model region table full"); /* cannot happen: see the NREGIONS guard in run() */
    }
}


static void do_trim(uint8_t keep)
{
    heap_model *m = &model.heaps[0];
    rp_heap_stats_t before, after;
    rp_heap_stats(m->h, &before);
    retention_probe ret;
    retention_before(m, NULL, &ret);
    size_t released = rp_heap_trim(m->h, (size_t)(keep & 15) << 16);
    retention_after_trim(&ret, (size_t)(keep & 15) << 16);
    rp_heap_stats(m->h, &after);
    EXPECT(after.os_released - before.os_released == released, "rp_heap_trim returned %zu, os_released grew by %zu",
           released, after.os_released - before.os_released);
}


/* ---- argument edge cases ------------------------------------------------------------------ */

static void count_listed(rp_heap *h, void *arg)
{
    for (int k = 0; k < NHEAPS; k++)
        if (model.heaps[k].h == h)
            ++*(int *)arg;
}

#if DEBUG_FLAVOUR
int rp_sink_fd(void); /* debug/report_sink.h: where the runtime prints its reports */

/* The default report function in on_error=continue mode (this harness's options): the
 * runtime prints its full report and abandons the operation, as when a report function
 * returns; no report function is called. The printed text is read back from a memory file
 * put where the runtime prints (report_path). */
static void default_report_continues(void)
{
    static _Alignas(16) unsigned char outside[64];
    int sink = rp_sink_fd();
    int mem = memfd_create("report", MFD_CLOEXEC);
    int saved = dup(sink);
    EXPECT(mem >= 0 && saved >= 0 && dup2(mem, sink) == sink, "cannot redirect the report sink (errno %d)", errno);
    rp_free(outside + 16);
    dup2(saved, sink);
    close(saved);
    char text[4096];
    ssize_t n = pread(mem, text, sizeof text - 1, 0);
    close(mem);
    text[n > 0 ? n : 0] = '\0';
    expect_no_report();
    char want[96];
    snprintf(want, sizeof want, "ERROR: rampart: invalid-free on address %p", (void *)(outside + 16));
    EXPECT(strstr(text, want) && strstr(text, "SUMMARY: rampart: invalid-free"),
           "the default report of an invalid free printed '%.300s'", text);
}
#endif

static void do_edges(void)
{
    static const rp_heap_config bad[] = {
        {.large_threshold = 4095}, {.large_threshold = ((size_t)256 << 20) + 1}, {.flags = RP_HEAP_HUGE_PAGES_LATE << 1},
        {.region_bytes = (size_t)1 << 40},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        rp_heap *h = rp_heap_create(&bad[i]);
        EXPECT(!h && errno == EINVAL, "rp_heap_create accepted bad configuration %zu", i);
    }
    rp_heap *h = model.heaps[0].h;
    errno = 0;
    EXPECT(rp_heap_add_region(NULL, arena, 65536) == -1 && errno == EINVAL, "add_region(NULL heap)");
    EXPECT(rp_heap_add_region(h, NULL, 65536) == -1 && errno == EINVAL, "add_region(NULL base)");
    EXPECT(rp_heap_add_region(h, arena, 0) == -1 && errno == EINVAL, "add_region(len 0)");
    EXPECT(rp_heap_add_region(h, (void *)(UINTPTR_MAX - 4095), 8192) == -1 && errno == EINVAL, "add_region wraps");
    EXPECT(rp_heap_walk(h, NULL, NULL) == -1 && errno == EINVAL, "rp_heap_walk(NULL callback)");
    EXPECT(rp_heap_stats(h, NULL) == -1 && errno == EINVAL, "rp_heap_stats(NULL)");
    EXPECT(strcmp(rp_heap_name(NULL), "(null)") == 0 && strcmp(rp_heap_name(h), "fuzz") == 0, "rp_heap_name");
    EXPECT(rp_heap_of(NULL) == NULL && rp_usable_size(NULL) == 0, "NULL pointer queries");
    EXPECT(strcmp(rp_flavour(), DEBUG_FLAVOUR ? "debug" : "release") == 0, "rp_flavour");
    static const char *const kind_names[RP_ERR_KIND_COUNT] = {
        "unknown-error", "invalid-free", "double-free", "corrupted-block-header", "corrupted-free-list",
        "heap-buffer-overflow", "heap-buffer-underflow", "use-after-free-write", "heap-use-after-free",
    };
    for (int k = 0; k <= RP_ERR_KIND_COUNT; k++)
        EXPECT(strcmp(rp_error_kind_name((rp_error_kind)k), k < RP_ERR_KIND_COUNT ? kind_names[k] : "unknown-error") == 0,
               "rp_error_kind_name(%d) is '%s'", k, rp_error_kind_name((rp_error_kind)k));
    EXPECT(strcmp(rp_error_kind_name((rp_error_kind)-1), "unknown-error") == 0, "rp_error_kind_name(-1)");
    rp_heap_destroy(NULL);
    rp_heap_destroy(rp_default_heap()); /* ignored: the default heap stays */
    EXPECT(rp_heap_check(NULL, NULL, 0) == 0, "the default heap fails its check");
    /* Every heap is on the global list (fork handling walks it). */
    int listed = 0;
    rp_heaps_foreach(count_listed, &listed);
    EXPECT(listed == 1 + (model.heaps[1].h != NULL), "rp_heaps_foreach lists %d of this input's heaps", listed);
    /* The OS refusing a heap's control block (unless the input armed a failure itself). */
    if (!injection_armed(rp_os_calls())) {
        rp_os_fail_at(1);
        errno = 0;
        rp_heap *refused = rp_heap_create(NULL);
        rp_os_fail_at(0);
        EXPECT(!refused && errno == ENOMEM, "rp_heap_create without memory from the OS");
    }
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(NULL, NULL, &old_arg);
    EXPECT(old == capture_report, "the report function was replaced");
#if DEBUG_FLAVOUR
    default_report_continues();
#endif
    rp_set_report_fn(capture_report, old_arg, NULL);
}


/* ---- structure-aware mutation (fuzz/op_mutator.h): bytes of each operation ---------------- */

static size_t op_length(const uint8_t *op, size_t left)
{
    (void)left;
    /* the opcode byte and the arguments run() reads */
    static const uint8_t length[16] = {5, 6, 5, 2, 6, 1, 2, 2, 5, 6, 4, 5, 1, 7, 2, 1};
    return length[op[0] & 15];
}

static const op_grammar grammar = {3, op_length, (1u << OP_COUNT) - 1};
OP_MUTATOR(grammar)

/* ---- driver ------------------------------------------------------------------------------ */

static void run(fuzz_input *in)
{
    uint8_t shape0 = fuzz_u8(in), shape1 = fuzz_u8(in), shape2 = fuzz_u8(in);
    static const size_t mapped_block_bytes[4] = {0, (size_t)2 << 20, (size_t)3 << 20, SIZE_MAX};
    heap_model *m = &model.heaps[0];
    m->cfg.name = "fuzz";
    m->cfg.max_bytes = (size_t)((shape0 & 15) + 1) << 19;
    m->cfg.region_bytes = (size_t)16 << (10 + ((shape0 >> 4) & 7));
    m->cfg.flags = ((shape0 & 0x80) ? RP_HEAP_NO_OS : 0) | ((shape1 & 0x40) ? RP_HEAP_HUGE_PAGES : 0);
    m->cfg.large_threshold = (size_t)4096 << (shape1 & 7);
    m->cfg.retain_bytes = (size_t)32 << (10 + ((shape1 >> 3) & 7));
    m->cfg.purge_delay_ms = (shape1 & 0x80) ? 3600000u : 0;
    m->cfg.mapped_block_bytes = mapped_block_bytes[shape2 & 3];
    m->cfg.flags |= (shape2 & 4) ? RP_HEAP_HUGE_PAGES_LATE : 0;
    m->h = rp_heap_create(&m->cfg);
    EXPECT(m->h, "rp_heap_create failed (errno %d)", errno);
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    m->os_bytes_start = st.os_bytes;
    check_all();

    for (model.op = 0; model.op < MAX_OPS && fuzz_more(in); model.op++) {
        /* 15 is free for a new operation and does nothing yet. */
        int op = fuzz_opcode(in, op_names, OP_COUNT, &model.op_name);
        if (op < 0)
            continue;
        TRACE("op %lu %s\n", model.op, model.op_name);
        switch (op) {
        case OP_ALLOC: {
            int s = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            uint8_t a = fuzz_u8(in);
            do_alloc(s, a >> 7, size, decode_align(a));
            break;
        }
        case OP_CALLOC: {
            int s = fuzz_u8(in);
            uint8_t n = fuzz_u8(in);
            size_t count = count_code(n, CODE_TABLE(special_counts));
            size_t size = decode_size(fuzz_u16(in));
            do_calloc(s, count, size, decode_align(fuzz_u8(in)));
            break;
        }
        case OP_REALLOC: {
            int s = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            do_realloc(s, size, fuzz_u8(in));
            break;
        }
        case OP_FREE:
            free_slot(fuzz_u8(in));
            break;
        case OP_ADD_REGION: {
            uint16_t off = fuzz_u16(in), len = fuzz_u16(in);
            uint8_t mis = fuzz_u8(in);
            if (m->nregions < NREGIONS)
                do_add_region(off, len, mis);
            break;
        }
        case OP_CHECK:
            do_check();
            break;
        case OP_TRIM:
            do_trim(fuzz_u8(in));
            break;
        case OP_OS_FAIL: {
            uint8_t n = fuzz_u8(in);
            rp_os_fail_at((n & 15) + 1);
            model.os_fail_target = rp_os_calls() + (n & 15) + 1;
            break;
        }
        case OP_MISUSE: {
            uint8_t kind = fuzz_u8(in);
            int s = fuzz_u8(in);
            do_misuse(kind, s, fuzz_u16(in));
            break;
        }
        case OP_ALLOC_RUN: {
            int s = fuzz_u8(in);
            int count = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            uint8_t a = fuzz_u8(in);
            for (int i = 0; i < count; i++)
                do_alloc((s + i) % NSLOTS, a >> 7, size, decode_align(a));
            break;
        }
        case OP_FREE_RUN: {
            int s = fuzz_u8(in);
            int count = fuzz_u8(in);
            int stride = (fuzz_u8(in) % 7) + 1;
            for (int i = 0; i < count; i++)
                free_slot((s + i * stride) % NSLOTS);
            break;
        }
        case OP_CORRUPT: {
            uint8_t kind = fuzz_u8(in);
            uint16_t sel = fuzz_u16(in);
            do_corrupt(kind, sel, fuzz_u8(in));
            break;
        }
        case OP_EDGES:
            do_edges();
            break;
        case OP_BATCH: {
            uint8_t flags = fuzz_u8(in);
            int s = fuzz_u8(in);
            uint8_t count = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            do_batch(flags, s, count, size, decode_align(fuzz_u8(in)));
            break;
        }
        case OP_FRESH_REGION:
            do_fresh_region(fuzz_u8(in));
            break;
        }
        check_all();
    }
    model.op_name = "teardown";
    rp_os_fail_at(0);
    model.os_fail_target = 0;
    do_check();
    for (int s = 0; s < NSLOTS; s++)
        free_slot(s);
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *hm = &model.heaps[k];
        if (!hm->h)
            continue;
        check_heap(hm);
        rp_heap_stats(hm->h, &st);
        EXPECT(DEBUG_FLAVOUR || (st.blocks_in_use == 0 && st.bytes_in_use == 0 && st.bytes_usable == 0),
               "%s: %zu blocks / %zu bytes still in use after freeing everything", rp_heap_name(hm->h),
               st.blocks_in_use, st.bytes_in_use);
    }
}

/* Debug flavour: report and continue, so misuse is checked in-process, printing nothing. Set
 * before the first call into rampart (options are read once, by the dump triggers'
 * constructor before main): a constructor of higher priority, in the same executable
 * (linkstatic in fuzz/BUILD). An explicit setting wins. */
__attribute__((constructor(101))) static void set_options(void)
{
    setenv("RAMPART_OPTIONS", "on_error=continue:report_path=/dev/null", 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    expect_tracing = getenv("HEAP_OPS_TRACE") != NULL;
    expect_context(heap_ops_where, NULL);
    rp_set_report_fn(capture_report, NULL, NULL);
    /* OP_EDGES looks at the default heap; create it now, outside the per-input leak check. */
    rp_default_heap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialised;
    if (!initialised) {
        /* libFuzzer calls LLVMFuzzerInitialize; other drivers may not. */
        LLVMFuzzerInitialize(NULL, NULL);
        initialised = 1;
    }
    memset(&model, 0, sizeof model);
    reset_reports();
    size_t mapped_before = rp_os_mapped_bytes() - rp_pagemap_bytes();
    fuzz_input in = fuzz_input_of(data, size);
    run(&in);
    for (int k = 0; k < NHEAPS; k++)
        rp_heap_destroy(model.heaps[k].h);
    /* The caller memory is the program's again: what the debug runtime poisoned in it (free
     * blocks) must not outlive the heap, or the next input's heap, made over the same bytes,
     * reads its own metadata through stale poison (ASan: use-after-poison in rp_heap_walk,
     * found replaying the corpus in the ClusterFuzzLite build, inputs in another order). */
    ASAN_UNPOISON_MEMORY_REGION(arena, sizeof arena);
    /* Every byte the heaps mapped is returned (address-map tables are kept by design; the
     * debug runtime's stack depot lives for the process). */
    size_t mapped_after = rp_os_mapped_bytes() - rp_pagemap_bytes();
    EXPECT(DEBUG_FLAVOUR || mapped_after == mapped_before, "destroying the heaps leaked %zd mapped bytes",
           (ssize_t)(mapped_after - mapped_before));
    return 0;
}

