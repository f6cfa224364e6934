/* The malloc_api harness's second thread: see malloc_worker.h. */
#define _GNU_SOURCE
#include "fuzz/malloc_worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "rampart_malloc.h"
#include "src/malloc/free_batch.h"
#include "src/malloc/thread_cache.h"

typedef enum { W_IDLE, W_FREE, W_FREE_MANY, W_MALLOC, W_VALLOC, W_REALLOC, W_FLUSH, W_CHECK, W_EXIT } worker_op;

static struct {
    pthread_t thread;
    int running;
    pthread_mutex_t lock;
    pthread_cond_t wake, done_cond;
    worker_op op; /* W_IDLE when the worker waits for work */
    void *p;
    void *const *ps; /* W_FREE_MANY: size pointers */
    size_t size;
    char *why;
    size_t why_len;
    void *result; /* results of the request */
    int err;
    int rc;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done_cond = PTHREAD_COND_INITIALIZER};

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&w.lock);
    for (;;) {
        while (w.op == W_IDLE)
            pthread_cond_wait(&w.wake, &w.lock);
        worker_op op = w.op;
        errno = 0;
        switch (op) {
        /* The harness checks what a free did once the call returns: the frees this thread
         * collected (T5 in thread_cache.h) are examined before it does. */
        case W_FREE:
            free(w.p);
            if (rp_tc_self)
                rp_malloc_free_collected(rp_tc_self);
            break;
        case W_FREE_MANY:
            for (size_t i = 0; i < w.size; i++)
                free(w.ps[i]);
            if (rp_tc_self)
                rp_malloc_free_collected(rp_tc_self);
            break;
        case W_MALLOC:
            w.result = malloc(w.size);
            break;
        case W_VALLOC:
            w.result = valloc(w.size);
            break;
        case W_REALLOC:
            w.result = realloc(w.p, w.size);
            break;
        case W_FLUSH:
            rp_malloc_thread_flush();
            break;
        case W_CHECK:
            w.rc = rp_malloc_check(w.why, w.why_len);
            break;
        default:
            break;
        }
        w.err = errno;
        w.op = W_IDLE;
        pthread_cond_signal(&w.done_cond);
        if (op == W_EXIT)
            break;
    }
    pthread_mutex_unlock(&w.lock);
    return NULL; /* the thread-exit destructor flushes this thread's cache */
}

/* Hands op to the worker (starting it if needed) and waits until it is done. */
static void call(worker_op op)
{
    if (!w.running) {
        if (op == W_EXIT)
            return;
        int rc = pthread_create(&w.thread, NULL, worker_main, NULL);
        if (rc != 0) {
            fprintf(stderr, "malloc_api: cannot start the second thread (error %d)\n", rc);
            abort();
        }
        w.running = 1;
    }
    pthread_mutex_lock(&w.lock);
    w.op = op;
    pthread_cond_signal(&w.wake);
    while (w.op != W_IDLE)
        pthread_cond_wait(&w.done_cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    if (op == W_EXIT) {
        pthread_join(w.thread, NULL);
        w.running = 0;
    }
}

void worker_free(void *p)
{
    w.p = p;
    call(W_FREE);
}

void worker_free_many(void *const *ps, size_t n)
{
    w.ps = ps;
    w.size = n;
    call(W_FREE_MANY);
}

void *worker_malloc(size_t size, int *err)
{
    w.size = size;
    call(W_MALLOC);
    *err = w.err;
    return w.result;
}

void *worker_valloc(size_t size, int *err)
{
    w.size = size;
    call(W_VALLOC);
    *err = w.err;
    return w.result;
}

void *worker_realloc(void *p, size_t size, int *err)
{
    w.p = p;
    w.size = size;
    call(W_REALLOC);
    *err = w.err;
    return w.result;
}

void worker_flush(void) { call(W_FLUSH); }

int worker_check(char *why, size_t len)
{
    w.why = why;
    w.why_len = len;
    call(W_CHECK);
    return w.rc;
}

void worker_exit(void) { call(W_EXIT); }

void worker_forget(void) { w.running = 0; }

int worker_running(void) { return w.running; }
