/* rpbench's allocator rows: the built-in table, the --variant rows, and where each row's
 * worker and libraries are on this machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpbench.h"

/* Row 0 is the subject: every ratio is rampart / other row. To add an allocator, add a row:
 *   - another malloc by LD_PRELOAD: api "malloc", preload = its library (a missing one is
 *     reported and skipped);
 *   - a worker binary of its own (linked against //src:rampart_debug, api "rp"; built with
 *     -fsanitize=address, api "malloc"): a cc_binary whose main calls rpbench_worker_main
 *     (tools/rpbench_worker.h), listed in rpbench's `data` so that it is built and found
 *     through the runfiles; worker = its runfiles path ("tools/<name>").
 * The thread scenarios run for "malloc" rows only. */
bench_allocator allocators[MAX_ALLOC] = {
    {"rampart", "malloc", NULL, "dist/librampart_malloc.so", NULL, 0,
     "librampart_malloc.so by LD_PRELOAD (thread caches + arenas)", "dist/librampart_malloc.so", NULL},
    {"glibc", "malloc", NULL, NULL, NULL, 0, "the system malloc (glibc ptmalloc2)", "", NULL},
    {"jemalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", NULL, 0, "libjemalloc2 by LD_PRELOAD",
     "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", NULL},
    {"mimalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", NULL, 0,
     "libmimalloc2.0 by LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", NULL},
    {"tcmalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", NULL, 0,
     "libtcmalloc-minimal4 by LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", NULL},
    {"rp_alloc", "rp", NULL, NULL, NULL, 0, "rampart's own API: rp_alloc/rp_free on one heap, no caches", NULL, NULL},
    {"debug", "rp", "tools/rpbench_debug_worker", NULL, "", 1,
     "debug flavour, every check on (cookies, poisoning, 4 MiB quarantine, 16-frame stacks): rp_alloc/rp_free; "
     "programs: librampart_malloc_debug.so by LD_PRELOAD",
     "dist/librampart_malloc_debug.so", NULL},
    {"debug-nobt", "rp", "tools/rpbench_debug_worker", NULL, "backtrace_depth=0", 1,
     "debug flavour as above without stacks", "dist/librampart_malloc_debug.so", NULL},
    {"debug-fast", "rp", "tools/rpbench_debug_worker", NULL, "fast_unwind=1", 1,
     "debug flavour as above, stacks read along frame pointers (fast_unwind=1, ASan's way)",
     "dist/librampart_malloc_debug.so", NULL},
    {"glibc-asan", "malloc", "tools/rpbench_asan_worker", NULL, NULL, 1,
     "glibc's malloc API in a worker built with -fsanitize=address (ASan's allocator); programs: gcc's "
     "libasan.so.8 by LD_PRELOAD",
     "/usr/lib/x86_64-linux-gnu/libasan.so.8", NULL},
    {"glibc-asan-full", "malloc", "tools/rpbench_asan_worker", NULL, NULL, 2,
     "as glibc-asan, with full malloc and free stacks (fast_unwind_on_malloc=0: the stacks debug records)",
     "/usr/lib/x86_64-linux-gnu/libasan.so.8", "fast_unwind_on_malloc=0"},
};
int nalloc = NBUILTIN;
resolved res_alloc[MAX_ALLOC];
int alloc_on[MAX_ALLOC];

/* ---- locating workers and libraries ---------------------------------------------------- */

static char exe_path[PATH_MAX];

/* rel (runfiles-relative) as an existing path: next to the runfiles tree of this binary,
 * under RUNFILES_DIR, in the current directory, or relative to bazel-bin. */
static int find_data(const char *rel, char *out, size_t len)
{
    if (rel[0] == '/') {
        snprintf(out, len, "%s", rel);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    const char *rf = getenv("RUNFILES_DIR");
    char cand[5][PATH_MAX + 64];
    int n = 0;
    snprintf(cand[n++], sizeof cand[0], "%s.runfiles/rampart/%s", exe_path, rel);
    if (rf)
        snprintf(cand[n++], sizeof cand[0], "%s/rampart/%s", rf, rel);
    snprintf(cand[n++], sizeof cand[0], "%s", rel);
    snprintf(cand[n++], sizeof cand[0], "%s/../%s", dir, rel);
    for (int i = 0; i < n; i++) {
        if (access(cand[i], R_OK) == 0 && len >= PATH_MAX && realpath(cand[i], out))
            return 0;
    }
    return -1;
}

void rpb_resolve_allocators(void)
{
    ssize_t k = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[k > 0 ? k : 0] = 0;
    for (int a = 0; a < nalloc; a++) {
        resolved *r = &res_alloc[a];
        const bench_allocator *al = &allocators[a];
        r->active = alloc_on[a];
        if (!r->active) {
            snprintf(r->why, sizeof r->why, "not selected");
            continue;
        }
        if (al->worker) {
            if (find_data(al->worker, r->worker, sizeof r->worker) != 0) {
                r->active = 0;
                snprintf(r->why, sizeof r->why, "worker %s not found", al->worker);
                continue;
            }
        } else {
            snprintf(r->worker, sizeof r->worker, "%s", exe_path);
        }
        if (al->preload && find_data(al->preload, r->preload, sizeof r->preload) != 0) {
            r->active = 0;
            snprintf(r->why, sizeof r->why, "%s not found (install it: tools/setup.sh)", al->preload);
        }
    }
    for (int a = 0; a < nalloc; a++) {
        resolved *r = &res_alloc[a];
        const char *lib = allocators[a].program_preload;
        r->programs = alloc_on[a] && lib != NULL;
        if (!r->programs)
            snprintf(r->program_why, sizeof r->program_why, "%s", lib ? "not selected" : "runs no programs");
        else if (lib[0] && find_data(lib, r->program_preload, sizeof r->program_preload) != 0) {
            r->programs = 0;
            snprintf(r->program_why, sizeof r->program_why, "%s not found", lib);
        }
    }
}

/* --variant LIB[:OPTIONS]: one more rampart row, LIB "release" (librampart_malloc.so) or
 * "debug" (librampart_malloc_debug.so), RAMPART_OPTIONS = OPTIONS (the rest after the first
 * colon, itself colon-separated). Row names: "rampart:OPTIONS", "rampart-debug",
 * "rampart-debug:OPTIONS". 0, or -1 after a message. */
static char variant_names[MAX_VARIANTS][160], variant_options[MAX_VARIANTS][160];
int rpb_add_variant(const char *spec)
{
    if (nalloc == MAX_ALLOC) {
        fprintf(stderr, "rpbench: --variant: at most %d variants\n", MAX_VARIANTS);
        return -1;
    }
    const char *colon = strchr(spec, ':');
    size_t lib_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int debug = lib_len == 5 && strncmp(spec, "debug", 5) == 0;
    if (!debug && !(lib_len == 7 && strncmp(spec, "release", 7) == 0)) {
        fprintf(stderr, "rpbench: --variant takes release[:OPTIONS] or debug[:OPTIONS], not '%s'\n", spec);
        return -1;
    }
    const char *opts = colon ? colon + 1 : NULL;
    if ((opts && (strlen(opts) >= sizeof variant_options[0] || strpbrk(opts, "\"\\ "))) || (!debug && !opts)) {
        fprintf(stderr, "rpbench: --variant '%s': %s\n", spec,
                !debug && !opts ? "the release library with its defaults is the rampart row already"
                                : "OPTIONS must be key=value pairs without quotes, backslashes or spaces");
        return -1;
    }
    int v = nalloc - NBUILTIN;
    snprintf(variant_options[v], sizeof variant_options[v], "%s", opts ? opts : "");
    snprintf(variant_names[v], sizeof variant_names[v], "rampart%s%s%s", debug ? "-debug" : "", opts ? ":" : "",
             opts ? opts : "");
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, variant_names[v]) == 0) {
            fprintf(stderr, "rpbench: --variant '%s' given twice\n", spec);
            return -1;
        }
    const char *lib = debug ? "dist/librampart_malloc_debug.so" : "dist/librampart_malloc.so";
    allocators[nalloc] = (bench_allocator){variant_names[v], "malloc", NULL, lib, opts ? variant_options[v] : NULL, 0,
                                           debug ? "librampart_malloc_debug.so by LD_PRELOAD with RAMPART_OPTIONS as named"
                                                 : "librampart_malloc.so by LD_PRELOAD with RAMPART_OPTIONS as named",
                                           lib, NULL};
    alloc_on[nalloc++] = 1;
    return 0;
}

int alloc_usable(int a, const char *api)
{
    return res_alloc[a].active && (!api || strcmp(allocators[a].api, api) == 0);
}

int program_usable(int a) { return res_alloc[a].programs; }

int peer_index(const char *name)
{
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, name) == 0 && res_alloc[a].active)
            return a;
    return -1;
}

int program_index(const char *name)
{
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, name) == 0 && program_usable(a))
            return a;
    return -1;
}

/* The allocator rows that run whole programs, as the suite's targets (row 0 first). */
int rpb_suite_targets(rpb_target *t)
{
    int n = 0;
    for (int a = 0; a < nalloc; a++)
        if (res_alloc[a].programs)
            t[n++] = (rpb_target){allocators[a].name, res_alloc[a].program_preload, allocators[a].options};
    return n;
}

int grid_row(int a)
{
    const char *n = allocators[a].name;
    return alloc_usable(a, "malloc") &&
           (a == 0 || a >= NBUILTIN || strcmp(n, "jemalloc") == 0 || strcmp(n, "mimalloc") == 0);
}
