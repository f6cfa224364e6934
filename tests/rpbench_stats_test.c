/* rpbench's statistics (tools/rpbench_stats.h): the medians every table shows and the paired
 * counts of its missed-target lines. Failed runs (values < 0) must never count. */
#include <math.h>

#include "testing.h"
#include "tools/rpbench_stats.h"

static void test_median(void)
{
    const double odd[] = {5, 1, 4, 2, 3};
    CHECK(rpb_median(odd, 5) == 3);
    const double even[] = {10, 40, 20, 30};
    CHECK(rpb_median(even, 4) == 25);
    /* Failed runs are left out, not read as 0 or as the fastest run. */
    const double some_failed[] = {-1, 7, -1, 9, 8};
    CHECK(rpb_median(some_failed, 5) == 8);
    const double none[] = {-1, -1};
    CHECK(rpb_median(none, 2) < 0);
    CHECK(rpb_median(odd, 0) < 0);
    /* Only the first n values. */
    CHECK(rpb_median(odd, 3) == 4);
}

static void test_paired_ahead(void)
{
    int pairs = -1;
    /* Lower is better: rampart ahead in rounds 0 and 2; round 1 is a tie, not ahead. */
    const double r[] = {10, 20, 30, 40};
    const double p[] = {11, 20, 31, 39};
    CHECK(rpb_paired_ahead(r, p, 4, 0, &pairs) == 2 && pairs == 4);
    /* Rates: higher is better, so the same figures give rampart round 3 only. */
    CHECK(rpb_paired_ahead(r, p, 4, 1, &pairs) == 1 && pairs == 4);
    /* A round where either run failed is no pair. */
    const double rf[] = {10, -1, 30, 40};
    const double pf[] = {11, 20, -1, 41};
    CHECK(rpb_paired_ahead(rf, pf, 4, 0, &pairs) == 2 && pairs == 2);
    /* Rounds past n are not read. */
    CHECK(rpb_paired_ahead(r, p, 1, 0, &pairs) == 1 && pairs == 1);
    CHECK(rpb_paired_ahead(r, p, 0, 0, &pairs) == 0 && pairs == 0);
    /* The median ratio and the paired count measure different things, and the driver prints
     * both: a better median (0.9) from 3 rounds of 5, a worse one (1.25) from 2 of 5. */
    const double rm[] = {9, 9, 9, 50, 50};
    const double pm[] = {10, 10, 10, 8, 8};
    CHECK(rpb_median(rm, 5) / rpb_median(pm, 5) == 0.9);
    CHECK(rpb_paired_ahead(rm, pm, 5, 0, &pairs) == 3 && pairs == 5);
    const double rn[] = {9, 9, 50, 50, 50};
    const double pn[] = {10, 10, 40, 40, 40};
    CHECK(rpb_median(rn, 5) / rpb_median(pn, 5) == 1.25);
    CHECK(rpb_paired_ahead(rn, pn, 5, 0, &pairs) == 2 && pairs == 5);
}

static void test_range_geomean(void)
{
    double lo, hi;
    const double v[] = {5, -1, 2, 9, 4};
    CHECK(rpb_range(v, 5, &lo, &hi) == 0 && lo == 2 && hi == 9);
    CHECK(rpb_range(v, 1, &lo, &hi) == 0 && lo == 5 && hi == 5);
    const double none[] = {-1, -1};
    CHECK(rpb_range(none, 2, &lo, &hi) < 0 && lo < 0 && hi < 0);
    const double g[] = {1, 4, -1, 16};
    CHECK(fabs(rpb_geomean(g, 4) - 4) < 1e-9);
    CHECK(rpb_geomean(none, 2) < 0);
}

int main(void)
{
    test_median();
    test_range_geomean();
    test_paired_ahead();
    TEST_MAIN_END();
}
