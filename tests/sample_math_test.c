/* The heap profiler's own log and 1 - e^-x (src/malloc/sample_math.h) against libm's, over
 * the whole ranges the sampler uses: draws u in (0, 1] down to 2^-53 (and subnormals, for
 * completeness) and size/rate ratios from 2^-40 to past the doubles' range. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "src/malloc/sample_math.h"
#include "testing.h"

static double rel_error(double got, double want)
{
    if (want == 0)
        return fabs(got);
    return fabs(got - want) / fabs(want);
}

int main(void)
{
    double worst_ln = 0, worst_exp = 0;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        /* u as the sampler draws it, and spread over every binade down to subnormals */
        double u = (double)((state >> 11) + 1) * 0x1p-53;
        double v = ldexp(u, -(int)(state % 1070));
        double xs[2] = {u, v};
        for (int k = 0; k < 2; k++) {
            double x = xs[k];
            if (x == 0) /* v underflowed: outside the domain */
                continue;
            if (x == 1.0) {
                CHECK(rp_sample_ln(x) == 0);
                continue;
            }
            double e = rel_error(rp_sample_ln(x), log(x));
            if (e > worst_ln)
                worst_ln = e;
            CHECKF(e < 1e-9, "ln(%a) = %.17g, libm %.17g", x, rp_sample_ln(x), log(x));
        }
        double r = ldexp(u, (int)(state % 52) - 40); /* 2^-93 .. 2^12 */
        double e = rel_error(rp_sample_one_minus_exp_neg(r), -expm1(-r));
        if (e > worst_exp)
            worst_exp = e;
        CHECKF(e < 1e-9, "1 - e^-%a = %.17g, libm %.17g", r, rp_sample_one_minus_exp_neg(r), -expm1(-r));
    }
    /* Edges: the smallest draw, the switch of the small-x series, the end of the range. */
    CHECK(rel_error(rp_sample_ln(0x1p-53), log(0x1p-53)) < 1e-12);
    CHECK(rel_error(rp_sample_ln(0x1p-1074), log(0x1p-1074)) < 1e-12);
    const double edges[] = {1e-3, 1e-3 * (1 - 0x1p-52), 0.5, 1, 30, 700, 745, 800, 1e300};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        CHECKF(rel_error(rp_sample_one_minus_exp_neg(edges[i]), -expm1(-edges[i])) < 1e-9, "1 - e^-%g", edges[i]);
    CHECK(rp_sample_exp_neg(-746) == 0 && rp_sample_exp_neg(0) == 1);
    printf("worst relative error: ln %.3g, 1 - e^-x %.3g\n", worst_ln, worst_exp);
    TEST_MAIN_END();
}
