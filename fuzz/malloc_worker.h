/* The malloc_api harness's second thread: it runs one malloc call at a time on the main
 * thread's behalf and waits for the next, so every input stays deterministic while blocks
 * cross threads (a block allocated by one thread and freed by the other lands in the
 * freeing thread's cache, and goes back to its own arena only when that cache flushes) and
 * thread exit tears a cache down (the pthread key destructor's flush). The thread is started
 * on first use and, after worker_exit, started afresh with a new cache on the next call. */
#ifndef RP_FUZZ_MALLOC_WORKER_H
#define RP_FUZZ_MALLOC_WORKER_H

#include <stddef.h>

/* free(p) on the worker. */
void worker_free(void *p);
/* free() of each of the n pointers of ps on the worker, in order, in one hand-over (a burst
 * of cross-thread frees that overflows the worker's cache bins). */
void worker_free_many(void *const *ps, size_t n);
/* malloc(size) on the worker; *err receives its errno. */
void *worker_malloc(size_t size, int *err);
/* valloc(size) on the worker; *err receives its errno. */
void *worker_valloc(size_t size, int *err);
/* realloc(p, size) on the worker; *err receives its errno. */
void *worker_realloc(void *p, size_t size, int *err);
/* rp_malloc_thread_flush() on the worker. */
void worker_flush(void);
/* rp_malloc_check on the worker (its own thread cache and every arena): 0, or non-zero with
 * a message in why. */
int worker_check(char *why, size_t len);
/* Ends the worker thread (its cache is flushed by the thread-exit destructor) and joins it.
 * Nothing happens when it is not running. */
void worker_exit(void);
/* In the child of fork, where the thread does not exist: forgets it (never joined, never
 * called), so nothing waits for it. */
void worker_forget(void);
/* 1 while the worker thread runs. */
int worker_running(void);

#endif
