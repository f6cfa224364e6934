#include "region.h"

#include <errno.h>
#include <string.h>

#include "bits.h"
#include "os.h"

rp_region *rp_region_layout(void *mem, size_t len, uintptr_t area_base, size_t area_pages)
{
    uintptr_t start = rp_ptr_align_up((uintptr_t)mem, 64);
    uintptr_t end = (uintptr_t)mem + len;
    if (end < (uintptr_t)mem || start >= end)
        return NULL;
    size_t npages = area_pages;
    uintptr_t base = area_base;
    if (!base) {
        /* Caller memory: as many pages as fit behind their own descriptors. */
        size_t avail = (size_t)(end - start);
        if (avail < sizeof(rp_region) + sizeof(rp_page) + RP_PAGE_SIZE)
            return NULL;
        npages = (avail - sizeof(rp_region)) / (RP_PAGE_SIZE + sizeof(rp_page));
        for (; npages > 0; npages--) {
            base = rp_ptr_align_up(start + rp_region_meta_bytes(npages), RP_PAGE_SIZE);
            if (base + (npages << RP_PAGE_SHIFT) <= end && base + (npages << RP_PAGE_SHIFT) > base)
                break;
        }
        if (npages == 0)
            return NULL;
    }
    rp_region *r = (rp_region *)start;
    memset(r, 0, sizeof *r);
    r->base = base;
    r->npages = npages;
    if (!area_base)
        memset(r->pages, 0, npages * sizeof(rp_page));
    return r;
}

rp_region *rp_region_map(size_t area_pages)
{
    size_t area = area_pages << RP_PAGE_SHIFT;
    size_t meta = rp_align_up(rp_region_os_meta_bytes(area_pages), RP_PAGE_SIZE);
    /* [metadata][page area]: the area is aligned to its own size so that buddy blocks up to
     * the whole area are naturally aligned; the metadata sits in the pages just below it. */
    void *map_base;
    size_t map_len;
    char *p = rp_os_map_aligned(meta + area, area, meta, &map_base, &map_len);
    if (!p)
        return NULL;
    rp_region *r = rp_region_layout(p, meta, (uintptr_t)p + meta, area_pages);
    r->map_base = map_base;
    r->map_len = map_len;
    /* Fresh OS memory reads as zero: no page is resident yet. */
    r->resident = (uint64_t *)(void *)&r->pages[area_pages];
    return r;
}

rp_region *rp_region_for_caller(void *mem, size_t len)
{
    rp_region *r = rp_region_layout(mem, len, 0, 0);
    if (!r) {
        errno = EINVAL;
        return NULL;
    }
    r->caller_base = mem;
    r->caller_len = len;
    return r;
}
