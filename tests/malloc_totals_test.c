/* The drop-in's totals (rp_malloc_totals, src/malloc/malloc_totals.h) and the dumps over time
 * they drive, on the drop-in linked in with the default options:
 *   - counts: the test's own calls are the outside observation: N mallocs and N frees of small
 *     blocks add exactly N allocations (almost all thread-cache hits) and N frees, and exactly
 *     the bytes requested; threads that exit leave their counts behind; calloc, realloc and the
 *     aligned functions count as documented;
 *   - live bytes and the peak: 64 MiB held and written raise the live bytes and the peak by at
 *     least that much, within what the kernel says the process's resident peak (VmHWM) grew;
 *     freed, the live bytes fall and the peak stays;
 *   - the statistics: rp_malloc_stats_json is one JSON object whose totals agree with
 *     rp_malloc_totals, and stats_json=1 prints it at exit; the text has the calls line;
 *   - dump_interval=1 writes numbered dumps about every second (reason "interval"), and
 *     dump_on_peak with dump_peak_step=8M one dump per 8 MiB of new peak (reason "peak"), as
 *     rpdump reads them; the options say what they do (profile=1 warns in the debug flavour
 *     only, not here). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child_process.h"
#include "dump_testing.h"
#include "json_lite.h"
#include "rampart_malloc.h"
#include "testing.h"

static rp_malloc_totals_t totals(void)
{
    rp_malloc_totals_t t;
    REQUIRE(rp_malloc_totals(&t, sizeof t) == 0);
    return t;
}

static void counts(void)
{
    enum { N = 50000 };
    static void *ring[64];
    for (int i = 0; i < 64; i++) /* warm: the cache has blocks of these sizes */
        ring[i] = malloc(40);
    for (int i = 0; i < 64; i++)
        free(ring[i]);
    rp_malloc_totals_t a = totals();
    for (int i = 0; i < N; i++) {
        void *p = malloc(40 + (size_t)(i % 8) * 16);
        REQUIRE(p);
        free(p);
    }
    rp_malloc_totals_t b = totals();
    uint64_t bytes = 0;
    for (int i = 0; i < N; i++)
        bytes += 40 + (size_t)(i % 8) * 16;
    printf("%d malloc/free pairs: allocs +%llu (cache hits +%llu), frees +%llu, bytes +%llu\n", N,
           (unsigned long long)(b.allocs - a.allocs), (unsigned long long)(b.cache_hits - a.cache_hits),
           (unsigned long long)(b.frees - a.frees), (unsigned long long)(b.bytes_allocated - a.bytes_allocated));
    CHECK(b.allocs - a.allocs == N && b.frees - a.frees == N && b.bytes_allocated - a.bytes_allocated == bytes);
    CHECK(b.cache_hits - a.cache_hits >= N - N / 50);

    /* calloc, realloc (NULL: an allocation; moving: one of each), the aligned functions */
    a = totals();
    void *p = calloc(10, 10);
    void *q = NULL;
    REQUIRE(p && posix_memalign(&q, 64, 100) == 0);
    void *r = aligned_alloc(256, 512), *s = realloc(NULL, 32);
    REQUIRE(r && s);
    s = realloc(s, 4000); /* moves: a 32-byte block does not hold it */
    REQUIRE(s);
    free(p);
    free(q);
    free(r);
    free(s);
    free(NULL); /* not counted */
    b = totals();
    CHECKF(b.allocs - a.allocs == 5 && b.frees - a.frees == 5 && b.bytes_allocated - a.bytes_allocated == 100 + 100 + 512 + 32 + 4000,
           "allocs +%llu, frees +%llu, bytes +%llu", (unsigned long long)(b.allocs - a.allocs),
           (unsigned long long)(b.frees - a.frees), (unsigned long long)(b.bytes_allocated - a.bytes_allocated));
}

static void *thread_allocs(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        char *p = malloc(100);
        REQUIRE(p);
        *(volatile char *)p = 1; /* used: the pair is not optimised away */
        free(p);
    }
    return NULL;
}

static void thread_counts(void)
{
    rp_malloc_totals_t a = totals();
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        REQUIRE(pthread_create(&th[i], NULL, thread_allocs, NULL) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    rp_malloc_totals_t b = totals();
    /* pthread_create's own allocations (the thread's stack is mapped, its TLS may be allocated)
     * come on top */
    CHECKF(b.allocs - a.allocs >= 40000 && b.allocs - a.allocs < 40100 && b.frees - a.frees >= 40000 &&
               b.frees - a.frees < 40100,
           "4 threads of 10000 pairs: allocs +%llu, frees +%llu", (unsigned long long)(b.allocs - a.allocs),
           (unsigned long long)(b.frees - a.frees));
}

/* The process's resident peak in bytes (VmHWM), the kernel's view. */
static size_t vm_hwm(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    REQUIRE(f);
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb << 10;
}

static void live_and_peak(void)
{
    enum { BLOCKS = 64, SIZE = 1 << 20 };
    rp_malloc_totals_t a = totals();
    size_t hwm0 = vm_hwm();
    static char *held[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        held[i] = malloc(SIZE);
        REQUIRE(held[i]);
        memset(held[i], 1, SIZE);
    }
    rp_malloc_totals_t b = totals();
    size_t hwm1 = vm_hwm();
    for (int i = 0; i < BLOCKS; i++)
        free(held[i]);
    malloc_trim(0);
    rp_malloc_totals_t c = totals();
    printf("64 MiB held: live %zu -> %zu -> %zu, peak %zu -> %zu; VmHWM %zu -> %zu\n", a.live_bytes, b.live_bytes,
           c.live_bytes, a.peak_live_bytes, c.peak_live_bytes, hwm0, hwm1);
    CHECK(b.live_bytes >= a.live_bytes + (size_t)BLOCKS * SIZE);
    CHECK(c.peak_live_bytes >= b.live_bytes && c.peak_live_bytes >= (size_t)BLOCKS * SIZE);
    CHECK(c.live_bytes + (size_t)BLOCKS * SIZE <= b.live_bytes + (1u << 20));
    /* what the kernel saw the process touch covers what the counters say was added */
    CHECKF(hwm1 - hwm0 + (4u << 20) >= b.live_bytes - a.live_bytes && hwm1 >= (size_t)BLOCKS * SIZE,
           "VmHWM grew by %zu, live bytes by %zu", hwm1 - hwm0, b.live_bytes - a.live_bytes);
    CHECK(c.peak_ms > 0);
}

static void write_text(void *arg, const char *text)
{
    char *buf = arg;
    size_t n = strlen(buf), k = strlen(text);
    if (n + k < 65536)
        memcpy(buf + n, text, k + 1);
}

static void stats_output(void)
{
    static char buf[65536];
    buf[0] = 0;
    rp_malloc_stats_json(write_text, buf);
    rp_malloc_totals_t t = totals(); /* nothing allocated since the JSON was made */
    char err[128];
    jv *v = jv_parse(buf, err, sizeof err);
    CHECKF(v, "not JSON (%s): %s", err, buf);
    if (v) {
        CHECK(!strcmp(jv_str(jv_get(v, "flavour")), "release") && jv_len(jv_get(v, "heaps")) >= 1);
        int arena0 = 0;
        for (size_t i = 0; i < jv_len(jv_get(v, "heaps")); i++) {
            const jv *h = jv_at(jv_get(v, "heaps"), i);
            arena0 |= !strcmp(jv_str(jv_get(h, "name")), "malloc-0") && jv_get(h, "bytes_in_use") &&
                      jv_get(h, "arena")->type == JV_BOOL && jv_get(h, "arena")->boolean;
        }
        CHECK(arena0);
        /* counted before the JSON was made, with nothing allocating meanwhile */
        CHECK(jv_u64(jv_path(v, "totals.allocs")) == t.allocs && jv_u64(jv_path(v, "totals.frees")) == t.frees);
        CHECK(jv_u64(jv_path(v, "totals.peak_live_bytes")) >= (64u << 20));
        CHECK(jv_path(v, "caches.refills") && jv_path(v, "slabs.slab_bytes") && jv_path(v, "retention.retain_bytes"));
        jv_free(v);
    }
    buf[0] = 0;
    rp_malloc_stats_print(write_text, buf);
    CHECKF(strstr(buf, "\n  malloc calls ") && strstr(buf, " from thread caches, ") && strstr(buf, "\n  live "), "%s",
           buf);
}

/* ---- in child processes with their own options ------------------------------------------- */

/* Grows by 40 MiB in 4 MiB steps, 150 ms apart, then frees it all: a second and a half. */
static int child_grow(void)
{
    static char *held[10];
    for (int i = 0; i < 10; i++) {
        held[i] = malloc(4 << 20);
        REQUIRE(held[i]);
        memset(held[i], 1, 4 << 20);
        struct timespec ts = {0, 150000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 10; i++)
        free(held[i]);
    struct timespec ts = {1, 200000000};
    nanosleep(&ts, NULL);
    return 0;
}

static int count_dumps(const char *dir, const char *prefix, char paths[][512], int max)
{
    int n = 0;
    for (int i = 0; i < 64 && n < max; i++) {
        snprintf(paths[n], 512, "%s/%s.%d.rpd", dir, prefix, i);
        if (access(paths[n], R_OK) == 0)
            n++;
    }
    return n;
}

static const char *reason_of(const char *path)
{
    static char reason[32];
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", path, NULL);
    snprintf(reason, sizeof reason, "%s", v ? jv_str(jv_get(v, "reason")) : "?");
    CHECKF(v && r.status == 0, "%s: %s", path, r.err);
    jv_free(v);
    tool_run_free(&r);
    return reason;
}

static void dumps_over_time(void)
{
    const char *dir = getenv("TEST_TMPDIR");
    REQUIRE(dir);
    char options[1024], paths[64][512];
    child_result *res = malloc(sizeof *res);
    REQUIRE(res);

    snprintf(options, sizeof options, "dump_interval=1:dump_path=%s/interval.%%n.rpd", dir);
    REQUIRE(run_child("grow", options, res) == 0);
    CHECKF(res->exited && res->code == 0, "%s", res->err);
    int n = count_dumps(dir, "interval", paths, 64);
    printf("dump_interval=1 over about 2.7 s: %d dumps\n%s", n, res->err);
    CHECKF(n >= 2 && n <= 3, "%d interval dumps", n);
    for (int i = 0; i < n; i++)
        CHECKF(!strcmp(reason_of(paths[i]), "interval"), "%s: reason %s", paths[i], reason_of(paths[i]));
    CHECK(strstr(res->err, "rampart: heap dump written to ") != NULL);

    snprintf(options, sizeof options, "dump_on_peak=1:dump_peak_step=8M:dump_path=%s/peak.%%n.rpd", dir);
    REQUIRE(run_child("grow", options, res) == 0);
    CHECKF(res->exited && res->code == 0, "%s", res->err);
    n = count_dumps(dir, "peak", paths, 64);
    printf("dump_on_peak=1, step 8M, growing by 40 MiB: %d dumps\n", n);
    /* 40 MiB of growth in 8 MiB steps, looked at every 4 MiB allocated (RP_PROF_FOLD_BYTES: here
     * every second allocation, 8 MiB apart) */
    CHECKF(n >= 4 && n <= 5, "%d peak dumps", n);
    size_t last = 0;
    for (int i = 0; i < n; i++) {
        CHECKF(!strcmp(reason_of(paths[i]), "peak"), "%s: reason %s", paths[i], reason_of(paths[i]));
        tool_run r;
        jv *v = rpdump_json(&r, "summary", "--json", paths[i], NULL);
        size_t live = v ? (size_t)jv_u64(jv_path(v, "heaps.0.live.usable_bytes")) : 0;
        CHECKF(live >= last + (4u << 20), "peak dump %d: %zu live bytes after %zu", i, live, last);
        last = live;
        jv_free(v);
        tool_run_free(&r);
    }

    /* stats_json=1: the exit statistics as one JSON object */
    REQUIRE(run_child("grow", "stats_json=1", res) == 0);
    char err[128];
    jv *v = jv_parse(strchr(res->err, '{') ? strchr(res->err, '{') : "", err, sizeof err);
    CHECKF(v && jv_u64(jv_path(v, "totals.peak_live_bytes")) >= (32u << 20) &&
               jv_u64(jv_path(v, "totals.allocs")) == jv_u64(jv_path(v, "totals.frees")),
           "%s", res->err);
    jv_free(v);
    free(res);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "grow"))
        return child_grow();
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    counts();
    thread_counts();
    live_and_peak();
    stats_output();
    dumps_over_time();
    TEST_MAIN_END();
}
