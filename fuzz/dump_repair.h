/* Checksum repair for the dump_parser target. Every byte of a dump is covered by a CRC-32C
 * (debug/DUMP_FORMAT.md), so almost any mutation of a real dump is refused at the first
 * checksum and the parser's later checks would never see it. The harness parses each input
 * as given, then a copy whose checksums (and size fields) this rewrites, so mutated records
 * reach the structural and semantic checks behind the CRCs. */
#ifndef RP_FUZZ_DUMP_REPAIR_H
#define RP_FUZZ_DUMP_REPAIR_H

#include <stddef.h>
#include <stdint.h>

/* In place, on arbitrary bytes: the header's CRC; the footer's file size; the table offset,
 * moved to sit right before the footer when the table no longer fits where it was; the CRC
 * of every section whose range lies inside the buffer; the table's CRC; the footer's CRC.
 * Returns 1 if any byte changed. */
int dump_repair_checksums(uint8_t *buf, size_t len);

#endif
