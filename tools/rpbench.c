/* rpbench: rampart against the allocators people use, side by side in one run.
 *
 * The driver runs every measurement in a fresh worker process (this binary re-executed with
 * --worker), interleaving allocators and repeating each measurement, then reports medians.
 * Scenarios:
 *   seed   10 rounds x 2000 allocations of one (size, alignment) shape, no frees: ns/op per
 *          round and the ratio round 10 / round 1 (DPDK's rte_malloc grows 15 -> 168 us);
 *   churn  a steady live set of 1000 blocks of the seed shapes: free one, allocate one;
 *          ns/op over 1M operations;
 *   memory the seed allocations with every page of every block written: peak RSS over the
 *          bytes requested.
 * Allocators: "rampart" (rp_alloc / rp_free on one heap) and "glibc" (posix_memalign / free).
 *
 *   rpbench [--reps N] [--rounds N] [--per-round N] [--case NAME] [--json FILE]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rampart.h"

#define MAX_ROUNDS 64
#define MAX_REPS 64

typedef struct shape {
    size_t size, align;
} shape;

typedef struct bench_case {
    const char *name;
    shape shapes[8]; /* cycled through, one per allocation */
    int nshapes;
} bench_case;

static const bench_case cases[] = {
    {"4096/4096", {{4096, 4096}}, 1},
    {"3072/1024", {{3072, 1024}}, 1},
    {"16384/16384", {{16384, 16384}}, 1},
    {"65536/65536", {{65536, 65536}}, 1},
    {"64512/4096", {{64512, 4096}}, 1},
    {"100/64", {{100, 64}}, 1},
    {"mixed", {{4096, 4096}, {3072, 1024}, {100, 64}, {16384, 16384}, {64512, 4096}, {200, 16}, {65536, 65536}, {24, 0}}, 8},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

typedef struct allocator {
    const char *name;
    void *(*alloc)(size_t size, size_t align);
    void (*release)(void *p);
} allocator;

static rp_heap *bench_heap;
static void *rp_bench_alloc(size_t size, size_t align) { return rp_alloc(bench_heap, size, align); }
static void rp_bench_free(void *p) { rp_free(p); }
static void *glibc_alloc(size_t size, size_t align)
{
    void *p;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) == 0 ? p : NULL;
}
static void glibc_free(void *p) { free(p); }

static const allocator allocators[] = {
    {"rampart", rp_bench_alloc, rp_bench_free},
    {"glibc", glibc_alloc, glibc_free},
};
#define NALLOCATORS (int)(sizeof allocators / sizeof allocators[0])

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

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

/* ---------------------------------------------------------------- worker side ------------ */

static unsigned long long rng_state = 0x1234567;
static unsigned long long rng_next(void)
{
    unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int worker_seed(const allocator *a, const bench_case *c, int rounds, int per_round)
{
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < per_round; i++) {
            const shape *s = &c->shapes[(r * per_round + i) % c->nshapes];
            if (!a->alloc(s->size, s->align)) {
                fprintf(stderr, "rpbench: %s: allocation failed\n", a->name);
                return 1;
            }
        }
        printf("%s%.1f", r ? " " : "", (now_ns() - t0) / per_round);
    }
    printf("\n");
    return 0;
}

static int worker_memory(const allocator *a, const bench_case *c, int rounds, int per_round)
{
    size_t base_kb = status_kb("VmRSS");
    size_t requested = 0;
    for (int i = 0; i < rounds * per_round; i++) {
        const shape *s = &c->shapes[i % c->nshapes];
        unsigned char *p = a->alloc(s->size, s->align);
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

static int worker_churn(const allocator *a, const bench_case *c, long ops)
{
    enum { LIVE = 1000 };
    static void *live[LIVE];
    for (int i = 0; i < LIVE; i++) {
        const shape *s = &c->shapes[rng_next() % (unsigned)c->nshapes];
        live[i] = a->alloc(s->size, s->align);
    }
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) {
        unsigned long long r = rng_next();
        int k = (int)(r % LIVE);
        const shape *s = &c->shapes[(r >> 32) % (unsigned)c->nshapes];
        a->release(live[k]);
        live[k] = a->alloc(s->size, s->align);
        if (!live[k])
            return 1;
    }
    printf("%.2f\n", (now_ns() - t0) / (double)ops);
    return 0;
}

static int worker_main(int argc, char **argv)
{
    /* --worker MODE ALLOCATOR CASE ROUNDS PER_ROUND */
    if (argc < 7)
        return 2;
    const char *mode = argv[2];
    const allocator *a = NULL;
    const bench_case *c = NULL;
    for (int i = 0; i < NALLOCATORS; i++)
        if (strcmp(allocators[i].name, argv[3]) == 0)
            a = &allocators[i];
    for (int i = 0; i < NCASES; i++)
        if (strcmp(cases[i].name, argv[4]) == 0)
            c = &cases[i];
    if (!a || !c)
        return 2;
    int rounds = atoi(argv[5]), per_round = atoi(argv[6]);
    bench_heap = rp_heap_create(NULL);
    if (strcmp(mode, "seed") == 0)
        return worker_seed(a, c, rounds, per_round);
    if (strcmp(mode, "memory") == 0)
        return worker_memory(a, c, rounds, per_round);
    if (strcmp(mode, "churn") == 0)
        return worker_churn(a, c, 1000000);
    return 2;
}

/* ---------------------------------------------------------------- driver side ------------ */

/* Runs one worker; its single output line goes into out. 0 on success. */
static int run_worker(const char *mode, const char *alloc, const char *cname, int rounds, int per_round, char *out,
                      size_t outlen)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        char r[16], n[16];
        snprintf(r, sizeof r, "%d", rounds);
        snprintf(n, sizeof n, "%d", per_round);
        execl("/proc/self/exe", "rpbench", "--worker", mode, alloc, cname, r, n, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < outlen && (k = read(fds[0], out + got, outlen - 1 - got)) > 0)
        got += (size_t)k;
    out[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got > 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct result {
    double round_ns[MAX_ROUNDS];
    double churn_ns;
    double memory_ratio;
    int ok;
} result;

static result results[NCASES][NALLOCATORS];

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return worker_main(argc, argv);

    int reps = 5, rounds = 10, per_round = 2000;
    const char *only = NULL, *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--reps") == 0 && val)
            reps = atoi(argv[++i]);
        else if (strcmp(arg, "--rounds") == 0 && val)
            rounds = atoi(argv[++i]);
        else if (strcmp(arg, "--per-round") == 0 && val)
            per_round = atoi(argv[++i]);
        else if (strcmp(arg, "--case") == 0 && val)
            only = argv[++i];
        else if (strcmp(arg, "--json") == 0 && val)
            json = argv[++i];
        else {
            fprintf(stderr,
                    "usage: rpbench [--reps N] [--rounds N] [--per-round N] [--case NAME] [--json FILE]\n"
                    "cases:");
            for (int c = 0; c < NCASES; c++)
                fprintf(stderr, " %s", cases[c].name);
            fprintf(stderr, "\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || rounds < 2 || rounds > MAX_ROUNDS || per_round < 1) {
        fprintf(stderr, "rpbench: --reps 1..%d, --rounds 2..%d, --per-round >= 1\n", MAX_REPS, MAX_ROUNDS);
        return 2;
    }

    char host[256] = "?";
    gethostname(host, sizeof host);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("rpbench: %d reps (medians), %d rounds x %d allocations; %ld CPUs; rampart %s flavour\n\n", reps, rounds,
           per_round, cpus, rp_flavour());

    for (int c = 0; c < NCASES; c++) {
        if (only && strcmp(only, cases[c].name) != 0)
            continue;
        double seed[NALLOCATORS][MAX_ROUNDS][MAX_REPS];
        double churn[NALLOCATORS][MAX_REPS], mem[NALLOCATORS][MAX_REPS];
        for (int rep = 0; rep < reps; rep++) {
            for (int k = 0; k < NALLOCATORS; k++) {
                int a = (rep + k) % NALLOCATORS; /* alternate who goes first */
                char out[4096];
                results[c][a].ok = 1;
                if (run_worker("seed", allocators[a].name, cases[c].name, rounds, per_round, out, sizeof out) != 0) {
                    results[c][a].ok = 0;
                    continue;
                }
                char *p = out;
                for (int r = 0; r < rounds; r++)
                    seed[a][r][rep] = strtod(p, &p);
                if (run_worker("churn", allocators[a].name, cases[c].name, rounds, per_round, out, sizeof out) == 0)
                    churn[a][rep] = strtod(out, NULL);
                if (run_worker("memory", allocators[a].name, cases[c].name, rounds, per_round, out, sizeof out) == 0)
                    mem[a][rep] = strtod(out, NULL);
            }
        }
        for (int a = 0; a < NALLOCATORS; a++) {
            if (!results[c][a].ok)
                continue;
            for (int r = 0; r < rounds; r++)
                results[c][a].round_ns[r] = median(seed[a][r], reps);
            results[c][a].churn_ns = median(churn[a], reps);
            results[c][a].memory_ratio = median(mem[a], reps);
        }
        printf("%-12s %-8s", cases[c].name, "");
        for (int r = 0; r < rounds; r++)
            printf(" %7s%d", "r", r + 1);
        printf("  r%d/r1  churn ns  memory\n", rounds);
        for (int a = 0; a < NALLOCATORS; a++) {
            const result *res = &results[c][a];
            printf("%-12s %-8s", "", allocators[a].name);
            if (!res->ok) {
                printf(" failed\n");
                continue;
            }
            for (int r = 0; r < rounds; r++)
                printf(" %8.0f", res->round_ns[r]);
            printf("  %5.2f %9.1f %7.3f\n", res->round_ns[rounds - 1] / res->round_ns[0], res->churn_ns,
                   res->memory_ratio);
        }
        const result *rp = &results[c][0], *gl = &results[c][1];
        if (rp->ok && gl->ok) {
            double rp_mean = 0, gl_mean = 0;
            for (int r = 0; r < rounds; r++)
                rp_mean += rp->round_ns[r], gl_mean += gl->round_ns[r];
            printf("%-12s %-8s glibc/rampart: seed %.1fx, churn %.1fx\n\n", "", "", gl_mean / rp_mean,
                   gl->churn_ns / rp->churn_ns);
        }
        fflush(stdout);
    }

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "rpbench: cannot write %s: %s\n", json, strerror(errno));
            return 1;
        }
        fprintf(f, "{\"reps\": %d, \"rounds\": %d, \"per_round\": %d, \"cpus\": %ld, \"cases\": [", reps, rounds,
                per_round, cpus);
        int first = 1;
        for (int c = 0; c < NCASES; c++) {
            if (only && strcmp(only, cases[c].name) != 0)
                continue;
            fprintf(f, "%s{\"case\": \"%s\", \"allocators\": [", first ? "" : ", ", cases[c].name);
            first = 0;
            for (int a = 0; a < NALLOCATORS; a++) {
                const result *res = &results[c][a];
                fprintf(f, "%s{\"name\": \"%s\", \"ok\": %s", a ? ", " : "", allocators[a].name,
                        res->ok ? "true" : "false");
                if (res->ok) {
                    fprintf(f, ", \"round_ns\": [");
                    for (int r = 0; r < rounds; r++)
                        fprintf(f, "%s%.1f", r ? ", " : "", res->round_ns[r]);
                    fprintf(f, "], \"ratio_last_first\": %.3f, \"churn_ns\": %.2f, \"memory_ratio\": %.4f",
                            res->round_ns[rounds - 1] / res->round_ns[0], res->churn_ns, res->memory_ratio);
                }
                fprintf(f, "}");
            }
            fprintf(f, "]}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}
