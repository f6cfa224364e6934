/* Internal part of the malloc drop-in's statistics (the public part is rampart_malloc.h). */
#ifndef RP_MALLOC_STATS_H
#define RP_MALLOC_STATS_H

/* rp_malloc_stats_print to a file descriptor (the at-exit report of option stats=1 writes to
 * a copy of stderr taken at set-up, since programs often close stderr before exiting). */
void rp_malloc_stats_print_fd(int fd);

/* Counts a free() of a pointer rampart never handed out (reported or ignored; error path). */
void rp_malloc_count_foreign_free(void);

/* rp_malloc_stats_json to a file descriptor (the at-exit report with stats_json=1). */
void rp_malloc_stats_json_fd(int fd);

#endif
