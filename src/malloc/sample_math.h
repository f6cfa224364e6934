/* The two functions of the heap profiler's Poisson sampling (profile.h): the natural log of a
 * uniform draw (exponential intervals) and 1 - e^-x (a block's sampling probability).
 *
 * Why not libm's: linking libm into the drop-in maps it into every program that preloads
 * rampart and faults in its symbol tables at start-up, for two calls made only by sampled
 * allocations (docs/BENCHMARKS.md, "Libraries the drop-in loads"). These are accurate to about
 * 1e-9 relative error over their domains, far below what sampling can notice;
 * tests/sample_math_test.c compares them with libm's over their whole ranges. Neither is on a
 * hot path: each runs once per sampling event. */
#ifndef RP_SAMPLE_MATH_H
#define RP_SAMPLE_MATH_H

#include <stdint.h>
#include <string.h>

#define RP_LN2 0.69314718055994530942

/* ln(x) for x > 0 and finite (x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) by the series
 * of atanh: ln(m) = 2 * (t + t^3/3 + t^5/5 + ...), t = (m - 1) / (m + 1), |t| < 0.172). */
static inline double rp_sample_ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff);
    if (e == 0) { /* subnormal: scale into the normal range first */
        x *= 0x1p54;
        memcpy(&bits, &x, sizeof bits);
        e = (int)((bits >> 52) & 0x7ff) - 54;
    }
    e -= 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.41421356237309504880) {
        m *= 0.5;
        e++;
    }
    double t = (m - 1) / (m + 1), t2 = t * t;
    double series = 1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 * (1.0 / 13))))));
    return 2 * t * series + e * RP_LN2;
}

/* e^x for x <= 0 (x = k * ln2 + r, |r| <= ln2 / 2; e^r by its Taylor series to r^13); 0 below
 * the doubles' range. */
static inline double rp_sample_exp_neg(double x)
{
    if (x < -745)
        return 0;
    double kf = x * (1 / RP_LN2) - 0.5;
    int k = (int)kf; /* rounds towards zero: kf < 0, so this is the nearest integer to x/ln2 */
    double r = x - k * RP_LN2;
    double p = 1.0 / 6227020800; /* 1/13! */
    static const double inv_fact[13] = {1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,
                                        1.0 / 120,  1.0 / 720,   1.0 / 5040,   1.0 / 40320,   1.0 / 362880,
                                        1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};
    for (int i = 12; i >= 0; i--)
        p = p * r + inv_fact[i];
    /* p * 2^k, in two steps so that 2^k itself never leaves the normal range. */
    int k1 = k / 2, k2 = k - k1;
    uint64_t b1 = (uint64_t)(k1 + 1023) << 52, b2 = (uint64_t)(k2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return p * s1 * s2;
}

/* 1 - e^-x for x >= 0, without the cancellation of the subtraction for small x. */
static inline double rp_sample_one_minus_exp_neg(double x)
{
    if (x < 1e-3) /* x - x^2/2 + x^3/6 - x^4/24 + x^5/120: the next term is below 2e-21 */
        return x * (1 - x * (0.5 - x * (1.0 / 6 - x * (1.0 / 24 - x * (1.0 / 120)))));
    return 1 - rp_sample_exp_neg(-x);
}

#endif
