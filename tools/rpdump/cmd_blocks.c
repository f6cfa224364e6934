/* rpdump blocks: lists blocks, filtered by state, tier, size range and allocation site.
 * Streams: each block is printed as it is read. Every block is still read after --limit is
 * reached, to count the matches and to reject a malformed dump. */
#include "rpdump.h"
#include "text_out.h"

static int matches(const rpd_options *o, const rpd_block *b)
{
    unsigned states = o->states ? o->states
                                : STATE_BIT(RPD_STATE_USED) | STATE_BIT(RPD_STATE_FREE) | STATE_BIT(RPD_STATE_QUARANTINED);
    if (!(states & STATE_BIT(b->state)))
        return 0;
    if (o->tiers && !(o->tiers & (1u << b->tier)))
        return 0;
    if (b->size < o->min_size || (o->max_size && b->size > o->max_size))
        return 0;
    return !o->have_site || b->alloc_stack == o->site;
}

static void json_block(json_out *j, const rpd_dump *d, const rpd_heap_info *h, const rpd_block *b)
{
    json_object_compact(j);
    json_kv_string(j, "heap", h->rec.name);
    json_kv_hex(j, "address", b->addr);
    json_kv_u64(j, "size", b->size);
    json_kv_string(j, "state", rpd_state_name(b->state));
    json_kv_string(j, "tier", rpd_tier_name(b->tier));
    json_kv_hex(j, "block", b->block);
    json_kv_u64(j, "block_size", b->block_size);
    json_kv_u64(j, "region", b->region);
    if (b->state == RPD_STATE_USED || b->state == RPD_STATE_QUARANTINED) {
        json_kv_u64(j, "align", (uint64_t)1 << b->align_log2);
        if (rpd_is_debug(d)) {
            json_kv_u64(j, "requested", b->requested);
            json_kv_u64(j, "alloc_stack", b->alloc_stack);
            json_kv_u64(j, "free_stack", b->free_stack);
        }
    }
    if (b->flags & RPD_BLOCK_DECOMMITTED)
        json_kv_bool(j, "decommitted", 1);
    if (b->flags & RPD_BLOCK_SPARE_SPAN)
        json_kv_bool(j, "spare_span", 1);
    json_object_end(j);
}

static void text_block(FILE *f, const rpd_dump *d, const rpd_heap_info *h, const rpd_block *b)
{
    char name[RPD_NAME_BYTES];
    fprintf(f, "%-12s 0x%-14llx %12llu  %-11s %-4s block 0x%llx +%llu", text_clean(name, sizeof name, h->rec.name),
            (unsigned long long)b->addr, (unsigned long long)b->size, rpd_state_name(b->state), rpd_tier_name(b->tier),
            (unsigned long long)b->block, (unsigned long long)b->block_size);
    if ((b->state == RPD_STATE_USED || b->state == RPD_STATE_QUARANTINED) && rpd_is_debug(d)) {
        fprintf(f, "  requested %llu  stack %u", (unsigned long long)b->requested, b->alloc_stack);
        if (b->free_stack)
            fprintf(f, "  freed by %u", b->free_stack);
    }
    if (b->flags & RPD_BLOCK_DECOMMITTED)
        fprintf(f, "  (returned to the OS)");
    if (b->flags & RPD_BLOCK_SPARE_SPAN)
        fprintf(f, "  (spare span)");
    fputc('\n', f);
}

int cmd_blocks(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    json_out j;
    if (o->json) {
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_key(&j, "blocks");
        json_array(&j);
    } else {
        printf("%-12s %-16s %12s  %-11s %-4s\n", "heap", "address", "size", "state", "tier");
    }
    uint64_t matched = 0, shown = 0;
    rpd_block_iter *it = rpd_alloc(d, sizeof *it, d->footer.table_offset, &err);
    int rc = it ? 0 : -1;
    for (size_t i = 0; i < d->nheaps && rc == 0; i++) {
        const rpd_heap_info *h = &d->heaps[i];
        if (!rpd_heap_selected(o, h))
            continue;
        rpd_blocks_begin(it, d, h);
        rpd_block_at ba;
        while ((rc = rpd_blocks_next(it, &ba, &err)) == 1) {
            if (!matches(o, &ba.b))
                continue;
            matched++;
            if (o->limit && shown >= o->limit)
                continue;
            shown++;
            if (o->json)
                json_block(&j, d, h, &ba.b);
            else
                text_block(stdout, d, h, &ba.b);
        }
    }
    rpd_free(d, it, sizeof *it);
    if (o->json) {
        json_array_end(&j);
        json_kv_u64(&j, "matched", matched);
        json_kv_u64(&j, "shown", shown);
        if (rc < 0)
            return rpd_report_error_in_json(&j, in->path, &err);
        json_object_end(&j);
        json_finish(&j);
    } else if (rc < 0) {
        return rpd_report_error(o, in->path, &err);
    } else {
        printf("%llu blocks matched, %llu shown\n", (unsigned long long)matched, (unsigned long long)shown);
    }
    return RPDUMP_OK;
}
