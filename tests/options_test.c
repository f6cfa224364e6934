/* RAMPART_OPTIONS parsing: every value type, warnings for unknown keys and bad values,
 * hostile input (no crash, bounded output). */
#include <signal.h>

#include "src/options.h"
#include "testing.h"

static char last[400];
static void record(const char *line, void *arg)
{
    int *n = arg;
    (*n)++;
    snprintf(last, sizeof last, "%s", line);
}

int main(void)
{
    rp_options o;
    rp_options_defaults(&o);
    CHECK(o.poison == 1 && o.abort_on_error == 1 && o.quarantine_bytes == (4u << 20));
    CHECK(o.alloc_fill_max == (size_t)1 << 20);
    int n = 0;
    int w = rp_options_parse("cache_bytes=64K:retain_bytes=1G:stats=yes:poison=off:alloc_fill=0xaa:free_fill=7:"
                             "alloc_fill_max=64K:quarantine_bytes=2M:backtrace_depth=8:check_interval=1000:on_error=continue:"
                             "leak_report=1:leak_exit_code=23:report_path=/tmp/r.%p:dump_signal=SIGUSR2:dump_at_exit=true:"
                             "dump_path=/tmp/d.%p.%n",
                             &o, record, &n);
    CHECK(w == 0 && n == 0);
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

    /* Unknown key, bad values: one warning each, value unchanged, other keys still applied. */
    n = 0;
    w = rp_options_parse("bogus=1:stats=maybe:backtrace_depth=65:cache_bytes=12Q:on_error=explode:poison=1", &o,
                         record, &n);
    CHECK(w == 5 && n == 5);
    CHECK(o.poison == 1);
    CHECK(o.stats == 1 && o.backtrace_depth == 8 && o.cache_bytes == 65536 && o.abort_on_error == 0);
    CHECK(strstr(last, "poison") == NULL);
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
    CHECK(rp_options_parse("suppressions=/tmp/s.txt:guard=all:guard_left=1", &m, record, &n) == 0 &&
          strcmp(m.suppressions, "/tmp/s.txt") == 0 && m.guard == 1 && m.guard_left == 1);
    CHECK(rp_options_parse("guard=sample:1000:stats=1", &m, record, &n) == 0 && m.guard == 1000 && m.stats == 1);
    CHECK(rp_options_parse("guard=sample:100", &m, record, &n) == 0 && m.guard == 100);
    CHECK(rp_options_parse("guard=off", &m, record, &n) == 0 && m.guard == 0);
    CHECK(rp_options_parse("guard=sample:0", &m, record, &n) == 1 && m.guard == 0 && strstr(last, "guard"));
    CHECK(rp_options_parse("guard=sample", &m, record, &n) == 1 && m.guard == 0);
    CHECK(rp_options_parse("guard=sample:x:stats=0", &m, record, &n) == 1 && m.guard == 0 && m.stats == 0);
    CHECK(rp_options_parse("guard=sometimes", &m, record, &n) == 1 && m.guard == 0);
    n = 0;
    rp_options_parse("leak_exit_code=256", &o, record, &n);
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
    TEST_MAIN_END();
}
