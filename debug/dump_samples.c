/* The SAMPLES section: the live blocks a heap profiler sampled, handed over by the sample
 * source registered with rp_dump_set_sample_source (rampart_dump.h). The source is read once
 * per dump, after the heaps (their locks released) and before the stacks, so every stack a
 * sample names is in the depot by the time the stacks are written (ids are never reused). */
#define _GNU_SOURCE
#include <time.h>

#include "debug/dump_internal.h"
#include "debug/rampart_dump.h"

static const rp_dump_sample_source *source; /* atomic */

void rp_dump_set_sample_source(const rp_dump_sample_source *s) { __atomic_store_n(&source, s, __ATOMIC_RELEASE); }

const rp_dump_sample_source *rpd_sample_source(void) { return __atomic_load_n(&source, __ATOMIC_ACQUIRE); }

typedef struct sample_writer {
    rpd_encoder *e;
    uint64_t now_ns; /* CLOCK_MONOTONIC at the start of the section */
} sample_writer;

static int put_sample(void *arg, const rp_dump_sample *in)
{
    sample_writer *w = arg;
    rpd_sample s = {(uintptr_t)in->addr, in->size, in->rate, RPD_AGE_UNKNOWN, in->stack,
                    in->flags & RP_DUMP_SAMPLE_SLAB ? RPD_SAMPLE_SLAB : 0};
    if (in->alloc_ns && in->alloc_ns <= w->now_ns)
        s.age_ns = w->now_ns - in->alloc_ns;
    uint8_t raw[RPD_SAMPLE_BYTES];
    rpd_sample_encode(&s, raw);
    rpd_enc_record(w->e, raw, sizeof raw);
    return w->e->error != 0;
}

void rpd_write_samples(rpd_encoder *e, const rp_dump_sample_source *src)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    sample_writer w = {e, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec};
    rpd_enc_begin(e, RPD_SEC_SAMPLES, RPD_NO_HEAP, RPD_SAMPLE_BYTES);
    if (src && src->foreach_sample)
        src->foreach_sample(src->ctx, put_sample, &w);
    rpd_enc_end(e);
}
