/* Allocation sites matched across dumps, for `diff` and `timeline`.
 *
 * Stack ids are only meaningful inside one process, and addresses move with ASLR, so a stack
 * is identified by its frames normalised to (module, offset in the module): a module by its
 * build-id (or its path when it has none), the offset as pc - load bias. Two dumps of the
 * same program, from one run or two, then agree on every site. A group is one distinct
 * normalised stack; groups 0 and 1 are the special sites SITE_NO_STACK and
 * SITE_UNKNOWN_STACK (sites.h), the same numbers as in a dump's site array.
 *
 * Each group keeps the raw pcs and stack id of the last dump added that holds it, so its
 * frames can be symbolised and printed with that dump. Memory: one group per distinct
 * normalised stack of all the dumps, never per block. */
#ifndef RPDUMP_SITE_GROUPS_H
#define RPDUMP_SITE_GROUPS_H

#include "sites.h"

typedef struct norm_frame {
    uint64_t module; /* 0 = in no dumped mapping (offset is then the pc); 64 bits: no padding,
                        so frames compare with memcmp */
    uint64_t offset;
} norm_frame;

typedef struct site_group {
    size_t first;      /* index of its first frame in frames[] and pcs[] */
    unsigned nframes;
    size_t dump;       /* the last dump added holding the stack (its index in site_groups_add) */
    uint32_t stack_id; /* the stack's id in that dump */
} site_group;

typedef struct site_groups {
    char **module_keys; /* "bid:HEX" or "path:PATH", one per distinct module */
    size_t nmodules, module_cap;
    size_t *module_slots; /* module number (1..) */
    size_t module_nslots;
    site_group *groups;
    size_t ngroups, group_cap;
    norm_frame *frames;
    uint64_t *pcs;      /* the frames as recorded in group.dump */
    size_t nframes, frame_cap;
    size_t *slots;      /* group index + 1; 0 = empty */
    size_t nslots;
} site_groups;

/* Starts with the two special groups. Returns 0 or -1 (out of memory). */
int site_groups_init(site_groups *g);
void site_groups_free(site_groups *g);

/* Adds the stacks of a dump (its stack table with frames), numbered `index` by the caller,
 * in increasing order. *group_of_stack receives a new array (free it) giving the group of
 * each stack of the table. Returns 0 or -1 (out of memory). */
int site_groups_add(site_groups *g, size_t index, const rpd_dump *d, const rpd_stack_table *t,
                    size_t **group_of_stack);

/* The group of site `site` of a dump (sites.h numbering) given its group_of_stack. */
static inline size_t site_group_of(const size_t *group_of_stack, size_t site)
{
    return site < SITE_FIRST_STACK ? site : group_of_stack[site - SITE_FIRST_STACK];
}

/* The raw pcs of a group, as recorded in dump g->groups[group].dump (NULL for the special
 * groups). */
static inline const uint64_t *site_group_pcs(const site_groups *g, size_t group, unsigned *n)
{
    *n = group < SITE_FIRST_STACK ? 0 : g->groups[group].nframes;
    return group < SITE_FIRST_STACK ? NULL : g->pcs + g->groups[group].first;
}

/* Whether two dumps come from one program: with the main executables' build-ids in both,
 * those decide (one build may be installed under two paths), else the executables' paths.
 * When not, a sentence saying so goes to warning (len bytes; "" otherwise). */
int site_groups_same_program(const rpd_dump *a, const rpd_dump *b, char *warning, size_t len);

#endif
