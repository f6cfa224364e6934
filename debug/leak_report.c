/* Leak reports in the format of LeakSanitizer: live blocks grouped by allocation stack,
 * largest total first, with counts (rp_leak_report in rampart_debug.h; option leak_report for a
 * report of every heap at exit, leak_exit_code for its exit status). A "leak" is a live block —
 * not freed, not quarantined, not marked with rp_set_not_leak, not in a heap marked with
 * rp_heap_set_not_leak (the malloc drop-in's thread caches are mapped apart from the heaps);
 * rampart does not scan memory for references. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "block_meta.h"
#include "config.h"
#include "debug_heap.h"
#include "rampart_debug.h"
#include "report_sink.h"
#include "sort.h"
#include "src/locate.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/walk.h"
#include "symbolize.h"

typedef struct leak_group {
    uint32_t stack; /* 0 = slot empty, or blocks without a recorded stack (see no_stack) */
    uint32_t used;
    size_t bytes;
    size_t count;
} leak_group;

/* Open addressing on the stack id, in scratch memory sized for every live block. */
typedef struct leak_table {
    leak_group *slots;
    size_t nslots;
    size_t map_len;
    leak_group no_stack; /* blocks allocated while backtraces were off */
} leak_table;

static void add_leak(leak_table *t, uint32_t stack, size_t bytes)
{
    leak_group *g = &t->no_stack;
    if (stack != 0) {
        size_t i = (stack * 0x9e3779b1u) & (t->nslots - 1);
        while (t->slots[i].used && t->slots[i].stack != stack)
            i = (i + 1) & (t->nslots - 1);
        g = &t->slots[i];
        g->used = 1;
        g->stack = stack;
    }
    g->bytes += bytes;
    g->count++;
}

static int collect(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)r;
    if (info->state != RP_BLOCK_USED)
        return 0;
    rp_debug_meta m;
    rp_meta_load(info->addr, &m);
    if (m.seal == rp_meta_seal(rp_debug_secret(h), info->addr, &m) && (m.flags & RP_META_NOT_LEAK))
        return 0;
    add_leak(arg, info->alloc_stack, info->requested);
    return 0;
}

static int larger_first(const void *a, const void *b)
{
    const leak_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes;
    if (x->count != y->count)
        return x->count > y->count;
    return x->stack < y->stack;
}

size_t rp_leak_report(rp_heap *h, int fd)
{
    h = rp_heap_resolve(h);
    if (!h)
        return 0;
    leak_table t = {0};
    rp_lock_acquire(&h->lock);
    rp_debug_heap *d = rp_debug_of(h);
    if (d && d->not_leak) {
        rp_lock_release(&h->lock);
        return 0;
    }
    size_t want = 2 * h->blocks_in_use + 2;
    t.nslots = (size_t)1 << rp_ceil_log2(want < 64 ? 64 : want);
    t.map_len = rp_align_up(t.nslots * sizeof(leak_group), RP_OS_PAGE);
    t.slots = rp_os_scratch_map(t.map_len);
    if (!t.slots) {
        rp_lock_release(&h->lock);
        errno = ENOMEM;
        return 0;
    }
    rp_walk_locked(h, collect, &t, NULL, 0);
    rp_lock_release(&h->lock);

    /* Compact the groups to the front, put the stackless group last among them, sort. */
    size_t n = 0;
    for (size_t i = 0; i < t.nslots; i++)
        if (t.slots[i].used)
            t.slots[n++] = t.slots[i];
    if (t.no_stack.count)
        t.slots[n++] = t.no_stack;
    rp_sort(t.slots, n, sizeof(leak_group), larger_first);

    size_t blocks = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        blocks += t.slots[i].count;
        bytes += t.slots[i].bytes;
    }
    if (blocks) {
        rp_sink_buf b;
        rp_sink_begin(&b, fd >= 0 ? fd : rp_sink_fd());
        rp_sink_printf(&b, "\n=================================================================\n");
        rp_sink_printf(&b, "==%ld==ERROR: rampart: detected memory leaks in heap '%s'\n", (long)getpid(), h->name);
        for (size_t i = 0; i < n; i++) {
            rp_sink_printf(&b, "\nLeak of %zu byte(s) in %zu object(s) allocated from:\n", t.slots[i].bytes,
                           t.slots[i].count);
            char text[RP_STACK_MAX_FRAMES * 200];
            size_t k = rp_symbolize_stack(t.slots[i].stack, text, sizeof text);
            rp_sink_puts(&b, text, k);
        }
        rp_sink_printf(&b, "\nSUMMARY: rampart: %zu byte(s) leaked in %zu allocation(s) (heap '%s').\n", bytes,
                       blocks, h->name);
        rp_sink_flush(&b);
    }
    rp_os_scratch_unmap(t.slots, t.map_len);
    return blocks;
}

int rp_set_not_leak(const void *p)
{
    rp_region *r = p ? rp_pagemap_lookup(p) : NULL;
    if (!r) {
        errno = EINVAL;
        return -1;
    }
    rp_heap *h = r->heap;
    int rc = -1;
    rp_fault ignored;
    ignored.kind = 0;
    rp_located loc;
    rp_lock_acquire(&h->lock);
    if (rp_locate(h, r, p, &loc, &ignored) == 0) {
        uint64_t secret = rp_debug_secret(h);
        rp_debug_meta m;
        rp_meta_load(p, &m);
        if (m.seal == rp_meta_seal(secret, p, &m) && m.state == RP_META_LIVE) {
            m.flags |= RP_META_NOT_LEAK;
            rp_meta_store(secret, (void *)p, &m);
            rc = 0;
        }
    }
    rp_lock_release(&h->lock);
    if (rc)
        errno = EINVAL;
    return rc;
}

void rp_heap_set_not_leak(rp_heap *h, int on)
{
    h = rp_heap_resolve(h);
    if (!h)
        return;
    rp_lock_acquire(&h->lock);
    rp_debug_heap *d = rp_debug_of(h);
    if (d)
        d->not_leak = on != 0;
    rp_lock_release(&h->lock);
}

static void report_heap(rp_heap *h, void *arg)
{
    size_t *leaked = arg;
    *leaked += rp_leak_report(h, -1);
}

/* A report for every heap, then exit status leak_exit_code if any heap leaked and the option
 * is set. */
static void leak_report_at_exit(void)
{
    size_t leaked = 0;
    rp_heaps_foreach(report_heap, &leaked);
    int code = rp_debug_config_get()->leak_exit_code;
    if (leaked && code) {
        fflush(NULL);
        _exit(code);
    }
}

/* At load time, not when the first heap is created (inside the first malloc, where atexit,
 * which may allocate, must not run); handlers registered this early run after the program's. */
__attribute__((constructor)) static void register_leak_report(void)
{
    if (rp_debug_config_get()->leak_report)
        atexit(leak_report_at_exit);
}
