/* rpdump map -o heap.svg: a picture of each region by address.
 *
 * Each region is drawn as rows of pixels, left to right, top to bottom, each pixel standing
 * for the same number of bytes (at least 16; a region gets at most MAX_ROWS rows). A pixel
 * takes the colour of the category holding most of its bytes: used (the bytes asked for, or
 * the usable bytes in release), padding (headers, debug prefixes and lead pages, alignment,
 * slack after the requested size, span sentinels), free, free and returned to the OS, and
 * quarantined.
 *
 * Drawing stays small whatever the heap: each region gets one background rectangle in its
 * most common colour; the other pixels become runs of equal colour, a run repeated at the
 * same place in the next rows grows into one taller rectangle, and the rectangles of one
 * colour are written as the subpaths of a few <path> elements ("M x y h w v h h -w z").
 * Rows carry address ticks on the left (offsets from the region's base) and the legend
 * wraps to the picture's width, so its labels never overlap.
 *
 * Memory: one set of pixel counters, reused region after region; blocks are streamed. Work per region
 * is bounded by its pixels plus its blocks: byte ranges are clipped to start after the
 * previous one (a valid dump's ranges never go back), so overlapping hostile records cannot
 * make it quadratic. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpdump.h"
#include "svg_out.h"
#include "text_out.h"

#define MAX_ROWS 128
#define ROW_HEIGHT 3
#define MARGIN 10
#define GUTTER 92         /* left of the pixel rows: address ticks */
#define TICK_ROWS 8       /* a tick every this many rows */
#define TITLE_HEIGHT 34
#define HEAP_TITLE_HEIGHT 26
#define LEGEND_ROW 18
#define PATH_BUFFER 32768 /* subpaths of one colour are flushed as a <path> past this */

enum { CAT_USED, CAT_PADDING, CAT_FREE, CAT_RETURNED, CAT_QUARANTINED, NCAT };
static const char *const cat_names[NCAT] = {"used", "padding", "free", "returned", "quarantined"};
static const char *const cat_labels[NCAT] = {"used", "padding / metadata", "free", "free, returned to the OS",
                                             "quarantined"};
static const char *const cat_colours[NCAT] = {"#3b6fd4", "#f0a030", "#9ed49a", "#e4e4e4", "#d0403b"};
#define NO_RECORD NCAT /* a pixel no record covers (only in a damaged dump): white */

typedef struct region_picture {
    const rpd_region *r;
    uint64_t base, end, bpp; /* bytes per pixel */
    uint64_t pixels, rows;
    uint64_t (*px)[NCAT];    /* per pixel: bytes of each category */
    uint64_t totals[NCAT];
    uint64_t cursor;         /* ranges before this address were already drawn */
    uint64_t sentinel_lo, sentinel_hi; /* pending span sentinel */
} region_picture;

/* A rectangle growing down while the next rows repeat its run. */
typedef struct open_rect {
    uint32_t x, w, row0, rows;
    uint8_t cat;
} open_rect;

typedef struct map_writer {
    FILE *svg;
    const rpd_options *o;
    rpd_dump *d;
    json_out *j;
    double y;                /* next free y in the picture */
    region_picture pic;
    uint64_t (*px)[NCAT];    /* counters for the largest picture: MAX_ROWS x width pixels */
    size_t px_bytes;
    uint8_t *cats;           /* per pixel of the region: its colour */
    open_rect *open[2];      /* the previous row's rectangles and the current row's */
    size_t nopen[2];
    char *path[NCAT + 1];    /* per colour: subpaths not yet written */
    size_t path_len[NCAT + 1];
    uint64_t shapes;         /* rectangles written, backgrounds included */
} map_writer;

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Bytes per pixel (a multiple of 16) and rows for region r: at most MAX_ROWS rows. */
static void layout(const rpd_options *o, const rpd_region *r, uint64_t *bpp, uint64_t *rows)
{
    uint64_t bytes = r->pages * 4096; /* rpd_open checked it does not overflow */
    uint64_t b = ceil_div(ceil_div(bytes, MAX_ROWS), o->width);
    b = b < 16 ? 16 : ceil_div(b, 16) * 16;
    *bpp = b;
    *rows = ceil_div(bytes, b * o->width);
}

static void add_range(region_picture *p, uint64_t lo, uint64_t hi, int cat)
{
    if (lo < p->cursor)
        lo = p->cursor;
    if (hi > p->end)
        hi = p->end;
    if (lo >= hi)
        return;
    p->cursor = hi;
    p->totals[cat] += hi - lo;
    uint64_t first = (lo - p->base) / p->bpp, last = (hi - 1 - p->base) / p->bpp;
    for (uint64_t x = first; x <= last; x++) {
        uint64_t px_lo = p->base + x * p->bpp, px_hi = px_lo + p->bpp;
        uint64_t a = lo > px_lo ? lo : px_lo, b = hi < px_hi ? hi : px_hi;
        p->px[x][cat] += b - a;
    }
}

static void flush_sentinel(region_picture *p)
{
    if (p->sentinel_hi > p->sentinel_lo)
        add_range(p, p->sentinel_lo, p->sentinel_hi, CAT_PADDING);
    p->sentinel_lo = p->sentinel_hi = 0;
}

static void add_block(region_picture *p, const rpd_dump *d, const rpd_block *b)
{
    uint64_t end = b->block + b->block_size < b->block ? UINT64_MAX : b->block + b->block_size;
    if (b->tier == RPD_TIER_PAGE)
        flush_sentinel(p);
    switch (b->state) {
    case RPD_STATE_SPAN:
        if (b->block_size >= RPD_SPAN_SENTINEL) {
            p->sentinel_lo = end - RPD_SPAN_SENTINEL;
            p->sentinel_hi = end;
        }
        break;
    case RPD_STATE_FREE:
        add_range(p, b->block, end, (b->flags & RPD_BLOCK_DECOMMITTED) ? CAT_RETURNED : CAT_FREE);
        break;
    case RPD_STATE_QUARANTINED:
        add_range(p, b->block, end, CAT_QUARANTINED);
        break;
    default: {
        uint64_t live = rpd_is_debug(d) ? b->requested : b->size;
        uint64_t user_end = b->addr + live < b->addr ? UINT64_MAX : b->addr + live;
        add_range(p, b->block, b->addr, CAT_PADDING);
        add_range(p, b->addr, user_end < end ? user_end : end, CAT_USED);
        add_range(p, user_end, end, CAT_PADDING);
        break;
    }
    }
}

static void begin_region(map_writer *w, const rpd_region *r)
{
    region_picture *p = &w->pic;
    memset(p, 0, sizeof *p);
    p->r = r;
    p->base = p->cursor = r->base;
    p->end = r->base + r->pages * 4096;
    layout(w->o, r, &p->bpp, &p->rows);
    p->pixels = p->rows * w->o->width; /* at most MAX_ROWS rows: fits w->px */
    p->px = w->px;
    memset(p->px, 0, (size_t)p->pixels * sizeof *p->px);
}

static void flush_path(map_writer *w, int cat)
{
    if (!w->path_len[cat])
        return;
    if (cat == NO_RECORD)
        fprintf(w->svg, "<path fill=\"white\" d=\"%.*s\"/>\n", (int)w->path_len[cat], w->path[cat]);
    else
        fprintf(w->svg, "<path class=\"%c\" d=\"%.*s\"/>\n", cat_names[cat][0], (int)w->path_len[cat], w->path[cat]);
    w->path_len[cat] = 0;
}

/* Queues rectangle r (pixel rows of the current region, whose first row is drawn at y0). */
static void put_rect(map_writer *w, const open_rect *r, double y0)
{
    char sub[96];
    int n = snprintf(sub, sizeof sub, "M%u %.0fh%uv%uh-%uz", (unsigned)(MARGIN + GUTTER + r->x),
                     y0 + (double)r->row0 * ROW_HEIGHT, r->w, r->rows * ROW_HEIGHT, r->w);
    if (w->path_len[r->cat] + (size_t)n > PATH_BUFFER)
        flush_path(w, r->cat);
    memcpy(w->path[r->cat] + w->path_len[r->cat], sub, (size_t)n);
    w->path_len[r->cat] += (size_t)n;
    w->shapes++;
}

/* The colour of each pixel: the category holding most of its bytes. */
static int pixel_colours(map_writer *w, uint64_t *valid)
{
    region_picture *p = &w->pic;
    uint64_t counts[NCAT + 1] = {0};
    *valid = ceil_div(p->end - p->base, p->bpp);
    for (uint64_t i = 0; i < *valid; i++) {
        int best = NO_RECORD;
        uint64_t most = 0;
        for (int c = 0; c < NCAT; c++)
            if (p->px[i][c] > most)
                most = p->px[i][c], best = c;
        w->cats[i] = (uint8_t)best;
        counts[best]++;
    }
    int dominant = 0;
    for (int c = 1; c <= NCAT; c++)
        if (counts[c] > counts[dominant])
            dominant = c;
    return dominant;
}

/* Draws the pixel rows: the background, then runs of the other colours merged down. */
static void draw_rows(map_writer *w, double y0)
{
    uint32_t width = w->o->width;
    uint64_t valid;
    int dominant = pixel_colours(w, &valid);
    if (!valid)
        return;
    /* background: the full rows, then what the last row holds */
    uint64_t full = valid / width, rest = valid % width;
    const char *fill = dominant == NO_RECORD ? "white" : cat_colours[dominant];
    if (full) {
        fprintf(w->svg, "<rect x=\"%d\" y=\"%.0f\" width=\"%u\" height=\"%llu\" fill=\"%s\"/>\n", MARGIN + GUTTER,
                y0, width, (unsigned long long)(full * ROW_HEIGHT), fill);
        w->shapes++;
    }
    if (rest) {
        fprintf(w->svg, "<rect x=\"%d\" y=\"%.0f\" width=\"%llu\" height=\"%d\" fill=\"%s\"/>\n", MARGIN + GUTTER,
                y0 + (double)full * ROW_HEIGHT, (unsigned long long)rest, ROW_HEIGHT, fill);
        w->shapes++;
    }
    int prev = 0, cur = 1;
    w->nopen[prev] = 0;
    for (uint64_t row = 0; row * width < valid; row++) {
        uint64_t row_end = (row + 1) * width < valid ? width : valid - row * width;
        size_t k = 0; /* next rectangle of the previous row to match */
        w->nopen[cur] = 0;
        for (uint64_t x = 0; x < row_end;) {
            uint8_t c = w->cats[row * width + x];
            uint64_t run = 1;
            while (x + run < row_end && w->cats[row * width + x + run] == c)
                run++;
            if (c != dominant) {
                /* rectangles of the previous row left of this run end here */
                while (k < w->nopen[prev] && w->open[prev][k].x < x)
                    put_rect(w, &w->open[prev][k++], y0);
                open_rect r = {(uint32_t)x, (uint32_t)run, (uint32_t)row, 1, c};
                if (k < w->nopen[prev] && w->open[prev][k].x == x && w->open[prev][k].w == run &&
                    w->open[prev][k].cat == c) {
                    r = w->open[prev][k++];
                    r.rows++;
                }
                w->open[cur][w->nopen[cur]++] = r;
            }
            x += run;
        }
        while (k < w->nopen[prev])
            put_rect(w, &w->open[prev][k++], y0);
        prev ^= 1;
        cur ^= 1;
    }
    for (size_t k = 0; k < w->nopen[prev]; k++)
        put_rect(w, &w->open[prev][k], y0);
    for (int c = 0; c <= NCAT; c++)
        flush_path(w, c);
}

/* Address ticks: every TICK_ROWS rows, the offset of the row's first byte. */
static void draw_ticks(map_writer *w, double y0)
{
    region_picture *p = &w->pic;
    uint64_t row_bytes = p->bpp * w->o->width;
    for (uint64_t row = 0; row < p->rows; row += TICK_ROWS) {
        double y = y0 + (double)row * ROW_HEIGHT;
        fprintf(w->svg, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\"/>", MARGIN + GUTTER - 5,
                y + 0.5, MARGIN + GUTTER - 1, y + 0.5);
        fprintf(w->svg, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" class=\"a\">+0x%llx</text>\n",
                MARGIN + GUTTER - 7, y + 7, (unsigned long long)(row * row_bytes));
    }
}

/* Draws the region: its title, then its pixel rows. */
static void end_region(map_writer *w, const rpd_heap_info *h, size_t index)
{
    region_picture *p = &w->pic;
    flush_sentinel(p);
    FILE *f = w->svg;
    char a[32], b[32], c[32];
    fprintf(f, "<text x=\"%d\" y=\"%.0f\" class=\"rt\">region %zu (%s) 0x%llx-0x%llx, %s; %s per pixel, %s per row; used %s, free %s</text>\n",
            MARGIN, w->y + 20, index, rpd_region_kind_name(p->r->kind), (unsigned long long)p->base,
            (unsigned long long)p->end, text_size(a, sizeof a, p->end - p->base), text_size(b, sizeof b, p->bpp),
            text_size(c, sizeof c, p->bpp * w->o->width), text_size((char[32]){0}, 32, p->totals[CAT_USED]),
            text_size((char[32]){0}, 32, p->totals[CAT_FREE] + p->totals[CAT_RETURNED]));
    w->y += TITLE_HEIGHT - 8;
    draw_ticks(w, w->y);
    draw_rows(w, w->y);
    w->y += (double)p->rows * ROW_HEIGHT + MARGIN;
    if (w->j) {
        json_object_compact(w->j);
        json_kv_string(w->j, "heap", h->rec.name);
        json_kv_u64(w->j, "region", index);
        json_kv_hex(w->j, "base", p->base);
        json_kv_u64(w->j, "bytes", p->end - p->base);
        json_kv_u64(w->j, "bytes_per_pixel", p->bpp);
        json_kv_u64(w->j, "rows", p->rows);
        for (int k = 0; k < NCAT; k++) {
            char key[32];
            snprintf(key, sizeof key, "%s_bytes", cat_names[k]);
            json_kv_u64(w->j, key, p->totals[k]);
        }
        json_object_end(w->j);
    }
}

static int draw_heap(map_writer *w, const rpd_heap_info *h, rpd_error *err)
{
    char name[RPD_NAME_BYTES];
    fprintf(w->svg, "<text x=\"%d\" y=\"%.0f\" class=\"h\">heap '", MARGIN, w->y + 18);
    svg_text(w->svg, text_clean(name, sizeof name, h->rec.name), 0);
    fprintf(w->svg, "'</text>\n");
    w->y += HEAP_TITLE_HEIGHT;
    rpd_block_iter *it = rpd_alloc(w->d, sizeof *it, h->blocks_sec->offset, err);
    if (!it)
        return -1;
    rpd_blocks_begin(it, w->d, h);
    long current = -1; /* region being drawn */
    size_t next = 0;   /* regions before this one are drawn */
    rpd_block_at ba;
    int rc;
    while ((rc = rpd_blocks_next(it, &ba, err)) == 1) {
        long region = (long)ba.b.region;
        if (region != current) {
            if (region < (long)next)
                continue; /* out of order (only in a damaged dump): already drawn */
            if (current >= 0)
                end_region(w, h, (size_t)current);
            for (; next < (size_t)region; next++) { /* regions without blocks: drawn empty */
                begin_region(w, &h->regions[next]);
                end_region(w, h, next);
            }
            begin_region(w, &h->regions[region]);
            current = region;
            next = (size_t)region + 1;
        }
        add_block(&w->pic, w->d, &ba.b);
    }
    if (rc == 0 && current >= 0)
        end_region(w, h, (size_t)current);
    for (; rc == 0 && next < h->nregions; next++) {
        begin_region(w, &h->regions[next]);
        end_region(w, h, next);
    }
    rpd_free(w->d, it, sizeof *it);
    return rc < 0 ? -1 : 0;
}

/* Frees what the writer holds (any of it may be NULL). */
static void map_writer_free(map_writer *w)
{
    if (w->px)
        rpd_free(w->d, w->px, w->px_bytes);
    free(w->cats);
    free(w->open[0]);
    free(w->open[1]);
    for (int c = 0; c <= NCAT; c++)
        free(w->path[c]);
}

/* The legend, wrapped to the picture's width; returns its rows. With f NULL, only counts. */
static unsigned legend(FILE *f, unsigned width, double y)
{
    double x = MARGIN;
    unsigned rows = 1;
    for (int c = 0; c < NCAT; c++) {
        double item = 16 + (double)strlen(cat_labels[c]) * SVG_CHAR_PX + 24;
        if (x > MARGIN && x + item - 24 > width - MARGIN) {
            x = MARGIN;
            rows++;
        }
        if (f) {
            double yy = y + (rows - 1) * LEGEND_ROW;
            fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" class=\"%c\"/>", x, yy - 11,
                    cat_names[c][0]);
            fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", x + 16, yy, cat_labels[c]);
        }
        x += item;
    }
    return rows;
}

int cmd_map(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    unsigned width = o->width + GUTTER + 2 * MARGIN;
    unsigned legend_rows = legend(NULL, width, 0);
    /* The picture's height is known before drawing: it comes from the region sizes. */
    double top = MARGIN + TITLE_HEIGHT + (double)legend_rows * LEGEND_ROW;
    double height = top;
    size_t regions = 0;
    for (size_t i = 0; i < d->nheaps; i++) {
        const rpd_heap_info *h = &d->heaps[i];
        if (!rpd_heap_selected(o, h))
            continue;
        height += HEAP_TITLE_HEIGHT;
        for (size_t k = 0; k < h->nregions; k++) {
            uint64_t bpp, rows;
            layout(o, &h->regions[k], &bpp, &rows);
            height += TITLE_HEIGHT - 8 + (double)rows * ROW_HEIGHT + MARGIN;
            regions++;
        }
    }
    json_out j;
    map_writer w;
    memset(&w, 0, sizeof w);
    w.d = d;
    rpd_error err = {0, ""};
    size_t pixels = (size_t)MAX_ROWS * o->width;
    w.px_bytes = pixels * sizeof *w.px;
    w.px = rpd_alloc(d, w.px_bytes, 0, &err);
    w.cats = malloc(pixels);
    w.open[0] = malloc(o->width * sizeof *w.open[0]);
    w.open[1] = malloc(o->width * sizeof *w.open[1]);
    int rc = w.px && w.cats && w.open[0] && w.open[1] ? 0 : -1;
    for (int c = 0; c <= NCAT && rc == 0; c++)
        rc = (w.path[c] = malloc(PATH_BUFFER)) ? 0 : -1;
    if (rc != 0 && w.px)
        rpd_fail(&err, 0, "out of memory");
    FILE *svg = rc == 0 ? svg_open(o->output) : NULL;
    if (!svg) {
        map_writer_free(&w);
        return rc == 0 ? RPDUMP_BAD_DUMP : rpd_report_error(o, in->path, &err);
    }
    char css[256];
    size_t used = (size_t)snprintf(css, sizeof css, ".rt{fill:#333}.a{font-size:10px;fill:#666}");
    for (int c = 0; c < NCAT; c++)
        used += (size_t)snprintf(css + used, sizeof css - used, ".%c{fill:%s}", cat_names[c][0], cat_colours[c]);
    svg_begin(svg, width, height, css);
    fprintf(svg, "<text x=\"%d\" y=\"22\" class=\"t\">", MARGIN);
    char clean[512];
    svg_text(svg, text_clean(clean, sizeof clean, in->path), 0);
    fprintf(svg, ": rampart heap map (pid %llu)</text>\n", (unsigned long long)d->process.pid);
    legend(svg, width, MARGIN + TITLE_HEIGHT + 2);

    w.svg = svg;
    w.o = o;
    w.d = d;
    w.y = top - 4;
    if (o->json) {
        rpd_json_begin(&j, d, in->path);
        json_kv_string(&j, "output", o->output);
        json_kv_u64(&j, "width", width);
        json_kv_u64(&j, "height", (uint64_t)height);
        json_key(&j, "regions");
        json_array(&j);
        w.j = &j;
    }
    for (size_t i = 0; i < d->nheaps && rc == 0; i++)
        if (rpd_heap_selected(o, &d->heaps[i]))
            rc = draw_heap(&w, &d->heaps[i], &err);
    map_writer_free(&w);
    svg_end(svg);
    int write_failed = svg_close(svg, o->output) != 0;
    if (rc != 0)
        unlink(o->output); /* a picture cut short at the damage would mislead */
    if (o->json) {
        json_array_end(&j);
        if (rc != 0)
            return rpd_report_error_in_json(&j, in->path, &err);
        json_kv_u64(&j, "shapes", w.shapes);
        json_object_end(&j);
        json_finish(&j);
    } else if (rc != 0) {
        return rpd_report_error(o, in->path, &err);
    }
    if (write_failed)
        return RPDUMP_BAD_DUMP;
    if (!o->json)
        printf("wrote %s: %zu region%s, %u x %.0f pixels, %llu shapes\n", text_clean(clean, sizeof clean, o->output),
               regions, regions == 1 ? "" : "s", width, height, (unsigned long long)w.shapes);
    return RPDUMP_OK;
}
