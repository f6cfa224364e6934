/* The program's stack at a sampled allocation (profile.h), for the release flavour: captured with
 * libunwind's unw_backtrace, as the debug flavour captures its stacks, cut so that frame 0 is
 * the program's call to malloc, calloc, ... (or a wrapper of its own, such as operator new),
 * and stored in the process-wide stack depot (debug/stack_depot.h), whose ids the heap dumps'
 * samples name.
 *
 * The cut: the entry point hands down its return address (__builtin_return_address(0) of the
 * function the program called); the stack is kept from the frame holding it. A sample taken
 * inside a function of the drop-in that is not an entry point (realloc moving a small block
 * through malloc) hands down an address inside the entry point, so the frames that lie in the
 * drop-in's entry points (their address ranges, from libunwind) are crossed too. Without an
 * address, or when it is not found, the stack is cut after the last frame inside an entry
 * point.
 *
 * libunwind is loaded (dlopen) by the first capture, not linked: a program that never samples
 * does not map it (nor liblzma, which it needs) at start-up. That capture allocates (dlopen
 * does); every other capture allocates nothing from a heap. Without libunwind, captures return
 * 0 and one line on stderr says so. */
#ifndef RP_PROFILE_STACK_H
#define RP_PROFILE_STACK_H

#include <stdint.h>

/* The stack of the allocation being sampled, at most depth frames, as a depot id (0 when
 * nothing could be captured or stored). ra: see above, or NULL. */
uint32_t rp_prof_stack_capture(const void *ra, unsigned depth);

/* Index of the first frame to keep of frames[0..n) (exposed for tests): past the frame equal
 * to ra and the entry points' frames after it, else past the last run of entry frames. */
unsigned rp_prof_stack_cut(const uintptr_t *frames, unsigned n, const void *ra);

#endif
