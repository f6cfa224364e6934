#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "profile_stack.h"

#include <libunwind.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "debug/stack_depot.h"

/* Frames of the drop-in above the program's: the capture, the recording, the sampled path and
 * up to a few internal functions between it and the entry point. */
#define OWN_FRAMES 8
#define CAPTURE_MAX (RP_STACK_MAX_FRAMES + OWN_FRAMES)

typedef struct entry_range {
    uintptr_t lo, hi;
} entry_range;

static entry_range entries[24];
static unsigned nentries;
static pthread_once_t entries_once = PTHREAD_ONCE_INIT;

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
void __libc_free(void *p);
void cfree(void *p);
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

/* The drop-in's allocating entry points (malloc.c), and its freeing ones (stacks of frees:
 * guard_pool.h), by their addresses in this link: the drop-in's own, whether preloaded (bound
 * inside the library) or linked in. */
static void find_entries(void)
{
    void *const fns[] = {
        (void *)malloc,          (void *)calloc,         (void *)realloc,         (void *)reallocarray,
        (void *)posix_memalign,  (void *)aligned_alloc,  (void *)memalign,        (void *)valloc,
        (void *)pvalloc,         (void *)__libc_malloc,  (void *)__libc_calloc,   (void *)__libc_realloc,
        (void *)__libc_memalign, (void *)__libc_valloc,  (void *)__libc_pvalloc,  (void *)free,
        (void *)cfree,           (void *)__libc_free,    (void *)free_sized,      (void *)free_aligned_sized,
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0] && nentries < sizeof entries / sizeof entries[0]; i++) {
        unw_proc_info_t pi;
        if (unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)(uintptr_t)fns[i], &pi, NULL) == 0)
            entries[nentries++] = (entry_range){(uintptr_t)pi.start_ip, (uintptr_t)pi.end_ip};
    }
}

/* Does return address pc come back into an entry point? (pc - 1 is inside the caller.) */
static int in_entry(uintptr_t pc)
{
    for (unsigned i = 0; i < nentries; i++)
        if (pc - 1 >= entries[i].lo && pc - 1 < entries[i].hi)
            return 1;
    return 0;
}

unsigned rp_prof_stack_cut(const uintptr_t *frames, unsigned n, const void *ra)
{
    unsigned from = n;
    if (ra) {
        for (unsigned i = 0; i < n; i++) {
            if (frames[i] == (uintptr_t)ra) {
                from = i;
                break;
            }
        }
    }
    if (from == n) { /* no address, or not found: past the last run of entry frames */
        for (unsigned i = n; i-- > 0;) {
            if (in_entry(frames[i])) {
                from = i + 1;
                break;
            }
        }
        if (from == n)
            return n > 2 ? 2 : n; /* no entry frame at all: the capture and the recording */
    }
    while (from < n && in_entry(frames[from]))
        from++;
    return from;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RP_TSAN 1
#endif

static unsigned capture(uintptr_t *frames, unsigned max)
{
#ifndef RP_TSAN
    int got = unw_backtrace((void **)frames, (int)max);
    return got > 0 ? (unsigned)got : 0;
#else
    /* As debug/backtrace.c: under ThreadSanitizer unw_backtrace's per-thread cache is torn
     * down after TSan's thread state; stepping frame by frame keeps no such cache. */
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
    return n;
#endif
}

__attribute__((noinline)) uint32_t rp_prof_stack_capture(const void *ra, unsigned depth)
{
    pthread_once(&entries_once, find_entries);
    if (depth > RP_STACK_MAX_FRAMES)
        depth = RP_STACK_MAX_FRAMES;
    uintptr_t frames[CAPTURE_MAX];
    unsigned n = capture(frames, depth + OWN_FRAMES);
    unsigned from = rp_prof_stack_cut(frames, n, ra);
    if (from >= n)
        return 0;
    unsigned keep = n - from < depth ? n - from : depth;
    return rp_depot_put(frames + from, keep);
}
