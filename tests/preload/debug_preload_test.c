/* The debug flavour as malloc: unmodified programs (built against the system malloc, linked
 * with -rdynamic) run with librampart_malloc_debug.so in LD_PRELOAD.
 *   - overflow_program writes one byte past a 17-byte malloc block and frees it: the report is
 *     a heap-buffer-overflow at the byte after the block, with its location line, detected in
 *     free, and both stacks start with the program's own functions (function+offset and
 *     module+offset consistent with what dladdr says in that process); with
 *     on_error=continue and report_path=FILE the program goes on and the report is in FILE;
 *     the same for a non-PIE build of it (malloc's canonical address is then the program's);
 *   - leak_program leaks from two call sites, one of them with children, and keeps blocks
 *     reachable from a global, a blocked thread's stack, TLS and a pthread key: leak_report=1
 *     lists exactly the two sites as direct leaks and the children as an indirect leak, with
 *     their counts and bytes, largest first, and leak_exit_code sets the exit status; a
 *     suppressions file hides the site it names and lists it under "Suppressions used".
 * Arguments: the library, leak_program, then the overflow programs. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/child_process.h"
#include "tests/report_parse.h"
#include "tests/testing.h"

static char library[PATH_MAX], leak_program[PATH_MAX];
static char overflow_program[PATH_MAX]; /* the one being checked */

/* Runs program under the debug library with options. */
static void run_preloaded(const char *program, const char *options, child_result *r)
{
    setenv("LD_PRELOAD", library, 1);
    char *argv[] = {(char *)program, NULL};
    int rc = run_argv(argv, options, r);
    unsetenv("LD_PRELOAD");
    REQUIRE(rc == 0);
}

typedef struct function_place {
    unsigned long address, module_base;
} function_place;

/* The "FUNCTION name address base" line the overflow program printed. */
static int function_in(const char *out, const char *name, function_place *f)
{
    char key[128];
    snprintf(key, sizeof key, "FUNCTION %s ", name);
    const char *line = strstr(out, key);
    void *address, *base;
    if (!line || sscanf(line + strlen(key), "%p %p", &address, &base) != 2)
        return 0;
    f->address = (unsigned long)(uintptr_t)address;
    f->module_base = (unsigned long)(uintptr_t)base;
    return 1;
}

/* Frame f is in the program's function `name`: named so, in the program's module (dladdr
 * names the main program by the path it was started with), at offsets that agree with the
 * function's address and the module's load bias in that process (the module offset is the
 * call's: pc - 1), and at source line `line` of overflow_program.c when line is non-zero. */
static void check_frame(const char *what, const parsed_frame *f, const char *name, int line, const char *out,
                        const char *text)
{
    function_place place = {0, 0};
    CHECKF(function_in(out, name, &place), "%s: the program did not print where %s is", what, name);
    const char *file = strrchr(f->file, '/');
    file = file ? file + 1 : f->file;
    CHECKF(strcmp(file, "overflow_program.c") == 0 && (line == 0 || f->line == (unsigned)line),
           "%s: frame in %s at %s:%u, expected overflow_program.c:%d\n%s", what, f->function, f->file, f->line, line,
           text);
    CHECKF(strcmp(f->function, name) == 0 && strcmp(f->module, overflow_program) == 0 &&
               f->pc - f->function_offset == place.address && f->pc - 1 - f->module_offset == place.module_base,
           "%s: frame 0x%lx in %s+0x%lx (%s+0x%lx), expected %s at 0x%lx in %s based at 0x%lx\n%s", what, f->pc,
           f->function, f->function_offset, f->module, f->module_offset, name, place.address, overflow_program,
           place.module_base, text);
}

static void check_overflow_report(const char *what, const char *text, const char *out)
{
    void *block = NULL;
    size_t size = 0;
    const char *b = strstr(out, "BLOCK ");
    REQUIRE(b && sscanf(b, "BLOCK %p %zu", &block, &size) == 2 && size == 17);
    unsigned long start = (unsigned long)(uintptr_t)block;
    parsed_report p;
    parse_report(text, &p);
    CHECKF(p.found && strcmp(p.kind, "heap-buffer-overflow") == 0 && p.address == start + 17, "%s: report\n%s", what,
           text);
    CHECKF(p.has_offset && p.offset == 17, "%s: offset %ld\n%s", what, p.offset, text);
    const parsed_location *l = &p.location;
    CHECKF(l->found && l->address == start + 17 && l->distance == 0 && strcmp(l->where, "after") == 0 &&
               l->size == 17 && l->start == start && l->end == start + 17,
           "%s: expected '0x%lx is located 0 bytes after the 17-byte block [0x%lx, 0x%lx)'\n%s", what, start + 17,
           start, start + 17, text);
    CHECKF(strstr(text, "Detected in free, called from:\n") != NULL, "%s: not detected in free\n%s", what, text);
    CHECKF(p.has_alloc && !p.has_free, "%s: sections\n%s", what, text);
    int alloc_line = 0, release_line = 0;
    const char *lines = strstr(out, "LINES ");
    REQUIRE(lines && sscanf(lines, "LINES %d %d", &alloc_line, &release_line) == 2);
    check_frame(what, &p.detect_frames[0], "release_buffer", release_line, out, text);
    check_frame(what, &p.detect_frames[1], "main", 0, out, text);
    check_frame(what, &p.alloc_frames[0], "make_buffer", alloc_line, out, text);
    check_frame(what, &p.alloc_frames[1], "main", 0, out, text);
    /* No frame of the report, libc's included, is left without a name or a module. */
    CHECKF(strstr(text, "??") == NULL && strstr(text, "<unknown module>") == NULL, "%s: unnamed frames\n%s", what,
           text);
}

static void check_overflow(void)
{
    static child_result r;
    run_preloaded(overflow_program, NULL, &r);
    CHECKF(!r.exited && r.signal == SIGABRT, "overflow: expected abort, exited=%d code=%d signal=%d\n%s", r.exited,
           r.code, r.signal, r.err);
    CHECKF(strstr(r.out, "continued") == NULL, "overflow: went on after the report");
    check_overflow_report("overflow", r.err, r.out);

    /* on_error=continue, report into a file: the free is abandoned, the program goes on. */
    const char *dir = getenv("TEST_TMPDIR");
    char path[PATH_MAX], options[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/overflow-report.txt", dir ? dir : "/tmp");
    unlink(path);
    snprintf(options, sizeof options, "on_error=continue:report_path=%s", path);
    run_preloaded(overflow_program, options, &r);
    CHECKF(r.exited && r.code == 0 && strstr(r.out, "continued\n"), "continue: exited=%d code=%d signal=%d\n%s",
           r.exited, r.code, r.signal, r.err);
    CHECKF(strstr(r.err, "ERROR: rampart") == NULL, "continue: the report went to stderr\n%s", r.err);
    static char text[65536];
    int fd = open(path, O_RDONLY);
    CHECKF(fd >= 0, "continue: no report file %s", path);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : 0;
    text[n > 0 ? n : 0] = 0;
    if (fd >= 0)
        close(fd);
    check_overflow_report("continue", text, r.out);
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The leak group whose header is `header`: present once, its first frames `site` and
 * leak_everything. */
static const char *check_group(const char *text, const char *header, const char *site)
{
    const char *g = strstr(text, header);
    CHECKF(g && count_of(text, header) == 1, "no single group '%s':\n%s", header, text);
    if (!g)
        return NULL;
    parsed_frame f[2];
    const char *line = strchr(g, '\n');
    CHECKF(line && parse_frame_line(line + 1, &f[0]) && parse_frame_line(strchr(line + 1, '\n') + 1, &f[1]),
           "group '%s': no frames\n%s", header, text);
    CHECKF(strcmp(f[0].function, site) == 0 && strcmp(f[1].function, "leak_everything") == 0 &&
               strcmp(f[0].module, leak_program) == 0,
           "group '%s': frames %s, %s in %s\n%s", header, f[0].function, f[1].function, f[0].module, text);
    return g;
}

static void check_leaks(void)
{
    static child_result r;
    run_preloaded(leak_program, "leak_report=1:leak_exit_code=23", &r);
    CHECKF(r.exited && r.code == 23, "leaks: exit status %d (signal %d), expected 23\n%s", r.code, r.signal, r.err);
    CHECKF(count_of(r.err, "ERROR: rampart: detected memory leaks\n") == 1, "leaks: expected one report:\n%s", r.err);
    CHECKF(count_of(r.err, "leak of ") == 3, "leaks: expected exactly three groups:\n%s", r.err);
    const char *a = check_group(r.err, "Direct leak of 300 byte(s) in 3 object(s) allocated from:\n", "leak_site_a");
    const char *b = check_group(r.err, "Direct leak of 14 byte(s) in 2 object(s) allocated from:\n", "leak_site_b");
    const char *c = strstr(r.err, "Indirect leak of 60 byte(s) in 3 object(s) allocated from:\n");
    CHECKF(c && strstr(c, "in leak_child") && strstr(c, "in leak_site_a"), "leaks: children:\n%s", r.err);
    CHECKF(!a || !b || !c || (a < b && b < c), "leaks: not direct and largest first:\n%s", r.err);
    CHECKF(strstr(r.err, "in kept") == NULL, "leaks: a reachable block reported:\n%s", r.err);
    CHECKF(strstr(r.err, "SUMMARY: rampart: 374 byte(s) leaked in 8 allocation(s).") != NULL, "leaks: summary:\n%s",
           r.err);

    /* Without leak_report: nothing reported, the program's own exit status. */
    run_preloaded(leak_program, "leak_exit_code=23", &r);
    CHECKF(r.exited && r.code == 0 && strstr(r.err, "leak of") == NULL, "no leak_report: code %d\n%s", r.code,
           r.err);

    /* A suppression of site b in LeakSanitizer's format. */
    const char *dir = getenv("TEST_TMPDIR");
    char path[PATH_MAX], options[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/suppressions.txt", dir ? dir : "/tmp");
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("# leaks known and accepted\n\nleak:^leak_site_b$\n", f);
    fclose(f);
    snprintf(options, sizeof options, "leak_report=1:leak_exit_code=23:suppressions=%s", path);
    run_preloaded(leak_program, options, &r);
    CHECKF(r.exited && r.code == 23 && count_of(r.err, "leak of ") == 2 && strstr(r.err, "leak_site_b+") == NULL,
           "suppressed: code %d\n%s", r.code, r.err);
    CHECKF(strstr(r.err, "Suppressions used:\n  count      bytes template\n      2         14 ^leak_site_b$\n") != NULL,
           "suppressed: no table of suppressions used\n%s", r.err);
    CHECKF(strstr(r.err, "SUMMARY: rampart: 360 byte(s) leaked in 6 allocation(s).") != NULL,
           "suppressed: summary:\n%s", r.err);
}

int main(int argc, char **argv)
{
    REQUIRE(argc >= 4);
    REQUIRE(realpath(argv[1], library) && realpath(argv[2], leak_program));
    for (int i = 3; i < argc; i++) {
        REQUIRE(realpath(argv[i], overflow_program));
        check_overflow();
    }
    check_leaks();
    TEST_MAIN_END();
}
