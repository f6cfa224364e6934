/* OP_MISUSE of the heap_ops harness: program bugs the heap must report (exactly the right
 * kind, naming the right address) without changing anything: double and stale frees,
 * interior and foreign pointers, forged headers, regions over live memory, overflows into
 * headers, writes after free into free blocks. Damaged bytes are put back afterwards. */
#define _GNU_SOURCE
#include "fuzz/heap_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A write after free into the links (or the header) of a small free block, then the
 * allocation that would take exactly that block: it must be refused with a corrupted-free-list
 * report, not handed out while the block is still listed as free. */
RP_NO_SANITIZE_ADDRESS static void refused_free_block(int links, uint16_t offset)
{
    rp_heap *h = model.heaps[0].h;
    uint32_t map = h->index.sl_bitmap[0] & (~0u << (offset % RP_SL_COUNT));
    if (!map)
        return;
    rp_block *x = h->index.heads[0][rp_ctz(map)];
    if (x->size < RP_USER_OFFSET + RP_HOOK_SUFFIX + 16)
        return;
    size_t request = x->size - RP_USER_OFFSET - RP_HOOK_SUFFIX; /* needs exactly x->size bytes */
    if (!links)
        xor_u32(&((uint32_t *)x)[(offset >> 8) & 3], 1u << ((offset >> 10) & 31));
    else if (offset & 0x100)
        set_ptr(&rp_links(x)->prev, x); /* a list head's prev must be NULL */
    else
        set_ptr(&rp_links(x)->next, x); /* its next must point back at it */
    EXPECT(rp_alloc(h, request, 0) == NULL, "rp_alloc(%zu) handed out free block %p with broken %s", request,
           (void *)x, links ? "links" : "header");
    restore_bytes();
    expect_report(KIND(RP_ERR_CORRUPT_FREE_LIST), x);
}

/* Reads and damages allocator metadata, which the debug flavour poisons under ASan. */
RP_NO_SANITIZE_ADDRESS void do_misuse(uint8_t kind, int s, uint16_t offset)
{
    block *b = &model.slots[s];
    reset_reports();
    kind &= 15;
    TRACE("  misuse %d, slot %d (%p), offset %u\n", kind, s, (void *)b->p, offset);
    switch (kind) {
    case 0: { /* free, resize or measure a pointer freed earlier (unless held again) */
        void *p = model.stale[offset % STALE_RING];
        if (!p)
            return;
        block *holder = live_block_at(p);
        if (holder && holder->p == p)
            return;
        switch ((offset >> 4) % 3) {
        case 0:
            rp_free(p);
            break;
        case 1:
            errno = 0;
            EXPECT(rp_realloc(NULL, p, offset >> 6) == NULL && errno == EINVAL, "rp_realloc of freed %p", p);
            break;
        default:
            EXPECT(rp_usable_size(p) == 0, "rp_usable_size of freed %p is not 0", p);
            break;
        }
        /* Freed memory since reused by a live block makes p an interior pointer of it. */
        expect_report(KIND(RP_ERR_DOUBLE_FREE) | KIND(RP_ERR_INVALID_FREE), p);
        return;
    }
    case 1:   /* free, resize or measure an interior pointer of a live block */
    case 2: {
        if (!b->p || b->usable < 2)
            return;
        unsigned char *p = b->p + 1 + offset % (b->usable - 1);
        if (kind == 1) {
            rp_free(p);
        } else if (offset & 1) {
            EXPECT(rp_usable_size(p) == 0, "rp_usable_size of an interior pointer is not 0");
        } else {
            errno = 0;
            EXPECT(rp_realloc(NULL, p, 64) == NULL && errno == EINVAL, "rp_realloc of an interior pointer");
        }
        expect_report(KIND(RP_ERR_INVALID_FREE), p);
        verify_block(b, b->usable, "by a refused interior free");
        return;
    }
    case 3: { /* pointers rampart never returned: the stack, a global, the system heap */
        static char global_byte[64];
        char local[32];
        void *sys = malloc(48);
        void *cands[] = {local + 16, global_byte + 16, sys, (void *)(uintptr_t)4096, arena + ARENA_BYTES - 64};
        void *p = cands[offset % 5];
        if (live_block_at(p) == NULL && rp_heap_of(p) == NULL) {
            rp_free(p);
            /* The arena's last bytes may lie in a caller region, in freed memory. */
            unsigned kinds = KIND(RP_ERR_INVALID_FREE);
            if (offset % 5 == 4)
                kinds |= KIND(RP_ERR_DOUBLE_FREE) | KIND(RP_ERR_CORRUPT_BLOCK);
            expect_report(kinds, p);
        }
        free(sys);
        return;
    }
    case 4: { /* a pointer into a caller region's metadata */
        heap_model *m = &model.heaps[0];
        if (!m->nregions)
            return;
        caller_region *cr = &m->regions[offset % m->nregions];
        unsigned char *p = (unsigned char *)(((uintptr_t)cr->base + 64 + 63) & ~(uintptr_t)63);
        rp_free(p);
        expect_report(KIND(RP_ERR_INVALID_FREE), p);
        return;
    }
    case 5: { /* a forged header: the block's own header copied inside it (release layout) */
        if (DEBUG_FLAVOUR || !b->p || b->usable < 64 || ((uintptr_t)b->p & 4095) == 0)
            return;
        size_t at = 32 + ((size_t)offset * 16) % (b->usable - 32);
        at &= ~(size_t)15;
        if (at < 32 || at + 16 > b->usable)
            return;
        unsigned char *fake = b->p + at;
        memcpy(fake - RP_USER_OFFSET, b->p - RP_USER_OFFSET, RP_HEADER);
        rp_free(fake);
        expect_report(KIND(RP_ERR_INVALID_FREE), fake);
        fill_block(b); /* the program's own bytes: put the pattern back */
        return;
    }
    case 8:   /* an overflow into the next block's header, then free or grow the block */
    case 10: { /* an underflow into the block's own header, then free or grow it */
        /* The debug flavour reports these as heap-buffer-overflow/underflow from its
         * cookies (the corruption target's subject); the core's own checks are tested here. */
        block *sb = DEBUG_FLAVOUR ? NULL : live_span_slot(0, (unsigned)s);
        if (!sb)
            return;
        rp_block *hdr = rp_block_of_user(sb->p);
        size_t n = 1 + offset % 16;
        unsigned char *at = kind == 8 ? (unsigned char *)rp_block_next(hdr) : (unsigned char *)(hdr + 1) - n;
        save_bytes(at, n);
        for (size_t i = 0; i < n; i++)
            at[i] ^= 0xa5;
        size_t grow = sb->usable + 48;
        size_t threshold = model.heaps[0].cfg.large_threshold;
        int to_pages = grow >= threshold || sb->align >= threshold || (sb->align >= 4096 && grow % 4096 == 0);
        if ((offset & 0x10) && !to_pages) {
            errno = 0;
            EXPECT(rp_realloc(NULL, sb->p, grow) == NULL && errno == EINVAL, "rp_realloc of %p with a damaged %s",
                   (void *)sb->p, kind == 8 ? "neighbour" : "header");
        } else {
            rp_free(sb->p);
        }
        restore_bytes();
        if (kind == 8)
            expect_report(KIND(RP_ERR_CORRUPT_BLOCK), at);
        else
            expect_report(KIND(RP_ERR_INVALID_FREE), sb->p);
        verify_block(sb, sb->usable, "by a refused free");
        return;
    }
    case 9: { /* a write after free into the links of a free neighbour, then free the block */
        block *sb = live_span_slot(0, (unsigned)s);
        if (!sb)
            return;
        rp_block *hdr = rp_block_of_user(sb->p), *next = rp_block_next(hdr), *target = NULL;
        if (!(next->bits & RP_HDR_SENTINEL) && (next->bits & RP_HDR_FREE) && !(offset & 2 && (hdr->bits & RP_HDR_PREV_FREE)))
            target = next;
        else if (hdr->bits & RP_HDR_PREV_FREE)
            target = rp_block_prev(hdr);
        if (!target)
            return;
        /* The block's other free neighbour is checked too; when it is the target's list
         * neighbour, the damaged link shows as an inconsistency of its links first. */
        rp_block *other = NULL;
        if (target != next && !(next->bits & RP_HDR_SENTINEL) && (next->bits & RP_HDR_FREE))
            other = next;
        else if (target == next && (hdr->bits & RP_HDR_PREV_FREE))
            other = rp_block_prev(hdr);
        if (other && rp_links(other)->next != target && rp_links(other)->prev != target)
            other = NULL;
        set_ptr((offset & 1) ? (void *)&rp_links(target)->prev : (void *)&rp_links(target)->next, target);
        rp_free(sb->p);
        restore_bytes();
        expect_report_either(KIND(RP_ERR_CORRUPT_FREE_LIST), target, other);
        verify_block(sb, sb->usable, "by a refused free");
        return;
    }
    case 7:    /* a write after free into a small free block's links, or */
    case 11: { /* into its header: the allocation that would take it must refuse it */
        refused_free_block(kind == 7, offset);
        return;
    }
    case 6: { /* a region over memory a live block occupies */
        if (!b->p)
            return;
        size_t len = extent(b) + 8192;
        errno = 0;
        EXPECT(rp_heap_add_region(model.heaps[0].h, b->p, len) == -1 && errno == EINVAL,
               "rp_heap_add_region accepted live memory %p", (void *)b->p);
        verify_block(b, b->usable, "by a refused region");
        return;
    }
    default: /* 12..15: free for new kinds */
        return;
    }
}


