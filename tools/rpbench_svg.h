/* rpbench's SVG charts: panels of series over a few x points (rounds, cases, thread counts,
 * tests), each point a median with the range of the repetitions (a band when the points are
 * joined, a whisker otherwise), and heat maps (the grid: a ratio per size and alignment). */
#ifndef RPBENCH_SVG_H
#define RPBENCH_SVG_H

#define RPB_SVG_MAX_SERIES 16

typedef struct rpb_series {
    const char *name;       /* allocator */
    const double *mid;      /* one median per x point; values <= 0 are missing */
    const double *lo, *hi;  /* the range per point, or NULL */
} rpb_series;

typedef struct rpb_panel {
    const char *title;
    const char *xlabel, *ylabel;
    const char *const *xticks; /* a label per x point */
    int npoints;
    int joined; /* 1: medians joined by a line over a band of the range; 0: whiskers */
    int log_y;  /* logarithmic y axis (figures that differ by orders of magnitude) */
    rpb_series series[RPB_SVG_MAX_SERIES];
    int nseries;
    /* Heat map instead (nrows > 0): values[row * ncols + col], coloured from green (below 1)
     * through white (1) to red (above 1), the value printed in each cell; <= 0 missing. */
    int nrows, ncols;
    const double *values;
    const char *const *row_labels, *const *col_labels;
} rpb_panel;

/* Writes the panels, one under the other, to path. Returns 0, or -1 (errno from fopen or
 * fclose). */
int rpb_write_svg(const char *path, const char *caption, const rpb_panel *panels, int npanels);

#endif
