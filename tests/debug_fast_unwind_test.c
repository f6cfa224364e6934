/* The fast unwinder (fast_unwind=1, debug/frame_walk.h), in a program built with frame
 * pointers (this test): allocation and free stacks name the same functions the full unwinder
 * does, in the main thread, another thread and a signal handler on an alternate stack; a
 * capture returns the configured depth; and a frame-pointer chain broken on purpose (a saved
 * frame pointer of 0, 1, below the frame, above the stack, into the heap, pointing back at
 * itself) ends the walk without a crash, keeping the frames before the break. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug/block_meta.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "debug_testing.h"
#include "stack_names.h"
#include "testing.h"

static unsigned frame_count(uint32_t stack)
{
    uintptr_t frames[RP_STACK_MAX_FRAMES];
    return rp_depot_get(stack, frames, RP_STACK_MAX_FRAMES);
}

/* ---- allocation and free stacks ---- */

static rp_heap *heap;

__attribute__((noinline)) void *fast_alloc_leaf(size_t n)
{
    void *p = rp_alloc(heap, n, 0);
    KEEP_FRAME();
    return p;
}
__attribute__((noinline)) void *fast_alloc_middle(size_t n)
{
    void *p = fast_alloc_leaf(n + 1);
    KEEP_FRAME();
    return p;
}
__attribute__((noinline)) void fast_free_leaf(void *p)
{
    rp_free(p);
    KEEP_FRAME();
}

TEST_NO_ASAN static rp_debug_meta meta_of(const void *user)
{
    rp_debug_meta m;
    volatile const unsigned char *from = (const unsigned char *)rp_meta_of(user);
    unsigned char *to = (unsigned char *)&m;
    for (size_t i = 0; i < sizeof m; i++)
        to[i] = from[i];
    return m;
}

/* One block's stacks: allocated through fast_alloc_middle -> fast_alloc_leaf, freed in
 * fast_free_leaf, both called from here; `caller` is the function that called this one. */
__attribute__((noinline)) void check_block_stacks(const char *caller)
{
    void *p = fast_alloc_middle(40);
    CHECK(p != NULL);
    rp_debug_meta m = meta_of(p);
    CHECK(strcmp(top_frame(m.alloc_stack, 0), "fast_alloc_leaf") == 0);
    CHECK(strcmp(top_frame(m.alloc_stack, 1), "fast_alloc_middle") == 0);
    CHECK(strcmp(top_frame(m.alloc_stack, 2), "check_block_stacks") == 0);
    CHECK(strcmp(top_frame(m.alloc_stack, 3), caller) == 0);
    fast_free_leaf(p);
    m = meta_of(p); /* in quarantine: its metadata stays */
    CHECK(strcmp(top_frame(m.free_stack, 0), "fast_free_leaf") == 0);
    CHECK(strcmp(top_frame(m.free_stack, 1), "check_block_stacks") == 0);
    CHECK(strcmp(top_frame(m.free_stack, 2), caller) == 0);
    KEEP_FRAME();
}

__attribute__((noinline)) void check_main_thread(void)
{
    check_block_stacks("check_main_thread");
    KEEP_FRAME();
}

__attribute__((noinline)) void *thread_body(void *arg)
{
    (void)arg;
    check_block_stacks("thread_body");
    KEEP_FRAME();
    return NULL;
}

/* ---- an alternate signal stack ---- */

static volatile uint32_t handler_stack;

__attribute__((noinline)) void on_signal(int sig)
{
    (void)sig;
    handler_stack = rp_stack_capture(0);
    KEEP_FRAME();
}

static void check_alternate_stack(void)
{
    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
    CHECK(ss.ss_sp != NULL && sigaltstack(&ss, NULL) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    raise(SIGUSR1);
    /* Off the thread's stack the walk declines and libunwind takes over; either way frame 0
     * is the handler. */
    CHECK(strcmp(top_frame(handler_stack, 0), "on_signal") == 0);
    stack_t off = {.ss_flags = SS_DISABLE};
    CHECK(sigaltstack(&off, NULL) == 0);
    signal(SIGUSR1, SIG_DFL);
    free(ss.ss_sp);
}

/* ---- a broken chain ---- */

static uintptr_t bogus_target;

/* Captures with this frame's saved frame pointer replaced by `bogus`: the stack holds this
 * function and nothing past the break but at most one more frame (the return address kept
 * next to the bogus pointer is still this frame's own). */
__attribute__((noinline)) uint32_t capture_broken(uintptr_t bogus)
{
    volatile uintptr_t *frame = (volatile uintptr_t *)__builtin_frame_address(0);
    uintptr_t saved = frame[0];
    frame[0] = bogus;
    uint32_t id = rp_stack_capture(0);
    frame[0] = saved;
    KEEP_FRAME();
    return id;
}

__attribute__((noinline)) uint32_t capture_broken_caller(uintptr_t bogus)
{
    uint32_t id = capture_broken(bogus);
    KEEP_FRAME();
    return id;
}

static void check_broken_chains(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    char *heap_memory = malloc(256);
    CHECK(heap_memory != NULL);
    memset(heap_memory, 0x41, 256);
    const uintptr_t bogus[] = {
        0,
        1,
        here - 4096,                   /* below the frame: the chain must rise */
        (uintptr_t)1 << 46,            /* above every stack */
        (uintptr_t)heap_memory + 64,   /* off the stack */
        (uintptr_t)&bogus_target,      /* a global */
        here + 3,                      /* misaligned */
    };
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        uint32_t id = capture_broken_caller(bogus[i]);
        CHECK(strcmp(top_frame(id, 0), "capture_broken") == 0);
        /* capture_broken's own return address is read before its saved frame pointer: its
         * caller is there, the walk ends after it */
        CHECK(frame_count(id) <= 2);
        if (frame_count(id) == 2)
            CHECK(strcmp(top_frame(id, 1), "capture_broken_caller") == 0);
    }
    free(heap_memory);
}

int main(void)
{
    const char *options = getenv("RAMPART_OPTIONS");
    REQUIRE(options != NULL && strstr(options, "fast_unwind=1") != NULL);
    heap = rp_heap_create(NULL);
    REQUIRE(heap != NULL);

    check_main_thread();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_body, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);

    CHECK(frame_count(capture_at_depth(40)) == 16); /* backtrace_depth */

    check_alternate_stack();
    check_broken_chains();

    rp_heap_destroy(heap);
    TEST_MAIN_END();
}
