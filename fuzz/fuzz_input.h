/* Reading a fuzzer's input as a stream of small integers.
 *
 * Harnesses decode their input into operations. Reads past the end return 0 (and set
 * `exhausted`), so every input is valid and a truncated one still means something: the fuzzer
 * never wastes time on inputs the harness rejects. Header-only, no allocation. */
#ifndef RP_FUZZ_INPUT_H
#define RP_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    size_t pos;
    int exhausted;
} fuzz_input;

static inline fuzz_input fuzz_input_of(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0, 0};
    return in;
}

static inline int fuzz_more(const fuzz_input *in) { return in->pos < in->size; }

static inline uint8_t fuzz_u8(fuzz_input *in)
{
    if (in->pos >= in->size) {
        in->exhausted = 1;
        return 0;
    }
    return in->data[in->pos++];
}

/* Little-endian, so a seed written by hand reads naturally. */
static inline uint16_t fuzz_u16(fuzz_input *in)
{
    uint16_t lo = fuzz_u8(in);
    return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

static inline uint32_t fuzz_u32(fuzz_input *in)
{
    uint32_t lo = fuzz_u16(in);
    return lo | (uint32_t)fuzz_u16(in) << 16;
}

/* The next operation's opcode: the low four bits of the next byte, so opcodes keep their
 * meaning as operations are added. -1 when it names none of the `count` operations (a free
 * opcode does nothing); otherwise *name receives names[op]. */
static inline int fuzz_opcode(fuzz_input *in, const char *const *names, int count, const char **name)
{
    int op = fuzz_u8(in) & 15;
    if (op >= count)
        return -1;
    *name = names[op];
    return op;
}

#endif
