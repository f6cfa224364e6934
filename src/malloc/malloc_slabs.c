#include "malloc_slabs.h"

#include <string.h>

#include "arena.h"
#include "hardened.h"
#include "src/lock.h"
#include "src/options.h"
#include "src/os.h"
#include "src/report.h"
#include "thread_cache.h"

rp_slab_space rp_ms_space; /* len 0 until rp_ms_setup succeeds */

int rp_ms_setup(void)
{
#ifdef RAMPART_DEBUG
    return -1; /* the debug flavour's blocks carry headers the hooks use */
#else
    if (!rp_options_get()->slabs || rp_options_get()->cache_bytes == 0)
        return -1; /* off; or nothing is cached, so nothing would refill from slabs */
    rp_slab_space s;
    if (rp_slab_space_init(&s, RP_MS_SPACE_BYTES) != 0)
        return -1;
    /* As the arenas' regions (option huge_pages), but per pool: an arena's first chunk of
     * slabs keeps 4 KiB pages (a thread, or a program, that allocates little does not fault in
     * 2 MiB at its first small block), its later chunks are advised (slab.c, space_take). */
    s.advise_huge_pages = rp_options_get()->huge_pages;
    s.guard_chunks = rp_hardened_on(); /* the hardened profile (hardened.h) */
    /* Emptied slabs keep their pages up to retain_bytes (the heaps' own limit, per heap
     * there, for all pools here), as the page tier keeps free pages. */
    s.dirty_max = rp_options_get()->retain_bytes >> RP_SLAB_SHIFT;
    /* free() reads the space without a lock: every other field first, the length last. */
    size_t len = s.len;
    s.len = 0;
    memcpy(&rp_ms_space, &s, sizeof s);
    __atomic_store_n(&rp_ms_space.len, len, __ATOMIC_RELEASE);
    return 0;
#endif
}

void rp_ms_arena_init(rp_heap *h, rp_slab_pool *pool)
{
    if (!rp_ms_on()) {
        h->malloc_slabs = NULL;
        return;
    }
    rp_slab_pool_init(pool, &rp_ms_space, RP_MS_KEEP_EMPTY);
    pool->owner = h;
    h->malloc_slabs = pool;
}

rp_heap *rp_ms_heap_of(const void *p)
{
    if (!rp_ms_contains(p))
        return rp_heap_of(p);
    uint32_t stride;
    rp_slab *d = rp_slab_block_live(&rp_ms_space, p, &stride);
    return d ? rp_ms_owner(d) : NULL;
}

rp_slab_pool *rp_ms_pool_of(const rp_heap *h) { return (rp_slab_pool *)h->malloc_slabs; }

size_t rp_ms_refill(rp_heap *h, unsigned cls, void **out, size_t n, size_t run_max, void **run_first,
                    size_t *run_n, uintptr_t *chunk_lo)
{
    rp_slab_pool *pool = rp_ms_pool_of(h);
    *run_n = 0;
    *chunk_lo = 0;
    if (!pool)
        return 0;
    rp_lock_acquire(&h->lock);
    size_t got = rp_slab_take_recycled(pool, cls, out, n);
    if (got == 0 && run_max)
        *run_n = rp_slab_take_fresh(pool, cls, run_max, run_first);
    if (pool->chunk)
        *chunk_lo = rp_ms_space.base + ((pool->chunk - 1) << RP_SLAB_CHUNK_SHIFT);
    rp_lock_release(&h->lock);
    return got;
}

void rp_ms_give_back(rp_heap *h, void *const *blocks, size_t n)
{
    rp_slab_pool *pool = rp_ms_pool_of(h);
    rp_lock_acquire(&h->lock);
    rp_slab_give_back(pool, blocks, n);
    rp_lock_release(&h->lock);
}

/* Calls fn for every arena's pool with the arena's lock held, until one returns non-zero
 * (returned). */
static int for_each_pool(int (*fn)(rp_heap *h, rp_slab_pool *pool, void *arg), void *arg)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        rp_slab_pool *pool = h ? rp_ms_pool_of(h) : NULL;
        if (!pool)
            continue;
        rp_lock_acquire(&h->lock);
        int rc = fn(h, pool, arg);
        rp_lock_release(&h->lock);
        if (rc)
            return rc;
    }
    return 0;
}

static int trim_pool(rp_heap *h, rp_slab_pool *pool, void *arg)
{
    (void)h;
    *(size_t *)arg += rp_slab_pool_trim(pool);
    return 0;
}

size_t rp_ms_trim(void)
{
    size_t n = 0;
    for_each_pool(trim_pool, &n);
    if (rp_ms_on())
        n += rp_slab_space_purge(&rp_ms_space, 0); /* the slabs kept resident too */
    return n;
}

typedef struct check_arg {
    char *why;
    size_t len;
} check_arg;

static int check_pool(rp_heap *h, rp_slab_pool *pool, void *arg)
{
    check_arg *c = arg;
    char inner[200];
    if (rp_slab_pool_check(pool, inner, sizeof inner) == 0)
        return 0;
    return rp_why(c->why, c->len, "slabs of '%s': %s", h->name, inner);
}

int rp_ms_check(char *why, size_t len)
{
    if (!rp_ms_on())
        return 0;
    if (rp_slab_space_check(&rp_ms_space, why, len) != 0)
        return 1;
    check_arg c = {why, len};
    return for_each_pool(check_pool, &c);
}

static int add_pool(rp_heap *h, rp_slab_pool *pool, void *arg)
{
    (void)h;
    rp_ms_totals_t *t = arg;
    t->slabs += pool->slabs;
    t->live_blocks += pool->blocks_live;
    t->live_bytes += pool->bytes_live;
    t->empty_slabs += pool->empty_n;
    return 0;
}

void rp_ms_totals(rp_ms_totals_t *t)
{
    memset(t, 0, sizeof *t);
    for_each_pool(add_pool, t);
    t->slab_bytes = t->slabs << RP_SLAB_SHIFT;
    if (rp_ms_on()) {
        rp_lock_acquire(&rp_ms_space.lock);
        t->released_bytes = rp_ms_space.releases << RP_SLAB_SHIFT;
        rp_lock_release(&rp_ms_space.lock);
    }
}

void rp_ms_counts(rp_heap *h, uint64_t *taken, uint64_t *given)
{
    rp_slab_pool *pool = rp_ms_pool_of(h);
    *taken = *given = 0;
    if (!pool)
        return;
    rp_lock_acquire(&h->lock);
    *taken = pool->taken;
    *given = pool->given;
    rp_lock_release(&h->lock);
}

void rp_ms_fork_prepare(void)
{
    if (rp_ms_on())
        rp_slab_space_fork_prepare(&rp_ms_space);
}

void rp_ms_fork_parent(void)
{
    if (rp_ms_on())
        rp_slab_space_fork_parent(&rp_ms_space);
}

void rp_ms_fork_child(void)
{
    if (rp_ms_on())
        rp_slab_space_fork_child(&rp_ms_space);
}
