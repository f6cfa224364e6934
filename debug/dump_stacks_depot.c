/* The STACKS section of debug dumps: every stack of the process-wide depot
 * (debug/stack_depot.h); a sample source gives depot ids in this flavour (rampart_dump.h).
 * Release builds link dump_stacks_sampler.c instead. */
#include "debug/dump_internal.h"
#include "debug/stack_depot.h"

static int put_stack(uint32_t id, const uintptr_t *frames, unsigned n, void *arg)
{
    rpd_encoder *e = arg;
    rpd_enc_stack(e, id, frames, n);
    return e->error != 0;
}

void rpd_write_stacks(rpd_encoder *e)
{
    rpd_enc_begin(e, RPD_SEC_STACKS, RPD_NO_HEAP, 0);
    rp_depot_foreach(put_stack, e);
    rpd_enc_end(e);
}
