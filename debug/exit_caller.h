/* The frame that called exit(), where the leak check at exit starts reading the stack.
 *
 * The check runs in a destructor, under exit's own frames (exit, the exit handlers, the
 * loader's destructor loop, the destructor). Their slots that nothing wrote since hold what
 * the program's returned calls left there, block addresses among it, and reading them as roots
 * would keep leaked blocks. The program's live stack starts at the frame that called exit()
 * (main's, or the C library's start code once main has returned), and the callee-saved
 * registers that frame had are roots too. */
#ifndef RP_DEBUG_EXIT_CALLER_H
#define RP_DEBUG_EXIT_CALLER_H

#include <stddef.h>
#include <stdint.h>

#define RP_EXIT_CALLER_REGS 12 /* more than any architecture's callee-saved general registers */

typedef struct rp_exit_caller {
    uintptr_t sp;                         /* the caller's stack pointer after exit() returns */
    uintptr_t regs[RP_EXIT_CALLER_REGS]; /* its callee-saved registers */
    size_t nregs;
} rp_exit_caller;

/* Unwinds from here to exit()'s frame and fills *out with its caller's. Returns 0, or -1 when
 * exit() is not on this stack (a destructor run by dlclose) or the stack cannot be unwound. */
int rp_exit_caller_find(rp_exit_caller *out);

#endif
