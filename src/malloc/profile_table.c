#include "profile_table.h"

#include <stdio.h>
#include <string.h>

#include "src/bits.h"
#include "src/os.h"

size_t rp_pt_home(const rp_pt_table *t, uintptr_t addr) { return (size_t)rp_mix64(addr) & (t->cap - 1); }

/* The slot holding addr, or the empty slot where it would go. cap > 0 and the table is never
 * full (PT1), so the probe ends. */
static size_t slot_of(const rp_pt_table *t, uintptr_t addr)
{
    size_t i = rp_pt_home(t, addr);
    while (t->slots[i].addr != 0 && t->slots[i].addr != addr)
        i = (i + 1) & (t->cap - 1);
    return i;
}

static size_t table_bytes(size_t cap) { return rp_align_up(cap * sizeof(rp_pt_record), RP_OS_PAGE); }

/* Moves every record into a table of new_cap slots. 0, or -1 (nothing changed). */
static int resize(rp_pt_table *t, size_t new_cap)
{
    rp_pt_record *slots = rp_os_scratch_map(table_bytes(new_cap));
    if (!slots)
        return -1;
    rp_pt_table bigger = {slots, new_cap, 0};
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].addr) {
            bigger.slots[slot_of(&bigger, t->slots[i].addr)] = t->slots[i];
            bigger.count++;
        }
    }
    if (t->slots)
        rp_os_scratch_unmap(t->slots, table_bytes(t->cap));
    *t = bigger;
    return 0;
}

int rp_pt_insert(rp_pt_table *t, const rp_pt_record *rec)
{
    if (t->cap) {
        size_t i = slot_of(t, rec->addr);
        if (t->slots[i].addr == rec->addr) { /* PT2: replaced, not added */
            t->slots[i] = *rec;
            return 0;
        }
    }
    if (2 * (t->count + 1) > t->cap && resize(t, t->cap ? 2 * t->cap : RP_PT_MIN_CAP) != 0)
        return -1;
    t->slots[slot_of(t, rec->addr)] = *rec;
    t->count++;
    return 0;
}

int rp_pt_find(const rp_pt_table *t, uintptr_t addr, rp_pt_record *out)
{
    if (!t->cap || !addr)
        return 0;
    size_t i = slot_of(t, addr);
    if (t->slots[i].addr != addr)
        return 0;
    if (out)
        *out = t->slots[i];
    return 1;
}

/* Is slot k's home outside the cyclic range (hole, k]? Then the record at k may move back
 * into the hole without passing an empty slot (PT3). */
static int may_fill(size_t hole, size_t k, size_t home, size_t mask)
{
    return ((k - home) & mask) >= ((k - hole) & mask);
}

int rp_pt_remove(rp_pt_table *t, uintptr_t addr, rp_pt_record *out)
{
    if (!t->cap || !addr)
        return 0;
    size_t mask = t->cap - 1, hole = slot_of(t, addr);
    if (t->slots[hole].addr != addr)
        return 0;
    if (out)
        *out = t->slots[hole];
    /* Backward shift: records after the hole whose probe passed it move back into it. */
    for (size_t k = (hole + 1) & mask; t->slots[k].addr != 0; k = (k + 1) & mask) {
        if (may_fill(hole, k, rp_pt_home(t, t->slots[k].addr), mask)) {
            t->slots[hole] = t->slots[k];
            hole = k;
        }
    }
    memset(&t->slots[hole], 0, sizeof t->slots[hole]);
    t->count--;
    return 1;
}

int rp_pt_foreach(const rp_pt_table *t, int (*fn)(void *arg, const rp_pt_record *rec), void *arg)
{
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].addr) {
            int rc = fn(arg, &t->slots[i]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

void rp_pt_clear(rp_pt_table *t)
{
    if (t->slots)
        rp_os_scratch_unmap(t->slots, table_bytes(t->cap));
    memset(t, 0, sizeof *t);
}

size_t rp_pt_bytes(const rp_pt_table *t) { return t->cap ? table_bytes(t->cap) : 0; }

int rp_pt_check(const rp_pt_table *t, char *why, size_t len)
{
    if (t->cap == 0) {
        if (t->count || t->slots) {
            snprintf(why, len, "PT1: a table without slots holds %zu records", t->count);
            return 1;
        }
        return 0;
    }
    if (!rp_is_pow2(t->cap) || t->cap < RP_PT_MIN_CAP || 2 * t->count > t->cap) {
        snprintf(why, len, "PT1: cap %zu, count %zu", t->cap, t->count);
        return 1;
    }
    size_t used = 0;
    for (size_t i = 0; i < t->cap; i++) {
        uintptr_t a = t->slots[i].addr;
        if (!a)
            continue;
        used++;
        /* PT3 (and PT2: the probe from the home slot must reach this slot first) */
        size_t k = rp_pt_home(t, a);
        while (k != i && t->slots[k].addr != 0 && t->slots[k].addr != a)
            k = (k + 1) & (t->cap - 1);
        if (k != i) {
            snprintf(why, len, "PT%d: the record of %#lx in slot %zu is %s from its home slot %zu",
                     t->slots[k].addr == a ? 2 : 3, (unsigned long)a, i,
                     t->slots[k].addr == a ? "a duplicate of one found first" : "not reached", rp_pt_home(t, a));
            return 1;
        }
    }
    if (used != t->count) {
        snprintf(why, len, "PT2: %zu slots hold records, count says %zu", used, t->count);
        return 1;
    }
    return 0;
}
