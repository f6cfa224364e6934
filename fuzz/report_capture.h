/* Reports of the debug flavour captured in-process, both ways a program can see them: the
 * structured report delivered to the report function (rp_set_report_fn, with its history
 * from rp_report_get_history) and the text the runtime prints to its sink (report_path,
 * pointed at an in-memory file). A harness can then require exactly one report, of the
 * right kind, naming the right address, block and offset, and check that the printed text
 * says the same. */
#ifndef RP_FUZZ_REPORT_CAPTURE_H
#define RP_FUZZ_REPORT_CAPTURE_H

#include <stddef.h>

#include "rampart.h"
#include "rampart_debug.h"

typedef struct captured_report {
    rp_error_kind kind;
    const void *address;
    const void *block;
    long offset;
    int has_history; /* rp_report_get_history answered */
    rp_report_history history;
    char message[200];
} captured_report;

/* The RAMPART_OPTIONS items that send the printed reports to the capture (report_path);
 * call before the runtime reads its options, and put them into RAMPART_OPTIONS. */
const char *capture_sink_options(void);

/* Installs the report function (after the options are set). */
void capture_install(void);

/* Forgets every report and the printed text. */
void capture_reset(void);

/* Reports delivered since the last reset. */
int capture_count(void);

/* The first of them (valid while capture_count() > 0). */
const captured_report *capture_first(void);

/* The text printed since the last reset, NUL-terminated (truncated to a few KiB). */
const char *capture_text(void);

#endif
