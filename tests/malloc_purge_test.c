/* The malloc drop-in's delayed retention (option purge_delay_ms, rp_heap_config's field of
 * the same name): by default, memory a program frees beyond retain_bytes stays resident for
 * the delay, so a burst freed and allocated again reuses its pages; with purge_delay_ms=0 it
 * goes back to the OS as it is freed; malloc_trim gives it back at once either way.
 * Run as "--delayed" with the default options, "--at-once" with purge_delay_ms=0 and
 * "--keep-none" with retain_bytes=0 as well (nothing kept: every freed page goes back); no
 * timing (the default delay, 10 s, is never reached here). White-box: arena 0's counters. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "rampart_malloc.h"
#include "src/malloc/arena.h"
#include "testing.h"

#define BLOCKS 64
#define BLOCK ((size_t)1 << 20) /* page tier, more pages than a cache's page bins hold */

static void burst(void)
{
    void *p[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        p[i] = malloc(BLOCK);
        REQUIRE(p[i] != NULL);
        memset(p[i], 7, BLOCK);
    }
    for (int i = 0; i < BLOCKS; i++)
        free(p[i]);
}

int main(int argc, char **argv)
{
    REQUIRE(argc == 2 && (strcmp(argv[1], "--delayed") == 0 || strcmp(argv[1], "--at-once") == 0 ||
                          strcmp(argv[1], "--keep-none") == 0));
    int delayed = strcmp(argv[1], "--delayed") == 0, keep_none = strcmp(argv[1], "--keep-none") == 0;
    test_malloc_free(1); /* sets the drop-in up */
    rp_heap *arena = rp_arena_get(0);
    REQUIRE(arena != NULL);
    rp_heap_stats_t st;
    burst();
    rp_heap_stats(arena, &st);
    printf("%s: 64 MiB freed: released %zu, dirty %zu, mapped %zu\n", argv[1], st.os_released,
           st.page_dirty_bytes, st.os_bytes);
    if (delayed) {
        CHECK(st.os_released == 0);
        CHECK(st.page_dirty_bytes >= (size_t)BLOCKS * BLOCK);
        /* The second burst reuses the kept pages: nothing mapped, nothing released. */
        size_t os = st.os_bytes;
        burst();
        rp_heap_stats(arena, &st);
        CHECK(st.os_released == 0 && st.os_bytes == os);
    } else if (keep_none) {
        CHECK(st.os_released >= (size_t)BLOCKS * BLOCK);
        CHECK(st.page_dirty_bytes == 0);
    } else {
        CHECK(st.os_released >= (size_t)(BLOCKS * BLOCK) - ((size_t)32 << 20));
        CHECK(st.page_dirty_bytes <= ((size_t)32 << 20));
    }
    malloc_trim(0);
    rp_heap_stats(arena, &st);
    CHECK(st.page_dirty_bytes == 0);
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "rp_malloc_check: %s", why);
    TEST_MAIN_END();
}
