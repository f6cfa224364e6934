#include "zero_size.h"

#include "src/lock.h"
#include "src/os.h"
#include "src/report.h"

#define NSLOTS (RP_ZS_BYTES / RP_ZS_SLOT)
#define NWORDS (NSLOTS / 64)

uintptr_t rp_zs_base;
static uint64_t *bits;   /* NWORDS words, a reservation of their own (Z1) */
static size_t cursor;    /* Z1: the slot the next search starts at */
static size_t live;      /* Z1 */
static size_t used_words; /* words below this were ever written (the checker reads no more) */
static rp_lock lock = PTHREAD_MUTEX_INITIALIZER;
static int failed;       /* the range could not be reserved: never try again */

/* Reserves the range and its bitmap (lock held). 0 or -1. */
static int set_up(void)
{
    if (rp_zs_base)
        return 0;
    if (failed)
        return -1;
    void *range = rp_os_reserve_inaccessible(RP_ZS_BYTES);
    uint64_t *map = range ? rp_os_reserve(NWORDS * sizeof(uint64_t), 4096) : NULL;
    if (!map) {
        if (range)
            (void)rp_os_unreserve(range, RP_ZS_BYTES);
        failed = 1;
        return -1;
    }
    bits = map;
    __atomic_store_n(&rp_zs_base, (uintptr_t)range, __ATOMIC_RELEASE);
    return 0;
}

void *rp_zs_alloc(void)
{
    void *p = NULL;
    rp_lock_acquire(&lock);
    if (set_up() == 0 && live < NSLOTS) {
        /* Next fit from the cursor: the first free slot at or after it, round the range (at
         * most one pass, live < NSLOTS), so a slot just freed waits a whole round. */
        size_t w = cursor / 64;
        uint64_t taken = bits[w] | (((uint64_t)1 << (cursor % 64)) - 1); /* slots before the cursor */
        for (size_t k = 0; taken == ~(uint64_t)0 && k < NWORDS; k++) {
            w = (w + 1) % NWORDS;
            taken = bits[w];
        }
        if (taken != ~(uint64_t)0) {
            unsigned b = (unsigned)__builtin_ctzll(~taken);
            bits[w] |= (uint64_t)1 << b;
            live++;
            cursor = (w * 64 + b + 1) % NSLOTS;
            if (w >= used_words)
                used_words = w + 1;
            p = (void *)(rp_zs_base + (w * 64 + b) * RP_ZS_SLOT);
        }
    }
    rp_lock_release(&lock);
    return p;
}

/* The slot of p, or NSLOTS when p is not the start of one. */
static size_t slot_of(const void *p)
{
    uintptr_t off = (uintptr_t)p - rp_zs_base;
    return off % RP_ZS_SLOT ? NSLOTS : off / RP_ZS_SLOT;
}

int rp_zs_live(const void *p)
{
    size_t s = slot_of(p);
    rp_lock_acquire(&lock);
    int on = s < NSLOTS && (bits[s / 64] >> (s % 64) & 1);
    rp_lock_release(&lock);
    return on;
}

int rp_zs_free(void *p, const char *who)
{
    size_t s = slot_of(p);
    int was = 0;
    rp_lock_acquire(&lock);
    if (s < NSLOTS && (bits[s / 64] >> (s % 64) & 1)) {
        bits[s / 64] &= ~((uint64_t)1 << (s % 64));
        live--;
        was = 1;
    }
    rp_lock_release(&lock);
    if (was)
        return 0;
    rp_fault f;
    f.kind = 0;
    if (s < NSLOTS)
        rp_fault_set(&f, RP_ERR_DOUBLE_FREE, NULL, p, p, 0, "%s%p: the zero-size block is already free", who, p);
    else
        rp_fault_set(&f, RP_ERR_INVALID_FREE, NULL, p, NULL, 0,
                     "%s%p is not a block rampart handed out (inside a zero-size slot)", who, p);
    rp_report_fault(&f);
    return -1;
}

int rp_zs_check(char *why, size_t len)
{
    rp_lock_acquire(&lock);
    int rc = 0;
    if (rp_zs_base) {
        size_t counted = 0;
        for (size_t w = 0; w < used_words; w++)
            counted += bits[w] ? (size_t)__builtin_popcountll(bits[w]) : 0;
        if (counted != live || cursor >= NSLOTS)
            rc = rp_why(why, len, "Z1: %zu zero-size slots marked, %zu counted live (cursor %zu of %zu)", counted, live,
                        cursor, (size_t)NSLOTS);
    }
    rp_lock_release(&lock);
    return rc;
}

void rp_zs_fork_prepare(void) { rp_lock_acquire(&lock); }
void rp_zs_fork_parent(void) { rp_lock_release(&lock); }
void rp_zs_fork_child(void) { rp_lock_init(&lock); }
