/* Writes the real dumps the dump_parser corpus starts from (fuzz/seeds.py --dumps runs it):
 * a small heap of the flavour this is linked with — span blocks of several sizes, aligned and
 * page-tier blocks, a caller region, some blocks freed (in the debug flavour: quarantined) —
 * dumped alone (rp_heap_dump) and with every other heap of the process (rp_dump_all).
 * The blocks are allocated deep in a recursion through two functions, so the debug flavour's
 * stacks are full (seeds.py runs it with backtrace_depth=64) and distinct: the stack section
 * is a large part of a small file, where a fuzzer's byte flips reach its records' fields.
 *
 *   dump_seed_writer_release OUTDIR    writes OUTDIR/release-heap.rpd, OUTDIR/release-all.rpd
 *   dump_seed_writer_debug OUTDIR      the same as debug-*.rpd */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_dump.h"

static _Alignas(4096) unsigned char region[256 << 10];

static int write_dump(const char *dir, const char *name, rp_heap *h)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%s.rpd", dir, rp_flavour(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    int rc = h ? rp_heap_dump(h, fd) : rp_dump_all(fd);
    close(fd);
    if (rc != 0)
        fprintf(stderr, "%s: the dump failed\n", path);
    return rc != 0;
}

#define DEPTH 70

static void *alloc_deep_b(rp_heap *h, size_t size, size_t align, int depth, unsigned path);

/* Recurses `depth` times, through alloc_deep or alloc_deep_b as the bits of path say. */
__attribute__((noinline)) static void *alloc_deep(rp_heap *h, size_t size, size_t align, int depth, unsigned path)
{
    void *p = depth == 0 ? rp_alloc(h, size, align)
              : (path & 1) ? alloc_deep_b(h, size, align, depth - 1, path >> 1 | path << 31)
                           : alloc_deep(h, size, align, depth - 1, path >> 1 | path << 31);
    __asm__ volatile("" ::: "memory"); /* not a tail call: every level keeps its frame */
    return p;
}

__attribute__((noinline)) static void *alloc_deep_b(rp_heap *h, size_t size, size_t align, int depth, unsigned path)
{
    void *p = alloc_deep(h, size, align, depth, path);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 64;
    }
    rp_heap_config cfg = {.name = "seed", .region_bytes = (size_t)256 << 10};
    rp_heap *h = rp_heap_create(&cfg);
    if (!h || rp_heap_add_region(h, region, sizeof region) != 0) {
        fprintf(stderr, "cannot set up the heap\n");
        return 1;
    }
    static const size_t sizes[] = {0, 1, 24, 100, 500, 1000, 3000, 4096, 20000, 70000, 150000};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *blocks[N];
    for (unsigned i = 0; i < N; i++)
        blocks[i] = alloc_deep(h, sizes[i], i % 3 ? 0 : (size_t)64 << i % 7, DEPTH, i);
    for (unsigned i = 0; i < N; i += 3)
        rp_free(blocks[i]);
    void *other = rp_alloc(NULL, 200, 0); /* the default heap, for the dump of all heaps */
    int failed = write_dump(argv[1], "heap", h) | write_dump(argv[1], "all", NULL);
    rp_free(other);
    rp_heap_destroy(h);
    return failed;
}
