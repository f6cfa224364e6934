#define _GNU_SOURCE
#include "guard_pool.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "debug/stack_depot.h"
#include "guarded_memory.h"
#include "profile_stack.h"
#include "src/bits.h"
#include "src/lock.h"
#include "src/options.h"
#include "src/os.h"
#include "src/outside_blocks.h"
#include "src/region.h"
#include "src/report.h"
#include "src/signal_action.h"

enum { SLOT_FREE = 0, SLOT_LIVE, SLOT_QUARANTINED };

typedef struct gp_slot {
    uintptr_t user;
    size_t size;
    uint32_t state;
    uint32_t alloc_stack, free_stack; /* stack depot ids (0: none) */
    uint32_t next;                    /* quarantine FIFO link (slot index + 1, 0 = none) */
    uint32_t opened;                  /* a fault in it was reported and let through: never reused */
} gp_slot;

#define PAGE RP_PAGE_SIZE
#define STRIDE ((size_t)(RP_GP_SLOT_PAGES + 1) * PAGE)
#define DATA_BYTES ((size_t)RP_GP_SLOT_PAGES * PAGE)
#define STACK_DEPTH 32
/* What the bytes of a guarded block's pages outside the block hold until its free. */
#define SLACK_BYTE 0xbe

int rp_gp_on;
uintptr_t rp_gp_lo, rp_gp_hi;
static int left;             /* option guard_left */
static unsigned long sample; /* 1 (all) or N */
static gp_slot *slots;
static rp_lock pool_lock;
static uint32_t unused;               /* GP2 */
static uint32_t fifo_head, fifo_tail; /* GP2: slot index + 1, 0 = empty */
static uint32_t quarantined;
static uint32_t live, live_max; /* live guarded blocks, and at most (the kernel's mapping budget) */
static struct sigaction previous_segv;

static uintptr_t data_of(uint32_t i) { return rp_gp_lo + PAGE + (uintptr_t)i * STRIDE; }

/* The slot whose data or following guard page holds a (a in the pool), and whether a lies in
 * that guard page. */
static uint32_t slot_of(uintptr_t a, int *in_guard)
{
    size_t off = a - rp_gp_lo;
    if (off < PAGE) { /* the guard page before slot 0 */
        *in_guard = 1;
        return UINT32_MAX;
    }
    uint32_t i = (uint32_t)((off - PAGE) / STRIDE); /* fault and error paths only: a division */
    *in_guard = off - PAGE - (size_t)i * STRIDE >= DATA_BYTES;
    return i;
}

/* [first page, end of the last page) of the block of slot s. */
static void pages_of(const gp_slot *s, uintptr_t *lo, uintptr_t *hi)
{
    *lo = s->user & ~(uintptr_t)(PAGE - 1);
    *hi = (s->user + (s->size ? s->size : 1) + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
}

/* The first byte of the block's pages outside [user, user + size) that is not SLACK_BYTE. */
static const unsigned char *slack_damage(const gp_slot *s)
{
    uintptr_t lo, hi;
    pages_of(s, &lo, &hi);
    for (const unsigned char *b = (const unsigned char *)lo; b < (const unsigned char *)s->user; b++)
        if (*b != SLACK_BYTE)
            return b;
    for (const unsigned char *b = (const unsigned char *)(s->user + s->size); b < (const unsigned char *)hi; b++)
        if (*b != SLACK_BYTE)
            return b;
    return NULL;
}

static uint32_t capture(const void *ra) { return rp_prof_stack_capture(ra, STACK_DEPTH); }

/* The release flavour's report printer prints one line: the stacks are printed here (the debug
 * flavour prints them itself, from the fault's stack ids, with file and line). */
#ifndef RAMPART_DEBUG
static void print_stack(const char *title, uint32_t id)
{
    uintptr_t frames[STACK_DEPTH];
    unsigned n = id ? rp_depot_get(id, frames, STACK_DEPTH) : 0;
    if (!n)
        return;
    char line[512];
    int len = snprintf(line, sizeof line, "  %s:\n", title);
    if (write(2, line, (size_t)len) < 0)
        return;
    for (unsigned k = 0; k < n; k++) {
        Dl_info info;
        uintptr_t pc = frames[k] - (k ? 1 : 0);
        if (dladdr((void *)pc, &info) && info.dli_fname) {
            if (info.dli_sname)
                len = snprintf(line, sizeof line, "    #%u %#lx %s+%#lx (%s)\n", k, (unsigned long)frames[k],
                               info.dli_sname, (unsigned long)(pc - (uintptr_t)info.dli_saddr), info.dli_fname);
            else
                len = snprintf(line, sizeof line, "    #%u %#lx (%s+%#lx)\n", k, (unsigned long)frames[k],
                               info.dli_fname, (unsigned long)(pc - (uintptr_t)info.dli_fbase));
        } else {
            len = snprintf(line, sizeof line, "    #%u %#lx\n", k, (unsigned long)frames[k]);
        }
        if (len > 0 && write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1) < 0)
            return;
    }
}
#endif

/* access: 'R' or 'W' for a fault at the access (access_stack its stack), 0 for a check. */
static void report(int kind, const gp_slot *s, const void *at, char access, uint32_t access_stack, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void report(int kind, const gp_slot *s, const void *at, char access, uint32_t access_stack, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, kind, NULL, at, s ? (void *)s->user : NULL, s ? s->size : 0, "%s", msg);
    f.access = access;
    f.access_stack = access ? access_stack : 0;
    if (s) {
        f.alloc_stack = s->alloc_stack;
        f.free_stack = s->state == SLOT_LIVE ? 0 : s->free_stack;
        f.requested = s->size;
    }
#ifndef RAMPART_DEBUG
    char line[200];
    int len = snprintf(line, sizeof line, "rampart: guarded block: %s\n", msg);
    if (len > 0 && write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1) < 0)
        return;
    print_stack("at", access_stack);
    if (s) {
        print_stack("allocated at", s->alloc_stack);
        if (s->state != SLOT_LIVE)
            print_stack("freed at", s->free_stack);
    }
#else
    (void)access_stack;
#endif
    rp_report_fault(&f);
}

/* ---- faults ------------------------------------------------------------------------------- */

static void chain(int sig, siginfo_t *info, void *uc)
{
    if (previous_segv.sa_flags & SA_SIGINFO && previous_segv.sa_sigaction) {
        previous_segv.sa_sigaction(sig, info, uc);
        return;
    }
    if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN && previous_segv.sa_handler) {
        previous_segv.sa_handler(sig);
        return;
    }
    /* The default action: restored, the access faults again and ends the process. */
    signal(sig, SIG_DFL);
}

static void on_fault(int sig, siginfo_t *info, void *ucv)
{
    uintptr_t a = (uintptr_t)info->si_addr;
    if (!rp_gp_contains((void *)a)) {
        chain(sig, info, ucv);
        return;
    }
    const char *access = "access";
    char acc = 'R';
    const void *pc = NULL;
#if defined(__x86_64__)
    const ucontext_t *uc = ucv;
    acc = uc->uc_mcontext.gregs[REG_ERR] & 2 ? 'W' : 'R';
    access = acc == 'W' ? "WRITE" : "READ";
    pc = (const void *)uc->uc_mcontext.gregs[REG_RIP];
#endif
    uint32_t here = capture(pc); /* from the faulting instruction's frame */
    int in_guard;
    uint32_t i = slot_of(a, &in_guard);
    gp_slot *s = NULL;
    if (in_guard) {
        /* Past the end of the block before the guard page (placed at the right), or before the
         * start of the one after it (placed at the left). */
        gp_slot *before = i != UINT32_MAX ? &slots[i] : NULL, *after = i + 1 < RP_GP_SLOTS ? &slots[i + 1] : NULL;
        if (before && before->state != SLOT_FREE && (!after || after->state == SLOT_FREE || !left))
            s = before;
        else if (after && after->state != SLOT_FREE)
            s = after;
    } else {
        s = &slots[i];
    }
    if (!s || s->state == SLOT_FREE) {
        report(RP_ERR_HEAP_BUFFER_OVERFLOW, NULL, (void *)a, acc, here, "%s of %p: in a guard page of the guarded blocks, next to no block",
               access, (void *)a);
    } else if (s->state == SLOT_QUARANTINED) {
        report(RP_ERR_USE_AFTER_FREE, s, (void *)a, acc, here,
               "%s of %p, %ld bytes from the start of the freed %zu-byte block %p", access,
               (void *)a, (long)(a - s->user), s->size, (void *)s->user);
    } else if (a >= s->user) {
        report(RP_ERR_HEAP_BUFFER_OVERFLOW, s, (void *)a, acc, here,
               "%s of %p, %zu bytes after the end of the %zu-byte block %p", access, (void *)a,
               (size_t)(a - s->user - s->size), s->size, (void *)s->user);
    } else {
        report(RP_ERR_HEAP_BUFFER_UNDERFLOW, s, (void *)a, acc, here, "%s of %p, %zu bytes before the %zu-byte block %p",
               access, (void *)a, (size_t)(s->user - a), s->size, (void *)s->user);
    }
    /* The report function returned (a test's): the page is opened so that the access can go
     * on, and its slot is never reused. */
    rp_os_make_accessible((void *)(a & ~(uintptr_t)(PAGE - 1)), PAGE);
    if (s)
        s->opened = 1;
}

/* ---- set-up ------------------------------------------------------------------------------- */

/* The live guarded blocks, for the debug flavour's leak scan (outside_blocks.h). */
static void walk_live(rp_outside_block_fn fn, void *arg)
{
    rp_lock_acquire(&pool_lock);
    for (uint32_t i = 0; i < unused; i++)
        if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) == SLOT_LIVE)
            fn((const void *)slots[i].user, slots[i].size, slots[i].alloc_stack, arg);
    rp_lock_release(&pool_lock);
}

static rp_outside_blocks outside = {0, 0, walk_live};

/* Each live guarded block splits the pool's mapping in two more (its pages accessible, the
 * guards around not), and the kernel caps a process's mappings (vm.max_map_count, 65530 by
 * default): live guarded blocks are kept to a quarter of that cap, the rest of the program's
 * mappings left the other three quarters. Past it, allocations are served unguarded. */
static uint32_t live_budget(void)
{
    unsigned long cap = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%lu", &cap) != 1)
            cap = 65530;
        fclose(f);
    }
    cap /= 8; /* two mappings per live block: a quarter of the cap */
    return cap > RP_GP_SLOTS ? RP_GP_SLOTS : (uint32_t)cap;
}

int rp_gp_setup(void)
{
    sample = rp_options_get()->guard;
    if (!sample)
        return 0;
    left = rp_options_get()->guard_left;
    size_t len = (size_t)RP_GP_SLOTS * STRIDE + PAGE;
    void *base = rp_os_reserve_inaccessible(len);
    slots = rp_os_map(rp_align_up(sizeof(gp_slot) * RP_GP_SLOTS, PAGE));
    if (!base || !slots) {
        static const char msg[] = "rampart: guard: the guarded blocks' address space could not be reserved; guard is off\n";
        if (write(2, msg, sizeof msg - 1) < 0)
            return -1;
        return -1;
    }
    rp_lock_init(&pool_lock);
    live_max = live_budget();
    rp_gp_lo = (uintptr_t)base;
    rp_gp_hi = rp_gp_lo + len;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    memset(&old, 0, sizeof old);
    if (sigaction(SIGSEGV, &sa, &old) == 0)
        rp_sigaction_keep(&previous_segv, &old); /* not read back in place: src/signal_action.h */
    outside.lo = rp_gp_lo;
    outside.hi = rp_gp_hi;
    rp_outside_blocks_set(&outside);
    rp_gp_on = 1;
    return 0;
}

/* ---- blocks ------------------------------------------------------------------------------- */

/* A slot to use, under the lock: one never used, else the oldest in quarantine once more than
 * half the slots wait there. UINT32_MAX when none. */
static uint32_t take_slot(void)
{
    if (unused < RP_GP_SLOTS)
        return unused++;
    while (quarantined > RP_GP_SLOTS / 2 && fifo_head) {
        uint32_t i = fifo_head - 1;
        fifo_head = slots[i].next;
        if (!fifo_head)
            fifo_tail = 0;
        quarantined--;
        if (!slots[i].opened)
            return i;
        slots[i].state = SLOT_FREE; /* opened by a fault report: left out for good */
        slots[i].user = 0;
    }
    return UINT32_MAX;
}

void *rp_gp_alloc(size_t size, size_t align, const void *ra)
{
    if (!rp_gp_on || size == 0 || size > DATA_BYTES || align > PAGE)
        return NULL;
    if (align < 16)
        align = 16;
    rp_lock_acquire(&pool_lock);
    uint32_t i = live < live_max ? take_slot() : UINT32_MAX;
    live += i != UINT32_MAX;
    rp_lock_release(&pool_lock);
    if (i == UINT32_MAX)
        return NULL;
    gp_slot *s = &slots[i];
    uintptr_t data = data_of(i);
    s->user = left ? data : (data + DATA_BYTES - size) & ~(uintptr_t)(align - 1);
    s->size = size;
    uintptr_t lo, hi;
    pages_of(s, &lo, &hi);
    if (rp_os_make_accessible((void *)lo, hi - lo) != 0) {
        rp_lock_acquire(&pool_lock);
        live--;
        rp_lock_release(&pool_lock);
        return NULL; /* the slot stays FREE past the unused mark: never used again */
    }
    rp_memset_unchecked((void *)lo, SLACK_BYTE, s->user - lo);
    rp_memset_unchecked((void *)(s->user + size), SLACK_BYTE, hi - s->user - size);
    s->alloc_stack = capture(ra);
    s->free_stack = 0;
    __atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
    return (void *)s->user;
}

/* The live slot whose block starts at p, or NULL. */
static gp_slot *live_block(const void *p, gp_slot **slot)
{
    int in_guard;
    uint32_t i = slot_of((uintptr_t)p, &in_guard);
    *slot = in_guard || i == UINT32_MAX ? NULL : &slots[i];
    gp_slot *s = *slot;
    return s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_LIVE && s->user == (uintptr_t)p ? s : NULL;
}

/* Reports why p, in the pool, is not a live block. */
static void report_not_live(const void *p, gp_slot *s, const char *what)
{
    if (s && s->user == (uintptr_t)p && s->state == SLOT_QUARANTINED)
        report(RP_ERR_DOUBLE_FREE, s, p, 0, capture(NULL), "%s(%p): the guarded %zu-byte block is already free", what, p,
               s->size);
    else
        report(RP_ERR_INVALID_FREE, s && s->state != SLOT_FREE ? s : NULL, p, 0, capture(NULL),
               "%s(%p): not a block (inside the guarded blocks' pool)", what, p);
}

void rp_gp_free(void *p, const char *what)
{
    gp_slot *slot, *s = live_block(p, &slot);
    if (!s) {
        report_not_live(p, slot, what);
        return;
    }
    const unsigned char *bad = slack_damage(s);
    if (bad) {
        int under = (uintptr_t)bad < s->user;
        report(under ? RP_ERR_HEAP_BUFFER_UNDERFLOW : RP_ERR_HEAP_BUFFER_OVERFLOW, s, bad, 0, capture(NULL),
               "%s(%p): the guarded %zu-byte block was written %zu bytes %s", what, p, s->size,
               under ? (size_t)(s->user - (uintptr_t)bad) : (size_t)((uintptr_t)bad - s->user - s->size),
               under ? "before its start" : "after its end");
        return;
    }
    uintptr_t lo, hi;
    pages_of(s, &lo, &hi);
    s->free_stack = capture(NULL);
    __atomic_store_n(&s->state, SLOT_QUARANTINED, __ATOMIC_RELEASE);
    rp_os_make_inaccessible((void *)lo, hi - lo);
    rp_os_decommit((void *)lo, hi - lo); /* its memory back to the OS; reads fault all the same */
    uint32_t i = (uint32_t)(s - slots);
    rp_lock_acquire(&pool_lock);
    s->next = 0;
    if (fifo_tail)
        slots[fifo_tail - 1].next = i + 1;
    else
        fifo_head = i + 1;
    fifo_tail = i + 1;
    quarantined++;
    live--;
    rp_lock_release(&pool_lock);
}

size_t rp_gp_usable(const void *p, const char *what)
{
    gp_slot *slot, *s = live_block(p, &slot);
    if (s)
        return s->size;
    report_not_live(p, slot, what);
    return 0;
}

int rp_gp_check_write(const void *d, size_t n, const char *what)
{
    int in_guard;
    uint32_t i = slot_of((uintptr_t)d, &in_guard);
    gp_slot *s = in_guard || i == UINT32_MAX ? NULL : &slots[i];
    uintptr_t a = (uintptr_t)d;
    if (in_guard) { /* starts in a guard page: an underflow of the block after it, if it reaches it */
        gp_slot *after = i == UINT32_MAX ? &slots[0] : i + 1 < RP_GP_SLOTS ? &slots[i + 1] : NULL;
        if (after && __atomic_load_n(&after->state, __ATOMIC_ACQUIRE) == SLOT_LIVE && n > after->user - a) {
            report(RP_ERR_HEAP_BUFFER_UNDERFLOW, after, d, 0, capture(NULL),
                   "%s(%p, ..., %zu): the write starts %zu bytes before the %zu-byte block %p", what, d, n,
                   (size_t)(after->user - a), after->size, (void *)after->user);
            return -1;
        }
    }
    if (!s || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_LIVE) {
        report(s && s->state == SLOT_QUARANTINED ? RP_ERR_USE_AFTER_FREE_WRITE : RP_ERR_HEAP_BUFFER_OVERFLOW, s, d,
               0, capture(NULL), "%s(%p, ..., %zu): the destination is %s", what, d, n,
               s && s->state == SLOT_QUARANTINED ? "a freed guarded block" : "no guarded block");
        return -1;
    }
    if (a < s->user) {
        report(RP_ERR_HEAP_BUFFER_UNDERFLOW, s, d, 0, capture(NULL),
               "%s(%p, ..., %zu): the write starts %zu bytes before the %zu-byte block %p", what, d, n,
               (size_t)(s->user - a), s->size, (void *)s->user);
        return -1;
    }
    if (n > s->user + s->size - a) {
        report(RP_ERR_HEAP_BUFFER_OVERFLOW, s, d, 0, capture(NULL),
               "%s(%p, ..., %zu): the write runs %zu bytes past the end of the %zu-byte block %p", what, d, n,
               (size_t)(a + n - s->user - s->size), s->size, (void *)s->user);
        return -1;
    }
    return 0;
}

void rp_gp_fork_prepare(void)
{
    if (rp_gp_on)
        rp_lock_acquire(&pool_lock);
}

void rp_gp_fork_parent(void)
{
    if (rp_gp_on)
        rp_lock_release(&pool_lock);
}

void rp_gp_fork_child(void)
{
    if (rp_gp_on)
        rp_lock_init(&pool_lock);
}

int rp_gp_check(char *why, size_t len)
{
    if (!rp_gp_on)
        return 0;
    rp_lock_acquire(&pool_lock);
    uint32_t in_fifo = 0, q = 0;
    int bad = 0;
    for (uint32_t k = fifo_head; k && !bad; k = slots[k - 1].next, in_fifo++)
        if (slots[k - 1].state != SLOT_QUARANTINED || in_fifo > RP_GP_SLOTS)
            bad = rp_why(why, len, "GP2: slot %u in the quarantine FIFO is not quarantined (or the FIFO loops)", k - 1);
    for (uint32_t i = 0; i < RP_GP_SLOTS && !bad; i++) {
        const gp_slot *s = &slots[i];
        q += s->state == SLOT_QUARANTINED;
        if (i >= unused && s->state != SLOT_FREE)
            bad = rp_why(why, len, "GP2: slot %u past the unused mark is in use", i);
        else if (s->state != SLOT_FREE &&
                 (s->user < data_of(i) || s->user + s->size > data_of(i) + DATA_BYTES ||
                  ((s->user & 15) && s->user != data_of(i))))
            bad = rp_why(why, len, "GP1: slot %u holds a block %#lx+%zu outside its data", i, (unsigned long)s->user,
                         s->size);
    }
    if (!bad && (q != in_fifo || q != quarantined))
        bad = rp_why(why, len, "GP2: %u slots quarantined, %u in the FIFO, %u counted", q, in_fifo, quarantined);
    rp_lock_release(&pool_lock);
    return bad ? 1 : 0;
}
