/* The corruption harness's quarantine model: see quarantine_model.h. */
#include "fuzz/quarantine_model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/block_pattern.h"
#include "rampart_debug.h"

static struct {
    qmodel_entry held[QMODEL_MAX]; /* a ring, oldest at head */
    size_t head, count, bytes, budget;
    qmodel_entry released[QMODEL_RELEASED]; /* a ring, newest at released_next - 1 */
    size_t released_next, released_count;
} q;

void qmodel_reset(size_t budget)
{
    memset(&q, 0, sizeof q);
    q.budget = budget;
}

static void release(const qmodel_entry *e)
{
    q.released[q.released_next] = *e;
    q.released_next = (q.released_next + 1) % QMODEL_RELEASED;
    if (q.released_count < QMODEL_RELEASED)
        q.released_count++;
}

static void release_oldest(void)
{
    release(&q.held[q.head]);
    q.bytes -= q.held[q.head].charged;
    q.head = (q.head + 1) % QMODEL_MAX;
    q.count--;
}

int qmodel_free(unsigned char *p, size_t charged, size_t requested)
{
    qmodel_entry e = {p, charged, requested};
    if (charged > q.budget || q.count == QMODEL_MAX) {
        release(&e);
        return 0;
    }
    q.held[(q.head + q.count) % QMODEL_MAX] = e;
    q.count++;
    q.bytes += charged;
    while (q.bytes > q.budget)
        release_oldest();
    return qmodel_holds(p);
}

void qmodel_flush(void)
{
    while (q.count)
        release_oldest();
}

size_t qmodel_count(void) { return q.count; }
size_t qmodel_bytes(void) { return q.bytes; }
const qmodel_entry *qmodel_held(size_t i) { return &q.held[(q.head + i) % QMODEL_MAX]; }
size_t qmodel_released_count(void) { return q.released_count; }

const qmodel_entry *qmodel_released(size_t i)
{
    return &q.released[(q.released_next + QMODEL_RELEASED - 1 - i) % QMODEL_RELEASED];
}

NO_FEEDBACK int qmodel_holds(const void *p)
{
    for (size_t i = 0; i < q.count; i++)
        if (qmodel_held(i)->p == p)
            return 1;
    return 0;
}

/* ---- against the heap ------------------------------------------------------------------ */

typedef struct seen {
    uintptr_t addr[QMODEL_MAX];
    size_t n, more;
} seen;

static int collect_quarantined(const rp_block_info *b, void *arg)
{
    seen *s = arg;
    if (b->state != RP_BLOCK_QUARANTINED)
        return 0;
    if (s->n < QMODEL_MAX)
        s->addr[s->n++] = (uintptr_t)b->addr;
    else
        s->more++;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

int qmodel_matches(rp_heap *h, char *why, size_t len)
{
    static seen walked, modelled;
    walked.n = walked.more = 0;
    if (rp_heap_walk(h, collect_quarantined, &walked) != 0) {
        snprintf(why, len, "rp_heap_walk failed");
        return 1;
    }
    modelled.n = q.count;
    for (size_t i = 0; i < q.count; i++)
        modelled.addr[i] = (uintptr_t)qmodel_held(i)->p;
    qsort(walked.addr, walked.n, sizeof walked.addr[0], by_value);
    qsort(modelled.addr, modelled.n, sizeof modelled.addr[0], by_value);
    for (size_t i = 0; i < walked.n || i < modelled.n; i++) {
        uintptr_t w = i < walked.n ? walked.addr[i] : UINTPTR_MAX, m = i < modelled.n ? modelled.addr[i] : UINTPTR_MAX;
        if (w == m)
            continue;
        if (m < w)
            snprintf(why, len, "block %p should still be quarantined (FIFO, %zu of %zu budget bytes held), the heap "
                     "released it", (void *)m, q.bytes, q.budget);
        else
            snprintf(why, len, "block %p is quarantined, the model released it or never freed it", (void *)w);
        return 1;
    }
    rp_debug_stats st;
    if (rp_debug_get_stats(h, &st) != 0 || st.quarantined_blocks != q.count || st.quarantined_bytes != q.bytes) {
        snprintf(why, len, "rp_debug_get_stats: %zu blocks / %zu bytes quarantined, the model holds %zu / %zu",
                 st.quarantined_blocks, st.quarantined_bytes, q.count, q.bytes);
        return 1;
    }
    return 0;
}
