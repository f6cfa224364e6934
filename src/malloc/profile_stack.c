#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "profile_stack.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

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

/* libunwind, loaded when the first stack is captured (see profile_stack.h): its functions by
 * their exported names (the header's macros give them). */
#define RP_UNW_NAME2(x) #x
#define RP_UNW_NAME(x) RP_UNW_NAME2(x)
static struct {
    int (*backtrace)(void **frames, int max);
    int (*proc_info_by_ip)(unw_addr_space_t space, unw_word_t ip, unw_proc_info_t *pi, void *arg);
    unw_addr_space_t *local_space;
    int (*getcontext)(unw_context_t *context);
    int (*init_local)(unw_cursor_t *cursor, unw_context_t *context);
    int (*get_reg)(unw_cursor_t *cursor, unw_regnum_t reg, unw_word_t *value);
    int (*step)(unw_cursor_t *cursor);
} unw;
enum { UNW_NOT_TRIED, UNW_LOADING, UNW_LOADED, UNW_MISSING };
static int unw_state; /* atomic */
/* Set while this thread captures: a loaded library's thread-local storage is allocated (by
 * malloc) at its first use on each thread, inside the capture; that allocation, if sampled or
 * guarded, gets no stack instead of capturing again without end. */
static __thread int capturing __attribute__((tls_model("initial-exec")));

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
        if (unw.proc_info_by_ip(*unw.local_space, (unw_word_t)(uintptr_t)fns[i], &pi, NULL) == 0)
            entries[nentries++] = (entry_range){(uintptr_t)pi.start_ip, (uintptr_t)pi.end_ip};
    }
}

static int unw_load(void)
{
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return 0;
    *(void **)&unw.backtrace = dlsym(lib, RP_UNW_NAME(unw_backtrace));
    *(void **)&unw.proc_info_by_ip = dlsym(lib, RP_UNW_NAME(unw_get_proc_info_by_ip));
    unw.local_space = (unw_addr_space_t *)dlsym(lib, RP_UNW_NAME(unw_local_addr_space));
    *(void **)&unw.getcontext = dlsym(lib, RP_UNW_NAME(unw_tdep_getcontext));
    *(void **)&unw.init_local = dlsym(lib, RP_UNW_NAME(unw_init_local));
    *(void **)&unw.get_reg = dlsym(lib, RP_UNW_NAME(unw_get_reg));
    *(void **)&unw.step = dlsym(lib, RP_UNW_NAME(unw_step));
    if (!unw.backtrace || !unw.proc_info_by_ip || !unw.local_space || !unw.getcontext || !unw.init_local ||
        !unw.get_reg || !unw.step)
        return 0;
    find_entries();
    return 1;
}

/* 1 once libunwind is usable. The first caller loads it (dlopen allocates: the callers hold no
 * lock of the drop-in); a capture meanwhile, on another thread or nested in the loading,
 * gets no stack rather than waiting. */
static int unw_ready(void)
{
    int state = __atomic_load_n(&unw_state, __ATOMIC_ACQUIRE);
    if (state == UNW_NOT_TRIED &&
        __atomic_compare_exchange_n(&unw_state, &state, UNW_LOADING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        state = unw_load() ? UNW_LOADED : UNW_MISSING;
        if (state == UNW_MISSING) {
            static const char msg[] = "rampart: libunwind.so.8 could not be loaded: heap profile samples and "
                                      "guarded-block reports carry no stacks\n";
            if (write(2, msg, sizeof msg - 1) < 0) {
            }
        }
        __atomic_store_n(&unw_state, state, __ATOMIC_RELEASE);
    }
    return state == UNW_LOADED;
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
    int got = unw.backtrace((void **)frames, (int)max);
    return got > 0 ? (unsigned)got : 0;
#else
    /* As debug/backtrace.c: under ThreadSanitizer unw_backtrace's per-thread cache is torn
     * down after TSan's thread state; stepping frame by frame keeps no such cache. */
    unsigned n = 0;
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw.getcontext(&context) == 0 && unw.init_local(&cursor, &context) == 0) {
        do {
            unw_word_t ip;
            if (unw.get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0)
                break;
            frames[n++] = (uintptr_t)ip;
        } while (n < max && unw.step(&cursor) > 0);
    }
    return n;
#endif
}

__attribute__((noinline)) uint32_t rp_prof_stack_capture(const void *ra, unsigned depth)
{
    if (capturing || !unw_ready())
        return 0;
    if (depth > RP_STACK_MAX_FRAMES)
        depth = RP_STACK_MAX_FRAMES;
    uintptr_t frames[CAPTURE_MAX];
    capturing = 1;
    unsigned n = capture(frames, depth + OWN_FRAMES);
    capturing = 0;
    unsigned from = rp_prof_stack_cut(frames, n, ra);
    if (from >= n)
        return 0;
    unsigned keep = n - from < depth ? n - from : depth;
    return rp_depot_put(frames + from, keep);
}
