#define _GNU_SOURCE /* reallocarray */
#define UNW_LOCAL_ONLY
#include "backtrace.h"

#include <libunwind.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "config.h"
#include "frame_walk.h"
#include "rampart_debug.h"
#include "sanitizer_track.h"
#include "src/report.h"

/* Room for the frames inside rampart on top of the configured depth: the capture itself, a
 * hook, a core function, up to two entry points (rp_calloc -> rp_alloc) and a wrapper. */
#define INTERNAL_FRAMES 8
/* With the malloc drop-in linked in, its own frames between rampart's entry point and the
 * malloc-family function the program called: malloc -> malloc_cached -> rp_tc_refill ->
 * rp_alloc is two more than the 8 above plan for (calloc and realloc three); the first
 * allocation of a thread also creates its cache (five in all, WRAPPER_GAP). A stack with more
 * internal frames than planned is recorded with fewer program frames, nothing worse. */
#define WRAPPER_FRAMES 3
#define WRAPPER_GAP 5
#define CAPTURE_MAX (RP_STACK_MAX_FRAMES + INTERNAL_FRAMES + WRAPPER_FRAMES)
#define REPORT_DEPTH_WHEN_OFF 16

enum { RANGE_ENTRY, RANGE_WRAPPER };

typedef struct code_range {
    uintptr_t lo, hi;
    const char *name;
    int kind; /* RANGE_ENTRY: rampart's entry points (rp_alloc, rp_free, ...); RANGE_WRAPPER:
                 the C allocation functions, registered when they are rampart's (the malloc
                 drop-in is linked in) */
} code_range;

/* Every range, sorted by address, and their hull: most frames (the program's) are outside it
 * and cost one comparison; the others a binary search. Written once by init(). */
static code_range ranges[48];
static unsigned nranges;
static uintptr_t ranges_lo = UINTPTR_MAX, ranges_hi;
static unsigned internal_frames = INTERNAL_FRAMES;
static code_range report_fn;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;


static int range_of(void *fn, const char *name, code_range *out)
{
    unw_proc_info_t pi;
    if (!fn || unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)(uintptr_t)fn, &pi, NULL) != 0)
        return -1;
    out->lo = (uintptr_t)pi.start_ip;
    out->hi = (uintptr_t)pi.end_ip;
    out->name = name;
    return 0;
}

typedef struct named_fn {
    void *fn;
    const char *name;
} named_fn;
#define NAMED(f) {(void *)(f), #f}

/* Adds the functions' ranges of one kind, keeping the table sorted (insertion: no qsort,
 * which may allocate). */
static void add_all(const named_fn *fns, size_t n, int kind)
{
    for (size_t i = 0; i < n && nranges < sizeof ranges / sizeof ranges[0]; i++) {
        code_range r;
        if (range_of(fns[i].fn, fns[i].name, &r) != 0)
            continue;
        r.kind = kind;
        unsigned k = nranges++;
        for (; k > 0 && ranges[k - 1].lo > r.lo; k--)
            ranges[k] = ranges[k - 1];
        ranges[k] = r;
        if (r.lo < ranges_lo)
            ranges_lo = r.lo;
        if (r.hi > ranges_hi)
            ranges_hi = r.hi;
    }
}

/* The drop-in's C++ operators (src/malloc/malloc.c): weak, since the debug runtime without
 * the drop-in has none (then they are not looked up: rp_malloc_ready is 0). */
#define RP_WEAK_NEW(name) extern void *name(size_t) __attribute__((weak));
#define RP_WEAK_DELETE(name) extern void name(void *) __attribute__((weak));
RP_WEAK_NEW(_Znwm)
RP_WEAK_NEW(_Znam)
RP_WEAK_NEW(_ZnwmRKSt9nothrow_t)
RP_WEAK_NEW(_ZnamRKSt9nothrow_t)
RP_WEAK_NEW(_ZnwmSt11align_val_t)
RP_WEAK_NEW(_ZnamSt11align_val_t)
RP_WEAK_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t)
RP_WEAK_NEW(_ZnamSt11align_val_tRKSt9nothrow_t)
RP_WEAK_DELETE(_ZdlPv)
RP_WEAK_DELETE(_ZdaPv)
RP_WEAK_DELETE(_ZdlPvm)
RP_WEAK_DELETE(_ZdaPvm)

static void init(void)
{
    static const named_fn entry_points[] = {
        NAMED(rp_alloc),       NAMED(rp_calloc),     NAMED(rp_realloc),      NAMED(rp_free),
        NAMED(rp_usable_size), NAMED(rp_heap_check), NAMED(rp_heap_destroy), NAMED(rp_quarantine_flush),
    };
    /* The malloc drop-in's functions (src/malloc/malloc.c), by the names a program calls. */
    static const named_fn malloc_family[] = {
        NAMED(malloc),       NAMED(free),           NAMED(calloc),        NAMED(realloc),
        NAMED(reallocarray), NAMED(posix_memalign), NAMED(aligned_alloc), NAMED(memalign),
        NAMED(valloc),       NAMED(pvalloc),        NAMED(malloc_usable_size), NAMED(malloc_trim),
        NAMED(_Znwm),        NAMED(_Znam),          NAMED(_ZnwmRKSt9nothrow_t), NAMED(_ZnamRKSt9nothrow_t),
        NAMED(_ZnwmSt11align_val_t), NAMED(_ZnamSt11align_val_t), NAMED(_ZnwmSt11align_val_tRKSt9nothrow_t),
        NAMED(_ZnamSt11align_val_tRKSt9nothrow_t), NAMED(_ZdlPv), NAMED(_ZdaPv), NAMED(_ZdlPvm), NAMED(_ZdaPvm),
    };
    add_all(entry_points, sizeof entry_points / sizeof entry_points[0], RANGE_ENTRY);
    if (rp_malloc_ready) {
        add_all(malloc_family, sizeof malloc_family / sizeof malloc_family[0], RANGE_WRAPPER);
        internal_frames = INTERNAL_FRAMES + WRAPPER_FRAMES;
    }
    if (range_of((void *)rp_report_fault, "rp_report_fault", &report_fn) != 0)
        report_fn.lo = report_fn.hi = 0;
}

void rp_backtrace_init(void) { pthread_once(&init_once, init); }

/* Classifications of addresses inside the hull, memoised: the frames of rampart itself come
 * back to the same few call sites in every stack, and a binary search per frame cost more
 * than the rest of the trimming. Direct-mapped; a slot is one word, address << 8 | (range
 * index + 1, or 0 for none), read and written whole, so threads racing on a slot only cost a
 * search. User addresses fit in 56 bits. */
#define MEMO_SLOTS 256
static uint64_t memo[MEMO_SLOTS];

static const code_range *search(uintptr_t addr)
{
    unsigned lo = 0, hi = nranges; /* the last range starting at or before addr is in [lo, hi) */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (ranges[mid].lo <= addr)
            lo = mid;
        else
            hi = mid;
    }
    return addr < ranges[lo].hi ? &ranges[lo] : NULL;
}

/* The range holding the call that return address pc comes back to, or NULL (the program's
 * code, or rampart's internal functions). */
static inline const code_range *range_at(uintptr_t pc)
{
    /* Return addresses point after the call; pc - 1 is inside the calling function. */
    uintptr_t addr = pc - 1;
    if (addr < ranges_lo || addr >= ranges_hi)
        return NULL; /* most frames: the program's own code */
    uint64_t *slot = &memo[(addr ^ (addr >> 8)) & (MEMO_SLOTS - 1)];
    uint64_t m = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if ((m >> 8) == addr)
        return (m & 0xff) ? &ranges[(m & 0xff) - 1] : NULL;
    const code_range *r = search(addr);
    __atomic_store_n(slot, (uint64_t)addr << 8 | (r ? (uint64_t)(r - ranges) + 1 : 0), __ATOMIC_RELAXED);
    return r;
}

static inline const code_range *entry_of(uintptr_t pc)
{
    const code_range *r = range_at(pc);
    return r && r->kind == RANGE_ENTRY ? r : NULL;
}

/* end is the index just past frames known to be rampart's. Extends it over the following run
 * of entry points and wrappers, and over a wrapper within WRAPPER_GAP frames after it (the
 * drop-in's internal functions in between), repeatedly; returns the index of the first frame
 * after them. A core entry point after a gap would be a program callback (a report function)
 * calling rampart again: its caller is the program's and is not crossed. *name (if non-NULL)
 * receives the outermost one's name. */
static unsigned past_rampart(const uintptr_t *frames, unsigned n, unsigned end, const char **name)
{
    for (unsigned k = end; k < n && k < end + WRAPPER_GAP; k++) {
        const code_range *r = range_at(frames[k]);
        if (!r)
            continue;
        if (r->kind == RANGE_ENTRY && k > end)
            break;
        end = k + 1;
        if (name)
            *name = r->name;
    }
    return end;
}

/* Index of the first frame after rampart's own frames, searching from `from`: past the first
 * run of entry points and the drop-in's wrapper around it, so that frame 0 of the result is
 * the program's call to malloc, free, ... or to rp_*. Returns from itself when no entry point
 * is found. */
static unsigned after_entries(const uintptr_t *frames, unsigned n, unsigned from, const char **name)
{
    unsigned i = from;
    while (i < n && !entry_of(frames[i]))
        i++;
    if (i == n)
        return from;
    return past_rampart(frames, n, i, name);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RP_TSAN 1
#endif

/* Always inlined: frame 0 is then the function that called capture(). With fast set (the
 * option fast_unwind) the frame-pointer walk is tried first (frame_walk.h). */
static inline __attribute__((always_inline)) unsigned capture(uintptr_t *frames, unsigned max, int fast)
{
    if (fast) {
        unsigned got = rp_frame_walk(frames, max, __builtin_frame_address(0));
        if (got > 0)
            return got;
    }
    if (__builtin_expect(rp_san_enabled, 0))
        rp_san_quiet_begin();
#ifndef RP_TSAN
    int got = unw_backtrace((void **)frames, (int)max);
    unsigned n = got > 0 ? (unsigned)got : 0;
#else
    /* Under ThreadSanitizer, unw_backtrace's per-thread trace cache is freed by a TSD
     * destructor that takes a mutex after TSan has torn the thread down (a crash at thread
     * exit); stepping frame by frame uses no per-thread cache. */
    unsigned n = 0;
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) == 0 && unw_init_local(&cursor, &context) == 0) {
        do {
            unw_word_t ip;
            if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0)
                break;
            frames[n++] = (uintptr_t)ip;
        } while (n < max && unw_step(&cursor) > 0);
    }
#endif
    if (__builtin_expect(rp_san_enabled, 0))
        rp_san_quiet_end();
    return n;
}

static uint32_t store(const uintptr_t *frames, unsigned n, unsigned from, unsigned depth)
{
    if (from >= n)
        return 0;
    unsigned keep = n - from < depth ? n - from : depth;
    return rp_depot_put(frames + from, keep);
}

__attribute__((noinline)) uint32_t rp_backtrace_program_stack(void)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    unsigned depth = cfg->backtrace_depth;
    if (depth == 0)
        return 0;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + internal_frames, cfg->fast_unwind);
    return store(frames, n, after_entries(frames, n, 1, NULL), depth);
}

__attribute__((noinline)) uint32_t rp_backtrace_report_stack(const char **entry_name)
{
    rp_backtrace_init();
    unsigned depth = rp_debug_config_get()->backtrace_depth;
    if (depth == 0)
        depth = REPORT_DEPTH_WHEN_OFF;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + internal_frames, 0); /* a report: the full unwinder */
    unsigned from = 1;
    for (unsigned i = 1; i < n; i++) {
        if (frames[i] - 1 >= report_fn.lo && frames[i] - 1 < report_fn.hi) {
            /* The frame after rp_report_fault is the entry point that called it (possibly its
             * out-of-line cold part, which the entry ranges do not cover). */
            from = i + 2 <= n ? i + 2 : n;
            break;
        }
    }
    if (from > 1 && from - 1 < n && entry_name) {
        const code_range *e = entry_of(frames[from - 1]);
        if (e)
            *entry_name = e->name;
    }
    unsigned past = past_rampart(frames, n, from, entry_name);
    from = past != from ? past : after_entries(frames, n, from, entry_name);
    return store(frames, n, from, depth);
}

__attribute__((noinline)) uint32_t rp_stack_capture(unsigned skip)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    unsigned depth = cfg->backtrace_depth;
    if (depth == 0 || skip >= CAPTURE_MAX)
        return 0;
    uintptr_t frames[CAPTURE_MAX];
    unsigned want = 1 + skip + depth;
    unsigned n = capture(frames, want < CAPTURE_MAX ? want : CAPTURE_MAX, cfg->fast_unwind);
    return store(frames, n, 1 + skip, depth);
}
