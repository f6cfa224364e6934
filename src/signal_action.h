/* Keeping a signal action read back from sigaction(2) in a global.
 *
 * glibc's sigaction fills the 128-byte sa_mask of the action it returns by copying it out of
 * its own stack frame, of which the kernel wrote only its signal set (8 bytes on Linux); the
 * rest is whatever earlier calls left on the stack. Kept in a global, those stale words become
 * roots of the debug flavour's leak scan, and a leaked block whose address is among them is
 * kept reachable. rp_sigaction_keep copies an action with a mask rebuilt from its members. */
#ifndef RP_SIGNAL_ACTION_H
#define RP_SIGNAL_ACTION_H

#include <signal.h>
#include <string.h>

#ifndef NSIG
#define NSIG 65 /* Linux: signals 1..64 */
#endif

/* *out = *from, but out's mask holds exactly from's member signals and nothing else. */
static inline void rp_sigaction_keep(struct sigaction *out, const struct sigaction *from)
{
    memset(out, 0, sizeof *out);
    out->sa_flags = from->sa_flags;
    if (from->sa_flags & SA_SIGINFO)
        out->sa_sigaction = from->sa_sigaction;
    else
        out->sa_handler = from->sa_handler;
    sigemptyset(&out->sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&from->sa_mask, sig) == 1)
            sigaddset(&out->sa_mask, sig);
}

#endif
