#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/ (named seed-*; inputs the fuzzer found
are named by their SHA-1 and merged in by tools/fuzz.sh).

    fuzz/seeds.py            rewrite the seed-* files
    fuzz/seeds.py --check    exit 1 if a seed-* file differs from what this script writes
    fuzz/seeds.py --dumps    also rewrite dump_parser's seeds: real dumps, written by
                             //fuzz:dump_seed_writer_{release,debug} (built and run through
                             tools/bazelw), and damaged copies of them. They hold addresses, a
                             pid and a time, so they differ at every run: --check leaves them out.

heap_ops input format (fuzz/heap_ops.c is the authority):
    shape0: bits 0-3 max_bytes = (v+1) * 512 KiB, bits 4-6 region_bytes = 16 KiB << v,
            bit 7 RP_HEAP_NO_OS
    shape1: bits 0-2 large_threshold = 4 KiB << v, bits 3-5 retain_bytes = 32 KiB << v,
            bit 6 RP_HEAP_HUGE_PAGES, bit 7 purge_delay_ms = one hour (the excess is kept)
    shape2: bits 0-1 mapped_block_bytes = default (32 MiB), 2 MiB, 3 MiB, never; bit 2 RP_HEAP_HUGE_PAGES_LATE
    then operations: an opcode byte (its low four bits; 15 does nothing yet) and its
    arguments, little-endian: 13 batch flags slot count size align (flags bit 0: free rather
    than allocate; bits 1-3: the free's stride - 1, 7 for -1; bits 4-6: one bad pointer, 1 twice in the
    batch, 2 the second heap's, 3 foreign, 4 an interior pointer of a live block, 5 a stale one; count: count + 1 blocks), 14 fresh-region where
    (a gigabyte of address space the address map has no chunk table for). A size is 16 bits: the top 3 bits pick a range (0: 0..63,
    1: 0..1023, 2: 0..8191, 3: x*8, 4: x*64, 5: whole pages (up to 4 MiB), 6: around a page boundary,
    7: special values); an alignment byte is 0 (default), 1..23 for 2^(v-1), 24..31 for
    invalid or huge values, bit 7 = the second heap.

malloc_api input format (fuzz/malloc_api.c is the authority): operations until the input
    ends, an opcode byte (its low four bits) and its arguments. A slot
    byte picks one of 128 blocks the program holds (an occupied slot is freed first). Sizes
    are 16 bits as for heap_ops, but whole pages (range 5) only up to 1 MiB and malloc_api's
    own table of special values (range 7: edges, 4 MiB, and sizes from 2^47 on, which must
    fail). A count byte
    is its value below 0xf0, else one of 0, 1, 2, 3, 7, 4096, 2^32, SIZE_MAX/2,
    SIZE_MAX/2 + 1, SIZE_MAX. An alignment byte: 0, 1..23 for 2^(v-1), 24..31 for 3, 24, 48,
    4097, 12288, 2^47, 2^63, SIZE_MAX.
        0 malloc slot size          1 calloc slot count size     2 realloc slot size
        3 reallocarray slot count size                           4 posix_memalign slot align size
        5 aligned_alloc slot align size                          6 memalign slot align size
        7 valloc slot size flags (bit 0: pvalloc)                8 free slot how (0 free,
        1 free_sized, 2 cfree)      9 usable slot                10 thread what slot size
        (what % 6 on the second thread: 0 free, 1 malloc, 2 realloc, 3 flush, 4 exit, 5 check)
        11 flush (this thread's cache)                           12 check
        13 malloc-run slot count size                            14 free-run slot count stride
        15 more what (% 8) and its arguments:
            0 stats         rp_malloc_stats against the arenas' counters and the blocks held
            1 print         rp_malloc_stats_print into memory, every line parsed back
            2 glibc pad     malloc_stats (stderr read back), mallinfo2, mallinfo, mallopt,
                            malloc_trim((pad % 16) * 64 KiB): the transfer caches end empty
            3 burst count size   count * 3 blocks of size % 8193 bytes allocated here, freed on
                            the second thread, allocated again (at most 4 per input); count
                            above 200: count - 200 blocks of size % 8 + 1 pages from valloc on
                            each thread, all freed here (page bins holding two arenas' blocks)
            4 misuse kind size   kind % 5: 0 a second free of a cached block, 1 realloc of one,
                            2 free of foreign memory (ignored, counted), 3 realloc of foreign
                            memory, 4 a second free of cached pages; size's low 11 bits: the
                            offset into the foreign buffer
            5 aliases       the next operation through __libc_malloc, __libc_calloc,
                            __libc_realloc, __libc_memalign, __libc_valloc, __libc_pvalloc,
                            __libc_free and free_aligned_sized (for free_sized)
            6 fork magic16 mode  only with magic 0x4bf0, once per input: the child checks, frees
                            every block, allocates; mode bit 0: the default report function in
                            a grandchild (one line on stderr, SIGABRT)
            7 damage kind x      x >> 2: a bin of (x >> 2) * 16-byte blocks; kind % 16: 0 the
                            top slot zeroed (x & 3: 1 pointing into its block, 2 the bin's slots
                            moved), 1 a tag, 2 a block twice in its bin, 3/4 a bin's count one
                            too high/low, 5 a bin above its limit, 6 the cache's bytes, 7 its
                            cap, 8 a page bin above its limit, 9 a cached page's flag (x & 1: the
                            page twice in its bin); in a transfer batch: 10 its count changed,
                            11 its count 0 or above the batch size (x & 1), 12 a slot zeroed or
                            pointing into its block (x & 1), 13 the cache's bytes (x & 1: its
                            cap), 14 its batch count above the slots, 15 a block's tag

corruption input format (fuzz/corruption.c is the authority): three bytes naming the one
    fault, then valid operations until the input ends; the fault is injected after them.
        fault[0] % 8: 0 overflow, 1 underflow, 2 write after free in quarantine, 3 write
            after free out of quarantine, 4 double free, 5 interior free, 6 foreign free,
            7 realloc of a freed block
        fault[1]: k - 1 (overflow, underflow; modulo 64); where % 3 (start, middle, end) and
            bytes - 1 in bits 2-3 (writes after free); bit 0: out of quarantine (double free,
            realloc) or a global rather than a stack address (foreign free); the offset
            (interior free)
        fault[2]: which block (a slot, or the n-th oldest quarantined) and the byte written
    operations: 0 alloc slot size align, 1 free slot, 2 realloc slot size, 3 check,
        4 alloc-run slot count size, 5 free-run slot count (sizes and alignments as for
        heap_ops, with corruption's own special sizes)

dump_parser input format: a heap dump (debug/DUMP_FORMAT.md), or any bytes. The harness
    parses each input as given and again with its checksums repaired (fuzz/dump_repair.h).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

(OP_ALLOC, OP_CALLOC, OP_REALLOC, OP_FREE, OP_ADD_REGION, OP_CHECK, OP_TRIM, OP_OS_FAIL,
 OP_MISUSE, OP_ALLOC_RUN, OP_FREE_RUN, OP_CORRUPT, OP_EDGES, OP_BATCH, OP_FRESH_REGION) = range(15)

SPECIAL_SIZES = [0, 1, 15, 16, 17, 24, 4096, 3072, 64512, 65535, 65536, 65537, 1 << 20, 1 << 32,
                 0xfffff000, 1 << 43, (1 << 43) + 1, (1 << 63) - 1, 2**64 - 4096, 2**64 - 1]
SPECIAL_ALIGNS = [3, 24, 4097, 6144, 1 << 40, 1 << 63, 2**64 - 1, 12288]


def size16(n, specials=SPECIAL_SIZES, page_limit=1024):
    """The 16-bit encoding of size n (exact); `specials` is the target's table of range 7,
    `page_limit` the number of page counts range 5 encodes (1024, or 256 for SMALL_PAGES)."""
    if n < 64:
        return n
    if n < 1024:
        return 1 << 13 | n
    if n < 8192:
        return 2 << 13 | n
    if n % 4096 == 0 and n // 4096 < page_limit:
        return 5 << 13 | n // 4096
    if n % 8 == 0 and n // 8 < 8192:
        return 3 << 13 | n // 8
    if n % 64 == 0 and n // 64 < 8192:
        return 4 << 13 | n // 64
    if n in specials:
        return 7 << 13 | specials.index(n)
    raise ValueError("no exact encoding for size %d" % n)


def align8(a, second_heap=False, specials=SPECIAL_ALIGNS):
    if a == 0:
        v = 0
    elif a in specials:
        v = 24 + specials.index(a)
    else:
        assert a & (a - 1) == 0 and a <= 1 << 22, a
        v = a.bit_length()
    return v | (0x80 if second_heap else 0)


def u16(x):
    return bytes([x & 0xff, x >> 8 & 0xff])


def shape(max_half_mib=16, region_log=4, no_os=False, large_log=4, retain_log=2, huge_pages=False,
          purge_delay=False, mapped=0):
    """max_bytes = max_half_mib * 512 KiB; region = 16 KiB << region_log; threshold = 4 KiB <<
    large_log (4 = 64 KiB, the default); retain = 32 KiB << retain_log; huge_pages sets
    RP_HEAP_HUGE_PAGES; purge_delay sets a purge delay of one hour; mapped picks
    mapped_block_bytes (0 default, 1 2 MiB, 2 3 MiB, 3 never)."""
    return bytes([(max_half_mib - 1) | region_log << 4 | (0x80 if no_os else 0),
                  large_log | retain_log << 3 | (0x40 if huge_pages else 0) | (0x80 if purge_delay else 0),
                  mapped])


def alloc(slot, size, align=0, second=False):
    return bytes([OP_ALLOC, slot]) + u16(size16(size)) + bytes([align8(align, second)])


def calloc(slot, count_byte, size, align=0):
    return bytes([OP_CALLOC, slot, count_byte]) + u16(size16(size)) + bytes([align8(align)])


def realloc(slot, size, null_heap=False, second=False):
    return bytes([OP_REALLOC, slot]) + u16(size16(size)) + bytes([(1 if null_heap else 0) | (2 if second else 0)])


def free(slot):
    return bytes([OP_FREE, slot])


def add_region(offset128, len128, misalign=0):
    return bytes([OP_ADD_REGION]) + u16(offset128) + u16(len128) + bytes([misalign])


def check():
    return bytes([OP_CHECK])


def trim(keep64k):
    return bytes([OP_TRIM, keep64k])


def os_fail(n):
    return bytes([OP_OS_FAIL, n - 1])


def misuse(kind, slot, offset=0):
    return bytes([OP_MISUSE, kind, slot]) + u16(offset)


def alloc_run(slot, count, size, align=0, second=False):
    return bytes([OP_ALLOC_RUN, slot, count]) + u16(size16(size)) + bytes([align8(align, second)])


def free_run(slot, count, stride=1):
    return bytes([OP_FREE_RUN, slot, count, stride - 1])


def corrupt(kind, sel=0, x=0):
    return bytes([OP_CORRUPT, kind]) + u16(sel) + bytes([x])


def edges():
    return bytes([OP_EDGES])


def alloc_batch(slot, count, size, align=0):
    """rp_alloc_batch of count (1..64) blocks into slots slot.."""
    return bytes([OP_BATCH, 0, slot, count - 1]) + u16(size16(size)) + bytes([align8(align)])


BAD_NONE, BAD_TWICE, BAD_OTHER_HEAP, BAD_FOREIGN, BAD_INTERIOR, BAD_STALE = range(6)


def free_batch(slot, count, stride=1, bad=BAD_NONE):
    """rp_free_batch of the first heap's blocks among count slots from slot (every stride-th),
    plus one bad pointer: the last one again, a block of the second heap, foreign memory, a
    16-byte aligned interior pointer of a live block, a pointer freed before. stride 1..7, or -1."""
    return bytes([OP_BATCH, 1 | (7 if stride == -1 else stride - 1) << 1 | bad << 4, slot, count - 1]) + u16(0) + bytes([0])


def fresh_region(where=0):
    return bytes([OP_FRESH_REGION, where])


def heap_ops_seeds():
    s = {}
    # Batches (the thread caches' entry points): allocations of every small shape, short
    # batches at the cap, page-tier sizes refused; frees in runs and apart, each with a bad
    # pointer (twice in the batch, the second heap's, foreign memory) reported alone.
    s["seed-batch"] = (shape(2) + alloc_batch(0, 64, 48) + alloc_batch(64, 64, 1000, 64) + alloc_batch(128, 10, 65536) +
                       alloc_batch(140, 10, 100, 3) + free_batch(0, 64, 2) + free_batch(1, 31, 2, BAD_TWICE) +
                       alloc(200, 5000, 0, True) + free_batch(64, 64, 1, BAD_OTHER_HEAP) +
                       alloc_batch(0, 64, 8000) + alloc_batch(64, 64, 8000) + alloc_batch(128, 64, 16000) +
                       free_batch(0, 64, 3, BAD_FOREIGN) + check() + free_batch(63, 64, -1, BAD_TWICE) + check())
    # The batch's header fast path refusing what is no live block: interior and stale pointers.
    s["seed-batch-bad-headers"] = (shape(2) + alloc_batch(0, 64, 48) + alloc_batch(64, 64, 200) +
                                   free_batch(0, 16, 1, BAD_INTERIOR) + free_batch(16, 16, 2, BAD_STALE) +
                                   free_batch(64, 32, 1, BAD_STALE) + free_batch(100, 20, 1, BAD_INTERIOR) + check())
    # Caller memory where the address map has no chunk table, the OS refusing it; an edges
    # operation (the default report function, every error kind's name).
    s["seed-fresh-region"] = shape(4) + fresh_region(0) + fresh_region(7) + alloc(0, 100) + fresh_region(255) + edges()
    # The seed scenario (README, rpbench): runs of one aligned shape, no frees, then churn.
    s["seed-4096x4096"] = (shape(16) + alloc_run(0, 250, 4096, 4096) + check() +
                           free_run(0, 125, 2) + alloc_run(0, 250, 4096, 4096) + check())
    s["seed-3072x1024"] = (shape(16) + alloc_run(0, 250, 3072, 1024) + check() +
                           free_run(1, 125, 2) + alloc_run(1, 125, 3072, 1024) + check() +
                           free_run(0, 250) + check())
    s["seed-64512x4096"] = shape(16, large_log=5) + alloc_run(0, 100, 64512, 4096) + check() + free_run(0, 100, 3)
    mixed = [(4096, 4096), (3072, 1024), (100, 64), (16384, 16384), (64512, 4096), (200, 16),
             (65536, 65536), (24, 0)]
    s["seed-mixed"] = shape(16) + b"".join(alloc_run(i * 30, 30, sz, al) for i, (sz, al) in enumerate(mixed)) + \
        check() + free_run(0, 240, 7) + b"".join(alloc_run(i * 30 + 5, 10, sz, al) for i, (sz, al) in
                                                 enumerate(reversed(mixed))) + check()
    # Small blocks: splits, exact classes, coalescing with both neighbours, the spare span.
    small = b"".join(alloc(i, sz) for i, sz in enumerate([0, 1, 16, 17, 24, 32, 48, 100, 500, 511, 512, 513,
                                                          1000, 2048, 4000, 8000]))
    s["seed-small-coalesce"] = (shape(4) + small + free(3) + free(5) + free(4) + check() + free(1) + free(0) +
                                free(2) + free_run(6, 10) + check() + small + check())
    # Alignment from 1 byte to 4 MiB, invalid alignments, huge ones.
    s["seed-alignments"] = (shape(16) + b"".join(alloc(i, 100 + 37 * i, 1 << i) for i in range(0, 23)) + check() +
                            b"".join(alloc(30 + i, 64, a) for i, a in enumerate(SPECIAL_ALIGNS)) +
                            free_run(0, 23, 2) + b"".join(alloc(40 + i, 3000, 1 << (i + 5)) for i in range(8)) + check())
    # Out of memory on a 512 KiB cap, then recovery.
    s["seed-oom"] = (shape(1, region_log=0) + alloc_run(0, 40, 65536) + check() + alloc(50, 1 << 20) +
                     alloc(51, 1 << 43) + alloc(52, 2**64 - 1) + free_run(0, 40, 2) + alloc_run(60, 20, 3072, 1024) +
                     check())
    # Heap without OS memory: caller regions only (misaligned, too small, overlapping).
    s["seed-regions"] = (shape(4, no_os=True) + alloc(0, 100) + add_region(0, 2048, 5) + alloc_run(1, 40, 3072, 1024) +
                         add_region(100, 1024) + add_region(4096, 10) + add_region(8192, 8192, 0x43) +
                         alloc(60, 200000, 4096) + check() + misuse(4, 0, 0) + free_run(1, 40) + check())
    s["seed-regions-os"] = (shape(2) + add_region(0, 4096) + alloc_run(0, 60, 20000) + alloc_run(60, 30, 4096, 4096) +
                            check() + free_run(0, 90) + trim(0) + check())
    # realloc: shrink and grow in place, moves, across the tier boundary, into another heap.
    s["seed-realloc"] = (shape(16) + alloc(0, 100) + alloc(1, 100) + realloc(0, 50) + realloc(0, 400) + free(1) +
                         realloc(0, 2000) + realloc(0, 70016) + realloc(0, 200000) + realloc(0, 5000) +
                         realloc(0, 0) + realloc(2, 300) + realloc(2, 64512, null_heap=True) +
                         realloc(2, 100, second=True) + alloc(3, 4096, 4096) + realloc(3, 12288) + realloc(3, 4096) +
                         realloc(3, 2**64 - 1) + realloc(4, 1 << 32) + check())
    s["seed-calloc"] = (shape(8) + calloc(0, 10, 100) + calloc(1, 3, 65536) + calloc(2, 0, 100) +
                        calloc(3, 0xf7, 1 << 32) + calloc(4, 0xf9, 16) + calloc(5, 2, 4096, 4096) +
                        calloc(6, 7, 24, 3) + check())
    # Transparent huge pages: 2 MiB regions advised, then grown into, released and trimmed.
    s["seed-huge-pages"] = (shape(16, region_log=7, retain_log=0, huge_pages=True) + alloc_run(0, 200, 100, 64) +
                            alloc_run(200, 20, 100032) + check() + free_run(200, 20) + free_run(0, 200, 2) +
                            trim(0) + check())
    # Retention and trimming: free page memory beyond retain_bytes goes back to the OS.
    s["seed-retain-trim"] = (shape(16, region_log=2, retain_log=0) + alloc_run(0, 30, 200000) + free_run(0, 30) +
                             check() + alloc_run(0, 10, 65536) + free_run(0, 10) + trim(0) + trim(2) + check())
    # The same with a purge delay: the excess is kept until trim gives it back.
    s["seed-retain-delayed"] = (shape(16, region_log=2, retain_log=0, purge_delay=True) + alloc_run(0, 30, 200000) +
                                free_run(0, 30) + check() + alloc_run(0, 30, 200000) + free_run(0, 30) + trim(1) +
                                check())
    # The OS refusing: region maps, unmaps and madvise fail one at a time.
    s["seed-os-fail"] = (shape(16, region_log=0, retain_log=0) + os_fail(1) + alloc(0, 100032) + alloc(1, 100032) +
                         os_fail(1) + free(1) + os_fail(2) + alloc_run(2, 8, 300032) + free_run(2, 8) +
                         os_fail(1) + trim(0) + check())
    # Mapped blocks (mapped_block_bytes 2 MiB and 3 MiB under the 8 MiB cap): growth by
    # mremap, shrinking, growth past the cap, OS failures in each step, stale and interior frees.
    MiB = 1 << 20
    s["seed-mapped-blocks"] = (shape(16, mapped=1) + alloc(0, 2 * MiB) + alloc(1, 100) + realloc(0, 3 * MiB) +
                               check() + realloc(0, MiB) + realloc(0, 4 * MiB - 4096) + alloc(2, 2 * MiB, 1 << 21) +
                               realloc(2, 4 * MiB - 4096) + os_fail(1) + realloc(0, 2 * MiB + 4096) + os_fail(2) +
                               realloc(1, 3 * MiB) + misuse(1, 0, 777) + free(0) + misuse(0, 0, 0) + os_fail(1) +
                               free(2) + trim(0) + check())
    s["seed-mapped-blocks-3m"] = (shape(16, huge_pages=True, mapped=2) + alloc(0, 3 * MiB - 4096) +
                                  alloc(1, 3 * MiB) + realloc(0, 3 * MiB) + realloc(1, 8192) + os_fail(3) +
                                  realloc(0, 2 * MiB) + calloc(2, 2, 2 * MiB) + free(1) + free(0) + free(2) + check())
    # Misuse, each kind once: double free, interior free / realloc / usable size, foreign
    # pointers, region metadata, forged header, a region over live memory.
    s["seed-misuse"] = (shape(8) + add_region(0, 1024) + alloc(0, 1000) + alloc(1, 70016) + alloc(2, 300) + free(2) +
                        misuse(0, 0, 0) + misuse(1, 0, 40) + misuse(1, 1, 4095) + misuse(2, 0, 33) +
                        misuse(2, 1, 64) + misuse(3, 0, 0) + misuse(3, 0, 1) + misuse(3, 0, 2) + misuse(3, 0, 3) +
                        misuse(4, 0, 0) + misuse(5, 0, 3) + misuse(6, 0) + misuse(6, 1) + free(1) +
                        misuse(0, 0, 1) + check())
    # Damage of every kind the checker must report (then repaired), on a heap with spans,
    # free blocks, large blocks, a caller region and several OS regions.
    setup = (shape(16, region_log=2) + add_region(0, 1024) + alloc_run(0, 20, 100) + alloc_run(20, 5, 70016) +
             alloc_run(25, 10, 3072, 1024) + free_run(0, 20, 3) + free_run(20, 2))
    s["seed-corrupt"] = setup + b"".join(corrupt(k, sel, x) for k in range(16)
                                         for sel, x in ((0, 1), (0x1235, 0x42), (0x8007, 0x81))) + check()
    s["seed-edges"] = shape(2) + alloc(0, 100) + edges() + free(0) + edges()
    # Program bugs the release flavour must report, not follow: an overflow into the next
    # header, an underflow into the block's own, writes after free into a free neighbour's
    # links or a free block's header (then free, grow or allocate).
    s["seed-hardening"] = (shape(4) + alloc_run(0, 16, 100) + alloc(20, 40) + free(5) + free(9) + free(12) +
                           misuse(8, 0, 0) + misuse(8, 3, 0x1f) + misuse(8, 15, 7) + misuse(10, 1, 3) +
                           misuse(10, 2, 0x10) + misuse(9, 4, 0) + misuse(9, 8, 3) + misuse(9, 10, 1) +
                           misuse(11, 0, 0) + misuse(11, 0, 0x1d05) + check())
    # Writes after free into a free block's links: the allocation that would take it refuses.
    s["seed-uaf-links"] = (shape(4) + alloc_run(0, 12, 100) + free(3) + free(7) + free(9) + misuse(7, 0, 0) +
                           misuse(7, 0, 0x100) + alloc_run(20, 4, 40) + free_run(20, 4, 2) + misuse(7, 0, 0x105) +
                           check())
    # The OS refusing to trim a new region's alignment slack must not take the heap over its
    # cap (tests/fuzz_findings_test.c has the exact case).
    s["seed-cap-trim"] = (shape(1, region_log=0) + os_fail(2) + alloc(0, 100) + os_fail(3) + alloc(1, 70016) +
                          os_fail(2) + alloc(2, 4096, 4096) + check())
    return s


# ---- malloc_api ------------------------------------------------------------------------------

(M_MALLOC, M_CALLOC, M_REALLOC, M_REALLOCARRAY, M_POSIX_MEMALIGN, M_ALIGNED_ALLOC, M_MEMALIGN, M_VALLOC,
 M_FREE, M_USABLE, M_THREAD, M_FLUSH, M_CHECK, M_MALLOC_RUN, M_FREE_RUN, M_MORE) = range(16)
(MORE_STATS, MORE_PRINT, MORE_GLIBC, MORE_BURST, MORE_MISUSE, MORE_ALIASES, MORE_FORK, MORE_DAMAGE) = range(8)
FORK_MAGIC = 0x4bf0

MALLOC_SIZES = [0, 1, 15, 16, 17, 24, 1008, 1009, 4096, 65536, 65537, 1 << 20, 4 << 20, 1 << 47,
                (1 << 63) - 1, 1 << 63, 2**64 - 4096, 2**64 - 16, 2**64 - 1, 1 << 48]
MALLOC_ALIGNS = [3, 24, 48, 4097, 12288, 1 << 47, 1 << 63, 2**64 - 1]
MALLOC_COUNTS = [0, 1, 2, 3, 7, 4096, 1 << 32, (2**64 - 1) // 2, 2**63, 2**64 - 1]
(T_FREE, T_MALLOC, T_REALLOC, T_FLUSH, T_EXIT, T_CHECK) = range(6)


def msize(n):
    return u16(size16(n, MALLOC_SIZES, 256))


def mcount(n):
    return n if n < 0xf0 else 0xf0 + MALLOC_COUNTS.index(n)


def malign(a):
    return align8(a, specials=MALLOC_ALIGNS)


def m_malloc(slot, size):
    return bytes([M_MALLOC, slot]) + msize(size)


def m_calloc(slot, count, size):
    return bytes([M_CALLOC, slot, mcount(count)]) + msize(size)


def m_realloc(slot, size):
    return bytes([M_REALLOC, slot]) + msize(size)


def m_reallocarray(slot, count, size):
    return bytes([M_REALLOCARRAY, slot, mcount(count)]) + msize(size)


def m_aligned(op, slot, align, size):
    return bytes([op, slot, malign(align)]) + msize(size)


def m_valloc(slot, size, pvalloc=False):
    return bytes([M_VALLOC, slot]) + msize(size) + bytes([1 if pvalloc else 0])


def m_free(slot, how=0):
    return bytes([M_FREE, slot, how])


def m_thread(what, slot=0, size=0):
    return bytes([M_THREAD, what, slot]) + msize(size)


def m_run(slot, count, size):
    return bytes([M_MALLOC_RUN, slot, count]) + msize(size)


def m_free_run(slot, count, stride=1):
    return bytes([M_FREE_RUN, slot, count, stride - 1])


def m_more(what, *args):
    return bytes([M_MORE, what, *args])


def m_burst(blocks, size):
    """Blocks are counted in threes (at most 600)."""
    assert blocks % 3 == 0 and blocks <= 600
    return m_more(MORE_BURST, blocks // 3) + msize(size)


def m_page_burst(blocks, pages):
    """blocks (1..55) of 1..8 pages from valloc on each thread, all freed on this one."""
    assert 1 <= blocks <= 55 and 1 <= pages <= 8
    return m_more(MORE_BURST, 200 + blocks) + u16(pages - 1)


def m_misuse(kind, size=0, foreign_offset=0):
    """kind % 5: 0 a second free of a cached block, 1 realloc of one, 2 free of foreign memory,
    3 realloc of foreign memory, 4 a second free of cached pages. The size code's low 11 bits
    are the offset into the foreign buffer (kinds 2 and 3)."""
    code = size16(size, MALLOC_SIZES, 256) if size else foreign_offset
    return m_more(MORE_MISUSE, kind) + u16(code)


def m_damage(kind, size=48, variant=0):
    """kind % 16 (fuzz/malloc_api.c do_damage); a bin of size-byte blocks (size % 16 == 0, at
    most 1008); variant (x & 3): which form of the damage (kind 0: the top slot zeroed,
    pointing into its block, the bin's slots moved; see the format above)."""
    assert size % 16 == 0 and size <= 1008
    return m_more(MORE_DAMAGE, kind, size // 16 << 2 | variant)


def malloc_api_seeds():
    s = {}
    check, flush = bytes([M_CHECK]), bytes([M_FLUSH])
    # malloc(0) three times (unique pointers), every small class, usable sizes, the frees.
    sizes = [0, 0, 0, 1, 15, 16, 17, 24, 100, 1008, 1009, 4096, 65536, 65537, 1 << 20]
    s["seed-malloc"] = (b"".join(m_malloc(i, n) for i, n in enumerate(sizes)) +
                        b"".join(bytes([M_USABLE, i]) for i in range(len(sizes))) + check +
                        b"".join(m_free(i, i % 3) for i in range(len(sizes))) + check)
    # calloc: zeroed reused memory, products that overflow, zero counts.
    s["seed-calloc"] = (m_malloc(0, 1000) + m_free(0) + m_calloc(1, 10, 100) + m_calloc(2, 3, 65536) +
                        m_calloc(3, 0, 100) + m_calloc(4, 2**64 - 1, 16) + m_calloc(5, 1 << 32, 1 << 47) +
                        m_calloc(6, 2**63, 2) + m_calloc(7, 7, 0) + check)
    # realloc: grow and shrink in place and by moving, across classes and tiers, to 0 (frees),
    # from NULL, to impossible sizes (the block stays); reallocarray's overflow and zero count.
    s["seed-realloc"] = (m_malloc(0, 100) + m_realloc(0, 50) + m_realloc(0, 400) + m_realloc(0, 2000) +
                         m_realloc(0, 70016) + m_realloc(0, 300032) + m_realloc(0, 5000) + m_realloc(0, 2**64 - 1) +
                         m_realloc(0, 0) + m_realloc(1, 0) + m_realloc(2, 300) + m_realloc(2, 1 << 48) +
                         m_reallocarray(3, 10, 100) + m_reallocarray(3, 2**64 - 1, 16) + m_reallocarray(3, 20, 100) +
                         m_reallocarray(3, 0, 100) + m_reallocarray(4, 3, 4096) + check)
    # Every alignment code through each aligned function, then valloc and pvalloc.
    s["seed-aligned"] = (b"".join(m_aligned(op, i, a, 100 + 37 * i) for op in (M_POSIX_MEMALIGN, M_ALIGNED_ALLOC,
                                                                              M_MEMALIGN)
                                  for i, a in enumerate([0] + [1 << k for k in range(23)] + MALLOC_ALIGNS)) +
                         check + m_valloc(40, 0) + m_valloc(41, 5000) + m_valloc(42, 0, True) +
                         m_valloc(43, 4097, True) + m_valloc(44, 2**64 - 16, True) + m_aligned(M_POSIX_MEMALIGN, 45,
                                                                                              32, 32) + check)
    # Two threads: blocks allocated on one and freed or resized on the other, cache flushes,
    # the second thread's exit (its cache goes back), a new second thread.
    s["seed-threads"] = (m_run(0, 40, 48) + b"".join(m_thread(T_FREE, i) for i in range(0, 40, 2)) +
                         m_thread(T_CHECK) + b"".join(m_thread(T_MALLOC, 60 + i, 48) for i in range(20)) +
                         m_free_run(60, 20) + m_thread(T_REALLOC, 1, 5000) + m_thread(T_REALLOC, 3, 0) +
                         m_thread(T_FLUSH) + flush + m_thread(T_MALLOC, 90, 4096) + m_thread(T_EXIT) +
                         m_free(90) + m_thread(T_MALLOC, 91, 100032) + m_thread(T_FREE, 5) + m_thread(T_EXIT) + check)
    # Thread caches: bins over their limit and the cache over its cap (flushes), page bins.
    s["seed-cache"] = (m_run(0, 100, 1008) + m_free_run(0, 100) + m_run(0, 100, 8192) + m_free_run(0, 100) +
                       m_run(0, 40, 4096) + m_free_run(0, 40) + b"".join(m_aligned(M_POSIX_MEMALIGN, i, 4096, 4096)
                                                                           for i in range(20)) +
                       m_free_run(0, 20) + check + flush + m_run(0, 100, 24) + m_free_run(0, 100, 3) + check)
    # Statistics: rp_malloc_stats, the printed text parsed back, malloc_stats on stderr,
    # mallinfo, mallopt and malloc_trim with and without a pad, with blocks on both threads.
    stats, prnt = m_more(MORE_STATS), m_more(MORE_PRINT)
    s["seed-stats"] = (stats + prnt + m_run(0, 30, 100) + m_thread(T_MALLOC, 40, 5000) + m_thread(T_MALLOC, 41, 1 << 20) +
                       m_free_run(0, 15, 2) + stats + prnt + m_more(MORE_GLIBC, 0) + m_thread(T_FREE, 40) +
                       m_free_run(1, 15, 2) + prnt + m_more(MORE_GLIBC, 15) + flush + check + m_more(MORE_GLIBC, 3) +
                       check)
    # Bursts: one thread allocates up to 600 blocks of one size, the other frees them all
    # (batches into the transfer caches), the first allocates them again (batches back).
    s["seed-burst"] = (m_burst(600, 48) + m_burst(300, 1008) + m_burst(99, 4000) + m_burst(30, 20000) +
                       m_more(MORE_STATS) + check)
    # Page bursts: page blocks of two arenas in this thread's page bins, flushed back each to
    # its own arena.
    s["seed-page-burst"] = (m_page_burst(20, 1) + m_page_burst(55, 2) + m_page_burst(9, 8) + m_page_burst(1, 4) + check)
    # Misuse the drop-in reports itself (cached blocks freed or reallocated again, pages
    # too) or ignores (foreign memory), with a report function that returns.
    s["seed-misuse"] = (m_malloc(0, 100) + m_misuse(0, 24) + m_misuse(1, 512) + m_misuse(2, 0, 0) + m_misuse(2, 0, 5) +
                        m_misuse(3, 0, 16) + m_misuse(4, 4096) + m_misuse(4, 8192) + m_misuse(0, 4000) + check)
    # The same calls through glibc's internal names and free_aligned_sized.
    alias = m_more(MORE_ALIASES)
    s["seed-aliases"] = (alias + m_malloc(0, 100) + alias + m_calloc(1, 10, 10) + alias + m_realloc(0, 5000) +
                         alias + m_aligned(M_MEMALIGN, 2, 64, 100) + alias + m_valloc(3, 100) +
                         alias + m_valloc(4, 100, True) + alias + m_free(0) + alias + m_free(1, 1) +
                         alias + m_free(2, 1) + check)
    # fork with blocks of both threads live: the child checks, frees them all, allocates; the
    # default report function in a grandchild (one line on stderr, then abort).
    # Damage to this thread's cache and its arena's transfer cache (after a burst left
    # batches there): rp_malloc_check names each invariant, then passes once the bytes are
    # back.
    s["seed-damage"] = (b"".join(m_damage(k, 16 * (k + 1)) for k in range(10)) + m_damage(0, 48, 1) +
                        m_damage(0, 1008, 2) + m_damage(9, 48, 1) + m_burst(600, 48) +
                        b"".join(m_damage(k) for k in range(10, 16)) + m_damage(13, 48, 1) +
                        check)
    s["seed-fork"] = (m_run(0, 20, 200) + m_thread(T_MALLOC, 30, 3000) + m_thread(T_FREE, 3) + m_valloc(31, 8192) +
                      m_more(MORE_FORK) + u16(FORK_MAGIC) + bytes([1]) + check + m_free_run(0, 32))
    return s


# ---- corruption ------------------------------------------------------------------------------

(F_OVERFLOW, F_UNDERFLOW, F_UAF_QUARANTINED, F_UAF_RELEASED, F_DOUBLE_FREE, F_INTERIOR_FREE, F_FOREIGN_FREE,
 F_REALLOC_FREED) = range(8)
CORRUPTION_SIZES = [0, 1, 8, 15, 16, 17, 24, 4096, 3072, 65535, 65536, 65537, 1 << 20, 1 << 44, 2**64 - 1]


def csize(n):
    return u16(size16(n, CORRUPTION_SIZES))


def c_alloc(slot, size, align=0):
    return bytes([0, slot]) + csize(size) + bytes([align8(align)])


def c_free(slot):
    return bytes([1, slot])


def c_realloc(slot, size):
    return bytes([2, slot]) + csize(size)


def c_run(slot, count, size):
    return bytes([4, slot, count]) + csize(size)


def c_free_run(slot, count):
    return bytes([5, slot, count])


def fault(kind, param=0, sel=0):
    return bytes([kind, param, sel])


def corruption_seeds():
    s = {}
    check = bytes([3])
    # A heap with small, medium and page-tier blocks, some freed (in quarantine or pushed out).
    history = (c_run(0, 8, 40) + c_alloc(8, 100032) + c_alloc(9, 3000, 64) + c_alloc(10, 1) + c_free(2) +
               c_free(5) + c_realloc(3, 200) + check)
    for k in (1, 8, 9, 33, 64):
        s["seed-overflow-%d" % k] = fault(F_OVERFLOW, k - 1, 1) + history
        s["seed-underflow-%d" % k] = fault(F_UNDERFLOW, k - 1, 4) + history
    s["seed-overflow-large"] = fault(F_OVERFLOW, 15, 8) + history
    s["seed-underflow-large"] = fault(F_UNDERFLOW, 63, 8) + history
    for where, name in enumerate(("start", "middle", "end")):
        s["seed-uaf-quarantined-" + name] = fault(F_UAF_QUARANTINED, where | 3 << 2, 1) + history
        s["seed-uaf-released-" + name] = fault(F_UAF_RELEASED, where, 0) + history
    s["seed-uaf-quarantined-large"] = fault(F_UAF_QUARANTINED, 1, 0) + history + c_free(8)
    s["seed-double-free"] = fault(F_DOUBLE_FREE, 0, 0) + history
    s["seed-double-free-released"] = fault(F_DOUBLE_FREE, 1, 0) + history
    s["seed-realloc-freed"] = fault(F_REALLOC_FREED, 0, 1) + history
    s["seed-realloc-freed-released"] = fault(F_REALLOC_FREED, 1, 1) + history
    s["seed-interior-free"] = fault(F_INTERIOR_FREE, 17, 9) + history
    s["seed-interior-free-large"] = fault(F_INTERIOR_FREE, 200, 8) + history
    s["seed-foreign-stack"] = fault(F_FOREIGN_FREE, 0) + history
    s["seed-foreign-global"] = fault(F_FOREIGN_FREE, 1) + history
    # The quarantine's FIFO order under its 64 KiB budget: blocks of many sizes freed in
    # turn, each operation compared with the model; then a write after free into the oldest.
    churn = b"".join(c_alloc(i, 512 + 1024 * i) for i in range(20)) + b"".join(c_free(i) for i in range(20))
    s["seed-quarantine-fifo"] = fault(F_UAF_QUARANTINED, 2, 0) + churn + c_run(30, 20, 4096) + c_free_run(30, 20)
    return s


# ---- dump_parser -----------------------------------------------------------------------------

def written_dumps():
    """Runs the dump writers (both flavours); returns {name: bytes}. They run from a fixed
    directory, so the executable path recorded in the dumps is the same on every machine."""
    root = os.path.dirname(HERE)
    writers = ["dump_seed_writer_release", "dump_seed_writer_debug"]
    bazel = os.path.join(root, "tools", "bazelw")
    subprocess.run([bazel, "build"] + ["//fuzz:" + w for w in writers], cwd=root, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bin_dir = subprocess.run([bazel, "info", "bazel-bin"], cwd=root, check=True, capture_output=True,
                             text=True).stdout.strip()
    run_dir = os.path.join(tempfile.gettempdir(), "rampart-dump-seeds")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    env = dict(os.environ, RAMPART_OPTIONS="backtrace_depth=64")  # full stacks (debug)
    for w in writers:
        exe = os.path.join(run_dir, w)
        shutil.copy(os.path.join(bin_dir, "fuzz", w), exe)
        subprocess.run([exe, run_dir], check=True, env=env)
    dumps = {}
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(".rpd"):
            dumps[name[:-4]] = open(os.path.join(run_dir, name), "rb").read()
    shutil.rmtree(run_dir)
    return dumps


def dump_parser_seeds():
    s = {}
    dumps = written_dumps()
    for name, data in dumps.items():  # release-heap, release-all, debug-heap, debug-all
        s["seed-" + name] = data
    d = dumps["debug-heap"]
    # Truncated: the header alone, inside the first section, without the footer, one byte
    # short; one byte too many.
    s["seed-cut-header"] = d[:32]
    s["seed-cut-section"] = d[:32 + 150]
    s["seed-cut-footer"] = d[:-40]
    s["seed-cut-last-byte"] = d[:-1]
    s["seed-appended-byte"] = d + b"\0"
    # A changed byte in the middle (a block record): refused by its section's CRC as given,
    # a semantic error or a violation once the checksums are repaired.
    mid = len(d) // 2
    s["seed-changed-byte"] = d[:mid] + bytes([d[mid] ^ 0x10]) + d[mid + 1:]
    return s


def options_seeds():
    s = {}
    s["seed-empty"] = b""
    s["seed-all-keys"] = (b"cache_bytes=512K:retain_bytes=64M:purge_delay_ms=250:arenas=3:huge_pages=off:"
                          b"stats=1:poison=off:alloc_fill=0xaa:free_fill=85:leak_exit_code=9:"
                          b"quarantine_bytes=1G:backtrace_depth=32:check_interval=1000:on_error=continue:"
                          b"leak_report=yes:report_path=/tmp/rampart.%p.log:dump_signal=SIGUSR2:"
                          b"dump_at_exit=true:dump_path=/tmp/heap.%p.%n.rpd")
    s["seed-bad-values"] = (b"cache_bytes=-1:retain_bytes=1T:stats=2:poison=maybe:alloc_fill=256:backtrace_depth=65:"
                            b"check_interval=0x:on_error=ignore:dump_signal=SIGKILL:dump_signal=65:report_path=:"
                            b"nokey:=5:unknown=1::quarantine_bytes=18446744073709551616")
    s["seed-case-and-signals"] = b"STATS=On:Dump_Signal=usr1:dump_signal=SIGhup:dump_signal=10:ON_ERROR=ABORT"
    s["seed-limits"] = (b"cache_bytes=4G:cache_bytes=4294967297:retain_bytes=65536G:quarantine_bytes=1024G:"
                        b"check_interval=18446744073709551615:free_fill=0xFF:backtrace_depth=0")
    s["seed-path-control"] = b"dump_path=a\x01b:report_path=" + b"x" * 300 + b":report_path=ok\x7f"
    return s


# slab_ops input format (fuzz/slab_ops.c is the authority): a byte for keep_empty (% 4), then
# operations: an opcode byte (its low four bits) and its arguments. A class byte below 240 picks
# one of ten classes (byte % 10: strides 16, 32, 48, 64, 96, 112, 128, 256, 512, 1008).
S_FRESH, S_RECYCLED, S_GIVE, S_TRIM, S_OS_FAIL, S_PROBE = range(6)


def slab_ops_seeds():
    s = {}
    # Runs of every listed class, some given back and taken again, a probe of each side.
    ops = b"".join(bytes([S_FRESH, c, 60]) for c in range(10))
    ops += bytes([S_GIVE, 3, 40, 2, S_RECYCLED, 3, 20, S_RECYCLED, 7, 20, S_PROBE, 5, 0, S_PROBE, 5, 1,
                  S_PROBE, 5, 255])
    s["seed-classes"] = bytes([1]) + ops
    # A class filled over several slabs, everything given back (slabs kept, then released),
    # another class on the same slabs, a trim with the OS refusing.
    fill = bytes([S_FRESH, 0, 79]) * 60
    give = bytes([S_GIVE, 0, 63, 1]) * 80
    s["seed-fill-empty"] = (bytes([2]) + fill + give + bytes([S_FRESH, 9, 79]) * 3 + bytes([S_OS_FAIL, 0]) + give +
                            bytes([S_TRIM]))
    # The space used up (24 slabs of 1008-byte blocks, 65 each), then a block given back and
    # taken again as a recycled one.
    s["seed-full-space"] = (bytes([0]) + bytes([S_FRESH, 9, 79]) * 22 + bytes([S_FRESH, 9, 10]) +
                            bytes([S_GIVE, 100, 0, 1, S_RECYCLED, 9, 5, S_FRESH, 0, 1]))
    return s


# stack_depot input format (fuzz/stack_depot.c is the authority): operations, an opcode byte and
# its arguments: 0 put len frames..., 1 put-long n seed step, 2 get id16, 3 check, 4 foreach,
# 5 again id16.
D_PUT, D_LONG, D_GET, D_CHECK, D_FOREACH, D_AGAIN = range(6)


def stack_depot_seeds():
    s = {}
    # Every stack of one and two frames, each put twice, read back and checked.
    ops = b""
    for a in range(4):
        ops += bytes([D_PUT, 1, a])
        for b in range(4):
            ops += bytes([D_PUT, 2, a, b, D_PUT, 2, a, b])
    ops += bytes([D_GET, 3, 0, D_AGAIN, 5, 0, D_CHECK, D_FOREACH])
    s["seed-short"] = ops
    # Long stacks (up to 64 frames, and refused ones), refused empty stacks.
    ops = b"".join(bytes([D_LONG, n, n % 4, n % 3 + 1]) for n in (1, 7, 31, 63, 64, 65, 69))
    ops += bytes([D_PUT, 0, D_PUT, 6, D_GET, 0, 0, D_GET, 255, 255, D_CHECK, D_FOREACH])
    s["seed-long"] = ops
    return s


# malloc_threads input format (fuzz/malloc_threads.c is the authority): a byte for the thread
# count (2 + v % 3), then operations: a byte with the opcode in its low four bits and, for a
# thread's operation, the thread in its high bits, and the arguments: 0 malloc slot size16,
# 1 free slot, 2 realloc slot size16, 3 calloc slot count size16, 4 memalign slot align size16,
# 5 burst class count16, 6 flush, 7 check, 8 exit, 9 barrier, 10 fork, 11 usable slot,
# 12 yield, 13 spin n. A slot byte picks one of the slots the thread owns in the phase; the
# same byte names the same slot for thread (t + 1) % threads in the next phase.
MT_MALLOC, MT_FREE, MT_REALLOC, MT_CALLOC, MT_MEMALIGN, MT_BURST, MT_FLUSH, MT_CHECK, MT_EXIT, MT_BARRIER, MT_FORK, \
    MT_USABLE, MT_YIELD, MT_SPIN = range(14)


def le16(v):
    return bytes([v & 0xff, v >> 8])


def t_op(code, thread, *args):
    return bytes([code | (thread << 4)]) + bytes(args)


def malloc_threads_seeds():
    s = {}
    # Thread 0 allocates every class of small block and some pages; thread 1 frees, resizes
    # and checks them in the next phase; then the other way round.
    sizes = [0x0008, 0x0020, 0x0040, 0x2100, 0x2400, 0xa001, 0xa010, 0x6000 | 64]
    ops = b""
    for i, sz in enumerate(sizes):
        ops += t_op(MT_MALLOC, 0, i) + le16(sz)
    ops += bytes([MT_BARRIER])
    for i in range(len(sizes)):
        ops += t_op(MT_REALLOC if i % 2 else MT_FREE, 1, i) + (le16(sizes[-1 - i]) if i % 2 else b"")
    ops += t_op(MT_CHECK, 1) + bytes([MT_BARRIER])
    for i in range(len(sizes)):
        ops += t_op(MT_MALLOC, 1, 10 + i) + le16(sizes[i])
    ops += bytes([MT_BARRIER]) + b"".join(t_op(MT_FREE, 0, 10 + i) for i in range(len(sizes)))
    s["seed-cross-free"] = bytes([0]) + ops
    # Four threads burst blocks of different classes at once (slabs filled, emptied, given back
    # and taken again), three phases, flushes and checks between.
    ops = b""
    for phase in range(3):
        for t in range(4):
            ops += t_op(MT_BURST, t, (t * 7 + phase * 13) % 64) + le16(300 + 400 * t)
            ops += t_op(MT_MALLOC, t, phase) + le16(0x0030)
        ops += t_op(MT_FLUSH, phase % 4) + bytes([MT_BARRIER])
    s["seed-bursts"] = bytes([2]) + ops
    # Slab churn: four threads (four arenas) each burst 7000 blocks of 1000 bytes, more than an
    # arena's transfer cache holds, twice: slabs empty, go back to the slab space and come back.
    ops = b""
    for phase in range(2):
        for t in range(4):
            ops += t_op(MT_BURST, t, 62) + le16(7000)
        ops += bytes([MT_BARRIER])
    s["seed-slab-churn"] = bytes([2]) + ops
    # Blocks outliving their thread: three threads allocate, one exits; a fork while the others
    # burst; the new thread frees what the old one left.
    ops = b""
    for t in range(3):
        for i in range(4):
            ops += t_op(MT_MALLOC, t, i) + le16(0x2000 + 100 * i + 17 * t)
    ops += t_op(MT_EXIT, 1) + bytes([MT_BARRIER])
    ops += bytes([MT_FORK]) + t_op(MT_BURST, 0, 5) + le16(1500) + t_op(MT_BURST, 2, 40) + le16(900)
    ops += t_op(MT_MEMALIGN, 1, 3, 8) + le16(0x0100) + bytes([MT_BARRIER])
    for t in range(3):
        for i in range(4):
            ops += t_op(MT_FREE, t, i)
    s["seed-exit-fork"] = bytes([1]) + ops
    # Every other call: calloc, memalign, usable, yield and spin as interleaving points.
    ops = (t_op(MT_CALLOC, 0, 1, 3) + le16(0x0200) + t_op(MT_MEMALIGN, 1, 2, 4) + le16(0x0300) + t_op(MT_YIELD, 0) +
           t_op(MT_SPIN, 1, 20) + t_op(MT_USABLE, 0, 1) + t_op(MT_CHECK, 0) + bytes([MT_BARRIER]) +
           t_op(MT_USABLE, 1, 1) + t_op(MT_REALLOC, 0, 2) + le16(0x1000) + t_op(MT_FREE, 1, 1))
    s["seed-calls"] = bytes([0]) + ops
    return s


def main():
    check_only = "--check" in sys.argv[1:]
    targets = [("heap_ops", heap_ops_seeds()), ("options", options_seeds()), ("malloc_api", malloc_api_seeds()),
               ("corruption", corruption_seeds()),
               ("slab_ops", slab_ops_seeds()), ("stack_depot", stack_depot_seeds()),
               ("malloc_threads", malloc_threads_seeds())]
    if "--dumps" in sys.argv[1:] and not check_only:
        targets.append(("dump_parser", dump_parser_seeds()))
    stale = []
    for target, seeds in targets:
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(seeds.items()):
            path = os.path.join(d, name)
            if check_only:
                if not os.path.exists(path) or open(path, "rb").read() != data:
                    stale.append(path)
            else:
                with open(path, "wb") as f:
                    f.write(data)
    if stale:
        print("out of date (run fuzz/seeds.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
