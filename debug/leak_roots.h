/* The roots of the leak scan: memory the program reaches without going through a heap
 * block, scanned word by word for pointers into live blocks (as LeakSanitizer does).
 *
 *   - the writable segments of every loaded module (dl_iterate_phdr): globals and statics;
 *   - every thread's stack from its stack pointer (less the 128-byte red zone below it) to
 *     the end of the mapping holding it, and its registers (stop_world.h);
 *   - every thread's static TLS and thread control block (pthread_setspecific values and the
 *     dynamic thread vector's pointer live there), around its thread pointer;
 *   - every thread's dynamic thread vector (DTV), whose entries point to the TLS blocks glibc
 *     allocates for modules loaded with dlopen (from malloc: heap blocks, scanned in turn).
 * Ranges are passed as found; the scanner clips them to readable memory and leaves out
 * rampart's own regions. */
#ifndef RP_DEBUG_LEAK_ROOTS_H
#define RP_DEBUG_LEAK_ROOTS_H

#include <stdint.h>

#include "proc_maps.h"
#include "stop_world.h"

/* Receives one root range [lo, hi); `what` names it for diagnostics. */
typedef void (*rp_root_fn)(uintptr_t lo, uintptr_t hi, const char *what, void *arg);

/* A module's writable segment. */
typedef struct rp_root_range {
    uintptr_t lo, hi;
} rp_root_range;

/* Lists the writable segments of every loaded module into out (at most max); returns how
 * many there are (may exceed max: call again with more room). Takes the loader's lock: call
 * it before other threads are stopped. */
size_t rp_roots_modules(rp_root_range *out, size_t max);

/* The address range of the dynamic loader's code and data, as rp_roots_modules last found it
 * (0 and 0 when unknown). Blocks the loader allocates (a thread's DTV, dlopen's TLS blocks) are
 * reachable by design, as LeakSanitizer treats them: a thread that exited leaves its DTV
 * pointed to only from glibc's cache of thread stacks. */
void rp_roots_loader_range(uintptr_t *lo, uintptr_t *hi);

/* Passes the roots of thread t (stopped, or the caller itself): stack, registers, static
 * TLS, DTV. */
void rp_roots_thread(const rp_thread_regs *t, const rp_maps *maps, rp_root_fn fn, void *arg);

/* When some thread could not be stopped, its stack and TLS cannot be found: every private
 * writable mapping is passed instead (conservative: leaks may be missed, none invented). */
void rp_roots_all_writable(const rp_maps *maps, rp_root_fn fn, void *arg);

#endif
