/* Snapshot of the debug keys of RAMPART_OPTIONS, taken once: hooks read plain fields instead
 * of going through rp_options_get() (a pthread_once) on every allocation. */
#include "config.h"

#include <pthread.h>

#include "src/options.h"

static rp_debug_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int config_ready; /* set (release) once config is filled: the hot path's only check */

static void config_init(void)
{
    const rp_options *o = rp_options_get();
    config.poison = o->poison;
    config.alloc_fill = (unsigned char)o->alloc_fill;
    config.free_fill = (unsigned char)o->free_fill;
    config.quarantine_bytes = o->quarantine_bytes;
    config.backtrace_depth = o->backtrace_depth;
    config.check_interval = o->check_interval;
    config.abort_on_error = o->abort_on_error;
    config.leak_report = o->leak_report;
    config.leak_exit_code = (int)o->leak_exit_code;
    __atomic_store_n(&config_ready, 1, __ATOMIC_RELEASE);
}

const rp_debug_config *rp_debug_config_get(void)
{
    if (__builtin_expect(!__atomic_load_n(&config_ready, __ATOMIC_ACQUIRE), 0))
        pthread_once(&config_once, config_init);
    return &config;
}
