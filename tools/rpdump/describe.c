/* What every rpdump command prints the same way: a malformed dump's error (text, and JSON
 * with --json) and the description of a dump. Declared in rpdump.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>

#include "rpdump.h"
#include "text_out.h"

static void print_error(const char *path, const rpd_error *err)
{
    char clean[512];
    fprintf(stderr, "rpdump: %s: offset %llu (0x%llx): %s\n", text_clean(clean, sizeof clean, path),
            (unsigned long long)err->offset, (unsigned long long)err->offset, err->message);
}

static void json_error_member(json_out *j, const char *path, const rpd_error *err)
{
    json_key(j, "error");
    json_object_compact(j);
    json_kv_string(j, "file", path);
    json_kv_u64(j, "offset", err->offset);
    json_kv_string(j, "message", err->message);
    json_object_end(j);
}

int rpd_report_error(const rpd_options *o, const char *path, const rpd_error *err)
{
    print_error(path, err);
    if (o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        json_error_member(&j, path, err);
        json_object_end(&j);
        json_finish(&j);
    }
    return RPDUMP_BAD_DUMP;
}

int rpd_report_error_in_json(json_out *j, const char *path, const rpd_error *err)
{
    print_error(path, err);
    json_error_member(j, path, err);
    json_object_end(j);
    json_finish(j);
    return RPDUMP_BAD_DUMP;
}

static const char *flavour_name(const rpd_dump *d) { return rpd_is_debug(d) ? "debug" : "release"; }

void rpd_json_dump_info(json_out *j, const rpd_dump *d, const char *path)
{
    json_kv_string(j, "file", path);
    json_kv_string(j, "format", "rampart-dump");
    char version[32];
    snprintf(version, sizeof version, "%u.%u", d->header.major, d->header.minor);
    json_kv_string(j, "version", version);
    json_kv_string(j, "flavour", flavour_name(d));
    json_kv_u64(j, "pid", d->process.pid);
    json_kv_u64(j, "time", d->process.time);
    json_key(j, "time_ns");
    if (d->process.time_ns == RPD_UNRECORDED_NS)
        json_null(j);
    else
        json_u64(j, d->process.time_ns);
    json_kv_string(j, "reason", rpd_reason_name(d->process.reason));
    json_kv_u64(j, "sequence", d->process.sequence);
    json_kv_string(j, "executable", d->process.exe);
}

void rpd_text_dump_info(FILE *f, const rpd_dump *d, const char *path)
{
    char clean[512], exe[RPD_EXE_BYTES], when[64] = "?";
    time_t t = (time_t)d->process.time;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(f, "%s: rampart dump %u.%u, %s flavour, pid %llu (%s), %s, reason: %s", text_clean(clean, sizeof clean, path),
            d->header.major, d->header.minor, flavour_name(d), (unsigned long long)d->process.pid,
            text_clean(exe, sizeof exe, d->process.exe), when, rpd_reason_name(d->process.reason));
    if (d->process.reason != RPD_REASON_CALL)
        fprintf(f, " (dump #%llu)", (unsigned long long)d->process.sequence);
    fprintf(f, ", %zu heap%s\n", d->nheaps, d->nheaps == 1 ? "" : "s");
}

void rpd_json_begin(json_out *j, const rpd_dump *d, const char *path)
{
    json_init(j, stdout);
    json_object(j);
    rpd_json_dump_info(j, d, path);
}

void rpd_json_program_check(json_out *j, int same_program, const char *warning)
{
    json_kv_bool(j, "same_program", same_program);
    json_key(j, "warnings");
    json_array_compact(j);
    if (warning && warning[0])
        json_string(j, warning);
    json_array_end(j);
}
