/* The content pattern fuzz harnesses write into every block they hold, and verify when the
 * block is freed, resized or checked: any byte the allocator changes (an overlapping block,
 * a header written into user memory, contents lost by a move) shows up as a wrong byte.
 *
 * The pattern is a function of a block id and the byte's offset, so two blocks never hold
 * the same bytes and a block's contents survive a move by realloc unchanged. Blocks up to
 * PATTERN_FULL_FILL bytes hold it entirely; larger ones in their first and last 4 KiB and in
 * 64 bytes at each page boundary, so every page is touched without filling megabytes. */
#ifndef RP_FUZZ_BLOCK_PATTERN_H
#define RP_FUZZ_BLOCK_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_FULL_FILL ((size_t)16 << 10)
#define PATTERN_OK SIZE_MAX

/* Bulk work of a harness that says nothing about the heap's state (patterns, model lookups):
 * kept out of coverage feedback and comparison tracing, which would otherwise cost most of
 * the run time. */
#if defined(__clang__) && __clang_major__ >= 13
#define NO_FEEDBACK __attribute__((no_sanitize("coverage")))
#else
#define NO_FEEDBACK
#endif

/* Writes the pattern of block `id` into the block of `usable` bytes at p. */
void pattern_fill(unsigned char *p, size_t usable, uint64_t id);

/* Offset of the first byte among the block's first `limit` bytes that does not hold its
 * pattern, or PATTERN_OK. */
size_t pattern_find_bad(const unsigned char *p, size_t usable, size_t limit, uint64_t id);

/* Offset of the first non-zero byte of [p, p+len) (sampled like the pattern beyond
 * PATTERN_FULL_FILL), or PATTERN_OK. */
size_t pattern_find_nonzero(const unsigned char *p, size_t len);

#endif
