/* rpbench workers (see rpbench_worker.h). Bookkeeping memory (latency samples, queues)
 * comes from mmap, never from the allocator being measured. */
#define _GNU_SOURCE
#include "rpbench_worker.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>

#include "src/rampart.h"

const rpb_case rpb_cases[] = {
    {"4096/4096", {{4096, 4096}}, 1},
    {"3072/1024", {{3072, 1024}}, 1},
    {"16384/16384", {{16384, 16384}}, 1},
    {"65536/65536", {{65536, 65536}}, 1},
    {"64512/4096", {{64512, 4096}}, 1},
    {"100/64", {{100, 64}}, 1},
    {"mixed",
     {{4096, 4096}, {3072, 1024}, {100, 64}, {16384, 16384}, {64512, 4096}, {200, 16}, {65536, 65536}, {24, 0}},
     8},
};
const int rpb_ncases = (int)(sizeof rpb_cases / sizeof rpb_cases[0]);

/* ---- the allocator under test ------------------------------------------------------------- */

static rp_heap *bench_heap;
static int use_rp;

static inline void *bench_alloc(size_t size, size_t align)
{
    if (use_rp)
        return rp_alloc(bench_heap, size, align);
    if (align == 0)
        return malloc(size);
    void *p;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static inline void *bench_realloc(void *p, size_t size)
{
    return use_rp ? rp_realloc(bench_heap, p, size) : realloc(p, size);
}

static inline void bench_free(void *p)
{
    if (use_rp)
        rp_free(p);
    else
        free(p);
}

/* ---- helpers -------------------------------------------------------------------------------- */

static double clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Wall time, for the multi-threaded scenarios (their scaling is the point). */
static double now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* CPU time of the calling thread, for the single-threaded scenarios: time the worker spends
 * descheduled on a shared machine does not count; page faults and system calls made on its
 * behalf do. */
static double cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

static size_t status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    size_t v = 0, klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':')
            v = (size_t)strtoull(line + klen + 1, NULL, 10);
    fclose(f);
    return v;
}

static void *os_alloc(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

typedef struct rng {
    uint64_t s;
} rng;

static inline uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A small-object size, 16..256 bytes. */
static inline size_t small_size(rng *r) { return 16 + (size_t)(rng_next(r) % 241); }

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* ---- seed: rounds of allocations without frees ------------------------------------------- */

static int worker_seed(const rpb_case *c, int rounds, int per_round)
{
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_ns();
        for (int i = 0; i < per_round; i++) {
            const rpb_shape *s = &c->shapes[(r * per_round + i) % c->nshapes];
            if (!bench_alloc(s->size, s->align)) {
                fprintf(stderr, "rpbench worker: allocation failed\n");
                return 1;
            }
        }
        printf("%s%.1f", r ? " " : "", (cpu_ns() - t0) / per_round);
    }
    printf("\n");
    return 0;
}

/* ---- memory: the seed allocations, every page written ----------------------------------- */

static int worker_memory(const rpb_case *c, int rounds, int per_round)
{
    size_t base_kb = status_kb("VmRSS");
    size_t requested = 0;
    for (int i = 0; i < rounds * per_round; i++) {
        const rpb_shape *s = &c->shapes[i % c->nshapes];
        unsigned char *p = bench_alloc(s->size, s->align);
        if (!p)
            return 1;
        for (size_t off = 0; off < s->size; off += 4096)
            p[off] = 1;
        if (s->size)
            p[s->size - 1] = 1;
        requested += s->size;
    }
    size_t peak_kb = status_kb("VmHWM");
    printf("%.4f\n", (double)(peak_kb - base_kb) * 1024.0 / (double)requested);
    return 0;
}

/* ---- churn: a steady live set, free one / allocate one ------------------------------------ */

#define CHURN_LIVE 1000
#define CHURN_TIME_CAP_NS 4e8 /* each pass stops after this long (slow allocators) */

static void *churn_live[CHURN_LIVE];

static int churn_pass(const rpb_case *c, long ops, rng *r, uint32_t *lat, long *done)
{
    long i = 0;
    double t0 = cpu_ns();
    for (; i < ops; i++) {
        if ((i & 1023) == 0 && i && cpu_ns() - t0 > CHURN_TIME_CAP_NS)
            break;
        uint64_t x = rng_next(r);
        int k = (int)(x % CHURN_LIVE);
        const rpb_shape *s = &c->shapes[(x >> 32) % (unsigned)c->nshapes];
        uint64_t a = lat ? __rdtsc() : 0;
        bench_free(churn_live[k]);
        churn_live[k] = bench_alloc(s->size, s->align);
        if (lat)
            lat[i] = (uint32_t)(__rdtsc() - a);
        if (!churn_live[k])
            return 1;
    }
    *done = i;
    return 0;
}

static int worker_churn(const rpb_case *c, long ops)
{
    rng r = {0x1234567};
    for (int i = 0; i < CHURN_LIVE; i++) {
        const rpb_shape *s = &c->shapes[rng_next(&r) % (unsigned)c->nshapes];
        churn_live[i] = bench_alloc(s->size, s->align);
    }
    /* Pass 1, untimed per op: ns/op (CPU time). */
    long done;
    double t0 = cpu_ns();
    if (churn_pass(c, ops, &r, NULL, &done) != 0)
        return 1;
    double ns_per_op = (cpu_ns() - t0) / (double)done;
    /* Pass 2: every op timed with the TSC, calibrated against the clock over the pass. */
    uint32_t *lat = os_alloc((size_t)ops * sizeof *lat);
    if (!lat)
        return 1;
    double c0 = now_ns();
    uint64_t tsc0 = __rdtsc();
    if (churn_pass(c, ops, &r, lat, &done) != 0)
        return 1;
    double ns_per_tick = (now_ns() - c0) / (double)(__rdtsc() - tsc0);
    qsort(lat, (size_t)done, sizeof *lat, cmp_u32);
    double p999 = lat[(size_t)((double)(done - 1) * 0.999)] * ns_per_tick;
    printf("%.2f %.1f\n", ns_per_op, p999);
    return 0;
}

/* ---- threads: small-object pairs and producer/consumer ------------------------------------ */

typedef struct spsc {
    _Alignas(64) uint64_t head; /* written by the producer */
    _Alignas(64) uint64_t tail; /* written by the consumer */
    _Alignas(64) void *slot[1024];
} spsc;

typedef struct thread_arg {
    int id, nthreads;
    long ops;
    spsc *queues;
} thread_arg;

static int start_flag; /* atomic: workers spin until the driver thread releases them */

static void wait_start(void)
{
    while (!__atomic_load_n(&start_flag, __ATOMIC_ACQUIRE))
        sched_yield();
}

/* Each iteration frees the object allocated 16 iterations earlier and allocates a new one
 * of a random small size: one malloc and one free per iteration. */
static void *pairs_thread(void *argp)
{
    thread_arg *a = argp;
    rng r = {(uint64_t)a->id * 7919 + 1};
    void *ring[16] = {0};
    wait_start();
    for (long i = 0; i < a->ops; i++) {
        unsigned k = (unsigned)i & 15;
        free(ring[k]);
        ring[k] = malloc(small_size(&r));
        *(volatile char *)ring[k] = 1;
    }
    for (int k = 0; k < 16; k++)
        free(ring[k]);
    return NULL;
}

/* Thread i allocates objects and passes them to thread i+1 (mod n), which frees them; with
 * one thread the queue loops back to itself. */
static void *prodcons_thread(void *argp)
{
    thread_arg *a = argp;
    rng r = {(uint64_t)a->id * 104729 + 3};
    spsc *out = &a->queues[a->id];
    spsc *in = &a->queues[(a->id + a->nthreads - 1) % a->nthreads];
    long produced = 0, consumed = 0;
    wait_start();
    while (produced < a->ops || consumed < a->ops) {
        int progress = 0;
        uint64_t head = out->head;
        for (int k = 0; k < 32 && produced < a->ops; k++) {
            if (head - __atomic_load_n(&out->tail, __ATOMIC_ACQUIRE) >= 1024)
                break;
            uint64_t *p = malloc(small_size(&r));
            p[0] = (uint64_t)produced;
            out->slot[head & 1023] = p;
            __atomic_store_n(&out->head, ++head, __ATOMIC_RELEASE);
            produced++;
            progress = 1;
        }
        uint64_t tail = in->tail;
        uint64_t avail = __atomic_load_n(&in->head, __ATOMIC_ACQUIRE);
        while (tail < avail) {
            free(in->slot[tail & 1023]);
            __atomic_store_n(&in->tail, ++tail, __ATOMIC_RELEASE);
            consumed++;
            progress = 1;
        }
        if (!progress)
            sched_yield();
    }
    return NULL;
}

static int worker_threads(void *(*fn)(void *), int nthreads, long total_ops)
{
    if (nthreads < 1 || nthreads > 64)
        return 2;
    pthread_t th[64];
    thread_arg args[64];
    spsc *queues = os_alloc(sizeof(spsc) * (size_t)nthreads);
    if (!queues)
        return 1;
    long per_thread = total_ops / nthreads;
    for (int i = 0; i < nthreads; i++) {
        args[i] = (thread_arg){i, nthreads, per_thread, queues};
        if (pthread_create(&th[i], NULL, fn, &args[i]) != 0)
            return 1;
    }
    double t0 = now_ns(), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    __atomic_store_n(&start_flag, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    double secs = (now_ns() - t0) / 1e9, cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
    /* Each unit of per_thread work is one malloc and one free. Wall-clock ops/s (scaling),
     * then CPU ns per op over all threads (what a shared machine's other load disturbs
     * least; it includes spinning and lock traffic, not time spent blocked). */
    double ops = 2.0 * (double)per_thread * nthreads;
    printf("%.0f %.2f\n", ops / secs, cpu / ops);
    return 0;
}

/* ---- grow ---------------------------------------------------------------------------------- */

/* One buffer grown by realloc from 1 MiB to max_mib MiB, each size 1.5 times the last
 * ("x1.5", a growable vector) or 64 KiB more ("+64k", a file read in chunks), every appended
 * byte written, then freed: CPU ms of the whole, then the MiB reached, which is less than
 * max_mib when the GROW_CAP_NS cap stopped an allocator that copies the buffer at every step.
 * "again": a buffer of max_mib / 8 MiB allocated, written whole and freed 25 times (a big
 * scratch buffer per request: does the allocator fault it in every time?). */
#define GROW_CAP_NS 2e9
static int worker_again(long max_mib)
{
    size_t size = (size_t)max_mib << 17;
    double c0 = cpu_ns();
    for (int i = 0; i < 25; i++) {
        unsigned char *p = bench_alloc(size, 0);
        if (!p)
            return 1;
        memset(p, i + 1, size);
        int intact = p[size / 2] == i + 1;
        bench_free(p);
        if (!intact)
            return 1;
    }
    printf("%.2f %ld\n", (cpu_ns() - c0) / 1e6, max_mib);
    return 0;
}

static int worker_grow(const char *pattern, long max_mib)
{
    if (strcmp(pattern, "again") == 0 && max_mib >= 8)
        return worker_again(max_mib);
    int geometric = strcmp(pattern, "x1.5") == 0;
    if ((!geometric && strcmp(pattern, "+64k") != 0) || max_mib < 2)
        return 2;
    size_t max = (size_t)max_mib << 20, n = (size_t)1 << 20;
    double c0 = cpu_ns();
    unsigned char *p = bench_alloc(n, 0);
    if (!p)
        return 1;
    memset(p, 1, n);
    for (unsigned step = 1; n < max; step++) {
        size_t next = geometric ? n + n / 2 : n + 65536;
        if (next > max)
            next = max;
        unsigned char *q = bench_realloc(p, next);
        if (!q)
            return 1;
        memset(q + n, (int)(step & 0x7f), next - n);
        p = q;
        n = next;
        if ((step & 15) == 0 && cpu_ns() - c0 > GROW_CAP_NS)
            break;
    }
    int intact = p[0] == 1 && p[(1 << 20) - 1] == 1 && p[n - 1] != 1;
    bench_free(p);
    double ms = (cpu_ns() - c0) / 1e6;
    if (!intact)
        return 1;
    printf("%.2f %zu\n", ms, n >> 20);
    return 0;
}

/* ---- grid: one (size, alignment) pair, no-free rounds then churn -------------------------- */

/* ROUNDS rounds of PER_ROUND allocations of the pair without frees (ns/op of each round: does
 * the cost grow with the blocks already live?), every block freed, then churn over a live set
 * of CHURN_LIVE blocks of the pair (ns/op: does a free and an allocation of an aligned shape
 * cost more than of a plain one?). */
static int worker_grid(size_t size, size_t align, int rounds, int per_round, long ops)
{
    rpb_case c = {"grid", {{size, align}}, 1};
    size_t n = (size_t)rounds * (size_t)per_round;
    void **blocks = os_alloc(n * sizeof *blocks);
    if (!blocks)
        return 1;
    size_t k = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_ns();
        for (int i = 0; i < per_round; i++)
            if (!(blocks[k++] = bench_alloc(size, align)))
                return 1;
        printf("%.1f ", (cpu_ns() - t0) / per_round);
    }
    for (size_t i = 0; i < n; i++)
        bench_free(blocks[i]);
    rng r = {0x1234567};
    for (int i = 0; i < CHURN_LIVE; i++)
        if (!(churn_live[i] = bench_alloc(size, align)))
            return 1;
    long done;
    double t0 = cpu_ns();
    if (churn_pass(&c, ops, &r, NULL, &done) != 0)
        return 1;
    printf("%.2f\n", (cpu_ns() - t0) / (double)done);
    return 0;
}

/* ---- entry -------------------------------------------------------------------------------- */

static const rpb_case *find_case(const char *name)
{
    for (int i = 0; i < rpb_ncases; i++)
        if (strcmp(rpb_cases[i].name, name) == 0)
            return &rpb_cases[i];
    return NULL;
}

int rpbench_worker_main(int argc, char **argv)
{
    /* WORKER --worker API SCENARIO ARGS... */
    if (argc < 5 || strcmp(argv[1], "--worker") != 0)
        return 2;
    const char *api = argv[2], *scenario = argv[3];
    if (strcmp(api, "rp") == 0) {
        use_rp = 1;
        bench_heap = rp_heap_create(NULL);
        if (!bench_heap)
            return 1;
        printf("lib rampart %s flavour (rp_alloc)\n", rp_flavour());
    } else if (strcmp(api, "malloc") == 0) {
        Dl_info info;
        void *(*volatile fn)(size_t) = malloc;
        printf("lib %s\n", dladdr((void *)fn, &info) && info.dli_fname ? info.dli_fname : "?");
    } else {
        return 2;
    }
    if ((strcmp(scenario, "seed") == 0 || strcmp(scenario, "memory") == 0) && argc >= 7) {
        const rpb_case *c = find_case(argv[4]);
        int rounds = atoi(argv[5]), per_round = atoi(argv[6]);
        if (!c || rounds < 1 || per_round < 1)
            return 2;
        return scenario[0] == 's' ? worker_seed(c, rounds, per_round) : worker_memory(c, rounds, per_round);
    }
    if (strcmp(scenario, "churn") == 0 && argc >= 6) {
        const rpb_case *c = find_case(argv[4]);
        long ops = atol(argv[5]);
        if (!c || ops < 1)
            return 2;
        return worker_churn(c, ops);
    }
    if (strcmp(scenario, "grid") == 0 && argc >= 9) {
        long size = atol(argv[4]), align = atol(argv[5]), ops = atol(argv[8]);
        int rounds = atoi(argv[6]), per_round = atoi(argv[7]);
        if (size < 1 || align < 16 || (align & (align - 1)) || rounds < 1 || per_round < 1 || ops < 1)
            return 2;
        return worker_grid((size_t)size, (size_t)align, rounds, per_round, ops);
    }
    if (strcmp(scenario, "grow") == 0 && argc >= 6)
        return worker_grow(argv[4], atol(argv[5]));
    if ((strcmp(scenario, "pairs") == 0 || strcmp(scenario, "prodcons") == 0) && argc >= 6 && !use_rp)
        return worker_threads(scenario[0] == 'p' && scenario[1] == 'a' ? pairs_thread : prodcons_thread,
                              atoi(argv[4]), atol(argv[5]));
    return 2;
}
