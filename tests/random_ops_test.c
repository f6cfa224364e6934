/* Randomised differential test against a shadow model.
 *
 * >= 1M operations (alloc / calloc / realloc / free) with sizes 0..1 MiB and alignments
 * 1..1 MiB on a heap capped at 40 MiB, so out-of-memory paths are reached too. The model
 * keeps every live block sorted by address; each allocation is checked for alignment,
 * non-overlap with every other live block, rp_usable_size >= size and ownership; each block
 * holds a pattern derived from its id, verified before free and after realloc;
 * rp_heap_check runs every 1000 operations; at the end the heap is back to zero bytes in use.
 *
 * Reproducible: the seed is printed; RP_SEED=<n> and RP_OPS=<n> replay a run. */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "rampart.h"
#include "testing.h"

#define MAX_LIVE 1500

typedef struct live {
    unsigned char *p;
    size_t size;
    size_t align;
    uint64_t id;
} live;

static live by_addr[MAX_LIVE]; /* sorted by p */
static size_t nlive;

static uint64_t pattern_word(uint64_t id, size_t i) { return (id * 0x9e3779b97f4a7c15ull) ^ (i * 0x2545f4914f6cdd1dull); }

/* Byte i of a block's pattern is byte i%8 of pattern_word(id, i/8), whatever the size. */
static unsigned char pattern_byte(uint64_t id, size_t i)
{
    return (unsigned char)(pattern_word(id, i / 8) >> (8 * (i % 8)));
}

static void fill(live *b)
{
    size_t words = b->size / 8;
    uint64_t *w = (uint64_t *)b->p;
    for (size_t i = 0; i < words; i++)
        w[i] = pattern_word(b->id, i);
    for (size_t i = words * 8; i < b->size; i++)
        b->p[i] = pattern_byte(b->id, i);
}

/* Verifies the first n bytes of b's pattern. */
static int intact(const live *b, size_t n)
{
    size_t words = n / 8;
    const uint64_t *w = (const uint64_t *)b->p;
    for (size_t i = 0; i < words; i++)
        if (w[i] != pattern_word(b->id, i))
            return 0;
    for (size_t i = words * 8; i < n; i++)
        if (b->p[i] != pattern_byte(b->id, i))
            return 0;
    return 1;
}

static size_t lower_bound(const unsigned char *p)
{
    size_t lo = 0, hi = nlive;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (by_addr[mid].p < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Checks the new block [p, p+size) against its neighbours in address order, then files it. */
static int insert_checked(live b, uint64_t op)
{
    size_t extent = b.size ? b.size : 1;
    size_t i = lower_bound(b.p);
    if (i < nlive && by_addr[i].p < b.p + extent) {
        fprintf(stderr, "op %llu: block %p+%zu overlaps live block %p+%zu\n", (unsigned long long)op, (void *)b.p,
                b.size, (void *)by_addr[i].p, by_addr[i].size);
        return 0;
    }
    if (i > 0) {
        const live *prev = &by_addr[i - 1];
        size_t pe = prev->size ? prev->size : 1;
        if (prev->p + pe > b.p) {
            fprintf(stderr, "op %llu: block %p+%zu overlaps live block %p+%zu\n", (unsigned long long)op,
                    (void *)b.p, b.size, (void *)prev->p, prev->size);
            return 0;
        }
    }
    memmove(&by_addr[i + 1], &by_addr[i], (nlive - i) * sizeof(live));
    by_addr[i] = b;
    nlive++;
    return 1;
}

static live remove_at(size_t i)
{
    live b = by_addr[i];
    memmove(&by_addr[i], &by_addr[i + 1], (nlive - i - 1) * sizeof(live));
    nlive--;
    return b;
}

static size_t random_size(test_rng *r)
{
    unsigned k = (unsigned)rng_below(r, 100);
    if (k < 60)
        return (size_t)rng_below(r, 257);
    if (k < 90)
        return (size_t)rng_below(r, 4097);
    if (k < 99)
        return (size_t)rng_below(r, 65537);
    return (size_t)rng_below(r, (1 << 20) + 1);
}

static size_t random_align(test_rng *r)
{
    unsigned k = (unsigned)rng_below(r, 100);
    if (k < 60)
        return k < 10 ? 0 : (size_t)1 << rng_below(r, 5); /* 0 (default), 1..16 */
    if (k < 95)
        return (size_t)1 << (5 + rng_below(r, 8)); /* 32..4096 */
    return (size_t)1 << (13 + rng_below(r, 8));    /* 8 KiB..1 MiB */
}

static int check_new(const live *b, size_t want_align, rp_heap *h, uint64_t op)
{
    size_t a = want_align < 16 ? 16 : want_align;
    if ((uintptr_t)b->p & (a - 1)) {
        fprintf(stderr, "op %llu: %p not aligned to %zu\n", (unsigned long long)op, (void *)b->p, a);
        return 0;
    }
    if (rp_usable_size(b->p) < b->size) {
        fprintf(stderr, "op %llu: usable size %zu < %zu\n", (unsigned long long)op, rp_usable_size(b->p), b->size);
        return 0;
    }
    if (rp_heap_of(b->p) != h) {
        fprintf(stderr, "op %llu: rp_heap_of(%p) is not the heap\n", (unsigned long long)op, (void *)b->p);
        return 0;
    }
    return 1;
}

int main(void)
{
    unsigned long long seed = (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 32);
    const char *s = getenv("RP_SEED");
    if (s)
        seed = strtoull(s, NULL, 0);
    unsigned long long ops = 1000000;
    const char *o = getenv("RP_OPS");
    if (o)
        ops = strtoull(o, NULL, 0);
    printf("random_ops_test: RP_SEED=%llu RP_OPS=%llu\n", seed, ops);
    fflush(stdout);
    test_rng rng = {seed};

    rp_heap_config cfg = {0};
    cfg.name = "random";
    cfg.max_bytes = (size_t)40 << 20;
    rp_heap *h = rp_heap_create(&cfg);
    REQUIRE(h);

    uint64_t next_id = 1, ooms = 0, in_place = 0;
    for (uint64_t op = 0; op < ops && test_failures == 0; op++) {
        /* Every 1000 operations, whatever the last one did (an out-of-memory included). */
        if (op % 1000 == 0 && op)
            CHECK_HEAP(h);
        unsigned kind = (unsigned)rng_below(&rng, 100);
        if (nlive == MAX_LIVE || (nlive > 0 && kind < 40)) {
            /* free */
            live b = remove_at((size_t)rng_below(&rng, nlive));
            CHECKF(intact(&b, b.size), "op %llu: block %p (%zu bytes, id %llu) changed before free",
                   (unsigned long long)op, (void *)b.p, b.size, (unsigned long long)b.id);
            rp_free(b.p);
        } else if (nlive > 0 && kind < 55) {
            /* realloc */
            size_t i = (size_t)rng_below(&rng, nlive);
            size_t size = random_size(&rng);
            live b = by_addr[i];
            errno = 0;
            unsigned char *q = rp_realloc(h, b.p, size);
            if (!q) {
                CHECKF(errno == ENOMEM, "op %llu: realloc failed with errno %d", (unsigned long long)op, errno);
                CHECK(intact(&b, b.size));
                ooms++;
                continue;
            }
            remove_at(i);
            in_place += q == b.p;
            live nb = {q, size, b.align, b.id};
            CHECKF(intact(&nb, size < b.size ? size : b.size), "op %llu: realloc %p -> %p lost contents",
                   (unsigned long long)op, (void *)b.p, (void *)q);
            CHECK(check_new(&nb, b.align, h, op));
            nb.id = next_id++;
            fill(&nb);
            CHECK(insert_checked(nb, op));
        } else {
            /* alloc or calloc */
            size_t size = random_size(&rng);
            size_t align = random_align(&rng);
            int zeroed = kind >= 90;
            /* calloc as n elements of size / n bytes (n = 1..4) */
            size_t n = zeroed ? 1 + (size_t)rng_below(&rng, 4) : 1;
            size = size / n * n;
            errno = 0;
            unsigned char *p = zeroed ? rp_calloc(h, n, size / n, align) : rp_alloc(h, size, align);
            if (!p) {
                CHECKF(errno == ENOMEM, "op %llu: alloc failed with errno %d", (unsigned long long)op, errno);
                ooms++;
                continue;
            }
            if (zeroed) {
                int zero = 1;
                for (size_t k = 0; k < size; k++)
                    zero &= p[k] == 0;
                CHECKF(zero, "op %llu: calloc memory not zeroed", (unsigned long long)op);
            }
            live b = {p, size, align, next_id++};
            CHECK(check_new(&b, align, h, op));
            fill(&b);
            CHECK(insert_checked(b, op));
        }
        if (getenv("RP_TRACE") && op % 50000 == 0) {
            rp_heap_stats_t t;
            rp_heap_stats(h, &t);
            size_t live_bytes = 0;
            for (size_t k = 0; k < nlive; k++)
                live_bytes += by_addr[k].size;
            printf("op %llu live %zu blocks %zu B, in_use %zu, span %zu (%zu spans), idx free %zu, page free %zu, "
                   "regions %zu (%zu B), os %zu\n",
                   (unsigned long long)op, nlive, live_bytes, t.bytes_in_use, t.span_bytes, t.spans,
                   t.bytes_free - t.page_free_bytes, t.page_free_bytes, t.regions, t.region_bytes, t.os_bytes);
        }
    }
    for (size_t i = 0; i < nlive; i++) {
        CHECK(intact(&by_addr[i], by_addr[i].size));
        rp_free(by_addr[i].p);
    }
    nlive = 0;
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0 && st.bytes_in_use == 0 && st.bytes_usable == 0);
    CHECK(st.max_examined <= 3);
    printf("ops %llu, out-of-memory %llu, in-place reallocs %llu, peak OS bytes %zu, max examined %llu\n", ops,
           (unsigned long long)ooms, (unsigned long long)in_place, st.os_bytes_peak,
           (unsigned long long)st.max_examined);
    if (test_failures)
        fprintf(stderr, "replay with RP_SEED=%llu\n", seed);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
