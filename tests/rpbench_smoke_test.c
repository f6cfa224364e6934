/* rpbench end to end, at a tiny scale: every scenario runs on rampart, glibc and rp_alloc and
 * the table (medians with their range), the JSON (with every sample), the SVG chart (a panel
 * per scenario) and the progress lines come out complete and sane; the grid on rampart alone;
 * the suite's scenarios on a stand-in suite; bad options and output
 * paths that cannot be written fail at once with one clear message and status 2, before any
 * measurement. Figures are only checked for being measured (positive, plausible ratios),
 * never for speed: the machine's load must not make this test fail.
 *
 * Arguments: rpbench, the stand-in suite's bench.sh and tools/rpbench_markdown.py (whose
 * generated section of a document is checked too). Needs python3 and sqlite3 for
 * the program scenario and cmake for the stand-in suite (the setup
 * script installs both). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_process.h"
#include "json_lite.h"
#include "testing.h"

static const char *rpbench;
static char tmpdir[512];
static char fake_suite[4096]; /* testdata/fake_mimalloc_bench */
static char markdown[4096];   /* tools/rpbench_markdown.py */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_markdown(const char *json);

static int positive(const jv *v) { return v && v->type == JV_NUMBER && jv_num(v) > 0; }

/* One allocator's results for the case of the run: rounds figures per round and the rest. */
static void check_case_results(const jv *results, const char *name, int rounds)
{
    const jv *r = jv_get(results, name);
    CHECKF(r != NULL, "no results for %s", name);
    if (!r)
        return;
    const jv *seed = jv_get(r, "seed_round_ns");
    CHECKF(seed && (int)jv_len(seed) == rounds, "%s: %d seed rounds expected", name, rounds);
    for (size_t i = 0; seed && i < jv_len(seed); i++)
        CHECKF(positive(jv_at(seed, i)), "%s: seed round %zu not measured", name, i + 1);
    CHECKF(positive(jv_get(r, "seed_mean_ns")), "%s: seed mean", name);
    /* Every figure keeps its samples, one per repetition (the run makes 2). */
    const jv *samples = jv_get(r, "churn_ns_samples");
    CHECKF(samples && jv_len(samples) == 2 && positive(jv_at(samples, 0)) && positive(jv_at(samples, 1)),
           "%s: churn samples", name);
    const jv *round_samples = jv_get(r, "seed_round_ns_samples");
    CHECKF(round_samples && (int)jv_len(round_samples) == rounds && jv_len(jv_at(round_samples, 0)) == 2,
           "%s: seed round samples", name);
    CHECKF(positive(jv_get(r, "seed_last_over_first")), "%s: seed flatness", name);
    CHECKF(positive(jv_get(r, "churn_ns")), "%s: churn", name);
    CHECKF(positive(jv_get(r, "churn_p999_ns")), "%s: churn p99.9", name);
    /* Peak RSS over bytes requested: measured, and far from 10. (At this scale it can be far
     * below 1: memory resident before the run, a huge page the allocator had already touched,
     * takes the allocations.) */
    double m = jv_num(jv_get(r, "memory_ratio"));
    CHECKF(m > 0 && m < 10, "%s: memory ratio %g", name, m);
}

static void check_threads(const jv *doc, const char *key, const char *name)
{
    const jv *t = jv_get(jv_get(doc, key), name);
    CHECKF(t != NULL, "%s: no %s", name, key);
    CHECKF(positive(jv_get(t, "1")) && positive(jv_get(t, "2")), "%s: %s not measured on 1 and 2 threads", name, key);
}

static void check_program(const jv *doc, const char *workload, const char *name)
{
    const jv *p = jv_get(jv_get(jv_get(doc, "program"), workload), name);
    CHECKF(p != NULL, "%s: no %s run", name, workload);
    CHECKF(positive(jv_get(p, "wall_s")) && positive(jv_get(p, "cpu_s")), "%s: %s times", name, workload);
    /* python3 and sqlite3 each take more than a MiB and far less than 4 GiB. */
    double rss = jv_num(jv_get(p, "peak_rss_mib"));
    CHECKF(rss > 1 && rss < 4096, "%s: %s peak RSS %g MiB", name, workload, rss);
}

static void test_full_run(void)
{
    char json[600], svg[600];
    snprintf(json, sizeof json, "%s/run.json", tmpdir);
    snprintf(svg, sizeof svg, "%s/run.svg", tmpdir);
    char *argv[] = {(char *)rpbench, "--quick", "--reps", "2", "--rounds", "3", "--per-round", "300", "--churn-ops", "20000",
                    "--thread-ops", "40000", "--threads", "1,2", "--case", "100/64", "--scenarios",
                    "seed,churn,memory,pairs,prodcons,grow,program", "--allocators", "rampart,glibc,rp_alloc",
                    "--json", json, "--svg", svg, NULL};
    static child_result r;
    REQUIRE(run_argv(argv, NULL, &r) == 0);
    CHECKF(r.exited && r.code == 0, "rpbench ended with status %d signal %d:\n%s", r.code, r.signal, r.err);
    /* The table: one section per scenario, and the ratio rows. */
    const char *sections[] = {"seed: ", "churn: ", "memory: ", "pairs: ", "prodcons: ", "grow: ",
                              "program: ", "peak RSS of the process, MiB", "rampart / other"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        CHECKF(strstr(r.out, sections[i]) != NULL, "no '%s' in the table:\n%s", sections[i], r.out);
    CHECKF(strstr(r.out, "not measured") == NULL && strstr(r.out, "SKIPPED") == NULL, "something skipped:\n%s",
           r.out);
    /* Medians with their range, comparisons named as such, no verdicts on targets. */
    CHECKF(strstr(r.out, "median [min-max] of 2 repetitions") && strstr(r.out, "comparison: rampart / other"),
           "no spread or comparison:\n%s", r.out);
    CHECKF(strstr(r.out, "target") == NULL, "a target verdict in the table:\n%s", r.out);
    /* Progress on stderr, which is not a terminal here: a line per step, naming the scenario, with
     * the time left. */
    CHECKF(strstr(r.err, "rpbench: [1/") && strstr(r.err, "left] seed/churn/memory 100/64") &&
               strstr(r.err, "left] prodcons on 2 threads") && strstr(r.err, "left] program "),
           "progress lines:\n%s", r.err);

    char *text = slurp(json);
    REQUIRE(text != NULL);
    char err[200];
    jv *doc = jv_parse(text, err, sizeof err);
    CHECKF(doc != NULL, "JSON: %s", err);
    if (doc) {
        CHECK(jv_num(jv_get(doc, "rounds")) == 3);
        const jv *cases = jv_get(doc, "cases");
        CHECK(jv_len(cases) == 1);
        const jv *c0 = jv_at(cases, 0);
        CHECK(strcmp(jv_str(jv_get(c0, "case")), "100/64") == 0);
        const char *rows[] = {"rampart", "glibc", "rp_alloc"};
        for (int i = 0; i < 3; i++)
            check_case_results(jv_get(c0, "results"), rows[i], 3);
        CHECK(jv_get(jv_get(c0, "results"), "jemalloc") == NULL); /* not selected */
        for (int i = 0; i < 2; i++) {
            check_threads(doc, "pairs_ops_per_s", rows[i]);
            check_threads(doc, "prodcons_ops_per_s", rows[i]);
            check_threads(doc, "pairs_cpu_ns_per_op", rows[i]);
            CHECKF(positive(jv_get(jv_get(jv_get(jv_get(doc, "grow"), "x1.5"), rows[i]), "cpu_ms")),
                   "%s: grow not measured", rows[i]);
            check_program(doc, "sqlite-100k", rows[i]);
            check_program(doc, "python-alloc", rows[i]);
        }
        jv_free(doc);
    }

    test_markdown(json);

    text = slurp(svg);
    REQUIRE(text != NULL);
    CHECK(strncmp(text, "<svg", 4) == 0 || strncmp(text, "<?xml", 5) == 0);
    size_t len = strlen(text);
    CHECK(len > 7 && strstr(text + len - 8, "</svg>") != NULL);
    CHECK(strstr(text, "100/64") && strstr(text, "rampart") && strstr(text, "glibc") && strstr(text, "rp_alloc"));
    const char *panels[] = {"seed 100/64", "churn:", "memory:", "pairs:", "prodcons:", "grow:", "program: CPU"};
    for (size_t i = 0; i < sizeof panels / sizeof panels[0]; i++)
        CHECKF(strstr(text, panels[i]) != NULL, "no '%s' panel in the chart", panels[i]);
}

/* Runs rpbench with argv, expects status 0, and parses the JSON file it wrote (NULL after a
 * failed check). */
static jv *run_for_json(char **argv, const char *json, child_result *r)
{
    if (run_argv(argv, NULL, r) != 0) {
        CHECKF(0, "cannot run %s", argv[0]);
        return NULL;
    }
    CHECKF(r->exited && r->code == 0, "rpbench ended with status %d signal %d:\n%s", r->code, r->signal, r->err);
    char *text = slurp(json);
    CHECKF(text != NULL, "no JSON file %s", json);
    if (!text)
        return NULL;
    char err[200];
    jv *doc = jv_parse(text, err, sizeof err);
    CHECKF(doc != NULL, "JSON: %s", err);
    return doc;
}

/* tools/rpbench_markdown.py on the run's JSON: the section between the markers is written,
 * then replaced (never appended) by a second run, and the prose around it is kept. */
static void test_markdown(const char *json)
{
    char doc[600];
    snprintf(doc, sizeof doc, "%s/BENCHMARKS.md", tmpdir);
    FILE *f = fopen(doc, "w");
    REQUIRE(f != NULL);
    fputs("# Benchmarks\n\nProse before.\n", f);
    fclose(f);
    for (int run = 0; run < 2; run++) {
        char *argv[] = {"/usr/bin/env", "python3", markdown, (char *)json, "--doc", doc, NULL};
        static child_result r;
        REQUIRE(run_argv(argv, NULL, &r) == 0);
        CHECKF(r.exited && r.code == 0, "rpbench_markdown.py: status %d:\n%s", r.code, r.err);
        if (run == 0) { /* prose after the section, which the second run must keep too */
            f = fopen(doc, "a");
            REQUIRE(f != NULL);
            fputs("\nProse after.\n", f);
            fclose(f);
        }
    }
    const char *text = slurp(doc);
    REQUIRE(text != NULL);
    const char *begin = strstr(text, "<!-- rpbench-table:begin");
    CHECKF(begin && !strstr(begin + 1, "<!-- rpbench-table:begin"), "one generated section expected:\n%s", text);
    CHECKF(strstr(text, "Prose before.") && strstr(text, "Prose after.") && strstr(text, "| seed | 100/64 | ns/op |"),
           "document after two runs:\n%s", text);
}

/* --help: the options on stdout, status 0, nothing measured. */
static void test_help(void)
{
    char *argv[] = {(char *)rpbench, "--help", NULL};
    static child_result r;
    REQUIRE(run_argv(argv, NULL, &r) == 0);
    CHECKF(r.exited && r.code == 0, "--help: status %d", r.code);
    CHECKF(strstr(r.out, "usage: rpbench") && strstr(r.out, "--scenarios") && strstr(r.out, "mimalloc-bench") &&
               strstr(r.out, "--variant"),
           "--help:\n%s", r.out);
    CHECKF(strstr(r.out, "rpbench 20") == NULL, "--help measured something:\n%s", r.out);
}

/* The grid at a tiny scale on rampart alone: every size x alignment pair measured. */
static void test_grid(void)
{
    char json[600];
    snprintf(json, sizeof json, "%s/grid.json", tmpdir);
    char *argv[] = {(char *)rpbench, "--quick", "--grid-ops", "2000", "--scenarios", "grid", "--allocators", "rampart",
                    "--json", json, "--svg", "none", NULL};
    static child_result r;
    jv *doc = run_for_json(argv, json, &r);
    CHECKF(strstr(r.out, "grid: every size x alignment pair") && strstr(r.out, "round 10 / round 1"),
           "no grid tables:\n%s", r.out);
    if (!doc)
        return;
    const jv *grid = jv_get(doc, "grid");
    size_t nsizes = jv_len(jv_get(grid, "sizes")), naligns = jv_len(jv_get(grid, "alignments"));
    CHECKF(nsizes >= 20 && naligns == 13, "grid of %zu sizes x %zu alignments", nsizes, naligns);
    const jv *churn = jv_get(jv_get(jv_get(grid, "rows"), "rampart"), "churn_ns");
    CHECK(churn && jv_len(churn) == nsizes);
    for (size_t s = 0; churn && s < nsizes; s++)
        for (size_t a = 0; a < naligns; a++)
            CHECKF(positive(jv_at(jv_at(churn, s), a)), "grid pair %zu x %zu not measured", s, a);
    jv_free(doc);
}

/* The suite's scenarios on the stand-in suite: built with CMake into a folder of the test's,
 * each test's time read as the suite reads it, the security verdicts as bench.sh gives them. */
static void test_suite_scenarios(void)
{
    char json[600], build[600];
    snprintf(json, sizeof json, "%s/suite.json", tmpdir);
    snprintf(build, sizeof build, "%s/suite-build", tmpdir);
    char *argv[] = {(char *)rpbench, "--scenarios", "mimalloc-bench,security", "--mimalloc-bench", fake_suite,
                    "--suite-build", build, "--suite-tests", "cfrac,larsonN,rptestN", "--allocators", "rampart,glibc",
                    "--reps", "2", "--json", json, NULL};
    static child_result r;
    jv *doc = run_for_json(argv, json, &r);
    CHECKF(strstr(r.out, "mimalloc-bench: ") && strstr(r.out, "geometric mean"), "no suite table:\n%s", r.out);
    CHECKF(strstr(r.out, "rampart: caught 1 of 3") && strstr(r.out, "glibc: caught 1 of 3"), "verdicts:\n%s", r.out);
    if (!doc)
        return;
    const jv *tests = jv_get(jv_get(doc, "mimalloc_bench"), "tests");
    const char *rows[] = {"rampart", "glibc"};
    for (int i = 0; i < 2; i++) {
        const jv *cfrac = jv_get(jv_get(tests, "cfrac"), rows[i]);
        const jv *t = jv_get(cfrac, "time_s");
        CHECKF(t && jv_len(t) == 2 && positive(jv_at(t, 0)) && positive(jv_at(t, 1)), "%s: cfrac times", rows[i]);
        CHECKF(positive(jv_at(jv_get(cfrac, "peak_rss_mib"), 0)), "%s: cfrac peak RSS", rows[i]);
        /* larson's relative time (its argc, 8, in the stand-in) and rptest's 2,000,000 / ops. */
        double larson = jv_num(jv_at(jv_get(jv_get(jv_get(tests, "larsonN"), rows[i]), "time_s"), 0));
        double rptest = jv_num(jv_at(jv_get(jv_get(jv_get(tests, "rptestN"), rows[i]), "time_s"), 1));
        CHECKF(larson == 8.25 && rptest == 4, "%s: larsonN %g, rptestN %g", rows[i], larson, rptest);
        const jv *v = jv_get(jv_get(jv_get(jv_get(doc, "security"), "targets"), rows[i]), "verdicts");
        CHECKF(v && strcmp(jv_str(jv_get(v, "stops_small")), "caught") == 0 &&
                   strcmp(jv_str(jv_get(v, "prints_not_caught_small")), "not caught") == 0 &&
                   strcmp(jv_str(jv_get(v, "prints_then_crashes_small")), "late crash") == 0,
               "%s: security verdicts", rows[i]);
    }
    jv_free(doc);
}

/* Each bad command line: status 2 at once, one message naming what was wrong, no JSON. */
static void test_bad_options(void)
{
    char json[600], unwritable[600];
    snprintf(json, sizeof json, "%s/bad.json", tmpdir);
    snprintf(unwritable, sizeof unwritable, "%s/no-such-dir/out.json", tmpdir);
    struct {
        const char *args[6];
        const char *says;
    } cases[] = {
        {{"--reps", "0"}, "--reps takes a whole number"},
        {{"--reps", "abc"}, "not 'abc'"},
        {{"--rounds", "1"}, "--rounds takes a whole number from 2"},
        {{"--per-round", "5x"}, "not '5x'"},
        {{"--churn-ops", "99999999999999999999"}, "--churn-ops"},
        {{"--thread-ops", "-3"}, "--thread-ops"},
        {{"--threads", "0"}, "--threads takes a whole number from 1 to 64"},
        {{"--threads", "1,2,3,4,5,6,7,8,9"}, "at most 8"},
        {{"--threads", ","}, "list of thread counts"},
        {{"--case", "nosuch"}, "unknown case 'nosuch'"},
        {{"--scenarios", "seed,bogus"}, "--scenarios: unknown name 'bogus'"},
        {{"--allocators", "nope"}, "--allocators: unknown name 'nope'"},
        {{"--frobnicate", "1"}, "--frobnicate: unknown option"},
        {{"--reps"}, "--reps: unknown option, or one that needs a value"},
        {{"stray"}, "stray: not an option"},
        {{"--json", unwritable}, "cannot write"},
        {{"--variant", "fast"}, "--variant takes release[:OPTIONS] or debug[:OPTIONS]"},
        {{"--scenarios", "security", "--mimalloc-bench", "/nonexistent"}, "not the mimalloc-bench suite"},
        {{"--scenarios", "mimalloc-bench", "--mimalloc-bench", fake_suite, "--suite-tests", "bogus"},
         "unknown test 'bogus'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unlink(json);
        char *argv[12];
        int n = 0;
        argv[n++] = (char *)rpbench;
        for (int k = 0; k < 6 && cases[i].args[k]; k++)
            argv[n++] = (char *)cases[i].args[k];
        /* A JSON path rpbench would write if it went on (except where the case names its own). */
        if (strcmp(cases[i].args[0], "--json") != 0 && n == 3) {
            argv[n++] = "--json";
            argv[n++] = json;
        }
        argv[n] = NULL;
        static child_result r;
        REQUIRE(run_argv(argv, NULL, &r) == 0);
        CHECKF(r.exited && r.code == 2, "%s %s: status %d, signal %d", cases[i].args[0],
               cases[i].args[1] ? cases[i].args[1] : "", r.code, r.signal);
        CHECKF(strstr(r.err, cases[i].says) != NULL, "%s: expected '%s' in:\n%s", cases[i].args[0], cases[i].says,
               r.err);
        CHECKF(access(json, F_OK) != 0, "%s: a JSON file was written", cases[i].args[0]);
        CHECKF(strstr(r.out, "rpbench ") == NULL, "%s: measurements started:\n%s", cases[i].args[0], r.out);
    }
}

int main(int argc, char **argv)
{
    REQUIRE(argc == 4);
    rpbench = realpath(argv[1], NULL);
    REQUIRE(rpbench != NULL);
    /* The stand-in suite's folder: the one that holds bench.sh. */
    char cwd[2048];
    REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(fake_suite, sizeof fake_suite, "%s%s%s", argv[2][0] == '/' ? "" : cwd, argv[2][0] == '/' ? "" : "/",
             argv[2]);
    *strrchr(fake_suite, '/') = 0;
    snprintf(markdown, sizeof markdown, "%s%s%s", argv[3][0] == '/' ? "" : cwd, argv[3][0] == '/' ? "" : "/", argv[3]);
    const char *t = getenv("TEST_TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s", t && t[0] ? t : "/tmp");
    test_help();
    test_bad_options();
    test_grid();
    test_suite_scenarios();
    test_full_run();
    TEST_MAIN_END();
}
