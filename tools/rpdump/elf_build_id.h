/* Reads the GNU build-id of an ELF file on disk, to tell whether the file a symboliser would
 * read is the one that ran in the dumped process. The file is untrusted: every size and
 * offset is bounded before use. */
#ifndef RPDUMP_ELF_BUILD_ID_H
#define RPDUMP_ELF_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>

/* Returns the build-id's length (copied into out, at most cap bytes), 0 if the file has none,
 * or -1 if it is not a readable 64-bit little-endian ELF regular file. */
int elf_read_build_id(const char *path, uint8_t *out, size_t cap);

#endif
