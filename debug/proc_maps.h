/* The process's memory map, read from /proc/self/maps without allocating (scratch memory
 * from the OS): which ranges are mapped, with what protection, and whether they are backed
 * by a file. For the leak scanner (which ranges may be read, where a thread's stack ends) and
 * the reports (what an address is).
 *
 * Invariants of a filled rp_maps: ranges are sorted by lo, do not overlap, and lo < hi. */
#ifndef RP_DEBUG_PROC_MAPS_H
#define RP_DEBUG_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>

enum {
    RP_MAP_READ = 1,
    RP_MAP_WRITE = 2,
    RP_MAP_EXEC = 4,
    RP_MAP_SHARED = 8,
};

typedef struct rp_map_range {
    uintptr_t lo, hi;
    unsigned flags;  /* RP_MAP_* */
    int file;        /* backed by a file (its inode is not 0) */
    char name[48];   /* the path's last 47 characters, "[stack]", "[heap]", or "" */
} rp_map_range;

typedef struct rp_maps {
    rp_map_range *ranges;
    size_t n;
    size_t map_len; /* scratch bytes behind ranges */
} rp_maps;

/* Reads /proc/self/maps into *m. 0, or -1 (no /proc, or no memory; *m is then empty). */
int rp_maps_read(rp_maps *m);

/* The range holding addr, or NULL. */
const rp_map_range *rp_maps_find(const rp_maps *m, uintptr_t addr);

/* Gives back the scratch memory (m may be empty). */
void rp_maps_free(rp_maps *m);

#endif
