/* rpd_sample_weight (dump_parser.h): what one sample of the heap profiler stands for. */
#include <math.h>

#include "dump_parser.h"

void rpd_sample_weight(const rpd_sample *s, double *blocks, double *bytes)
{
    double size = s->size ? (double)s->size : 1.0;
    double p = s->rate ? -expm1(-size / (double)s->rate) : 1.0; /* 1 - exp(-x), exact for small x */
    if (!(p > 0))
        p = 1.0; /* only for absurd rates: a sample always stands for at least itself */
    *blocks = 1.0 / p;
    *bytes = (double)s->size / p;
}
