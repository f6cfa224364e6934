/* Guarded blocks (option guard=all or guard=sample:N, both flavours; the drop-in's
 * Electric-Fence / GWP-ASan mode): a block placed against an inaccessible page, and made
 * inaccessible itself once freed, so that a read or a write past its end, or after its free,
 * faults at the access; the fault becomes a report (READ or WRITE, the address and its offset
 * from the block, the access stack, the block's allocation and free stacks).
 *
 * The pool is one reservation of RP_GP_SLOTS slots, each RP_GP_SLOT_PAGES data pages followed
 * by a PROT_NONE guard page (a guard page also before the first slot): slot i's data starts at
 * base + page + i * (RP_GP_SLOT_PAGES + 1) pages. A block is placed at the end of its slot's
 * data (its end rounded up to 16 bytes: 0-15 bytes of slack, filled with a pattern checked at
 * the free) or, with guard_left, at its start (the guard page before it catches underflows);
 * only the pages it covers are accessible, and the rest of the page it shares is filled with the
 * pattern too, so an underflow (right placement) or an overflow (left) within that page is
 * reported at the free. A freed block's pages are made inaccessible and given back to the OS;
 * the slot waits in a FIFO quarantine and is reused only when more than half the slots wait.
 * Requests above the slot's data, aligned above a page, when no slot is free, or past the live
 * blocks the kernel's mapping budget allows (each splits the pool's mapping), are served as usual
 * (unguarded).
 *
 * Invariants (rp_gp_check):
 *   GP1  every slot is FREE (never used, or left out after a fault report that returned), LIVE
 *        (user, size set: user lies in the slot's data, user + size within it, user 16-byte
 *        aligned or at the data's start) or QUARANTINED (as LIVE, its pages inaccessible); a
 *        slot with a reported fault let through (opened) is never handed out again;
 *   GP2  the quarantine FIFO holds exactly the QUARANTINED slots, each once, oldest first, and
 *        quarantined counts them; slots [unused, RP_GP_SLOTS) were never handed out (FREE). */
#ifndef RP_GUARD_POOL_H
#define RP_GUARD_POOL_H

#include <stddef.h>
#include <stdint.h>

#define RP_GP_SLOT_PAGES 64u /* blocks of up to 256 KiB */
#define RP_GP_SLOTS 65536u   /* 16.3 GiB of address space, reserved, not committed */

/* 1 once the pool is set up (option guard on); set-up is done by rp_gp_setup. */
extern int rp_gp_on;

/* Sets up the pool and the fault handler when option guard asks for them (once, at the
 * drop-in's set-up). 0, or -1 when the reservation failed (guard then stays off, with a warning). */
int rp_gp_setup(void);

/* 1 if p lies in the pool's reservation. */
static inline int rp_gp_contains(const void *p)
{
    extern uintptr_t rp_gp_lo, rp_gp_hi;
    return (uintptr_t)p - rp_gp_lo < rp_gp_hi - rp_gp_lo;
}

/* A guarded block for size bytes aligned to align (a power of two), or NULL when it cannot be
 * guarded (the caller then allocates as usual). ra: the entry point's return address, for the
 * allocation stack (profile_stack.h). */
void *rp_gp_alloc(size_t size, size_t align, const void *ra);

/* Frees p, a pointer in the pool: a live block's slack is checked first (an overflow or underflow
 * within its pages is reported); a block freed already is a double free, anything else an
 * invalid free (what: the call, for the report). */
void rp_gp_free(void *p, const char *what);

/* The request of live block p in the pool, or 0 with a report when p is not one. */
size_t rp_gp_usable(const void *p, const char *what);

/* A write of n bytes at d, d in the pool (guarded_memory.h): 0 when it stays inside a live
 * block's request, else -1 after a report. */
int rp_gp_check_write(const void *d, size_t n, const char *what);

/* fork: the pool's lock held across it (malloc_fork.c); the child's is made anew. */
void rp_gp_fork_prepare(void);
void rp_gp_fork_parent(void);
void rp_gp_fork_child(void);

/* GP1, GP2. 0, or 1 with a message. */
int rp_gp_check(char *why, size_t len);

#endif
