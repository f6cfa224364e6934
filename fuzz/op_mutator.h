/* Structure-aware mutation for the harnesses whose input is a few header bytes followed by
 * operations (an opcode byte, its low four bits naming the operation, and its argument bytes):
 * heap_ops, malloc_api, malloc_threads, slab_ops, corruption.
 *
 * libFuzzer's byte mutations mostly shift the operations' boundaries: one inserted byte turns
 * every later operation into another one with other arguments, so a mutation of a long input
 * rarely keeps what made it interesting. These mutations work on whole operations, so the
 * result stays the same sequence with one change: an operation's arguments mutated in place,
 * an operation inserted (a random one, or a copy of another), deleted, moved, or its opcode
 * changed (with new arguments), the header mutated, or a cross-over that joins the operations
 * of one input to those of another. A quarter of the mutations are still libFuzzer's own
 * (LLVMFuzzerMutate: its dictionary and comparison hints act on the bytes).
 *
 * A harness describes its encoding with an op_grammar and defines LLVMFuzzerCustomMutator and
 * LLVMFuzzerCustomCrossOver by calling op_mutate and op_cross_over. Replay builds link the same
 * code; it is never called there. */
#ifndef RP_FUZZ_OP_MUTATOR_H
#define RP_FUZZ_OP_MUTATOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct op_grammar {
    size_t header; /* bytes before the first operation */
    /* Bytes of the operation starting at op (at least 1), as the harness decodes it: the
     * opcode byte and every argument byte it reads (it may read past left: reads past the
     * end of an input give 0). */
    size_t (*length)(const uint8_t *op, size_t left);
    /* Opcodes worth inserting (1 << opcode set), e.g. leaving out ones that do nothing. */
    uint16_t opcodes;
} op_grammar;

size_t op_mutate(const op_grammar *g, uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t op_cross_over(const op_grammar *g, const uint8_t *a, size_t asize, const uint8_t *b, size_t bsize,
                     uint8_t *out, size_t max_out, unsigned int seed);

/* libFuzzer's hooks (FuzzerInterface.h). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *a, size_t asize, const uint8_t *b, size_t bsize, uint8_t *out,
                                 size_t max_out, unsigned int seed);

/* The harness side: both libFuzzer hooks in one line. */
#define OP_MUTATOR(grammar)                                                                    \
    size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) \
    {                                                                                          \
        return op_mutate(&(grammar), data, size, max_size, seed);                              \
    }                                                                                          \
    size_t LLVMFuzzerCustomCrossOver(const uint8_t *a, size_t asize, const uint8_t *b, size_t bsize, \
                                     uint8_t *out, size_t max_out, unsigned int seed)          \
    {                                                                                          \
        return op_cross_over(&(grammar), a, asize, b, bsize, out, max_out, seed);              \
    }

#endif
