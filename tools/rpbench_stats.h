/* Statistics of rpbench's repetitions. A value below 0 stands for a run that failed or was not
 * made and is left out of every figure. */
#ifndef RPBENCH_STATS_H
#define RPBENCH_STATS_H

/* Repetitions one figure may have. */
#define RPB_MAX_REPS 64

/* The median of the values >= 0 among v[0..n) (n at most RPB_MAX_REPS; the mean of the two
 * middle ones for an even count); -1 if there is none. */
double rpb_median(const double *v, int n);

/* The smallest and the largest of the values >= 0 among v[0..n) in *lo and *hi; 0, or -1
 * (both set to -1) if there is none. The spread every table shows next to a median. */
int rpb_range(const double *v, int n, double *lo, double *hi);

/* The geometric mean of the values > 0 among v[0..n); -1 if there is none. */
double rpb_geomean(const double *v, int n);

/* Repetition i of rampart (r[i]) and of a peer (p[i]) ran in the same round of the
 * interleaving. Counts the rounds i < n where both are >= 0 into *pairs and returns in how
 * many of them rampart's figure was the better one: lower, or higher when higher_is_better
 * (rates). A tie is not ahead. */
int rpb_paired_ahead(const double *r, const double *p, int n, int higher_is_better, int *pairs);

#endif
