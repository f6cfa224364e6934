/* malloc_threads: the malloc drop-in (//src/malloc:rampart_malloc) from 2 to 4 threads at once,
 * on a schedule the fuzzer chooses. Built for ASan (--config=fuzz) and for ThreadSanitizer
 * (--config=fuzz_tsan, .bazelrc): TSan sees the drop-in's own synchronisation (its locks,
 * its lock-free frees, the transfer caches and the slab space) between threads that really
 * run at the same time, so a structure changed without its lock is a data race report.
 *
 * Input: a header byte (threads = 2 + byte % 3), then operations. An operation's byte names
 * the operation in its low four bits and, for a thread's operation, the thread in its high
 * bits (% threads); its arguments follow. The operations of one phase are queued on their
 * threads in input order; a barrier (or the input's end) runs the phase: every thread runs its
 * queue at the same time as the others, and the main thread waits for all, then checks
 * everything (the interleaving points are the barriers, yields and spins the input places).
 *   0 malloc   slot, size16            7 check     rp_malloc_check on that thread
 *   1 free     slot                    8 exit      the thread exits after this phase (its
 *   2 realloc  slot, size16                        cache torn down), a new one takes its place
 *   3 calloc   slot, count, size16     9 barrier   (no thread) the phase runs
 *   4 memalign slot, align, size16    10 fork      (no thread) the main thread forks while the
 *   5 burst    class, count16                      phase runs; the child checks and allocates
 *   6 flush    rp_malloc_thread_flush 11 usable    slot: malloc_usable_size stable
 *  12 yield    sched_yield            13 spin      n: a busy loop of n * 64 steps
 * Slots: 256 blocks; in phase k a thread owns the slots s with (s + k) % threads == its index
 * (a slot argument picks one of those), so a block allocated in one phase is usually freed or
 * resized by another thread in a later one: cross-thread frees, realloc of another thread's
 * blocks, and blocks outliving the thread that allocated them (exit). A burst allocates
 * count % 8192 blocks of one small class on the thread, checks them and frees them all, then
 * flushes: slabs fill up and (once the arena's transfer cache overflows) empty, go back to the
 * slab space and are taken again while the other threads do the same on their own arenas.
 *
 * Checks: every block non-NULL (sizes stay at most 4 MiB), aligned, a live block of a malloc
 * arena (fuzz/arena_block.h names the cause otherwise), its usable size at least its size
 * and stable, its pattern intact when it is freed, resized or checked; after every phase (by
 * the main thread, every worker waiting) the live blocks overlap nowhere, keep their
 * patterns and usable sizes, and rp_malloc_check passes; the fork child passes
 * rp_malloc_check, allocates and frees in every tier and exits 0. At the end every thread
 * frees the slots it owns, flushes and exits.
 *
 * MALLOC_THREADS_TRACE=1 traces. A violated expectation prints what and where, then aborts. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz/arena_block.h"
#include "fuzz/block_pattern.h"
#include "fuzz/expect.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/op_mutator.h"
#include "fuzz/size_codes.h"
#include "rampart_malloc.h"

#define MAX_THREADS 4
#define NSLOTS 256
#define PHASE_OPS 256 /* operations one thread queues in one phase */
#define MAX_PHASES 64
#define BURST_MAX 8192 /* 8 MB of 1000-byte blocks: beyond what an arena's transfer cache holds */
#define PAGE ((size_t)4096)

/* The calls under test go through pointers: the compiler must not act on what the
 * declarations promise, nor fold calls. */
static void *(*volatile call_malloc)(size_t) = malloc;
static void *(*volatile call_calloc)(size_t, size_t) = calloc;
static void *(*volatile call_realloc)(void *, size_t) = realloc;
static void *(*volatile call_memalign)(size_t, size_t) = memalign;
static size_t (*volatile call_usable)(void *) = malloc_usable_size;
static void (*volatile call_free)(void *) = free;

enum {
    OP_MALLOC,
    OP_FREE,
    OP_REALLOC,
    OP_CALLOC,
    OP_MEMALIGN,
    OP_BURST,
    OP_FLUSH,
    OP_CHECK,
    OP_EXIT,
    OP_BARRIER,
    OP_FORK,
    OP_USABLE,
    OP_YIELD,
    OP_SPIN,
    OP_COUNT
};

static const char *const op_names[OP_COUNT] = {"malloc", "free",    "realloc", "calloc", "memalign",
                                               "burst",  "flush",   "check",   "exit",   "barrier",
                                               "fork",   "usable",  "yield",   "spin"};

typedef struct op {
    uint8_t code, a, c;
    uint16_t b;
} op;

typedef struct mblock {
    unsigned char *p;
    size_t size, usable, align;
    uint64_t id;
} mblock;

typedef struct worker {
    pthread_t thread;
    int index;
    int running;
    unsigned seen;      /* the phase it last started */
    int exit_after;     /* leaves after this phase */
    op ops[PHASE_OPS];
    int nops;
    void *burst[BURST_MAX];
    /* For the stall watchdog (wait_for_workers), read by the main thread: atomic. */
    unsigned long progress; /* operations finished, ever */
    int at;                 /* the operation it is in, -1 between phases */
} worker;

static struct {
    int nthreads;
    unsigned phase;
    mblock slots[NSLOTS];
    worker workers[MAX_THREADS];
    uint64_t next_id[MAX_THREADS]; /* ids: thread-local counters, the thread in the top bits */
    unsigned long op;
    const char *op_name;
    int forked, fork_now;
} model;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static unsigned generation;
static int done_count;

/* Called by TSan from inside its runtime: neither race-checked nor counted as coverage. */
#if defined(__clang__)
#define NOT_INSTRUMENTED __attribute__((no_sanitize("thread"), no_sanitize("coverage")))
#else
#define NOT_INSTRUMENTED __attribute__((no_sanitize("thread")))
#endif

/* ThreadSanitizer: a report stops the run (libFuzzer then keeps the input). Other builds
 * never call this. TSan calls it before it is initialised: not instrumented. */
const char *__tsan_default_options(void);
NOT_INSTRUMENTED const char *__tsan_default_options(void)
{
    return "halt_on_error=1:second_deadlock_stack=1";
}

/* The coverage counters libFuzzer reads (-fsanitize=fuzzer-no-link's inline 8-bit counters,
 * the executable's section __sancov_cntrs) are plain increments that TSan instruments:
 * threads running the same code race on them by design. TSan's report hook (__tsan::OnReport,
 * a weak function of its runtime) drops a race whose accesses all lie in those counters; every
 * other race is reported. The section is found in the executable's own section headers at
 * start-up (suppressions by name depend on how the linker names its bytes, and declaring its
 * __start_ symbol clashes with the instrumentation's own declaration). */
static uintptr_t counters_lo, counters_hi;

static int main_program_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = (uintptr_t)info->dlpi_addr;
    return 1; /* the first object is the executable */
}

static void find_coverage_counters(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    Elf64_Shdr names;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && eh.e_shentsize == sizeof(Elf64_Shdr) &&
        eh.e_shstrndx < eh.e_shnum &&
        pread(fd, &names, sizeof names, (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof names)) ==
            (ssize_t)sizeof names) {
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh;
            char name[32] = {0};
            if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + (uint64_t)i * sizeof sh)) != (ssize_t)sizeof sh ||
                pread(fd, name, sizeof name - 1, (off_t)(names.sh_offset + sh.sh_name)) <= 0)
                break;
            if (strcmp(name, "__sancov_cntrs") == 0) {
                uintptr_t bias = 0;
                dl_iterate_phdr(main_program_bias, &bias);
                counters_lo = bias + sh.sh_addr;
                counters_hi = counters_lo + sh.sh_size;
                break;
            }
        }
    }
    close(fd);
}

int __tsan_get_report_data(void *report, const char **description, int *count, int *stack_count, int *mop_count,
                           int *loc_count, int *mutex_count, int *thread_count, int *unique_tid_count,
                           void **sleep_trace, unsigned long trace_size) __attribute__((weak));
int __tsan_get_report_mop(void *report, unsigned long idx, int *tid, void **addr, int *size, int *write,
                          int *atomic, void **trace, unsigned long trace_size) __attribute__((weak));
_Bool tsan_on_report(void *report, _Bool suppressed) __asm__("_ZN6__tsan8OnReportEPKNS_10ReportDescEb");
NOT_INSTRUMENTED _Bool tsan_on_report(void *report, _Bool suppressed)
{
    if (suppressed || !__tsan_get_report_data || !__tsan_get_report_mop || counters_lo == counters_hi)
        return suppressed;
    const char *description;
    int count, stacks, mops, locs, mutexes, threads, tids;
    void *sleep;
    if (!__tsan_get_report_data(report, &description, &count, &stacks, &mops, &locs, &mutexes, &threads, &tids,
                                &sleep, 1) ||
        mops == 0)
        return 0;
    for (int i = 0; i < mops; i++) {
        int tid, size, write, atomic;
        void *addr, *trace;
        if (!__tsan_get_report_mop(report, (unsigned long)i, &tid, &addr, &size, &write, &atomic, &trace, 1) ||
            (uintptr_t)addr < counters_lo || (uintptr_t)addr >= counters_hi)
            return 0;
    }
    return 1;
}

/* Where each thread is, for messages: its own copy (the harness itself must give TSan nothing
 * to report). */
static __thread int self = -1; /* the worker index of this thread, -1 on the main thread */
static __thread int queue_index;
static __thread const char *doing;

static void where(FILE *out)
{
    if (self < 0)
        fprintf(out, "malloc_threads: phase %u, main thread, operation %lu (%s): ", model.phase, model.op,
                model.op_name ? model.op_name : "-");
    else
        fprintf(out, "malloc_threads: phase %u, thread %d, its operation %d of the phase (%s): ", model.phase, self,
                queue_index, doing ? doing : "-");
}

/* ---- decoding ---------------------------------------------------------------------------- */

static const size_t special_sizes[] = {0, 1, 15, 16, 17, 24, 1008, 1009, 4096, 65536, 65537, (size_t)1 << 20,
                                       (size_t)4 << 20};

static size_t decode_size(uint16_t v) { return size_code(v, SMALL_PAGES, CODE_TABLE(special_sizes)); }

/* Alignments from 16 to 64 KiB: powers of two only (invalid ones are malloc_api's). */
static size_t decode_align(uint8_t v) { return (size_t)16 << (v % 13); }

/* The slot the argument picks among those thread t owns in this phase. */
static int slot_of(int t, uint8_t a)
{
    int n = model.nthreads;
    int k = (int)(model.phase % (unsigned)n);
    return (a % (NSLOTS / n)) * n + ((t - k) % n + n) % n;
}

/* ---- blocks -------------------------------------------------------------------------------- */

static void expect_arena_block(const void *p, const char *from, size_t size)
{
    char why[320];
    const char *problem = arena_block_problem(p, why, sizeof why);
    EXPECT(!problem, "%s(%zu) = %p: %s", from, size, p, problem);
}

static void adopt(int s, unsigned char *p, size_t size, size_t align, uint64_t id, const char *from)
{
    EXPECT(p, "%s(%zu) failed (errno %d)", from, size, errno);
    expect_arena_block(p, from, size);
    EXPECT(((uintptr_t)p & (align - 1)) == 0, "%s(%zu) = %p is not aligned to %zu", from, size, (void *)p, align);
    size_t usable = call_usable(p);
    EXPECT(usable >= size, "%s(%zu): malloc_usable_size(%p) = %zu", from, size, (void *)p, usable);
    EXPECT(usable <= 2 * size + 2 * align + PAGE + 64, "%s(%zu, align %zu): malloc_usable_size(%p) = %zu is absurd",
           from, size, align, (void *)p, usable);
    mblock *b = &model.slots[s];
    b->p = p;
    b->size = size;
    b->usable = usable;
    b->align = align;
    b->id = id;
    pattern_fill(p, usable, id);
    TRACE("  [%d] slot %d: %s(%zu) = %p\n", self, s, from, size, (void *)p);
}

static void verify(const mblock *b, size_t limit, const char *when)
{
    size_t bad = pattern_find_bad(b->p, b->usable, limit, b->id);
    if (bad != PATTERN_OK)
        expect_fail("block %p (%zu bytes, id %#llx): byte %zu changed %s", (void *)b->p, b->size,
                    (unsigned long long)b->id, bad, when);
}

static void release(int s)
{
    mblock *b = &model.slots[s];
    if (!b->p)
        return;
    verify(b, b->usable, "before free");
    TRACE("  [%d] slot %d: free %p\n", self, s, (void *)b->p);
    call_free(b->p);
    b->p = NULL;
}

static uint64_t new_id(int t) { return ((uint64_t)(t + 1) << 56) | ++model.next_id[t]; }

/* A burst on thread t: count blocks of one small class allocated, checked among themselves
 * (each carries its pattern), all freed, the cache flushed. */
static void burst(worker *w, uint8_t cls, uint16_t count16)
{
    size_t size = (size_t)(cls % 64 + 1) * 16 - 8, n = count16 % BURST_MAX;
    uint64_t base = new_id(w->index);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = call_malloc(size);
        EXPECT(p, "burst: malloc(%zu) failed", size);
        expect_arena_block(p, "burst malloc", size);
        pattern_fill(p, size, base + i);
        w->burst[i] = p;
    }
    for (size_t i = 0; i < n; i++) {
        size_t bad = pattern_find_bad(w->burst[i], size, size, base + i);
        if (bad != PATTERN_OK)
            expect_fail("burst block %zu of %zu (%p, %zu bytes): byte %zu changed (another block overlaps it?)", i, n,
                        w->burst[i], size, bad);
    }
    /* Every other one first, then the rest: slabs empty in a scattered order. */
    for (size_t i = 0; i < n; i += 2)
        call_free(w->burst[i]);
    for (size_t i = 1; i < n; i += 2)
        call_free(w->burst[i]);
    rp_malloc_thread_flush();
}

/* ---- the operations of one thread ------------------------------------------------------------ */

static void run_op(worker *w, const op *o)
{
    int t = w->index;
    int s = slot_of(t, o->a);
    switch (o->code) {
    case OP_MALLOC: {
        release(s);
        size_t size = decode_size(o->b);
        adopt(s, call_malloc(size), size, 16, new_id(t), "malloc");
        break;
    }
    case OP_FREE:
        release(s);
        break;
    case OP_REALLOC: {
        mblock *b = &model.slots[s];
        size_t size = decode_size(o->b);
        if (!b->p) {
            adopt(s, call_realloc(NULL, size), size, 16, new_id(t), "realloc");
            break;
        }
        verify(b, b->usable, "before realloc");
        if (size == 0) {
            size = 1; /* realloc(p, 0) frees: keep the block */
        }
        mblock old = *b;
        unsigned char *q = call_realloc(b->p, size);
        EXPECT(q, "realloc(%p, %zu) failed (errno %d)", (void *)old.p, size, errno);
        b->p = NULL;
        mblock moved = old;
        moved.p = q;
        verify(&moved, old.usable < size ? old.usable : size, "by realloc");
        adopt(s, q, size, 16, old.id, "realloc"); /* glibc keeps no alignment beyond 16 either */
        break;
    }
    case OP_CALLOC: {
        release(s);
        size_t n = o->c % 16 + 1, size = decode_size(o->b) / n;
        unsigned char *p = call_calloc(n, size);
        EXPECT(p, "calloc(%zu, %zu) failed", n, size);
        size_t bad = pattern_find_nonzero(p, n * size);
        EXPECT(bad == PATTERN_OK, "calloc(%zu, %zu) = %p: byte %zu is not zero", n, size, (void *)p, bad);
        adopt(s, p, n * size, 16, new_id(t), "calloc");
        break;
    }
    case OP_MEMALIGN: {
        release(s);
        size_t align = decode_align(o->c), size = decode_size(o->b);
        adopt(s, call_memalign(align, size), size, align, new_id(t), "memalign");
        break;
    }
    case OP_BURST:
        burst(w, o->c, o->b);
        break;
    case OP_FLUSH:
        rp_malloc_thread_flush();
        break;
    case OP_CHECK: {
        char why[256];
        EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check: %s", why);
        break;
    }
    case OP_EXIT:
        w->exit_after = 1;
        break;
    case OP_USABLE: {
        mblock *b = &model.slots[s];
        if (b->p)
            EXPECT(call_usable(b->p) == b->usable, "malloc_usable_size(%p) changed from %zu to %zu", (void *)b->p,
                   b->usable, call_usable(b->p));
        break;
    }
    case OP_YIELD:
        sched_yield();
        break;
    case OP_SPIN:
        for (unsigned i = 0; i < (unsigned)o->c * 64; i++)
            __asm__ volatile("" ::: "memory"); /* a delay the compiler keeps */
        break;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    self = w->index;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (w->seen == generation)
            pthread_cond_wait(&start_cv, &mu);
        w->seen = generation;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < w->nops; i++) {
            queue_index = i;
            doing = op_names[w->ops[i].code];
            __atomic_store_n(&w->at, i, __ATOMIC_RELAXED);
            run_op(w, &w->ops[i]);
            __atomic_fetch_add(&w->progress, 1, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&w->at, -1, __ATOMIC_RELAXED);
        doing = "waiting";
        int leave = w->exit_after;
        pthread_mutex_lock(&mu);
        done_count++;
        pthread_cond_signal(&done_cv);
        pthread_mutex_unlock(&mu);
        if (leave)
            break;
    }
    return NULL;
}

static void start_worker(worker *w)
{
    w->exit_after = 0;
    w->at = -1;
    w->seen = generation;
    EXPECT(pthread_create(&w->thread, NULL, worker_main, w) == 0, "pthread_create failed");
    w->running = 1;
}

/* ---- fork -------------------------------------------------------------------------------------- */

/* Coverage builds write a child's profile here (_exit skips the at-exit writer). */
extern int __llvm_profile_write_file(void) __attribute__((weak));

/* The child of a fork made while the other threads allocate: the drop-in's fork handlers
 * hold every lock across the fork, so the child's one thread finds every structure whole. */
static void fork_child(void)
{
    char why[256];
    int code = 0;
    if (rp_malloc_check(why, sizeof why) != 0) {
        fprintf(stderr, "malloc_threads: fork child: rp_malloc_check: %s\n", why);
        code = 1;
    }
    static const size_t sizes[] = {16, 200, 1008, 4096, 70000, (size_t)1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !code; i++) {
        void *p = call_malloc(sizes[i]);
        char problem[320];
        if (!p || arena_block_problem(p, problem, sizeof problem)) {
            fprintf(stderr, "malloc_threads: fork child: malloc(%zu) = %p: %s\n", sizes[i], p,
                    p ? problem : "failed");
            code = 1;
            break;
        }
        memset(p, 0x5a, sizes[i]);
        call_free(p);
    }
    if (!code && rp_malloc_check(why, sizeof why) != 0) {
        fprintf(stderr, "malloc_threads: fork child: rp_malloc_check after allocating: %s\n", why);
        code = 1;
    }
    if (__llvm_profile_write_file)
        __llvm_profile_write_file();
    _exit(code);
}

static void do_fork(void)
{
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork failed (errno %d)", errno);
    if (pid == 0)
        fork_child();
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child of a fork made while %d threads allocated failed (status %#x)", model.nthreads, status);
}

/* ---- phases -------------------------------------------------------------------------------------- */

/* The live blocks, sorted by address: no two overlap. */
static int by_address(const void *a, const void *b)
{
    const mblock *x = *(const mblock *const *)a, *y = *(const mblock *const *)b;
    return x->p < y->p ? -1 : x->p > y->p;
}

static void check_between_phases(void)
{
    const mblock *live[NSLOTS];
    int n = 0;
    for (int s = 0; s < NSLOTS; s++) {
        const mblock *b = &model.slots[s];
        if (!b->p)
            continue;
        verify(b, b->usable, "between phases");
        EXPECT(call_usable(b->p) == b->usable, "malloc_usable_size(%p) changed from %zu to %zu", (void *)b->p,
               b->usable, call_usable(b->p));
        live[n++] = b;
    }
    qsort(live, (size_t)n, sizeof live[0], by_address);
    for (int i = 1; i < n; i++)
        EXPECT(live[i - 1]->p + live[i - 1]->usable <= live[i]->p, "blocks %p (+%zu) and %p (+%zu) overlap",
               (void *)live[i - 1]->p, live[i - 1]->usable, (void *)live[i]->p, live[i]->usable);
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check after phase %u: %s", model.phase, why);
}

/* ---- stall watchdog ------------------------------------------------------------------------------ */

/* A hang (a deadlock or a livelock in the allocator) ends in the fuzzer's unit timeout, whose
 * report shows only the main thread, waiting here. So the wait names every worker that has
 * made no progress for STALL_SECONDS, with the operation it is in. (Its stack cannot be had:
 * ThreadSanitizer delivers a signal only when the thread next enters its runtime.) It only
 * prints: a slow run that still progresses is left alone. */
#ifndef STALL_SECONDS
#define STALL_SECONDS 20
#endif
#define STALL_POLL_SECONDS 5

static unsigned long progress_sum(void)
{
    unsigned long sum = 0;
    for (int t = 0; t < model.nthreads; t++)
        sum += __atomic_load_n(&model.workers[t].progress, __ATOMIC_RELAXED);
    return sum;
}

static void report_stall(int seconds)
{
    fprintf(stderr, "malloc_threads: phase %u: no operation finished for %d s\n", model.phase, seconds);
    for (int t = 0; t < model.nthreads; t++) {
        worker *w = &model.workers[t];
        int at = __atomic_load_n(&w->at, __ATOMIC_RELAXED);
        if (at < 0)
            continue;
        const op *o = &w->ops[at];
        fprintf(stderr, "malloc_threads: thread %d stalls in its operation %d of %d: %s (a=%u b=%u c=%u)\n", t, at,
                w->nops, op_names[o->code], o->a, o->b, o->c);
    }
}

/* Waits (mu held) until every worker has finished the phase. */
static void wait_for_workers(void)
{
    unsigned long last = progress_sum();
    int stalled = 0, told = 0;
    while (done_count < model.nthreads) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += STALL_POLL_SECONDS;
        if (pthread_cond_timedwait(&done_cv, &mu, &until) != ETIMEDOUT)
            continue;
        unsigned long now = progress_sum();
        if (now != last) {
            last = now;
            stalled = 0;
            continue;
        }
        stalled += STALL_POLL_SECONDS;
        if (stalled >= STALL_SECONDS && !told) {
            told = 1;
            report_stall(stalled);
        }
    }
}

/* Runs the queued operations of every thread at once; the main thread forks meanwhile when
 * the phase asks for it. */
static void run_phase(void)
{
    TRACE("phase %u\n", model.phase);
    pthread_mutex_lock(&mu);
    done_count = 0;
    generation++;
    pthread_cond_broadcast(&start_cv);
    pthread_mutex_unlock(&mu);
    if (model.fork_now) {
        model.fork_now = 0;
        do_fork();
    }
    pthread_mutex_lock(&mu);
    wait_for_workers();
    pthread_mutex_unlock(&mu);
    model.op_name = "between phases";
    for (int t = 0; t < model.nthreads; t++) {
        worker *w = &model.workers[t];
        w->nops = 0;
        if (w->exit_after) {
            pthread_join(w->thread, NULL);
            w->running = 0;
            start_worker(w); /* a fresh thread, with a fresh cache, in its place */
        }
    }
    check_between_phases();
    model.phase++;
}

/* ---- the structure-aware mutator's view of the encoding --------------------------------------- */

static size_t op_length(const uint8_t *o, size_t left)
{
    (void)left;
    switch (o[0] & 15) {
    case OP_MALLOC:
    case OP_REALLOC:
        return 4;
    case OP_FREE:
    case OP_USABLE:
    case OP_SPIN:
        return 2;
    case OP_CALLOC:
    case OP_MEMALIGN:
        return 5;
    case OP_BURST:
        return 4;
    default:
        return 1;
    }
}

static const op_grammar grammar = {1, op_length, (1u << OP_COUNT) - 1};
OP_MUTATOR(grammar)

/* ---- driver -------------------------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    expect_tracing = getenv("MALLOC_THREADS_TRACE") != NULL;
    expect_context(where, NULL);
    find_coverage_counters();
    call_free(call_malloc(1));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialised;
    if (!initialised) {
        LLVMFuzzerInitialize(NULL, NULL);
        initialised = 1;
    }
    memset(&model, 0, sizeof model);
    fuzz_input in = fuzz_input_of(data, size);
    model.nthreads = 2 + fuzz_u8(&in) % 3;
    for (int t = 0; t < model.nthreads; t++) {
        model.workers[t].index = t;
        start_worker(&model.workers[t]);
    }
    while (fuzz_more(&in) && model.phase < MAX_PHASES) {
        uint8_t byte = fuzz_u8(&in);
        int code = byte & 15;
        if (code >= OP_COUNT)
            continue;
        model.op++;
        model.op_name = op_names[code];
        if (code == OP_BARRIER) {
            run_phase();
            continue;
        }
        if (code == OP_FORK) {
            model.fork_now = !model.forked;
            model.forked = 1;
            continue;
        }
        worker *w = &model.workers[(byte >> 4) % model.nthreads];
        op o = {(uint8_t)code, 0, 0, 0};
        switch (code) {
        case OP_MALLOC:
        case OP_REALLOC:
            o.a = fuzz_u8(&in);
            o.b = fuzz_u16(&in);
            break;
        case OP_FREE:
        case OP_USABLE:
            o.a = fuzz_u8(&in);
            break;
        case OP_SPIN:
            o.c = fuzz_u8(&in);
            break;
        case OP_CALLOC:
        case OP_MEMALIGN:
            o.a = fuzz_u8(&in);
            o.c = fuzz_u8(&in);
            o.b = fuzz_u16(&in);
            break;
        case OP_BURST:
            o.c = fuzz_u8(&in);
            o.b = fuzz_u16(&in);
            break;
        }
        if (w->nops == PHASE_OPS)
            run_phase();
        w->ops[w->nops++] = o;
    }
    /* The end: a phase for what is queued, then every thread frees what it owns, flushes and
     * exits. */
    run_phase();
    for (int t = 0; t < model.nthreads; t++) {
        worker *w = &model.workers[t];
        for (int a = 0; a < NSLOTS / model.nthreads; a++) /* every slot it owns (run_phase left nops 0) */
            w->ops[w->nops++] = (op){OP_FREE, (uint8_t)a, 0, 0};
        w->ops[w->nops++] = (op){OP_FLUSH, 0, 0, 0};
        w->exit_after = 1;
    }
    model.op_name = "teardown";
    pthread_mutex_lock(&mu);
    done_count = 0;
    generation++;
    pthread_cond_broadcast(&start_cv);
    wait_for_workers();
    pthread_mutex_unlock(&mu);
    for (int t = 0; t < model.nthreads; t++)
        pthread_join(model.workers[t].thread, NULL);
    for (int s = 0; s < NSLOTS; s++)
        EXPECT(!model.slots[s].p, "slot %d still holds %p after every thread freed its slots", s,
               (void *)model.slots[s].p);
    char why[256];
    EXPECT(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check after every thread left: %s", why);
    return 0;
}
