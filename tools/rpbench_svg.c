#include "rpbench_svg.h"

#include <math.h>
#include <stdio.h>

#define WIDTH 1200
#define PLOT_H 260
#define MARGIN_L 70
#define MARGIN_R 20
#define TITLE_H 48
#define XLABEL_H 70
#define CELL_H 16

static const char *const colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NCOLOURS (int)(sizeof colours / sizeof colours[0])

/* Escapes the few characters XML cares about. */
static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
}

static void text(FILE *f, double x, double y, int size, const char *anchor, const char *extra, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\" %s>", x, y, size, anchor,
            extra ? extra : "");
    put_text(f, s);
    fprintf(f, "</text>\n");
}

/* The y range of a panel's values (lo and hi included). */
static void y_range(const rpb_panel *p, double *ymin, double *ymax)
{
    *ymin = INFINITY;
    *ymax = 0;
    for (int s = 0; s < p->nseries; s++)
        for (int i = 0; i < p->npoints; i++) {
            const rpb_series *se = &p->series[s];
            double v[3] = {se->mid[i], se->lo ? se->lo[i] : 0, se->hi ? se->hi[i] : 0};
            for (int k = 0; k < 3; k++)
                if (v[k] > 0) {
                    *ymin = v[k] < *ymin ? v[k] : *ymin;
                    *ymax = v[k] > *ymax ? v[k] : *ymax;
                }
        }
}

typedef struct axis {
    int log;
    double lo, hi; /* in axis units (log10 when log) */
    double top, height;
} axis;

static double y_of(const axis *ax, double v)
{
    double u = ax->log ? log10(v) : v;
    return ax->top + ax->height - (u - ax->lo) / (ax->hi - ax->lo) * ax->height;
}

/* Height of a panel of series. */
static int series_height(void) { return TITLE_H + PLOT_H + XLABEL_H; }

static int heat_height(const rpb_panel *p) { return TITLE_H + 30 + p->nrows * CELL_H + 20; }

static void series_panel(FILE *f, const rpb_panel *p, int y0)
{
    double ymin, ymax;
    y_range(p, &ymin, &ymax);
    int pw = WIDTH - MARGIN_L - MARGIN_R;
    double ox = MARGIN_L;
    axis ax = {p->log_y, 0, 1, y0 + TITLE_H, PLOT_H};
    text(f, ox, y0 + 22, 15, "start", "font-weight=\"bold\"", p->title);
    for (int s = 0; s < p->nseries; s++) { /* legend */
        double lx = ox + 8 + s * 150;
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>\n", lx, y0 + 32,
                colours[s % NCOLOURS]);
        text(f, lx + 18, y0 + 38, 11, "start", NULL, p->series[s].name);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", ox, ax.top,
            pw, PLOT_H);
    if (!(ymax > 0)) {
        text(f, ox + pw / 2.0, ax.top + PLOT_H / 2.0, 12, "middle", NULL, "not measured");
        return;
    }
    if (ax.log) {
        ax.lo = floor(log10(ymin));
        ax.hi = ceil(log10(ymax));
        if (ax.hi <= ax.lo)
            ax.hi = ax.lo + 1;
        for (double d = ax.lo; d <= ax.hi; d += 1) {
            double y = y_of(&ax, pow(10, d));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ox, y, ox + pw, y);
            char buf[32];
            snprintf(buf, sizeof buf, "%g", pow(10, d));
            text(f, ox - 4, y + 3, 10, "end", NULL, buf);
        }
    } else {
        ax.lo = 0;
        ax.hi = ymax * 1.1;
        for (int k = 0; k <= 4; k++) {
            double v = ax.hi * k / 4, y = y_of(&ax, v > 0 ? v : 0);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ox, y, ox + pw, y);
            char buf[32];
            snprintf(buf, sizeof buf, "%.3g", v);
            text(f, ox - 4, y + 3, 10, "end", NULL, buf);
        }
    }
    double step = (double)pw / p->npoints;
    for (int i = 0; i < p->npoints; i++) {
        double x = ox + step * (i + 0.5);
        char extra[96];
        snprintf(extra, sizeof extra, "transform=\"rotate(%d %.1f %.1f)\"", p->npoints > 12 ? -35 : 0, x,
                 ax.top + PLOT_H + 14);
        text(f, x, ax.top + PLOT_H + 14, 10, p->npoints > 12 ? "end" : "middle", extra,
             p->xticks ? p->xticks[i] : "");
    }
    text(f, ox + pw / 2.0, y0 + series_height() - 6, 11, "middle", NULL, p->xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 14 %.1f)\"", ax.top + PLOT_H / 2.0);
    text(f, 14, ax.top + PLOT_H / 2.0, 11, "middle", rot, p->ylabel);
    for (int s = 0; s < p->nseries; s++) {
        const rpb_series *se = &p->series[s];
        const char *col = colours[s % NCOLOURS];
        /* Whiskers sit side by side within a point's slot; joined series share its centre. */
        double off = p->joined ? 0 : (s - (p->nseries - 1) / 2.0) * step * 0.7 / (p->nseries > 1 ? p->nseries : 1);
        if (p->joined && se->lo && se->hi) { /* the band of the range */
            fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" points=\"", col);
            for (int i = 0; i < p->npoints; i++)
                if (se->lo[i] > 0 && se->hi[i] > 0)
                    fprintf(f, "%.1f,%.1f ", ox + step * (i + 0.5), y_of(&ax, se->hi[i]));
            for (int i = p->npoints - 1; i >= 0; i--)
                if (se->lo[i] > 0 && se->hi[i] > 0)
                    fprintf(f, "%.1f,%.1f ", ox + step * (i + 0.5), y_of(&ax, se->lo[i]));
            fprintf(f, "\"/>\n");
        }
        if (p->joined) {
            fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"", col);
            for (int i = 0; i < p->npoints; i++)
                if (se->mid[i] > 0)
                    fprintf(f, "%.1f,%.1f ", ox + step * (i + 0.5), y_of(&ax, se->mid[i]));
            fprintf(f, "\"/>\n");
        }
        for (int i = 0; i < p->npoints; i++) {
            if (!(se->mid[i] > 0))
                continue;
            double x = ox + step * (i + 0.5) + off;
            if (!p->joined && se->lo && se->hi && se->lo[i] > 0 && se->hi[i] > 0)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                        x, y_of(&ax, se->lo[i]), x, y_of(&ax, se->hi[i]), col);
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"/>\n", x, y_of(&ax, se->mid[i]),
                    p->joined ? 2 : 3, col);
        }
    }
}

/* Green below 1, white at 1, red above (log scale, saturating at 4x either way). */
static void heat_colour(double v, char *buf, size_t len)
{
    double t = log2(v) / 2;
    t = t > 1 ? 1 : t < -1 ? -1 : t;
    int r = 255, g = 255, b = 255;
    if (t > 0) {
        g = (int)(255 * (1 - t));
        b = g;
    } else {
        r = (int)(255 * (1 + t));
        b = r;
    }
    snprintf(buf, len, "#%02x%02x%02x", r, g, b);
}

static void heat_panel(FILE *f, const rpb_panel *p, int y0)
{
    text(f, MARGIN_L, y0 + 22, 15, "start", "font-weight=\"bold\"", p->title);
    double cw = (double)(WIDTH - MARGIN_L - MARGIN_R) / p->ncols, top = y0 + TITLE_H + 20;
    text(f, MARGIN_L + (WIDTH - MARGIN_L - MARGIN_R) / 2.0, y0 + TITLE_H - 6, 11, "middle", NULL, p->xlabel);
    for (int c = 0; c < p->ncols; c++)
        text(f, MARGIN_L + cw * (c + 0.5), top - 4, 10, "middle", NULL, p->col_labels[c]);
    for (int r = 0; r < p->nrows; r++) {
        double y = top + r * CELL_H;
        text(f, MARGIN_L - 4, y + CELL_H - 4, 10, "end", NULL, p->row_labels[r]);
        for (int c = 0; c < p->ncols; c++) {
            double v = p->values[r * p->ncols + c];
            char col[16] = "#eeeeee", val[16] = "";
            if (v > 0) {
                heat_colour(v, col, sizeof col);
                snprintf(val, sizeof val, "%.2f", v);
            }
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#fff\"/>\n",
                    MARGIN_L + cw * c, y, cw, CELL_H, col);
            text(f, MARGIN_L + cw * (c + 0.5), y + CELL_H - 4, 9, "middle", NULL, val);
        }
    }
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 14 %.1f)\"", top + p->nrows * CELL_H / 2.0);
    text(f, 14, top + p->nrows * CELL_H / 2.0, 11, "middle", rot, p->ylabel);
}

int rpb_write_svg(const char *path, const char *caption, const rpb_panel *panels, int npanels)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int h = 30;
    for (int i = 0; i < npanels; i++)
        h += panels[i].nrows > 0 ? heat_height(&panels[i]) : series_height();
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n",
            WIDTH, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    text(f, 10, 18, 13, "start", NULL, caption);
    int y = 30;
    for (int i = 0; i < npanels; i++) {
        if (panels[i].nrows > 0) {
            heat_panel(f, &panels[i], y);
            y += heat_height(&panels[i]);
        } else {
            series_panel(f, &panels[i], y);
            y += series_height();
        }
    }
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : -1;
}
