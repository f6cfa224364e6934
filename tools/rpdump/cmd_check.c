/* rpdump check: the heap invariants of dump_check.h, verified on the dump. Exit status 1
 * when any is violated. */
#include "dump_check.h"
#include "rpdump.h"
#include "text_out.h"

typedef struct reporter {
    const rpd_options *o;
    json_out *j;
} reporter;

static void report(const rpd_violation *v, void *arg)
{
    reporter *r = arg;
    if (r->o->json) {
        json_object_compact(r->j);
        json_kv_string(r->j, "invariant", v->invariant);
        json_kv_string(r->j, "heap", v->heap);
        json_kv_u64(r->j, "offset", v->offset);
        json_kv_string(r->j, "message", v->message);
        json_object_end(r->j);
    } else {
        char name[RPD_NAME_BYTES];
        printf("%s: heap '%s', offset %llu (0x%llx): %s\n", v->invariant, text_clean(name, sizeof name, v->heap),
               (unsigned long long)v->offset, (unsigned long long)v->offset, v->message);
    }
}

int cmd_check(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    const rpd_heap_info *only = o->heap ? rpd_heap_named(d, o->heap) : NULL;
    json_out j;
    reporter r = {o, &j};
    if (o->json) {
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_key(&j, "violations");
        json_array(&j);
    }
    long found = rpd_check(d, only, report, &r, (size_t)o->max_errors, &err);
    uint64_t blocks = 0;
    for (size_t i = 0; i < d->nheaps; i++)
        if (!only || only == &d->heaps[i])
            blocks += d->heaps[i].blocks_sec->count;
    if (o->json) {
        json_array_end(&j);
        json_kv_u64(&j, "records_checked", blocks);
        if (found < 0)
            return rpd_report_error_in_json(&j, in->path, &err);
        json_kv_bool(&j, "ok", found == 0);
        json_kv_u64(&j, "violation_count", (uint64_t)found);
        json_object_end(&j);
        json_finish(&j);
    } else if (found < 0) {
        return rpd_report_error(o, in->path, &err);
    } else {
        if (found == 0)
            printf("ok: every invariant holds over %llu block records in %zu heap%s\n", (unsigned long long)blocks,
                   only ? (size_t)1 : d->nheaps, (only ? 1 : d->nheaps) == 1 ? "" : "s");
        else
            printf("%ld violation%s%s\n", found, found == 1 ? "" : "s",
                   o->max_errors && (uint64_t)found > o->max_errors ? " (only the first ones are shown)" : "");
    }
    return found ? RPDUMP_FOUND : RPDUMP_OK;
}
