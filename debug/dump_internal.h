/* Internal interfaces of the dump writer (rampart_dump.h is the public one). */
#ifndef RPD_DUMP_INTERNAL_H
#define RPD_DUMP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "debug/dump_encoder.h"
#include "debug/rampart_dump.h"
#include "src/rampart.h"

/* dump_writer.c: writes a dump of `only` (NULL = every heap) to fd. reason: RPD_REASON_*;
 * sequence: the %n of the dump's path. Returns 0 or -1 with errno. */
int rpd_write_dump(int fd, rp_heap *only, unsigned reason, uint64_t sequence);

/* dump_path.c: expands %p (pid), %n (sequence) and %% of pattern into out (len bytes).
 * Returns 0, or -1 (ENAMETOOLONG) when it does not fit. Never allocates. */
int rpd_expand_path(const char *pattern, long pid, uint64_t sequence, char *out, size_t len);

/* dump_path.c: rp_dump_to_path with a reason for the process record. */
int rpd_dump_to_path_for(const char *pattern, unsigned reason, char *path_out, size_t len);

/* dump_mappings.c: writes the MAPPINGS section (executable segments with build-ids). */
void rpd_write_mappings(rpd_encoder *e);

/* The STACKS section: the stack depot in the debug bundle (dump_stacks_depot.c), the sample
 * source's stacks in release (dump_stacks_sampler.c). */
void rpd_write_stacks(rpd_encoder *e);

/* dump_samples.c: the registered sample source (rampart_dump.h), or NULL. */
const rp_dump_sample_source *rpd_sample_source(void);

/* dump_samples.c: writes the SAMPLES section from src (an empty section when NULL). */
void rpd_write_samples(rpd_encoder *e, const rp_dump_sample_source *src);

#endif
