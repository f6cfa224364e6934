/* `rpdump sites --folded`: the live bytes by stack in the folded format that flamegraph.pl,
 * inferno and speedscope read: one line per stack, its frames from the outermost to the
 * innermost joined by ';', a space, and the stack's bytes (requested bytes in debug dumps,
 * usable in release ones). Stacks are merged by frame names first (flame_tree.h), so each
 * line is distinct; a frame name never holds ';' (it becomes '?'). */
#include <string.h>

#include "flame_tree.h"
#include "frame_label.h"

static void put_path(FILE *f, const flame_tree *t, const uint32_t *path, unsigned depth)
{
    for (unsigned i = 0; i < depth; i++) {
        char clean[1024];
        if (i)
            fputc(';', f);
        fputs(label_clean(clean, sizeof clean, t->names[t->nodes[path[i]].name].function, ";"), f);
    }
}

int folded_write(FILE *f, rpd_dump *d, const live_sites *ls, const rpd_options *o, rpd_error *err)
{
    flame_tree t;
    symbolizer *sym = sym_new(o->symbolizer);
    int rc = flame_tree_build(&t, d, ls, sym, err);
    sym_free(sym);
    if (rc != 0) {
        flame_tree_free(&t);
        return -1;
    }
    uint32_t path[RPD_MAX_FRAMES + 2];
    uint32_t n = t.nodes[FLAME_ROOT].first_child;
    while (n) {
        unsigned depth = t.nodes[n].depth; /* 1 .. RPD_MAX_FRAMES */
        path[depth - 1] = n;
        uint64_t self = flame_self_bytes(&t, n);
        if (self) {
            put_path(f, &t, path, depth);
            fprintf(f, " %llu\n", (unsigned long long)self);
        }
        if (t.nodes[n].first_child) {
            n = t.nodes[n].first_child;
            continue;
        }
        while (n != FLAME_ROOT && !t.nodes[n].next_sibling)
            n = t.nodes[n].parent;
        n = n == FLAME_ROOT ? 0 : t.nodes[n].next_sibling;
    }
    flame_tree_free(&t);
    return 0;
}
