/* malloc_api: the heap_ops idea through the malloc drop-in (//src:rampart_malloc): the
 * fuzzer's bytes become calls of the C and glibc allocation API — malloc, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, free, free_sized — from this thread and from a second one
 * (malloc_worker.h), with sizes, counts and alignments decoded from the input (0, huge,
 * n*size overflows, invalid alignments), against a shadow model of glibc's semantics:
 *   - errno: ENOMEM for impossible sizes and overflowing products, EINVAL for bad
 *     alignments (aligned_alloc, memalign); posix_memalign returns EINVAL/ENOMEM and leaves
 *     errno and (or NULLs) its out pointer alone; free keeps errno;
 *   - malloc(0) and realloc(NULL, 0) return unique pointers; realloc(p, 0) and
 *     reallocarray(p, 0, n) free p and return NULL; a failed realloc leaves p untouched;
 *   - every block is 16-byte aligned and aligned as asked (memalign rounds a non-power of two
 *     up, valloc and pvalloc to the page), overlaps no other live block, and its
 *     malloc_usable_size is at least the size asked (pvalloc: the size rounded up to pages)
 *     and stays the same while the block lives;
 *   - the block's whole usable area is the program's: it is filled with a pattern
 *     (block_pattern.h), verified before every free and after every realloc (contents kept up
 *     to the smaller of the old usable size and the new size), calloc blocks start zeroed.
 * Every few operations and on OP_CHECK: rp_malloc_check (rp_heap_check of every arena and the
 * calling thread's cache invariants T1..T3), also run on the second thread.
 *
 * Which malloc is called. The harness is linked statically with //src:rampart_malloc
 * (linkstatic in fuzz/BUILD), so its calls of malloc, free, ... bind to rampart's
 * definitions at link time. In the gcc replay test those are the process's malloc. Under
 * --config=fuzz (ASan + libFuzzer), src/BUILD compiles the drop-in with hidden visibility:
 * the executable's own calls (this harness, and libFuzzer's static code) still reach
 * rampart's functions, while the sanitizer runtime and libc keep their allocator. Either way
 * the harness proves it: every block it receives must belong to a heap flagged
 * RP_HEAP_MALLOC_ARENA (rp_heap_of), or the run aborts saying the calls missed rampart.
 *
 * Sizes stay at most 4 MiB or start at 2^47 (no machine can map that): a size in between
 * could succeed or fail depending on the machine, so a calloc or reallocarray product that
 * falls there is taken with a count of 1 instead.
 *
 * Input: operations until the input ends (fuzz/seeds.py documents the encoding and writes
 * the seeds): an opcode byte (its low four bits; 15 is free for new operations and does
 * nothing, so old inputs keep their meaning) and its arguments, little-endian.
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/block_pattern.h"
#include "fuzz/expect.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/size_codes.h"
#include "fuzz/malloc_worker.h"
#include "rampart.h"
#include "rampart_malloc.h"
#include "src/heap.h"

/* glibc 2.36 does not declare these; the drop-in defines them (malloc.c). */
void free_sized(void *p, size_t size);
void cfree(void *p);

/* The calls under test go through pointers: the compiler must not act on what the
 * declarations promise (alloc_align, alloc_size, malloc) about arguments the harness
 * deliberately gets wrong, nor fold a call whose result it thinks it knows. */
static void *(*volatile call_malloc)(size_t) = malloc;
static void *(*volatile call_calloc)(size_t, size_t) = calloc;
static void *(*volatile call_realloc)(void *, size_t) = realloc;
static void *(*volatile call_reallocarray)(void *, size_t, size_t) = reallocarray;
static int (*volatile call_posix_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile call_aligned_alloc)(size_t, size_t) = aligned_alloc;
static void *(*volatile call_memalign)(size_t, size_t) = memalign;
static void *(*volatile call_valloc)(size_t) = valloc;
static void *(*volatile call_pvalloc)(size_t) = pvalloc;
static size_t (*volatile call_usable)(void *) = malloc_usable_size;
static void (*volatile call_free)(void *) = free;
static void (*volatile call_free_sized)(void *, size_t) = free_sized;
static void (*volatile call_cfree)(void *) = cfree;

#define NSLOTS 128
#define MAX_OPS 4096
#define CHECK_EVERY 64              /* rp_malloc_check every this many operations */
#define REAL_MAX ((size_t)4 << 20)  /* requests up to this size must succeed */
#define IMPOSSIBLE ((size_t)1 << 47) /* requests from this size on must fail */
#define PAGE ((size_t)4096)

typedef struct mblock {
    unsigned char *p; /* NULL = empty slot */
    size_t size;      /* bytes requested */
    size_t usable;    /* malloc_usable_size when allocated or resized */
    size_t align;     /* alignment promised (16 .. ) */
    uint64_t id;      /* pattern seed */
} mblock;

static struct {
    mblock slots[NSLOTS];
    uint64_t next_id;
    unsigned long op;
    const char *op_name;
} model;

static void where(FILE *out)
{
    fprintf(out, "malloc_api: operation %lu (%s): ", model.op, model.op_name ? model.op_name : "-");
}

/* ---- decoding ---------------------------------------------------------------------------- */

static const size_t special_sizes[] = {
    0, 1, 15, 16, 17, 24, 1008, 1009, 4096, 65536, 65537, (size_t)1 << 20, (size_t)4 << 20, IMPOSSIBLE,
    (size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX + 1, SIZE_MAX - 4095, SIZE_MAX - 15, SIZE_MAX, (size_t)1 << 48,
};

static size_t decode_size(uint16_t v) { return size_code(v, SMALL_PAGES, CODE_TABLE(special_sizes)); }

static const size_t special_aligns[] = {3, 24, 48, 4097, 12288, (size_t)1 << 47, (size_t)1 << 63, SIZE_MAX};

static size_t decode_align(uint8_t v) { return align_code(v, special_aligns); }

static const size_t special_counts[] = {0, 1, 2, 3, 7, 4096, (size_t)1 << 32, SIZE_MAX / 2, SIZE_MAX / 2 + 1, SIZE_MAX};

static size_t decode_count(uint8_t n) { return count_code(n, CODE_TABLE(special_counts)); }

static int is_pow2(size_t a) { return a && (a & (a - 1)) == 0; }

/* A request the harness expects to be refused for its size: from 2^47 on. */
static int impossible(size_t size) { return size >= IMPOSSIBLE; }

/* n*size for calloc and reallocarray: sets *overflow; a product between REAL_MAX and
 * IMPOSSIBLE (success would depend on the machine) makes the count 1. */
static size_t product(size_t *n, size_t size, int *overflow)
{
    size_t total;
    *overflow = __builtin_mul_overflow(*n, size, &total);
    if (!*overflow && total > REAL_MAX && total < IMPOSSIBLE) {
        *n = 1;
        total = size;
    }
    return total;
}

/* ---- the model --------------------------------------------------------------------------- */

NO_FEEDBACK static int ranges_overlap(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    return a < b + blen && b < a + alen;
}

NO_FEEDBACK static size_t extent(const mblock *b) { return b->usable ? b->usable : 1; }

/* A live block overlapping b, or NULL. */
NO_FEEDBACK static const mblock *overlapping(const mblock *b)
{
    for (int i = 0; i < NSLOTS; i++) {
        const mblock *o = &model.slots[i];
        if (o->p && ranges_overlap(o->p, extent(o), b->p, extent(b)))
            return o;
    }
    return NULL;
}

static void verify_block(const mblock *b, size_t limit, const char *when)
{
    size_t bad = pattern_find_bad(b->p, b->usable, limit, b->id);
    if (bad != PATTERN_OK)
        expect_fail("block %p (%zu bytes, id %llu): byte %zu changed %s", (void *)b->p, b->size,
                    (unsigned long long)b->id, bad, when);
}

/* The heap a block lives in must be one of the drop-in's arenas: otherwise the call did not
 * reach rampart (see the comment at the top). */
static void expect_rampart_block(const void *p, const char *from)
{
    rp_heap *h = rp_heap_of(p);
    EXPECT(h && (h->flags & RP_HEAP_MALLOC_ARENA),
           "%s returned %p, which is not a block of a rampart malloc arena (heap %s): the harness is not calling "
           "rampart's malloc",
           from, p, h ? rp_heap_name(h) : "none");
}

/* Checks a block just returned (alignment, ownership, usable size, overlap), files it in
 * slot s and fills it with its pattern. `min_usable` is what the call promises
 * (the size, or for pvalloc the size rounded up to pages). */
static void adopt(int s, unsigned char *p, size_t size, size_t min_usable, size_t align, uint64_t id,
                  const char *from)
{
    if (align < 16)
        align = 16;
    expect_rampart_block(p, from);
    EXPECT(((uintptr_t)p & (align - 1)) == 0, "%s(%zu) = %p is not aligned to %zu", from, size, (void *)p, align);
    size_t usable = call_usable(p);
    EXPECT(usable >= min_usable, "%s(%zu): malloc_usable_size(%p) = %zu, less than %zu", from, size, (void *)p,
           usable, min_usable);
    /* The drop-in keeps a block on realloc while it wastes at most half of it; pages add at
     * most a page, alignment the slack of an aligned block. Anything beyond is a wrong usable
     * size. */
    EXPECT(usable <= 2 * min_usable + 2 * align + PAGE + 64, "%s(%zu, align %zu): malloc_usable_size(%p) = %zu is absurd",
           from, size, align, (void *)p, usable);
    mblock nb = {p, size, usable, align, id};
    const mblock *o = overlapping(&nb);
    if (o)
        expect_fail("%s(%zu) = %p (+%zu) overlaps live block %p (+%zu)", from, size, (void *)p, usable, (void *)o->p,
                    o->usable);
    model.slots[s] = nb;
    pattern_fill(p, usable, id);
    TRACE("  slot %d: %s(%zu) = %p, usable %zu\n", s, from, size, (void *)p, usable);
}

/* Verifies and frees slot s's block (any of the free functions, or on the second thread). */
static void release_slot(int s, int how)
{
    mblock *b = &model.slots[s];
    if (!b->p)
        return;
    verify_block(b, b->usable, "before free");
    TRACE("  slot %d: free %p (way %d)\n", s, (void *)b->p, how);
    errno = EDOM;
    switch (how) {
    case 1:
        call_free_sized(b->p, b->size);
        break;
    case 2:
        call_cfree(b->p);
        break;
    case 3: /* errno is the worker's own there */
        worker_free(b->p);
        break;
    default:
        call_free(b->p);
        break;
    }
    EXPECT(errno == EDOM, "free(%p) changed errno to %d", (void *)b->p, errno);
    b->p = NULL;
}

static mblock *take_slot(int s)
{
    release_slot(s, 0);
    return &model.slots[s];
}

/* A failed allocation: NULL and the errno expected. */
static void expect_failure(const void *p, int err, int want, const char *from, size_t size)
{
    EXPECT(!p, "%s(%zu) succeeded (%p), expected errno %d", from, size, p, want);
    EXPECT(err == want, "%s(%zu) failed with errno %d, expected %d", from, size, err, want);
}

/* ---- operations -------------------------------------------------------------------------- */

enum {
    OP_MALLOC,         /* slot, size16 */
    OP_CALLOC,         /* slot, count8, size16 */
    OP_REALLOC,        /* slot, size16 */
    OP_REALLOCARRAY,   /* slot, count8, size16 */
    OP_POSIX_MEMALIGN, /* slot, align8, size16 */
    OP_ALIGNED_ALLOC,  /* slot, align8, size16 */
    OP_MEMALIGN,       /* slot, align8, size16 */
    OP_VALLOC,         /* slot, size16, flags8 (bit 0: pvalloc) */
    OP_FREE,           /* slot, how8 (0 free, 1 free_sized, 2 cfree) */
    OP_USABLE,         /* slot: malloc_usable_size is stable, the pattern intact */
    OP_THREAD,         /* what8, slot, size16: on the second thread (what % 6: 0 free, 1 malloc,
                          2 realloc, 3 flush its cache, 4 exit, 5 rp_malloc_check) */
    OP_FLUSH,          /* this thread's cache back to the arenas */
    OP_CHECK,          /* every block, rp_malloc_check on both threads */
    OP_MALLOC_RUN,     /* first slot, count8, size16: runs of one size fill and flush caches */
    OP_FREE_RUN,       /* first slot, count8, stride8 */
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"malloc",   "calloc", "realloc",  "reallocarray", "posix_memalign",
                                               "aligned_alloc", "memalign", "valloc", "free", "usable",
                                               "thread", "flush", "check", "malloc-run", "free-run"};

static void do_malloc(int s, size_t size)
{
    take_slot(s);
    errno = 0;
    unsigned char *p = call_malloc(size);
    if (impossible(size)) {
        expect_failure(p, errno, ENOMEM, "malloc", size);
        return;
    }
    EXPECT(p, "malloc(%zu) failed with errno %d", size, errno);
    adopt(s, p, size, size, 16, ++model.next_id, "malloc");
}

static void do_calloc(int s, size_t n, size_t size)
{
    take_slot(s);
    int overflow;
    size_t total = product(&n, size, &overflow);
    errno = 0;
    unsigned char *p = call_calloc(n, size);
    if (overflow || impossible(total)) {
        expect_failure(p, errno, ENOMEM, "calloc", total);
        return;
    }
    EXPECT(p, "calloc(%zu, %zu) failed with errno %d", n, size, errno);
    size_t bad = pattern_find_nonzero(p, total);
    EXPECT(bad == PATTERN_OK, "calloc(%zu, %zu) = %p: byte %zu is not zero", n, size, (void *)p, bad);
    adopt(s, p, total, total, 16, ++model.next_id, "calloc");
}

/* realloc(p, size) with p = slot s's block (NULL for an empty slot), here or on the second
 * thread, against glibc's rules. */
static void resize(int s, size_t size, unsigned char *q, int err, const char *from)
{
    mblock *b = &model.slots[s];
    if (!b->p) { /* realloc(NULL, size) is malloc(size) */
        if (impossible(size)) {
            expect_failure(q, err, ENOMEM, from, size);
            return;
        }
        EXPECT(q, "%s(NULL, %zu) failed with errno %d", from, size, err);
        adopt(s, q, size, size, 16, ++model.next_id, from);
        return;
    }
    mblock old = *b;
    if (size == 0) { /* frees the block */
        EXPECT(!q, "%s(%p, 0) returned %p, not NULL", from, (void *)old.p, (void *)q);
        b->p = NULL;
        return;
    }
    if (impossible(size)) {
        expect_failure(q, err, ENOMEM, from, size);
        EXPECT(call_usable(old.p) == old.usable, "a failed %s changed the usable size of %p", from,
               (void *)old.p);
        verify_block(&old, old.usable, "by a failed realloc");
        return;
    }
    EXPECT(q, "%s(%p, %zu) failed with errno %d", from, (void *)old.p, size, err);
    mblock moved = old;
    moved.p = q;
    verify_block(&moved, old.usable < size ? old.usable : size, "by realloc");
    b->p = NULL;
    adopt(s, q, size, size, 16, old.id, from);
}

static void do_realloc(int s, size_t size)
{
    mblock *b = &model.slots[s];
    if (b->p)
        verify_block(b, b->usable, "before realloc");
    errno = 0;
    unsigned char *q = call_realloc(b->p, size);
    resize(s, size, q, errno, "realloc");
}

static void do_reallocarray(int s, size_t n, size_t size)
{
    mblock *b = &model.slots[s];
    if (b->p)
        verify_block(b, b->usable, "before reallocarray");
    int overflow;
    size_t total = product(&n, size, &overflow);
    errno = 0;
    unsigned char *q = call_reallocarray(b->p, n, size);
    if (overflow) {
        expect_failure(q, errno, ENOMEM, "reallocarray", size);
        if (b->p)
            verify_block(b, b->usable, "by a refused reallocarray");
        return;
    }
    resize(s, total, q, errno, "reallocarray");
}

static void do_posix_memalign(int s, size_t align, size_t size)
{
    take_slot(s);
    void *sentinel = &model, *out = sentinel;
    errno = EDOM;
    int rc = call_posix_memalign(&out, align, size);
    EXPECT(errno == EDOM, "posix_memalign(%zu, %zu) changed errno to %d", align, size, errno);
    int want = 0;
    if (!is_pow2(align) || align < sizeof(void *))
        want = EINVAL;
    else if (impossible(size) || impossible(align))
        want = ENOMEM;
    EXPECT(rc == want, "posix_memalign(align %zu, %zu) returned %d, expected %d", align, size, rc, want);
    if (rc != 0) {
        EXPECT(out == sentinel || out == NULL, "a failed posix_memalign set its out pointer to %p", out);
        return;
    }
    adopt(s, out, size, size, align, ++model.next_id, "posix_memalign");
}

/* The outcome of an aligned allocation function returning p (errno err): EINVAL when the
 * alignment is refused, ENOMEM when the size or the alignment promised cannot exist, else a
 * block aligned to `promised`. */
static void aligned_outcome(int s, unsigned char *p, int err, int refused, size_t promised, size_t size,
                            const char *from)
{
    if (refused) {
        expect_failure(p, err, EINVAL, from, size);
        return;
    }
    if (impossible(size) || impossible(promised)) {
        expect_failure(p, err, ENOMEM, from, size);
        return;
    }
    EXPECT(p, "%s(%zu, %zu) failed with errno %d", from, promised, size, err);
    adopt(s, p, size, size, promised, ++model.next_id, from);
}

static void do_aligned_alloc(int s, size_t align, size_t size)
{
    take_slot(s);
    errno = 0;
    unsigned char *p = call_aligned_alloc(align, size);
    aligned_outcome(s, p, errno, !is_pow2(align), align, size, "aligned_alloc");
}

static void do_memalign(int s, size_t align, size_t size)
{
    take_slot(s);
    errno = 0;
    unsigned char *p = call_memalign(align, size);
    int err = errno;
    size_t promised = 1; /* a non-power of two is rounded up to the next one */
    while (promised < align && promised <= SIZE_MAX / 2)
        promised <<= 1;
    aligned_outcome(s, p, err, align > SIZE_MAX / 2 + 1, promised, size, "memalign");
}

static void do_valloc(int s, size_t size, int page_rounded)
{
    take_slot(s);
    errno = 0;
    unsigned char *p = page_rounded ? call_pvalloc(size) : call_valloc(size);
    const char *from = page_rounded ? "pvalloc" : "valloc";
    if (impossible(size)) {
        expect_failure(p, errno, ENOMEM, from, size);
        return;
    }
    EXPECT(p, "%s(%zu) failed with errno %d", from, size, errno);
    size_t min_usable = page_rounded ? (size ? (size + PAGE - 1) & ~(PAGE - 1) : PAGE) : size;
    adopt(s, p, size, min_usable, PAGE, ++model.next_id, from);
}

static void do_usable(int s)
{
    mblock *b = &model.slots[s];
    EXPECT(call_usable(NULL) == 0, "malloc_usable_size(NULL) is not 0");
    if (!b->p)
        return;
    EXPECT(call_usable(b->p) == b->usable, "malloc_usable_size(%p) changed from %zu to %zu", (void *)b->p,
           b->usable, call_usable(b->p));
    verify_block(b, b->usable, "while live");
}

static void check_everything(void)
{
    for (int s = 0; s < NSLOTS; s++)
        do_usable(s);
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check: %s", why);
    if (worker_running())
        EXPECT(worker_check(why, sizeof why) == 0, "rp_malloc_check on the second thread: %s", why);
    rp_malloc_stats_t st;
    EXPECT(rp_malloc_stats(&st) == 0 && st.arenas >= 1 && st.cached_bytes <= st.bytes_in_use,
           "rp_malloc_stats: %zu arenas, %zu bytes cached of %zu in use", st.arenas, st.cached_bytes,
           st.bytes_in_use);
}

static void do_thread(uint8_t what, int s, size_t size)
{
    mblock *b = &model.slots[s];
    int err;
    switch (what % 6) {
    case 0: /* a cross-thread free */
        release_slot(s, 3);
        break;
    case 1: { /* a block allocated there, held and freed here */
        take_slot(s);
        unsigned char *p = worker_malloc(size, &err);
        if (impossible(size)) {
            expect_failure(p, err, ENOMEM, "malloc on the second thread", size);
            break;
        }
        EXPECT(p, "malloc(%zu) on the second thread failed with errno %d", size, err);
        adopt(s, p, size, size, 16, ++model.next_id, "malloc on the second thread");
        break;
    }
    case 2: /* a cross-thread realloc */
        if (b->p)
            verify_block(b, b->usable, "before realloc");
        resize(s, size, worker_realloc(b->p, size, &err), err, "realloc on the second thread");
        break;
    case 3:
        worker_flush();
        break;
    case 4: { /* thread exit: its cache goes back to the arenas */
        char why[256];
        if (worker_running())
            EXPECT(worker_check(why, sizeof why) == 0, "rp_malloc_check on the second thread: %s", why);
        worker_exit();
        break;
    }
    default: {
        char why[256];
        EXPECT(worker_check(why, sizeof why) == 0, "rp_malloc_check on the second thread: %s", why);
        break;
    }
    }
}

/* ---- driver ------------------------------------------------------------------------------ */

/* A slot number from the input. */
static int slot(fuzz_input *in) { return fuzz_u8(in) % NSLOTS; }

static void run(fuzz_input *in)
{
    for (model.op = 0; model.op < MAX_OPS && fuzz_more(in); model.op++) {
        int op = fuzz_opcode(in, op_names, OP_COUNT, &model.op_name);
        if (op < 0)
            continue;
        TRACE("op %lu %s\n", model.op, model.op_name);
        switch (op) {
        case OP_MALLOC: {
            int s = slot(in);
            do_malloc(s, decode_size(fuzz_u16(in)));
            break;
        }
        case OP_CALLOC:
        case OP_REALLOCARRAY: {
            int s = slot(in);
            size_t n = decode_count(fuzz_u8(in));
            size_t size = decode_size(fuzz_u16(in));
            if (op == OP_CALLOC)
                do_calloc(s, n, size);
            else
                do_reallocarray(s, n, size);
            break;
        }
        case OP_REALLOC: {
            int s = slot(in);
            do_realloc(s, decode_size(fuzz_u16(in)));
            break;
        }
        case OP_POSIX_MEMALIGN:
        case OP_ALIGNED_ALLOC:
        case OP_MEMALIGN: {
            int s = slot(in);
            size_t align = decode_align(fuzz_u8(in));
            size_t size = decode_size(fuzz_u16(in));
            if (op == OP_POSIX_MEMALIGN)
                do_posix_memalign(s, align, size);
            else if (op == OP_ALIGNED_ALLOC)
                do_aligned_alloc(s, align, size);
            else
                do_memalign(s, align, size);
            break;
        }
        case OP_VALLOC: {
            int s = slot(in);
            size_t size = decode_size(fuzz_u16(in));
            do_valloc(s, size, fuzz_u8(in) & 1);
            break;
        }
        case OP_FREE: {
            int s = slot(in);
            release_slot(s, fuzz_u8(in) % 3);
            break;
        }
        case OP_USABLE:
            do_usable(slot(in));
            break;
        case OP_THREAD: {
            uint8_t what = fuzz_u8(in);
            int s = slot(in);
            do_thread(what, s, decode_size(fuzz_u16(in)));
            break;
        }
        case OP_FLUSH:
            rp_malloc_thread_flush();
            break;
        case OP_CHECK:
            check_everything();
            break;
        case OP_MALLOC_RUN: {
            int s = slot(in);
            int count = fuzz_u8(in);
            size_t size = decode_size(fuzz_u16(in));
            for (int i = 0; i < count; i++)
                do_malloc((s + i) % NSLOTS, size);
            break;
        }
        case OP_FREE_RUN: {
            int s = slot(in);
            int count = fuzz_u8(in);
            int stride = fuzz_u8(in) % 7 + 1;
            for (int i = 0; i < count; i++)
                release_slot((s + i * stride) % NSLOTS, 0);
            break;
        }
        }
        if (model.op % CHECK_EVERY == CHECK_EVERY - 1) {
            char why[256];
            EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check: %s", why);
        }
    }
    model.op_name = "teardown";
    for (int s = 0; s < NSLOTS; s++)
        release_slot(s, 0);
    worker_exit();
    rp_malloc_thread_flush();
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check after freeing everything: %s", why);
}

/* Optional: without it (a driver that does not call it) there is no tracing, and the
 * drop-in sets itself up in the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    expect_tracing = getenv("MALLOC_API_TRACE") != NULL;
    call_free(call_malloc(1));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    expect_context(where, NULL);
    memset(&model, 0, sizeof model);
    fuzz_input in = fuzz_input_of(data, size);
    run(&in);
    return 0;
}
