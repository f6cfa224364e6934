#define _GNU_SOURCE
#include "rpbench_security.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rpbench_exec.h"

#define MAX_TESTS 256
#define MAX_TARGETS 24
#define NAME_LEN 64

static char test_names[MAX_TESTS][NAME_LEN];
static int ntests;
static rpb_target targets_run[MAX_TARGETS];
static int ntargets_run;
static rpb_sec_verdict verdicts[MAX_TESTS][MAX_TARGETS];
static double timeout_used;

const char *rpb_sec_verdict_name(rpb_sec_verdict v)
{
    switch (v) {
    case RPB_SEC_CAUGHT:
        return "caught";
    case RPB_SEC_NOT_CAUGHT:
        return "not caught";
    case RPB_SEC_LATE_CRASH:
        return "late crash";
    case RPB_SEC_LATE_TIMEOUT:
        return "late timeout";
    case RPB_SEC_TIMEOUT:
        return "timeout";
    default:
        return "not run";
    }
}

/* The table's one-letter form. */
static char verdict_letter(rpb_sec_verdict v)
{
    static const char letters[] = {'?', '+', '-', 'c', 't', 'T'};
    return letters[v];
}

static int cmp_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The executables of build/security, sorted (bench.sh: every executable regular file). */
static int list_tests(const rpb_suite *s, char *err, size_t len)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/security", s->build);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, len, "%s: %s (was the suite built?)", dir, strerror(errno));
        return -1;
    }
    ntests = 0;
    struct dirent *e;
    while ((e = readdir(d)) && ntests < MAX_TESTS) {
        char path[PATH_MAX + 300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || strlen(e->d_name) >= NAME_LEN || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            access(path, X_OK) != 0)
            continue;
        snprintf(test_names[ntests++], NAME_LEN, "%s", e->d_name);
    }
    closedir(d);
    qsort(test_names, (size_t)ntests, NAME_LEN, cmp_name);
    if (ntests == 0) {
        snprintf(err, len, "%s holds no test programs", dir);
        return -1;
    }
    return 0;
}

static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[4096];
    int found = 0;
    size_t keep = strlen(needle) - 1, have = 0;
    /* Binary-safe search across reads: the tests may print bytes of freed memory. */
    for (;;) {
        size_t n = fread(buf + have, 1, sizeof buf - have, f);
        if (n == 0)
            break;
        have += n;
        if (memmem(buf, have, needle, strlen(needle))) {
            found = 1;
            break;
        }
        if (have > keep) {
            memmove(buf, buf + have - keep, keep);
            have = keep;
        }
    }
    fclose(f);
    return found;
}

int rpb_security_run(const rpb_suite *s, const rpb_target *targets, int ntargets, double timeout_s,
                     void (*progress)(long done, long total, const char *what), char *err, size_t len)
{
    if (list_tests(s, err, len) != 0)
        return -1;
    ntargets_run = ntargets < MAX_TARGETS ? ntargets : MAX_TARGETS;
    memcpy(targets_run, targets, sizeof *targets * (size_t)ntargets_run);
    timeout_used = timeout_s;
    char out[PATH_MAX + 32], dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/security", s->build);
    snprintf(out, sizeof out, "%s/rpbench-security.out", s->build);
    long total = (long)ntests * ntargets_run, done = 0;
    for (int t = 0; t < ntests; t++) {
        char exe[PATH_MAX + 100];
        snprintf(exe, sizeof exe, "%s/%.63s", dir, test_names[t]);
        for (int a = 0; a < ntargets_run; a++) {
            if (progress && a == 0) {
                char what[200];
                snprintf(what, sizeof what, "security %.63s under every allocator", test_names[t]);
                progress(done, total, what);
            }
            done++;
            const char *argv[] = {exe, NULL};
            rpb_command cmd = {.argv = argv,
                               .cwd = dir,
                               .stdout_path = out,
                               .preload = targets_run[a].preload,
                               .options = targets_run[a].options,
                               .timeout_s = timeout_s};
            rpb_exec_result r;
            if (rpb_exec(&cmd, &r) != 0) {
                snprintf(err, len, "cannot run %s: %s", exe, strerror(errno));
                return -1;
            }
            int said = file_has(out, "NOT_CAUGHT");
            int crashed = !r.timed_out && (!r.exited || r.code != 0);
            rpb_sec_verdict v;
            if (said)
                v = r.timed_out ? RPB_SEC_LATE_TIMEOUT : crashed ? RPB_SEC_LATE_CRASH : RPB_SEC_NOT_CAUGHT;
            else
                v = r.timed_out ? RPB_SEC_TIMEOUT : RPB_SEC_CAUGHT;
            verdicts[t][a] = v;
        }
    }
    unlink(out);
    return 0;
}

/* The test program's family: its name without the _small/_medium/_large suffix the suite's
 * CMakeLists.txt gives its three allocation sizes. Sets *size to 0/1/2 for those, -1 for none. */
static void family_of(const char *name, char *fam, size_t len, int *size)
{
    static const char *const sfx[] = {"_small", "_medium", "_large"};
    snprintf(fam, len, "%s", name);
    *size = -1;
    size_t n = strlen(fam);
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(sfx[i]);
        if (n > k && strcmp(fam + n - k, sfx[i]) == 0) {
            fam[n - k] = 0;
            *size = i;
            return;
        }
    }
}

void rpb_security_print(FILE *f)
{
    if (ntests == 0)
        return;
    fprintf(f, "\nsecurity: the mimalloc-bench suite's security tests, each run under each allocator (limit %g s); "
               "sizes 8 B / 4 KiB / 256 KiB side by side\n",
            timeout_used);
    fprintf(f, "  + caught (stopped, or memory zeroed)   - not caught   c NOT_CAUGHT then crashed   t NOT_CAUGHT then "
               "timed out   T timed out\n");
    int width = 12;
    for (int a = 0; a < ntargets_run; a++) {
        int w = (int)strlen(targets_run[a].name);
        width = w > width ? w : width;
    }
    fprintf(f, "%-34s", "test");
    for (int a = 0; a < ntargets_run; a++)
        fprintf(f, " %*s", width, targets_run[a].name);
    fprintf(f, "\n");
    /* One row per family, in the order of its first member; its sizes side by side. */
    static char done[MAX_TESTS];
    memset(done, 0, sizeof done);
    for (int t = 0; t < ntests; t++) {
        if (done[t])
            continue;
        char fam[NAME_LEN];
        int size;
        family_of(test_names[t], fam, sizeof fam, &size);
        fprintf(f, "%-34s", fam);
        char cells[MAX_TARGETS][4];
        for (int a = 0; a < ntargets_run; a++)
            snprintf(cells[a], sizeof cells[a], size < 0 ? "%c" : "   ", verdict_letter(verdicts[t][a]));
        for (int k = t; k < ntests && size >= 0; k++) {
            char other[NAME_LEN];
            int sz;
            family_of(test_names[k], other, sizeof other, &sz);
            if (sz < 0 || strcmp(other, fam) != 0)
                continue;
            done[k] = 1;
            for (int a = 0; a < ntargets_run; a++)
                cells[a][sz] = verdict_letter(verdicts[k][a]);
        }
        for (int a = 0; a < ntargets_run; a++)
            fprintf(f, " %*s", width, cells[a]);
        fprintf(f, "\n");
    }
    for (int a = 0; a < ntargets_run; a++) {
        int caught = 0, timeouts = 0;
        for (int t = 0; t < ntests; t++) {
            caught += verdicts[t][a] == RPB_SEC_CAUGHT;
            timeouts += verdicts[t][a] == RPB_SEC_TIMEOUT || verdicts[t][a] == RPB_SEC_LATE_TIMEOUT;
        }
        fprintf(f, "%s: caught %d of %d", targets_run[a].name, caught, ntests);
        if (timeouts)
            fprintf(f, " (%d timed out)", timeouts);
        fprintf(f, "\n");
    }
}

void rpb_security_json(FILE *f)
{
    fprintf(f, "\"security\": {\"timeout_s\": %g, \"tests\": [", timeout_used);
    for (int t = 0; t < ntests; t++)
        fprintf(f, "%s\"%s\"", t ? ", " : "", test_names[t]);
    fprintf(f, "],\n    \"targets\": {");
    for (int a = 0; a < ntargets_run; a++) {
        int caught = 0;
        for (int t = 0; t < ntests; t++)
            caught += verdicts[t][a] == RPB_SEC_CAUGHT;
        fprintf(f, "%s\n      \"%s\": {\"options\": ", a ? "," : "", targets_run[a].name);
        if (targets_run[a].options)
            fprintf(f, "\"%s\"", targets_run[a].options);
        else
            fprintf(f, "null");
        fprintf(f, ", \"caught\": %d, \"total\": %d, \"verdicts\": {", caught, ntests);
        for (int t = 0; t < ntests; t++)
            fprintf(f, "%s\"%s\": \"%s\"", t ? ", " : "", test_names[t], rpb_sec_verdict_name(verdicts[t][a]));
        fprintf(f, "}}");
    }
    fprintf(f, "}}");
}
