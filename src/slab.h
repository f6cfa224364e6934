/* Slabs: small blocks without headers, their metadata kept apart from them.
 *
 * Why. A span block (block.h) starts with a 16-byte header, so a 56-byte request takes 80
 * bytes, and carving a refill batch writes a header into every block: memory the program has
 * not touched yet is faulted in (a whole 2 MiB page at once with transparent huge pages) and
 * pulled into the cache by the allocator. A slab block is only its bytes: a 56-byte request
 * takes 64, and handing out a block never reads or writes it.
 *
 * The slab space is one reserved address range, apart from every heap, cut into slabs of
 * RP_SLAB_BYTES, each aligned to its size. A slab in use holds the blocks of one class, back
 * to back from its colour (rp_slab_colour, below 1 KiB): class c has blocks of stride
 * 16 * (c + 1) bytes, 16 .. 1008 (every block is 16-byte aligned, and one whose stride is a
 * multiple of a power of two is aligned to it). The metadata of slab i lives in arrays reserved apart: a word
 * with its stride, the stride's reciprocal and its block count, its allocated bitmap, and a
 * descriptor with its counts and list links. Because the
 * range is reserved, no other mapping can land in it: a range test tells a slab block from
 * anything else, deterministically (a header check would be fooled by user data that happens
 * to look like a header), and then the slab's bitmap, one bit per 16-byte granule set where
 * an allocated block starts, says whether a live block starts there; the slab's metadata word
 * gives its stride. The block index, where one is needed (reports, checks), is a multiply by
 * the stride's reciprocal (no division). rp_slab_block_live accepts exactly the live
 * blocks: an interior pointer, a pointer into a slab not in use or past its last block, and a
 * block whose allocated bit is clear (freed twice: it went back to its slab) are refused.
 *
 * Pools. The slabs in use belong to pools (one per malloc arena); a pool is only ever used
 * under its owner's lock. Per class it keeps the slabs that have free blocks handed out
 * before (avail) and one slab it is handing out fresh blocks from by bumping a mark (cur):
 * blocks at and above a slab's fresh mark are free and have not been handed out since the
 * slab was set up, so a run of them is taken by moving the mark, without looking at the
 * bitmap's words one by one. A slab whose blocks are all free again is kept (up to
 * keep_empty per pool, for any class) or given back to the space, its memory returned to the
 * OS (MADV_DONTNEED). The space hands each pool chunks of RP_SLAB_CHUNK_SLABS slabs, whose
 * slabs only that pool takes, in address order; a pool with no chunk left to take one from
 * takes the slabs given back (a stack), under the space's lock. The RP_SLAB_LEAD_GUARD bytes
 * of address space below the space are inaccessible: an underflow out of the first chunk
 * faults.
 *
 * Invariants (rp_slab_space_check and rp_slab_pool_check verify them):
 *   SS1 base and len are multiples of RP_SLAB_BYTES; meta, bits and desc have nslabs =
 *       len / RP_SLAB_BYTES entries; the space is cut into nchunks chunks of
 *       RP_SLAB_CHUNK_SLABS slabs (the last one may be shorter; with guard_chunks, each
 *       chunk's last slab is a guard, never used); next_chunk <= nchunks; chunk_used[c] is at
 *       most chunk c's slabs, and 0 for c >= next_chunk;
 *   SS2 a slab is used when its chunk is below next_chunk and its place in the chunk below
 *       chunk_used of it; one never used has its descriptor, metadata word and bitmap all
 *       zero (the checker reads the next one each chunk would hand out, not all of them);
 *       one used belongs to a pool (pool set) or has been given back (pool NULL, stride 0,
 *       metadata word 0, no bit set): on the dirty list (dirty set: its pages resident, reused
 *       first, so a program whose slabs empty and fill again faults nothing in) or on the
 *       released stack (dirty clear: its pages decommitted); released_n counts both and dirty_n
 *       the dirty list;
 *   SS3 slabs_held is the number of descriptors whose pool is set;
 *   SL1 a slab i of a pool holding a class: stride = 16 * (cls + 1), colour =
 *       rp_slab_colour(i, stride), its blocks at colour + j * stride for j < nblocks =
 *       (RP_SLAB_BYTES - colour) / stride, and its metadata word is
 *       rp_slab_meta_of(stride, nblocks), whose
 *       recip = 2^32 / stride + 1 gives for every offset o < RP_SLAB_BYTES the quotient
 *       o / stride as (o * recip) >> 32 (tests/slab_test.c checks every stride and offset);
 *   SL2 live is the number of bits set in its bitmap, and a bit is set only at the granule
 *       where a block below fresh starts (so bits mark exactly the allocated blocks: a
 *       pointer inside a block, into the slab's tail or at a free block finds its bit
 *       clear); fresh <= nblocks; every block of the bitmap words below scan that lies below
 *       fresh is allocated;
 *   SL3 the slab is on avail[cls] exactly when it has a free block below fresh (live < fresh);
 *   SL4 cur[cls], when set, is a slab of the class with fresh < nblocks, and no other slab of
 *       the pool has one (so fresh == nblocks, or it is empty and kept);
 *   SL5 a slab on the pool's empty list (empty_n of them, at most keep_empty) holds no class:
 *       stride 0, metadata word 0, live 0, fresh 0, no bit set, on no other list;
 *   SP1 slabs, blocks_live and bytes_live are the number of the pool's slabs and the sum of
 *       live and of live * stride over them;
 *   SP2 the pool's chunk, when set, is below next_chunk: no other pool takes new slabs from
 *       it (a thread's frees of blocks from its own chunk are examined at once: its near
 *       region, thread_cache.h).
 * Every operation is O(blocks moved), plus at most 64 bitmap words per slab visited (SL2's
 * scan hint keeps that short). */
#ifndef RP_SLAB_H
#define RP_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

#define RP_SLAB_SHIFT 16
#define RP_SLAB_BYTES ((size_t)1 << RP_SLAB_SHIFT)
#define RP_SLAB_CLASSES 63u                               /* strides 16, 32, ..., 1008 */
#define RP_SLAB_MAX_STRIDE (16u * RP_SLAB_CLASSES)       /* 1008 */
#define RP_SLAB_MAX_BLOCKS (RP_SLAB_BYTES / 16)           /* 4096, at stride 16 */
#define RP_SLAB_WORDS (RP_SLAB_MAX_BLOCKS / 64)           /* bitmap words per slab */
#define RP_SLAB_CHUNK_SHIFT 22                            /* a pool's share of the space */
#define RP_SLAB_CHUNK_BYTES ((size_t)1 << RP_SLAB_CHUNK_SHIFT)
#define RP_SLAB_CHUNKS_BEFORE_HUGE 2 /* a pool's chunks taken before one is advised huge */
#define RP_SLAB_CHUNK_SLABS (RP_SLAB_CHUNK_BYTES >> RP_SLAB_SHIFT) /* 64 */
#define RP_SLAB_LEAD_GUARD RP_SLAB_CHUNK_BYTES /* inaccessible, just below base */

struct rp_slab_pool;

/* The word free() reads first, one per slab in an array of its own (so that a free reads one
 * word of metadata, then one bitmap word): the stride's reciprocal << 32 | stride << 16 |
 * nblocks, or 0 for a slab holding no class (every offset is then past its last block). */
static inline uint64_t rp_slab_meta_of(uint32_t stride, uint32_t nblocks)
{
    uint64_t recip = ((uint64_t)1 << 32) / stride + 1; /* SL1; set-up only: no division on free */
    return recip << 32 | (uint64_t)stride << 16 | nblocks;
}

/* The colour of slab i holding blocks of stride bytes: where its first block starts, a
 * multiple of 64 bytes below 1 KiB that differs between neighbouring slabs. Blocks of
 * different classes live in different slabs; if every slab started its blocks at offset 0,
 * the blocks a program uses most (the first ones of each class's slab) would all map to the
 * same few sets of the CPU's caches, which index lines by the address modulo 4 KiB, and evict
 * each other (docs/BENCHMARKS.md, "Slabs"). */
#define RP_SLAB_COLOURS 16u
static inline uint32_t rp_slab_colour(size_t i, uint32_t stride)
{
    /* A multiple of the largest power of two dividing the stride too, so that every block of
     * a stride that is a multiple of some alignment is aligned to it (an aligned request's
     * class: malloc.c); strides of 1 KiB alignment would get colour 0 (none reach it). */
    uint32_t pow2 = stride & (0u - stride);
    return ((uint32_t)(i % RP_SLAB_COLOURS) << 6) & ~(pow2 - 1);
}

/* A slab's descriptor: what only the pool's owner (under its lock) and the checkers read. */
typedef struct rp_slab {
    struct rp_slab_pool *pool; /* SS2: owner, NULL when released or never used */
    struct rp_slab *next, *prev; /* avail[cls] (SL3), or the empty list / released stack (next) */
    uint32_t stride;  /* SL1; 0: holds no class */
    uint16_t nblocks; /* SL1 */
    uint16_t colour;  /* SL1: offset of its first block */
    uint16_t live;    /* SL2 */
    uint16_t fresh;   /* SL2: blocks [fresh, nblocks) are free and not handed out yet */
    uint8_t scan;     /* SL2: the first bitmap word that may have a clear bit below fresh */
    uint8_t cls;
    uint8_t on_avail; /* SL3 */
    uint8_t dirty;    /* SS2: released with its pages still resident (on the dirty list) */
} rp_slab;

typedef struct rp_slab_space {
    uintptr_t base; /* SS1 */
    size_t len;     /* SS1 */
    size_t nslabs;  /* SS1 */
    uint64_t *meta; /* SS1: nslabs words (rp_slab_meta_of; SL1) */
    uint64_t *bits; /* SS1: RP_SLAB_WORDS words per slab, a bit per 16-byte granule: set where
                       an allocated block (handed out, or cached) starts. meta and bits are
                       written under the pool's lock (relaxed atomics) and read by free()
                       without it. */
    rp_slab *desc;  /* SS1, SS2: nslabs descriptors */
    uint8_t *chunk_used; /* SS1: slabs handed out of each chunk so far */
    size_t nchunks;      /* SS1 */
    uint8_t *marks; /* len / 16 bytes, one per granule, for the malloc drop-in's cache marks
                       (src/malloc/cache_mark.h); the slab code itself never reads them */
    void *arrays;   /* one reservation holding meta, bits, desc, chunk_used and marks */
    size_t arrays_bytes;
    rp_lock lock;         /* guards what follows, and chunk_used */
    size_t next_chunk;    /* SS1: chunks [next_chunk, nchunks) were never handed to a pool */
    rp_slab *released;    /* SS2: slabs given back, their pages decommitted: a stack through next */
    rp_slab *dirty, *dirty_tail; /* SS2: slabs given back with their pages resident, the last
                                    given first, doubly linked (prev, next) */
    size_t released_n;    /* SS2: slabs on both */
    size_t dirty_n;       /* SS2: slabs on the dirty list, at most dirty_max after a give */
    size_t dirty_max;     /* set before first use: resident bytes of released slabs kept,
                             in slabs (the rest is decommitted, oldest first) */
    uint64_t purges;      /* decommit calls made for released slabs (statistics) */
    size_t slabs_held;    /* SS3 */
    uint64_t releases;    /* slabs given back, cumulative (statistics) */
    uint64_t decommit_failures; /* releases whose MADV_DONTNEED the OS refused (kept resident) */
    int advise_huge_pages; /* set before first use: a pool's chunks after its first
                              RP_SLAB_CHUNKS_BEFORE_HUGE are advised MADV_HUGEPAGE as it
                              takes them */
    int guard_chunks;      /* set before first use: each chunk's last slab is never used and
                              made inaccessible when the chunk is first taken, so a linear
                              overflow out of a chunk faults (SS1: chunk_slabs excludes it) */
} rp_slab_space;

typedef struct rp_slab_pool {
    rp_slab_space *space;
    void *owner;                     /* whose pool (a malloc arena's heap); not used here */
    rp_slab *avail[RP_SLAB_CLASSES]; /* SL3: doubly linked */
    rp_slab *cur[RP_SLAB_CLASSES];   /* SL4 */
    rp_slab *empty;                  /* SL5: singly linked */
    size_t chunk;                    /* SP2: 1 + the chunk it takes new slabs from, 0 = none */
    size_t chunks_taken;             /* chunks handed to it so far (huge page advice) */
    size_t empty_n, keep_empty;      /* SL5 */
    size_t slabs, blocks_live, bytes_live; /* SP1 */
    uint64_t taken, given;           /* blocks taken and given back, cumulative (statistics) */
} rp_slab_pool;

/* The class of a stride (a multiple of 16, 16 .. RP_SLAB_MAX_STRIDE), and back. */
static inline unsigned rp_slab_class_of(size_t stride) { return (unsigned)(stride >> 4) - 1; }
static inline size_t rp_slab_stride(unsigned cls) { return ((size_t)cls + 1) << 4; }

/* Reserves a space of len bytes (rounded down to whole slabs; at least one) and its metadata
 * arrays (all reserved only: memory is taken as slabs are used). 0, or -1 (nothing reserved)
 * when the OS refuses. */
int rp_slab_space_init(rp_slab_space *s, size_t len);

/* Gives the space and its metadata back. Every pool using it must be gone. */
void rp_slab_space_fini(rp_slab_space *s);

/* 1 if p lies in the space (a slab block, or nothing: rp_slab_block_live tells). */
static inline int rp_slab_contains(const rp_slab_space *s, const void *p)
{
    return (uintptr_t)p - s->base < s->len;
}

/* The descriptor of the slab holding p (p in the space), and its bitmap. */
static inline rp_slab *rp_slab_of(const rp_slab_space *s, const void *p)
{
    return &s->desc[((uintptr_t)p - s->base) >> RP_SLAB_SHIFT];
}
static inline uint64_t *rp_slab_bits(const rp_slab_space *s, const rp_slab *d)
{
    return s->bits + (size_t)(d - s->desc) * RP_SLAB_WORDS;
}

/* 1 when pool cannot take another slab: its chunk used up (or none), no chunk left in the
 * space, nothing given back, nothing kept empty (read under the space's lock by tests). */
int rp_slab_pool_exhausted(rp_slab_pool *pool);

/* The index of the block at offset off of a slab whose stride's reciprocal is recip (SL1). */
static inline uint32_t rp_slab_index(uint32_t recip, uint32_t off)
{
    return (uint32_t)(((uint64_t)off * recip) >> 32);
}

/* The stride of the slab holding offset off of the space (0: the slab holds no class), from its
 * metadata word alone: written only when the slab is set up for a class, so it stays in every
 * CPU's cache, where the bitmap word of rp_slab_live_stride is written by every allocation and
 * free in its slab. Says nothing of whether a live block starts at off. */
static inline uint32_t rp_slab_stride_at(const uint64_t *meta, uintptr_t off)
{
    return (uint32_t)(__atomic_load_n(&meta[off >> RP_SLAB_SHIFT], __ATOMIC_RELAXED) >> 16) & 0xffff;
}

/* The stride of the live block at offset off (16-byte aligned) of the space whose meta and
 * bits arrays are given (free()'s test, with the arrays' addresses at hand), or 0 if no live
 * block starts there: two loads that do not wait for each other (the metadata word and the
 * bitmap word of off's granule), no multiply. Safe without the pool's lock: a live block's
 * metadata word and bit cannot change until it is given back (a free racing with its slab's
 * set-up for another class is a free of a block that was not live, a program error). */
static inline uint32_t rp_slab_live_stride(const uint64_t *meta, const uint64_t *bits, uintptr_t off)
{
    size_t slab = off >> RP_SLAB_SHIFT;
    uint32_t g = (uint32_t)(off & (RP_SLAB_BYTES - 1)) >> 4;
    uint32_t stride = rp_slab_stride_at(meta, off);
    uint64_t w = __atomic_load_n(&bits[slab * RP_SLAB_WORDS + (g >> 6)], __ATOMIC_RELAXED);
    return (w >> (g & 63)) & 1 ? stride : 0;
}

/* The slab holding p, in the space, if p is a live block of it (its first byte, allocated
 * bit set), with its stride in *stride; NULL otherwise, for any p (outside the space too).
 * Reads no block. */
static inline rp_slab *rp_slab_block_live(const rp_slab_space *s, const void *p, uint32_t *stride)
{
    uintptr_t off = (uintptr_t)p - s->base; /* wraps for p below the space: >= len */
    uint32_t st = (off & 15) || off >= s->len ? 0 : rp_slab_live_stride(s->meta, s->bits, off);
    if (!st)
        return NULL;
    *stride = st;
    return &s->desc[off >> RP_SLAB_SHIFT];
}

/* The space's layout, shared by slab.c and its checker (slab_check.c). */
static inline size_t rp_slab_desc_index(const rp_slab_space *s, const rp_slab *d) { return (size_t)(d - s->desc); }
/* Slabs of chunk c that hold blocks (the guard slab excluded, SS1). */
size_t rp_slab_chunk_slabs(const rp_slab_space *s, size_t c);
/* 1 if slab i was ever handed out (SS2), under the space's lock. */
int rp_slab_ever_used(const rp_slab_space *s, size_t i);
/* The granules below granule g, as a mask of bitmap word w. */
uint64_t rp_slab_below_granule(uint32_t w, uint32_t g);
/* The granules of bitmap word w where a block starts, in a slab whose blocks start at granule
 * c0, k granules apart; recip is the stride's reciprocal (SL1). */
uint64_t rp_slab_start_mask(uint32_t k, uint32_t recip, uint32_t c0, uint32_t w);
/* The slabs of the chunks handed out so far (every slab ever used lies below); takes the
 * space's lock. */
size_t rp_slab_space_top(rp_slab_space *s);

/* What p is, for reports (never on a hot path): "a live block", or why it is not one ("not
 * in a slab in use", "inside a block", "past the last block of its slab", "a free block";
 * *is_free is set for the last one, 0 otherwise). p in the space. */
const char *rp_slab_describe(const rp_slab_space *s, const void *p, int *is_free);

/* The block of the space holding address p (any byte of it, p in the space), for checks of a
 * write (src/malloc/guarded_memory.c): RP_SLAB_AT_LIVE or RP_SLAB_AT_FREE with its first byte
 * in *start and its stride in *stride, or RP_SLAB_AT_NONE when p lies in no block (a slab not in
 * use, before the first block or past the last). Without the lock: what it says of a block
 * another thread changes at the same time may be stale (a program error either way). */
enum { RP_SLAB_AT_NONE = 0, RP_SLAB_AT_FREE = 1, RP_SLAB_AT_LIVE = 2 };
int rp_slab_block_at(const rp_slab_space *s, const void *p, uintptr_t *start, uint32_t *stride);

/* Sets up an empty pool drawing slabs from s, keeping up to keep_empty wholly free slabs. */
void rp_slab_pool_init(rp_slab_pool *pool, rp_slab_space *s, size_t keep_empty);

/* Decommits the pages of released slabs kept resident (the dirty list), oldest first, until
 * at most keep remain; merges neighbouring slabs into one call. Returns how many it
 * decommitted. */
size_t rp_slab_space_purge(rp_slab_space *s, size_t keep);

/* Takes up to n free blocks of class cls that were handed out before (below their slab's
 * fresh mark), marking them allocated; stores them in out and returns how many (0: none).
 * Reads no block. */
size_t rp_slab_take_recycled(rp_slab_pool *pool, unsigned cls, void **out, size_t n);

/* Takes a run of up to n blocks of class cls that were not handed out yet (from the class's
 * current slab, or a new one), marking them allocated: blocks first, first + stride, ...
 * Returns how many (at least 1), or 0 when the space has no slab left (or the OS refused).
 * Reads and writes no block. */
size_t rp_slab_take_fresh(rp_slab_pool *pool, unsigned cls, size_t n, void **first);

/* Gives back n live blocks of this pool (of any classes, in any order): each must be a block
 * rp_slab_block_live accepts whose slab belongs to pool. A slab left with no live block is
 * kept or released (see above). Reads and writes no block. */
void rp_slab_give_back(rp_slab_pool *pool, void *const *blocks, size_t n);

/* Releases every empty slab the pool keeps (an explicit trim). Returns how many. */
size_t rp_slab_pool_trim(rp_slab_pool *pool);

/* Gives every slab back to the space: for a pool whose blocks are all dead (a test's, a
 * harness's between inputs). Leaves the pool empty; it keeps its chunk. */
void rp_slab_pool_reset(rp_slab_pool *pool);

/* Verifies SS1..SS3 for the space (under its lock). 0, or non-zero with a message in why. */
int rp_slab_space_check(rp_slab_space *s, char *why, size_t len);

/* Verifies SL1..SL5 and SP1 for the pool (under the owner's lock; takes the space's lock to list
 * the pool's slabs). 0, or non-zero with a message in why. */
int rp_slab_pool_check(rp_slab_pool *pool, char *why, size_t len);

/* Across fork: the space's lock. */
void rp_slab_space_fork_prepare(rp_slab_space *s);
void rp_slab_space_fork_parent(rp_slab_space *s);
void rp_slab_space_fork_child(rp_slab_space *s);

#endif
