/* The timeline chart: live bytes over a series of dumps, like ms_print's graph. The sites
 * that grew most are stacked from the bottom (the largest growth lowest), "other" on top of
 * them, so the top edge is the total; a dot per dump (hover: its file, time and bytes), the
 * peak marked with a dashed line, byte ticks on the left, seconds (or dump numbers) below,
 * and the legend under the plot, one line per series, so labels never overlap. */
#include <stdlib.h>
#include <string.h>

#include "svg_out.h"
#include "text_out.h"
#include "timeline.h"

#define LEFT 84
#define RIGHT 24
#define TOP 64
#define PLOT_H 300
#define AXIS_H 44 /* x tick labels and the axis title */
#define LEGEND_ROW 18

static const char *const palette[TIMELINE_CHART_SITES] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};
#define OTHER_COLOUR "#d4d4d4"

typedef struct chart {
    FILE *f;
    const timeline *tl;
    double plot_w, x0, span, ymax;
} chart;

static double x_of(const chart *c, size_t i)
{
    const timeline *tl = c->tl;
    if (tl->npoints == 1)
        return c->x0 + c->plot_w / 2;
    double v = tl->by_time ? tl->points[i].elapsed : (double)i;
    return c->x0 + (c->span > 0 ? v / c->span : 0) * c->plot_w;
}

static double y_of(const chart *c, double bytes) { return TOP + PLOT_H - bytes / c->ymax * PLOT_H; }

static void axes(chart *c)
{
    FILE *f = c->f;
    const timeline *tl = c->tl;
    double step = svg_tick_step(c->ymax, 6, 1);
    for (double v = 0; v <= c->ymax * 1.0001; v += step) {
        char size[32];
        double y = y_of(c, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>", LEFT, y,
                c->x0 + c->plot_w, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, y + 4,
                text_size(size, sizeof size, (uint64_t)v));
    }
    if (tl->npoints > 1) {
        double xstep = svg_tick_step(c->span, (int)(c->plot_w / 90), 0);
        if (!tl->by_time && xstep < 1)
            xstep = 1;
        for (double v = 0; v <= c->span * 1.0001; v += xstep) {
            double x = c->x0 + v / c->span * c->plot_w;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>", x, TOP + PLOT_H, x,
                    TOP + PLOT_H + 5);
            if (tl->by_time)
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4g</text>\n", x, TOP + PLOT_H + 18, v);
            else
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", x, TOP + PLOT_H + 18, v);
        }
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"s\">%s</text>\n", c->x0 + c->plot_w / 2,
            TOP + PLOT_H + 36,
            tl->by_time ? "seconds since the first dump" : "dump (the dumps record no distinct times)");
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", LEFT, TOP, LEFT, TOP + PLOT_H);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n", LEFT, TOP + PLOT_H,
            c->x0 + c->plot_w, TOP + PLOT_H);
}

/* One stacked band: between lower[] and lower[] + value(i), which it then adds to lower. */
static void band(chart *c, double *lower, const uint64_t *values, const uint64_t *others, const char *colour,
                 const char *title)
{
    FILE *f = c->f;
    const timeline *tl = c->tl;
    size_t n = tl->npoints;
    double half = tl->npoints == 1 ? 40 : 0; /* a single dump: a bar */
    fprintf(f, "<g><title>");
    svg_text(f, title, 0);
    fprintf(f, "</title><polygon fill=\"%s\" fill-opacity=\"0.9\" stroke=\"white\" stroke-width=\"0.5\" points=\"",
            colour);
    for (size_t i = 0; i < n; i++) {
        double v = values ? (double)values[i] : (double)others[i];
        fprintf(f, "%.1f,%.1f ", x_of(c, i) - (i == 0 ? half : 0), y_of(c, lower[i] + v));
        if (half)
            fprintf(f, "%.1f,%.1f ", x_of(c, i) + half, y_of(c, lower[i] + v));
    }
    for (size_t i = n; i-- > 0;) {
        if (half)
            fprintf(f, "%.1f,%.1f ", x_of(c, i) + half, y_of(c, lower[i]));
        fprintf(f, "%.1f,%.1f ", x_of(c, i) - (i == 0 ? half : 0), y_of(c, lower[i]));
    }
    fprintf(f, "\"/></g>\n");
    for (size_t i = 0; i < n; i++)
        lower[i] += values ? (double)values[i] : (double)others[i];
}

/* "+1.50 MiB", "-640 B" */
static const char *signed_size(char *buf, size_t len, int64_t v)
{
    char size[32];
    snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', text_size(size, sizeof size, v < 0 ? 0 - (uint64_t)v : (uint64_t)v));
    return buf;
}

static void legend_row(FILE *f, double y, const char *colour, const char *text, unsigned width)
{
    fprintf(f, "<rect x=\"%d\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>", LEFT, y - 10, colour);
    fprintf(f, "<text x=\"%d\" y=\"%.0f\">", LEFT + 18, y);
    svg_text(f, text, svg_chars_fit((double)width - LEFT - 18 - RIGHT));
    fputs("</text>\n", f);
}

int timeline_chart_write(const timeline *tl, const rpd_options *o, double *height_out)
{
    size_t shown = tl->nsites < TIMELINE_CHART_SITES ? tl->nsites : TIMELINE_CHART_SITES;
    unsigned width = o->width;
    double height = TOP + PLOT_H + AXIS_H + 14 + (double)(shown + 2) * LEGEND_ROW + 10;
    *height_out = height;
    FILE *f = svg_open(o->output);
    if (!f)
        return -1;
    chart c = {f, tl, (double)width - LEFT - RIGHT, LEFT, 0, 0};
    size_t n = tl->npoints;
    c.span = tl->npoints > 1 ? (tl->by_time ? tl->points[n - 1].elapsed : (double)(n - 1)) : 0;
    if (tl->npoints > 1 && !(c.span > 0))
        c.span = 1;
    for (size_t i = 0; i < n; i++)
        if ((double)tl->points[i].bytes > c.ymax)
            c.ymax = (double)tl->points[i].bytes;
    c.ymax = c.ymax > 0 ? c.ymax * 1.08 : 1024;
    svg_begin(f, width, height, ".pk{font-size:11px;fill:#b00}");

    const timeline_point *first = &tl->points[0], *peak = &tl->points[tl->peak];
    char clean[512], a[32], b[32];
    fprintf(f, "<text x=\"%d\" y=\"22\" class=\"t\">Live memory over %zu dump%s: ", 10, n, n == 1 ? "" : "s");
    svg_text(f, text_clean(clean, sizeof clean, first->in->dump.process.exe), 0);
    fprintf(f, "</text>\n<text x=\"10\" y=\"42\" class=\"s\">%s bytes; peak %s at ", tl->bytes_are,
            text_size(a, sizeof a, peak->bytes));
    if (tl->by_time)
        fprintf(f, "%.3f s", peak->elapsed);
    else
        fprintf(f, "dump %zu", tl->peak);
    fprintf(f, " (");
    svg_text(f, text_clean(clean, sizeof clean, peak->in->path), 0);
    fprintf(f, "); last %s; hover the areas and dots</text>\n", text_size(b, sizeof b, tl->points[n - 1].bytes));
    axes(&c);

    double *base = calloc(n, sizeof *base);
    uint64_t *other = calloc(n, sizeof *other);
    if (!base || !other) {
        free(base);
        free(other);
        fclose(f);
        fprintf(stderr, "rpdump: out of memory drawing the chart\n");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t sum = 0;
        for (size_t k = 0; k < shown; k++)
            sum += tl->sites[k].bytes[i];
        other[i] = tl->points[i].bytes > sum ? tl->points[i].bytes - sum : 0;
    }
    for (size_t k = 0; k < shown; k++) {
        char title[400], g[32], d[32];
        snprintf(title, sizeof title, "%s: %s at the peak (%s since the first dump)", tl->sites[k].label,
                 text_size(g, sizeof g, tl->sites[k].bytes[tl->peak]), signed_size(d, sizeof d, tl->sites[k].growth));
        band(&c, base, tl->sites[k].bytes, NULL, palette[k], title);
    }
    char title[200], g[32];
    snprintf(title, sizeof title, "other sites: %s at the peak", text_size(g, sizeof g, other[tl->peak]));
    band(&c, base, NULL, other, OTHER_COLOUR, title);

    /* the total: a line with a dot per dump */
    fprintf(f, "<polyline fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\" points=\"");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", x_of(&c, i), y_of(&c, (double)tl->points[i].bytes));
    fprintf(f, "\"/>\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<g><title>dump %zu: ", i);
        svg_text(f, text_clean(clean, sizeof clean, tl->points[i].in->path), 0);
        fprintf(f, "&#10;%.3f s, %s live in %llu blocks</title><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/></g>\n",
                tl->points[i].elapsed, text_size(a, sizeof a, tl->points[i].bytes),
                (unsigned long long)tl->points[i].blocks, x_of(&c, i), y_of(&c, (double)tl->points[i].bytes),
                i == tl->peak ? "#b00" : "#222");
    }
    double px = x_of(&c, tl->peak), py = y_of(&c, (double)peak->bytes);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%d\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/>\n", px,
            py - 12, px, TOP + PLOT_H);
    int near_right = px > c.x0 + c.plot_w * 0.7;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"pk\" text-anchor=\"%s\">peak %s</text>\n", px + (near_right ? -4 : 4),
            py - 14, near_right ? "end" : "start", text_size(a, sizeof a, peak->bytes));

    /* legend */
    double y = TOP + PLOT_H + AXIS_H + 14;
    for (size_t k = 0; k < shown; k++, y += LEGEND_ROW) {
        char text[400], d[32];
        snprintf(text, sizeof text, "%s to the peak: %s", signed_size(d, sizeof d, tl->sites[k].growth),
                 tl->sites[k].label);
        legend_row(f, y, palette[k], text, width);
    }
    legend_row(f, y, OTHER_COLOUR, "other sites", width);
    y += LEGEND_ROW;
    fprintf(f, "<line x1=\"%d\" y1=\"%.0f\" x2=\"%d\" y2=\"%.0f\" stroke=\"#222\" stroke-width=\"1.5\"/>", LEFT,
            y - 4, LEFT + 12, y - 4);
    fprintf(f, "<text x=\"%d\" y=\"%.0f\">total live bytes (a dot per dump)</text>\n", LEFT + 18, y);
    svg_end(f);
    free(base);
    free(other);
    return svg_close(f, o->output);
}
