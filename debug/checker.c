#include "checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_check.h"
#include "config.h"
#include "debug_heap.h"
#include "debug_report.h"
#include "poison.h"
#include "quarantine.h"
#include "sanitizer_track.h"
#include "stack_depot.h"
#include "src/walk.h"

int rp_hook_check_block(rp_heap *h, const rp_block_info *info, char *why, size_t len)
{
    rp_fault f;
    f.kind = 0;
    rp_debug_meta m;
    int code = rp_block_verify(h, info->addr, info->size, &m, &f);
    if (code == RP_VERIFY_OK)
        return 0;
    if (why && len)
        snprintf(why, len, "%s: %s", rp_verify_name(code), f.message);
    rp_debug_heap *d = rp_debug_of(h);
    if (d && d->check_fault.kind == 0)
        d->check_fault = f;
    return 1;
}

typedef struct heap_scan {
    size_t quarantined;
    const void *bad;        /* first byte breaking F1 */
    unsigned found;         /* its value */
    const void *free_block; /* the free block holding it */
} heap_scan;

static int scan_block(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)h, (void)r;
    heap_scan *s = arg;
    if (info->state == RP_BLOCK_QUARANTINED)
        s->quarantined++;
    if (!s->bad) {
        unsigned found = 0;
        const unsigned char *bad = rp_poison_check_free_block(info, &found);
        if (bad) {
            s->found = found;
            s->bad = bad;
            s->free_block = info->addr;
        }
    }
    return 0;
}

int rp_hook_check_heap(rp_heap *h, char *why, size_t len)
{
    char local[256];
    if (!why || !len) {
        why = local;
        len = sizeof local;
    }
    heap_scan s = {0};
    if (rp_walk_locked(h, scan_block, &s, why, len) != 0)
        return 1;
    if (s.bad) {
        snprintf(why, len, "F1: free block %p was written at %p (found 0x%02x, free pattern 0x%02x)", s.free_block,
                 s.bad, s.found, rp_debug_config_get()->free_fill);
        rp_debug_heap *d = rp_debug_of(h);
        if (d && d->check_fault.kind == 0)
            rp_debug_fault(&d->check_fault, RP_ERR_USE_AFTER_FREE_WRITE, h, s.bad, NULL, 0, NULL, "%s", why + 4);
        return 1;
    }
    if (rp_quarantine_check(h, s.quarantined, why, len))
        return 1;
    return rp_depot_check_if_grown(why, len);
}

/* A core invariant failed: its kind from the invariant's family, its address from the first
 * pointer in the message (every message of src/check.c names the address concerned). */
static void fault_from_core_message(rp_fault *f, rp_heap *h, const char *why)
{
    rp_error_kind kind = RP_ERR_CORRUPT_BLOCK;
    if (why[0] == 'I' || strncmp(why, "K6", 2) == 0)
        kind = RP_ERR_CORRUPT_FREE_LIST;
    const void *address = NULL;
    const char *hex = strstr(why, "0x");
    if (hex)
        address = (const void *)(uintptr_t)strtoull(hex, NULL, 16);
    rp_debug_fault(f, kind, h, address, NULL, 0, NULL, "heap check: %.146s", why);
}

void rp_debug_periodic_check(rp_heap *h, rp_fault *fault)
{
    unsigned long interval = rp_debug_config_get()->check_interval;
    rp_debug_heap *d = rp_debug_of(h);
    if (!interval || !d || d->periodic_check_off || ++d->ops_since_check < interval)
        return;
    d->ops_since_check = 0;
    d->check_fault.kind = 0;
    char why[sizeof fault->message];
    if (!rp_heap_check_locked(h, why, sizeof why))
        return;
    d->periodic_check_off = 1;
    if (fault->kind != 0)
        return;
    if (d->check_fault.kind) {
        *fault = d->check_fault;
        snprintf(fault->message, sizeof fault->message, "heap check: %.146s", why);
    } else {
        fault_from_core_message(fault, h, why);
    }
}
