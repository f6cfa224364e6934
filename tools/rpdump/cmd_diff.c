/* rpdump diff A B: what grew between two dumps, by allocation site.
 *
 * Stack ids are only meaningful inside one process, and addresses move with ASLR, so sites
 * are matched by their frames normalised to (module, offset in the module): a module is
 * identified by its build-id (or its path when it has none), the offset is pc - load bias.
 * Two dumps of the same program, from one run or two, then agree on every site.
 * Memory: one group per distinct normalised stack of A and B, never per block. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "sites.h"
#include "text_out.h"

typedef struct norm_frame {
    uint64_t module; /* 0 = in no dumped mapping (offset is then the pc); 64 bits: no padding,
                        so frames compare with memcmp */
    uint64_t offset;
} norm_frame;

typedef struct group {
    size_t first;         /* index of its first frame in the frame arena */
    unsigned nframes;
    int dump;             /* 0 = A, 1 = B: where its frames can be printed from */
    size_t stack;         /* stack index in that dump's table */
    site_stats stats[2];
} group;

typedef struct differ {
    rpd_input *in[2];
    rpd_stack_table stacks[2];
    /* modules: identity strings, deduplicated */
    char **module_keys;
    size_t nmodules;
    uint32_t *module_of_mapping[2];
    /* groups: the two special sites, then one per distinct normalised stack */
    group *groups;
    size_t ngroups, group_cap;
    norm_frame *frames;
    size_t nframes, frame_cap;
    size_t *slots; /* group index + 1 */
    size_t nslots;
    size_t *group_of_stack[2];
} differ;

/* A mapping's identity: its build-id in hex, or its path. */
static char *module_key(const rpd_mapping_info *m)
{
    size_t n = m->m.build_id_len ? 4 + 2 * (size_t)m->m.build_id_len + 1 : 5 + strlen(m->path) + 1;
    char *k = malloc(n);
    if (!k)
        return NULL;
    if (m->m.build_id_len) {
        memcpy(k, "bid:", 4);
        for (unsigned i = 0; i < m->m.build_id_len; i++)
            snprintf(k + 4 + 2 * i, 3, "%02x", m->build_id[i]);
    } else {
        snprintf(k, n, "path:%s", m->path);
    }
    return k;
}

static uint64_t hash_string(const char *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 0x100000001b3ull;
    return h;
}

/* Gives every mapping of A and B a module number (1..): equal identities, equal numbers. */
static int assign_modules(differ *df)
{
    size_t total = df->in[0]->dump.nmappings + df->in[1]->dump.nmappings;
    size_t nslots = 16;
    while (nslots < 2 * total)
        nslots <<= 1;
    size_t *slots = calloc(nslots, sizeof *slots); /* module number; 0 = empty */
    df->module_keys = calloc(total + 1, sizeof *df->module_keys);
    if (!slots || !df->module_keys) {
        free(slots);
        return -1;
    }
    for (int x = 0; x < 2; x++) {
        const rpd_dump *d = &df->in[x]->dump;
        df->module_of_mapping[x] = calloc(d->nmappings + 1, sizeof(uint32_t));
        if (!df->module_of_mapping[x]) {
            free(slots);
            return -1;
        }
        for (size_t i = 0; i < d->nmappings; i++) {
            char *k = module_key(&d->mappings[i]);
            if (!k) {
                free(slots);
                return -1;
            }
            size_t slot = (size_t)hash_string(k) & (nslots - 1);
            while (slots[slot] && strcmp(df->module_keys[slots[slot] - 1], k) != 0)
                slot = (slot + 1) & (nslots - 1);
            if (slots[slot]) {
                free(k);
            } else {
                df->module_keys[df->nmodules++] = k;
                slots[slot] = df->nmodules;
            }
            df->module_of_mapping[x][i] = (uint32_t)slots[slot];
        }
    }
    free(slots);
    return 0;
}

static uint64_t hash_frames(const norm_frame *f, unsigned n)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ n;
    for (unsigned i = 0; i < n; i++) {
        h = (h ^ f[i].module) * 0x100000001b3ull;
        h = (h ^ f[i].offset) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
    }
    return h;
}

static int push_group(differ *df, int dump, size_t stack, size_t first, unsigned n)
{
    if (df->ngroups == df->group_cap) {
        size_t cap = df->group_cap ? 2 * df->group_cap : 64;
        group *g = realloc(df->groups, cap * sizeof *g);
        if (!g)
            return -1;
        df->groups = g;
        df->group_cap = cap;
    }
    group *g = &df->groups[df->ngroups++];
    memset(g, 0, sizeof *g);
    g->first = first;
    g->nframes = n;
    g->dump = dump;
    g->stack = stack;
    return 0;
}

/* Normalises every stack of dump x and finds or creates its group. */
static int group_stacks(differ *df, int x)
{
    const rpd_dump *d = &df->in[x]->dump;
    const rpd_stack_table *t = &df->stacks[x];
    df->group_of_stack[x] = calloc(t->count + 1, sizeof(size_t));
    if (!df->group_of_stack[x])
        return -1;
    for (size_t i = 0; i < t->count; i++) {
        unsigned n;
        const uint64_t *pcs = rpd_stack_frames(t, i, &n);
        if (df->nframes + n > df->frame_cap) {
            size_t cap = df->frame_cap ? df->frame_cap : 1024;
            while (cap < df->nframes + n)
                cap *= 2;
            norm_frame *f = realloc(df->frames, cap * sizeof *f);
            if (!f)
                return -1;
            df->frames = f;
            df->frame_cap = cap;
        }
        norm_frame *nf = df->frames + df->nframes;
        for (unsigned k = 0; k < n; k++) {
            const rpd_mapping_info *m = rpd_mapping_of(d, pcs[k]);
            nf[k].module = m ? df->module_of_mapping[x][m - d->mappings] : 0;
            nf[k].offset = m ? pcs[k] - m->m.load_bias : pcs[k];
        }
        size_t slot = (size_t)hash_frames(nf, n) & (df->nslots - 1), found = 0;
        for (; df->slots[slot]; slot = (slot + 1) & (df->nslots - 1)) {
            const group *g = &df->groups[df->slots[slot] - 1];
            if (g->nframes == n && !memcmp(df->frames + g->first, nf, n * sizeof *nf)) {
                found = df->slots[slot];
                break;
            }
        }
        if (!found) {
            if (push_group(df, x, i, df->nframes, n) != 0)
                return -1;
            df->nframes += n; /* keep the frames: the group refers to them */
            found = df->ngroups;
            df->slots[slot] = found;
        } else if (x == 1) {
            /* Print the site with B's stack id: growth is reported about B. */
            df->groups[found - 1].dump = 1;
            df->groups[found - 1].stack = i;
        }
        df->group_of_stack[x][i] = found - 1;
    }
    return 0;
}

static int build_groups(differ *df)
{
    size_t stacks = df->stacks[0].count + df->stacks[1].count;
    df->nslots = 16;
    while (df->nslots < 2 * (stacks + 2))
        df->nslots <<= 1;
    df->slots = calloc(df->nslots, sizeof *df->slots);
    if (!df->slots || push_group(df, -1, 0, 0, 0) != 0 || push_group(df, -1, 0, 0, 0) != 0)
        return -1;
    return group_stacks(df, 0) == 0 && group_stacks(df, 1) == 0 ? 0 : -1;
}

/* Adds the blocks of dump x into the groups' stats[x]. */
static int collect(differ *df, int x, const rpd_options *o, rpd_error *err)
{
    rpd_dump *d = &df->in[x]->dump;
    const rpd_stack_table *t = &df->stacks[x];
    site_stats *per_site = rpd_alloc(d, (t->count + SITE_FIRST_STACK) * sizeof *per_site, d->stacks->offset, err);
    if (!per_site || site_collect(d, t, o, per_site, err) != 0) {
        rpd_free(d, per_site, (t->count + SITE_FIRST_STACK) * sizeof *per_site);
        return -1;
    }
    for (size_t s = 0; s < t->count + SITE_FIRST_STACK; s++) {
        size_t g = s < SITE_FIRST_STACK ? s : df->group_of_stack[x][s - SITE_FIRST_STACK];
        site_stats *into = &df->groups[g].stats[x];
        into->blocks += per_site[s].blocks;
        into->bytes += per_site[s].bytes;
        into->usable += per_site[s].usable;
        into->block_bytes += per_site[s].block_bytes;
    }
    rpd_free(d, per_site, (t->count + SITE_FIRST_STACK) * sizeof *per_site);
    return 0;
}

static int64_t delta(uint64_t a, uint64_t b) { return b >= a ? (int64_t)(b - a) : -(int64_t)(a - b); }

static int compare_growth(const void *pa, const void *pb, void *arg)
{
    const group *groups = arg;
    const group *x = &groups[*(const size_t *)pa], *y = &groups[*(const size_t *)pb];
    int64_t dx = delta(x->stats[0].bytes, x->stats[1].bytes), dy = delta(y->stats[0].bytes, y->stats[1].bytes);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    int64_t bx = delta(x->stats[0].blocks, x->stats[1].blocks), by = delta(y->stats[0].blocks, y->stats[1].blocks);
    if (bx != by)
        return bx > by ? -1 : 1;
    return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

static void differ_free(differ *df)
{
    for (size_t i = 0; i < df->nmodules; i++)
        free(df->module_keys[i]);
    free(df->module_keys);
    for (int x = 0; x < 2; x++) {
        free(df->module_of_mapping[x]);
        free(df->group_of_stack[x]);
        rpd_stack_table_free(&df->stacks[x]);
    }
    free(df->groups);
    free(df->frames);
    free(df->slots);
}

/* Frames of group g as recorded in the dump it came from. */
static const uint64_t *group_frames(const differ *df, const group *g, unsigned *n, const rpd_dump **d)
{
    *d = &df->in[g->dump]->dump;
    return rpd_stack_frames(&df->stacks[g->dump], g->stack, n);
}

static void json_group(json_out *j, const differ *df, const group *g, size_t index, symbolizer *sym,
                       const rpd_options *o)
{
    json_object_compact(j);
    if (index < SITE_FIRST_STACK) {
        json_kv_string(j, "site", index == SITE_NO_STACK ? "none" : "unknown");
    } else {
        json_kv_string(j, "site", "stack");
        json_kv_u64(j, "stack", df->stacks[g->dump].ids[g->stack]);
        json_kv_string(j, "stack_from", g->dump ? "b" : "a");
    }
    json_kv_u64(j, "blocks_a", g->stats[0].blocks);
    json_kv_u64(j, "blocks_b", g->stats[1].blocks);
    json_kv_u64(j, "bytes_a", g->stats[0].bytes);
    json_kv_u64(j, "bytes_b", g->stats[1].bytes);
    json_kv_i64(j, "delta_blocks", delta(g->stats[0].blocks, g->stats[1].blocks));
    json_kv_i64(j, "delta_bytes", delta(g->stats[0].bytes, g->stats[1].bytes));
    if (index >= SITE_FIRST_STACK) {
        const rpd_dump *d;
        unsigned n;
        const uint64_t *frames = group_frames(df, g, &n, &d);
        site_json_frames(j, sym, d, frames, n, o);
    }
    json_object_end(j);
}

int cmd_diff(rpd_input *a, rpd_input *b, const rpd_options *o)
{
    differ df;
    memset(&df, 0, sizeof df);
    df.in[0] = a;
    df.in[1] = b;
    rpd_error err = {0, ""};
    const char *failed_path = a->path;
    int rc = rpd_stack_table_load(&df.stacks[0], &a->dump, 1, &err);
    if (rc == 0) {
        failed_path = b->path;
        rc = rpd_stack_table_load(&df.stacks[1], &b->dump, 1, &err);
    }
    if (rc == 0 && (assign_modules(&df) != 0 || build_groups(&df) != 0)) {
        rc = rpd_fail(&err, 0, "out of memory grouping the stacks");
    }
    if (rc == 0) {
        failed_path = a->path;
        rc = collect(&df, 0, o, &err);
    }
    if (rc == 0) {
        failed_path = b->path;
        rc = collect(&df, 1, o, &err);
    }
    if (rc != 0) {
        differ_free(&df);
        return rpd_report_error(o, failed_path, &err);
    }

    size_t *order = malloc((df.ngroups ? df.ngroups : 1) * sizeof *order);
    if (!order) {
        differ_free(&df);
        rpd_fail(&err, 0, "out of memory");
        return rpd_report_error(o, a->path, &err);
    }
    size_t n = 0;
    site_stats total[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    for (size_t i = 0; i < df.ngroups; i++) {
        const group *g = &df.groups[i];
        for (int x = 0; x < 2; x++) {
            total[x].blocks += g->stats[x].blocks;
            total[x].bytes += g->stats[x].bytes;
        }
        int64_t db = delta(g->stats[0].bytes, g->stats[1].bytes), dn = delta(g->stats[0].blocks, g->stats[1].blocks);
        if (db > 0 || dn > 0 || (o->all && (db || dn)))
            order[n++] = i;
    }
    qsort_r(order, n, sizeof *order, compare_growth, df.groups);
    size_t shown = o->limit && o->limit < n ? (size_t)o->limit : n;

    symbolizer *sym = sym_new(o->symbolizer);
    for (size_t r = 0; r < shown; r++) {
        const group *g = &df.groups[order[r]];
        if (order[r] < SITE_FIRST_STACK)
            continue;
        const rpd_dump *d;
        unsigned nf;
        const uint64_t *frames = group_frames(&df, g, &nf, &d);
        site_want_frames(sym, d, frames, nf, o);
    }
    sym_run(sym);

    if (o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        json_key(&j, "a");
        json_object_compact(&j);
        rpd_json_dump_info(&j, &a->dump, a->path);
        json_object_end(&j);
        json_key(&j, "b");
        json_object_compact(&j);
        rpd_json_dump_info(&j, &b->dump, b->path);
        json_object_end(&j);
        json_kv_string(&j, "bytes_are", rpd_is_debug(&b->dump) ? "requested" : "usable");
        json_kv_u64(&j, "blocks_a", total[0].blocks);
        json_kv_u64(&j, "blocks_b", total[1].blocks);
        json_kv_u64(&j, "bytes_a", total[0].bytes);
        json_kv_u64(&j, "bytes_b", total[1].bytes);
        json_kv_i64(&j, "delta_bytes", delta(total[0].bytes, total[1].bytes));
        json_kv_u64(&j, "changed_sites", n);
        json_key(&j, "sites");
        json_array(&j);
        for (size_t r = 0; r < shown; r++)
            json_group(&j, &df, &df.groups[order[r]], order[r], sym, o);
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
    } else {
        char x[32], y[32];
        rpd_text_dump_info(stdout, &a->dump, a->path);
        rpd_text_dump_info(stdout, &b->dump, b->path);
        printf("live: %llu blocks, %s -> %llu blocks, %s (%+lld bytes)\n", (unsigned long long)total[0].blocks,
               text_size(x, sizeof x, total[0].bytes), (unsigned long long)total[1].blocks,
               text_size(y, sizeof y, total[1].bytes), (long long)delta(total[0].bytes, total[1].bytes));
        printf("%zu site%s %s\n", n, n == 1 ? "" : "s", o->all ? "changed" : "grew");
        for (size_t r = 0; r < shown; r++) {
            const group *g = &df.groups[order[r]];
            if (order[r] < SITE_FIRST_STACK)
                printf("\n%s:", site_special_name(order[r]));
            else
                printf("\nstack %u (of %s):", df.stacks[g->dump].ids[g->stack], g->dump ? "B" : "A");
            printf(" %+lld bytes, %+lld blocks (%llu blocks %s -> %llu blocks %s)\n",
                   (long long)delta(g->stats[0].bytes, g->stats[1].bytes),
                   (long long)delta(g->stats[0].blocks, g->stats[1].blocks), (unsigned long long)g->stats[0].blocks,
                   text_size(x, sizeof x, g->stats[0].bytes), (unsigned long long)g->stats[1].blocks,
                   text_size(y, sizeof y, g->stats[1].bytes));
            if (order[r] >= SITE_FIRST_STACK) {
                const rpd_dump *d;
                unsigned nf;
                const uint64_t *frames = group_frames(&df, g, &nf, &d);
                site_print_frames(stdout, sym, d, frames, nf, o);
            }
        }
        if (shown < n)
            printf("\n... %zu more sites (--limit 0 shows all)\n", n - shown);
    }
    sym_free(sym);
    free(order);
    differ_free(&df);
    return RPDUMP_OK;
}
