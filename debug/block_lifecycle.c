/* The block lifecycle hooks of src/hooks.h: allocation, free (into quarantine), in-place
 * resize, access checks for realloc / rp_usable_size, and the debug view of a block.
 * The other hooks live with their concept: rp_hook_span_freed / rp_hook_span_reused in
 * poison.c, rp_hook_check_block / rp_hook_check_heap in checker.c, rp_hook_report in
 * debug_report.c, heap creation and destruction in debug_heap.c. */
#include "backtrace.h"
#include "block_check.h"
#include "checker.h"
#include "config.h"
#include "cookie.h"
#include "debug_heap.h"
#include "debug_report.h"
#include "poison.h"
#include "quarantine.h"
#include "sanitizer_track.h"

void rp_hook_alloc(rp_heap *h, void *user, size_t requested, size_t usable, size_t align, struct rp_fault *fault)
{
    (void)align;
    const rp_debug_config *cfg = rp_debug_config_get();
    uint64_t secret = rp_debug_secret(h);
    char *u = user;
    rp_debug_meta m = {
        .requested = requested,
        .alloc_stack = rp_backtrace_program_stack(),
        .state = RP_META_LIVE,
        .canary = rp_cookie_lead(secret, user),
    };
    rp_meta_store(secret, user, &m);
    rp_san_open(u, usable);
    rp_poison_fill(u, rp_hook_alloc_written(requested), cfg->alloc_fill);
    rp_cookie_write_trailer(secret, user, requested, u + usable);
    rp_san_block_live(h, user, requested, usable);
    rp_debug_periodic_check(h, fault);
}

size_t rp_hook_alloc_written(size_t requested)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    if (!cfg->poison)
        return 0;
    return requested < cfg->alloc_fill_max ? requested : cfg->alloc_fill_max;
}

/* Loads the metadata; 1 (and a double-free fault naming both stacks) when the block is
 * already in quarantine. */
static int freed_already(rp_heap *h, void *user, rp_debug_meta *m, const char *what, rp_fault *fault)
{
    rp_meta_load(user, m);
    if (m->state != RP_META_QUARANTINED || m->seal != rp_meta_seal(rp_debug_secret(h), user, m))
        return 0;
    rp_debug_fault(fault, RP_ERR_DOUBLE_FREE, h, user, user, (size_t)m->requested, m,
                   "%s of %p in heap '%s', which was already freed", what, user, h->name);
    return 1;
}

int rp_hook_free(rp_heap *h, void *user, size_t usable, struct rp_fault *fault)
{
    rp_debug_periodic_check(h, fault);
    rp_debug_meta m;
    if (freed_already(h, user, &m, "free", fault) || rp_block_verify(h, user, usable, &m, fault) != RP_VERIFY_OK ||
        rp_block_check_neighbours(h, user, usable, &m, fault))
        return RP_HOOK_FREE_REFUSE;
    const rp_debug_config *cfg = rp_debug_config_get();
    rp_debug_heap *d = rp_debug_of(h);
    if (d && usable <= cfg->quarantine_bytes && rp_quarantine_push(&d->quarantine, user, usable) == 0) {
        m.state = RP_META_QUARANTINED;
        m.free_stack = rp_backtrace_program_stack();
        rp_meta_store(rp_debug_secret(h), user, &m);
        if (cfg->poison) {
            rp_san_open(user, usable);
            rp_poison_fill(user, usable, cfg->free_fill);
        }
        rp_san_block_freed(h, user, usable);
        rp_quarantine_trim(h, cfg->quarantine_bytes, fault);
        return RP_HOOK_FREE_LATER;
    }
    /* Too big for the quarantine (or quarantine off): back to the core now, which fills span
     * memory with the free pattern (rp_hook_span_freed). */
    rp_san_block_freed(h, user, usable);
    rp_san_block_released(h, user, usable);
    return RP_HOOK_FREE_NOW;
}

int rp_hook_access(rp_heap *h, void *user, size_t usable, int for_realloc, struct rp_fault *fault)
{
    rp_debug_meta m;
    if (freed_already(h, user, &m, for_realloc ? "rp_realloc" : "rp_usable_size", fault))
        return 1;
    if (!for_realloc)
        return 0;
    if (rp_block_verify(h, user, usable, &m, fault) != RP_VERIFY_OK ||
        rp_block_check_neighbours(h, user, usable, &m, fault))
        return 1;
    /* An in-place resize may write a block header into the trailer: open it for the core
     * (rp_hook_resize, or the free of a moved block, closes it again). */
    rp_san_open((char *)user + m.requested, usable - (size_t)m.requested);
    return 0;
}

void rp_hook_resize(rp_heap *h, void *user, size_t requested, size_t usable, struct rp_fault *fault)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    uint64_t secret = rp_debug_secret(h);
    char *u = user;
    rp_debug_meta m;
    rp_meta_load(user, &m);
    size_t old = (size_t)m.requested;
    size_t kept = old < requested ? old : requested;
    rp_san_open(u + kept, usable - kept);
    size_t fill_end = rp_hook_alloc_written(requested); /* the first alloc_fill_max bytes */
    if (fill_end > old)
        rp_poison_fill(u + old, fill_end - old, cfg->alloc_fill);
    rp_cookie_write_trailer(secret, user, requested, u + usable);
    m.requested = requested;
    m.alloc_stack = rp_backtrace_program_stack();
    rp_meta_store(secret, user, &m);
    rp_san_block_resized(h, user, old, requested, usable);
    rp_debug_periodic_check(h, fault);
}

int rp_hook_realloc_moves(void) { return 1; }

size_t rp_hook_usable(rp_heap *h, void *user, size_t usable)
{
    rp_debug_meta m;
    rp_meta_load(user, &m);
    if (m.seal != rp_meta_seal(rp_debug_secret(h), user, &m) || m.requested > usable)
        return usable;
    return (size_t)m.requested;
}

void rp_hook_block_info(rp_heap *h, rp_block_info *info)
{
    rp_debug_meta m;
    rp_meta_load(info->addr, &m);
    if (m.seal != rp_meta_seal(rp_debug_secret(h), info->addr, &m))
        return;
    info->requested = (size_t)m.requested;
    info->alloc_stack = m.alloc_stack;
    info->free_stack = m.free_stack;
    if (m.state == RP_META_QUARANTINED)
        info->state = RP_BLOCK_QUARANTINED;
}
