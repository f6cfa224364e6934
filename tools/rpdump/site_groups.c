#include "site_groups.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Makes an open-addressing table of indexes + 1 roomy enough for `want` entries (at least
 * twice as many slots), reinserting the `have` entries there are by their hashes. */
static int grow_slots(size_t **slots, size_t *nslots, size_t want, size_t have, const site_groups *g, int modules)
{
    if (*nslots >= 2 * want + 2)
        return 0;
    size_t n = *nslots ? *nslots : 64;
    while (n < 4 * want + 4)
        n *= 2;
    size_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < have; i++) {
        if (!modules && i < SITE_FIRST_STACK)
            continue;
        uint64_t h = modules ? hash_string(g->module_keys[i])
                             : hash_frames(g->frames + g->groups[i].first, g->groups[i].nframes);
        size_t k = (size_t)h & (n - 1);
        while (s[k])
            k = (k + 1) & (n - 1);
        s[k] = i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = n;
    return 0;
}

/* The module number (1..) of mapping m, added if new; 0 when out of memory. */
static size_t module_of(site_groups *g, const rpd_mapping_info *m)
{
    char *k = module_key(m);
    if (!k || grow_slots(&g->module_slots, &g->module_nslots, g->nmodules + 1, g->nmodules, g, 1) != 0) {
        free(k);
        return 0;
    }
    size_t mask = g->module_nslots - 1, slot = (size_t)hash_string(k) & mask;
    for (; g->module_slots[slot]; slot = (slot + 1) & mask)
        if (!strcmp(g->module_keys[g->module_slots[slot] - 1], k)) {
            free(k);
            return g->module_slots[slot];
        }
    if (g->nmodules == g->module_cap) {
        size_t cap = g->module_cap ? 2 * g->module_cap : 64;
        char **keys = realloc(g->module_keys, cap * sizeof *keys);
        if (!keys) {
            free(k);
            return 0;
        }
        g->module_keys = keys;
        g->module_cap = cap;
    }
    g->module_keys[g->nmodules++] = k;
    g->module_slots[slot] = g->nmodules;
    return g->nmodules;
}

static int push_group(site_groups *g, size_t dump, uint32_t id, size_t first, unsigned n)
{
    if (g->ngroups == g->group_cap) {
        size_t cap = g->group_cap ? 2 * g->group_cap : 64;
        site_group *groups = realloc(g->groups, cap * sizeof *groups);
        if (!groups)
            return -1;
        g->groups = groups;
        g->group_cap = cap;
    }
    g->groups[g->ngroups++] = (site_group){first, n, dump, id};
    return 0;
}

int site_groups_init(site_groups *g)
{
    memset(g, 0, sizeof *g);
    return push_group(g, 0, 0, 0, 0) == 0 && push_group(g, 0, 0, 0, 0) == 0 ? 0 : -1;
}

void site_groups_free(site_groups *g)
{
    for (size_t i = 0; i < g->nmodules; i++)
        free(g->module_keys[i]);
    free(g->module_keys);
    free(g->module_slots);
    free(g->groups);
    free(g->frames);
    free(g->pcs);
    free(g->slots);
    memset(g, 0, sizeof *g);
}

static int reserve_frames(site_groups *g, size_t more)
{
    if (g->nframes + more <= g->frame_cap)
        return 0;
    size_t cap = g->frame_cap ? g->frame_cap : 1024;
    while (cap < g->nframes + more)
        cap *= 2;
    norm_frame *f = realloc(g->frames, cap * sizeof *f);
    if (f)
        g->frames = f;
    uint64_t *p = realloc(g->pcs, cap * sizeof *p);
    if (p)
        g->pcs = p;
    if (!f || !p)
        return -1;
    g->frame_cap = cap;
    return 0;
}

int site_groups_add(site_groups *g, size_t index, const rpd_dump *d, const rpd_stack_table *t,
                    size_t **group_of_stack)
{
    size_t *of_mapping = calloc(d->nmappings + 1, sizeof *of_mapping);
    size_t *of_stack = calloc(t->count + 1, sizeof *of_stack);
    *group_of_stack = of_stack;
    if (!of_mapping || !of_stack) {
        free(of_mapping);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < d->nmappings && rc == 0; i++)
        rc = (of_mapping[i] = module_of(g, &d->mappings[i])) ? 0 : -1;
    for (size_t i = 0; i < t->count && rc == 0; i++) {
        unsigned n;
        const uint64_t *pcs = rpd_stack_frames(t, i, &n);
        if (reserve_frames(g, n) != 0 || grow_slots(&g->slots, &g->nslots, g->ngroups + 1, g->ngroups, g, 0) != 0) {
            rc = -1;
            break;
        }
        norm_frame *nf = g->frames + g->nframes;
        for (unsigned k = 0; k < n; k++) {
            const rpd_mapping_info *m = rpd_mapping_of(d, pcs[k]);
            nf[k].module = m ? of_mapping[m - d->mappings] : 0;
            nf[k].offset = m ? pcs[k] - m->m.load_bias : pcs[k];
        }
        size_t mask = g->nslots - 1, slot = (size_t)hash_frames(nf, n) & mask, found = 0;
        for (; g->slots[slot]; slot = (slot + 1) & mask) {
            const site_group *s = &g->groups[g->slots[slot] - 1];
            if (s->nframes == n && !memcmp(g->frames + s->first, nf, n * sizeof *nf)) {
                found = g->slots[slot];
                break;
            }
        }
        if (!found) {
            memcpy(g->pcs + g->nframes, pcs, n * sizeof *pcs);
            if (push_group(g, index, t->ids[i], g->nframes, n) != 0) {
                rc = -1;
                break;
            }
            g->nframes += n; /* keep the frames: the group refers to them */
            found = g->ngroups;
            g->slots[slot] = found;
        } else {
            /* The latest dump holding the stack names it and gives its pcs (same frames
             * normalised, so the same count). */
            site_group *s = &g->groups[found - 1];
            s->dump = index;
            s->stack_id = t->ids[i];
            memcpy(g->pcs + s->first, pcs, n * sizeof *pcs);
        }
        of_stack[i] = found - 1;
    }
    free(of_mapping);
    return rc;
}

/* The main program's identity in a dump (its build-id in hex, else its path) into buf;
 * "" when the dump has no mapping for it. */
static const char *program_key(const rpd_dump *d, char *buf, size_t len)
{
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < d->nmappings; i++) {
        const rpd_mapping_info *m = &d->mappings[i];
        if (!d->process.exe[0] || strncmp(m->path, d->process.exe, RPD_EXE_BYTES - 1) != 0)
            continue;
        char *k = module_key(m);
        if (k)
            snprintf(buf, len, "%s", k);
        free(k);
        break;
    }
    return buf;
}

/* Copies s into buf keeping printable ASCII only. */
static const char *printable(char *buf, size_t len, const char *s)
{
    size_t n = 0;
    for (; *s && n + 1 < len; s++)
        buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
    buf[n] = 0;
    return buf;
}

int site_groups_same_program(const rpd_dump *a, const rpd_dump *b, char *warning, size_t len)
{
    char ka[4200], kb[4200];
    program_key(a, ka, sizeof ka);
    program_key(b, kb, sizeof kb);
    int by_id = !strncmp(ka, "bid:", 4) && !strncmp(kb, "bid:", 4);
    int same = by_id ? !strcmp(ka, kb) : !strcmp(a->process.exe, b->process.exe);
    if (len)
        warning[0] = 0;
    if (!same) {
        char ea[128], eb[128];
        snprintf(warning, len,
                 "the dumps come from different programs (%s, build-id %s; %s, build-id %s): their sites cannot "
                 "match",
                 printable(ea, sizeof ea, a->process.exe), !strncmp(ka, "bid:", 4) ? ka + 4 : "none",
                 printable(eb, sizeof eb, b->process.exe), !strncmp(kb, "bid:", 4) ? kb + 4 : "none");
    }
    return same;
}
