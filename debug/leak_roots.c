#define _GNU_SOURCE
#include "leak_roots.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define RED_ZONE 128           /* bytes below the stack pointer a leaf function may use */
#define TCB_BYTES 4096         /* more than glibc's thread control block (struct pthread) */
#define MAX_DTV_ENTRIES (1u << 20)

/* glibc's size of the static TLS area (thread control block included), from the loader's
 * private interface; resolved at load time (dlsym may allocate). NULL elsewhere. */
static void (*tls_static_info)(size_t *size, size_t *align);

__attribute__((constructor)) static void resolve_tls_static_info(void)
{
    tls_static_info = (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
}

static uintptr_t loader_lo, loader_hi; /* written under the scan's serialisation */

typedef struct module_list {
    rp_root_range *out;
    size_t max, n;
    uintptr_t loader_lo, loader_hi;
} module_list;

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    module_list *l = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        }
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz == 0)
            continue;
        if (l->n < l->max) {
            l->out[l->n].lo = info->dlpi_addr + ph->p_vaddr;
            l->out[l->n].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
        l->n++;
    }
    uintptr_t probe = (uintptr_t)tls_static_info;
    if (probe && lo <= probe && probe < hi) {
        l->loader_lo = lo;
        l->loader_hi = hi;
    }
    return 0;
}

size_t rp_roots_modules(rp_root_range *out, size_t max)
{
    module_list l = {out, max, 0, 0, 0};
    dl_iterate_phdr(add_module, &l);
    loader_lo = l.loader_lo;
    loader_hi = l.loader_hi;
    return l.n;
}

void rp_roots_loader_range(uintptr_t *lo, uintptr_t *hi)
{
    *lo = loader_lo;
    *hi = loader_hi;
}

/* [lo, hi) clipped to the mapping holding `at`; passed on when not empty. */
static void clipped(const rp_maps *maps, uintptr_t at, uintptr_t lo, uintptr_t hi, const char *what, rp_root_fn fn,
                    void *arg)
{
    const rp_map_range *m = rp_maps_find(maps, at);
    if (!m || !(m->flags & RP_MAP_READ))
        return;
    if (lo < m->lo)
        lo = m->lo;
    if (hi > m->hi)
        hi = m->hi;
    if (lo < hi)
        fn(lo, hi, what, arg);
}

/* The address of the thread's DTV pointer in its thread control block. */
static uintptr_t dtv_slot(uintptr_t tp)
{
#if defined(__x86_64__)
    return tp + sizeof(void *); /* tcbhead_t: tcb, dtv, self, ... */
#elif defined(__aarch64__)
    return tp; /* tcbhead_t: dtv, private */
#else
    (void)tp;
    return 0;
#endif
}

static void tls_roots(uintptr_t tp, const rp_maps *maps, rp_root_fn fn, void *arg)
{
    if (!tp || !rp_maps_find(maps, tp))
        return;
    size_t size = 0, align = 0;
    if (tls_static_info)
        tls_static_info(&size, &align);
    /* Static TLS and the thread control block lie on both sides of the thread pointer,
     * depending on the architecture: take both sides. */
    uintptr_t span = size + TCB_BYTES;
    uintptr_t lo = tp > span ? tp - span : 0;
    clipped(maps, tp, lo, tp + span, "TLS", fn, arg);

    uintptr_t slot = dtv_slot(tp);
    const rp_map_range *m = slot ? rp_maps_find(maps, slot) : NULL;
    if (!m || !(m->flags & RP_MAP_READ))
        return;
    uintptr_t dtv = *(const uintptr_t *)slot;
    const rp_map_range *d = dtv >= 16 ? rp_maps_find(maps, dtv - 16) : NULL;
    if (!d || !(d->flags & RP_MAP_READ) || (dtv & 7))
        return;
    /* dtv[-1].counter: the number of entries after dtv[0] (the generation); 16 bytes each. */
    size_t entries = *(const size_t *)(dtv - 16);
    if (entries > MAX_DTV_ENTRIES)
        entries = MAX_DTV_ENTRIES;
    clipped(maps, dtv - 16, dtv - 16, dtv + 16 * (entries + 1), "DTV", fn, arg);
}

void rp_roots_thread(const rp_thread_regs *t, const rp_maps *maps, rp_root_fn fn, void *arg)
{
    if (t->sp) {
        /* A stopped thread was interrupted, maybe in a leaf function using the red zone; the
         * caller's own sp is exact, and below it lie the scanner's frames, full of block
         * addresses. */
        uintptr_t below = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == RP_THREAD_SELF ? 0 : RED_ZONE;
        uintptr_t lo = t->sp > below ? t->sp - below : 0;
        const rp_map_range *m = rp_maps_find(maps, t->sp);
        if (m)
            clipped(maps, t->sp, lo, m->hi, "stack", fn, arg);
    }
    if (t->nregs)
        fn((uintptr_t)t->regs, (uintptr_t)(t->regs + t->nregs), "registers", arg);
    if (t->fp_len)
        fn((uintptr_t)t->fp, (uintptr_t)(t->fp + t->fp_len), "FP registers", arg);
    tls_roots(t->tp, maps, fn, arg);
}

void rp_roots_all_writable(const rp_maps *maps, rp_root_fn fn, void *arg)
{
    for (size_t i = 0; i < maps->n; i++) {
        const rp_map_range *m = &maps->ranges[i];
        if ((m->flags & (RP_MAP_READ | RP_MAP_WRITE)) == (RP_MAP_READ | RP_MAP_WRITE))
            fn(m->lo, m->hi, "writable mapping", arg);
    }
}
