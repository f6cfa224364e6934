/* The malloc drop-in's one-time set-up, at the first allocation: the arenas (arena.h), the
 * thread caches (thread_cache.h), the fork handlers (malloc_fork.h) and, with option stats, the
 * at-exit report. */
#ifndef RP_MALLOC_INIT_H
#define RP_MALLOC_INIT_H

/* Sets the drop-in up, once. Returns 1 when it is ready. Returns 0 without waiting when the
 * calling thread is already inside it (an allocation made by pthread_atfork or atexit during
 * set-up), so such allocations take the direct path. */
int rp_malloc_init(void);

/* 1 once rp_malloc_init has completed (acquire). */
int rp_malloc_ready(void);

/* The set-up lock across fork (see malloc_fork.c): taken first, so a fork waits for a set-up
 * under way to finish. */
void rp_malloc_init_fork_prepare(void);
void rp_malloc_init_fork_parent(void);
void rp_malloc_init_fork_child(void);

#endif
