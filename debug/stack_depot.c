#include "stack_depot.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "depot_record.h"
#include "src/bits.h"
#include "src/os.h"
#include "src/report.h"

#define NBUCKETS RP_DEPOT_BUCKETS
#define IDS_PER_PAGE_BITS 12
#define IDS_PER_PAGE ((size_t)1 << IDS_PER_PAGE_BITS)
#define ID_PAGES 4096 /* up to 16M distinct stacks */
#define CHUNK_BYTES ((size_t)1 << 20)

static rp_depot_record *buckets[NBUCKETS];   /* read with acquire loads */
static rp_depot_record **id_pages[ID_PAGES]; /* id -> stack, written before count is published */
static size_t stored;                        /* ids 1..stored exist; release-published */
static size_t os_bytes;
static char *chunk_next, *chunk_end;
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;

static rp_depot_record *stack_of_id(size_t id) { return id_pages[id >> IDS_PER_PAGE_BITS][id & (IDS_PER_PAGE - 1)]; }

/* fork() while another thread inserts must not leave the child's depot locked. The child gets
 * a fresh lock (taking it before the fork could deadlock against heap locks taken by other
 * fork handlers) and finishes an insertion the fork cut short: one publishes the id table,
 * then the count, then the bucket, so only the newest stack can be missing from its chain. */
static void depot_reset_in_child(void)
{
    pthread_mutex_init(&depot_lock, NULL);
    if (!stored)
        return;
    rp_depot_record *newest = stack_of_id(stored);
    rp_depot_record **bucket = &buckets[newest->hash & (NBUCKETS - 1)];
    for (rp_depot_record *s = *bucket; s; s = s->next)
        if (s == newest)
            return;
    newest->next = *bucket;
    *bucket = newest;
}
/* At load time, not on the first insertion: that runs inside malloc with a heap locked, and
 * pthread_atfork may allocate. */
__attribute__((constructor)) static void register_atfork(void) { pthread_atfork(NULL, NULL, depot_reset_in_child); }

/* A test build (the stack_depot fuzz target, fuzz/BUILD) keeps only the low
 * RP_DEPOT_TEST_HASH_BITS bits of every hash: different stacks then collide all the time, and
 * deduplication has to compare frames, not hashes (S3). */
#ifdef RP_DEPOT_TEST_HASH_BITS
#define HASH_MASK ((1u << RP_DEPOT_TEST_HASH_BITS) - 1)
#else
#define HASH_MASK 0xffffffffu
#endif

static inline uint64_t hash_step(uint64_t x, uintptr_t frame, uint64_t k)
{
    x = (x ^ frame) * k;
    return (x << 29) | (x >> 35);
}

/* Two independent lanes (even and odd frames): every capture hashes its stack, and one
 * chain of multiplications would wait on each product in turn. */
static uint32_t hash_frames(const uintptr_t *frames, unsigned n)
{
    uint64_t even = 0x6a09e667f3bcc908ull ^ n, odd = 0xbb67ae8584caa73bull;
    unsigned i = 0;
    for (; i + 1 < n; i += 2) {
        even = hash_step(even, frames[i], 0x9e3779b97f4a7c15ull);
        odd = hash_step(odd, frames[i + 1], 0xc2b2ae3d27d4eb4full);
    }
    if (i < n)
        even = hash_step(even, frames[i], 0x9e3779b97f4a7c15ull);
    return (uint32_t)rp_mix64(even ^ ((odd << 17) | (odd >> 47))) & HASH_MASK;
}

static int same_frames(const rp_depot_record *s, uint32_t hash, const uintptr_t *frames, unsigned n)
{
    return s->hash == hash && s->n == n && memcmp(s->frames, frames, n * sizeof *frames) == 0;
}

static uint32_t find(uint32_t hash, const uintptr_t *frames, unsigned n)
{
    for (rp_depot_record *s = __atomic_load_n(&buckets[hash & (NBUCKETS - 1)], __ATOMIC_ACQUIRE); s; s = s->next)
        if (same_frames(s, hash, frames, n))
            return s->id;
    return 0;
}

/* Depot lock held. Bump allocation in 1 MiB chunks of OS memory. */
static void *take(size_t bytes)
{
    bytes = rp_align_up(bytes, 16);
    if ((size_t)(chunk_end - chunk_next) < bytes) {
        char *c = rp_os_scratch_map(CHUNK_BYTES);
        if (!c)
            return NULL;
        os_bytes += CHUNK_BYTES;
        chunk_next = c;
        chunk_end = c + CHUNK_BYTES;
    }
    void *p = chunk_next;
    chunk_next += bytes;
    return p;
}

uint32_t rp_depot_put(const uintptr_t *frames, unsigned n)
{
    if (n == 0 || n > RP_STACK_MAX_FRAMES || !frames)
        return 0;
    uint32_t hash = hash_frames(frames, n);
    uint32_t id = find(hash, frames, n);
    if (id)
        return id;
    pthread_mutex_lock(&depot_lock);
    id = find(hash, frames, n); /* another thread may have stored it meanwhile */
    if (id)
        goto out;
    size_t next_id = stored + 1;
    size_t page = next_id >> IDS_PER_PAGE_BITS;
    if (page >= ID_PAGES)
        goto out; /* full: the stack is not recorded */
    if (!id_pages[page]) {
        size_t bytes = IDS_PER_PAGE * sizeof(rp_depot_record *);
        id_pages[page] = rp_os_scratch_map(bytes);
        if (!id_pages[page])
            goto out;
        os_bytes += bytes;
    }
    rp_depot_record *s = take(sizeof *s + n * sizeof *frames);
    if (!s)
        goto out;
    s->id = (uint32_t)next_id;
    s->hash = hash;
    s->n = n;
    memcpy(s->frames, frames, n * sizeof *frames);
    id_pages[page][next_id & (IDS_PER_PAGE - 1)] = s;
    __atomic_store_n(&stored, next_id, __ATOMIC_RELEASE); /* rp_depot_get may use it now */
    rp_depot_record **bucket = &buckets[hash & (NBUCKETS - 1)];
    s->next = *bucket;
    __atomic_store_n(bucket, s, __ATOMIC_RELEASE); /* lookups find it now */
    id = s->id;
out:
    pthread_mutex_unlock(&depot_lock);
    return id;
}

static rp_depot_record *by_id(uint32_t id)
{
    if (id == 0 || id > __atomic_load_n(&stored, __ATOMIC_ACQUIRE))
        return NULL;
    return stack_of_id(id);
}

rp_depot_record *rp_depot_record_of(uint32_t id) { return by_id(id); }

unsigned rp_depot_get(uint32_t id, uintptr_t *frames, unsigned max)
{
    const rp_depot_record *s = by_id(id);
    if (!s || !frames)
        return 0;
    unsigned n = s->n < max ? s->n : max;
    memcpy(frames, s->frames, n * sizeof *frames);
    return n;
}

int rp_depot_foreach(int (*fn)(uint32_t id, const uintptr_t *frames, unsigned n, void *arg), void *arg)
{
    size_t count = __atomic_load_n(&stored, __ATOMIC_ACQUIRE);
    for (size_t id = 1; id <= count; id++) {
        const rp_depot_record *s = stack_of_id(id);
        int rc = fn((uint32_t)id, s->frames, s->n, arg);
        if (rc)
            return rc;
    }
    return 0;
}

size_t rp_depot_count(void) { return __atomic_load_n(&stored, __ATOMIC_ACQUIRE); }

size_t rp_depot_bytes(void)
{
    pthread_mutex_lock(&depot_lock);
    size_t b = os_bytes;
    pthread_mutex_unlock(&depot_lock);
    return b;
}


int rp_depot_check(char *why, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&depot_lock);
    for (size_t id = 1; id <= stored && !rc; id++) {
        const rp_depot_record *s = stack_of_id(id);
        if (!s || s->id != id)
            rc = rp_why(why, len, "S1: stack depot id %zu does not name its stack", id);
        else if (s->n == 0 || s->n > RP_STACK_MAX_FRAMES || s->hash != hash_frames(s->frames, s->n))
            rc = rp_why(why, len, "S2: stack %zu has %u frames or a wrong hash", id, s->n);
    }
    size_t chained = 0;
    for (size_t b = 0; b < NBUCKETS && !rc; b++) {
        for (const rp_depot_record *s = buckets[b]; s && !rc; s = s->next) {
            if (++chained > stored)
                rc = rp_why(why, len, "S2: stack depot chains hold more than the %zu stacks stored (cycle?)", stored);
            else if ((s->hash & (NBUCKETS - 1)) != b || s->id == 0 || s->id > stored ||
                     stack_of_id(s->id) != s)
                rc = rp_why(why, len, "S2: stack %u is on the chain of bucket %zu by mistake", s->id, b);
            size_t steps = 0;
            for (const rp_depot_record *t = s->next; t && !rc && steps++ < stored; t = t->next)
                if (same_frames(t, s->hash, s->frames, s->n))
                    rc = rp_why(why, len, "S3: stacks %u and %u have the same frames", s->id, t->id);
        }
    }
    if (!rc && chained != stored)
        rc = rp_why(why, len, "S1: stack depot chains hold %zu stacks, %zu are stored", chained, stored);
    pthread_mutex_unlock(&depot_lock);
    return rc;
}

int rp_depot_check_if_grown(char *why, size_t len)
{
    static size_t checked; /* stacks stored when a check last passed */
    size_t now = rp_depot_count();
    if (now == __atomic_load_n(&checked, __ATOMIC_RELAXED))
        return 0;
    int rc = rp_depot_check(why, len);
    if (!rc)
        __atomic_store_n(&checked, now, __ATOMIC_RELAXED);
    return rc;
}
