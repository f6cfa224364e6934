#include "poison.h"

#include <string.h>

#include "config.h"
#include "debug_heap.h"
#include "debug_report.h"
#include "sanitizer_track.h"
#include "src/hooks.h"

void rp_poison_fill(void *p, size_t len, unsigned char byte) { memset(p, byte, len); }

const unsigned char *rp_poison_find_mismatch(const void *p, size_t len, unsigned char byte)
{
    const unsigned char *s = p;
    uint64_t word = 0x0101010101010101ull * byte;
    size_t k = 0;
    /* Word at a time up to the first difference; then the byte that differs. */
    while (k < len && ((uintptr_t)(s + k) & 7)) {
        if (s[k] != byte)
            return s + k;
        k++;
    }
    for (; k + 32 <= len; k += 32) {
        uint64_t a, b, c, d;
        memcpy(&a, s + k, 8);
        memcpy(&b, s + k + 8, 8);
        memcpy(&c, s + k + 16, 8);
        memcpy(&d, s + k + 24, 8);
        if (RP_UNLIKELY(((a ^ word) | (b ^ word) | (c ^ word) | (d ^ word)) != 0))
            break;
    }
    for (; k < len; k++)
        if (s[k] != byte)
            return s + k;
    return NULL;
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
