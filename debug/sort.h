/* Sorting without allocation (libc's qsort may call malloc, which may be rampart itself):
 * an in-place heapsort, O(n log n), for the error and report paths. */
#ifndef RP_DEBUG_SORT_H
#define RP_DEBUG_SORT_H

#include <stddef.h>

/* Sorts n elements of size bytes (at most 64) at base so that before(a, b) never holds for
 * an element a after an element b. */
void rp_sort(void *base, size_t n, size_t size, int (*before)(const void *a, const void *b));

#endif
