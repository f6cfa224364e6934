/* fork() in a threaded program using the malloc drop-in.
 *
 * pthread_atfork handlers: before fork, take every lock the allocator has, in one order
 * (set-up and arena locks, the thread-cache list, the heap list, each heap, the address
 * map), so that no other thread is inside the allocator when the address space is copied;
 * after fork, the parent releases them and the child re-initialises them (it is the only
 * thread left) and keeps only the forking thread's cache. */
#ifndef RP_MALLOC_FORK_H
#define RP_MALLOC_FORK_H

/* Installs the handlers (once, from rp_malloc_init). */
void rp_malloc_fork_install(void);

#endif
