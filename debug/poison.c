#include "poison.h"

#include <string.h>

#include "config.h"
#include "debug_heap.h"
#include "debug_report.h"
#include "sanitizer_track.h"
#include "src/hooks.h"

void rp_poison_fill(void *p, size_t len, unsigned char byte) { memset(p, byte, len); }

/* Unaligned 64-bit loads that are plain loads (not memcpy calls, which ASan intercepts). */
typedef uint64_t __attribute__((may_alias, aligned(1))) loose_u64;

/* The checker scans every free byte: under the fuzzing build, per-iteration coverage
 * counters would make that scan the bulk of every run, and they teach the fuzzer nothing. */
#if defined(__clang__)
#define RP_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define RP_NO_COVERAGE
#endif

RP_NO_SANITIZE_ADDRESS RP_NO_COVERAGE
const unsigned char *rp_poison_find_mismatch(const void *p, size_t len, unsigned char byte)
{
    const unsigned char *s = p;
#ifndef RP_ASAN
    /* Without ASan (whose memcmp would check the poisoned bytes), a long range holds the
     * pattern when its first byte does and every byte equals the next: one memcmp, which
     * compares several times faster than the loop below. A damaged range is searched by it. */
    if (len > 64 && s[0] == byte && memcmp(s, s + 1, len - 1) == 0)
        return NULL;
#endif
    uint64_t word = 0x0101010101010101ull * byte;
    size_t k = 0;
    /* Word at a time up to the first difference; then the byte that differs. */
    for (; k + 32 <= len; k += 32) {
        const loose_u64 *w = (const loose_u64 *)(s + k);
        if (RP_UNLIKELY(((w[0] ^ word) | (w[1] ^ word) | (w[2] ^ word) | (w[3] ^ word)) != 0))
            break;
    }
    for (; k < len; k++)
        if (s[k] != byte)
            return s + k;
    return NULL;
}

const unsigned char *rp_poison_check_free_block(const rp_block_info *info, unsigned *found)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    if (info->state != RP_BLOCK_FREE || info->tier != RP_TIER_SPAN || !cfg->poison)
        return NULL;
    /* The payload after the header and the free-list links. Free memory stays addressable
     * under Valgrind, and the search reads past ASan. */
    char *payload = (char *)info->addr + RP_MIN_BLOCK;
    const unsigned char *bad = rp_poison_find_mismatch(payload, info->size - RP_MIN_BLOCK, cfg->free_fill);
    if (bad) {
        rp_san_open(bad, 1);
        *found = *bad;
        rp_san_close_free(bad, 1);
    }
    return bad;
}

/* Metadata around a freed range, for ASan: at every call site of rp_hook_span_freed the 32
 * bytes before p are a header and free-list links or free memory, and the 16 bytes after
 * p + len are the header of the next block (or the span's sentinel). Poisoning them too makes
 * a fresh span's first header and its sentinel forbidden to the program like every other
 * header. */
#define META_BEFORE 32u
#define META_AFTER 16u

void rp_hook_span_freed(rp_heap *h, void *p, size_t len)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    char *lo = p, *hi = lo + len;
    if (cfg->poison) {
        rp_debug_heap *d = rp_debug_of(h);
        rp_san_open(lo, len);
        if (d && d->fill_skip_lo && d->fill_skip_lo >= lo && d->fill_skip_hi <= hi) {
            /* An eviction: the user area was just verified to hold the pattern. */
            rp_poison_fill(lo, (size_t)(d->fill_skip_lo - lo), cfg->free_fill);
            rp_poison_fill(d->fill_skip_hi, (size_t)(hi - d->fill_skip_hi), cfg->free_fill);
        } else {
            rp_poison_fill(lo, len, cfg->free_fill);
        }
    }
    rp_san_close_free(lo - META_BEFORE, len + META_BEFORE + META_AFTER);
}

void rp_hook_span_reused(rp_heap *h, void *p, size_t len, struct rp_fault *fault)
{
    const rp_debug_config *cfg = rp_debug_config_get();
    if (!cfg->poison)
        return;
    rp_san_open(p, len);
    const unsigned char *bad = rp_poison_find_mismatch(p, len, cfg->free_fill);
    if (RP_UNLIKELY(bad != NULL))
        rp_debug_fault(fault, RP_ERR_USE_AFTER_FREE_WRITE, h, bad, NULL, 0, NULL,
                       "free memory at %p in heap '%s' was written while free (found 0x%02x, free pattern 0x%02x)",
                       (const void *)bad, h->name, *bad, cfg->free_fill);
    rp_san_close_free(p, len);
}
