/* RAMPART_OPTIONS parsing: every value type, warnings for unknown keys and bad values,
 * hostile input (no crash, bounded output); ',' separators and blanks; keys the flavour does
 * not use; help=1 and verbose=1 in a process of their own. */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>

#include "child_process.h"
#include "src/options.h"
#include "testing.h"

static char last[400];
static void record(const char *line, void *arg)
{
    int *n = arg;
    (*n)++;
    snprintf(last, sizeof last, "%s", line);
}

/* Lines passed to a rp_option_warn_fn, joined with ':'. */
static char joined[16384];
static void join(const char *line, void *arg)
{
    int *n = arg;
    size_t at = strlen(joined);
    snprintf(joined + at, sizeof joined - at, "%s%s", at ? ":" : "", line);
    (*n)++;
}

/* The process path: RAMPART_OPTIONS read at the first rp_options_get, help and the
 * effective values printed on stderr. */
static int child(const char *what)
{
    (void)what;
    const rp_options *o = rp_options_get();
    printf("stats=%d cache_bytes=%zu\n", o->stats, o->cache_bytes);
    return 0;
}

/* A key acted on by a part of rampart the library lacks (the malloc drop-in, the dump writer,
 * the release heap profiler) is stored and warned about once;
 * with every part, not at all. */
static void parts(void)
{
    rp_options o;
    rp_options_defaults(&o);
    int n = 0;
    CHECK(rp_options_parse_in("dump_at_exit=1:dump_interval=5:dump_at_exit=1", &o, RP_OPTIONS_RELEASE,
                              RP_OPTIONS_PART_MALLOC, record, &n) == 2);
    CHECK(o.dump_at_exit == 1 && o.dump_interval == 5);
    CHECKF(strstr(last, "dump_interval has no effect in this library: it needs the dump writer"), "%s", last);
    n = 0;
    CHECK(rp_options_parse_in("cache_bytes=64K:stats=1:profile=1", &o, RP_OPTIONS_RELEASE, RP_OPTIONS_PART_DUMP,
                              record, &n) == 3);
    CHECKF(strstr(last, "profile has no effect in this library: it needs the release heap profiler"), "%s", last);
    n = 0;
    CHECK(rp_options_parse_in("dump_on_peak=1", &o, RP_OPTIONS_RELEASE, RP_OPTIONS_PART_DUMP, record, &n) == 1);
    CHECKF(strstr(last, "needs the malloc drop-in"), "%s", last);
    /* guarded blocks are the malloc drop-in's, in both flavours: without it the keys are warned
     * about, never taken silently; with it they are taken */
    n = 0;
    CHECK(rp_options_parse_in("guard=all", &o, RP_OPTIONS_RELEASE, RP_OPTIONS_PARTS_ALL & ~RP_OPTIONS_PART_MALLOC,
                              record, &n) == 1 && o.guard == 1);
    CHECKF(strstr(last, "guard has no effect in this library: it needs the malloc drop-in"), "%s", last);
    n = 0;
    CHECK(rp_options_parse_in("guard=sample:10:guard_left=1", &o, RP_OPTIONS_DEBUG, RP_OPTIONS_PARTS_ALL, record, &n) == 0 &&
          o.guard == 10 && o.guard_left == 1);
    CHECK((rp_options_parts_linked() & RP_OPTIONS_PART_DEBUG_RUNTIME) == 0);
    /* the flavour's warning comes first, and only once */
    n = 0;
    CHECK(rp_options_parse_in("profile=1:profile=0", &o, RP_OPTIONS_DEBUG, 0, record, &n) == 1);
    CHECKF(strstr(last, "profile has no effect in the debug flavour"), "%s", last);
    n = 0;
    CHECK(rp_options_parse_in("profile=1:dump_on_peak=1:stats_json=1:cache_bytes=1M", &o, RP_OPTIONS_RELEASE,
                              RP_OPTIONS_PARTS_ALL, record, &n) == 0);
    /* this test links the heap core alone */
    CHECK(rp_options_parts_linked() == 0);
}

static void separators_and_blanks(void)
{
    rp_options o;
    rp_options_defaults(&o);
    int n = 0;
    /* ',' separates like ':'; blanks around items, keys and values go. */
    CHECK(rp_options_parse_as(" stats = 1 , cache_bytes=64K,\tarenas =3 :huge_pages= off,,", &o, RP_OPTIONS_RELEASE,
                              record, &n) == 0);
    CHECK(o.stats == 1 && o.cache_bytes == 65536 && o.arenas == 3 && o.huge_pages == 0);
    /* Blanks inside a value are kept; inside a number they are not a number. */
    CHECK(rp_options_parse_as("dump_path = /tmp/a b.%p ", &o, RP_OPTIONS_RELEASE, record, &n) == 0);
    CHECK(strcmp(o.dump_path, "/tmp/a b.%p") == 0);
    CHECK(rp_options_parse_as("arenas=1 2", &o, RP_OPTIONS_RELEASE, record, &n) == 1 && o.arenas == 3);
    /* A blank-only item is empty: nothing to say. */
    CHECK(rp_options_parse_as(" : \t ,", &o, RP_OPTIONS_RELEASE, record, &n) == 0);
}

static void flavours(void)
{
    rp_options o;
    rp_options_defaults(&o);
    int n = 0;
    /* A key the flavour does not use: stored, one warning per key however often it appears. */
    CHECK(rp_options_parse_as("poison=0:poison=1:quarantine_bytes=1M:stats=1", &o, RP_OPTIONS_RELEASE, record, &n) ==
          2);
    CHECK(o.poison == 1 && o.quarantine_bytes == (1u << 20) && strstr(last, "quarantine_bytes has no effect in the "
                                                                              "release flavour"));
    CHECK(rp_options_parse_as("poison=0:quarantine_bytes=1M", &o, RP_OPTIONS_DEBUG, record, &n) == 0);
    CHECK(rp_options_parse_as("slabs=0:cache_bytes=0:free_batch=1", &o, RP_OPTIONS_DEBUG, record, &n) == 3);
    CHECK(strstr(last, "free_batch has no effect in the debug flavour"));
    /* A bad value of such a key: both warnings. */
    CHECK(rp_options_parse_as("poison=maybe", &o, RP_OPTIONS_RELEASE, record, &n) == 2);
    CHECK(rp_options_flavour_built() == RP_OPTIONS_RELEASE);

    size_t count;
    const rp_option_doc *docs = rp_options_docs(&count);
    for (size_t i = 0; i < count; i++)
        CHECK(strcmp(docs[i].flavours, "both") == 0 || strcmp(docs[i].flavours, "debug") == 0 ||
              strcmp(docs[i].flavours, "release") == 0);
}

static void help_and_describe(void)
{
    size_t count;
    rp_options_docs(&count);
    int lines = 0;
    joined[0] = 0;
    rp_options_help(join, &lines);
    CHECK(lines == (int)count);
    CHECK(strstr(joined, "cache_bytes         size             default 1M"));
    CHECK(strstr(joined, "poison              bool             default 1                 debug"));
    CHECK(strstr(joined, "guard               off|all|sample:N default off"));
    CHECK(strstr(joined, "suppressions        path             default (none)            debug"));
    CHECK(strstr(joined, "dump_signal") && strstr(joined, "report_path") && strstr(joined, "verbose"));

    /* The effective values, written back, parse to the same options. */
    for (int flavour = RP_OPTIONS_RELEASE; flavour <= RP_OPTIONS_DEBUG; flavour++) {
        rp_options o, back;
        rp_options_defaults(&o);
        int n = 0;
        rp_options_parse_as("cache_bytes=12345:retain_bytes=3G:alloc_fill=7:dump_signal=10:report_path=/tmp/x.%p:"
                            "on_error=continue:check_interval=18446744073709551615",
                            &o, (rp_options_flavour)flavour, NULL, NULL);
        lines = 0;
        joined[0] = 0;
        rp_options_describe(&o, (rp_options_flavour)flavour, join, &lines);
        CHECK(lines > 10 && lines < (int)count);
        rp_options_defaults(&back);
        CHECK(rp_options_parse_as(joined, &back, (rp_options_flavour)flavour, record, &n) == 0);
        if (flavour == RP_OPTIONS_RELEASE) {
            CHECK(strstr(joined, "cache_bytes=12345:") && strstr(joined, "retain_bytes=3G"));
            CHECK(back.cache_bytes == 12345 && !strstr(joined, "poison="));
        } else {
            CHECK(strstr(joined, "alloc_fill=0x07") && strstr(joined, "dump_signal=SIGUSR1"));
            CHECK(back.alloc_fill == 7 && back.abort_on_error == 0 && back.check_interval == ULONG_MAX);
            CHECK(strcmp(back.report_path, "/tmp/x.%p") == 0 && !strstr(joined, "cache_bytes="));
        }
    }

    /* In a process: help=1 lists every key, verbose=1 the values in effect, on stderr. */
    child_result r;
    CHECK(run_child("child", "help=1, stats=1", &r) == 0 && r.exited && r.code == 0);
    CHECKF(strstr(r.err, "rampart: RAMPART_OPTIONS=key=value:key=value (or ','), this is the release flavour") &&
               strstr(r.err, "rampart:   quarantine_bytes    size             default ") &&
               strstr(r.out, "stats=1 cache_bytes=1048576"),
           "%s", r.err);
    CHECK(!strstr(r.err, "options in effect"));
    CHECK(run_child("child", "verbose=yes:cache_bytes=2M:poison=0", &r) == 0 && r.exited && r.code == 0);
    CHECKF(strstr(r.err, "rampart: RAMPART_OPTIONS: poison has no effect in the release flavour") &&
               strstr(r.err, "rampart: options in effect (release flavour):") &&
               strstr(r.err, "rampart:   cache_bytes=2M\n") && strstr(r.err, "rampart:   verbose=1\n") &&
               !strstr(r.err, "poison=") && !strstr(r.err, "default"),
           "%s", r.err);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child(argv[1]);
    rp_options o;
    rp_options_defaults(&o);
    CHECK(o.poison == 1 && o.abort_on_error == 1 && o.quarantine_bytes > (4u << 20) &&
          o.quarantine_bytes <= (256u << 20));
    CHECK(o.alloc_fill_max == (size_t)1 << 20);
    int n = 0;
    /* Every key of the debug flavour; cache_bytes (a release key) is stored with a warning. */
    int w = rp_options_parse_as("cache_bytes=64K:retain_bytes=1G:stats=yes:poison=off:alloc_fill=0xaa:free_fill=7:"
                                "alloc_fill_max=64K:quarantine_bytes=2M:backtrace_depth=8:check_interval=1000:"
                                "on_error=continue:leak_report=1:leak_exit_code=23:report_path=/tmp/r.%p:"
                                "dump_signal=SIGUSR2:dump_at_exit=true:dump_path=/tmp/d.%p.%n",
                                &o, RP_OPTIONS_DEBUG, record, &n);
    CHECK(w == 1 && n == 1 && strstr(last, "cache_bytes has no effect in the debug flavour"));
    CHECK(o.cache_bytes == 65536);
    CHECK(o.retain_bytes == (size_t)1 << 30);
    CHECK(o.stats == 1 && o.poison == 0);
    CHECK(o.alloc_fill == 0xaa && o.free_fill == 7 && o.alloc_fill_max == 65536);
    CHECK(o.quarantine_bytes == (2u << 20));
    CHECK(o.backtrace_depth == 8 && o.check_interval == 1000);
    CHECK(o.abort_on_error == 0 && o.leak_report == 1 && o.leak_exit_code == 23);
    CHECK(strcmp(o.report_path, "/tmp/r.%p") == 0);
    CHECK(o.dump_signal == SIGUSR2 && o.dump_at_exit == 1);
    CHECK(strcmp(o.dump_path, "/tmp/d.%p.%n") == 0);

    /* Fault signals are refused for dump_signal (a dump loop instead of a crash). */
    n = 0;
    w = rp_options_parse_as("dump_signal=SIGSEGV", &o, RP_OPTIONS_DEBUG, record, &n);
    CHECK(w == 1 && o.dump_signal == SIGUSR2);
    w = rp_options_parse_as("dump_signal=11", &o, RP_OPTIONS_DEBUG, record, &n);
    CHECKF(w == 1 && o.dump_signal == SIGUSR2 && strstr(last, "fault signal"), "%s", last);
    w = rp_options_parse_as("dump_signal=6", &o, RP_OPTIONS_DEBUG, record, &n);
    CHECK(w == 1 && o.dump_signal == SIGUSR2);

    /* Unknown key, bad values: one warning each, value unchanged, other keys still applied. */
    n = 0;
    w = rp_options_parse_as("bogus=1:stats=maybe:backtrace_depth=65:cache_bytes=12Q:on_error=explode:poison=1", &o,
                            RP_OPTIONS_RELEASE, record, &n);
    /* ... and in release, one more each for backtrace_depth, on_error and poison, keys of the
     * debug flavour. */
    CHECK(w == 8 && n == 8);
    CHECK(o.poison == 1);
    CHECK(o.stats == 1 && o.backtrace_depth == 8 && o.cache_bytes == 65536 && o.abort_on_error == 0);
    CHECK(strstr(last, "poison has no effect"));
    /* arenas: 1..64, 0 = the default. */
    rp_options m;
    rp_options_defaults(&m);
    CHECK(m.arenas == 0 && m.cache_bytes == ((size_t)1 << 20) && m.retain_bytes == ((size_t)32 << 20));
    n = 0;
    CHECK(rp_options_parse("arenas=4", &m, record, &n) == 0 && m.arenas == 4);
    CHECK(rp_options_parse("arenas=65", &m, record, &n) == 1 && m.arenas == 4 && strstr(last, "arenas"));
    CHECK(rp_options_parse("arenas=0", &m, record, &n) == 0 && m.arenas == 0);
    /* purge_delay_ms: 0 .. one hour, default 10 s. */
    CHECK(m.purge_delay_ms == 10000);
    CHECK(rp_options_parse("purge_delay_ms=0", &m, record, &n) == 0 && m.purge_delay_ms == 0);
    CHECK(rp_options_parse("purge_delay_ms=250", &m, record, &n) == 0 && m.purge_delay_ms == 250);
    CHECK(rp_options_parse("purge_delay_ms=3600001", &m, record, &n) == 1 && m.purge_delay_ms == 250 &&
          strstr(last, "purge_delay_ms"));
    CHECK(rp_options_parse("purge_delay_ms=-5", &m, record, &n) == 1 && m.purge_delay_ms == 250);
    /* mapped_block_bytes: a size, default 32M (0 = never: arena.c). */
    CHECK(m.mapped_block_bytes == (size_t)32 << 20);
    CHECK(rp_options_parse("mapped_block_bytes=4M", &m, record, &n) == 0 && m.mapped_block_bytes == (size_t)4 << 20);
    CHECK(rp_options_parse("mapped_block_bytes=0", &m, record, &n) == 0 && m.mapped_block_bytes == 0);
    CHECK(rp_options_parse("mapped_block_bytes=lots", &m, record, &n) == 1 && m.mapped_block_bytes == 0 &&
          strstr(last, "mapped_block_bytes"));
    /* suppressions: a path; guard: off, all, sample:N (its ':' is part of the value). */
    CHECK(m.suppressions[0] == 0 && m.guard == 0 && m.guard_left == 0);
    n = 0;
    CHECK(rp_options_parse_as("suppressions=/tmp/s.txt:guard=all:guard_left=1", &m, RP_OPTIONS_DEBUG, record, &n) == 0 &&
          strcmp(m.suppressions, "/tmp/s.txt") == 0 && m.guard == 1 && m.guard_left == 1);
    CHECK(rp_options_parse("guard=sample:1000:stats=1", &m, record, &n) == 0 && m.guard == 1000 && m.stats == 1);
    CHECK(rp_options_parse("guard=sample:100", &m, record, &n) == 0 && m.guard == 100);
    /* ... also with blanks around, and ',' separating the next item. */
    CHECK(rp_options_parse(" guard = sample : 7 ,stats=0", &m, record, &n) == 0 && m.guard == 7 && m.stats == 0);
    CHECK(rp_options_parse("guard=off", &m, record, &n) == 0 && m.guard == 0);
    CHECK(rp_options_parse("guard=sample:0", &m, record, &n) == 1 && m.guard == 0 && strstr(last, "guard"));
    CHECK(rp_options_parse("guard=sample", &m, record, &n) == 1 && m.guard == 0);
    CHECK(rp_options_parse("guard=sample:x:stats=0", &m, record, &n) == 1 && m.guard == 0 && m.stats == 0);
    CHECK(rp_options_parse("guard=sometimes", &m, record, &n) == 1 && m.guard == 0);
    n = 0;
    rp_options_parse_as("leak_exit_code=256", &o, RP_OPTIONS_DEBUG, record, &n);
    CHECK(n == 1 && strstr(last, "leak_exit_code") && o.leak_exit_code == 23);
    n = 0;
    rp_options_parse("nonsense", &o, record, &n);
    CHECK(n == 1 && strstr(last, "not key=value"));
    n = 0;
    rp_options_parse("retain_bytes=99999999999999999999999", &o, record, &n);
    CHECK(n == 1 && strstr(last, "retain_bytes"));
    n = 0;
    rp_options_parse("::::stats=0::", &o, record, &n);
    CHECK(n == 0 && o.stats == 0);
    CHECK(rp_options_parse(NULL, &o, record, &n) == 0);

    /* Hostile bytes: control characters are not echoed raw, nothing crashes. */
    char hostile[2048];
    for (size_t i = 0; i < sizeof hostile - 1; i++)
        hostile[i] = (char)(1 + (i * 37) % 255);
    hostile[sizeof hostile - 1] = 0;
    n = 0;
    rp_options_parse(hostile, &o, record, &n);
    CHECK(n > 0);
    for (const char *c = last; *c; c++)
        CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);

    size_t count;
    const rp_option_doc *docs = rp_options_docs(&count);
    CHECK(count >= 16 && strcmp(docs[0].name, "cache_bytes") == 0);

    separators_and_blanks();
    parts();
    flavours();
    help_and_describe();
    TEST_MAIN_END();
}
