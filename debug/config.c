/* Snapshot of the debug keys of RAMPART_OPTIONS, taken once: hooks read plain fields instead
 * of going through rp_options_get() (a pthread_once) on every allocation. */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "src/options.h"

rp_debug_config rp_debug_config_snapshot;
int rp_debug_config_ready; /* the hot path's only check */
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

size_t rp_debug_quarantine_auto(void)
{
    const size_t asan_scale = (size_t)256 << 20; /* ASan's default quarantine */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return asan_scale;
    size_t eighth = (size_t)pages / 8 * (size_t)page; /* per heap: a few heaps stay well within RAM */
    return eighth < asan_scale ? eighth : asan_scale;
}

static void config_init(void)
{
    const rp_options *o = rp_options_get();
    rp_debug_config *c = &rp_debug_config_snapshot;
    c->poison = o->poison;
    c->alloc_fill = (unsigned char)o->alloc_fill;
    c->free_fill = (unsigned char)o->free_fill;
    c->alloc_fill_max = o->alloc_fill_max;
    c->quarantine_bytes = o->quarantine_bytes == RP_QUARANTINE_AUTO ? rp_debug_quarantine_auto() : o->quarantine_bytes;
    c->backtrace_depth = o->backtrace_depth;
    c->fast_unwind = o->fast_unwind;
    c->check_interval = o->check_interval;
    c->abort_on_error = o->abort_on_error;
    c->leak_report = o->leak_report;
    c->check_at_exit = o->check_at_exit;
    c->leak_exit_code = (int)o->leak_exit_code;
    c->guard = o->guard;
    c->guard_left = o->guard_left;
    __atomic_store_n(&rp_debug_config_ready, 1, __ATOMIC_RELEASE);
}

void rp_debug_config_fill(void) { pthread_once(&config_once, config_init); }
