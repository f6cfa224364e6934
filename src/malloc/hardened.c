#include "hardened.h"

#include <errno.h>
#include <string.h>

#include "cache_mark.h"
#include "guarded_memory.h"
#include "src/hooks.h"
#include "src/options.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/report.h"
#include "src/xorshift.h"
#include "thread_cache.h"

/* The profile is the release flavour's: in the debug flavour the option is kept (and warned
 * about) but changes nothing, since blocks there carry the debug runtime's cookies, never a
 * seal. */
int rp_hardened_on(void) { return RP_HOOK_PREFIX == 0 && rp_options_get()->hardened; }

/* Not a secret: which slot leaves next. */
static uint64_t next_random(rp_tcache *tc) { return rp_xorshift_next(&tc->hq_rng); }

/* The first byte of [p, p + n) that is not zero, or NULL (n a multiple of 16: whole words
 * are ORed together first, which the compiler turns into vector loads). */
static const unsigned char *first_written(const unsigned char *p, size_t n)
{
    uint64_t any = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        any |= w;
    }
    if (!any)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return p + i;
    return NULL;
}

/* Bytes of a quarantined block checked when it leaves: all of it up to 512 bytes, else its
 * first and last 256 (where stale pointers and small overruns of the freed block write). */
#define HQ_CHECK_ALL 512u
#define HQ_CHECK_EDGE 256u

static const unsigned char *written_after_free(const rp_hq_entry *e)
{
    const unsigned char *p = e->p;
    if (e->bytes <= HQ_CHECK_ALL)
        return first_written(p, e->bytes);
    const unsigned char *at = first_written(p, HQ_CHECK_EDGE);
    return at ? at : first_written(p + e->bytes - HQ_CHECK_EDGE, HQ_CHECK_EDGE);
}

/* Makes the block zero again (after a report): pages go back to the OS where they may. */
static void wipe(const rp_hq_entry *e)
{
    if (e->kind == RP_HQ_DIRECT && rp_os_decommit(e->p, e->bytes) == 0)
        return;
    rp_memset_unchecked(e->p, 0, e->bytes);
}

static void report_written(const rp_hq_entry *e, const unsigned char *at)
{
    rp_region *r = rp_ms_contains(e->p) ? NULL : rp_pagemap_lookup(e->p);
    rp_heap *h = rp_ms_contains(e->p) ? rp_ms_owner(rp_slab_of(&rp_ms_space, e->p)) : r ? r->heap : NULL;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_USE_AFTER_FREE_WRITE, h, at, e->p, e->bytes,
                 "%p: the freed %zu-byte block was written after its free (byte %zu is 0x%02x; the hardened "
                 "profile zeroes freed blocks and checks them before reuse)",
                 e->p, e->bytes, (size_t)(at - (const unsigned char *)e->p), *at);
    rp_report_fault(&f);
}

/* A block leaves the quarantine: checked, then to its bin, its page bin or its heap. */
static void release(rp_tcache *tc, rp_hq_entry e)
{
    const unsigned char *at = written_after_free(&e);
    if (at) {
        report_written(&e, at);
        wipe(&e);
    }
    int saved = errno;
    if (e.kind == RP_HQ_CLASS) {
        rp_tc_push_bin(tc, e.home, e.p, rp_tc_mark_of(tc, e.p));
    } else {
        rp_page *d = e.home;
        if (e.kind == RP_HQ_DIRECT || !(rp_tc_page_push_fast(tc, e.p, d) || rp_tc_page_push_slow(tc, e.p, d))) {
            __atomic_store_n(&d->flags, (uint8_t)(d->flags & ~RP_PAGEF_CACHED), __ATOMIC_RELAXED);
            rp_free(e.p);
        }
    }
    errno = saved;
}

/* Quarantines e, letting randomly chosen blocks leave until it fits. */
static void put(rp_tcache *tc, rp_hq_entry e)
{
    while (tc->hq_n && (tc->hq_n == RP_HQ_SLOTS || tc->hq_bytes + e.bytes > RP_HQ_BYTES)) {
        uint32_t i = (uint32_t)(((next_random(tc) >> 32) * tc->hq_n) >> 32);
        rp_hq_entry out = tc->quarantine[i];
        tc->quarantine[i] = tc->quarantine[--tc->hq_n];
        tc->hq_bytes -= out.bytes;
        release(tc, out); /* the ring is consistent: a report function may free */
    }
    tc->quarantine[tc->hq_n++] = e;
    tc->hq_bytes += e.bytes;
}

void rp_hq_put_class(rp_tcache *tc, rp_tc_bin *bin, void *p, uint8_t *mark, size_t usable)
{
    /* Wiped before it is marked held: another thread's hardened free that finds it cached,
     * next to its own block, expects zeros (neighbour_check.h). */
    rp_memset_unchecked(p, 0, usable);
    rp_cache_mark_set(mark); /* held: a second free is reported while it waits (T7) */
    rp_hq_entry e = {p, bin, usable, RP_HQ_CLASS, 0};
    put(tc, e);
}

void rp_hq_put_pages(rp_tcache *tc, void *p, rp_page *d)
{
    __atomic_store_n(&d->flags, (uint8_t)(d->flags | RP_PAGEF_CACHED), __ATOMIC_RELAXED);
    size_t bytes = (size_t)d->npages << RP_PAGE_SHIFT;
    rp_hq_entry e = {p, d, bytes, d->npages <= RP_TC_PAGE_BINS ? RP_HQ_PAGES : RP_HQ_DIRECT, 0};
    if (e.kind == RP_HQ_PAGES || rp_os_decommit(p, bytes) != 0)
        rp_memset_unchecked(p, 0, bytes);
    put(tc, e);
}

/* At exit, the exiting thread's quarantine is checked where it stands, every byte (at most
 * RP_HQ_BYTES, or one larger block; decommitted pages read as the zero page): a write after
 * free that no reuse will ever find, the program ending first, is still reported. */
__attribute__((destructor)) static void check_quarantine_at_exit(void)
{
    rp_tcache *tc = rp_tc_self;
    if (!tc || !tc->hq_n)
        return;
    for (uint32_t i = 0; i < tc->hq_n; i++) {
        const unsigned char *at = first_written(tc->quarantine[i].p, tc->quarantine[i].bytes);
        if (at) {
            report_written(&tc->quarantine[i], at);
            wipe(&tc->quarantine[i]);
        }
    }
}

void rp_hq_drain(rp_tcache *tc)
{
    while (tc->hq_n) {
        rp_hq_entry out = tc->quarantine[--tc->hq_n];
        tc->hq_bytes -= out.bytes;
        release(tc, out);
    }
}

int rp_hq_check(const rp_tcache *tc, char *why, size_t len)
{
    if (tc->hq_n > RP_HQ_SLOTS)
        return rp_why(why, len, "T7: the quarantine holds %u blocks, more than %u", tc->hq_n, RP_HQ_SLOTS);
    size_t bytes = 0;
    for (uint32_t i = 0; i < tc->hq_n; i++) {
        const rp_hq_entry *e = &tc->quarantine[i];
        bytes += e->bytes;
        int held;
        if (e->kind == RP_HQ_CLASS) {
            const uint8_t *mark = rp_cache_mark(e->p);
            held = mark && rp_cache_marked(mark);
        } else {
            held = (e->kind == RP_HQ_PAGES || e->kind == RP_HQ_DIRECT) && rp_tc_page_cached(e->home);
        }
        if (!held)
            return rp_why(why, len, "T7: quarantined block %p is not marked as held by a cache", e->p);
    }
    if (bytes != tc->hq_bytes || (tc->hq_n > 1 && bytes > RP_HQ_BYTES))
        return rp_why(why, len, "T7: the quarantine counts %zu bytes, its blocks hold %zu (at most %zu)", tc->hq_bytes,
                      bytes, RP_HQ_BYTES);
    return 0;
}
