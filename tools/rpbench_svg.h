/* rpbench's chart: ns/op per round of the seed scenario, one panel per case, one line per
 * allocator, logarithmic y axis (the allocators differ by orders of magnitude). */
#ifndef RPBENCH_SVG_H
#define RPBENCH_SVG_H

typedef struct rpb_series {
    const char *name;      /* allocator */
    const double *values;  /* one per round; values <= 0 are missing */
} rpb_series;

typedef struct rpb_panel {
    const char *title;     /* case */
    rpb_series series[16];
    int nseries;
} rpb_panel;

/* Writes the chart to path. Returns 0, or -1 (errno from fopen/fclose). */
int rpb_write_svg(const char *path, const char *caption, const rpb_panel *panels, int npanels, int rounds);

#endif
