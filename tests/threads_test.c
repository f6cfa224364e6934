/* Threads: 4 threads x 250k operations on one heap, then 4 threads on 4 heaps where a quarter
 * of the frees are of blocks another thread allocated from another heap (rp_free finds the
 * owning heap). Each block carries its owner's pattern, verified before it is freed. Must be
 * clean under --config=tsan. */
#include <pthread.h>
#include <stdint.h>

#include "rampart.h"
#include "testing.h"

#define THREADS 4
#define OPS 250000
#define SLOTS 256

typedef struct block {
    unsigned char *p;
    size_t size;
    unsigned char tag;
} block;

/* Hand-off slots for cross-thread frees (one mutex per slot). */
static struct {
    pthread_mutex_t lock;
    block b;
} mailbox[SLOTS];

typedef struct worker {
    rp_heap *heap;
    int id;
    int cross;
    int errors;
} worker;

/* The pattern is sampled (every 512th byte and both ends) to keep TSan runs short; an
 * overlap between two live blocks still changes a sampled byte of one of them. */
static void stamp(const block *b)
{
    for (size_t i = 0; i < b->size; i += 512)
        b->p[i] = b->tag;
    b->p[b->size - 1] = b->tag;
}

static int intact(const block *b)
{
    for (size_t i = 0; i < b->size; i += 512)
        if (b->p[i] != b->tag)
            return 0;
    return b->p[b->size - 1] == b->tag;
}

static void *work(void *arg)
{
    worker *w = arg;
    test_rng rng = {(unsigned long long)w->id * 7919 + 1};
    block live[64];
    int n = 0;
    for (int op = 0; op < OPS; op++) {
        unsigned r = (unsigned)rng_next(&rng);
        if (n == 64 || (n > 0 && (r & 1))) {
            int k = (int)((r >> 1) % (unsigned)n);
            block b = live[k];
            live[k] = live[--n];
            if (w->cross && (r >> 8) % 4 == 0) {
                /* Swap with a mailbox: free whatever another thread left there. */
                int s = (int)((r >> 12) % SLOTS);
                pthread_mutex_lock(&mailbox[s].lock);
                block other = mailbox[s].b;
                mailbox[s].b = b;
                pthread_mutex_unlock(&mailbox[s].lock);
                b = other;
                if (!b.p)
                    continue;
            }
            if (!intact(&b))
                w->errors++;
            rp_free(b.p);
        } else {
            size_t size = 1 + (r >> 4) % ((r & 0x30) ? 512 : 70000);
            size_t align = (r & 0x300) == 0x300 ? (size_t)64 << ((r >> 20) % 7) : 0;
            block b = {rp_alloc(w->heap, size, align), size, (unsigned char)(w->id * 16 + op % 16)};
            if (!b.p || (align && ((uintptr_t)b.p & (align - 1)))) {
                w->errors++;
                continue;
            }
            stamp(&b);
            live[n++] = b;
        }
    }
    while (n > 0) {
        block b = live[--n];
        if (!intact(&b))
            w->errors++;
        rp_free(b.p);
    }
    return NULL;
}

static void run(rp_heap **heaps, int cross)
{
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){heaps[i], i, cross, 0};
        REQUIRE(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECKF(w[i].errors == 0, "thread %d saw %d errors", i, w[i].errors);
    }
    for (int s = 0; s < SLOTS; s++) {
        if (mailbox[s].b.p) {
            CHECK(intact(&mailbox[s].b));
            rp_free(mailbox[s].b.p);
            mailbox[s].b.p = NULL;
        }
    }
}

int main(void)
{
    for (int s = 0; s < SLOTS; s++)
        pthread_mutex_init(&mailbox[s].lock, NULL);
    rp_heap *shared = rp_heap_create(NULL);
    rp_heap *one[THREADS] = {shared, shared, shared, shared};
    run(one, 0);
    CHECK_HEAP(shared);
    rp_heap_stats_t st;
    rp_heap_stats(shared, &st);
    CHECK(st.blocks_in_use == 0);
    printf("one heap: %llu allocations\n", (unsigned long long)st.alloc_calls);

    rp_heap *own[THREADS];
    for (int i = 0; i < THREADS; i++)
        own[i] = rp_heap_create(NULL);
    run(own, 1);
    for (int i = 0; i < THREADS; i++) {
        CHECK_HEAP(own[i]);
        rp_heap_stats(own[i], &st);
        CHECK(st.blocks_in_use == 0);
        CHECK(st.free_calls == st.alloc_calls);
        rp_heap_destroy(own[i]);
    }
    rp_heap_destroy(shared);
    TEST_MAIN_END();
}
