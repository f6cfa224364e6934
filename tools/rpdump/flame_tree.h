/* The live bytes of a dump as a tree of stacks, for `flame` (an icicle graph), `sites
 * --folded` (folded stacks for flamegraph.pl and speedscope) and `timeline`'s site names.
 *
 * The root stands for every live block; its children are the outermost frames of the
 * stacks, and each path from the root down is one stack read from the outside in, so a
 * node's bytes are those of every stack passing through it. Frames are named after
 * symbolisation (frame_label.h) and merged by (name, module): two call sites of one function
 * become one node, as in every flame graph. Blocks without a stack hang under the root as
 * one "(no stack)" node, blocks naming a missing stack as "(unknown stack)".
 *
 * Memory: one node per distinct (path, name), bounded by the frames of the dump's stack
 * section; it is counted against what remains of the dump's memory cap. */
#ifndef RPDUMP_FLAME_TREE_H
#define RPDUMP_FLAME_TREE_H

#include <stdio.h>

#include "sites.h"

#define FLAME_ROOT 0u

typedef struct flame_node {
    uint32_t name;         /* index into the tree's names */
    uint32_t parent;       /* the root is its own parent */
    uint32_t first_child;  /* 0 = none (the root is nobody's child) */
    uint32_t next_sibling; /* 0 = none */
    uint32_t depth;        /* the root's is 0 */
    uint64_t bytes, blocks; /* of every stack through the node */
} flame_node;

typedef struct flame_name {
    char *function; /* the frame's label (frame_label.h); printable ASCII */
    char *module;   /* the module's file name ("" when unknown); printable ASCII */
} flame_name;

typedef struct flame_tree {
    flame_node *nodes;
    size_t nnodes, node_cap;
    flame_name *names;
    size_t nnames, name_cap;
    uint32_t *name_slots;  /* open addressing over names: index + 1, 0 = empty */
    size_t name_nslots;
    uint32_t *child_slots; /* open addressing over (parent, name) -> node index + 1 */
    size_t child_nslots;
    unsigned max_depth;
    size_t bytes, limit;   /* memory held, and the most it may hold */
} flame_tree;

/* Builds the tree of the live sites: symbolises every frame of every live stack with sym
 * (which may be NULL: no names), then adds each site's bytes and blocks along its path.
 * Children end up sorted by bytes, largest first (ties by name). Returns 0, or -1 with err
 * (flame_tree_free is needed in both cases). */
int flame_tree_build(flame_tree *t, rpd_dump *d, const live_sites *ls, symbolizer *sym, rpd_error *err);
void flame_tree_free(flame_tree *t);

/* The node's self bytes: its bytes less its children's. */
uint64_t flame_self_bytes(const flame_tree *t, uint32_t node);

/* `sites --folded` (folded_out.c): one line per node with self bytes, "a;b;c BYTES" from
 * the outermost frame to the node (the root is not named). Returns 0, or -1 with err. */
int folded_write(FILE *f, rpd_dump *d, const live_sites *ls, const rpd_options *o, rpd_error *err);

#endif
