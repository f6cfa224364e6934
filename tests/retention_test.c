/* Memory goes back to the OS: above retain_bytes of free pages, freed runs are decommitted and
 * a wholly free OS region is unmapped; rp_heap_trim returns the rest on demand; destroy
 * returns everything. Measured with the OS module's counters (no timing). */
#include <stdint.h>

#include "rampart.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "testing.h"

static size_t mapped(void) { return rp_os_mapped_bytes() - rp_pagemap_bytes(); }

int main(void)
{
    size_t base = mapped();
    rp_heap_config cfg = {0};
    cfg.retain_bytes = 2 << 20;
    rp_heap *h = rp_heap_create(&cfg);
    void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = rp_alloc(h, 1 << 20, 0); /* 64 MiB in large blocks */
    rp_heap_stats_t st, st2;
    rp_heap_stats(h, &st);
    CHECK(st.os_bytes >= (size_t)64 << 20);
    CHECK(st.os_released == 0);
    size_t regions = st.regions;
    for (int i = 0; i < 64; i++)
        rp_free(p[i]);
    rp_heap_stats(h, &st2);
    printf("64 MiB freed: %zu regions -> %zu, OS bytes %zu -> %zu, released %zu\n", regions, st2.regions,
           st.os_bytes, st2.os_bytes, st2.os_released);
    CHECK(st2.os_released > (size_t)32 << 20);
    CHECK(st2.regions < regions);
    CHECK(st2.os_bytes < st.os_bytes);
    CHECK(mapped() < base + st.os_bytes);
    CHECK_HEAP(h);

    /* Below the retention limit nothing is given back; trim does it on demand. */
    rp_heap_config keep = {0};
    keep.retain_bytes = (size_t)1 << 30;
    rp_heap *k = rp_heap_create(&keep);
    for (int i = 0; i < 16; i++)
        p[i] = rp_alloc(k, 1 << 20, 0);
    for (int i = 0; i < 16; i++)
        rp_free(p[i]);
    rp_heap_stats(k, &st);
    CHECK(st.os_released == 0);
    size_t trimmed = rp_heap_trim(k, 0);
    rp_heap_stats(k, &st2);
    CHECK(trimmed > (size_t)8 << 20 && st2.os_released == trimmed);
    CHECK_HEAP(k);
    /* Still usable after trimming. */
    void *again = rp_alloc(k, 1 << 20, 0);
    CHECK(again != NULL);
    rp_free(again);
    rp_heap_destroy(k);
    rp_heap_destroy(h);
    CHECK(mapped() == base);
    TEST_MAIN_END();
}
