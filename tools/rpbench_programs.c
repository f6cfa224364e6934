#define _GNU_SOURCE
#include "rpbench_programs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpbench_exec.h"

/* ---- the workloads ------------------------------------------------------------------------ */

#define SQLITE_ROWS 100000

/* 100k rows inserted by as many statements (each one parsed, prepared and finalised), then
 * indexed, queried, updated, deleted from, vacuumed and checked. Deterministic output. */
static void generate_sqlite(FILE *f)
{
    fputs("PRAGMA cache_size = -20000;\n"
          "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, grp INTEGER, tag TEXT);\n"
          "BEGIN;\n",
          f);
    uint32_t x = 12345;
    for (int i = 1; i <= SQLITE_ROWS; i++) {
        x = x * 1103515245u + 12345u; /* the names and tags vary in content and length */
        fprintf(f, "INSERT INTO t VALUES(%d, 'name-%08d-%x', %d.5, %d, '%.*s');\n", i, i, x >> 4, i, i % 97,
                (int)(x >> 27), "tagtagtagtagtagtagtagtagtagtagtagtag");
    }
    fputs("COMMIT;\n"
          "CREATE INDEX t_grp ON t(grp, v);\n"
          "CREATE INDEX t_name ON t(name);\n"
          "SELECT count(*), sum(v), min(name), max(name), sum(length(tag)) FROM t;\n"
          "SELECT grp, count(*), avg(v) FROM t GROUP BY grp ORDER BY grp LIMIT 5;\n"
          "UPDATE t SET name = name || '-updated' WHERE id % 7 = 0;\n"
          "DELETE FROM t WHERE id % 11 = 0;\n"
          "SELECT count(*), sum(length(name)) FROM t;\n"
          "SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.grp < 5 GROUP BY a.grp "
          "ORDER BY a.grp;\n"
          "SELECT tag, count(*) FROM t GROUP BY tag ORDER BY count(*) DESC, tag LIMIT 5;\n"
          "SELECT group_concat(name, ',') FROM (SELECT name FROM t WHERE grp = 3 ORDER BY name LIMIT 40);\n"
          "VACUUM;\n"
          "PRAGMA integrity_check;\n",
          f);
}

/* Objects of every size through malloc (PYTHONMALLOC=malloc): dicts, lists, tuples, strings,
 * JSON out and back, counting, sorting, a sliding window of live objects. */
static void generate_python(FILE *f)
{
    fputs("import collections, hashlib, json, random\n"
          "rng = random.Random(12345)\n"
          "d = {}\n"
          "for i in range(100000):\n"
          "    d['k%06d' % i] = [i, str(i) * (i % 7), {'v': i * 1.5, 't': [i, -i]}]\n"
          "s = json.dumps(d, sort_keys=True)\n"
          "assert json.loads(s) == d\n"
          "words = [''.join(rng.choice('abcdefgh') for _ in range(rng.randint(1, 12))) for _ in range(100000)]\n"
          "counts = collections.Counter(words)\n"
          "ranked = sorted(set(words), key=lambda w: (-counts[w], w))\n"
          "window, total = [], 0\n"
          "for i in range(300000):\n"
          "    window.append(('x' * (i % 300), i, [i] * (i % 5)))\n"
          "    if len(window) > 2000:\n"
          "        total += sum(len(a) for a, _, _ in window[:1000])\n"
          "        del window[:1000]\n"
          "print('json', len(s), hashlib.sha256(s.encode()).hexdigest())\n"
          "print('words', len(counts), ranked[:5])\n"
          "print('window', total, len(window))\n",
          f);
}

const rpb_program rpb_programs[] = {
    {"sqlite-100k", "sqlite3 inserting 100k rows from a generated script, then indexes, queries, vacuum",
     "sqlite3", "sqlite-100k.sql", 1, {NULL}, generate_sqlite},
    {"python-alloc", "python3 (PYTHONMALLOC=malloc) building, serialising and sorting 100k-object structures",
     "python3", "python-alloc.py", 0, {"PYTHONMALLOC=malloc", "PYTHONHASHSEED=0", NULL}, generate_python},
};
const int rpb_nprograms = (int)(sizeof rpb_programs / sizeof rpb_programs[0]);

/* ---- running them -------------------------------------------------------------------------- */

int rpb_programs_prepare(const char *dir)
{
    for (int p = 0; p < rpb_nprograms; p++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, rpb_programs[p].script);
        FILE *f = fopen(path, "w");
        if (!f)
            return -1;
        rpb_programs[p].generate(f);
        if (fclose(f) != 0)
            return -1;
    }
    return 0;
}

int rpb_program_find(int p, char *path, size_t len)
{
    const char *exe = rpb_programs[p].exe;
    snprintf(path, len, "/usr/bin/%s", exe); /* not a wrapper script (pyenv shims) if there is one */
    if (access(path, X_OK) == 0)
        return 0;
    const char *env = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s", env ? env : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, len, "%s/%s", d, exe);
        if (access(path, X_OK) == 0)
            return 0;
    }
    return -1;
}

/* FNV-1a of a file's contents; 0 if it cannot be read. */
static uint64_t hash_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ull;
    close(fd);
    return h;
}

/* The first line of the stderr file that says something went wrong in the allocator or the
 * loader, copied into out; 0 if there is none. */
static int trouble_in(const char *path, char *out, size_t len)
{
    static const char *const signs[] = {"cannot be preloaded", "ERROR: rampart", "ERROR: AddressSanitizer",
                                        "rampart: "};
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        for (size_t i = 0; i < sizeof signs / sizeof signs[0] && !found; i++)
            if (strstr(line, signs[i])) {
                size_t n = strcspn(line, "\n");
                if (n >= len)
                    n = len - 1;
                memcpy(out, line, n);
                out[n] = 0;
                found = 1;
            }
    }
    fclose(f);
    return found;
}

void rpb_asan_options(const char *extra, char *buf, size_t len)
{
    snprintf(buf, len, "detect_leaks=0%s%s", extra ? ":" : "", extra ? extra : "");
}

int rpb_program_run(int p, const char *exe, const char *dir, const char *preload, const char *options,
                    const char *asan_options, rpb_run *out)
{
    const rpb_program *w = &rpb_programs[p];
    memset(out, 0, sizeof *out);
    char db[PATH_MAX], err[PATH_MAX], result[PATH_MAX], script[PATH_MAX];
    snprintf(db, sizeof db, "%s/%s.db", dir, w->name);
    snprintf(err, sizeof err, "%s/%s.err", dir, w->name);
    snprintf(result, sizeof result, "%s/%s.out", dir, w->name);
    snprintf(script, sizeof script, "%s/%s", dir, w->script);
    unlink(db); /* every run builds its database from nothing */
    const char *env[8];
    int n = 0;
    char asan[256] = "ASAN_OPTIONS=";
    rpb_asan_options(asan_options, asan + strlen(asan), sizeof asan - strlen(asan));
    env[n++] = asan;
    for (int i = 0; w->env[i] && n < 7; i++)
        env[n++] = w->env[i];
    env[n] = NULL;
    const char *argv[] = {exe, w->script_on_stdin ? db : script, NULL};
    rpb_command cmd = {.argv = argv,
                       .stdin_path = w->script_on_stdin ? script : NULL,
                       .stdout_path = result,
                       .stderr_path = err,
                       .preload = preload,
                       .options = options,
                       .env = env};
    rpb_exec_result r;
    if (rpb_exec(&cmd, &r) != 0) {
        snprintf(out->error, sizeof out->error, "cannot run %s: %s", exe, strerror(errno));
        return -1;
    }
    out->wall_s = r.wall_s;
    out->cpu_s = r.user_s + r.sys_s;
    out->peak_rss_mib = r.peak_rss_mib;
    out->output_hash = hash_file(result);
    char trouble[200] = "", why[96];
    int troubled = trouble_in(err, trouble, sizeof trouble);
    rpb_exec_describe(&r, 0, why, sizeof why);
    if (why[0])
        snprintf(out->error, sizeof out->error, "%s %s%s%s", w->exe, why, troubled ? ": " : "", trouble);
    else if (troubled)
        snprintf(out->error, sizeof out->error, "%s", trouble);
    return out->error[0] ? -1 : 0;
}
