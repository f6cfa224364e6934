/* Creation and destruction of the per-heap state, process start-up of the runtime, and the
 * runtime's counters. */
#include "debug_heap.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "backtrace.h"
#include "config.h"
#include "rampart_debug.h"
#include "sanitizer_track.h"
#include "src/os.h"

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* Runs inside the first allocation (with rampart as malloc, possibly before any constructor):
 * nothing here may allocate. What may (atexit, pthread_atfork) is registered at load time
 * instead (leak_report.c, stack_depot.c, dump_trigger.c). */
static void process_init(void)
{
    rp_debug_config_get();
    rp_san_init();
    rp_backtrace_init();
}

void rp_hook_heap_created(rp_heap *h)
{
    pthread_once(&process_once, process_init);
    size_t len = rp_align_up(sizeof(rp_debug_heap), RP_OS_PAGE);
    rp_debug_heap *d = rp_os_scratch_map(len); /* zeroed */
    if (d)
        d->map_len = len;
    h->debug = d;
}

void rp_hook_heap_destroying(rp_heap *h)
{
    rp_san_heap_dropped(h);
    rp_debug_heap *d = rp_debug_of(h);
    if (!d)
        return;
    /* The quarantined blocks go away with the heap's memory. */
    rp_quarantine_drop(&d->quarantine);
    h->debug = NULL;
    rp_os_scratch_unmap(d, d->map_len);
}

void rp_hook_region_leaving(rp_heap *h, void *lo, size_t len)
{
    (void)h;
    rp_san_region_leaving(lo, len);
}

int rp_debug_get_stats(rp_heap *h, rp_debug_stats *out)
{
    h = rp_heap_resolve(h);
    if (!h || !out) {
        errno = EINVAL;
        return -1;
    }
    memset(out, 0, sizeof *out);
    rp_lock_acquire(&h->lock);
    rp_debug_heap *d = rp_debug_of(h);
    if (d) {
        out->quarantined_blocks = d->quarantine.count;
        out->quarantined_bytes = d->quarantine.bytes;
    }
    rp_lock_release(&h->lock);
    out->stacks = rp_depot_count();
    out->depot_bytes = rp_depot_bytes();
    return 0;
}
