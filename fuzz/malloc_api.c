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
 * RP_HEAP_MALLOC_ARENA (rp_ms_heap_of: slab blocks too), or the run aborts saying why
 * (fuzz/arena_block.h: the call missed rampart, or rampart no longer takes a block in an
 * arena's memory for a live block, as after its header was overwritten).
 *
 * Sizes stay at most 4 MiB or start at 2^47 (no machine can map that): a size in between
 * could succeed or fail depending on the machine, so a calloc or reallocarray product that
 * falls there is taken with a count of 1 instead.
 *
 * Opcode 15 (OP_MORE) takes a sub-operation byte: the drop-in's statistics (rp_malloc_stats,
 * the printed text parsed back, malloc_stats, mallinfo, mallopt, malloc_trim), bursts that
 * move batches through the transfer caches between the threads, misuse the drop-in reports
 * itself, glibc's __libc_* names, (rare: a magic argument) fork, and damage to the thread and
 * transfer caches their checkers must name.
 *
 * Input: operations until the input ends (fuzz/seeds.py documents the encoding and writes
 * the seeds): an opcode byte (its low four bits) and its arguments, little-endian.
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz/arena_block.h"
#include "fuzz/block_pattern.h"
#include "fuzz/expect.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/op_mutator.h"
#include "fuzz/malloc_stats_text.h"
#include "fuzz/size_codes.h"
#include "fuzz/malloc_worker.h"
#include "rampart.h"
#include "rampart_malloc.h"
#include "src/malloc/arena.h"
#include "src/malloc/cache_mark.h"
#include "src/heap.h"
#include "src/malloc/malloc_slabs.h"
#include "src/pagemap.h"
#include "src/region.h"
#include "src/span.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"
#include "src/malloc/transfer_cache.h"

/* glibc 2.36 does not declare these; the drop-in defines them (malloc.c). */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);
void cfree(void *p);
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

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
static void (*volatile call_free_aligned_sized)(void *, size_t, size_t) = free_aligned_sized;

#define NSLOTS 128
#define BURST_MAX 600               /* blocks of one burst, held in slots NSLOTS.. */
#define ALL_SLOTS (NSLOTS + BURST_MAX)
#define BURSTS_PER_INPUT 4          /* bursts and forks bound an input's cost */
#define BURST_SIZE_MAX 8192         /* and the size of a burst's blocks */
#define FORK_MAGIC 0x4bf0           /* the argument that makes OP_MORE fork */
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
    mblock slots[ALL_SLOTS];
    uint64_t next_id;
    unsigned long op;
    const char *op_name;
    int aliases; /* the calls go through __libc_* and free_aligned_sized (MORE_ALIASES) */
    int in_burst; /* adopt() checks the burst's blocks among themselves afterwards */
    int bursts, forked;
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
/* Not inlined: adopt() is instrumented, and the scan would be traced there. */
NO_FEEDBACK __attribute__((noinline)) static const mblock *overlapping(const mblock *b)
{
    for (int i = 0; i < (model.in_burst ? NSLOTS : ALL_SLOTS); i++) {
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

/* The heap a block lives in must be one of the drop-in's arenas; if it is not, the message
 * says whether the call missed rampart (see the comment at the top) or rampart lost track of
 * the block (arena_block.h). */
static void expect_rampart_block(const void *p, const char *from)
{
    char why[320];
    const char *problem = arena_block_problem(p, why, sizeof why);
    EXPECT(!problem, "%s returned %p: %s", from, p, problem);
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
        if (model.aliases)
            call_free_aligned_sized(b->p, b->align, b->size);
        else
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
    OP_MORE,           /* what8 (% 8, MORE_*), its arguments: statistics, glibc's extras, bursts
                          through the transfer caches, misuse, the __libc_* names, fork */
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"malloc",   "calloc", "realloc",  "reallocarray", "posix_memalign",
                                               "aligned_alloc", "memalign", "valloc", "free", "usable",
                                               "thread", "flush", "check", "malloc-run", "free-run", "more"};

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

/* rp_malloc_check on this thread (`when` says where), and on the second one if it runs. */
static void expect_malloc_check(const char *when)
{
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check%s: %s", when, why);
    if (worker_running())
        EXPECT(worker_check(why, sizeof why) == 0, "rp_malloc_check on the second thread%s: %s", when, why);
}

static stats_snapshot snap_before, snap_after;

/* rp_malloc_stats against the arenas (malloc_stats_text.h), and the blocks the program holds
 * within the bytes in use. */
static void check_stats(void)
{
    stats_snapshot_take(&snap_after);
    size_t held = 0;
    for (int s = 0; s < ALL_SLOTS; s++)
        held += model.slots[s].p ? model.slots[s].usable : 0;
    EXPECT(held <= snap_after.ms.bytes_in_use, "the program holds %zu usable bytes, rp_malloc_stats counts %zu in use",
           held, snap_after.ms.bytes_in_use);
}

static void check_everything(void)
{
    for (int s = 0; s < NSLOTS; s++)
        do_usable(s);
    expect_malloc_check("");
    check_stats();
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
    case 2: { /* a cross-thread realloc */
        if (b->p)
            verify_block(b, b->usable, "before realloc");
        /* Its own statement: as an argument next to err, the call may be evaluated after err
         * is read (the order is unspecified; gcc reads err first). */
        unsigned char *q = worker_realloc(b->p, size, &err);
        resize(s, size, q, err, "realloc on the second thread");
        break;
    }
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

/* ---- more operations (OP_MORE: a sub-operation byte, then its arguments) ------------------ */

enum {
    MORE_STATS,   /* rp_malloc_stats against the arenas and the model */
    MORE_PRINT,   /* rp_malloc_stats_print into memory, parsed back */
    MORE_GLIBC,   /* pad8: malloc_stats, mallinfo, mallinfo2, mallopt, malloc_trim(pad) */
    MORE_BURST,   /* count8, size16: producer/consumer through the transfer caches */
    MORE_MISUSE,  /* kind8, size16: bad frees and reallocs the drop-in itself reports */
    MORE_ALIASES, /* the next operation calls __libc_* and free_aligned_sized */
    MORE_FORK,    /* magic16 (nothing unless FORK_MAGIC), mode8 */
    MORE_DAMAGE,  /* kind8, x8: a thread or transfer cache damaged, checked, put back */
    MORE_COUNT
};

static const char *const more_names[MORE_COUNT] = {"stats", "print", "glibc", "burst", "misuse", "aliases", "fork",
                                                   "damage"};

static void do_stats(void)
{
    errno = 0;
    EXPECT(rp_malloc_stats(NULL) == -1 && errno == EINVAL, "rp_malloc_stats(NULL) did not fail with EINVAL");
    check_stats();
}

static stats_text text;

static void do_print(void)
{
    text.n = 0;
    text.s[0] = '\0';
    stats_snapshot_take(&snap_before);
    rp_malloc_stats_print(stats_text_write, &text);
    stats_snapshot_take(&snap_after);
    stats_text_check(text.s, &snap_before, &snap_after, "rp_malloc_stats_print");
}

/* malloc_stats() prints the same text to stderr: read back from a memory file put there. */
static void check_malloc_stats(void)
{
    int fd = memfd_create("malloc_stats", MFD_CLOEXEC);
    EXPECT(fd >= 0, "memfd_create failed (errno %d)", errno);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    EXPECT(saved >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO, "cannot redirect stderr (errno %d)", errno);
    stats_snapshot_take(&snap_before);
    malloc_stats();
    dup2(saved, STDERR_FILENO);
    close(saved);
    stats_snapshot_take(&snap_after);
    ssize_t n = pread(fd, text.s, sizeof text.s - 1, 0);
    close(fd);
    EXPECT(n > 0, "malloc_stats printed nothing");
    text.s[n] = '\0';
    stats_text_check(text.s, &snap_before, &snap_after, "malloc_stats");
}

/* What mallinfo2 adds up over the arenas. */
typedef struct arena_sums {
    size_t os, free_blocks, large, in_use, free_bytes, page_free;
    uint64_t released;
} arena_sums;

static void sum_arenas(arena_sums *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap_stats_t st;
        rp_heap *h = rp_arena_get(i);
        if (!h || rp_heap_stats(h, &st) != 0)
            continue;
        t->os += st.os_bytes;
        t->free_blocks += st.blocks_free;
        t->large += st.large_blocks;
        t->in_use += st.bytes_in_use;
        t->free_bytes += st.bytes_free;
        t->page_free += st.page_free_bytes;
        t->released += st.os_released;
    }
    /* Slabs (malloc_slabs.h): counted by mallinfo2 and released by malloc_trim too. */
    rp_ms_totals_t sl;
    rp_ms_totals(&sl);
    t->os += sl.slab_bytes;
    t->in_use += sl.live_bytes;
    t->free_bytes += sl.slab_bytes - sl.live_bytes;
    t->released += sl.released_bytes;
}

static void do_glibc(uint8_t pad)
{
    check_malloc_stats();
    arena_sums a, b;
    sum_arenas(&a);
    struct mallinfo2 m2 = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo m = mallinfo();
#pragma GCC diagnostic pop
    sum_arenas(&b);
    if (memcmp(&a, &b, sizeof a) == 0) /* nothing changed meanwhile */
        EXPECT(m2.arena == a.os && m2.ordblks == a.free_blocks && m2.hblks == a.large && m2.uordblks == a.in_use &&
                   m2.fordblks == a.free_bytes && m2.keepcost == a.page_free && m.arena == (int)a.os &&
                   m.ordblks == (int)a.free_blocks && m.hblks == (int)a.large && m.uordblks == (int)a.in_use &&
                   m.fordblks == (int)a.free_bytes && m.keepcost == (int)a.page_free,
               "mallinfo2/mallinfo disagree with the arenas' counters (arena %zu of %zu, uordblks %zu of %zu)",
               m2.arena, a.os, m2.uordblks, a.in_use);
    EXPECT(mallopt(M_TRIM_THRESHOLD, pad) == 1 && mallopt(-1000 - pad, -1) == 1, "mallopt refused a parameter");
    /* malloc_trim: this thread's cache and every transfer cache go back to the heaps, then
     * free memory beyond the pad goes back to the OS. */
    size_t keep = (size_t)(pad & 15) << 16;
    int rc = malloc_trim(keep);
    sum_arenas(&b);
    EXPECT(rc == 0 || (rc == 1 && b.released > a.released), "malloc_trim(%zu) returned %d, the arenas released %llu bytes",
           keep, rc, (unsigned long long)(b.released - a.released));
    rp_malloc_stats_t st;
    rp_malloc_stats(&st);
    EXPECT(st.transfer_bytes == 0, "malloc_trim left %zu bytes in the transfer caches", st.transfer_bytes);
    EXPECT(st.slabs_empty == 0, "malloc_trim left %zu empty slabs kept", st.slabs_empty);
    EXPECT(!rp_tc_self || (size_t)rp_tc_self->room == rp_tc_self->cap, "malloc_trim left %zu bytes in this thread's cache",
           rp_tc_self->cap - (size_t)rp_tc_self->room);
    expect_malloc_check(" after malloc_trim");
}

/* This thread's cache is empty after rp_malloc_thread_flush. */
static void do_flush(void)
{
    rp_malloc_thread_flush();
    EXPECT(!rp_tc_self || (size_t)rp_tc_self->room == rp_tc_self->cap, "rp_malloc_thread_flush left %zu bytes cached",
           rp_tc_self->cap - (size_t)rp_tc_self->room);
}

/* The thread-cache bin a live span or slab block p of the drop-in files it in when freed, or
 * NULL (not a cacheable block). */
static const rp_tc_bin *bin_of(const void *p)
{
    rp_tcache *tc = rp_tc_self;
    if (tc && rp_ms_contains(p)) {
        uint32_t stride;
        return rp_slab_block_live(&rp_ms_space, p, &stride) ? &tc->bins[rp_slab_class_of(stride)] : NULL;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!tc || !r)
        return NULL;
    rp_page *d = rp_page_of(r, p);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return NULL;
    size_t block = call_usable((void *)p) + RP_USER_OFFSET;
    unsigned c = rp_tc_class_of_block(block);
    return c < RP_TC_CLASSES && block <= RP_TC_MAX_CACHED_BLOCK ? &tc->bins[c] : NULL;
}

NO_FEEDBACK static int by_address(const void *a, const void *b)
{
    const mblock *x = *(const mblock *const *)a, *y = *(const mblock *const *)b;
    return x->p < y->p ? -1 : x->p > y->p;
}

/* The k blocks of a burst (each checked against the other slots by adopt) overlap none of
 * each other: sorted by address, each ends before the next begins. */
NO_FEEDBACK static void expect_burst_disjoint(int k)
{
    static const mblock *sorted[BURST_MAX];
    for (int i = 0; i < k; i++)
        sorted[i] = &model.slots[NSLOTS + i];
    qsort(sorted, (size_t)k, sizeof sorted[0], by_address);
    for (int i = 1; i < k; i++)
        if (ranges_overlap(sorted[i - 1]->p, extent(sorted[i - 1]), sorted[i]->p, extent(sorted[i])))
            expect_fail("burst blocks %p (+%zu) and %p (+%zu) overlap", (void *)sorted[i - 1]->p,
                        sorted[i - 1]->usable, (void *)sorted[i]->p, sorted[i]->usable);
}

/* k allocations of size into the burst's slots (expect_burst_disjoint checks them after:
 * qsort may allocate, which must not count as the burst's). */
static void burst_malloc(int k, size_t size)
{
    model.in_burst = 1;
    for (int i = 0; i < k; i++)
        do_malloc(NSLOTS + i, size);
    model.in_burst = 0;
}

/* The arena index of heap h, or -1. */
static int arena_index(const rp_heap *h)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++)
        if (rp_arena_get(i) == h)
            return (int)i;
    return -1;
}

/* Page burst: n blocks of 1..8 pages from valloc on the second thread and n on this one (two
 * arenas, usually), all freed here, alternately: this thread's page bin then holds blocks of
 * both arenas, and its flushes must give each back to its own arena (each arena's heap counts
 * exactly the frees of its own blocks). */
static void page_burst(int n, uint16_t size16)
{
    size_t size = (size_t)(size16 % 8 + 1) * PAGE;
    do_flush(); /* nothing else cached here, so the flushes below free only these blocks */
    int mine[RP_MAX_ARENAS] = {0};
    for (int i = 0; i < n; i++) {
        int err;
        take_slot(NSLOTS + 2 * i);
        unsigned char *p = worker_valloc(size, &err);
        EXPECT(p, "valloc(%zu) on the second thread failed with errno %d", size, err);
        adopt(NSLOTS + 2 * i, p, size, size, PAGE, ++model.next_id, "valloc on the second thread");
        do_valloc(NSLOTS + 2 * i + 1, size, 0);
    }
    rp_heap_stats_t before[RP_MAX_ARENAS];
    for (int i = 0; i < 2 * n; i++)
        mine[arena_index(rp_ms_heap_of(model.slots[NSLOTS + i].p))]++;
    for (unsigned a = 0; a < RP_MAX_ARENAS; a++)
        if (mine[a])
            rp_heap_stats(rp_arena_get(a), &before[a]);
    for (int i = 0; i < 2 * n; i++)
        release_slot(NSLOTS + i, 0);
    do_flush();
    for (unsigned a = 0; a < RP_MAX_ARENAS; a++) {
        rp_heap_stats_t after;
        if (!mine[a])
            continue;
        rp_heap_stats(rp_arena_get(a), &after);
        EXPECT(after.free_calls - before[a].free_calls == (uint64_t)mine[a],
               "arena malloc-%u had %d of the page blocks freed, its heap counts %llu frees", a, mine[a],
               (unsigned long long)(after.free_calls - before[a].free_calls));
    }
}

/* Burst: this thread allocates k blocks of one size, the second thread (its cache flushed
 * first) frees them all, overflowing its bin: the flushed batches go to this thread's
 * arena's transfer cache. This thread then (its cache flushed) allocates k blocks again:
 * refills take those batches back, and the arena's heap counts only the blocks that did not
 * come from them: k = taken + from the heap - left in the bin. */
static void do_burst(uint8_t count, uint16_t size16)
{
    if (model.bursts++ >= BURSTS_PER_INPUT)
        return;
    if (count > 200) {
        page_burst(count - 200, size16);
        return;
    }
    int k = count * 3;
    size_t size = decode_size(size16) % (BURST_SIZE_MAX + 1);
    if (k == 0)
        return;
    burst_malloc(k, size);
    expect_burst_disjoint(k);
    mblock *first = &model.slots[NSLOTS];
    rp_tcache *tc = rp_tc_self;
    rp_heap *arena = tc ? tc->arena : NULL;
    rp_xfer *x = arena ? rp_xfer_of(arena) : NULL;
    /* The accounting below holds for blocks of this thread's arena, all of the class malloc
     * asks for and all cached when freed. */
    unsigned c = rp_tc_class_of_need(rp_span_block_need(size));
    const rp_tc_bin *bin = x && c < RP_TC_CLASSES ? &tc->bins[c] : NULL;
    int uniform = bin != NULL;
    for (int i = 0; i < k && uniform; i++) {
        const mblock *b = &model.slots[NSLOTS + i];
        uniform = b->usable == first->usable && bin_of(b->p) == bin && rp_ms_heap_of(b->p) == arena;
    }

    worker_flush();
    static void *ptrs[BURST_MAX];
    for (int i = 0; i < k; i++) {
        mblock *b = &model.slots[NSLOTS + i];
        verify_block(b, b->usable, "before a burst's cross-thread free");
        ptrs[i] = b->p;
        b->p = NULL;
    }
    /* Room for the first batch the second thread's bin overflows with (at most half a bin of
     * at most RP_TC_LIMIT_MAX blocks), under the own batches' cap as well in case the second
     * thread shares this arena. */
    int room = uniform && x->n[c] < RP_XFER_SLOTS && x->bytes + RP_XFER_BATCH * rp_tc_class_size(c) <= x->cap &&
               x->own_bytes + RP_XFER_BATCH * rp_tc_class_size(c) <= x->own_cap;
    rp_malloc_stats_t s1, s2, s3, s4;
    rp_malloc_stats(&s1);
    worker_free_many(ptrs, (size_t)k);
    rp_malloc_stats(&s2);
    /* The second thread's bin (flushed, so it reserves nothing) grows as it fills, up to its
     * most; past that, it flushes. */
    if (room && k > (int)tc->bin_max[c])
        EXPECT(s2.transfer_puts > s1.transfer_puts,
               "%d cross-thread frees of %zu-byte blocks (a bin holds at most %u) put no batch into the transfer cache",
               k, first->usable, (unsigned)tc->bin_max[c]);

    do_flush();
    int expect_take = uniform && x->n[c] > 0;
    rp_heap_stats_t h0, h1;
    uint64_t slab_taken0, slab_given0, slab_taken1, slab_given1; /* slab blocks (malloc_slabs.h) */
    rp_heap_stats(arena, &h0);
    rp_ms_counts(arena, &slab_taken0, &slab_given0);
    rp_malloc_stats(&s3);
    burst_malloc(k, size);
    rp_malloc_stats(&s4);
    rp_ms_counts(arena, &slab_taken1, &slab_given1);
    rp_heap_stats(arena, &h1);
    expect_burst_disjoint(k);
    uint64_t takes = s4.transfer_takes - s3.transfer_takes;
    if (expect_take)
        EXPECT(takes > 0, "%d allocations of %zu bytes took no batch from the transfer cache holding %u", k, size,
               x->n[c]);
    if (uniform && s4.transfer_puts == s3.transfer_puts && h1.free_calls == h0.free_calls &&
        slab_given1 == slab_given0) {
        /* From the heap or the arena's slab pool; left in the bin or its run of fresh slab
         * blocks (T6 of thread_cache.h). */
        long long from_heap = (long long)(h1.alloc_calls - h0.alloc_calls + slab_taken1 - slab_taken0);
        unsigned left = bin->count + (c < RP_SLAB_CLASSES ? tc->runs[c].left : 0);
        long long taken = k - from_heap + left;
        EXPECT(taken >= (long long)takes && taken <= (long long)takes * RP_TC_LIMIT_MAX &&
                   (takes > 0 || taken == 0),
               "%d allocations: %lld blocks from the heap, %u left in the bin, so %lld from %llu transfer batches", k,
               from_heap, left, taken, (unsigned long long)takes);
        EXPECT(s3.transfer_bytes - s4.transfer_bytes >= (size_t)taken * rp_tc_class_size(c),
               "%lld blocks taken from the transfer cache, which shrank by %zu bytes only", taken,
               s3.transfer_bytes - s4.transfer_bytes);
    }
    for (int i = 0; i < k; i++)
        release_slot(NSLOTS + i, 0);
    expect_malloc_check(" after a burst");
}

/* Reports the drop-in makes for misuse, caught while MORE_MISUSE runs. */
static struct {
    int n;
    rp_error_kind kind;
    const void *address;
    char message[160];
} caught;

static void catch_report(const rp_report *r, void *arg)
{
    (void)arg;
    caught.n++;
    caught.kind = r->kind;
    caught.address = r->address;
    snprintf(caught.message, sizeof caught.message, "%s", r->message);
}

static void expect_report(rp_error_kind kind, const void *p, const char *says, const char *what)
{
    EXPECT(caught.n == 1 && caught.kind == kind && caught.address == p && strstr(caught.message, says),
           "%s(%p): %d reports, the last %s at %p ('%s'); expected one %s report saying '%s'", what, p, caught.n,
           rp_error_kind_name(caught.kind), caught.address, caught.message, rp_error_kind_name(kind), says);
}

/* Examines the frees this thread collected and has not examined yet (T5 in thread_cache.h):
 * where the harness looks into the cache, or expects a report, right after a free. Elsewhere
 * the frees stay collected as in any program, and reach their bins in batches. */
static void settle_frees(void)
{
    if (rp_tc_self)
        rp_malloc_free_collected(rp_tc_self);
}

#ifndef RP_MALLOC_COEXISTS
#define RP_MALLOC_COEXISTS 0
#endif

/* Not rampart's memory: a static buffer, pointers into its middle (free's fast path reads
 * the 16 bytes in front of a pointer). */
static _Alignas(4096) unsigned char foreign[8192];

/* A block freed into this thread's cache (a span block of `size` bytes, or pages from
 * valloc), or NULL when the free did not cache it (a full bin sends it to the heap). */
static void *cached_block(size_t size, int pages)
{
    unsigned char *p = pages ? call_valloc(size) : call_malloc(size);
    EXPECT(p, "allocating %zu bytes failed (errno %d)", size, errno);
    expect_rampart_block(p, pages ? "valloc" : "malloc");
    const rp_tc_bin *bin = pages ? NULL : bin_of(p);
    size_t npages = (call_usable(p) + PAGE - 1) / PAGE;
    call_free(p);
    settle_frees();
    rp_tcache *tc = rp_tc_self;
    if (pages && tc && npages >= 1 && npages <= RP_TC_PAGE_BINS) {
        const rp_tc_pbin *pb = &tc->pbins[npages - 1];
        return pb->count && pb->slot[pb->count - 1].p == p ? p : NULL;
    }
    return bin && bin->count && bin->slots[bin->count - 1] == p ? p : NULL;
}

static void do_misuse(uint8_t kind, uint16_t size16)
{
    size_t size = decode_size(size16) % (RP_TC_MAX_BLOCK - RP_USER_OFFSET);
    void *old_arg;
    rp_report_fn old = rp_set_report_fn(catch_report, NULL, &old_arg);
    memset(&caught, 0, sizeof caught);
    unsigned char *f = foreign + 2048 + (size16 & 0x7ff);
    rp_malloc_stats_t s0, s1;
    switch (kind % 5) {
    case 0:   /* a second free of a block in this thread's cache */
    case 4: { /* the same for a block of pages in a page bin */
        void *p = cached_block(kind % 5 ? size % (16 * PAGE) : size, kind % 5 != 0);
        if (!p)
            break;
        errno = EDOM;
        call_free(p);
        settle_frees();
        expect_report(RP_ERR_DOUBLE_FREE, p, "held in a thread cache", "free");
        EXPECT(errno == EDOM, "a reported free changed errno to %d", errno);
        break;
    }
    case 1: { /* realloc of a block in this thread's cache */
        void *p = cached_block(size, 0);
        if (!p)
            break;
        errno = 0;
        void *q = call_realloc(p, size + 1);
        EXPECT(!q && errno == EINVAL, "realloc of a cached block returned %p (errno %d)", q, errno);
        expect_report(RP_ERR_DOUBLE_FREE, p, "held in a thread cache", "realloc");
        break;
    }
    case 2: /* free of memory rampart never returned: reported at the call, counted (ignored
               where another allocator shares the process: RP_MALLOC_COEXISTS) */
        rp_malloc_stats(&s0);
        errno = EDOM;
        call_free(f);
        EXPECT(caught.n == (RP_MALLOC_COEXISTS ? 0 : 1) && errno == EDOM,
               "free(%p) of foreign memory: %d reports at the call, errno %d", (void *)f, caught.n, errno);
        if (!RP_MALLOC_COEXISTS)
            expect_report(RP_ERR_INVALID_FREE, f, "not allocated by rampart", "free");
        settle_frees();
        rp_malloc_stats(&s1);
        EXPECT(s1.foreign_frees == s0.foreign_frees + 1, "free(%p) of foreign memory: foreign frees %llu -> %llu",
               (void *)f, (unsigned long long)s0.foreign_frees, (unsigned long long)s1.foreign_frees);
        memset(&caught, 0, sizeof caught);
        EXPECT(call_usable(f) == 0, "malloc_usable_size of foreign memory is not 0");
        EXPECT(caught.n == (RP_MALLOC_COEXISTS ? 0 : 1), "malloc_usable_size(%p) of foreign memory: %d reports",
               (void *)f, caught.n);
        break;
    default: { /* realloc of memory rampart never returned: its size is unknown */
        errno = 0;
        void *q = call_realloc(f, size + 1);
        EXPECT(!q && errno == EINVAL, "realloc(%p) of foreign memory returned %p (errno %d)", (void *)f, q, errno);
        expect_report(RP_ERR_INVALID_FREE, f, "not allocated by rampart", "realloc");
        break;
    }
    }
    rp_set_report_fn(old, old_arg, NULL);
    expect_malloc_check(" after misuse");
}

/* ---- damage (MORE_DAMAGE) ---------------------------------------------------------------- */

/* Bytes changed on purpose, put back by undo() (newest first). */
static struct {
    void *at;
    unsigned char old[16];
    size_t len;
} undo_log[4];
static int undo_n;

static void poke(void *at, const void *value, size_t len)
{
    EXPECT(undo_n < 4 && len <= sizeof undo_log[0].old, "too many changes to undo");
    undo_log[undo_n].at = at;
    undo_log[undo_n].len = len;
    memcpy(undo_log[undo_n++].old, at, len);
    memcpy(at, value, len);
}

#define POKE(field, value)                                                                     \
    do {                                                                                       \
        __typeof__(field) v_ = (value);                                                        \
        poke(&(field), &v_, sizeof v_);                                                        \
    } while (0)

static void undo(void)
{
    while (undo_n > 0) {
        undo_n--;
        memcpy(undo_log[undo_n].at, undo_log[undo_n].old, undo_log[undo_n].len);
    }
}

/* An offset into the cached block p that is not a block's start: 16 bytes (for a span block,
 * its user data then passes for no header), or 8 for a slab block of stride 16, whose next
 * block starts 16 bytes on (and may be cached elsewhere, its mark intact). */
static size_t into_block(const void *p)
{
    uint32_t stride;
    return rp_ms_contains(p) && rp_slab_block_live(&rp_ms_space, p, &stride) && stride == 16 ? 8 : 16;
}

/* A bin of this thread's cache holding at least two blocks of `size` bytes, the last three
 * freed on top (NULL when the frees did not cache them). */
static rp_tc_bin *prepared_bin(size_t size)
{
    void *p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = call_malloc(size);
        EXPECT(p[i], "malloc(%zu) failed (errno %d)", size, errno);
        expect_rampart_block(p[i], "malloc");
    }
    const rp_tc_bin *bin = bin_of(p[0]);
    for (int i = 0; i < 3; i++)
        call_free(p[i]);
    settle_frees();
    return bin && bin->count >= 2 && bin->slots[bin->count - 1] == p[2] ? (rp_tc_bin *)bin : NULL;
}

/* The most recent batch of some class in this thread's arena's transfer cache: its slot
 * index, or -1. */
static int some_batch(rp_xfer **xp, unsigned *cp)
{
    rp_xfer *x = rp_tc_self ? rp_xfer_of(rp_tc_self->arena) : NULL;
    for (unsigned c = 0; x && c < RP_TC_CLASSES; c++) {
        if (x->n[c] > 0) {
            *xp = x;
            *cp = c;
            return x->n[c] - 1;
        }
    }
    return -1;
}

/* The transfer cache damaged, or NULL for this thread's cache: the checker of the one
 * structure damaged (the part of rp_malloc_check that covers it) is what must answer. */
static rp_xfer *damaged_xfer;

static int damaged_check(char *why, size_t len)
{
    return damaged_xfer ? rp_xfer_check(damaged_xfer, rp_tc_self->arena, why, len)
                        : rp_tc_check(rp_tc_self, why, len);
}

/* The check must fail naming `invariant`, and pass once the bytes are back. */
static void expect_named(const char *invariant, const char *what)
{
    char why[256], all[256];
    int rc = damaged_check(why, sizeof why);
    /* rp_malloc_check checks every transfer cache (a thread's cache only for its own thread). */
    if (damaged_xfer)
        EXPECT(rp_malloc_check(all, sizeof all) != 0 && strcmp(all, why) == 0,
               "%s: rp_malloc_check does not say what rp_xfer_check says (%s)", what, why);
    undo();
    EXPECT(rc != 0 && strncmp(why, invariant, strlen(invariant)) == 0, "%s: the check %s%s, expected %s", what,
           rc ? "says " : "passes", rc ? why : "", invariant);
    EXPECT(damaged_check(why, sizeof why) == 0, "%s, put back: the check says %s", what, why);
}

static void do_damage(uint8_t kind, uint8_t x)
{
    rp_tcache *tc = rp_tc_self;
    damaged_xfer = NULL;
    if (!tc)
        return;
    kind %= 16;
    size_t size = (size_t)(x >> 2) * 16;
    if (kind < 8) {
        rp_tc_bin *bin = prepared_bin(size);
        if (!bin)
            return;
        void **top = &bin->slots[bin->count - 1];
        uint64_t *head = *top;
        switch (kind) {
        case 0:
            if ((x & 3) == 1) {
                POKE(*top, (void *)((char *)head + into_block(head)));
                expect_named("T1:", "a slot pointing into its block");
            } else if ((x & 3) == 2) {
                POKE(bin->slots, bin->slots + 1);
                expect_named("T2:", "a bin's slots moved");
            } else {
                POKE(*top, NULL);
                expect_named("T1:", "a slot zeroed");
            }
            break;
        case 1: POKE(*rp_cache_mark(head), 0); expect_named("T4:", "a cached block's mark cleared"); break;
        case 2: POKE(top[-1], (void *)head); expect_named("T1:", "a block in its bin twice"); break;
        case 3:
            /* A limit one too low: below the count of a full bin (T2), else reserving one
             * block less than the cache counts (T3). */
            POKE(bin->limit, bin->limit - 1);
            expect_named(bin->count > bin->limit ? "T2:" : "T3:", "a bin's limit one too low");
            break;
        case 4:
            /* A limit one too high: past the bin's stretch of slots (T2), else reserving one
             * block more than the cache counts (T3). */
            POKE(bin->limit, bin->limit + 1);
            expect_named(bin->limit > tc->bin_max[(unsigned)(bin - tc->bins)] ? "T2:" : "T3:",
                         "a bin's limit one too high");
            break;
        case 5: POKE(bin->count, bin->limit + 1); expect_named("T2:", "a bin above its limit"); break;
        case 6: POKE(tc->room, tc->room - 16); expect_named("T3:", "the cache's bytes miscounted"); break;
        default: POKE(tc->room, -1); expect_named("T3:", "the cache above its cap"); break;
        }
        return;
    }
    if (kind < 10) {
        unsigned char *p = cached_block(PAGE, 1);
        if (!p)
            return;
        rp_tc_pbin *pb = &tc->pbins[0];
        if (kind == 8) {
            POKE(pb->count, pb->limit + 1);
            expect_named("T2:", "a page bin above its limit");
        } else if ((x & 1) && pb->count < pb->limit && tc->room >= (ptrdiff_t)PAGE) {
            /* Counted too (T3 holds: the cache has room for one more page), so that only the
             * duplicate is wrong. */
            POKE(pb->slot[pb->count], pb->slot[pb->count - 1]);
            POKE(pb->count, pb->count + 1);
            POKE(tc->room, tc->room - (ptrdiff_t)PAGE);
            expect_named("T1:", "a page block in its bin twice");
        } else {
            rp_page *d = pb->slot[pb->count - 1].d;
            POKE(d->flags, (uint8_t)(d->flags & ~RP_PAGEF_CACHED));
            expect_named("T1:", "a cached page block's flag cleared");
        }
        return;
    }
    rp_xfer *xf;
    unsigned c;
    int k = some_batch(&xf, &c);
    if (k < 0)
        return;
    damaged_xfer = xf;
    uint8_t *count = &xf->count[c][k];
    void **first = &xf->store[c][k][0];
    uint64_t *w = *first;
    switch (kind) {
    case 10:
        POKE(*count, (uint8_t)(*count < RP_XFER_BATCH ? *count + 1 : *count - 1));
        expect_named("X3:", "a batch's count changed");
        break;
    case 11:
        POKE(*count, (uint8_t)(x & 1 ? 0 : RP_XFER_BATCH + 1));
        expect_named("X2:", x & 1 ? "an empty batch" : "a batch above its size");
        break;
    case 12:
        POKE(*first, x & 1 ? NULL : (void *)((char *)w + into_block(w)));
        expect_named("X1:", x & 1 ? "a batch's slot zeroed" : "a batch's slot pointing into its block");
        break;
    case 13:
        if (x & 1)
            POKE(xf->cap, xf->bytes - 1);
        else
            POKE(xf->bytes, xf->bytes + 16);
        expect_named("X3:", x & 1 ? "a transfer cache above its cap" : "a transfer cache's bytes miscounted");
        break;
    case 14: POKE(xf->n[c], RP_XFER_SLOTS + 1); expect_named("X2:", "a transfer cache above its slots"); break;
    default: POKE(*rp_cache_mark(w), 0); expect_named("X1:", "a batched block's mark cleared"); break;
    }
}

/* ---- fork -------------------------------------------------------------------------------- */

/* Coverage builds (-fprofile-instr-generate) write a child's profile here: _exit and a
 * signal skip the at-exit writer. Elsewhere the symbol is absent. */
extern int __llvm_profile_write_file(void) __attribute__((weak));

static void write_coverage(void)
{
    if (__llvm_profile_write_file)
        __llvm_profile_write_file();
}

/* Then abort() kills the process all the same. */
static void coverage_on_abort(int sig)
{
    (void)sig;
    write_coverage();
}

static void child_where(FILE *out) { fprintf(out, "malloc_api: the child of fork (pid %d): ", (int)getpid()); }

/* The child of fork: only the forking thread's cache is left; the allocator is consistent,
 * every block the program holds kept its contents and can be freed (those the second thread
 * allocated too), and it allocates and frees in every tier. */
__attribute__((noreturn)) static void fork_child(void)
{
    signal(SIGABRT, SIG_DFL); /* a failed expectation just kills the child */
    expect_context(child_where, NULL);
    worker_forget();
    expect_malloc_check("");
    rp_malloc_stats_t st;
    rp_malloc_stats(&st);
    EXPECT(st.thread_caches == 1, "%zu thread caches, expected only the forking thread's", st.thread_caches);
    for (int s = 0; s < ALL_SLOTS; s++)
        release_slot(s, 0);
    static const size_t sizes[] = {0, 24, 1000, 5000, 70000, (size_t)1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        do_malloc(0, sizes[i]);
        release_slot(0, 0);
    }
    rp_malloc_thread_flush();
    expect_malloc_check(" after freeing everything");
    write_coverage();
    _exit(0);
}

/* The default report function, in a grandchild whose stderr is a pipe: a second free of a
 * cached block prints one line and aborts. */
__attribute__((noreturn)) static void default_report_child(int fd)
{
    signal(SIGABRT, SIG_DFL);
    dup2(fd, STDERR_FILENO);
    rp_set_report_fn(NULL, NULL, NULL);
    void *p = cached_block(100, 0);
    if (!p)
        _exit(2); /* nothing to show */
    signal(SIGABRT, coverage_on_abort);
    call_free(p);
    settle_frees();
    _exit(3); /* the default report returned */
}

static pid_t fork_or_fail(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork failed (errno %d)", errno);
    return pid;
}

static int wait_for(pid_t pid)
{
    int status;
    /* libFuzzer's timers interrupt the wait (EINTR): wait again. */
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        continue;
    EXPECT(got == pid, "waitpid failed (errno %d)", errno);
    return status;
}

static void check_default_report(void)
{
    int fds[2];
    EXPECT(pipe(fds) == 0, "pipe failed (errno %d)", errno);
    pid_t pid = fork_or_fail();
    if (pid == 0)
        default_report_child(fds[1]);
    close(fds[1]);
    char out[512];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)got;
    close(fds[0]);
    out[n] = '\0';
    int status = wait_for(pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
        return;
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
           "a double free with the default report function: the process ended with status %#x, not SIGABRT", status);
    EXPECT(strncmp(out, "rampart: double-free: free(0x", 29) == 0 && strchr(out, '\n') == out + n - 1 &&
               strstr(out, "held in a thread cache"),
           "the default report printed '%s'", out);
}

/* Compared out of sight of the fuzzer's comparison tracing, so it does not learn the magic
 * and fork stays rare. */
NO_FEEDBACK __attribute__((noinline)) static int fork_wanted(uint16_t magic) { return magic == FORK_MAGIC; }

static void do_fork(uint16_t magic, uint8_t mode)
{
    if (!fork_wanted(magic) || model.forked)
        return;
    model.forked = 1;
    rp_malloc_stats_t before, after;
    rp_malloc_stats(&before);
    pid_t pid = fork_or_fail();
    if (pid == 0)
        fork_child();
    int status = wait_for(pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child of fork failed (status %#x)", status);
    rp_malloc_stats(&after);
    EXPECT(after.thread_caches == before.thread_caches, "fork changed the parent's thread caches from %zu to %zu",
           before.thread_caches, after.thread_caches);
    expect_malloc_check(" after fork");
    if (mode & 1)
        check_default_report();
}

/* ---- driver ------------------------------------------------------------------------------ */

/* A slot number from the input. */
static int slot(fuzz_input *in) { return fuzz_u8(in) % NSLOTS; }

static void run_op(fuzz_input *in, int op);

/* glibc's internal names of the calls above (MORE_ALIASES swaps them in and back). */
static void *(*volatile alias_malloc)(size_t) = __libc_malloc;
static void *(*volatile alias_calloc)(size_t, size_t) = __libc_calloc;
static void *(*volatile alias_realloc)(void *, size_t) = __libc_realloc;
static void *(*volatile alias_memalign)(size_t, size_t) = __libc_memalign;
static void *(*volatile alias_valloc)(size_t) = __libc_valloc;
static void *(*volatile alias_pvalloc)(size_t) = __libc_pvalloc;
static void (*volatile alias_free)(void *) = __libc_free;

#define SWAP(a, b)                                                                             \
    do {                                                                                       \
        __typeof__(a) t_ = (a);                                                                \
        (a) = (b);                                                                             \
        (b) = t_;                                                                              \
    } while (0)

static void swap_aliases(void)
{
    SWAP(call_malloc, alias_malloc);
    SWAP(call_calloc, alias_calloc);
    SWAP(call_realloc, alias_realloc);
    SWAP(call_memalign, alias_memalign);
    SWAP(call_valloc, alias_valloc);
    SWAP(call_pvalloc, alias_pvalloc);
    SWAP(call_free, alias_free);
    model.aliases = !model.aliases;
}

/* The next operation through glibc's internal names (__libc_malloc, ...) and
 * free_aligned_sized instead of free_sized. */
static void with_aliases(fuzz_input *in)
{
    int op = fuzz_opcode(in, op_names, OP_COUNT, &model.op_name);
    if (op < 0)
        return;
    int swap = !model.aliases; /* already swapped in: an alias of an alias */
    if (swap)
        swap_aliases();
    TRACE("  (through the aliases) %s\n", model.op_name);
    run_op(in, op);
    if (swap)
        swap_aliases();
}

static void run_more(fuzz_input *in)
{
    int what = fuzz_u8(in) % MORE_COUNT;
    model.op_name = more_names[what];
    TRACE("  %s\n", model.op_name);
    switch (what) {
    case MORE_STATS:
        do_stats();
        break;
    case MORE_PRINT:
        do_print();
        break;
    case MORE_GLIBC:
        do_glibc(fuzz_u8(in));
        break;
    case MORE_BURST: {
        uint8_t count = fuzz_u8(in);
        do_burst(count, fuzz_u16(in));
        break;
    }
    case MORE_MISUSE: {
        uint8_t kind = fuzz_u8(in);
        do_misuse(kind, fuzz_u16(in));
        break;
    }
    case MORE_ALIASES:
        with_aliases(in);
        break;
    case MORE_FORK: {
        uint16_t magic = fuzz_u16(in);
        do_fork(magic, fuzz_u8(in));
        break;
    }
    default: {
        uint8_t kind = fuzz_u8(in);
        do_damage(kind, fuzz_u8(in));
        break;
    }
    }
}

static void run_op(fuzz_input *in, int op)
{
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
        do_flush();
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
    case OP_MORE:
        run_more(in);
        break;
    }
}

static void run(fuzz_input *in)
{
    for (model.op = 0; model.op < MAX_OPS && fuzz_more(in); model.op++) {
        int op = fuzz_opcode(in, op_names, OP_COUNT, &model.op_name);
        if (op < 0)
            continue;
        TRACE("op %lu %s\n", model.op, model.op_name);
        run_op(in, op);
        if (model.op % CHECK_EVERY == CHECK_EVERY - 1) {
            char why[256];
            EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check: %s", why);
        }
    }
    model.op_name = "teardown";
    for (int s = 0; s < ALL_SLOTS; s++)
        release_slot(s, 0);
    worker_exit();
    rp_malloc_thread_flush();
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check after freeing everything: %s", why);
}

/* ---- structure-aware mutation (fuzz/op_mutator.h): bytes of each operation ---------------- */

static size_t op_length(const uint8_t *op, size_t left)
{
    /* the opcode byte and the arguments run_op() reads */
    static const uint8_t length[16] = {4, 5, 4, 5, 5, 5, 5, 5, 3, 2, 5, 1, 1, 5, 4, 0};
    static const uint8_t more[MORE_COUNT] = {2, 2, 3, 5, 5, 2, 5, 4}; /* OP_MORE, by sub-operation */
    unsigned code = op[0] & 15;
    if (code != OP_MORE)
        return length[code];
    if (left < 2)
        return 2;
    unsigned what = op[1] % MORE_COUNT;
    if (what == MORE_ALIASES) /* the operation it runs follows */
        return left > 2 && (op[2] & 15) != OP_MORE ? 2 + length[op[2] & 15] : 3;
    return more[what];
}

static const op_grammar grammar = {0, op_length, (1u << OP_COUNT) - 1};
OP_MUTATOR(grammar)

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
