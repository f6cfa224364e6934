#include "free_index.h"

RP_NO_SANITIZE_ADDRESS
void rp_free_index_insert(rp_free_index *ix, rp_block *b)
{
    unsigned fl, sl;
    rp_class_of(b->size, &fl, &sl);
    rp_block *head = ix->heads[fl][sl];
    rp_links(b)->next = head;
    rp_links(b)->prev = NULL;
    if (head)
        rp_links(head)->prev = b;
    ix->heads[fl][sl] = b;
    ix->sl_bitmap[fl] |= 1u << sl;
    ix->fl_bitmap |= 1u << fl;
    ix->free_blocks++;
    ix->free_bytes += b->size;
    ix->class_blocks[fl]++;
}

RP_NO_SANITIZE_ADDRESS
int rp_free_index_remove(rp_free_index *ix, rp_block *b)
{
    unsigned fl, sl;
    rp_class_of(b->size, &fl, &sl);
    rp_block *next = rp_links(b)->next;
    rp_block *prev = rp_links(b)->prev;
    /* Cheap hardening: both neighbours must point back at b (I4). */
    if ((next && rp_links(next)->prev != b) || (prev ? rp_links(prev)->next != b : ix->heads[fl][sl] != b))
        return -1;
    if (next)
        rp_links(next)->prev = prev;
    if (prev) {
        rp_links(prev)->next = next;
    } else {
        ix->heads[fl][sl] = next;
        if (!next) {
            ix->sl_bitmap[fl] &= ~(1u << sl);
            if (!ix->sl_bitmap[fl])
                ix->fl_bitmap &= ~(1u << fl);
        }
    }
    ix->free_blocks--;
    ix->free_bytes -= b->size;
    ix->class_blocks[fl]--;
    return 0;
}

static rp_block *search_from(const rp_free_index *ix, unsigned fl, unsigned sl)
{
    uint32_t sl_map = fl < RP_FL_COUNT ? ix->sl_bitmap[fl] & (~0u << sl) : 0;
    if (!sl_map) {
        uint32_t fl_map = fl + 1 < 32 ? ix->fl_bitmap & (~0u << (fl + 1)) : 0;
        if (!fl_map)
            return NULL;
        fl = rp_ctz(fl_map);
        sl_map = ix->sl_bitmap[fl];
    }
    return ix->heads[fl][rp_ctz(sl_map)];
}

rp_block *rp_free_index_find(const rp_free_index *ix, size_t size)
{
    /* Round up to the next class boundary so any block of the class found is big enough. */
    if (size >= ((size_t)1 << RP_FL_SHIFT))
        size += ((size_t)1 << (rp_fls(size) - RP_SL_LOG)) - 1;
    if (size > RP_MAX_SPAN_BLOCK)
        return NULL;
    unsigned fl, sl;
    rp_class_of(size, &fl, &sl);
    return search_from(ix, fl, sl);
}

rp_block *rp_free_index_exact_head(const rp_free_index *ix, size_t size)
{
    if (size > RP_MAX_SPAN_BLOCK)
        return NULL;
    unsigned fl, sl;
    rp_class_of(size, &fl, &sl);
    return ix->heads[fl][sl];
}

RP_NO_SANITIZE_ADDRESS
size_t rp_free_index_largest(const rp_free_index *ix)
{
    if (!ix->fl_bitmap)
        return 0;
    unsigned fl = rp_fls(ix->fl_bitmap);
    unsigned sl = rp_fls(ix->sl_bitmap[fl]);
    size_t largest = 0;
    for (rp_block *b = ix->heads[fl][sl]; b; b = rp_links(b)->next)
        if (b->size > largest)
            largest = b->size;
    return largest;
}
