/* The free batch (T5 in thread_cache.h): the frees a thread collected and has not examined
 * yet. Examining them is free()'s own work (malloc.c), so the code lives there; the thread
 * caches and the statistics call it before they look at a cache. */
#ifndef RP_FREE_BATCH_H
#define RP_FREE_BATCH_H

#include "thread_cache.h"

/* Examines the frees tc has collected, in call order, and empties its free batch: what free()
 * does with a pointer at its call, for each. Keeps errno. */
void rp_malloc_free_collected(rp_tcache *tc);

#endif
