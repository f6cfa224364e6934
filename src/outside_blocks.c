#include "outside_blocks.h"

static const rp_outside_blocks *registered;

void rp_outside_blocks_set(const rp_outside_blocks *o) { __atomic_store_n(&registered, o, __ATOMIC_RELEASE); }

const rp_outside_blocks *rp_outside_blocks_get(void) { return __atomic_load_n(&registered, __ATOMIC_ACQUIRE); }
