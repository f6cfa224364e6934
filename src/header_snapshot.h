/* Reading a live block's header without the heap lock: the malloc drop-in's free path
 * (and its classification of pointers in realloc, malloc_usable_size and the cache checker).
 *
 * The core rewrites a live block's prev_size, PREV_FREE bit and check word under the heap
 * lock whenever the block's left neighbour is carved or freed, so a reader without the lock
 * may see a mix of old and new fields. A snapshot loads each field once (relaxed atomic loads:
 * the values used are the values checked; prev_size and size as one 8-byte word) and
 * recomputes the check word for the header's real address. A mixed snapshot fails the check
 * (but for a 2^-32 chance) and the caller takes the locked path; a passing one is a
 * consistent header, and a live block's size never changes while it is live. This is the
 * one read in rampart that races with writers by design, so ThreadSanitizer is told not to
 * instrument it. */
#ifndef RP_HEADER_SNAPSHOT_H
#define RP_HEADER_SNAPSHOT_H

#include <stdint.h>

#include "block.h"
#include "region.h"

#if defined(__SANITIZE_THREAD__)
#define RP_NO_SANITIZE_THREAD __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_NO_SANITIZE_THREAD __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef RP_NO_SANITIZE_THREAD
#define RP_NO_SANITIZE_THREAD
#endif

/* The header's first 8 bytes, prev_size and size, as the one word rp_block_check_word takes
 * (one load instead of two and a shift). */
typedef uint64_t __attribute__((may_alias)) rp_header_word;

/* 1 and *size set when the header at b belongs to a live (allocated, not a sentinel) block
 * and its check word is valid under key; 0 otherwise. */
RP_NO_SANITIZE_THREAD RP_NO_SANITIZE_ADDRESS
static inline int rp_header_live(const rp_mac_key *key, const rp_block *b, uint32_t *size)
{
    uint64_t size_prev = __atomic_load_n((const rp_header_word *)(const void *)b, __ATOMIC_RELAXED);
    uint32_t bits = __atomic_load_n(&b->bits, __ATOMIC_RELAXED);
    uint32_t check = __atomic_load_n(&b->check, __ATOMIC_RELAXED);
    *size = (uint32_t)(size_prev >> 32);
    return rp_block_bits_ok(bits) && !(bits & (RP_HDR_FREE | RP_HDR_SENTINEL)) &&
           check == rp_block_check_word(key, (uintptr_t)b, size_prev, bits);
}

/* 1 when the header at b, read as rp_header_live reads it, has a valid check word (whatever
 * the block's state: live, free or a sentinel). A 0 may come from a writer racing the read;
 * the caller then decides under the heap lock. */
RP_NO_SANITIZE_THREAD RP_NO_SANITIZE_ADDRESS
static inline int rp_header_sound(const rp_mac_key *key, const rp_block *b)
{
    uint64_t size_prev = __atomic_load_n((const rp_header_word *)(const void *)b, __ATOMIC_RELAXED);
    uint32_t bits = __atomic_load_n(&b->bits, __ATOMIC_RELAXED);
    uint32_t check = __atomic_load_n(&b->check, __ATOMIC_RELAXED);
    return rp_block_bits_ok(bits) && check == rp_block_check_word(key, (uintptr_t)b, size_prev, bits);
}

/* rp_header_sound, also setting *prev_size to the prev_size the check word covered (not a
 * second read of the field, which a writer may have changed since). */
RP_NO_SANITIZE_THREAD RP_NO_SANITIZE_ADDRESS
static inline int rp_header_sound_prev(const rp_mac_key *key, const rp_block *b, uint32_t *prev_size)
{
    uint64_t size_prev = __atomic_load_n((const rp_header_word *)(const void *)b, __ATOMIC_RELAXED);
    uint32_t bits = __atomic_load_n(&b->bits, __ATOMIC_RELAXED);
    uint32_t check = __atomic_load_n(&b->check, __ATOMIC_RELAXED);
    *prev_size = (uint32_t)size_prev;
    return rp_block_bits_ok(bits) && check == rp_block_check_word(key, (uintptr_t)b, size_prev, bits);
}

/* The test batch frees (rp_free_batch) make of a user pointer p: 1 and *size set when
 * p is 16-byte aligned and not page aligned (so the header in front of it lies in p's own
 * page and can be read whatever p is) and that header is live under *key; 0 otherwise,
 * NULL and page-tier blocks (page aligned, no header) included. The key is passed by
 * address so that it is read only once p has passed the two address tests. (free() makes
 * the two address tests at its call and reads the header with rp_header_live when it
 * examines the pointer, malloc.c.) */
RP_NO_SANITIZE_THREAD RP_NO_SANITIZE_ADDRESS
static inline int rp_user_header_live(const rp_mac_key *key, const void *p, uint32_t *size)
{
    /* Given the first test, "not page aligned" is p & (RP_PAGE_SIZE - RP_GRANULE) != 0: one
     * test of p itself each, no masked copy of p. */
    return ((uintptr_t)p & (RP_GRANULE - 1)) == 0 && ((uintptr_t)p & (RP_PAGE_SIZE - RP_GRANULE)) != 0 &&
           rp_header_live(key, rp_block_of_user(p), size);
}

/* The size of the live block whose header is at b (see rp_header_live), or 0. */
static inline uint32_t rp_header_live_size(const rp_mac_key *key, const rp_block *b)
{
    uint32_t size;
    return rp_header_live(key, b, &size) ? size : 0;
}

#endif
