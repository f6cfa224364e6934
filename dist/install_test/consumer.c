/* A program outside rampart's tree that uses the installed library, built by
 * dist/meson_install_test.sh through pkg-config and through Meson's dependency(). It prints the
 * version it was built against, the version and flavour it runs with, and exits 0 when a heap
 * works. With WITH_DUMP (the debug flavour) and a path pattern as argv[1], it also writes a
 * heap dump there for rpdump. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rampart.h"
#ifdef WITH_DUMP
#include "rampart_dump.h"
#endif

int main(int argc, char **argv)
{
    rp_heap_config cfg = {0};
    cfg.name = "consumer";
    rp_heap *h = rp_heap_create(&cfg);
    void *p = h ? rp_alloc(h, 4096, 4096) : NULL;
    if (!p || ((uintptr_t)p & 4095) != 0) {
        fprintf(stderr, "consumer: rp_alloc failed\n");
        return 1;
    }
    memset(p, 1, 4096);
    char why[160];
    if (rp_heap_check(h, why, sizeof why) != 0) {
        fprintf(stderr, "consumer: %s\n", why);
        return 1;
    }
#ifdef WITH_DUMP
    char path[256];
    if (argc > 1 && rp_dump_to_path(argv[1], path, sizeof path) != 0) {
        fprintf(stderr, "consumer: no dump at %s\n", argv[1]);
        return 1;
    }
#else
    (void)argc;
    (void)argv;
#endif
    rp_free(p);
    rp_heap_destroy(h);
    printf("%s %s %s\n", RAMPART_VERSION_STRING, rp_version(), rp_flavour());
    return 0;
}
