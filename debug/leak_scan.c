#define _GNU_SOURCE
#include "leak_scan.h"

#include <pthread.h>
#include <string.h>

#include "block_meta.h"
#include "debug_heap.h"
#include "leak_roots.h"
#include "proc_maps.h"
#include "sort.h"
#include "stack_depot.h"
#include "stop_world.h"
#include "src/outside_blocks.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/walk.h"

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

#define NONE ((size_t)-1)

/* Scratch arrays from the OS. */
static void *scratch(size_t bytes, size_t *len)
{
    *len = rp_align_up(bytes ? bytes : 1, RP_OS_PAGE);
    return rp_os_scratch_map(*len);
}

typedef struct heap_list {
    rp_heap **heaps;
    size_t n, cap, map_len;
    size_t blocks; /* live and quarantined blocks, from the heaps' counters */
    size_t regions;
} heap_list;

/* Runs under the heap list's lock: takes each heap's lock in list order (as fork does). */
static void lock_heap(rp_heap *h, void *arg)
{
    heap_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 512, len;
        rp_heap **bigger = scratch(cap * sizeof *bigger, &len);
        if (!bigger)
            return; /* a heap not locked is not scanned */
        if (l->heaps) {
            memcpy(bigger, l->heaps, l->n * sizeof *bigger);
            rp_os_scratch_unmap(l->heaps, l->map_len);
        }
        l->heaps = bigger;
        l->cap = cap;
        l->map_len = len;
    }
    rp_lock_acquire(&h->lock);
    l->heaps[l->n++] = h;
    l->blocks += h->blocks_in_use;
    l->regions += h->nregions;
}

typedef struct scanner {
    rp_leak_block *blocks;
    size_t n, cap;
    uintptr_t lo_min, span; /* every block lies in [lo_min, lo_min + span) */
    uintptr_t outside_lo, outside_len; /* where the blocks outside the heaps lie (outside_blocks.h) */
    uint32_t *work;         /* blocks reached whose contents are still to scan */
    size_t nwork;
    rp_root_range *excl;    /* memory that is never a root: rampart's regions, the tables */
    uintptr_t loader_lo, loader_hi; /* the dynamic loader: blocks it allocated are roots */
    size_t nexcl, excl_cap;
    rp_maps maps;
} scanner;

static int collect(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)r;
    scanner *s = arg;
    if (info->state != RP_BLOCK_USED || s->n == s->cap)
        return 0;
    rp_debug_meta m;
    rp_meta_load(info->addr, &m);
    int sealed = m.seal == rp_meta_seal(rp_debug_secret(h), info->addr, &m);
    size_t requested = sealed && m.requested <= info->size ? (size_t)m.requested : info->size;
    rp_debug_heap *d = rp_debug_of(h);
    rp_leak_block *b = &s->blocks[s->n++];
    b->lo = (uintptr_t)info->addr;
    b->hi = b->lo + requested;
    b->heap = h;
    b->stack = sealed ? m.alloc_stack : 0;
    b->tag = (sealed && (m.flags & RP_META_NOT_LEAK)) || (d && d->not_leak) ? RP_LEAK_IGNORED : RP_LEAK_UNSEEN;
    if (b->tag == RP_LEAK_UNSEEN && b->stack && s->loader_hi) {
        uintptr_t frame0;
        if (rp_depot_get(b->stack, &frame0, 1) == 1 && frame0 - 1 >= s->loader_lo && frame0 - 1 < s->loader_hi)
            b->tag = RP_LEAK_IGNORED;
    }
    return 0;
}

static void count_outside(const void *user, size_t size, uint32_t alloc_stack, void *arg)
{
    (void)user, (void)size, (void)alloc_stack;
    (*(size_t *)arg)++;
}

/* A live block kept outside the heaps (outside_blocks.h): counted like a heap's. */
static void collect_outside(const void *user, size_t size, uint32_t alloc_stack, void *arg)
{
    scanner *s = arg;
    if (s->n == s->cap)
        return;
    rp_leak_block *b = &s->blocks[s->n++];
    b->lo = (uintptr_t)user;
    b->hi = b->lo + size;
    b->heap = NULL;
    b->stack = alloc_stack;
    b->tag = RP_LEAK_UNSEEN;
}

static void exclude(scanner *s, uintptr_t lo, uintptr_t hi)
{
    if (lo < hi && s->nexcl < s->excl_cap) {
        s->excl[s->nexcl].lo = lo;
        s->excl[s->nexcl].hi = hi;
        s->nexcl++;
    }
}

static int block_before(const void *a, const void *b)
{
    return ((const rp_leak_block *)a)->lo < ((const rp_leak_block *)b)->lo;
}

static int range_before(const void *a, const void *b)
{
    return ((const rp_root_range *)a)->lo < ((const rp_root_range *)b)->lo;
}

/* Sorts the exclusions and merges overlapping ones. */
static void merge_exclusions(scanner *s)
{
    rp_sort(s->excl, s->nexcl, sizeof *s->excl, range_before);
    size_t k = 0;
    for (size_t i = 0; i < s->nexcl; i++) {
        if (k && s->excl[i].lo <= s->excl[k - 1].hi) {
            if (s->excl[i].hi > s->excl[k - 1].hi)
                s->excl[k - 1].hi = s->excl[i].hi;
        } else {
            s->excl[k++] = s->excl[i];
        }
    }
    s->nexcl = k;
}

/* Index of the block whose user area holds v, or NONE. */
static inline size_t find_block(const scanner *s, uintptr_t v)
{
    if (v - s->lo_min >= s->span || (!rp_pagemap_lookup((const void *)v) && v - s->outside_lo >= s->outside_len))
        return NONE;
    size_t lo = 0, hi = s->n; /* the last block with b.lo <= v is before hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->blocks[mid].lo <= v)
            lo = mid;
        else
            hi = mid;
    }
    const rp_leak_block *b = &s->blocks[lo];
    return b->lo <= v && (v < b->hi || v == b->lo) ? lo : NONE;
}

/* Scans the words of [lo, hi) (readable memory) for pointers into blocks: unseen ones become
 * `tag` and, when `flood`, are queued for their own contents to be scanned. Pointers into the
 * block `self` (the one whose contents these are) do not count. */
RP_NO_SANITIZE_ADDRESS
static void scan_words(scanner *s, uintptr_t lo, uintptr_t hi, size_t self, uint32_t from, uint32_t tag, int flood)
{
    lo = (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    for (uintptr_t p = lo; p + sizeof(uintptr_t) <= hi; p += sizeof(uintptr_t)) {
        uintptr_t v = *(const volatile uintptr_t *)p;
        size_t i = find_block(s, v);
        if (i == NONE || i == self || s->blocks[i].tag != from)
            continue;
        s->blocks[i].tag = tag;
        if (flood)
            s->work[s->nwork++] = (uint32_t)i;
    }
}

/* Scans [lo, hi) less the exclusions. */
static void scan_outside_exclusions(scanner *s, uintptr_t lo, uintptr_t hi)
{
    /* The first exclusion that ends after lo. */
    size_t a = 0, b = s->nexcl;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (s->excl[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    for (size_t i = a; i < s->nexcl && lo < hi; i++) {
        const rp_root_range *e = &s->excl[i];
        if (e->lo >= hi)
            break;
        if (e->lo > lo)
            scan_words(s, lo, e->lo, NONE, RP_LEAK_UNSEEN, RP_LEAK_REACHABLE, 1);
        if (e->hi > lo)
            lo = e->hi;
    }
    if (lo < hi)
        scan_words(s, lo, hi, NONE, RP_LEAK_UNSEEN, RP_LEAK_REACHABLE, 1);
}

/* A root range: its readable parts, less rampart's memory. */
static void scan_root(uintptr_t lo, uintptr_t hi, const char *what, void *arg)
{
    (void)what;
    scanner *s = arg;
    const rp_maps *m = &s->maps;
    for (size_t i = 0; i < m->n && lo < hi; i++) {
        const rp_map_range *r = &m->ranges[i];
        if (r->hi <= lo)
            continue;
        if (r->lo >= hi)
            break;
        if (!(r->flags & RP_MAP_READ))
            continue;
        uintptr_t a = lo > r->lo ? lo : r->lo, b = hi < r->hi ? hi : r->hi;
        scan_outside_exclusions(s, a, b);
    }
}

static void flood(scanner *s)
{
    while (s->nwork) {
        size_t i = s->work[--s->nwork];
        scan_words(s, s->blocks[i].lo, s->blocks[i].hi, i, RP_LEAK_UNSEEN, RP_LEAK_REACHABLE, 1);
    }
}

/* Unreached blocks are leaked; those another leaked block points to are indirect. */
static void classify(scanner *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->blocks[i].tag == RP_LEAK_UNSEEN)
            s->blocks[i].tag = RP_LEAK_DIRECT;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t t = s->blocks[i].tag;
        if (t == RP_LEAK_DIRECT || t == RP_LEAK_INDIRECT)
            scan_words(s, s->blocks[i].lo, s->blocks[i].hi, i, RP_LEAK_DIRECT, RP_LEAK_INDIRECT, 0);
    }
}

/* Everything that happens with the heaps locked. */
static void scan_locked(rp_leak_scan *out, scanner *s, const heap_list *hl, const rp_root_range *mods, size_t nmods,
                        uintptr_t caller_sp, const uintptr_t *regs, size_t nregs)
{
    for (size_t i = 0; i < hl->n; i++) {
        rp_heap *h = hl->heaps[i];
        rp_walk_locked(h, collect, s, NULL, 0);
        for (rp_region *r = h->regions; r; r = r->next) {
            exclude(s, r->mem_lo, r->mem_hi);
            exclude(s, r->base, r->base + (r->npages << RP_PAGE_SHIFT));
            if (r->block_meta_len)
                exclude(s, (uintptr_t)r, (uintptr_t)r + r->block_meta_len);
        }
    }
    const rp_outside_blocks *outside = rp_outside_blocks_get();
    if (outside) {
        outside->walk(collect_outside, s);
        exclude(s, outside->lo, outside->hi);
        s->outside_lo = outside->lo;
        s->outside_len = outside->hi - outside->lo;
    }
    rp_sort(s->blocks, s->n, sizeof *s->blocks, block_before);
    if (s->n) {
        s->lo_min = s->blocks[0].lo;
        uintptr_t hi = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->blocks[i].hi > hi)
                hi = s->blocks[i].hi;
        s->span = hi - s->lo_min;
    }

    rp_world world;
    int stopped = rp_world_stop(&world, caller_sp) == 0;
    if (world.threads) { /* slot 0: the caller (W2) */
        rp_thread_regs *me = &world.threads[0];
        for (size_t i = 0; i < nregs && i < RP_THREAD_REGS; i++)
            me->regs[me->nregs++] = regs[i];
    }
    if (!stopped || rp_maps_read(&s->maps) != 0) {
        /* Without the thread list or the memory map nothing can be scanned safely. */
        out->failed = 1;
        rp_world_resume(&world);
        return;
    }
    /* The tables themselves hold pointers to every block. */
    exclude(s, (uintptr_t)s->blocks, (uintptr_t)(s->blocks + s->cap));
    exclude(s, (uintptr_t)s->work, (uintptr_t)(s->work + s->cap));
    exclude(s, (uintptr_t)s->maps.ranges, (uintptr_t)s->maps.ranges + s->maps.map_len);
    merge_exclusions(s);

    for (size_t i = 0; i < nmods; i++)
        scan_root(mods[i].lo, mods[i].hi, "module", s);
    for (size_t i = 0; i < world.n; i++) {
        const rp_thread_regs *t = &world.threads[i];
        int state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (state == RP_THREAD_STOPPED || state == RP_THREAD_SELF) {
            rp_roots_thread(t, &s->maps, scan_root, s);
            out->threads++;
        }
    }
    out->not_stopped = world.not_stopped;
    if (world.not_stopped)
        rp_roots_all_writable(&s->maps, scan_root, s);
    for (size_t i = 0; i < s->n; i++)
        if (s->blocks[i].tag == RP_LEAK_IGNORED)
            s->work[s->nwork++] = (uint32_t)i;
    flood(s);
    classify(s);
    rp_world_resume(&world);
}

void rp_leak_scan_run(rp_leak_scan *out, uintptr_t caller_sp, const uintptr_t *regs, size_t nregs)
{
    memset(out, 0, sizeof *out);
    scanner s;
    memset(&s, 0, sizeof s);
    pthread_mutex_lock(&scan_lock);

    /* Modules first: listing them takes the loader's lock, which a thread holding a heap
     * lock may be waiting for (stack capture). */
    size_t mods_len = 0, nmods = rp_roots_modules(NULL, 0) + 16;
    rp_root_range *mods = scratch(nmods * sizeof *mods, &mods_len);
    if (mods)
        nmods = rp_roots_modules(mods, mods_len / sizeof *mods);
    else
        nmods = 0;
    if (nmods > mods_len / sizeof *mods)
        nmods = mods_len / sizeof *mods;

    rp_roots_loader_range(&s.loader_lo, &s.loader_hi);

    heap_list hl;
    memset(&hl, 0, sizeof hl);
    rp_heaps_foreach(lock_heap, &hl);

    /* Blocks outside the heaps (outside_blocks.h) are counted first; a few more may appear
     * before they are collected (those are then left out of this scan). */
    size_t outside_n = 0;
    const rp_outside_blocks *outside = rp_outside_blocks_get();
    if (outside)
        outside->walk(count_outside, &outside_n);
    size_t blocks_len = 0, work_len = 0, excl_len = 0;
    s.cap = hl.blocks + outside_n + 64 + 1;
    s.blocks = scratch(s.cap * sizeof *s.blocks, &blocks_len);
    s.work = scratch(s.cap * sizeof *s.work, &work_len);
    s.excl_cap = 3 * hl.regions + 8;
    s.excl = scratch(s.excl_cap * sizeof *s.excl, &excl_len);
    if (mods && s.blocks && s.work && s.excl)
        scan_locked(out, &s, &hl, mods, nmods, caller_sp, regs, nregs);
    else
        out->failed = 1;

    for (size_t i = hl.n; i-- > 0;)
        rp_lock_release(&hl.heaps[i]->lock);
    if (hl.heaps)
        rp_os_scratch_unmap(hl.heaps, hl.map_len);
    rp_maps_free(&s.maps);
    if (s.work)
        rp_os_scratch_unmap(s.work, work_len);
    if (s.excl)
        rp_os_scratch_unmap(s.excl, excl_len);
    if (mods)
        rp_os_scratch_unmap(mods, mods_len);
    pthread_mutex_unlock(&scan_lock);

    if (out->failed) {
        if (s.blocks)
            rp_os_scratch_unmap(s.blocks, blocks_len);
        return;
    }
    out->blocks = s.blocks;
    out->n = s.n;
    out->map_len = blocks_len;
}

void rp_leak_scan_free(rp_leak_scan *s)
{
    if (s->blocks)
        rp_os_scratch_unmap(s->blocks, s->map_len);
    memset(s, 0, sizeof *s);
}
