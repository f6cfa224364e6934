/* slab_ops: input bytes become operations on one slab pool (src/slab.h) over a small space
 * (so it fills up), against a shadow list of the blocks held.
 *
 * Every block held carries the content pattern of its id (block_pattern.h) over its whole
 * stride: a block handed out twice, two overlapping blocks or the tier writing into a block
 * shows up as a wrong byte when the block is given back or checked. After every operation
 * the space and the pool are checked (SS1..SS3, SL1..SL5, SP1) and the pool's counters compared
 * with the shadow; rp_slab_block_live must accept exactly the blocks held, so every block
 * given back is refused afterwards, and so are pointers inside held blocks.
 *
 * Operations (opcode: low four bits of a byte):
 *   0 fresh    class, count   rp_slab_take_fresh: a run of `count % 80 + 1` blocks
 *   1 recycled class, count   rp_slab_take_recycled
 *   2 give     first, count, step   gives back `count % 64 + 1` held blocks (of any classes),
 *                                   every step-th from first, in that order
 *   3 trim                    rp_slab_pool_trim: nothing kept empty afterwards
 *   4 os-fail  n              the n-th OS call from now fails (a slab's memory going back)
 *   5 probe    slot, offset   a pointer into or around a held block: live only at its start */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "block_pattern.h"
#include "expect.h"
#include "fuzz_input.h"
#include "op_mutator.h"
#include "src/os.h"
#include "src/slab.h"

#define SPACE_SLABS 24
#define MAX_HELD (SPACE_SLABS * RP_SLAB_MAX_BLOCKS) /* every block of the space */

typedef struct held_block {
    unsigned char *p;
    uint32_t stride;
    uint64_t id;
} held_block;

static held_block held[MAX_HELD];
static size_t nheld;
static uint64_t next_id;
static int op_index;
static const char *op_name = "start";
static rp_slab_space space;

static void context(FILE *out) { fprintf(out, "slab_ops: operation %d (%s): ", op_index, op_name); }

/* A few classes, so that slabs fill, empty and change class within a short input. */
static unsigned class_of_byte(uint8_t b)
{
    static const unsigned classes[] = {0, 1, 2, 3, 5, 6, 7, 15, 31, 62};
    return b < 10 * 24 ? classes[b % 10] : (unsigned)(b % RP_SLAB_CLASSES);
}

NO_FEEDBACK static void hold(void *p, uint32_t stride)
{
    uint32_t got = 0;
    EXPECT(rp_slab_contains(&space, p) && ((uintptr_t)p & 15) == 0, "block %p outside the space or misaligned", p);
    EXPECT(rp_slab_block_live(&space, p, &got) && got == stride, "block %p just taken is not live (stride %u, %u)", p,
           stride, got);
    EXPECT(nheld < MAX_HELD, "too many blocks held");
    held[nheld].p = p;
    held[nheld].stride = stride;
    held[nheld].id = ++next_id;
    pattern_fill(p, stride, held[nheld].id);
    nheld++;
}

NO_FEEDBACK static void verify(const held_block *b)
{
    size_t bad = pattern_find_bad(b->p, b->stride, b->stride, b->id);
    EXPECT(bad == PATTERN_OK, "block %p (stride %u) changed at offset %zu while held", (void *)b->p, b->stride, bad);
}

/* Bytes of each operation, for the structure-aware mutator (fuzz/op_mutator.h); give-backs and
 * probes read their arguments only while blocks are held, counted here as if they always did. */
static size_t op_length(const uint8_t *op, size_t left)
{
    (void)left;
    static const uint8_t length[6] = {3, 3, 4, 1, 2, 3};
    return (op[0] & 15) < 6 ? length[op[0] & 15] : 1;
}

static const op_grammar grammar = {1, op_length, 0x3f};
OP_MUTATOR(grammar)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    expect_context(context, NULL);
    /* A space and a pool of its own for every input, so that an input replayed alone does
     * what it did while fuzzing (a crash found in CI once did not reproduce when the space
     * carried chunks and released slabs over from earlier inputs). */
    if (rp_slab_space_init(&space, SPACE_SLABS * RP_SLAB_BYTES) != 0)
        abort();
    fuzz_input in = fuzz_input_of(data, size);
    static rp_slab_pool pool;
    rp_slab_pool_init(&pool, &space, 0);
    pool.keep_empty = fuzz_u8(&in) % 4;
    nheld = 0;
    op_index = 0;
    static void *out[128];
    static const char *const names[] = {"fresh", "recycled", "give", "trim", "os-fail", "probe"};
    char why[256];
    while (fuzz_more(&in)) {
        op_index++;
        int op = fuzz_opcode(&in, names, 6, &op_name);
        if (op == 0 || op == 1) {
            unsigned cls = class_of_byte(fuzz_u8(&in));
            size_t n = fuzz_u8(&in) % 80 + 1;
            uint32_t stride = (uint32_t)rp_slab_stride(cls);
            if (op == 0) {
                void *first = NULL;
                size_t k = rp_slab_take_fresh(&pool, cls, n, &first);
                EXPECT(k <= n, "%zu blocks for %zu", k, n);
                EXPECT(k > 0 || rp_slab_pool_exhausted(&pool), "no fresh block while the space has slabs left");
                for (size_t i = 0; i < k; i++)
                    hold((char *)first + i * stride, stride);
            } else {
                size_t k = rp_slab_take_recycled(&pool, cls, out, n);
                EXPECT(k <= n, "%zu blocks for %zu", k, n);
                EXPECT(k == n || pool.avail[cls] == NULL, "short of recycled blocks with a slab on the avail list");
                for (size_t i = 0; i < k; i++)
                    hold(out[i], stride);
            }
        } else if (op == 2 && nheld) {
            size_t first = fuzz_u8(&in) % nheld, n = fuzz_u8(&in) % 64 + 1, step = fuzz_u8(&in) % 7 + 1;
            size_t k = 0;
            for (size_t i = first; k < n && nheld; i += step) {
                size_t j = i % nheld;
                verify(&held[j]);
                out[k++] = held[j].p;
                held[j] = held[--nheld];
            }
            rp_slab_give_back(&pool, out, k);
            for (size_t i = 0; i < k; i++) {
                uint32_t st;
                EXPECT(!rp_slab_block_live(&space, out[i], &st), "block %p given back is still live", out[i]);
            }
        } else if (op == 3) {
            rp_slab_pool_trim(&pool);
            EXPECT(pool.empty == NULL && pool.empty_n == 0, "trim left empty slabs kept");
        } else if (op == 4) {
            rp_os_fail_at(fuzz_u8(&in) % 8 + 1);
        } else if (op == 5 && nheld) {
            held_block *b = &held[fuzz_u8(&in) % nheld];
            int off = (int)(int8_t)fuzz_u8(&in) * 16;
            uint32_t st;
            int is_live = rp_slab_block_live(&space, b->p + off, &st) != NULL;
            if (off == 0)
                EXPECT(is_live, "held block %p refused", (void *)b->p);
            else if (off > 0 && (uint32_t)off < b->stride)
                EXPECT(!is_live, "%p inside held block %p accepted", (void *)(b->p + off), (void *)b->p);
        }
        EXPECT(rp_slab_space_check(&space, why, sizeof why) == 0, "%s", why);
        EXPECT(rp_slab_pool_check(&pool, why, sizeof why) == 0, "%s", why);
        EXPECT(pool.blocks_live == nheld, "the pool counts %zu live blocks, %zu held", pool.blocks_live, nheld);
    }
    rp_os_fail_at(0);
    op_name = "end";
    for (size_t i = 0; i < nheld; i++)
        verify(&held[i]);
    /* Everything back: the pool's reset leaves the space holding nothing. */
    rp_slab_pool_reset(&pool);
    EXPECT(space.slabs_held == 0, "%zu slabs still held after the pool's reset", space.slabs_held);
    EXPECT(rp_slab_space_check(&space, why, sizeof why) == 0, "%s", why);
    rp_slab_space_fini(&space);
    return 0;
}
