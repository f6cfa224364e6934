#define _GNU_SOURCE /* qsort_r */
#include "flame_tree.h"

#include <stdlib.h>
#include <string.h>

#include "frame_label.h"

#define LABEL_BYTES 512 /* a frame's label is cut beyond this */

static int out_of_memory(flame_tree *t, rpd_error *err)
{
    return rpd_fail(err, 0, "out of memory building the stack tree (%zu bytes held; --memory-cap raises the cap)",
                    t->bytes);
}

/* Grows *p (cap elements of size elem) to hold need elements, within the tree's limit. */
static int grow(flame_tree *t, void **p, size_t *cap, size_t elem, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    size_t added = (n - *cap) * elem;
    if (t->bytes + added > t->limit)
        return -1;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    t->bytes += added;
    return 0;
}

static uint64_t hash_text(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t name_hash(const char *function, const char *module)
{
    return hash_text(module, hash_text(function, 0xcbf29ce484222325ull) * 31 + 7);
}

static uint64_t child_hash(uint32_t parent, uint32_t name)
{
    uint64_t x = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

/* Rebuilds an open-addressing table of n slots from the entries' hashes. */
static int rehash(flame_tree *t, uint32_t **slots, size_t *nslots, size_t entries, int names)
{
    size_t n = 64;
    while (n < 2 * entries + 2)
        n *= 2;
    if (n <= *nslots)
        return 0;
    size_t added = (n - *nslots) * sizeof(uint32_t);
    if (t->bytes + added > t->limit)
        return -1;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    t->bytes += added;
    free(*slots);
    *slots = s;
    *nslots = n;
    if (names) {
        for (size_t i = 0; i < t->nnames; i++) {
            size_t k = (size_t)name_hash(t->names[i].function, t->names[i].module) & (n - 1);
            while (s[k])
                k = (k + 1) & (n - 1);
            s[k] = (uint32_t)(i + 1);
        }
    } else {
        for (size_t i = 1; i < t->nnodes; i++) {
            size_t k = (size_t)child_hash(t->nodes[i].parent, t->nodes[i].name) & (n - 1);
            while (s[k])
                k = (k + 1) & (n - 1);
            s[k] = (uint32_t)(i + 1);
        }
    }
    return 0;
}

static char *copy_text(flame_tree *t, const char *s)
{
    size_t n = strlen(s) + 1;
    if (t->bytes + n > t->limit)
        return NULL;
    char *c = malloc(n);
    if (c) {
        memcpy(c, s, n);
        t->bytes += n;
    }
    return c;
}

/* The index of name (function, module), added if new; -1 when out of memory. */
static long intern(flame_tree *t, const char *function, const char *module)
{
    if (rehash(t, &t->name_slots, &t->name_nslots, t->nnames + 1, 1) != 0)
        return -1;
    size_t mask = t->name_nslots - 1, k = (size_t)name_hash(function, module) & mask;
    for (; t->name_slots[k]; k = (k + 1) & mask) {
        const flame_name *n = &t->names[t->name_slots[k] - 1];
        if (!strcmp(n->function, function) && !strcmp(n->module, module))
            return (long)(t->name_slots[k] - 1);
    }
    if (t->nnames >= UINT32_MAX - 1 ||
        grow(t, (void **)&t->names, &t->name_cap, sizeof *t->names, t->nnames + 1) != 0)
        return -1;
    flame_name *n = &t->names[t->nnames];
    n->function = copy_text(t, function);
    n->module = n->function ? copy_text(t, module) : NULL;
    if (!n->module) {
        free(n->function);
        return -1;
    }
    t->name_slots[k] = (uint32_t)++t->nnames;
    return (long)(t->nnames - 1);
}

/* The child of parent named name, added if new; -1 when out of memory. */
static long child(flame_tree *t, uint32_t parent, uint32_t name)
{
    if (rehash(t, &t->child_slots, &t->child_nslots, t->nnodes + 1, 0) != 0)
        return -1;
    size_t mask = t->child_nslots - 1, k = (size_t)child_hash(parent, name) & mask;
    for (; t->child_slots[k]; k = (k + 1) & mask) {
        const flame_node *n = &t->nodes[t->child_slots[k] - 1];
        if (n->parent == parent && n->name == name)
            return (long)(t->child_slots[k] - 1);
    }
    if (t->nnodes >= UINT32_MAX - 1 ||
        grow(t, (void **)&t->nodes, &t->node_cap, sizeof *t->nodes, t->nnodes + 1) != 0)
        return -1;
    uint32_t i = (uint32_t)t->nnodes++;
    flame_node *n = &t->nodes[i];
    memset(n, 0, sizeof *n);
    n->name = name;
    n->parent = parent;
    n->depth = t->nodes[parent].depth + 1;
    n->next_sibling = t->nodes[parent].first_child;
    t->nodes[parent].first_child = i;
    if (n->depth > t->max_depth)
        t->max_depth = n->depth;
    t->child_slots[k] = i + 1;
    return i;
}

static int compare_children(const void *a, const void *b, void *arg)
{
    const flame_tree *t = arg;
    const flame_node *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    int c = strcmp(t->names[x->name].function, t->names[y->name].function);
    if (c)
        return c;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Orders every node's children by bytes, largest first. */
static int sort_children(flame_tree *t)
{
    size_t bytes = t->nnodes * sizeof(uint32_t);
    if (t->bytes + bytes > t->limit)
        return -1;
    uint32_t *kids = malloc(bytes ? bytes : 1);
    if (!kids)
        return -1;
    for (size_t p = 0; p < t->nnodes; p++) {
        size_t n = 0;
        for (uint32_t c = t->nodes[p].first_child; c; c = t->nodes[c].next_sibling)
            kids[n++] = c;
        if (n < 2)
            continue;
        qsort_r(kids, n, sizeof *kids, compare_children, t);
        t->nodes[p].first_child = kids[0];
        for (size_t i = 0; i < n; i++)
            t->nodes[kids[i]].next_sibling = i + 1 < n ? kids[i + 1] : 0;
    }
    free(kids);
    return 0;
}

/* The node named label (in module) under node; -1 when out of memory. */
static long step(flame_tree *t, uint32_t node, const char *label, const char *module, const site_stats *s)
{
    long name = intern(t, label, module);
    long next = name < 0 ? -1 : child(t, node, (uint32_t)name);
    if (next >= 0) {
        t->nodes[next].bytes += s->bytes;
        t->nodes[next].blocks += s->blocks;
    }
    return next;
}

/* Adds one site along its path, outermost frame first; a special site (no frames) is one
 * node named special. */
static int add_site(flame_tree *t, const rpd_dump *d, symbolizer *sym, const uint64_t *frames, unsigned n,
                    const char *special, const site_stats *s)
{
    t->nodes[FLAME_ROOT].bytes += s->bytes;
    t->nodes[FLAME_ROOT].blocks += s->blocks;
    if (special)
        return step(t, FLAME_ROOT, special, "", s) < 0 ? -1 : 0;
    long node = FLAME_ROOT;
    for (unsigned i = n; i > 0 && node >= 0; i--) {
        char label[LABEL_BYTES], module[256];
        frame_text ft;
        sym_get(sym, d, frames[i - 1], &ft);
        frame_label(label, sizeof label, &ft, frames[i - 1]);
        label_clean(module, sizeof module, frame_module_name(&ft), NULL);
        node = step(t, (uint32_t)node, label, module, s);
    }
    return node < 0 ? -1 : 0;
}

int flame_tree_build(flame_tree *t, rpd_dump *d, const live_sites *ls, symbolizer *sym, rpd_error *err)
{
    memset(t, 0, sizeof *t);
    t->limit = d->mem_cap > d->mem_used ? d->mem_cap - d->mem_used : 0;
    if (grow(t, (void **)&t->nodes, &t->node_cap, sizeof *t->nodes, 1) != 0)
        return out_of_memory(t, err);
    memset(&t->nodes[0], 0, sizeof t->nodes[0]);
    t->nnodes = 1;
    if (intern(t, "all", "") != 0)
        return out_of_memory(t, err);
    for (size_t s = SITE_FIRST_STACK; s < ls->nsites; s++) {
        unsigned n;
        const uint64_t *frames = live_sites_frames(ls, s, &n);
        if (ls->stats[s].blocks)
            for (unsigned i = 0; i < n; i++)
                sym_want(sym, d, frames[i]);
    }
    sym_run(sym);
    for (size_t s = 0; s < ls->nsites; s++) {
        if (!ls->stats[s].blocks)
            continue;
        unsigned n;
        const uint64_t *frames = live_sites_frames(ls, s, &n);
        const char *special = s < SITE_FIRST_STACK ? site_special_name(s) : n == 0 ? "(empty stack)" : NULL;
        if (add_site(t, d, sym, frames, n, special, &ls->stats[s]) != 0)
            return out_of_memory(t, err);
    }
    if (sort_children(t) != 0)
        return out_of_memory(t, err);
    return 0;
}

void flame_tree_free(flame_tree *t)
{
    for (size_t i = 0; i < t->nnames; i++) {
        free(t->names[i].function);
        free(t->names[i].module);
    }
    free(t->names);
    free(t->nodes);
    free(t->name_slots);
    free(t->child_slots);
    memset(t, 0, sizeof *t);
}

uint64_t flame_self_bytes(const flame_tree *t, uint32_t node)
{
    uint64_t below = 0;
    for (uint32_t c = t->nodes[node].first_child; c; c = t->nodes[c].next_sibling)
        below += t->nodes[c].bytes;
    return t->nodes[node].bytes - below;
}
