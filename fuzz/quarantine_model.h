/* The corruption harness's model of the debug flavour's quarantine (debug/quarantine.h):
 * blocks the program freed are held first in, first out, each charged the core's usable
 * size, until more than the byte budget (option quarantine_bytes) is held; then the oldest
 * go back to the heap. A block charged more than the budget is never held. The model says
 * which blocks must be quarantined after every operation, and rp_heap_walk must show
 * exactly those: a quarantine that lets a block go early, late or out of order is caught
 * right away, not only when a write after free goes unexplained. */
#ifndef RP_FUZZ_QUARANTINE_MODEL_H
#define RP_FUZZ_QUARANTINE_MODEL_H

#include <stddef.h>

#include "rampart.h"

#define QMODEL_MAX 8192    /* entries held at most (the budget over the smallest charge) */
#define QMODEL_RELEASED 64 /* blocks released from the model most recently, newest last */

typedef struct qmodel_entry {
    unsigned char *p; /* user pointer */
    size_t charged;   /* the core's usable size */
    size_t requested;
} qmodel_entry;

/* Empties the model; blocks are charged against `budget` bytes. */
void qmodel_reset(size_t budget);

/* The program freed p: it is queued (1) or released at once (0); older blocks may leave. */
int qmodel_free(unsigned char *p, size_t charged, size_t requested);

/* Everything held is released (rp_quarantine_flush). */
void qmodel_flush(void);

size_t qmodel_count(void);
size_t qmodel_bytes(void);
/* The i-th oldest block held (i < qmodel_count()). */
const qmodel_entry *qmodel_held(size_t i);
/* The i-th most recently released block (i < qmodel_released_count()), newest first. */
const qmodel_entry *qmodel_released(size_t i);
size_t qmodel_released_count(void);
/* Whether p is held. */
int qmodel_holds(const void *p);

/* Compares the model with the heap: the quarantined blocks of rp_heap_walk and the counters
 * of rp_debug_get_stats. 0, or 1 with what differs in why. */
int qmodel_matches(rp_heap *h, char *why, size_t len);

#endif
