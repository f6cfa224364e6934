/* What the kernel recorded for a mapping of this process, read from /proc/self/smaps (tests
 * of madvise advice: a mapping advised with MADV_HUGEPAGE carries "hg" among its VmFlags). */
#ifndef RAMPART_TESTS_VMA_FLAGS_H
#define RAMPART_TESTS_VMA_FLAGS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 1 if the mapping holding addr has the VmFlag `flag`, 0 if not, -1 if no mapping holds it or
 * smaps cannot be read. */
static inline int vma_has_flag(const void *addr, const char *flag)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int inside = 0, result = -1;
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char dash;
        /* A mapping's first line: "lo-hi perms offset dev inode path". */
        if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
            inside = a >= lo && a < hi;
            continue;
        }
        if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            result = 0;
            for (char *tok = strtok(line + 8, " \n"); tok; tok = strtok(NULL, " \n"))
                if (strcmp(tok, flag) == 0)
                    result = 1;
            break;
        }
    }
    fclose(f);
    return result;
}

/* 1 if the mappings holding the first and the last byte of [lo, hi) both have `flag`, 0 if
 * neither has it, -1 otherwise (advice given to a whole range splits its mappings at its ends,
 * so a range advised as one shows the same answer at both). */
static inline int vma_range_has_flag(uintptr_t lo, uintptr_t hi, const char *flag)
{
    int first = vma_has_flag((const void *)lo, flag), last = vma_has_flag((const void *)(hi - 1), flag);
    return first == last ? first : -1;
}

#endif
