/* Regions: the memory a heap manages, and their out-of-band page descriptors.
 *
 * A region is one contiguous range, mapped from the OS or given by the caller
 * (rp_heap_add_region). It starts with its metadata — this header, then one rp_page
 * descriptor per page — followed by the page area: npages pages of 4 KiB starting at base.
 * No block metadata of the page tier lives in the page area itself, so a 4096-byte block
 * aligned to 4096 costs exactly one page (as struct page does for the Linux buddy
 * allocator). OS regions put their metadata in the pages just below an aligned page area.
 *
 * Descriptor states and their invariants (checked by rp_heap_check):
 *   D1  the page area is tiled by heads: every page lies in exactly one block that starts at a
 *       head descriptor (FREE, LARGE or SPAN) and covers head->npages pages;
 *   D2  pages after a head inside its block are NONE (FREE and LARGE blocks), or SPAN_TAIL
 *       with npages = distance back to their SPAN head; LARGE blocks whose user pointer does
 *       not start at their first page (debug flavour) mark that page LARGE_BODY with
 *       npages = distance back to the head; a LARGE head's lead is shorter than its block,
 *       and at least a page in the debug flavour (rp_large_lead_valid);
 *   D3  a FREE head of order k has npages == 2^k, starts at an absolute page number that is a
 *       multiple of 2^k, and is linked in the page tier's list of order k;
 *   D4  r->free_pages equals the pages covered by FREE heads;
 *   D5  every head descriptor's region pointer is r (other descriptors are not read; a fresh
 *       OS region's descriptors are left as the zeroed pages the OS gave, i.e. NONE).
 *
 * A mapped-block region (mapped_block.h) holds one large block with an OS mapping of its
 * own: its header and descriptors are a mapping apart from the page area (block_meta_len
 * bytes at the header), so the area can move (mremap) while the region stays put.
 */
#ifndef RP_REGION_H
#define RP_REGION_H

#include <stddef.h>
#include <stdint.h>

#define RP_PAGE_SHIFT 12
#define RP_PAGE_SIZE ((size_t)1 << RP_PAGE_SHIFT)

struct rp_heap;
struct rp_region;

enum rp_page_state {
    RP_PAGE_NONE = 0,      /* inside a block, not its head */
    RP_PAGE_FREE = 1,      /* head of a free buddy block */
    RP_PAGE_LARGE = 2,     /* head of a large block served by the page tier */
    RP_PAGE_SPAN = 3,      /* head of a span given to the segregated-fit tier */
    RP_PAGE_SPAN_TAIL = 4, /* a later page of a span */
    RP_PAGE_LARGE_BODY = 5 /* debug flavour: the page holding a large block's user pointer */
};

/* One descriptor per page; 32 bytes. */
typedef struct rp_page {
    union {
        struct { /* RP_PAGE_FREE: the page tier's list of this order */
            struct rp_page *next;
            struct rp_page *prev;
        } free;
        struct { /* RP_PAGE_LARGE */
            uint32_t lead_pages; /* pages before the user pointer (0 in release) */
            uint32_t reserved;
            uint64_t usable;     /* bytes usable from the user pointer */
        } large;
    } u;
    struct rp_region *region; /* owning region (valid on heads) */
    uint32_t npages;          /* heads: pages in the block; tails: distance back to the head */
    uint8_t state;            /* enum rp_page_state */
    uint8_t order;            /* FREE: buddy order */
    uint8_t align_log2;       /* LARGE: log2 of the alignment asked for */
    uint8_t flags;            /* RP_PAGEF_* */
} rp_page;

_Static_assert(sizeof(rp_page) == 32, "page descriptor layout");

enum {
    /* LARGE head: the block is live for the heap but sits in a malloc thread cache
     * (thread_cache.h). Set and cleared by the cache without the heap lock (relaxed atomic
     * byte stores; the heap writes a live block's descriptor only through its owner), and
     * always cleared before the block goes back to the heap. Other bits of a LARGE head's
     * flags are left over from its FREE past and mean nothing. */
    RP_PAGEF_CACHED = 2,
    /* LARGE head: the program holds the block and the malloc drop-in's heap profiler sampled it
     * (src/malloc/profile.h). Set by the profiler after the allocation, cleared when the block
     * is freed or moved; relaxed atomic byte stores as for RP_PAGEF_CACHED. */
    RP_PAGEF_SAMPLED = 4,
};

#define RP_REGION_MAGIC 0x72616d7061727452ull /* "Rtrapmar" */

/* Region header; the descriptors follow it. Invariants R1..R3:
 *   R1  base is 4 KiB aligned and [base, base + npages*4096) lies inside the region's memory;
 *   R2  magic == RP_REGION_MAGIC and heap is the owning heap (a released region has magic 0).
 *       Regions are only ever reached through the address map and the heap's list, never
 *       from memory a program can write, so the magic guards against rampart's own bugs; no
 *       secret is kept in a region (one read past a block would give it away);
 *   R3  the region is on its heap's region list exactly once. */
typedef struct rp_region {
    uint64_t magic;
    struct rp_heap *heap;
    uintptr_t base;          /* first byte of the page area */
    size_t npages;
    size_t free_pages;       /* pages in FREE blocks */
    void *map_base;          /* OS mapping to return (NULL for caller memory) */
    size_t map_len;
    void *caller_base;       /* caller memory as given (NULL for OS regions) */
    size_t caller_len;
    struct rp_region *next, *prev; /* the heap's region list */
    uintptr_t mem_lo, mem_hi;      /* all memory the region occupies (for overlap checks) */
    struct rp_region *map_next;    /* the address map's list of registered regions */
    uint64_t *resident;            /* OS regions: which pages may be resident (resident.h),
                                      after the descriptors; NULL for caller memory and
                                      mapped-block regions (which never have free pages) */
    size_t block_meta_len;         /* mapped-block regions: bytes of the metadata mapping that
                                      starts at this header; 0 for every other region */
    uint8_t *cache_marks;          /* OS regions of malloc arenas: a reservation of their own,
                                      one byte per 16-byte granule of the page area, for the
                                      drop-in's cache marks (src/malloc/cache_mark.h); NULL
                                      for every other region (whose blocks are never cached) */
    rp_page pages[];
} rp_region;

/* Bytes of r's cache marks reservation (one byte per 16-byte granule of its page area, whole
 * pages). */
static inline size_t rp_region_marks_bytes(const rp_region *r)
{
    return (((r->npages << RP_PAGE_SHIFT) >> 4) + RP_PAGE_SIZE - 1) & ~(RP_PAGE_SIZE - 1);
}

/* 1 if r is a mapped-block region (mapped_block.h). */
static inline int rp_region_is_mapped_block(const rp_region *r) { return r->block_meta_len != 0; }

/* Bytes of metadata (header + descriptors) for a region of npages pages of caller memory. */
static inline size_t rp_region_meta_bytes(size_t npages)
{
    return sizeof(rp_region) + npages * sizeof(rp_page);
}

/* The same for an OS region, which also has a resident-page bitmap (resident.h). */
static inline size_t rp_region_os_meta_bytes(size_t npages)
{
    return rp_region_meta_bytes(npages) + ((npages + 63) >> 6) * sizeof(uint64_t);
}

/* The usable bytes of the LARGE block whose head is d, read without the heap's lock (the lock
 * holder may be changing it: a program error then, or a block another thread frees). */
static inline size_t rp_large_usable(const rp_page *d) { return __atomic_load_n(&d->u.large.usable, __ATOMIC_RELAXED); }

static inline uintptr_t rp_page_addr(const rp_region *r, const rp_page *d)
{
    return r->base + ((uintptr_t)(d - r->pages) << RP_PAGE_SHIFT);
}

static inline size_t rp_page_index(const rp_region *r, const rp_page *d)
{
    return (size_t)(d - r->pages);
}

/* Descriptor of the page holding p; p must lie in r's page area. */
static inline rp_page *rp_page_of(rp_region *r, const void *p)
{
    return &r->pages[((uintptr_t)p - r->base) >> RP_PAGE_SHIFT];
}

/* Lays out a region over [mem, mem+len): header and descriptors at mem, the page area from
 * the first 4 KiB boundary after them (or at area_base when non-zero: OS memory, already
 * zero, so the descriptors are not written). Caller memory gets its descriptors cleared to
 * NONE. Returns the region, or NULL when not even one page fits. Does not register or seed. */
rp_region *rp_region_layout(void *mem, size_t len, uintptr_t area_base, size_t area_pages);

/* Maps a region from the OS with a page area of area_pages pages (a power of two), aligned
 * to its own size so buddy blocks up to the whole area are naturally aligned.
 * NULL if the OS refuses. */
rp_region *rp_region_map(size_t area_pages);

/* The pages [base, base + npages*4096) as a region over caller memory [mem, mem+len):
 * computes how many pages fit after the metadata. NULL (errno EINVAL) if none does. */
rp_region *rp_region_for_caller(void *mem, size_t len);

#endif
