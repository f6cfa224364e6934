/* stack_depot: the debug flavour's stack depot (debug/stack_depot.h) against a model of the
 * stacks stored, in a test build whose hash keeps 6 bits (RP_DEPOT_TEST_HASH_BITS, fuzz/BUILD):
 * a few thousand distinct stacks share 64 hash values, so deduplication is exercised on
 * collisions all the time and must compare frames, not hashes.
 *
 * The oracle: every stack put, read back by the id rp_depot_put returned (rp_depot_get), is
 * exactly the frames captured, whatever collides with it; equal frames always get the same id
 * and a new stack the next id (S1, in one thread); an id never handed out reads back as
 * nothing; rp_depot_foreach visits exactly the model's stacks in id order; rp_depot_check (S1-S3)
 * passes. A report that names an allocation's stack by its id shows the wrong stack when any of
 * these fails.
 *
 * The depot lives for the process and only grows, so the model does too (across inputs): the
 * frames come from a four-value alphabet, short stacks of up to five frames and long ones of a
 * seed and a step (at most ~2,400 distinct stacks in all), which bounds its size.
 *
 * Input: operations until it ends, an opcode byte (its low four bits) and its arguments:
 *   0 put      len, then len % 6 frame bytes (0 frames: must be refused)
 *   1 put-long n, seed, step: n % 70 frames (65..69: must be refused), frame i from
 *              seed + i * step
 *   2 get      id16: an id from 0 to a little past the last one
 *   3 check    rp_depot_check
 *   4 foreach  every stack against the model
 *   5 again    id16: a stored stack put again must return its id
 * A violated expectation prints what and where, then aborts. STACK_DEPOT_TRACE=1 traces. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug/stack_depot.h"
#include "fuzz/expect.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/op_mutator.h"

#define MAX_MODEL 8192 /* the alphabet bounds the distinct stacks well below this */

static const uintptr_t alphabet[4] = {0x401000, 0x401010, (uintptr_t)0x7f0000001000ull,
                                      (uintptr_t)0x401000 ^ ((uintptr_t)1 << 63)};

/* The model: id -> frames, for ids 1 .. count (the depot's own numbering). */
static struct {
    size_t count;
    unsigned n[MAX_MODEL + 1];
    uintptr_t *frames[MAX_MODEL + 1];
} model;

static unsigned long op_index;
static const char *op_name;

static void where(FILE *out)
{
    fprintf(out, "stack_depot: operation %lu (%s): ", op_index, op_name ? op_name : "-");
}

static void print_frames(const char *what, const uintptr_t *f, unsigned n)
{
    fprintf(stderr, "  %s (%u frames):", what, n);
    for (unsigned i = 0; i < n; i++)
        fprintf(stderr, " %#lx", (unsigned long)f[i]);
    fputc('\n', stderr);
}

static int same(const uintptr_t *a, unsigned an, const uintptr_t *b, unsigned bn)
{
    return an == bn && memcmp(a, b, an * sizeof *a) == 0;
}

/* The model's id of these frames, or 0. */
static uint32_t model_find(const uintptr_t *f, unsigned n)
{
    for (size_t id = 1; id <= model.count; id++)
        if (same(model.frames[id], model.n[id], f, n))
            return (uint32_t)id;
    return 0;
}

/* rp_depot_get(id) reads back exactly the model's stack. */
static void expect_reads_back(uint32_t id)
{
    uintptr_t got[RP_STACK_MAX_FRAMES + 1];
    unsigned n = rp_depot_get(id, got, RP_STACK_MAX_FRAMES + 1);
    if (!same(got, n, model.frames[id], model.n[id])) {
        where(stderr);
        fprintf(stderr, "stack %u read back is not the stack stored under it\n", id);
        print_frames("stored", model.frames[id], model.n[id]);
        print_frames("read back", got, n);
        abort();
    }
}

/* Puts the frames and checks the id against the model. */
static void put(const uintptr_t *f, unsigned n)
{
    size_t before = rp_depot_count();
    uint32_t id = rp_depot_put(f, n);
    TRACE("  put %u frames -> id %u\n", n, id);
    if (n == 0 || n > RP_STACK_MAX_FRAMES) {
        EXPECT(id == 0 && rp_depot_count() == before, "a stack of %u frames was stored as id %u", n, id);
        return;
    }
    EXPECT(id != 0, "rp_depot_put of %u frames failed (%zu stacks stored)", n, before);
    uint32_t known = model_find(f, n);
    if (known) {
        if (id != known) {
            where(stderr);
            fprintf(stderr, "the same frames got id %u, stored before as id %u\n", id, known);
            print_frames("frames", f, n);
            abort();
        }
        EXPECT(rp_depot_count() == before, "putting a stored stack again stored a new one");
    } else if (id <= model.count) {
        where(stderr);
        fprintf(stderr, "a new stack got id %u, which names another stack (deduplicated by hash alone?)\n", id);
        print_frames("put", f, n);
        print_frames("stored under that id", model.frames[id], model.n[id]);
        abort();
    } else {
        EXPECT(id == model.count + 1 && rp_depot_count() == before + 1,
               "a new stack got id %u, the next is %zu (%zu stored)", id, model.count + 1, rp_depot_count());
        EXPECT(model.count < MAX_MODEL, "more distinct stacks than the alphabet allows");
        model.count++;
        model.n[id] = n;
        model.frames[id] = malloc(n * sizeof *f);
        EXPECT(model.frames[id], "out of memory");
        memcpy(model.frames[id], f, n * sizeof *f);
    }
    expect_reads_back(id);
}

static int visit(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    uint32_t *next = arg;
    EXPECT(id == *next, "rp_depot_foreach visited id %u, expected %u", id, *next);
    EXPECT(id <= model.count && same(frames, n, model.frames[id], model.n[id]),
           "rp_depot_foreach gives stack %u other frames than were stored", id);
    ++*next;
    return 0;
}

static void check(void)
{
    char why[256];
    EXPECT(rp_depot_check(why, sizeof why) == 0, "rp_depot_check: %s", why);
}

/* Operation lengths for the structure-aware mutator (fuzz/op_mutator.h). */
static size_t op_length(const uint8_t *op, size_t left)
{
    switch (op[0] & 15) {
    case 0:
        return 2 + (left > 1 ? op[1] % 6 : 0);
    case 1:
        return 4;
    case 2:
    case 5:
        return 3;
    default:
        return 1;
    }
}

static const op_grammar grammar = {0, op_length, 0x3f};
OP_MUTATOR(grammar)

static const char *const op_names[] = {"put", "put-long", "get", "check", "foreach", "again"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    expect_tracing = getenv("STACK_DEPOT_TRACE") != NULL;
    expect_context(where, NULL);
    /* The process's depot may hold stacks from before (none in this target): adopt them. */
    size_t n = rp_depot_count();
    for (uint32_t id = 1; id <= n && model.count < MAX_MODEL; id++) {
        uintptr_t f[RP_STACK_MAX_FRAMES];
        unsigned k = rp_depot_get(id, f, RP_STACK_MAX_FRAMES);
        model.count++;
        model.n[id] = k;
        model.frames[id] = malloc(k * sizeof *f + 1);
        memcpy(model.frames[id], f, k * sizeof *f);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int initialised;
    if (!initialised) {
        LLVMFuzzerInitialize(NULL, NULL);
        initialised = 1;
    }
    fuzz_input in = fuzz_input_of(data, size);
    uintptr_t f[RP_STACK_MAX_FRAMES + 8];
    for (op_index = 0; fuzz_more(&in) && op_index < 4096; op_index++) {
        int op = fuzz_opcode(&in, op_names, 6, &op_name);
        if (op < 0)
            continue;
        TRACE("op %lu %s\n", op_index, op_name);
        switch (op) {
        case 0: {
            unsigned n = fuzz_u8(&in) % 6;
            for (unsigned i = 0; i < n; i++)
                f[i] = alphabet[fuzz_u8(&in) % 4];
            put(f, n);
            break;
        }
        case 1: {
            unsigned n = fuzz_u8(&in) % 70, seed = fuzz_u8(&in) % 4, step = fuzz_u8(&in) % 4;
            for (unsigned i = 0; i < n; i++)
                f[i] = alphabet[(seed + i * step) % 4];
            put(f, n);
            break;
        }
        case 2: {
            uint32_t id = (uint32_t)(fuzz_u16(&in) % (model.count + 3));
            uintptr_t got[RP_STACK_MAX_FRAMES];
            unsigned n = rp_depot_get(id, got, RP_STACK_MAX_FRAMES);
            if (id == 0 || id > model.count)
                EXPECT(n == 0, "rp_depot_get(%u) found %u frames; %zu stacks are stored", id, n, model.count);
            else
                expect_reads_back(id);
            break;
        }
        case 3:
            check();
            break;
        case 4: {
            uint32_t next = 1;
            EXPECT(rp_depot_foreach(visit, &next) == 0, "rp_depot_foreach stopped early");
            EXPECT(next == model.count + 1, "rp_depot_foreach visited %u stacks of %zu", next - 1, model.count);
            break;
        }
        case 5:
            if (model.count) {
                uint32_t id = 1 + (uint32_t)(fuzz_u16(&in) % model.count);
                put(model.frames[id], model.n[id]);
            } else {
                fuzz_u16(&in);
            }
            break;
        }
        EXPECT(rp_depot_count() == model.count, "the depot holds %zu stacks, the model %zu", rp_depot_count(),
               model.count);
    }
    op_name = "end";
    char why[256];
    EXPECT(rp_depot_check_if_grown(why, sizeof why) == 0, "rp_depot_check: %s", why);
    return 0;
}
