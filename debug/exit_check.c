/* What the runtime does when the process exits, from a destructor: after the program's exit
 * handlers and the destructors of everything loaded after rampart (C++ statics included),
 * which free what they own.
 *
 *   1. check_at_exit (default on): every block of every heap is verified — the cookies of every
 *      live block (an overflow or underflow of a block that is never freed), the free pattern
 *      of every quarantined block (a write after free still in quarantine) and of free span
 *      memory (a write after free after it) — and each violation is reported as at a free,
 *      with the block's history (then the process aborts, unless on_error=continue);
 *   2. leak_report: the leak check (leak_report.h), reading this thread's stack from the frame
 *      that called exit() (exit_caller.h), then exit status leak_exit_code if it found leaks
 *      and the option is set. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "block_check.h"
#include "config.h"
#include "debug_report.h"
#include "exit_caller.h"
#include "leak_report.h"
#include "poison.h"
#include "report_sink.h"
#include "src/os.h"
#include "src/walk.h"

#define FAULTS_PER_HEAP 16 /* reports per heap (with on_error=continue); the rest are counted */

typedef struct heap_faults {
    rp_fault faults[FAULTS_PER_HEAP];
    unsigned n;
    size_t more; /* violations found beyond FAULTS_PER_HEAP */
} heap_faults;

static void add(heap_faults *hf, const rp_fault *f)
{
    if (hf->n < FAULTS_PER_HEAP)
        hf->faults[hf->n++] = *f;
    else
        hf->more++;
}

static int verify_block(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)r;
    heap_faults *hf = arg;
    rp_fault f;
    f.kind = 0;
    if (info->state == RP_BLOCK_USED || info->state == RP_BLOCK_QUARANTINED) {
        rp_debug_meta m;
        if (rp_block_verify(h, info->addr, info->size, &m, &f) != RP_VERIFY_OK)
            add(hf, &f);
        return 0;
    }
    unsigned found = 0;
    const unsigned char *bad = rp_poison_check_free_block(info, &found);
    if (bad) {
        rp_debug_fault(&f, RP_ERR_USE_AFTER_FREE_WRITE, h, bad, NULL, 0, NULL,
                       "free memory at %p in heap '%s' was written while free (found 0x%02x, free pattern 0x%02x)",
                       (const void *)bad, h->name, found, rp_debug_config_get()->free_fill);
        add(hf, &f);
    }
    return 0;
}

typedef struct heap_set {
    rp_heap **heaps;
    size_t n, cap, map_len;
} heap_set;

static void remember(rp_heap *h, void *arg)
{
    heap_set *s = arg;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        size_t len = rp_align_up(cap * sizeof(rp_heap *), RP_OS_PAGE);
        rp_heap **bigger = rp_os_scratch_map(len);
        if (!bigger)
            return;
        if (s->heaps) {
            memcpy(bigger, s->heaps, s->n * sizeof *bigger);
            rp_os_scratch_unmap(s->heaps, s->map_len);
        }
        s->heaps = bigger;
        s->cap = cap;
        s->map_len = len;
    }
    s->heaps[s->n++] = h;
}

/* Verifies one heap; its violations are reported after its lock is dropped. */
static void verify_heap(rp_heap *h)
{
    heap_faults hf;
    hf.n = 0;
    hf.more = 0;
    char why[160];
    rp_lock_acquire(&h->lock);
    if (rp_walk_locked(h, verify_block, &hf, why, sizeof why) != 0) {
        rp_fault f;
        f.kind = 0;
        rp_debug_fault(&f, RP_ERR_CORRUPT_BLOCK, h, NULL, NULL, 0, NULL, "heap check at exit: %s", why);
        add(&hf, &f);
    }
    rp_lock_release(&h->lock);
    for (unsigned i = 0; i < hf.n; i++)
        rp_report_fault(&hf.faults[i]);
    if (hf.more) {
        rp_sink_buf b;
        rp_sink_begin(&b, rp_sink_fd());
        rp_sink_printf(&b, "rampart: %zu more damaged block(s) in heap '%s' at exit\n", hf.more, h->name);
        rp_sink_flush(&b);
    }
}

static void verify_all_heaps(void)
{
    heap_set s = {NULL, 0, 0, 0};
    rp_heaps_foreach(remember, &s);
    for (size_t i = 0; i < s.n; i++)
        verify_heap(s.heaps[i]);
    if (s.heaps)
        rp_os_scratch_unmap(s.heaps, s.map_len);
}

__attribute__((noinline)) static void at_exit(void)
{
    uintptr_t sp = RP_CALLER_SP();
    const rp_debug_config *cfg = rp_debug_config_get();
    if (cfg->check_at_exit)
        verify_all_heaps();
    if (!cfg->leak_report)
        return;
    rp_exit_caller caller;
    size_t leaked = rp_exit_caller_find(&caller) == 0
                        ? rp_leak_check_from(NULL, -1, caller.sp, caller.regs, caller.nregs)
                        : rp_leak_check_from(NULL, -1, sp, NULL, 0);
    if (leaked && cfg->leak_exit_code) {
        fflush(NULL);
        _exit(cfg->leak_exit_code);
    }
}

__attribute__((destructor)) static void exit_checks(void) { at_exit(); }
