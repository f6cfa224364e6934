/* The STACKS section of release dumps (//debug:dump): release records no stacks, so the
 * section is present and empty. The debug bundle links dump_stacks_depot.c instead. */
#include "debug/dump_internal.h"

void rpd_write_stacks(rpd_encoder *e)
{
    rpd_enc_begin(e, RPD_SEC_STACKS, RPD_NO_HEAP, 0);
    rpd_enc_end(e);
}
