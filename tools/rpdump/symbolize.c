#define _GNU_SOURCE
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "debug/dwarf_symbols.h"
#include "elf_build_id.h"

#define BATCH 256                        /* addresses per tool run */
#define MAX_OUTPUT ((size_t)16 << 20)    /* bytes of tool output read per run */
#define TOOL_SECONDS 60                  /* a tool run taking longer is killed */

extern char **environ;

enum { TOOL_NONE, TOOL_LIBDW, TOOL_LLVM, TOOL_ADDR2LINE };

typedef struct sym_entry {
    const rpd_dump *d;
    uint64_t pc;
    const rpd_mapping_info *m;
    char *function, *location;
    const char *note;
    int resolved;
} sym_entry;

struct symbolizer {
    int kind;
    char tool[4096];
    sym_entry *entries;
    size_t n, cap;
    size_t *slots; /* entry index + 1; 0 = empty */
    size_t nslots;
};

static int executable(const char *path) { return access(path, X_OK) == 0; }

/* Finds name in PATH (then /usr/bin); copies the full path into out. */
static int find_in_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n && snprintf(out, len, "%.*s/%s", (int)n, path, name) < (int)len && executable(out))
            return 1;
        path += n;
        if (*path == ':')
            path++;
    }
    return snprintf(out, len, "/usr/bin/%s", name) < (int)len && executable(out);
}

symbolizer *sym_new(const char *choice)
{
    symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!choice || !strcmp(choice, "auto") || !strcmp(choice, "libdw")) {
        /* elfutils' libdw first: the debug runtime's reports use the same symboliser
         * (debug/dwarf_symbols.h), so a frame reads the same in both. */
        rp_dwarf *probe = rp_dwarf_new();
        rp_dwarf_free(probe);
        if (probe)
            s->kind = TOOL_LIBDW;
        else if (choice && !strcmp(choice, "libdw"))
            s->kind = TOOL_NONE;
        else if (find_in_path("llvm-symbolizer", s->tool, sizeof s->tool))
            s->kind = TOOL_LLVM;
        else if (find_in_path("addr2line", s->tool, sizeof s->tool))
            s->kind = TOOL_ADDR2LINE;
    } else if (strcmp(choice, "none") != 0 && strlen(choice) < sizeof s->tool) {
        strcpy(s->tool, choice);
        s->kind = strstr(choice, "addr2line") ? TOOL_ADDR2LINE : TOOL_LLVM;
    }
    return s;
}

void sym_free(symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->entries[i].function);
        free(s->entries[i].location);
    }
    free(s->entries);
    free(s->slots);
    free(s);
}

static size_t slot_of(const rpd_dump *d, uint64_t pc, size_t nslots)
{
    uint64_t x = (pc ^ (uint64_t)(uintptr_t)d) * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 29) & (nslots - 1);
}

static sym_entry *find(const symbolizer *s, const rpd_dump *d, uint64_t pc)
{
    if (!s->nslots)
        return NULL;
    for (size_t i = slot_of(d, pc, s->nslots);; i = (i + 1) & (s->nslots - 1)) {
        size_t v = s->slots[i];
        if (!v)
            return NULL;
        if (s->entries[v - 1].d == d && s->entries[v - 1].pc == pc)
            return &s->entries[v - 1];
    }
}

static int grow(symbolizer *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    sym_entry *e = realloc(s->entries, cap * sizeof *e);
    size_t *slots = calloc(2 * cap, sizeof *slots);
    if (!e || !slots) {
        if (e)
            s->entries = e;
        free(slots);
        return -1;
    }
    s->entries = e;
    s->cap = cap;
    free(s->slots);
    s->slots = slots;
    s->nslots = 2 * cap;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = slot_of(s->entries[k].d, s->entries[k].pc, s->nslots);
        while (s->slots[i])
            i = (i + 1) & (s->nslots - 1);
        s->slots[i] = k + 1;
    }
    return 0;
}

void sym_want(symbolizer *s, const rpd_dump *d, uint64_t pc)
{
    if (!s || find(s, d, pc) || (s->n == s->cap && grow(s) != 0))
        return;
    sym_entry *e = &s->entries[s->n];
    memset(e, 0, sizeof *e);
    e->d = d;
    e->pc = pc;
    e->m = rpd_mapping_of(d, pc);
    size_t i = slot_of(d, pc, s->nslots);
    while (s->slots[i])
        i = (i + 1) & (s->nslots - 1);
    s->slots[i] = ++s->n;
}

/* ---- running the tool ------------------------------------------------------------------- */

/* Runs argv with stdout captured into *out (NUL-terminated, at most MAX_OUTPUT bytes).
 * Returns 0 if it ran to completion within TOOL_SECONDS. */
static int capture(char *const argv[], char **out)
{
    *out = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    time_t deadline = time(NULL) + TOOL_SECONDS;
    int ok = buf != NULL;
    while (ok) {
        int left = (int)(deadline - time(NULL));
        if (left <= 0) {
            ok = 0;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int ready = poll(&p, 1, left * 1000);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            ok = 0;
            break;
        }
        if (len + 1 == cap) {
            if (cap >= MAX_OUTPUT) {
                ok = 0;
                break;
            }
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                ok = 0;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fds[0], buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    if (!ok)
        kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(buf);
        return -1;
    }
    buf[len] = 0;
    *out = buf;
    return 0;
}

static char *next_line(char **p)
{
    if (!*p || !**p)
        return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    if (nl) {
        *nl = 0;
        *p = nl + 1;
    } else {
        *p = line + strlen(line);
    }
    return line;
}

/* Symbolises entries idx[0..n) (all in module m) with libdw, the module loaded at its
 * dumped load bias in a set of its own (modules of different dumps may overlap). */
static void run_batch_libdw(symbolizer *s, const rpd_mapping_info *m, const size_t *idx, size_t n)
{
    rp_dwarf *d = rp_dwarf_new();
    if (!d || rp_dwarf_add_module(d, m->path, m->m.load_bias) != 0) {
        for (size_t i = 0; i < n; i++)
            s->entries[idx[i]].note = "libdw could not read the module";
        rp_dwarf_free(d);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        sym_entry *e = &s->entries[idx[i]];
        rp_dwarf_symbol sym;
        if (rp_dwarf_lookup(d, e->pc ? e->pc - 1 : 0, &sym) != 0)
            continue;
        if (sym.function) /* without its symbol version ("@@GLIBC_2.34"), as the reports print it */
            e->function = strndup(sym.function, strcspn(sym.function, "@"));
        if (sym.file) {
            char loc[4200];
            snprintf(loc, sizeof loc, "%s:%u", sym.file, sym.line);
            e->location = strdup(loc);
        }
    }
    rp_dwarf_free(d);
}

/* Symbolises entries idx[0..n) (all in module m) with one tool run. */
static void run_batch(symbolizer *s, const rpd_mapping_info *m, const size_t *idx, size_t n)
{
    if (s->kind == TOOL_LIBDW) {
        run_batch_libdw(s, m, idx, n);
        return;
    }
    char *argv[BATCH + 8];
    char addrs[BATCH][24], obj[4200];
    size_t a = 0;
    argv[a++] = s->tool;
    if (s->kind == TOOL_LLVM) {
        snprintf(obj, sizeof obj, "--obj=%s", m->path);
        argv[a++] = obj;
        argv[a++] = "--output-style=GNU";
        argv[a++] = "--functions=linkage";
        argv[a++] = "--no-inlines";
        argv[a++] = "--demangle";
    } else {
        argv[a++] = "-f";
        argv[a++] = "-C";
        argv[a++] = "-e";
        argv[a++] = m->path;
    }
    for (size_t i = 0; i < n; i++) {
        const sym_entry *e = &s->entries[idx[i]];
        uint64_t elf = e->pc - m->m.load_bias;
        snprintf(addrs[i], sizeof addrs[i], "0x%llx", (unsigned long long)(elf ? elf - 1 : 0));
        argv[a++] = addrs[i];
    }
    argv[a] = NULL;
    char *out;
    if (capture(argv, &out) != 0) {
        for (size_t i = 0; i < n; i++)
            s->entries[idx[i]].note = "the symbolizer failed";
        return;
    }
    char *p = out;
    for (size_t i = 0; i < n; i++) {
        char *fn = next_line(&p), *loc = next_line(&p);
        sym_entry *e = &s->entries[idx[i]];
        if (!fn || !loc)
            break;
        if (strcmp(fn, "??") != 0 && *fn)
            e->function = strdup(fn);
        if (strncmp(loc, "??", 2) != 0 && *loc)
            e->location = strdup(loc);
    }
    free(out);
}

static int compare_entries(const void *a, const void *b, void *arg)
{
    const sym_entry *entries = arg;
    const sym_entry *x = &entries[*(const size_t *)a], *y = &entries[*(const size_t *)b];
    if (x->m != y->m) {
        int c = strcmp(x->m->path, y->m->path);
        if (c)
            return c;
        return x->m < y->m ? -1 : 1;
    }
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The module's file is the one that ran: regular ELF, same build-id when one was dumped. */
static const char *module_problem(const rpd_mapping_info *m)
{
    if (!m->path[0] || m->path[0] != '/')
        return "module has no file path";
    uint8_t id[RPD_MAX_BUILD_ID];
    int n = elf_read_build_id(m->path, id, sizeof id);
    if (n < 0)
        return "module file is missing or not ELF";
    if (m->m.build_id_len && (n != m->m.build_id_len || memcmp(id, m->build_id, (size_t)n) != 0))
        return "module file has another build-id";
    return NULL;
}

void sym_run(symbolizer *s)
{
    if (!s || s->kind == TOOL_NONE)
        return;
    size_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
    if (!idx)
        return;
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->entries[i].resolved && s->entries[i].m)
            idx[n++] = i;
    qsort_r(idx, n, sizeof *idx, compare_entries, s->entries);
    for (size_t i = 0; i < n;) {
        const rpd_mapping_info *m = s->entries[idx[i]].m;
        size_t j = i;
        while (j < n && s->entries[idx[j]].m == m)
            j++;
        const char *problem = module_problem(m);
        for (size_t k = i; k < j; k += BATCH) {
            size_t batch = j - k < BATCH ? j - k : BATCH;
            if (problem) {
                for (size_t q = k; q < k + batch; q++)
                    s->entries[idx[q]].note = problem;
            } else {
                run_batch(s, m, idx + k, batch);
            }
        }
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        s->entries[idx[i]].resolved = 1;
    free(idx);
}

void sym_get(symbolizer *s, const rpd_dump *d, uint64_t pc, frame_text *out)
{
    memset(out, 0, sizeof *out);
    const sym_entry *e = s ? find(s, d, pc) : NULL;
    out->module = e ? e->m : rpd_mapping_of(d, pc);
    if (out->module)
        out->offset = pc - out->module->m.load_bias;
    if (e) {
        out->function = e->function;
        out->location = e->location;
        out->note = e->note;
    }
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Prints s with bytes outside printable ASCII replaced. */
static void put_clean(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s >= 0x20 && *s < 0x7f ? *s : '?', f);
}

void sym_print_frame(FILE *f, unsigned i, uint64_t pc, const frame_text *t)
{
    fprintf(f, "#%-2u 0x%llx", i, (unsigned long long)pc);
    if (t->function) {
        fputs(" in ", f);
        put_clean(f, t->function);
    }
    if (t->location) {
        fputc(' ', f);
        put_clean(f, t->location);
    }
    if (t->module) {
        fputs(" (", f);
        put_clean(f, base_name(t->module->path));
        fprintf(f, "+0x%llx)", (unsigned long long)t->offset);
    }
    fputc('\n', f);
}

void sym_json_frame(json_out *j, uint64_t pc, const frame_text *t)
{
    json_object_compact(j);
    json_kv_hex(j, "pc", pc);
    if (t->module) {
        json_kv_string(j, "module", t->module->path);
        json_kv_hex(j, "offset", t->offset);
    }
    if (t->function)
        json_kv_string(j, "function", t->function);
    if (t->location)
        json_kv_string(j, "location", t->location);
    json_object_end(j);
}
