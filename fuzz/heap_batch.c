/* heap_ops's batch operations (rp_alloc_batch, rp_free_batch: src/batch.h, the entry points
 * the malloc drop-in's thread caches use) and caller memory in address space the address map
 * has never seen. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "fuzz/heap_model.h"
#include "src/batch.h"
#include "src/tier.h"

#define BATCH_MAX 64

/* rp_alloc_batch of n blocks into slots s.. of the first heap: a page-tier request or a bad
 * alignment is refused with EINVAL; a short batch means the heap was really out of memory;
 * every block is checked and adopted like rp_alloc's. */
static void alloc_batch(int s, int n, size_t size, size_t align)
{
    heap_model *m = &model.heaps[0];
    for (int i = 0; i < n; i++)
        if (model.slots[(s + i) % NSLOTS].p)
            free_slot((s + i) % NSLOTS);
    void *out[BATCH_MAX];
    uint64_t calls = rp_os_calls();
    errno = 0;
    size_t got = rp_alloc_batch(m->h, size, align, out, (size_t)n);
    TRACE("  rp_alloc_batch(%zu, align %zu, %d) = %zu\n", size, align, n, got);
    expect_no_report();
    size_t normal = align < 16 ? 16 : align;
    int refused = (align & (align - 1)) != 0 || rp_wants_pages(m->h, size, normal);
    if (refused) {
        EXPECT(got == 0 && errno == EINVAL, "rp_alloc_batch(%zu, align %zu) of the page tier: %zu blocks, errno %d",
               size, align, got, errno);
        return;
    }
    EXPECT(got <= (size_t)n, "rp_alloc_batch returned %zu of %d blocks", got, n);
    if (got < (size_t)n) {
        EXPECT(errno == ENOMEM, "a short rp_alloc_batch (%zu of %d) set errno %d", got, n, errno);
        expect_real_oom(m, size, normal, calls);
    }
    for (size_t i = 0; i < got; i++) {
        m->allocs++;
        adopt((int)((s + (int)i) % NSLOTS), 0, out[i], size, normal, ++model.next_id);
    }
}

/* 1 if slot t is among the first k of slots. */
static int slot_listed(const int *slots, size_t k, int t)
{
    for (size_t j = 0; j < k; j++)
        if (slots[j] == t)
            return 1;
    return 0;
}

/* rp_free_batch of the first heap's live blocks among n slots from s (every stride-th), plus
 * one bad pointer when asked (`bad`): 1 the last pointer again (freed twice in one batch), 2 a
 * block of the second heap, 3 memory rampart never handed out, 4 a 16-byte aligned interior
 * pointer of a live block outside the batch (its "header" is user data: the batch's header
 * fast path must refuse it), 5 a pointer freed earlier (stale). The good ones are freed,
 * exactly one report names the bad one, which is left alone. */
static void free_batch(int s, int n, int stride, unsigned bad)
{
    void *ptrs[BATCH_MAX + 1];
    int slots[BATCH_MAX];
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        int t = (s + i * stride) % NSLOTS;
        block *b = &model.slots[t];
        if (!b->p || b->heap != 0 || slot_listed(slots, k, t))
            continue;
        verify_block(b, b->usable, "before a batch free");
        slots[k] = t;
        ptrs[k++] = b->p;
    }
    void *wrong = NULL;
    unsigned kinds = KIND(RP_ERR_INVALID_FREE);
    if (bad == 1 && k > 0) {
        wrong = ptrs[k - 1]; /* its block may still wait in the batch's pending run */
        kinds |= KIND(RP_ERR_DOUBLE_FREE); /* or a stale pointer, once its block merged */
    } else if (bad == 2 && model.heaps[1].h) {
        block *other = NULL;
        for (int i = 0; i < NSLOTS && !other; i++)
            other = model.slots[i].p && model.slots[i].heap == 1 ? &model.slots[i] : NULL;
        wrong = other ? other->p : NULL;
    } else if (bad == 3) {
        static _Alignas(16) unsigned char outside[256];
        wrong = outside + 64;
    } else if (bad == 4) {
        for (int i = 0; i < NSLOTS && !wrong; i++) {
            int t = (s + n + i) % NSLOTS;
            block *b = &model.slots[t];
            if (b->p && b->heap == 0 && !slot_listed(slots, k, t) && b->usable > 16)
                wrong = b->p + 16 * (1 + (size_t)i % ((b->usable - 1) / 16));
        }
    } else if (bad == 5) {
        void *p = model.stale[(unsigned)s % STALE_RING];
        block *holder = p ? live_block_at(p) : NULL;
        if (p && !(holder && holder->p == p) && rp_heap_of(p) == model.heaps[0].h) {
            wrong = p;
            kinds |= KIND(RP_ERR_DOUBLE_FREE); /* or inside memory handed out again */
        }
    }
    size_t total = k;
    if (wrong)
        ptrs[total++] = wrong;
    TRACE("  rp_free_batch(%zu blocks%s)\n", total, wrong ? ", one bad" : "");
    size_t freed = rp_free_batch(model.heaps[0].h, ptrs, total);
    if (wrong)
        expect_report(kinds, wrong);
    expect_no_report();
    EXPECT(freed == k, "rp_free_batch freed %zu of the %zu good blocks", freed, k);
    for (size_t j = 0; j < k; j++) {
        model.heaps[0].frees++;
        drop(slots[j]);
        remember_stale(ptrs[j]);
    }
}

void do_batch(uint8_t flags, int s, uint8_t count, size_t size, size_t align)
{
    int n = count % BATCH_MAX + 1;
    if (flags & 1)
        free_batch(s, n, ((flags >> 1) & 7) == 7 ? NSLOTS - 1 : ((flags >> 1) & 7) + 1, (flags >> 4) & 7); /* 7: -1 */
    else
        alloc_batch(s, n, size, align);
}

/* Caller memory in a gigabyte of address space no region ever used: registering it needs a
 * new chunk table of the address map, and when the OS refuses that table rp_heap_add_region
 * fails with ENOMEM and changes nothing. (It never succeeds here: the table stays missing,
 * so the next input meets the same path.) */
void do_fresh_region(uint8_t where)
{
    heap_model *m = &model.heaps[0];
    uintptr_t at = ((uintptr_t)0x500 << 36) + ((uintptr_t)where << 30);
    if (rp_pm_root[at >> RP_PM_SLOT_SHIFT] || injection_armed(rp_os_calls()))
        return;
    size_t len = 64 << 10;
    void *base = mmap((void *)at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (base == MAP_FAILED)
        return;
    if (base != (void *)at) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(base, len);
        return;
    }
    rp_heap_stats_t before, after;
    rp_heap_stats(m->h, &before);
    rp_os_fail_at(1);
    errno = 0;
    int rc = rp_heap_add_region(m->h, base, len);
    int err = errno;
    rp_os_fail_at(0);
    expect_no_report();
    rp_heap_stats(m->h, &after);
    munmap(base, len);
    EXPECT(rc == -1 && err == ENOMEM, "rp_heap_add_region(%p) without an address-map table: rc %d, errno %d", base, rc,
           err);
    EXPECT(after.regions == before.regions && after.region_bytes == before.region_bytes,
           "a region refused for want of a table changed the heap");
}
