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
 * Allocators (rows): "rampart" (rp_alloc / rp_free on one heap, release flavour), "glibc"
 * (posix_memalign / free), and the debug flavour against them: "debug" (rp_alloc / rp_free
 * linked against //src:rampart_debug, every check on: cookies, poisoning, 4 MiB quarantine,
 * 16-frame allocation and free stacks), "debug-nobt" (the same with backtrace_depth=0) and
 * "glibc-asan" (posix_memalign / free in a worker built with -fsanitize=address, i.e. ASan's
 * allocator). A row may run in another worker binary, a sibling of rpbench (built as its data
 * dependency), with its own RAMPART_OPTIONS. The debug rows run with --debug (or by name in
 * --allocators); their churn measurements run 100k operations instead of 1M. The debug worker
 * also measures the cost of one stack capture (rp_stack_capture).
 *
 *   rpbench [--reps N] [--rounds N] [--per-round N] [--case NAME] [--debug]
 *           [--allocators LIST] [--json FILE]
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
#ifdef RAMPART_DEBUG
#include "rampart_debug.h"
#endif

#if defined(__SANITIZE_ADDRESS__)
/* The glibc-asan worker leaves its live set allocated at exit, on purpose. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }
#endif

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

/* How a worker allocates. */
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

static const allocator worker_apis[] = {
    {"rampart", rp_bench_alloc, rp_bench_free},
    {"glibc", glibc_alloc, glibc_free},
};
#define NAPIS (int)(sizeof worker_apis / sizeof worker_apis[0])

/* A row of the report: which worker binary runs it (NULL = rpbench itself, else a sibling
 * binary), through which API, with which RAMPART_OPTIONS. Row 0 is the reference of the
 * ratios. */
typedef struct bench_row {
    const char *name;
    const char *worker;
    const char *api;
    const char *options;
    long churn_ops; /* operations of one churn measurement */
    int debug_row;  /* shown only with --debug */
} bench_row;

static const bench_row allocators[] = {
    {"rampart", NULL, "rampart", NULL, 1000000, 0},
    {"glibc", NULL, "glibc", NULL, 1000000, 0},
    {"debug", "rpbench_debug_worker", "rampart", "", 100000, 1},
    {"debug-nobt", "rpbench_debug_worker", "rampart", "backtrace_depth=0", 100000, 1},
    {"glibc-asan", "rpbench_asan_worker", "glibc", NULL, 100000, 1},
};
#define NALLOCATORS (int)(sizeof allocators / sizeof allocators[0])
enum { ROW_RELEASE, ROW_GLIBC, ROW_DEBUG, ROW_DEBUG_NOBT, ROW_GLIBC_ASAN };

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

#ifdef RAMPART_DEBUG
/* The cost of one stack capture (unw_backtrace + trimming + depot lookup) from a stack
 * `levels` frames deeper than the caller, in ns. */
__attribute__((noinline)) static uint32_t capture_at_depth(int levels)
{
    uint32_t id = levels ? capture_at_depth(levels - 1) : rp_stack_capture(0);
    __asm__ volatile("" ::: "memory");
    return id;
}

static int worker_capture(int n)
{
    capture_at_depth(20);
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        capture_at_depth(20);
    printf("%.1f\n", (now_ns() - t0) / n);
    return 0;
}
#endif

static int worker_main(int argc, char **argv)
{
    /* --worker MODE ALLOCATOR CASE ROUNDS PER_ROUND */
    if (argc < 7)
        return 2;
    const char *mode = argv[2];
#ifdef RAMPART_DEBUG
    if (strcmp(mode, "capture") == 0)
        return worker_capture(200000);
#endif
    const allocator *a = NULL;
    const bench_case *c = NULL;
    for (int i = 0; i < NAPIS; i++)
        if (strcmp(worker_apis[i].name, argv[3]) == 0)
            a = &worker_apis[i];
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
        return worker_churn(a, c, rounds); /* the driver passes the operation count */
    return 2;
}

/* ---------------------------------------------------------------- driver side ------------ */

static char self_dir[4096]; /* directory of this binary: worker binaries are its siblings */

/* Runs one worker for row `row`; its single output line goes into out. 0 on success. */
static int run_worker(const char *mode, const bench_row *row, const char *cname, int rounds, int per_round,
                      char *out, size_t outlen)
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
        char r[16], n[16], exe[sizeof self_dir + 64];
        snprintf(r, sizeof r, "%d", rounds);
        snprintf(n, sizeof n, "%d", per_round);
        if (row->worker)
            snprintf(exe, sizeof exe, "%s/%s", self_dir, row->worker);
        else
            snprintf(exe, sizeof exe, "/proc/self/exe");
        if (row->options)
            setenv("RAMPART_OPTIONS", row->options, 1);
        else
            unsetenv("RAMPART_OPTIONS");
        execl(exe, "rpbench", "--worker", mode, row->api, cname, r, n, (char *)NULL);
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

/* "x/y: seed N.Nx, churn N.Nx" for case c, when both rows ran (mean of the seed rounds). */
static void print_ratio(int c, int x, int y, const int *wanted, int rounds)
{
    const result *rx = &results[c][x], *ry = &results[c][y];
    if (!wanted[x] || !wanted[y] || !rx->ok || !ry->ok)
        return;
    double sx = 0, sy = 0;
    for (int r = 0; r < rounds; r++)
        sx += rx->round_ns[r], sy += ry->round_ns[r];
    printf("%-12s %-10s %s/%s: seed %.1fx, churn %.1fx\n", "", "", allocators[x].name, allocators[y].name, sx / sy,
           rx->churn_ns / ry->churn_ns);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return worker_main(argc, argv);

    int reps = 5, rounds = 10, per_round = 2000;
    const char *only = NULL, *json = NULL, *rows = NULL;
    int debug_rows = 0;
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
        else if (strcmp(arg, "--allocators") == 0 && val)
            rows = argv[++i];
        else if (strcmp(arg, "--debug") == 0)
            debug_rows = 1;
        else {
            fprintf(stderr,
                    "usage: rpbench [--reps N] [--rounds N] [--per-round N] [--case NAME] [--debug]"
                    " [--allocators LIST] [--json FILE]\n"
                    "--debug adds the debug flavour rows (debug, debug-nobt, glibc-asan)\n"
                    "allocators (comma-separated):");
            for (int a = 0; a < NALLOCATORS; a++)
                fprintf(stderr, " %s", allocators[a].name);
            fprintf(stderr, "\ncases:");
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

    ssize_t self_len = readlink("/proc/self/exe", self_dir, sizeof self_dir - 1);
    if (self_len > 0) {
        self_dir[self_len] = 0;
        char *slash = strrchr(self_dir, '/');
        if (slash)
            *slash = 0;
    }
    int wanted[NALLOCATORS];
    for (int a = 0; a < NALLOCATORS; a++)
        wanted[a] = rows == NULL && (debug_rows || !allocators[a].debug_row);
    if (rows) {
        char list[256];
        snprintf(list, sizeof list, "%s", rows);
        for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int a = 0; a < NALLOCATORS; a++)
                if (strcmp(allocators[a].name, name) == 0)
                    wanted[a] = found = 1;
            if (!found) {
                fprintf(stderr, "rpbench: no allocator '%s'\n", name);
                return 2;
            }
        }
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
                if (!wanted[a])
                    continue;
                const bench_row *row = &allocators[a];
                char out[4096];
                results[c][a].ok = 1;
                if (run_worker("seed", row, cases[c].name, rounds, per_round, out, sizeof out) != 0) {
                    results[c][a].ok = 0;
                    continue;
                }
                char *p = out;
                for (int r = 0; r < rounds; r++)
                    seed[a][r][rep] = strtod(p, &p);
                if (run_worker("churn", row, cases[c].name, (int)row->churn_ops, per_round, out, sizeof out) == 0)
                    churn[a][rep] = strtod(out, NULL);
                if (run_worker("memory", row, cases[c].name, rounds, per_round, out, sizeof out) == 0)
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
        printf("%-12s %-10s", cases[c].name, "");
        for (int r = 0; r < rounds; r++)
            printf(" %7s%d", "r", r + 1);
        printf("  r%d/r1  churn ns  memory\n", rounds);
        for (int a = 0; a < NALLOCATORS; a++) {
            const result *res = &results[c][a];
            if (!wanted[a])
                continue;
            printf("%-12s %-10s", "", allocators[a].name);
            if (!res->ok) {
                printf(" failed\n");
                continue;
            }
            for (int r = 0; r < rounds; r++)
                printf(" %8.0f", res->round_ns[r]);
            printf("  %5.2f %9.1f %7.3f\n", res->round_ns[rounds - 1] / res->round_ns[0], res->churn_ns,
                   res->memory_ratio);
        }
        print_ratio(c, ROW_GLIBC, ROW_RELEASE, wanted, rounds);
        print_ratio(c, ROW_DEBUG, ROW_RELEASE, wanted, rounds);
        print_ratio(c, ROW_DEBUG_NOBT, ROW_RELEASE, wanted, rounds);
        print_ratio(c, ROW_DEBUG, ROW_GLIBC_ASAN, wanted, rounds);
        print_ratio(c, ROW_GLIBC_ASAN, ROW_GLIBC, wanted, rounds);
        printf("\n");
        fflush(stdout);
    }

    double capture_ns = -1;
    if (wanted[ROW_DEBUG]) {
        double v[MAX_REPS];
        int got = 0;
        for (int rep = 0; rep < reps; rep++) {
            char out[256];
            if (run_worker("capture", &allocators[ROW_DEBUG], "-", 0, 0, out, sizeof out) == 0)
                v[got++] = strtod(out, NULL);
        }
        if (got) {
            capture_ns = median(v, got);
            printf("debug stack capture (rp_stack_capture, 16 of 20+ frames, depot hit): %.1f ns per stack;"
                   " an allocation records one stack and its free another\n",
                   capture_ns);
        }
    }

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "rpbench: cannot write %s: %s\n", json, strerror(errno));
            return 1;
        }
        fprintf(f, "{\"reps\": %d, \"rounds\": %d, \"per_round\": %d, \"cpus\": %ld, \"capture_ns\": %.1f, \"cases\": [",
                reps, rounds, per_round, cpus, capture_ns);
        int first = 1;
        for (int c = 0; c < NCASES; c++) {
            if (only && strcmp(only, cases[c].name) != 0)
                continue;
            fprintf(f, "%s{\"case\": \"%s\", \"allocators\": [", first ? "" : ", ", cases[c].name);
            first = 0;
            int first_row = 1;
            for (int a = 0; a < NALLOCATORS; a++) {
                const result *res = &results[c][a];
                if (!wanted[a])
                    continue;
                fprintf(f, "%s{\"name\": \"%s\", \"ok\": %s", first_row ? "" : ", ", allocators[a].name,
                        res->ok ? "true" : "false");
                first_row = 0;
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
