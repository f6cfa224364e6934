/* Seed regression, structural: the DPDK scenario (10 rounds x 2000 allocations, no frees) for
 * each (size, alignment) case. The free blocks examined per allocation in round 10 must be no
 * more than in round 1 plus a small constant, and never more than three for any allocation
 * (two list heads of the segregated-fit index, one of the page tier).
 * A design that scans (DPDK's lists, or leftovers filed where the search looks) fails.
 * Also: page-aligned whole-page cases live in the page tier with no padding at all. */
#include <stdint.h>

#include "rampart.h"
#include "testing.h"

typedef struct shape {
    size_t size, align;
} shape;

static void run_case(const char *name, const shape *shapes, int nshapes)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    double per_alloc[10];
    size_t requested_pages = 0;
    int page_aligned = 1;
    for (int round = 0; round < 10; round++) {
        rp_heap_stats_t before, after;
        rp_heap_stats(h, &before);
        for (int i = 0; i < 2000; i++) {
            const shape *s = &shapes[(round * 2000 + i) % nshapes];
            void *p = rp_alloc(h, s->size, s->align);
            REQUIRE(p);
            CHECK(((uintptr_t)p & (s->align - 1)) == 0);
            if (s->align >= 4096 && s->size % 4096 == 0)
                requested_pages += s->size / 4096;
            else
                page_aligned = 0;
        }
        rp_heap_stats(h, &after);
        CHECK(after.alloc_calls - before.alloc_calls == 2000);
        per_alloc[round] = (double)(after.blocks_examined - before.blocks_examined) / 2000.0;
    }
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    printf("%-12s examined per allocation: round 1 %.3f, round 10 %.3f, max in one allocation %llu\n", name,
           per_alloc[0], per_alloc[9], (unsigned long long)st.max_examined);
    CHECKF(per_alloc[9] <= per_alloc[0] + 0.25, "%s: round 10 examined %.3f vs round 1 %.3f", name, per_alloc[9],
           per_alloc[0]);
    for (int round = 0; round < 10; round++)
        CHECKF(per_alloc[round] <= 3.0, "%s: round %d examined %.3f per allocation", name, round + 1,
               per_alloc[round]);
    CHECKF(st.max_examined <= 3, "%s: one allocation examined %llu blocks", name, (unsigned long long)st.max_examined);
    if (page_aligned) {
        /* Whole pages, no header, no padding: 4096/4096 costs exactly one page. */
        CHECKF(st.bytes_in_use == requested_pages * 4096, "%s: %zu bytes in use for %zu pages", name,
               st.bytes_in_use, requested_pages);
        CHECK(st.large_blocks == 20000 && st.spans == 0);
    }
    CHECK_HEAP(h);
    rp_heap_destroy(h);
}

int main(void)
{
    static const struct {
        const char *name;
        shape shapes[8];
        int n;
    } cases[] = {
        {"4096/4096", {{4096, 4096}}, 1},
        {"3072/1024", {{3072, 1024}}, 1},
        {"16384/16384", {{16384, 16384}}, 1},
        {"65536/65536", {{65536, 65536}}, 1},
        {"64512/4096", {{64512, 4096}}, 1},
        {"100/64", {{100, 64}}, 1},
        {"mixed", {{4096, 4096}, {3072, 1024}, {100, 64}, {16384, 16384}, {64512, 4096}, {200, 16}, {65536, 65536}, {24, 16}}, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(cases[i].name, cases[i].shapes, cases[i].n);
    TEST_MAIN_END();
}
