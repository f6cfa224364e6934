/* Debug runtime, first cut: records the requested size of every block in the prefix the
 * core reserves, so the debug flavour links and behaves like release otherwise. */
#include <stdint.h>
#include <string.h>

#include "src/heap.h"
#include "src/hooks.h"

typedef struct debug_prefix {
    uint64_t requested;
    uint64_t reserved[3];
} debug_prefix;

_Static_assert(sizeof(debug_prefix) == RP_HOOK_PREFIX, "prefix layout");

static debug_prefix *prefix_of(void *user) { return (debug_prefix *)((char *)user - RP_HOOK_PREFIX); }

void rp_hook_heap_created(rp_heap *h) { (void)h; }
void rp_hook_heap_destroying(rp_heap *h) { (void)h; }

void rp_hook_alloc(rp_heap *h, void *user, size_t requested, size_t usable, size_t align)
{
    (void)h, (void)usable, (void)align;
    prefix_of(user)->requested = requested;
}

int rp_hook_free(rp_heap *h, void *user, size_t usable, struct rp_fault *fault)
{
    (void)h, (void)user, (void)usable, (void)fault;
    return RP_HOOK_FREE_NOW;
}

void rp_hook_resize(rp_heap *h, void *user, size_t requested, size_t usable)
{
    (void)h, (void)usable;
    prefix_of(user)->requested = requested;
}

void rp_hook_span_freed(rp_heap *h, void *p, size_t len) { (void)h, (void)p, (void)len; }

void rp_hook_span_reused(rp_heap *h, void *p, size_t len, struct rp_fault *fault)
{
    (void)h, (void)p, (void)len, (void)fault;
}

size_t rp_hook_usable(rp_heap *h, void *user, size_t usable)
{
    (void)h, (void)usable;
    return prefix_of(user)->requested;
}

void rp_hook_block_info(rp_heap *h, rp_block_info *info)
{
    (void)h;
    info->requested = prefix_of(info->addr)->requested;
}

int rp_hook_check_block(rp_heap *h, const rp_block_info *info, char *why, size_t len)
{
    (void)h, (void)info, (void)why, (void)len;
    return 0;
}

int rp_hook_check_heap(rp_heap *h, char *why, size_t len)
{
    (void)h, (void)why, (void)len;
    return 0;
}

void rp_hook_report(rp_report *r) { (void)r; }
