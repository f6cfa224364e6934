/* rpdump: inspects rampart heap dumps (debug/DUMP_FORMAT.md). Argument parsing, opening the
 * dumps, error reporting; each subcommand lives in its own cmd_*.c file. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "rpdump.h"
#include "text_out.h"

static const char usage_text[] =
    "usage: rpdump COMMAND [options] DUMP\n"
    "       rpdump diff [options] DUMP_A DUMP_B\n"
    "       rpdump timeline [options] DUMP...\n"
    "\n"
    "commands:\n"
    "  summary   totals, per-region use, free-space classes, fragmentation, quarantine\n"
    "  blocks    list blocks: --state used|free|quarantined|span|all[,..]  --tier span|page\n"
    "            --min-size N  --max-size N  --site STACK_ID  --limit N\n"
    "  sites     allocation sites (stacks) by live bytes and blocks: --state used|quarantined|live\n"
    "            --limit N (default 20)  --frames N (default 8)  --symbolizer auto|none|PATH\n"
    "            --folded: folded stacks (flamegraph.pl, speedscope) instead\n"
    "  flame     icicle graph of live bytes by stack: -o FILE.svg (required)  --width PX (1200)\n"
    "            --state  --symbolizer\n"
    "  pprof     heap profile for gperftools' pprof, to stdout or -o FILE: --symbols (names\n"
    "            inside: pprof needs no binary)  --state  --symbolizer\n"
    "  diff      what grew from DUMP_A to DUMP_B, by site: --all (shrinking too)  --limit N\n"
    "            --frames N  --symbolizer auto|none|PATH\n"
    "  timeline  live bytes, peak and the sites that grew most over a series of dumps:\n"
    "            -o FILE.svg (a chart)  --width PX (900)  --limit N (sites, default 5)\n"
    "            --state  --frames N  --symbolizer\n"
    "  check     verify the heap invariants on the dump: --max-errors N (default 100)\n"
    "  map       draw each region by address: -o FILE.svg (required)  --width PX (default 1024)\n"
    "\n"
    "sites, flame, pprof, diff and timeline count sites from the blocks (exact; debug dumps) or\n"
    "from the heap profiler's samples (estimates; release dumps with profiling on): --from\n"
    "blocks|samples (default: samples when a release dump has them).\n"
    "\n"
    "options for every command:\n"
    "  --json          machine-readable output (field names in tools/rpdump/README.md)\n"
    "  --heap NAME     only the heap with this name\n"
    "  --memory-cap N  refuse dumps that need more than N bytes of memory (default 1G)\n"
    "relative paths are the caller's directory's, also under bazel run.\n"
    "\n"
    "sizes take K, M, G suffixes. exit status: 0 ok, 1 check found violations,\n"
    "2 malformed or unreadable dump, 64 usage error.\n";

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "rpdump: %s\n", why);
    fputs(usage_text, stderr);
    return RPDUMP_USAGE;
}

/* Strict unsigned number with an optional K/M/G suffix. */
static int parse_number(const char *s, uint64_t *out)
{
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'm' || *end == 'M')
        shift = 20, end++;
    else if (*end == 'g' || *end == 'G')
        shift = 30, end++;
    if (*end || (shift && v > (~0ull >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_states(const char *s, unsigned *mask)
{
    *mask = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 4 && !strncmp(s, "used", 4))
            *mask |= STATE_BIT(RPD_STATE_USED);
        else if (n == 4 && !strncmp(s, "free", 4))
            *mask |= STATE_BIT(RPD_STATE_FREE);
        else if (n == 11 && !strncmp(s, "quarantined", 11))
            *mask |= STATE_BIT(RPD_STATE_QUARANTINED);
        else if (n == 4 && !strncmp(s, "span", 4))
            *mask |= STATE_BIT(RPD_STATE_SPAN);
        else if (n == 4 && !strncmp(s, "live", 4))
            *mask |= STATE_BIT(RPD_STATE_USED) | STATE_BIT(RPD_STATE_QUARANTINED);
        else if (n == 3 && !strncmp(s, "all", 3))
            *mask |= STATE_BIT(RPD_STATE_USED) | STATE_BIT(RPD_STATE_FREE) | STATE_BIT(RPD_STATE_QUARANTINED) |
                     STATE_BIT(RPD_STATE_SPAN);
        else
            return -1;
        s += n;
        if (*s == ',')
            s++;
    }
    return *mask ? 0 : -1;
}

static int open_input(rpd_input *in, const char *path, const rpd_options *o)
{
    in->path = path;
    rpd_error err = {0, ""};
    if (rpd_source_file(&in->src, path, &err) != 0) {
        memset(&in->dump, 0, sizeof in->dump);
        return rpd_report_error(o, path, &err);
    }
    if (rpd_open(&in->dump, &in->src, o->mem_cap, &err) != 0)
        return rpd_report_error(o, path, &err);
    if (o->heap && !rpd_heap_named(&in->dump, o->heap)) {
        char clean[64];
        fprintf(stderr, "rpdump: %s: no heap named '%s'\n", path, text_clean(clean, sizeof clean, o->heap));
        return RPDUMP_USAGE;
    }
    return RPDUMP_OK;
}

static void close_input(rpd_input *in)
{
    rpd_close(&in->dump);
    rpd_source_close(&in->src);
}

/* Options that take a value: returns the value or NULL (usage error). */
static const char *value_of(int argc, char **argv, int *i)
{
    char *eq = strchr(argv[*i], '=');
    if (eq && argv[*i][1] == '-')
        return eq + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static int option_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* Lets a timeline open as many dumps as it is given: the soft limit on open files up to the
 * hard one. */
static void allow_open_files(size_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < n + 32) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > n + 32 ? n + 32 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(NULL);
    rpd_options o;
    rpd_options_init(&o);
    const char *command = NULL;
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files)
        return usage("out of memory");
    size_t nfiles = 0;
    int limit_given = 0, width_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        uint64_t n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return RPDUMP_OK;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--all")) {
            o.all = 1;
        } else if (!strcmp(a, "--folded")) {
            o.folded = 1;
        } else if (!strcmp(a, "--symbols")) {
            o.symbols = 1;
        } else if (option_is(a, "--heap")) {
            if (!(o.heap = value_of(argc, argv, &i)))
                return usage("--heap needs a name");
        } else if (option_is(a, "--limit")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &o.limit))
                return usage("--limit needs a number");
            limit_given = 1;
        } else if (option_is(a, "--state")) {
            if (!(v = value_of(argc, argv, &i)) || parse_states(v, &o.states))
                return usage("--state takes used, free, quarantined, span, live or all (comma-separated)");
        } else if (option_is(a, "--tier")) {
            if (!(v = value_of(argc, argv, &i)))
                return usage("--tier takes span or page");
            if (!strcmp(v, "span"))
                o.tiers = 1u << RPD_TIER_SPAN;
            else if (!strcmp(v, "page"))
                o.tiers = 1u << RPD_TIER_PAGE;
            else
                return usage("--tier takes span or page");
        } else if (option_is(a, "--min-size")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &o.min_size))
                return usage("--min-size needs a size");
        } else if (option_is(a, "--max-size")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &o.max_size))
                return usage("--max-size needs a size");
        } else if (option_is(a, "--site")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &n) || n > UINT32_MAX)
                return usage("--site needs a stack id (as printed by rpdump sites)");
            o.have_site = 1;
            o.site = (uint32_t)n;
        } else if (option_is(a, "--frames")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &n) || n > RPD_MAX_FRAMES)
                return usage("--frames needs a number from 0 to 64");
            o.frames = (unsigned)n;
        } else if (option_is(a, "--from")) {
            if (!(v = value_of(argc, argv, &i)))
                return usage("--from takes blocks or samples");
            if (!strcmp(v, "blocks"))
                o.from = RPD_FROM_BLOCKS;
            else if (!strcmp(v, "samples"))
                o.from = RPD_FROM_SAMPLES;
            else
                return usage("--from takes blocks or samples");
        } else if (option_is(a, "--symbolizer")) {
            if (!(o.symbolizer = value_of(argc, argv, &i)))
                return usage("--symbolizer takes auto, none or a path");
        } else if (!strcmp(a, "-o") || option_is(a, "--output")) {
            if (!(o.output = value_of(argc, argv, &i)))
                return usage("-o needs a file name");
        } else if (option_is(a, "--width")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &n) || n < 64 || n > 8192)
                return usage("--width takes 64 to 8192 pixels");
            o.width = (unsigned)n;
            width_given = 1;
        } else if (option_is(a, "--max-errors")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &o.max_errors))
                return usage("--max-errors needs a number");
        } else if (option_is(a, "--memory-cap")) {
            if (!(v = value_of(argc, argv, &i)) || parse_number(v, &n) || n < ((uint64_t)1 << 20) ||
                n > ((uint64_t)1 << 40))
                return usage("--memory-cap takes 1M to 1T bytes");
            o.mem_cap = (size_t)n;
        } else if (a[0] == '-' && a[1]) {
            char clean[64];
            fprintf(stderr, "rpdump: unknown option '%s'\n", text_clean(clean, sizeof clean, a));
            return usage(NULL);
        } else if (!command) {
            command = a;
        } else {
            files[nfiles++] = a;
        }
    }
    if (!command)
        return usage("no command");
    static const char *const commands[] = {"summary", "blocks", "sites", "diff",  "check",
                                           "map",     "flame",  "pprof", "timeline"};
    int known = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        known |= !strcmp(command, commands[i]);
    if (!known)
        return usage("unknown command");
    int is_diff = !strcmp(command, "diff"), is_timeline = !strcmp(command, "timeline");
    if (is_timeline ? nfiles < 1 : nfiles != (is_diff ? 2u : 1u))
        return usage(is_diff ? "diff needs two dumps" : is_timeline ? "timeline needs dumps" : "one dump expected");
    if (nfiles > RPD_MAX_TIMELINE)
        return usage("timeline takes at most 65536 dumps");
    if (!strcmp(command, "sites") && !limit_given)
        o.limit = 20;
    if (is_timeline && !limit_given)
        o.limit = 5;
    if ((!strcmp(command, "map") || !strcmp(command, "flame")) && !o.output)
        return usage(!strcmp(command, "map") ? "map needs -o FILE.svg" : "flame needs -o FILE.svg");
    if (o.folded && (strcmp(command, "sites") != 0 || o.json))
        return usage("--folded is an output format of sites, without --json");
    if (o.symbols && strcmp(command, "pprof") != 0)
        return usage("--symbols is an option of pprof");
    if (!strcmp(command, "pprof") && o.json && !o.output)
        return usage("pprof --json needs -o FILE: the profile goes to the file, the JSON to stdout");
    if (!width_given)
        o.width = !strcmp(command, "flame") ? 1200 : is_timeline ? 900 : 1024;
    char **owned = calloc(nfiles + 1, sizeof *owned); /* paths made absolute */
    if (!owned)
        return usage("out of memory");
    if (o.output && (owned[nfiles] = rpd_caller_path(o.output)))
        o.output = owned[nfiles];
    for (size_t i = 0; i < nfiles; i++)
        if ((owned[i] = rpd_caller_path(files[i])))
            files[i] = owned[i];

    if (nfiles > 2)
        allow_open_files(nfiles);
    rpd_input *inputs = calloc(nfiles, sizeof *inputs);
    if (!inputs)
        return usage("out of memory");
    size_t opened = 0;
    int rc = RPDUMP_OK;
    for (size_t i = 0; i < nfiles && rc == RPDUMP_OK; i++, opened++)
        rc = open_input(&inputs[i], files[i], &o);
    if (rc == RPDUMP_OK) {
        if (!strcmp(command, "summary"))
            rc = cmd_summary(&inputs[0], &o);
        else if (!strcmp(command, "blocks"))
            rc = cmd_blocks(&inputs[0], &o);
        else if (!strcmp(command, "sites"))
            rc = cmd_sites(&inputs[0], &o);
        else if (is_diff)
            rc = cmd_diff(&inputs[0], &inputs[1], &o);
        else if (!strcmp(command, "check"))
            rc = cmd_check(&inputs[0], &o);
        else if (!strcmp(command, "flame"))
            rc = cmd_flame(&inputs[0], &o);
        else if (!strcmp(command, "pprof"))
            rc = cmd_pprof(&inputs[0], &o);
        else if (is_timeline)
            rc = cmd_timeline(inputs, nfiles, &o);
        else
            rc = cmd_map(&inputs[0], &o);
    }
    for (size_t i = 0; i < opened; i++)
        close_input(&inputs[i]);
    free(inputs);
    free(files);
    for (size_t i = 0; i <= nfiles; i++)
        free(owned[i]);
    free(owned);
    if (fflush(stdout) != 0 && rc == RPDUMP_OK) {
        fprintf(stderr, "rpdump: writing the output failed: %s\n", strerror(errno));
        rc = RPDUMP_BAD_DUMP;
    }
    return rc;
}
