/* The fast unwinder: frame-pointer walk with the thread's stack as bounds (frame_walk.h). */
#include "frame_walk.h"

#include <pthread.h>
#include <sys/auxv.h>

/* Farthest a frame may lie below its stack's top. */
#define STACK_SPAN_MAX ((uintptr_t)1 << 30)

/* The top of the stack holding address fp, or 0 when it is neither the calling thread's own
 * stack nor the initial thread's. glibc places a thread's descriptor (what pthread_self
 * returns) at the top of its stack block, its own or the caller's (pthread_attr_setstack), so
 * the stack lies just below it; the initial thread's descriptor is elsewhere, and its frames
 * lie below the bytes the kernel placed at the top of its stack for AT_RANDOM (above argv and
 * the environment). Neither needs a call that could allocate, nor a system call. */
static uintptr_t stack_top(uintptr_t fp)
{
    uintptr_t self = (uintptr_t)pthread_self();
    if (fp < self && self - fp < STACK_SPAN_MAX)
        return self;
    static uintptr_t initial_top; /* a constant, looked up once (getauxval walks the vector) */
    uintptr_t initial = __atomic_load_n(&initial_top, __ATOMIC_RELAXED);
    if (initial == 0) {
        initial = (uintptr_t)getauxval(AT_RANDOM);
        __atomic_store_n(&initial_top, initial, __ATOMIC_RELAXED);
    }
    if (fp < initial && initial - fp < STACK_SPAN_MAX)
        return initial;
    return 0;
}

unsigned rp_frame_walk(uintptr_t *frames, unsigned max, const void *start)
{
    uintptr_t fp = (uintptr_t)start;
    uintptr_t top = stack_top(fp);
    if (top == 0 || max == 0)
        return 0;
    uintptr_t low = fp; /* nothing below the first frame is read */
    unsigned n = 0;
    frames[n++] = 0;
    while (n < max) {
        /* A frame holds the caller's frame pointer and the return address: 16 bytes, aligned,
         * inside [low, top). */
        if (fp < low || fp > top - 16 || (fp & 7) != 0)
            break;
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t ret = frame[1];
        /* A return address on the stack itself, or in the first page, is a register that
         * was not a frame pointer. */
        if (ret < 4096 || (ret >= low && ret < top))
            break;
        frames[n++] = ret;
        uintptr_t next = frame[0];
        if (next <= fp)
            break; /* the chain must rise: the outermost frame holds 0 */
        low = fp + 16;
        fp = next;
    }
    return n;
}
