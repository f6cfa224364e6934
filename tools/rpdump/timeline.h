/* `rpdump timeline`: the live memory of a series of dumps (cmd_timeline.c builds it) and its
 * chart (timeline_chart.c draws it). */
#ifndef RPDUMP_TIMELINE_H
#define RPDUMP_TIMELINE_H

#include "rpdump.h"

#define TIMELINE_CHART_SITES 10 /* sites the chart stacks; the rest is "other" */

typedef struct timeline_point {
    const rpd_input *in;
    double elapsed;    /* seconds since the first dump */
    uint64_t bytes;    /* live bytes (requested in debug dumps, usable in release ones) */
    uint64_t blocks;
    uint64_t os_bytes; /* the heaps' memory from the OS (their counters) */
} timeline_point;

typedef struct timeline_site {
    size_t group;       /* in the series' site groups (site_groups.h) */
    char label[200];    /* its first frames, innermost first, for legends */
    int64_t growth;     /* bytes at the peak less bytes in the first dump */
    uint64_t *bytes;    /* per dump */
    uint64_t *blocks;   /* per dump */
} timeline_site;

typedef struct timeline {
    timeline_point *points; /* by time */
    size_t npoints;
    size_t peak;            /* the point with the most live bytes (the first of equals) */
    int by_time;            /* x axis: seconds (1) or dump numbers (0: the dumps share one time) */
    const char *bytes_are;
    timeline_site *sites;   /* the sites that grew most up to the peak, most first */
    size_t nsites;
} timeline;

/* Writes the chart of tl to o->output (o->width pixels wide): the live bytes over time, the
 * top sites stacked under the total, the peak marked, a legend. Returns 0, or -1 after
 * printing why on stderr. */
int timeline_chart_write(const timeline *tl, const rpd_options *o, double *height);

#endif
