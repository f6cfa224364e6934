/* A dump of a million blocks: rpdump summary, check, sites and map run streaming, in bounded
 * memory. The bound is structural: the peak RSS of rpdump on the 1M-block dump may exceed its
 * peak on a tiny dump by far less than the dump's size (a reader holding the blocks would
 * need more than the whole file). Times are printed, not asserted.
 *
 * The heap is built and dumped in a child process: a child forked from a process holding a
 * million blocks would start with that process's resident pages, and ru_maxrss would measure
 * them instead of rpdump. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"

#define BLOCKS 1000000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void write_dump(rp_heap *h, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0 && rp_heap_dump(h, fd) == 0);
    close(fd);
}

int main(int argc, char **argv)
{
    REQUIRE(argc > 1);
    rpdump_path = argv[1];

    rp_heap *tiny = rp_heap_create(NULL);
    REQUIRE(rp_alloc(tiny, 10, 0));
    const char *small_path = tmp_path("tiny.rpd");
    write_dump(tiny, small_path);
    tool_run r;
    rpdump_run(&r, "summary", small_path, NULL);
    REQUIRE(r.status == 0);
    long base_kb = r.maxrss_kb;
    tool_run_free(&r);

    const char *path = tmp_path("million.rpd");
    size_t live = BLOCKS - BLOCKS / 4;
    double t0 = now();
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        rp_heap_config cfg = {0};
        cfg.name = "million";
        rp_heap *h = rp_heap_create(&cfg);
        static void *p[BLOCKS];
        for (size_t i = 0; i < BLOCKS; i++)
            if (!(p[i] = rp_alloc(h, 16, 0)))
                _exit(2);
        for (size_t i = 0; i < BLOCKS; i += 4)
            rp_free(p[i]); /* a quarter become free blocks (never adjacent: no coalescing) */
        write_dump(h, path);
        _exit(0);
    }
    int status;
    REQUIRE(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    double t_dump = now() - t0;
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    long dump_kb = (long)(st.st_size >> 10);
    printf("1M-block heap built and dumped (%ld KiB) in %.2f s; rpdump on a tiny dump peaks at %ld KiB\n", dump_kb,
           t_dump, base_kb);

    const char *svg = tmp_path("million.svg"), *flame = tmp_path("million_flame.svg");
    const char *heap = tmp_path("million.heap"), *chart = tmp_path("million_chart.svg");
    const char *commands[][6] = {
        {"summary", "--json", path, NULL},
        {"check", path, NULL},
        {"sites", "--json", path, NULL},
        {"sites", "--folded", path, NULL},
        {"blocks", "--json", "--state", "quarantined", path, NULL},
        {"map", "-o", svg, path, NULL},
        {"flame", "-o", flame, path, NULL},
        {"pprof", "-o", heap, path, NULL},
        {"timeline", "-o", chart, path, path},
    };
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        t0 = now();
        rpdump_run(&r, commands[c][0], commands[c][1], commands[c][2], commands[c][3], commands[c][4], NULL);
        double t = now() - t0;
        printf("rpdump %s: %.2f s, peak RSS %ld KiB\n", commands[c][0], t, r.maxrss_kb);
        CHECKF(r.status == 0, "rpdump %s: status %d: %s", commands[c][0], r.status, r.err);
        /* Bounded memory: far below the dump's own size, whatever the block count. */
        CHECKF(r.maxrss_kb < base_kb + 16 * 1024 && r.maxrss_kb < dump_kb / 2,
               "rpdump %s peaked at %ld KiB (tiny dump: %ld KiB, dump: %ld KiB)", commands[c][0], r.maxrss_kb, base_kb,
               dump_kb);
        if (!strcmp(commands[c][0], "summary")) {
            char err[200];
            jv *v = jv_parse(r.out, err, sizeof err);
            CHECK(v && jv_u64(jv_path(v, "heaps.0.live.blocks")) == live);
            CHECK(v && jv_u64(jv_path(v, "heaps.0.free.blocks")) >= BLOCKS / 4);
            jv_free(v);
        }
        if (!strcmp(commands[c][0], "sites") && !strcmp(commands[c][1], "--json")) {
            char err[200];
            jv *v = jv_parse(r.out, err, sizeof err);
            CHECK(v && jv_u64(jv_path(v, "sites.0.blocks")) == live);
            jv_free(v);
        }
        if (!strcmp(commands[c][1], "--folded")) /* release: one stackless line */
            CHECKF(!strncmp(r.out, "(no stack) ", 11) && !strchr(r.out, ';'), "%.200s", r.out);
        tool_run_free(&r);
    }
    rp_heap_destroy(tiny);
    TEST_MAIN_END();
}
