/* A program, built against the system malloc, for running under librampart_malloc_debug.so
 * with leak_report=1 (debug_preload_test.c). It leaks from two call sites — 3 blocks of 100
 * bytes from leak_site_a, each pointing to a 20-byte child from leak_child, and 2 blocks of 7
 * bytes from leak_site_b — and keeps blocks that are NOT leaks, each reachable one way only:
 * from a global, from a thread's stack (the thread is still blocked when the process exits),
 * from thread-local storage (main thread and worker), and from a pthread key. Everything
 * else it frees. A leak report must list exactly the two sites (direct) and the children
 * (indirect). It writes nothing (stdio would allocate a buffer that stays live until exit). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
/* Makes the compiler believe p is used, without storing it anywhere. */
#define CONSUME(p) __asm__ volatile("" ::"r"(p) : "memory")

static volatile int times_a = 3, times_b = 2;

void *kept_by_global;
/* Not static: a store to a static TLS variable never read is dropped under -O2. */
__thread void *kept_in_tls;
static pthread_key_t key;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int worker_ready;

__attribute__((noinline)) void *leak_child(void)
{
    void *p = malloc(20);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *leak_site_a(void)
{
    void **p = malloc(100);
    if (p)
        p[0] = leak_child();
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *leak_site_b(void)
{
    void *p = calloc(1, 7);
    KEEP_FRAME();
    return p;
}

__attribute__((noinline)) void *kept(size_t n)
{
    void *p = malloc(n);
    KEEP_FRAME();
    return p;
}

/* Every allocation here is freed again. */
__attribute__((noinline)) void tidy_work(void)
{
    void *volatile p; /* volatile: each malloc/free pair really happens */
    for (int i = 0; i < 20; i++) {
        p = malloc(1000 + (size_t)i);
        free(p);
    }
    p = malloc(10);
    p = realloc(p, 5000);
    free(p);
    p = malloc(300000); /* page tier */
    free(p);
    void *aligned = NULL;
    if (posix_memalign(&aligned, 4096, 4096) == 0)
        free(aligned);
    KEEP_FRAME();
}

/* Keeps one block on its stack and one in its TLS, then blocks until the process exits. */
static void *worker(void *arg)
{
    (void)arg;
    void *volatile on_stack = kept(48);
    kept_in_tls = kept(56);
    pthread_mutex_lock(&lock);
    worker_ready = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    for (;;)
        pause();
    return on_stack;
}

/* The leaks, in a frame of their own: main's frame never holds their pointers. */
__attribute__((noinline)) void leak_everything(void)
{
    for (int i = 0; i < times_a; i++)
        CONSUME(leak_site_a());
    for (int i = 0; i < times_b; i++)
        CONSUME(leak_site_b());
    KEEP_FRAME();
}

/* Overwrites the stack below main's frame, where the leaked pointers passed. */
__attribute__((noinline)) void clear_stack(void)
{
    volatile char scratch[16384];
    for (size_t i = 0; i < sizeof scratch; i++)
        scratch[i] = 0;
    KEEP_FRAME();
}

int main(void)
{
    kept_by_global = kept(64);
    kept_in_tls = kept(72);
    if (pthread_key_create(&key, NULL) == 0)
        pthread_setspecific(key, kept(88));
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    pthread_mutex_lock(&lock);
    while (!worker_ready)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    leak_everything();
    tidy_work();
    clear_stack();
    KEEP_FRAME();
    return 0;
}
