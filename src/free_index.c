#include "free_index.h"

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
    size_t largest = 0, steps = 0;
    /* Bounded by the free-block count, so a corrupted (cyclic) list cannot hang stats. */
    for (rp_block *b = ix->heads[fl][sl]; b && steps <= ix->free_blocks; b = rp_links(b)->next, steps++)
        if (b->size > largest)
            largest = b->size;
    return largest;
}
