/* rpdump map -o heap.svg: a picture of each region by address.
 *
 * Each region is drawn as rows of pixels, left to right, top to bottom, each pixel standing
 * for the same number of bytes (at least 16; a region gets at most MAX_ROWS rows). A pixel
 * takes the colour of the category holding most of its bytes: used (the bytes asked for, or
 * the usable bytes in release), padding (headers, debug prefixes and lead pages, alignment,
 * slack after the requested size, span sentinels), free, free and returned to the OS, and
 * quarantined. Consecutive pixels of one colour become one rectangle.
 *
 * Memory: one set of pixel counters, reused region after region; blocks are streamed. Work per region
 * is bounded by its pixels plus its blocks: byte ranges are clipped to start after the
 * previous one (a valid dump's ranges never go back), so overlapping hostile records cannot
 * make it quadratic. */
#include <errno.h>
#include <string.h>

#include "rpdump.h"
#include "text_out.h"

#define MAX_ROWS 128
#define ROW_HEIGHT 3
#define MARGIN 10
#define TITLE_HEIGHT 34
#define HEAP_TITLE_HEIGHT 26
#define LEGEND_HEIGHT 40

enum { CAT_USED, CAT_PADDING, CAT_FREE, CAT_RETURNED, CAT_QUARANTINED, NCAT };
static const char *const cat_names[NCAT] = {"used", "padding", "free", "returned", "quarantined"};
static const char *const cat_labels[NCAT] = {"used", "padding / metadata", "free", "free, returned to the OS",
                                             "quarantined"};
static const char *const cat_colours[NCAT] = {"#3b6fd4", "#f0a030", "#9ed49a", "#e4e4e4", "#d0403b"};

typedef struct region_picture {
    const rpd_region *r;
    uint64_t base, end, bpp; /* bytes per pixel */
    uint64_t pixels, rows;
    uint64_t (*px)[NCAT];    /* per pixel: bytes of each category */
    uint64_t totals[NCAT];
    uint64_t cursor;         /* ranges before this address were already drawn */
    uint64_t sentinel_lo, sentinel_hi; /* pending span sentinel */
} region_picture;

typedef struct map_writer {
    FILE *svg;
    const rpd_options *o;
    rpd_dump *d;
    json_out *j;
    double y;                /* next free y in the picture */
    region_picture pic;
    uint64_t (*px)[NCAT];    /* counters for the largest picture: MAX_ROWS x width pixels */
    size_t px_bytes;
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

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '&')
            fputs("&amp;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else
            fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
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

/* Draws the region: its title, then its pixel rows. */
static void end_region(map_writer *w, const rpd_heap_info *h, size_t index)
{
    region_picture *p = &w->pic;
    flush_sentinel(p);
    FILE *f = w->svg;
    char a[32], b[32];
    fprintf(f, "<text x=\"%d\" y=\"%.0f\" class=\"rt\">region %zu (%s) 0x%llx-0x%llx, %s; %s per pixel; used %s, free %s</text>\n",
            MARGIN, w->y + 20, index, rpd_region_kind_name(p->r->kind), (unsigned long long)p->base,
            (unsigned long long)p->end, text_size(a, sizeof a, p->end - p->base), text_size(b, sizeof b, p->bpp),
            text_size((char[32]){0}, 32, p->totals[CAT_USED]),
            text_size((char[32]){0}, 32, p->totals[CAT_FREE] + p->totals[CAT_RETURNED]));
    w->y += TITLE_HEIGHT - 8;
    for (uint64_t row = 0; row < p->rows; row++) {
        uint64_t x = 0;
        while (x < w->o->width) {
            uint64_t i = row * w->o->width + x;
            int best = -1;
            uint64_t most = 0;
            for (int c = 0; c < NCAT; c++)
                if (p->px[i][c] > most)
                    most = p->px[i][c], best = c;
            uint64_t run = 1;
            while (x + run < w->o->width) {
                uint64_t k = i + run;
                int kb = -1;
                uint64_t km = 0;
                for (int c = 0; c < NCAT; c++)
                    if (p->px[k][c] > km)
                        km = p->px[k][c], kb = c;
                if (kb != best)
                    break;
                run++;
            }
            if (best >= 0)
                fprintf(f, "<rect x=\"%llu\" y=\"%.0f\" width=\"%llu\" height=\"%d\" class=\"%c\"/>\n",
                        (unsigned long long)(MARGIN + x), w->y + (double)row * ROW_HEIGHT, (unsigned long long)run,
                        ROW_HEIGHT, cat_names[best][0]);
            x += run;
        }
    }
    w->y += (double)p->rows * ROW_HEIGHT + MARGIN;
    if (w->j) {
        json_object_compact(w->j);
        json_kv_string(w->j, "heap", h->rec.name);
        json_kv_u64(w->j, "region", index);
        json_kv_hex(w->j, "base", p->base);
        json_kv_u64(w->j, "bytes", p->end - p->base);
        json_kv_u64(w->j, "bytes_per_pixel", p->bpp);
        json_kv_u64(w->j, "rows", p->rows);
        for (int c = 0; c < NCAT; c++) {
            char key[32];
            snprintf(key, sizeof key, "%s_bytes", cat_names[c]);
            json_kv_u64(w->j, key, p->totals[c]);
        }
        json_object_end(w->j);
    }
}

static int draw_heap(map_writer *w, const rpd_heap_info *h, rpd_error *err)
{
    char name[RPD_NAME_BYTES];
    fprintf(w->svg, "<text x=\"%d\" y=\"%.0f\" class=\"h\">heap '", MARGIN, w->y + 18);
    xml_text(w->svg, text_clean(name, sizeof name, h->rec.name));
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

int cmd_map(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    /* The picture's height is known before drawing: it comes from the region sizes. */
    double height = MARGIN + TITLE_HEIGHT + LEGEND_HEIGHT;
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
    FILE *svg = fopen(o->output, "w");
    if (!svg) {
        char clean[512];
        fprintf(stderr, "rpdump: cannot write %s: %s\n", text_clean(clean, sizeof clean, o->output), strerror(errno));
        return RPDUMP_BAD_DUMP;
    }
    unsigned width = o->width + 2 * MARGIN;
    fprintf(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%.0f\" viewBox=\"0 0 %u %.0f\">\n"
                 "<style>text{font-family:monospace;font-size:12px}.t{font-size:15px;font-weight:bold}"
                 ".h{font-size:14px;font-weight:bold}.rt{fill:#333}",
            width, height, width, height);
    for (int c = 0; c < NCAT; c++)
        fprintf(svg, ".%c{fill:%s}", cat_names[c][0], cat_colours[c]);
    fprintf(svg, "</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(svg, "<text x=\"%d\" y=\"22\" class=\"t\">", MARGIN);
    char clean[512];
    xml_text(svg, text_clean(clean, sizeof clean, in->path));
    fprintf(svg, ": rampart heap map (pid %llu)</text>\n", (unsigned long long)d->process.pid);
    for (int c = 0; c < NCAT; c++) {
        fprintf(svg, "<rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" class=\"%c\"/>", MARGIN + c * 190,
                cat_names[c][0]);
        fprintf(svg, "<text x=\"%d\" y=\"45\">%s</text>\n", MARGIN + c * 190 + 16, cat_labels[c]);
    }

    json_out j;
    map_writer w;
    memset(&w, 0, sizeof w);
    w.svg = svg;
    w.o = o;
    w.d = d;
    w.y = MARGIN + TITLE_HEIGHT + LEGEND_HEIGHT - 10;
    if (o->json) {
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_kv_string(&j, "output", o->output);
        json_kv_u64(&j, "width", width);
        json_kv_u64(&j, "height", (uint64_t)height);
        json_key(&j, "regions");
        json_array(&j);
        w.j = &j;
    }
    rpd_error err = {0, ""};
    w.px_bytes = (size_t)MAX_ROWS * o->width * sizeof *w.px;
    w.px = rpd_alloc(d, w.px_bytes, 0, &err);
    int rc = w.px ? 0 : -1;
    for (size_t i = 0; i < d->nheaps && rc == 0; i++)
        if (rpd_heap_selected(o, &d->heaps[i]))
            rc = draw_heap(&w, &d->heaps[i], &err);
    rpd_free(d, w.px, w.px_bytes);
    fprintf(svg, "</svg>\n");
    int write_failed = ferror(svg) | (fclose(svg) != 0);
    if (o->json) {
        json_array_end(&j);
        if (rc != 0)
            return rpd_report_error_in_json(&j, in->path, &err);
        json_object_end(&j);
        json_finish(&j);
    } else if (rc != 0) {
        return rpd_report_error(o, in->path, &err);
    }
    if (write_failed) {
        fprintf(stderr, "rpdump: writing %s failed\n", text_clean(clean, sizeof clean, o->output));
        return RPDUMP_BAD_DUMP;
    }
    if (!o->json)
        printf("wrote %s: %zu region%s, %u x %.0f pixels\n", text_clean(clean, sizeof clean, o->output), regions,
               regions == 1 ? "" : "s", width, height);
    return RPDUMP_OK;
}
