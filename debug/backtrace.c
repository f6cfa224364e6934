#define _GNU_SOURCE /* reallocarray */
#define UNW_LOCAL_ONLY
#include "backtrace.h"

#include <libunwind.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "config.h"
#include "rampart_debug.h"
#include "sanitizer_track.h"
#include "src/report.h"

/* Room for the frames inside rampart on top of the configured depth: the capture itself, a
 * hook, a core function, up to two entry points (rp_calloc -> rp_alloc) and a wrapper; with the
 * malloc drop-in linked in, also its own frames up to the C function the program called. */
#define INTERNAL_FRAMES 8
/* Most frames of the drop-in between rampart's entry point and the malloc-family function the
 * program called (malloc -> malloc_cached -> rp_tc_refill -> rp_alloc; the first allocation of a
 * thread also goes through the cache's creation). */
#define WRAPPER_GAP 5
#define CAPTURE_MAX (RP_STACK_MAX_FRAMES + INTERNAL_FRAMES + WRAPPER_GAP)
#define REPORT_DEPTH_WHEN_OFF 16

typedef struct code_range {
    uintptr_t lo, hi;
    const char *name;
} code_range;

/* A set of functions' code ranges, with their hull for a one-compare miss. */
typedef struct code_set {
    code_range r[24];
    unsigned n;
    uintptr_t lo, hi;
} code_set;

/* rampart's entry points (rp_alloc, rp_free, ...), and the C allocation functions when they
 * are rampart's (the malloc drop-in is linked in; wrappers stays empty otherwise). */
static code_set entries = {.lo = UINTPTR_MAX}, wrappers = {.lo = UINTPTR_MAX};
static unsigned internal_frames = INTERNAL_FRAMES;
static code_range report_fn;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Defined by the malloc drop-in (src/arena.c): present exactly when the process's malloc,
 * free, ... in this link are rampart's. */
extern int rp_malloc_ready(void) __attribute__((weak));

static int range_of(void *fn, const char *name, code_range *out)
{
    unw_proc_info_t pi;
    if (unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)(uintptr_t)fn, &pi, NULL) != 0)
        return -1;
    out->lo = (uintptr_t)pi.start_ip;
    out->hi = (uintptr_t)pi.end_ip;
    out->name = name;
    return 0;
}

static void add(code_set *s, void *fn, const char *name)
{
    if (s->n < sizeof s->r / sizeof s->r[0] && range_of(fn, name, &s->r[s->n]) == 0) {
        if (s->r[s->n].lo < s->lo)
            s->lo = s->r[s->n].lo;
        if (s->r[s->n].hi > s->hi)
            s->hi = s->r[s->n].hi;
        s->n++;
    }
}

typedef struct named_fn {
    void *fn;
    const char *name;
} named_fn;
#define NAMED(f) {(void *)(f), #f}

static void add_all(code_set *s, const named_fn *fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        add(s, fns[i].fn, fns[i].name);
}

static void init(void)
{
    static const named_fn entry_points[] = {
        NAMED(rp_alloc),       NAMED(rp_calloc),     NAMED(rp_realloc),      NAMED(rp_free),
        NAMED(rp_usable_size), NAMED(rp_heap_check), NAMED(rp_heap_destroy), NAMED(rp_quarantine_flush),
    };
    /* The malloc drop-in's functions (src/malloc.c), by the names a program calls. */
    static const named_fn malloc_family[] = {
        NAMED(malloc),       NAMED(free),           NAMED(calloc),        NAMED(realloc),
        NAMED(reallocarray), NAMED(posix_memalign), NAMED(aligned_alloc), NAMED(memalign),
        NAMED(valloc),       NAMED(pvalloc),        NAMED(malloc_usable_size), NAMED(malloc_trim),
    };
    add_all(&entries, entry_points, sizeof entry_points / sizeof entry_points[0]);
    if (rp_malloc_ready) {
        add_all(&wrappers, malloc_family, sizeof malloc_family / sizeof malloc_family[0]);
        internal_frames = INTERNAL_FRAMES + WRAPPER_GAP;
    }
    if (range_of((void *)rp_report_fault, "rp_report_fault", &report_fn) != 0)
        report_fn.lo = report_fn.hi = 0;
}

void rp_backtrace_init(void) { pthread_once(&init_once, init); }

static inline const code_range *find_in(const code_set *s, uintptr_t pc)
{
    /* Return addresses point after the call; pc - 1 is inside the calling function. */
    pc -= 1;
    if (pc < s->lo || pc >= s->hi)
        return NULL; /* most frames: the program's own code */
    for (unsigned i = 0; i < s->n; i++)
        if (pc >= s->r[i].lo && pc < s->r[i].hi)
            return &s->r[i];
    return NULL;
}

static inline const code_range *entry_of(uintptr_t pc) { return find_in(&entries, pc); }

static inline const code_range *wrapper_of(uintptr_t pc) { return find_in(&wrappers, pc); }

/* Index of the first frame after the run of rampart frames (entry points, drop-in wrappers)
 * starting at i; *name (if non-NULL) receives the outermost one's name. */
static unsigned after_run(const uintptr_t *frames, unsigned n, unsigned i, const char **name)
{
    const code_range *e;
    while (i < n && ((e = entry_of(frames[i])) != NULL || (e = wrapper_of(frames[i])) != NULL)) {
        if (name)
            *name = e->name;
        i++;
    }
    return i;
}

/* i is just past rampart's entry points: when a malloc-family function of the drop-in follows
 * within WRAPPER_GAP frames (the drop-in's internal functions in between), the index past it,
 * otherwise i. A core entry point in between would be a program callback (a report function)
 * calling rampart again: its frame is the program's and is not crossed. */
static unsigned past_wrappers(const uintptr_t *frames, unsigned n, unsigned i, const char **name)
{
    for (;;) {
        unsigned k = 0;
        while (k < WRAPPER_GAP && i + k < n && !entry_of(frames[i + k]) && !wrapper_of(frames[i + k]))
            k++;
        if (k == WRAPPER_GAP || i + k >= n || !wrapper_of(frames[i + k]))
            return i;
        i = after_run(frames, n, i + k, name);
    }
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
    return past_wrappers(frames, n, after_run(frames, n, i, name), name);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RP_TSAN 1
#endif

/* Always inlined: frame 0 is then the function that called capture(). */
static inline __attribute__((always_inline)) unsigned capture(uintptr_t *frames, unsigned max)
{
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
    unsigned depth = rp_debug_config_get()->backtrace_depth;
    if (depth == 0)
        return 0;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + internal_frames);
    return store(frames, n, after_entries(frames, n, 1, NULL), depth);
}

__attribute__((noinline)) uint32_t rp_backtrace_report_stack(const char **entry_name)
{
    rp_backtrace_init();
    unsigned depth = rp_debug_config_get()->backtrace_depth;
    if (depth == 0)
        depth = REPORT_DEPTH_WHEN_OFF;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + internal_frames);
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
    unsigned past = past_wrappers(frames, n, from, entry_name);
    from = past != from ? past : after_entries(frames, n, from, entry_name);
    return store(frames, n, from, depth);
}

__attribute__((noinline)) uint32_t rp_stack_capture(unsigned skip)
{
    unsigned depth = rp_debug_config_get()->backtrace_depth;
    if (depth == 0 || skip >= CAPTURE_MAX)
        return 0;
    uintptr_t frames[CAPTURE_MAX];
    unsigned want = 1 + skip + depth;
    unsigned n = capture(frames, want < CAPTURE_MAX ? want : CAPTURE_MAX);
    return store(frames, n, 1 + skip, depth);
}
