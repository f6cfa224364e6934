#include "stack_table.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint32_t id, size_t nslots)
{
    uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 32) & (nslots - 1);
}

/* One allocation holds every array; its parts are carved in order. */
static void *carve(char **at, size_t bytes)
{
    void *p = *at;
    *at += (bytes + 15) & ~(size_t)15;
    return p;
}

int rpd_stack_table_load(rpd_stack_table *t, rpd_dump *d, int keep_frames, rpd_error *err)
{
    memset(t, 0, sizeof *t);
    t->d = d;
    const rpd_entry *e = d->stacks;
    size_t n = (size_t)e->count; /* rpd_open checked count <= length / 8 */
    size_t max_frames = keep_frames ? (size_t)(e->length / 8) : 0;
    size_t nslots = 16;
    while (nslots < 2 * n)
        nslots <<= 1;
    size_t parts[] = {n * sizeof(uint32_t), n * sizeof(uint64_t), keep_frames ? n * sizeof(uint32_t) : 0,
                      keep_frames ? n * sizeof(size_t) : 0, max_frames * sizeof(uint64_t), nslots * sizeof(uint32_t)};
    size_t total = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        total += (parts[i] + 15) & ~(size_t)15;
    char *mem = rpd_alloc(d, total, e->offset, err);
    if (!mem)
        return -1;
    t->bytes = total;
    char *at = mem;
    t->ids = carve(&at, parts[0]);
    t->offsets = carve(&at, parts[1]);
    t->nframes = keep_frames ? carve(&at, parts[2]) : NULL;
    t->first_frame = keep_frames ? carve(&at, parts[3]) : NULL;
    t->frames = carve(&at, parts[4]);
    t->slots = carve(&at, parts[5]);
    t->nslots = nslots;

    rpd_stack_iter *it = rpd_alloc(d, sizeof *it, e->offset, err);
    if (!it)
        return -1;
    rpd_stack s;
    rpd_stacks_begin(it, d);
    int rc;
    while ((rc = rpd_stacks_next(it, &s, err)) == 1) {
        if (rpd_stack_table_find(t, s.id) >= 0) {
            if (!t->duplicates++)
                t->duplicate_offset = s.offset;
            continue;
        }
        size_t i = t->count++;
        t->ids[i] = s.id;
        t->offsets[i] = s.offset;
        if (keep_frames) {
            t->nframes[i] = s.nframes;
            t->first_frame[i] = t->nframes_total;
            memcpy(t->frames + t->nframes_total, s.frames, s.nframes * sizeof(uint64_t));
            t->nframes_total += s.nframes;
        }
        size_t slot = slot_of(s.id, nslots);
        while (t->slots[slot])
            slot = (slot + 1) & (nslots - 1);
        t->slots[slot] = (uint32_t)(i + 1);
    }
    rpd_free(d, it, sizeof *it);
    return rc < 0 ? -1 : 0;
}

void rpd_stack_table_free(rpd_stack_table *t)
{
    if (t->d && t->ids)
        rpd_free(t->d, t->ids, t->bytes);
    memset(t, 0, sizeof *t);
}

long rpd_stack_table_find(const rpd_stack_table *t, uint32_t id)
{
    if (!t->nslots || id == 0)
        return -1;
    for (size_t slot = slot_of(id, t->nslots);; slot = (slot + 1) & (t->nslots - 1)) {
        uint32_t v = t->slots[slot];
        if (!v)
            return -1;
        if (t->ids[v - 1] == id)
            return (long)(v - 1);
    }
}
