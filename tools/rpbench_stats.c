#include "rpbench_stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double rpb_median(const double *v, int n)
{
    double tmp[RPB_MAX_REPS];
    int m = 0;
    for (int i = 0; i < n && i < RPB_MAX_REPS; i++)
        if (v[i] >= 0)
            tmp[m++] = v[i];
    if (m == 0)
        return -1;
    qsort(tmp, (size_t)m, sizeof *tmp, cmp_double);
    return m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
}

int rpb_paired_ahead(const double *r, const double *p, int n, int higher_is_better, int *pairs)
{
    int both = 0, ahead = 0;
    for (int i = 0; i < n; i++) {
        if (r[i] < 0 || p[i] < 0)
            continue;
        both++;
        ahead += higher_is_better ? r[i] > p[i] : r[i] < p[i];
    }
    *pairs = both;
    return ahead;
}

int rpb_range(const double *v, int n, double *lo, double *hi)
{
    *lo = *hi = -1;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            continue;
        if (*lo < 0 || v[i] < *lo)
            *lo = v[i];
        if (v[i] > *hi)
            *hi = v[i];
    }
    return *lo < 0 ? -1 : 0;
}

double rpb_geomean(const double *v, int n)
{
    double sum = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0) {
            sum += log(v[i]);
            m++;
        }
    return m ? exp(sum / m) : -1;
}
