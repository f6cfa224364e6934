/* The STACKS section of debug dumps: every stack of the process-wide depot
 * (debug/stack_depot.h). Release builds link dump_stacks_none.c instead. */
#include "debug/dump_internal.h"
#include "debug/stack_depot.h"

/* One stack record: u32 id, u32 frame count, the frames as u64 (dump_format.h). */
static int put_stack(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    rpd_encoder *e = arg;
    if (n > RPD_MAX_FRAMES)
        n = RPD_MAX_FRAMES;
    uint8_t raw[RPD_STACK_HEAD_BYTES + 8 * RPD_MAX_FRAMES];
    rpd_put32(raw, id);
    rpd_put32(raw + 4, n);
    for (unsigned i = 0; i < n; i++)
        rpd_put64(raw + RPD_STACK_HEAD_BYTES + 8 * i, frames[i]);
    rpd_enc_record(e, raw, RPD_STACK_HEAD_BYTES + 8 * (size_t)n);
    return e->error != 0;
}

void rpd_write_stacks(rpd_encoder *e)
{
    rpd_enc_begin(e, RPD_SEC_STACKS, RPD_NO_HEAP, 0);
    rp_depot_foreach(put_stack, e);
    rpd_enc_end(e);
}
