#define UNW_LOCAL_ONLY
#include "backtrace.h"

#include <libunwind.h>
#include <pthread.h>

#include "config.h"
#include "rampart_debug.h"
#include "sanitizer_track.h"
#include "src/report.h"

/* Room for the frames inside rampart on top of the configured depth: the capture itself, a
 * hook, a core function, up to two entry points (rp_calloc -> rp_alloc) and a wrapper. */
#define INTERNAL_FRAMES 8
#define CAPTURE_MAX (RP_STACK_MAX_FRAMES + INTERNAL_FRAMES)
#define REPORT_DEPTH_WHEN_OFF 16

typedef struct code_range {
    uintptr_t lo, hi;
    const char *name;
} code_range;

static code_range entries[16];
static unsigned nentries;
static uintptr_t entries_lo = UINTPTR_MAX, entries_hi; /* hull of all entry ranges */
static code_range report_fn;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

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

static void add_entry(void *fn, const char *name)
{
    if (nentries < sizeof entries / sizeof entries[0] && range_of(fn, name, &entries[nentries]) == 0) {
        if (entries[nentries].lo < entries_lo)
            entries_lo = entries[nentries].lo;
        if (entries[nentries].hi > entries_hi)
            entries_hi = entries[nentries].hi;
        nentries++;
    }
}

static void init(void)
{
    add_entry((void *)rp_alloc, "rp_alloc");
    add_entry((void *)rp_calloc, "rp_calloc");
    add_entry((void *)rp_realloc, "rp_realloc");
    add_entry((void *)rp_free, "rp_free");
    add_entry((void *)rp_usable_size, "rp_usable_size");
    add_entry((void *)rp_heap_check, "rp_heap_check");
    add_entry((void *)rp_heap_destroy, "rp_heap_destroy");
    add_entry((void *)rp_quarantine_flush, "rp_quarantine_flush");
    if (range_of((void *)rp_report_fault, "rp_report_fault", &report_fn) != 0)
        report_fn.lo = report_fn.hi = 0;
}

void rp_backtrace_init(void) { pthread_once(&init_once, init); }

static inline const code_range *entry_of(uintptr_t pc)
{
    /* Return addresses point after the call; pc - 1 is inside the calling function. */
    pc -= 1;
    if (pc < entries_lo || pc >= entries_hi)
        return NULL; /* most frames: the program's own code */
    for (unsigned i = 0; i < nentries; i++)
        if (pc >= entries[i].lo && pc < entries[i].hi)
            return &entries[i];
    return NULL;
}

/* Index of the first frame after the run of entry-point frames starting at or after from;
 * from itself when no entry point is found. */
static unsigned after_entries(const uintptr_t *frames, unsigned n, unsigned from, const char **name)
{
    unsigned i = from;
    while (i < n && !entry_of(frames[i]))
        i++;
    if (i == n)
        return from;
    while (i < n) {
        const code_range *e = entry_of(frames[i]);
        if (!e)
            break;
        if (name)
            *name = e->name;
        i++;
    }
    return i;
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
    unsigned n = capture(frames, depth + INTERNAL_FRAMES);
    return store(frames, n, after_entries(frames, n, 1, NULL), depth);
}

__attribute__((noinline)) uint32_t rp_backtrace_report_stack(const char **entry_name)
{
    rp_backtrace_init();
    unsigned depth = rp_debug_config_get()->backtrace_depth;
    if (depth == 0)
        depth = REPORT_DEPTH_WHEN_OFF;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + INTERNAL_FRAMES);
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
    from = after_entries(frames, n, from, entry_name);
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
