/* The fast unwinder (option fast_unwind): return addresses read along the chain of saved
 * frame pointers, as ASan records malloc and free stacks by default.
 *
 * It costs a few loads per frame instead of a DWARF lookup, and stops at the first function
 * that keeps no frame pointer (most distributions build without them): there the chain
 * leaves the stack or stops rising and the walk ends. Every frame pointer is checked to lie
 * on the current thread's stack, between the walk's first frame and the stack's top, and to
 * rise, before anything is read through it: a stale or foreign frame pointer ends the walk,
 * it is never followed. The debug flavour's own objects are built with frame pointers, so
 * the walk crosses rampart's frames to the program's call site in every case.
 *
 * The stack's top is known for threads glibc created and the initial thread. A program that
 * runs code on stacks of its own (coroutines switched with swapcontext, threads made by a raw
 * clone sharing their creator's thread pointer) can put its frames below a top that is not
 * theirs, with unmapped memory in between: leave fast_unwind off for such programs, as for
 * ASan's fast unwinder, which trusts frame pointers the same way. */
#ifndef RP_DEBUG_FRAME_WALK_H
#define RP_DEBUG_FRAME_WALK_H

#include <stdint.h>

/* Fills frames[1 .. n-1] with the return addresses found from frame fp (the value of
 * __builtin_frame_address(0) in the caller: frames[1] is where the caller returns to) and
 * frames[0] with 0, at most max entries; returns n. Returns 0 when the thread's stack
 * cannot be told from here (an alternate signal stack, say): the caller unwinds another way. */
unsigned rp_frame_walk(uintptr_t *frames, unsigned max, const void *fp);

#endif
