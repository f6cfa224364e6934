/* Error reports of the debug flavour, in the format AddressSanitizer users know:
 *
 *   =================================================================
 *   ==4242==ERROR: rampart: heap-buffer-overflow on address 0x7f0c2a400451 (heap 'default')
 *   trailer cookie of 0x7f0c2a400440 changed at 0x7f0c2a400451 (found 0x41)
 *   0x7f0c2a400451 is located 0 bytes after the 17-byte block [0x7f0c2a400440, 0x7f0c2a400451)
 *   The first corrupted byte is at offset 17 from the start of the block.
 *   Detected in rp_free, called from:
 *       #0 0x55e0c2a01234 in parse_header+0x54 (/srv/app+0x1234)
 *   Block allocated here:
 *       #0 0x55e0c2a01111 in read_packet+0x21 (/srv/app+0x1111)
 *   SUMMARY: rampart: heap-buffer-overflow 0x7f0c2a400451 at offset 17 of the 17-byte block
 *   0x7f0c2a400440 (heap 'default')
 *
 * Faults are recorded under the heap lock (rp_debug_fault) with the block's history, and
 * printed after the lock is dropped by rp_hook_report, which the core calls from
 * rp_report_fault; the stack of the detecting call is captured there. */
#ifndef RP_DEBUG_REPORT_H
#define RP_DEBUG_REPORT_H

#include <stddef.h>

#include "block_meta.h"
#include "src/report.h"

/* Records a fault (if none is recorded yet) with the history in meta (may be NULL). */
void rp_debug_fault(rp_fault *f, rp_error_kind kind, const rp_heap *h, const void *address, const void *block,
                    size_t block_size, const rp_debug_meta *meta, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

#endif
