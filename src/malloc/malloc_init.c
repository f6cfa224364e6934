#define _GNU_SOURCE
#include "malloc_init.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "arena.h"
#include "malloc_fork.h"
#include "malloc_stats.h"
#include "malloc_totals.h"
#include "profile.h"
#include "src/options.h"
#include "thread_cache.h"

/* Tells the options parser that this library has the malloc drop-in (src/options.h). */
const char rp_options_part_malloc = 1;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int ready; /* atomic: set-up complete */
static __thread int in_init __attribute__((tls_model("initial-exec")));

/* The at-exit report writes to a copy of stderr taken at set-up: programs often close
 * stderr in their own exit handlers (which run before this one). */
static int stats_fd = -1;

static void stats_at_exit(void)
{
    if (rp_options_get()->stats_json)
        rp_malloc_stats_json_fd(stats_fd);
    else
        rp_malloc_stats_print_fd(stats_fd);
}

int rp_malloc_ready(void) { return __atomic_load_n(&ready, __ATOMIC_ACQUIRE); }

int rp_malloc_init(void)
{
    if (rp_malloc_ready())
        return 1;
    if (in_init)
        return 0;
    in_init = 1;
    pthread_mutex_lock(&init_lock);
    if (!__atomic_load_n(&ready, __ATOMIC_RELAXED)) {
        /* Without arena 0 nothing is set up; a later call tries again. The steps below may
         * allocate (pthread_atfork, atexit): in_init sends those allocations to arena 0. */
        if (rp_arenas_setup() && rp_tc_setup() == 0) {
            rp_malloc_fork_install();
            rp_malloc_totals_setup();
            rp_prof_setup();
            if (rp_options_get()->stats || rp_options_get()->stats_json) {
                stats_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
                if (stats_fd >= 0)
                    atexit(stats_at_exit);
            }
            __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&init_lock);
    in_init = 0;
    return rp_malloc_ready();
}

void rp_malloc_init_fork_prepare(void) { pthread_mutex_lock(&init_lock); }
void rp_malloc_init_fork_parent(void) { pthread_mutex_unlock(&init_lock); }
void rp_malloc_init_fork_child(void) { pthread_mutex_init(&init_lock, NULL); }
