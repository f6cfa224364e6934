#include "rpbench_svg.h"

#include <math.h>
#include <stdio.h>

#define PANEL_W 360
#define PANEL_H 240
#define COLS 4
#define MARGIN_L 56
#define MARGIN_R 12
#define MARGIN_T 28
#define MARGIN_B 34
#define LEGEND_H 40

static const char *const colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NCOLOURS (int)(sizeof colours / sizeof colours[0])

/* Escapes the few characters XML cares about. */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
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

static void panel(FILE *f, const rpb_panel *p, int x0, int y0, int rounds)
{
    double lo = INFINITY, hi = 0;
    for (int s = 0; s < p->nseries; s++)
        for (int r = 0; r < rounds; r++) {
            double v = p->series[s].values[r];
            if (v > 0) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
    if (!(hi > 0))
        return;
    double dlo = floor(log10(lo)), dhi = ceil(log10(hi));
    if (dhi <= dlo)
        dhi = dlo + 1;
    int pw = PANEL_W - MARGIN_L - MARGIN_R, ph = PANEL_H - MARGIN_T - MARGIN_B;
    int ox = x0 + MARGIN_L, oy = y0 + MARGIN_T;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", ox, y0 + 18);
    put_text(f, p->title);
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", ox, oy,
            pw, ph);
    for (double d = dlo; d <= dhi; d += 1) {
        int y = oy + ph - (int)((d - dlo) / (dhi - dlo) * ph);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", ox, y, ox + pw, y);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%g</text>\n", ox - 4, y + 3,
                pow(10, d));
    }
    for (int r = 0; r < rounds; r++) {
        int x = ox + (rounds > 1 ? r * pw / (rounds - 1) : 0);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d</text>\n", x, oy + ph + 12,
                r + 1);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">round</text>\n", ox + pw / 2,
            oy + ph + 26);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">ns per "
            "allocation (log)</text>\n",
            x0 + 12, oy + ph / 2, x0 + 12, oy + ph / 2);
    for (int s = 0; s < p->nseries; s++) {
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"", colours[s % NCOLOURS]);
        for (int r = 0; r < rounds; r++) {
            double v = p->series[s].values[r];
            if (!(v > 0))
                continue;
            int x = ox + (rounds > 1 ? r * pw / (rounds - 1) : 0);
            int y = oy + ph - (int)((log10(v) - dlo) / (dhi - dlo) * ph);
            fprintf(f, "%d,%d ", x, y);
        }
        fprintf(f, "\"/>\n");
    }
}

int rpb_write_svg(const char *path, const char *caption, const rpb_panel *panels, int npanels, int rounds)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rows = (npanels + COLS - 1) / COLS;
    int w = COLS * PANEL_W, h = LEGEND_H + rows * PANEL_H + 10;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", w,
            h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"18\" font-size=\"13\">");
    put_text(f, caption);
    fprintf(f, "</text>\n");
    if (npanels > 0) {
        int x = 10;
        for (int s = 0; s < panels[0].nseries; s++) {
            fprintf(f, "<rect x=\"%d\" y=\"26\" width=\"14\" height=\"4\" fill=\"%s\"/>", x, colours[s % NCOLOURS]);
            fprintf(f, "<text x=\"%d\" y=\"32\" font-size=\"12\">", x + 18);
            put_text(f, panels[0].series[s].name);
            fprintf(f, "</text>\n");
            x += 120;
        }
    }
    for (int i = 0; i < npanels; i++)
        panel(f, &panels[i], (i % COLS) * PANEL_W, LEGEND_H + (i / COLS) * PANEL_H, rounds);
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : -1;
}
