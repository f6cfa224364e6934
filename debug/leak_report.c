/* Leak reports in the format of LeakSanitizer, from a reachability scan (leak_scan.h): the
 * blocks no root reaches, grouped by kind (direct, indirect) and allocation stack, direct
 * leaks first, each kind largest total first, less the suppressed ones (suppressions.h).
 * rp_leak_report in rampart_debug.h; the exit-time report is exit_check.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "block_meta.h"
#include "config.h"
#include "debug_heap.h"
#include "leak_report.h"
#include "leak_scan.h"
#include "rampart_debug.h"
#include "report_sink.h"
#include "sort.h"
#include "src/locate.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "suppressions.h"
#include "symbolize.h"

typedef struct leak_group {
    uint32_t stack;
    uint32_t tag;  /* RP_LEAK_DIRECT / RP_LEAK_INDIRECT; 0 = empty slot */
    size_t bytes;
    size_t count;
    int suppression; /* index of the suppression hiding it, -1 = reported */
} leak_group;

static size_t slot_of(uint32_t stack, uint32_t tag, size_t nslots)
{
    return (size_t)((stack * 0x9e3779b1u) ^ (tag * 0x85ebca6bu)) & (nslots - 1);
}

/* Whether group a is printed before group b: direct leaks first, then the larger total. */
static int bigger_first(const void *a, const void *b)
{
    const leak_group *x = a, *y = b;
    if (x->tag != y->tag)
        return x->tag < y->tag;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes;
    if (x->count != y->count)
        return x->count > y->count;
    return x->stack < y->stack;
}

/* Groups the leaked blocks of scan s (of heap `only`, or all) and prints them to fd. Returns
 * the number of leaked blocks reported. */
static size_t report(const rp_leak_scan *s, rp_heap *only, int fd)
{
    size_t leaked = 0;
    for (size_t i = 0; i < s->n; i++)
        if ((s->blocks[i].tag == RP_LEAK_DIRECT || s->blocks[i].tag == RP_LEAK_INDIRECT) &&
            (!only || s->blocks[i].heap == only))
            leaked++;
    if (!leaked)
        return 0;
    size_t nslots = (size_t)1 << rp_ceil_log2(2 * leaked + 2);
    size_t map_len = rp_align_up(nslots * sizeof(leak_group), RP_OS_PAGE);
    leak_group *g = rp_os_scratch_map(map_len);
    if (!g)
        return 0;
    for (size_t i = 0; i < s->n; i++) {
        const rp_leak_block *b = &s->blocks[i];
        if ((b->tag != RP_LEAK_DIRECT && b->tag != RP_LEAK_INDIRECT) || (only && b->heap != only))
            continue;
        size_t k = slot_of(b->stack, b->tag, nslots);
        while (g[k].tag && (g[k].tag != b->tag || g[k].stack != b->stack))
            k = (k + 1) & (nslots - 1);
        g[k].tag = b->tag;
        g[k].stack = b->stack;
        g[k].bytes += b->hi - b->lo;
        g[k].count++;
    }
    size_t n = 0;
    for (size_t k = 0; k < nslots; k++)
        if (g[k].tag)
            g[n++] = g[k];
    rp_sort(g, n, sizeof *g, bigger_first);

    size_t blocks = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t frames[RP_STACK_MAX_FRAMES];
        unsigned nf = rp_depot_get(g[i].stack, frames, RP_STACK_MAX_FRAMES);
        g[i].suppression = rp_suppression_match(frames, nf);
        if (g[i].suppression >= 0) {
            rp_suppression_used(g[i].suppression, g[i].count, g[i].bytes);
            continue;
        }
        blocks += g[i].count;
        bytes += g[i].bytes;
    }
    rp_sink_buf b;
    rp_sink_begin(&b, fd >= 0 ? fd : rp_sink_fd());
    if (blocks) {
        rp_sink_printf(&b, "\n=================================================================\n");
        if (only)
            rp_sink_printf(&b, "==%ld==ERROR: rampart: detected memory leaks in heap '%s'\n", (long)getpid(),
                           only->name);
        else
            rp_sink_printf(&b, "==%ld==ERROR: rampart: detected memory leaks\n", (long)getpid());
        for (size_t i = 0; i < n; i++) {
            if (g[i].suppression >= 0)
                continue;
            rp_sink_printf(&b, "\n%s leak of %zu byte(s) in %zu object(s) allocated from:\n",
                           g[i].tag == RP_LEAK_DIRECT ? "Direct" : "Indirect", g[i].bytes, g[i].count);
            rp_symbolize_stack_to(&b, g[i].stack);
        }
        rp_sink_printf(&b, "\n");
    }
    rp_suppressions_print_used(&b);
    if (blocks) {
        if (only)
            rp_sink_printf(&b, "SUMMARY: rampart: %zu byte(s) leaked in %zu allocation(s) (heap '%s').\n", bytes,
                           blocks, only->name);
        else
            rp_sink_printf(&b, "SUMMARY: rampart: %zu byte(s) leaked in %zu allocation(s).\n", bytes, blocks);
    }
    rp_sink_flush(&b);
    rp_os_scratch_unmap(g, map_len);
    return blocks;
}

static void warn_scan(const rp_leak_scan *s, int fd)
{
    rp_sink_buf b;
    rp_sink_begin(&b, fd >= 0 ? fd : rp_sink_fd());
    if (s->failed)
        rp_sink_printf(&b, "rampart: leak check not possible (no /proc/self, or no memory for its tables)\n");
    else if (s->not_stopped)
        rp_sink_printf(&b,
                       "rampart: leak check: %zu thread(s) did not stop; every writable mapping was scanned in "
                       "their place (leaks may be missed)\n",
                       s->not_stopped);
    rp_sink_flush(&b);
}

__attribute__((noinline)) size_t rp_leak_check_from(rp_heap *only, int fd, uintptr_t caller_sp, const uintptr_t *regs,
                                                    size_t nregs)
{
    rp_leak_scan s;
    rp_leak_scan_run(&s, caller_sp, regs, nregs);
    if (s.failed || s.not_stopped)
        warn_scan(&s, fd);
    size_t n = s.failed ? 0 : report(&s, only, fd);
    rp_leak_scan_free(&s);
    return n;
}

__attribute__((noinline)) size_t rp_leak_report(rp_heap *h, int fd)
{
    uintptr_t sp = RP_CALLER_SP();
    if (h && !rp_heap_resolve(h))
        return 0;
    return rp_leak_check_from(h, fd, sp, NULL, 0);
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
