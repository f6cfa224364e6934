/* Leak reports in the format of LeakSanitizer: live blocks grouped by allocation stack,
 * largest total first, with counts (rp_leak_report in rampart_debug.h). A "leak" is a live
 * block — not freed, not quarantined, not marked with rp_set_not_leak, not in a heap marked
 * with rp_heap_set_not_leak; rampart does not scan memory for references. */
#ifndef RP_DEBUG_LEAK_REPORT_H
#define RP_DEBUG_LEAK_REPORT_H

/* atexit handler (option leak_report): a report for every heap, then exit status
 * leak_exit_code if any heap leaked and the option is set. */
void rp_leak_report_at_exit(void);

#endif
