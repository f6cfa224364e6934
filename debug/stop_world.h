/* Stopping every other thread of the process for the leak scanner, and capturing what it
 * needs from each: the registers, the stack pointer and the thread pointer (TLS).
 *
 * Threads are listed from /proc/self/task and sent RP_STOP_SIGNAL with rt_tgsigqueueinfo,
 * the payload a per-process secret; the handler copies the interrupted registers into the
 * thread's slot, acknowledges, and waits on a futex until the world is resumed. Listing is
 * repeated until it finds no thread that was not signalled (threads started meanwhile). A
 * signal that does not carry the secret goes to the handler installed before (the program's),
 * or gets its default action. The handler stays installed after a stop: a late delivery (a
 * thread that had the signal blocked) is recognised and ignored.
 *
 * Nothing here allocates from a heap or takes a lock a stopped thread may hold: slots live
 * in scratch memory from the OS; the caller must hold every lock it needs while threads are
 * stopped (the heaps' locks) before calling rp_world_stop.
 *
 * Invariants while stopped (between rp_world_stop and rp_world_resume):
 *   W1  every slot in state RP_THREAD_STOPPED belongs to a thread parked in the handler, whose
 *       registers, sp and tp in the slot are those it had when interrupted;
 *   W2  exactly one slot is RP_THREAD_SELF: the calling thread (its registers are not filled). */
#ifndef RP_DEBUG_STOP_WORLD_H
#define RP_DEBUG_STOP_WORLD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The signal used to stop threads. The real-time signals glibc reserves lie below SIGRTMIN,
 * and programs usually count theirs up from SIGRTMIN. */
#define RP_STOP_SIGNAL (SIGRTMAX - 3)

#define RP_THREAD_REGS 32     /* general registers kept per thread */
#define RP_THREAD_FP_BYTES 512 /* FP/SIMD state kept (x86-64: the fxsave area) */

enum {
    RP_THREAD_SIGNALLED = 0, /* signal sent, no answer (yet) */
    RP_THREAD_STOPPED = 1,   /* parked in the handler */
    RP_THREAD_SELF = 2,      /* the thread that stops the others */
    RP_THREAD_GONE = 3,      /* exited before it could be signalled */
};

typedef struct rp_thread_regs {
    pid_t tid;
    int state;                     /* RP_THREAD_* */
    uintptr_t sp;                  /* stack pointer when interrupted */
    uintptr_t tp;                  /* thread pointer (TLS base) */
    uintptr_t regs[RP_THREAD_REGS];
    unsigned nregs;
    unsigned char fp[RP_THREAD_FP_BYTES];
    unsigned fp_len;
} rp_thread_regs;

typedef struct rp_world {
    rp_thread_regs *threads;
    size_t n, cap;
    size_t map_len;
    size_t not_stopped; /* threads signalled that never answered */
    int listed;         /* 1 when /proc/self/task could be read */
} rp_world;

/* Stops every other thread. Always fills the SELF slot (tid, sp = the caller's stack
 * pointer, tp). Returns 0, or -1 when the threads could not be listed or no memory was
 * available (the world then holds the SELF slot only, listed 0). Threads that did not answer
 * within about two seconds are counted in not_stopped. */
int rp_world_stop(rp_world *w, uintptr_t self_sp);

/* Lets the stopped threads go on and gives back the slots. */
void rp_world_resume(rp_world *w);

/* The calling thread's thread pointer. */
uintptr_t rp_thread_pointer(void);

#endif
