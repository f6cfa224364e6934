/* Dumps on a signal and at exit (RAMPART_OPTIONS dump_signal, dump_at_exit, dump_path).
 *
 * The test runs itself as a child with the options set. The child sends itself the signal
 * while its main thread keeps allocating and freeing on the heap being dumped (the dumper
 * thread and the program contend for the heap lock, as in real use), five times, waiting for
 * each dump file; then a burst of signals (merged into fewer dumps); then it exits, which
 * writes the exit dump. The parent checks every file: complete (no PATH.tmp left), well
 * formed, invariants holding, the right reason and sequence, and the heap's contents. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump_testing.h"
#include "json_lite.h"
#include "rampart.h"
#include "rampart_dump.h"
#include "testing.h"
#include "tools/rpdump/dump_parser.h"

#define LIVE 1000
#define SIGNAL_DUMPS 5

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* ---- the child ---------------------------------------------------------------------------- */

static int child(const char *dir)
{
    rp_heap_config cfg = {0};
    cfg.name = "sig";
    rp_heap *h = rp_heap_create(&cfg);
    static void *live[LIVE];
    for (int i = 0; i < LIVE; i++)
        live[i] = rp_alloc(h, 100, 0);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    void *churn[64] = {0};
    unsigned n = 0;
    for (int k = 0; k < SIGNAL_DUMPS; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/d.%d.%d.rpd", dir, (int)getpid(), k);
        kill(getpid(), SIGUSR2);
        /* Keep the heap busy until the dumper thread has written the file (10 s at most). */
        time_t deadline = time(NULL) + 10;
        for (int waited = 0; access(path, F_OK) != 0; waited++) {
            if (time(NULL) > deadline) {
                fprintf(stderr, "no dump %s after 10 s\n", path);
                return 3;
            }
            for (int i = 0; i < 64; i++, n++) {
                rp_free(churn[n % 64]);
                churn[n % 64] = rp_alloc(h, 16 + n % 500, 0);
            }
            if (waited % 64 == 0)
                pause_ms(1);
        }
    }
    for (int i = 0; i < 64; i++)
        rp_free(churn[i]);
    for (int i = 0; i < 20; i++)
        kill(getpid(), SIGUSR2); /* a burst: merged into one or a few dumps */
    pause_ms(50);
    /* A forked child has no dumper: the signal does what it did before rampart handled it
     * (SIGUSR2's default: the end of the process), instead of being swallowed. */
    fflush(NULL);
    pid_t kid = fork();
    if (kid == 0) {
        kill(getpid(), SIGUSR2);
        pause_ms(2000);
        _exit(0);
    }
    int st = 0;
    if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFSIGNALED(st) || WTERMSIG(st) != SIGUSR2) {
        fprintf(stderr, "a forked child's SIGUSR2 was not the default action (status %#x)\n", st);
        return 5;
    }
    for (int i = 0; i < LIVE; i += 2)
        rp_free(live[i]); /* the exit dump sees half of them */
    return 0;                 /* exit(): the exit dump */
}

/* ---- the parent --------------------------------------------------------------------------- */

static int dump_number(const char *name, int pid)
{
    int p, n;
    char tail[8];
    if (sscanf(name, "d.%d.%d.%7s", &p, &n, tail) == 3 && p == pid && !strcmp(tail, "rpd"))
        return n;
    return -1;
}

static uint64_t live_blocks_of_sig(const char *path)
{
    tool_run r;
    jv *v = rpdump_json(&r, "summary", "--json", "--heap", "sig", path, NULL);
    uint64_t n = v ? jv_u64(jv_path(v, "heaps.0.live.blocks")) : 0;
    jv_free(v);
    tool_run_free(&r);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[2], "child"))
        return child(argv[3]);
    REQUIRE(argc > 1);
    rpdump_path = argv[1];
    const char *dir = tmp_path("signal_dumps");
    mkdir(dir, 0755);
    char options[4400];
    snprintf(options, sizeof options, "RAMPART_OPTIONS=dump_signal=SIGUSR2:dump_at_exit=1:dump_path=%s/d.%%p.%%n.rpd",
             dir);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0);
    self[len] = 0;
    char *args[] = {self, argv[1], "child", (char *)dir, NULL};
    char *env[] = {options, NULL};
    tool_run r;
    REQUIRE(run_tool(args, env, &r) == 0);
    CHECKF(r.status == 0, "child exited with %d; stderr:\n%s", r.status, r.err);
    int pid = 0;
    REQUIRE(sscanf(r.out, "pid %d", &pid) == 1);
    CHECK(strstr(r.err, "rampart: heap dump written to ") != NULL);
    tool_run_free(&r);

    /* Every file is a complete dump, numbered 0..last without gaps. */
    DIR *dd = opendir(dir);
    REQUIRE(dd);
    int last = -1, count = 0;
    struct dirent *de;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.')
            continue;
        CHECKF(!strstr(de->d_name, ".tmp"), "unfinished dump %s", de->d_name);
        int n = dump_number(de->d_name, pid);
        CHECKF(n >= 0, "unexpected file %s", de->d_name);
        if (n > last)
            last = n;
        count++;
    }
    closedir(dd);
    CHECKF(count == last + 1 && last >= SIGNAL_DUMPS && last <= SIGNAL_DUMPS + 21,
           "%d dump files, last number %d", count, last);

    for (int n = 0; n <= last; n++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/d.%d.%d.rpd", dir, pid, n);
        size_t size;
        uint8_t *buf = read_file(path, &size);
        CHECKF(buf, "dump %d missing", n);
        if (!buf)
            continue;
        rpd_source src;
        rpd_source_memory(&src, buf, size);
        static rpd_dump d;
        rpd_error err = {0, ""};
        size_t violations = 1;
        CHECKF(rpd_parse_buffer(buf, size, 0, &violations, &err) == 0 && violations == 0,
               "dump %d: %s at %llu, %zu violations", n, err.message, (unsigned long long)err.offset, violations);
        if (rpd_open(&d, &src, 0, &err) == 0) {
            CHECK(d.process.pid == (uint64_t)pid && d.process.sequence == (uint64_t)n);
            CHECK(d.process.reason == (n == last ? RPD_REASON_EXIT : RPD_REASON_SIGNAL));
            CHECK(rpd_heap_named(&d, "sig") != NULL);
        }
        rpd_close(&d);
        free(buf);
        /* While the heap churned, the 1000 long-lived blocks were always there. */
        uint64_t live = live_blocks_of_sig(path);
        if (n == last)
            CHECKF(live == LIVE / 2, "exit dump: %llu live blocks", (unsigned long long)live);
        else if (n < SIGNAL_DUMPS)
            CHECKF(live >= LIVE && live <= LIVE + 64, "dump %d: %llu live blocks", n, (unsigned long long)live);
        else /* from the burst: may overlap the frees before exit */
            CHECKF(live >= LIVE / 2 && live <= LIVE, "dump %d: %llu live blocks", n, (unsigned long long)live);
    }
    TEST_MAIN_END();
}
