/* dump_parser: arbitrary bytes into rpdump's reader (tools/rpdump: dump_parser.c,
 * parse_buffer.c, dump_check.c) and, for every dump it accepts, into the subcommands
 * themselves (summary, blocks, sites, sites --folded and --from samples, check, diff,
 * pprof, timeline, map, flame; text and --json), in process.
 *
 * Each input is parsed as given, then as a copy whose checksums dump_repair.h rewrites, so
 * mutations of real dumps get past the CRCs to the checks behind them.
 *
 * Expectations. The reader never crashes, hangs or allocates beyond its memory cap (the
 * sanitizers and libFuzzer's limits watch the first three; rpd_dump.mem_used the last). A
 * refused dump comes with an error that names an offset inside the input and a one-line,
 * printable message, and refusing it again gives the same error. An accepted dump:
 *   - loses its acceptance when its last byte is cut off (the footer must say the size);
 *   - opens with rpd_open, and every subcommand reads it without a malformed-dump error
 *     (parse_buffer has read every record already), check finding violations exactly when
 *     parse_buffer counted some, diff of the dump against itself finding nothing grown;
 *   - the commands' output, text or JSON, carries no control character from the dump (names
 *     and paths are hostile: they must be cleaned or escaped, not sent to a terminal).
 * Symbolisation is off (--symbolizer none: no subprocess); map, flame and timeline write
 * their SVGs to /dev/null;
 * standard output goes to a checking sink for the duration.
 * A violated expectation prints what and where, then aborts: libFuzzer records the input. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/dump_repair.h"
#include "fuzz/expect.h"
#include "tools/rpdump/dump_parser.h"
#include "tools/rpdump/rpdump.h"

#define MEM_CAP ((size_t)64 << 20)
#define BLOCK_ROWS 256 /* rows `blocks` prints at most (a dump may hold millions) */

static const char *pass_name = "-";

static void where(FILE *out) { fprintf(out, "dump_parser (%s): ", pass_name); }

/* ---- standard output, checked and discarded ---------------------------------------------- */

static struct {
    size_t bytes;
    long bad_at; /* offset of the first control character, or -1 */
    unsigned char bad;
} out;

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    for (size_t i = 0; i < n && out.bad_at < 0; i++) {
        unsigned char c = (unsigned char)buf[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            out.bad_at = (long)(out.bytes + i);
            out.bad = c;
        }
    }
    out.bytes += n;
    return (ssize_t)n;
}

static FILE *sink(void)
{
    static FILE *f;
    if (!f) {
        cookie_io_functions_t io = {.write = sink_write};
        f = fopencookie(NULL, "w", io);
        EXPECT(f, "fopencookie failed");
    }
    return f;
}

/* ---- the commands ------------------------------------------------------------------------ */

/* A command's exit status on an accepted dump: anything but a malformed-dump or usage error,
 * and its output clean. */
static void expect_command(int rc, const char *command, int json)
{
    fflush(stdout);
    EXPECT(rc == RPDUMP_OK || rc == RPDUMP_FOUND, "rpdump %s%s on a dump the parser accepted exits %d", command,
           json ? " --json" : "", rc);
    EXPECT(out.bad_at < 0, "rpdump %s%s prints control character 0x%02x at byte %ld of its output", command,
           json ? " --json" : "", out.bad, out.bad_at);
}

/* Every command, text and JSON; the pictures (map's pixel work does not depend on the
 * dump's bytes, and costs most) once, at their narrowest. */
static void run_commands(rpd_input *in, const char *heap, size_t violations)
{
    rpd_options o;
    rpd_options_init(&o);
    o.symbolizer = "none";
    o.width = 64;
    o.mem_cap = MEM_CAP;
    o.heap = heap;
    for (int json = 0; json < 2; json++) {
        o.json = json;
        expect_command(cmd_summary(in, &o), "summary", json);
        o.limit = BLOCK_ROWS;
        expect_command(cmd_blocks(in, &o), "blocks", json);
        o.limit = 20;
        expect_command(cmd_sites(in, &o), "sites", json);
        o.from = RPD_FROM_SAMPLES; /* the heap profiler's samples, whatever the flavour */
        expect_command(cmd_sites(in, &o), "sites --from samples", json);
        o.from = RPD_FROM_AUTO;
        o.limit = 0;
        int rc = cmd_check(in, &o);
        expect_command(rc, "check", json);
        EXPECT(heap || (rc == RPDUMP_FOUND) == (violations > 0), "rpdump check exits %d, the parser counted %zu violations",
               rc, violations);
        expect_command(cmd_diff(in, in, &o), "diff", json);
        rpd_input twice[2];
        memcpy(&twice[0], in, sizeof *in);
        memcpy(&twice[1], in, sizeof *in);
        o.limit = 5;
        expect_command(cmd_timeline(twice, 2, &o), "timeline", json);
        o.limit = 0;
        if (!json) {
            o.folded = 1;
            expect_command(cmd_sites(in, &o), "sites --folded", json);
            o.folded = 0;
            for (o.symbols = 0; o.symbols < 2; o.symbols++)
                expect_command(cmd_pprof(in, &o), o.symbols ? "pprof --symbols" : "pprof", json);
            o.symbols = 0;
        }
    }
    if (!heap) {
        o.json = 0;
        o.output = "/dev/null";
        expect_command(cmd_map(in, &o), "map", 0);
        expect_command(cmd_flame(in, &o), "flame", 0);
        expect_command(cmd_timeline(in, 1, &o), "timeline -o", 0);
    }
}

/* Opens the accepted dump again the way rpdump does and runs every command over it, once
 * over all heaps and once for its first heap (--heap). */
static void commands_on(const uint8_t *buf, size_t len, size_t violations)
{
    rpd_input in;
    memset(&in, 0, sizeof in);
    in.path = "fuzz-input";
    rpd_source_memory(&in.src, buf, len);
    rpd_error err = {0, ""};
    int rc = rpd_open(&in.dump, &in.src, MEM_CAP, &err);
    EXPECT(rc == 0, "rpd_open refuses a dump rpd_parse_buffer accepted: offset %llu: %s",
           (unsigned long long)err.offset, err.message);
    FILE *saved = stdout;
    out.bytes = 0;
    out.bad_at = -1;
    stdout = sink();
    run_commands(&in, NULL, violations);
    if (in.dump.nheaps)
        run_commands(&in, in.dump.heaps[0].rec.name, violations);
    fflush(stdout);
    stdout = saved;
    EXPECT(in.dump.mem_used <= MEM_CAP, "the reader holds %zu bytes, above its cap of %zu", in.dump.mem_used,
           MEM_CAP);
    rpd_close(&in.dump);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static void expect_good_error(const rpd_error *err, size_t len)
{
    EXPECT(err->offset <= len, "error at offset %llu, past the end of the %zu-byte input: %s",
           (unsigned long long)err->offset, len, err->message);
    EXPECT(err->message[0], "an error without a message (offset %llu)", (unsigned long long)err->offset);
    for (const char *c = err->message; *c; c++)
        EXPECT((unsigned char)*c >= 0x20 && *c != 0x7f, "the error message has control character 0x%02x: %s",
               (unsigned char)*c, err->message);
}

static void parse(const uint8_t *buf, size_t len)
{
    rpd_error err = {0, ""};
    size_t violations = 0;
    int rc = rpd_parse_buffer(buf, len, MEM_CAP, &violations, &err);
    if (rc != 0) {
        EXPECT(rc == -1, "rpd_parse_buffer returned %d", rc);
        expect_good_error(&err, len);
        rpd_error again = {0, ""};
        EXPECT(rpd_parse_buffer(buf, len, MEM_CAP, NULL, &again) == -1 && again.offset == err.offset &&
                   strcmp(again.message, err.message) == 0,
               "refused twice with different errors: offset %llu \"%s\", then offset %llu \"%s\"",
               (unsigned long long)err.offset, err.message, (unsigned long long)again.offset, again.message);
        return;
    }
    EXPECT(len > 0, "an empty input was accepted");
    rpd_error cut = {0, ""};
    EXPECT(rpd_parse_buffer(buf, len - 1, MEM_CAP, NULL, &cut) == -1, "the dump is still accepted without its last byte");
    expect_good_error(&cut, len - 1);
    commands_on(buf, len, violations);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    expect_context(where, NULL);
    pass_name = "as given";
    parse(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    EXPECT(copy, "out of memory");
    memcpy(copy, data, size);
    if (dump_repair_checksums(copy, size)) {
        pass_name = "checksums repaired";
        parse(copy, size);
    }
    free(copy);
    return 0;
}
