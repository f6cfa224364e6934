/* rpd_parse_buffer: every reading path over one in-memory dump, for the fuzz target and the
 * malformed-input tests. */
#include <stdlib.h>
#include <string.h>

#include "dump_check.h"
#include "dump_parser.h"
#include "stack_table.h"

int rpd_parse_buffer(const uint8_t *data, size_t len, size_t mem_cap, size_t *violations, rpd_error *err)
{
    rpd_source src;
    rpd_source_memory(&src, data, len);
    rpd_dump *d = calloc(1, sizeof *d);
    if (!d)
        return rpd_fail(err, 0, "out of memory");
    int rc = rpd_open(d, &src, mem_cap, err);
    if (rc == 0) {
        /* Frames are loaded and looked up in the mappings, as sites and diff do. */
        rpd_stack_table t;
        rc = rpd_stack_table_load(&t, d, 1, err);
        for (size_t i = 0; rc == 0 && i < t.count; i++) {
            unsigned n;
            const uint64_t *frames = rpd_stack_frames(&t, i, &n);
            for (unsigned k = 0; k < n; k++)
                (void)rpd_mapping_of(d, frames[k]);
        }
        rpd_stack_table_free(&t);
    }
    if (rc == 0) {
        long found = rpd_check(d, NULL, NULL, NULL, 0, err);
        if (found < 0)
            rc = -1;
        else if (violations)
            *violations = (size_t)found;
    }
    rpd_close(d);
    free(d);
    return rc;
}
