/* A report function for tests that provoke reports on purpose: counts them by kind and keeps
 * the last address (the release flavour then abandons the operation instead of aborting). */
#ifndef RP_TEST_REPORT_COUNT_H
#define RP_TEST_REPORT_COUNT_H

#include "rampart.h"

static int reports[RP_ERR_KIND_COUNT];
static const void *last_address;

static void count_report(const rp_report *r, void *arg)
{
    (void)arg;
    reports[r->kind]++;
    last_address = r->address;
}

#endif
