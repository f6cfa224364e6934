/* Structure-aware mutation over operation encodings: see op_mutator.h. */
#include "fuzz/op_mutator.h"

#include <string.h>

/* libFuzzer's own mutator (absent from replay builds, which never mutate). */
__attribute__((weak)) size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define MAX_OPS 4096

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Start offsets of the operations of data (count returned; the last one may be cut short by
 * the end of the input). */
static size_t op_starts(const op_grammar *g, const uint8_t *data, size_t size, size_t *starts)
{
    size_t n = 0;
    for (size_t at = g->header; at < size && n < MAX_OPS; n++) {
        starts[n] = at;
        size_t len = g->length(data + at, size - at);
        at += len ? len : 1;
    }
    return n;
}

/* The end of operation i (the next one's start, or the input's end). */
static size_t op_end(const size_t *starts, size_t n, size_t i, size_t size)
{
    return i + 1 < n ? starts[i + 1] : size;
}

static size_t byte_mutate(uint8_t *data, size_t size, size_t max_size)
{
    return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
}

/* A random operation with random arguments written at out (at most cap bytes); its length. */
static size_t random_op(const op_grammar *g, uint8_t *out, size_t cap, uint64_t *rnd)
{
    uint8_t buf[64];
    unsigned op;
    do
        op = (unsigned)(next_random(rnd) & 15);
    while (g->opcodes && !(g->opcodes & (1u << op)));
    buf[0] = (uint8_t)op;
    /* Arguments: small values most of the time (slots, counts, size codes of the common
     * classes), any byte otherwise. */
    for (size_t i = 1; i < sizeof buf; i++) {
        uint64_t r = next_random(rnd);
        buf[i] = (uint8_t)((r & 3) ? (r >> 8) % 16 : r >> 16);
    }
    size_t len = g->length(buf, sizeof buf);
    if (len > sizeof buf)
        len = sizeof buf;
    if (len > cap)
        return 0;
    memcpy(out, buf, len);
    return len;
}

/* Inserts len bytes from src at offset at (len bytes of room checked by the caller). */
static void insert_bytes(uint8_t *data, size_t size, size_t at, const uint8_t *src, size_t len)
{
    memmove(data + at + len, data + at, size - at);
    memcpy(data + at, src, len);
}

static size_t delete_bytes(uint8_t *data, size_t size, size_t at, size_t len)
{
    memmove(data + at, data + at + len, size - at - len);
    return size - len;
}

size_t op_mutate(const op_grammar *g, uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    static size_t starts[MAX_OPS];
    uint64_t rnd = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    uint64_t how = next_random(&rnd) % 16;
    if (how < 4 || size < g->header)
        return byte_mutate(data, size, max_size);
    if (size == g->header) { /* a first operation */
        size_t len = random_op(g, data + size, max_size - size, &rnd);
        return len ? size + len : byte_mutate(data, size, max_size);
    }
    size_t n = op_starts(g, data, size, starts);
    if (n == 0)
        return byte_mutate(data, size, max_size);
    size_t i = (size_t)(next_random(&rnd) % n), at = starts[i], end = op_end(starts, n, i, size);
    uint8_t op[64];
    switch (how) {
    case 4:
    case 5:
    case 6: { /* an operation's arguments, in place */
        if (end - at < 2)
            break;
        size_t len = end - at - 1;
        uint8_t args[64];
        if (len > sizeof args)
            len = sizeof args;
        memcpy(args, data + at + 1, len);
        size_t got = byte_mutate(args, len, len);
        memset(args + got, 0, len - got);
        memcpy(data + at + 1, args, len);
        return size;
    }
    case 7:
    case 8:
    case 9: { /* a new operation */
        size_t len = random_op(g, op, max_size - size, &rnd);
        if (!len)
            break;
        size_t where = next_random(&rnd) % 2 ? at : end;
        insert_bytes(data, size, where, op, len);
        return size + len;
    }
    case 10: /* an operation dropped */
        if (n < 2)
            break;
        return delete_bytes(data, size, at, end - at);
    case 11: { /* a copy of an operation somewhere else */
        size_t len = end - at;
        if (len > sizeof op || size + len > max_size)
            break;
        memcpy(op, data + at, len);
        size_t j = (size_t)(next_random(&rnd) % n);
        insert_bytes(data, size, starts[j], op, len);
        return size + len;
    }
    case 12: { /* an operation moved */
        size_t len = end - at;
        if (len > sizeof op || n < 2)
            break;
        memcpy(op, data + at, len);
        size = delete_bytes(data, size, at, len);
        size_t m = op_starts(g, data, size, starts);
        size_t where = m ? starts[next_random(&rnd) % m] : size;
        insert_bytes(data, size, where, op, len);
        return size + len;
    }
    case 13: { /* another opcode, with arguments of its own */
        size_t len = random_op(g, op, sizeof op, &rnd);
        if (!len || size - (end - at) + len > max_size)
            break;
        size = delete_bytes(data, size, at, end - at);
        insert_bytes(data, size, at, op, len);
        return size + len;
    }
    case 14: /* the header */
        if (g->header) {
            uint8_t head[16];
            size_t len = g->header < sizeof head ? g->header : sizeof head;
            memcpy(head, data, len);
            size_t got = byte_mutate(head, len, len);
            memset(head + got, 0, len - got);
            memcpy(data, head, len);
            return size;
        }
        break;
    default: /* the input cut after an operation (shorter inputs run faster) */
        if (i > 0)
            return at;
        break;
    }
    return byte_mutate(data, size, max_size);
}

size_t op_cross_over(const op_grammar *g, const uint8_t *a, size_t asize, const uint8_t *b, size_t bsize,
                     uint8_t *out, size_t max_out, unsigned int seed)
{
    static size_t starts[MAX_OPS];
    uint64_t rnd = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 0x1d8e4e27c47d124full;
    /* The header and the first operations of a, then the operations of b from one on. */
    size_t na = op_starts(g, a, asize, starts);
    size_t cut_a = na ? starts[next_random(&rnd) % na] : asize;
    if (na && next_random(&rnd) % 4 == 0)
        cut_a = asize;
    size_t nb = op_starts(g, b, bsize, starts);
    size_t from_b = nb ? starts[next_random(&rnd) % nb] : bsize;
    size_t n = cut_a < max_out ? cut_a : max_out;
    memcpy(out, a, n);
    size_t more = bsize - from_b;
    if (more > max_out - n)
        more = max_out - n;
    memcpy(out + n, b + from_b, more);
    return n + more;
}
