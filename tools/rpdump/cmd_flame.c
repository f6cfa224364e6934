/* rpdump flame -o FILE.svg: the live bytes by allocation stack as an icicle graph.
 *
 * The stack tree (flame_tree.h) drawn top down: the root bar ("all") spans the picture, each
 * frame's bar sits under its caller's and is as wide as the bytes of the stacks through it,
 * children ordered largest first. Every bar carries an SVG <title>, which a browser shows on
 * hover: the frame, its module, its bytes and share and its blocks. Bars narrower than
 * MIN_BAR_PX are left out with everything under them (the JSON's "omitted" counts them all),
 * which bounds the document by the picture's width, not by the dump. Colours: warm hues by
 * module, lightness by function, so one library's frames look alike. */
#include <string.h>

#include "flame_tree.h"
#include "svg_out.h"
#include "text_out.h"

#define ROW_PX 17
#define BAR_PX 16
#define MARGIN 10
#define TOP_PX 58       /* title and subtitle above the bars */
#define FOOT_PX 24
#define MIN_BAR_PX 0.5

static uint64_t hash_text(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ^ (h >> 33);
}

static const char *bar_colour(char buf[8], const flame_tree *t, uint32_t node)
{
    const flame_name *n = &t->names[t->nodes[node].name];
    if (node == FLAME_ROOT)
        return "#c8c8c8";
    if (!n->module[0])
        return n->function[0] == '(' ? "#b8c4d8" : svg_hsl(buf, 20, 0.25, 0.72); /* special sites; raw pcs */
    uint64_t m = hash_text(n->module), f = hash_text(n->function);
    return svg_hsl(buf, (double)(m % 56), 0.75 + (double)(m >> 8 & 15) / 100, 0.58 + (double)(f % 17) / 100);
}

typedef struct flame_drawing {
    FILE *svg;
    const flame_tree *t;
    double scale;          /* pixels per byte */
    unsigned width;        /* of the bars' area */
    const char *bytes_are;
    uint64_t drawn, omitted;
} flame_drawing;

static void draw_bar(flame_drawing *w, uint32_t node, double x, double width)
{
    const flame_tree *t = w->t;
    const flame_node *n = &t->nodes[node];
    const flame_name *name = &t->names[n->name];
    double y = TOP_PX + (double)n->depth * ROW_PX;
    char size[32], colour[8];
    double share = t->nodes[FLAME_ROOT].bytes ? 100.0 * (double)n->bytes / (double)t->nodes[FLAME_ROOT].bytes : 0;
    fputs("<g><title>", w->svg);
    svg_text(w->svg, name->function, 0);
    if (name->module[0]) {
        fputs(" (", w->svg);
        svg_text(w->svg, name->module, 0);
        fputc(')', w->svg);
    }
    fprintf(w->svg, "&#10;%s %s (%llu bytes), %.2f%%, %llu blocks</title>", text_size(size, sizeof size, n->bytes),
            w->bytes_are, (unsigned long long)n->bytes, share, (unsigned long long)n->blocks);
    fprintf(w->svg, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>", x, y, width,
            BAR_PX, bar_colour(colour, t, node));
    size_t fit = svg_chars_fit(width - 6);
    if (fit >= 3) {
        fprintf(w->svg, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + 12);
        svg_text(w->svg, name->function, fit);
        fputs("</text>", w->svg);
    }
    fputs("</g>\n", w->svg);
    w->drawn++;
}

/* Draws every bar at least MIN_BAR_PX wide, depth first; x of each level's next child is
 * kept per depth. */
static void draw_tree(flame_drawing *w)
{
    const flame_tree *t = w->t;
    double next_x[RPD_MAX_FRAMES + 3];
    uint32_t n = FLAME_ROOT;
    next_x[0] = MARGIN;
    while (1) {
        const flame_node *node = &t->nodes[n];
        double x = next_x[node->depth], width = (double)node->bytes * w->scale;
        next_x[node->depth] = x + width;
        int drawn = width >= MIN_BAR_PX;
        if (drawn)
            draw_bar(w, n, x, width);
        if (drawn && node->first_child) {
            next_x[node->depth + 1] = x;
            n = node->first_child;
            continue;
        }
        while (n != FLAME_ROOT && !t->nodes[n].next_sibling)
            n = t->nodes[n].parent;
        if (n == FLAME_ROOT)
            break;
        n = t->nodes[n].next_sibling;
    }
}

int cmd_flame(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    live_sites ls;
    flame_tree t;
    memset(&t, 0, sizeof t);
    int rc = live_sites_load(&ls, d, o, &err);
    if (rc == 0) {
        symbolizer *sym = sym_new(o->symbolizer);
        rc = flame_tree_build(&t, d, &ls, sym, &err);
        sym_free(sym);
    }
    if (rc != 0) {
        flame_tree_free(&t);
        live_sites_free(&ls);
        return rpd_report_error(o, in->path, &err);
    }
    unsigned width = o->width + 2 * MARGIN;
    double height = TOP_PX + (double)(t.max_depth + 1) * ROW_PX + FOOT_PX;
    FILE *svg = svg_open(o->output);
    if (!svg) {
        flame_tree_free(&t);
        live_sites_free(&ls);
        return RPDUMP_BAD_DUMP;
    }
    const char *bytes_are = site_bytes_are(d, o);
    svg_begin(svg, width, height, "g text{font-size:11px;fill:#000;pointer-events:none}g:hover rect{stroke:#000;stroke-width:1}");
    char clean[512], exe[RPD_EXE_BYTES], total[32];
    fprintf(svg, "<text x=\"%d\" y=\"22\" class=\"t\">Live memory by allocation stack: ", MARGIN);
    svg_text(svg, text_clean(clean, sizeof clean, in->path), 0);
    fprintf(svg, "</text>\n<text x=\"%d\" y=\"42\" class=\"s\">pid %llu (", MARGIN, (unsigned long long)d->process.pid);
    svg_text(svg, text_clean(exe, sizeof exe, d->process.exe), 0);
    fprintf(svg, "), %s %s in %llu blocks", text_size(total, sizeof total, t.nodes[FLAME_ROOT].bytes), bytes_are,
            (unsigned long long)t.nodes[FLAME_ROOT].blocks);
    if (site_from_samples(d, o))
        fprintf(svg, " (from %llu samples)", (unsigned long long)ls.total.samples);
    fprintf(svg, "; widths proportional to bytes, callers above callees; hover a bar for details</text>\n");
    flame_drawing w = {svg, &t, 0, o->width, bytes_are, 0, 0};
    if (t.nodes[FLAME_ROOT].bytes)
        w.scale = (double)o->width / (double)t.nodes[FLAME_ROOT].bytes;
    else
        fprintf(svg, "<text x=\"%d\" y=\"%d\">no live blocks in the selected heaps and states</text>\n", MARGIN,
                TOP_PX + 12);
    if (t.nodes[FLAME_ROOT].bytes)
        draw_tree(&w);
    w.omitted = t.nodes[FLAME_ROOT].bytes ? t.nnodes - w.drawn : 0;
    fprintf(svg, "<text x=\"%d\" y=\"%.0f\" class=\"s\">%llu bars drawn; %llu narrower than %.1f px left out</text>\n",
            MARGIN, height - 8, (unsigned long long)w.drawn, (unsigned long long)w.omitted, MIN_BAR_PX);
    svg_end(svg);
    rc = svg_close(svg, o->output);
    if (rc == 0) {
        if (o->json) {
            json_out j;
            rpd_json_begin(&j, d, in->path);
            json_kv_string(&j, "output", o->output);
            json_kv_u64(&j, "width", width);
            json_kv_u64(&j, "height", (uint64_t)height);
            json_kv_string(&j, "bytes_are", bytes_are);
            json_kv_u64(&j, "total_bytes", t.nodes[FLAME_ROOT].bytes);
            json_kv_u64(&j, "total_blocks", t.nodes[FLAME_ROOT].blocks);
            json_kv_u64(&j, "sites", ls.live);
            json_kv_u64(&j, "samples", ls.total.samples);
            json_kv_u64(&j, "nodes", t.nnodes);
            json_kv_u64(&j, "depth", t.max_depth);
            json_kv_u64(&j, "drawn", w.drawn);
            json_kv_u64(&j, "omitted", w.omitted);
            json_object_end(&j);
            json_finish(&j);
        } else {
            printf("wrote %s: %zu sites, %llu of %zu bars drawn, %u x %.0f pixels\n",
                   text_clean(clean, sizeof clean, o->output), ls.live, (unsigned long long)w.drawn, t.nnodes, width,
                   height);
        }
    }
    flame_tree_free(&t);
    live_sites_free(&ls);
    return rc == 0 ? RPDUMP_OK : RPDUMP_BAD_DUMP;
}
