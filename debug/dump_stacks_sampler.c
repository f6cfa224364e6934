/* The STACKS section of release dumps (//debug:dump): release keeps no stack depot, so the
 * section holds the stacks of the registered sample source (rampart_dump.h), which its
 * samples name; empty without one. The debug bundle links dump_stacks_depot.c instead. */
#include "debug/dump_internal.h"

static int put_stack(void *arg, uint32_t id, const uintptr_t *frames, unsigned n)
{
    rpd_encoder *e = arg;
    if (id) /* 0 means "no stack": a source giving it is wrong, and the reader would refuse it */
        rpd_enc_stack(e, id, frames, n);
    return e->error != 0;
}

void rpd_write_stacks(rpd_encoder *e)
{
    const rp_dump_sample_source *src = rpd_sample_source();
    rpd_enc_begin(e, RPD_SEC_STACKS, RPD_NO_HEAP, 0);
    if (src && src->foreach_stack)
        src->foreach_stack(src->ctx, put_stack, e);
    rpd_enc_end(e);
}
