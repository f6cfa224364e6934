#include "malloc_fork.h"

#include <pthread.h>

#include "arena.h"
#include "guard_pool.h"
#include "src/heap.h"
#include "malloc_init.h"
#include "malloc_slabs.h"
#include "thread_cache.h"
#include "transfer_cache.h"
#include "zero_size.h"

static void fork_prepare(void)
{
    rp_malloc_init_fork_prepare();
    rp_arena_fork_prepare();
    rp_tc_fork_prepare();
    rp_xfer_fork_prepare();
    rp_heaps_fork_prepare();
    rp_ms_fork_prepare(); /* taken inside a heap lock by a pool (malloc_slabs.h): last */
    rp_zs_fork_prepare();
    rp_gp_fork_prepare();
}

static void fork_parent(void)
{
    rp_gp_fork_parent();
    rp_zs_fork_parent();
    rp_ms_fork_parent();
    rp_heaps_fork_parent();
    rp_xfer_fork_parent();
    rp_tc_fork_parent();
    rp_arena_fork_parent();
    rp_malloc_init_fork_parent();
}

static void fork_child(void)
{
    rp_gp_fork_child();
    rp_zs_fork_child();
    rp_ms_fork_child();
    rp_heaps_fork_child();
    rp_xfer_fork_child();
    rp_tc_fork_child();
    rp_arena_fork_child();
    rp_malloc_init_fork_child();
}

void rp_malloc_fork_install(void)
{
    /* The heaps' locks are taken here, inside the drop-in's, so the core's own handlers stand
     * aside. Called during set-up, under the set-up lock that fork_prepare takes first: a fork
     * meanwhile waits until both steps are done. */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    rp_heaps_fork_by_caller();
}
