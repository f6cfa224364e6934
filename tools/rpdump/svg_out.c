#include "svg_out.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "text_out.h"

FILE *svg_open(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        char clean[512];
        fprintf(stderr, "rpdump: cannot write %s: %s\n", text_clean(clean, sizeof clean, path), strerror(errno));
    }
    return f;
}

int svg_close(FILE *f, const char *path)
{
    int failed = ferror(f);
    failed |= fclose(f) != 0;
    if (failed) {
        char clean[512];
        fprintf(stderr, "rpdump: writing %s failed\n", text_clean(clean, sizeof clean, path));
        return -1;
    }
    return 0;
}

void svg_begin(FILE *f, unsigned width, double height, const char *css)
{
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%.0f\" viewBox=\"0 0 %u %.0f\">\n"
            "<style>text{font-family:'DejaVu Sans Mono',monospace;font-size:12px}.t{font-size:15px;"
            "font-weight:bold}.h{font-size:14px;font-weight:bold}.s{fill:#555}%s</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width, height, css ? css : "");
}

void svg_end(FILE *f) { fputs("</svg>\n", f); }

static void put_char(FILE *f, unsigned char c)
{
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

void svg_text(FILE *f, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (max && n > max) {
        size_t keep = max > 2 ? max - 2 : 0;
        for (size_t i = 0; i < keep; i++)
            put_char(f, (unsigned char)s[i]);
        fputs(max >= 2 ? ".." : "", f);
        return;
    }
    for (; *s; s++)
        put_char(f, (unsigned char)*s);
}

size_t svg_chars_fit(double px) { return px <= 0 ? 0 : (size_t)(px / SVG_CHAR_PX); }

const char *svg_hsl(char buf[8], double hue, double sat, double light)
{
    double c = (1 - fabs(2 * light - 1)) * sat, h = fmod(hue, 360) / 60, x = c * (1 - fabs(fmod(h, 2) - 1));
    double r = 0, g = 0, b = 0;
    if (h < 1)
        r = c, g = x;
    else if (h < 2)
        r = x, g = c;
    else if (h < 3)
        g = c, b = x;
    else if (h < 4)
        g = x, b = c;
    else if (h < 5)
        r = x, b = c;
    else
        r = c, b = x;
    double m = light - c / 2;
    snprintf(buf, 8, "#%02x%02x%02x", (unsigned)lround((r + m) * 255), (unsigned)lround((g + m) * 255),
             (unsigned)lround((b + m) * 255));
    return buf;
}

double svg_tick_step(double range, int max_ticks, int binary)
{
    if (!(range > 0) || max_ticks < 1)
        return 1;
    double raw = range / max_ticks;
    if (binary && raw >= 1024) {
        double p = 1024;
        while (p * 1024 <= raw)
            p *= 1024;
        /* within a binary unit: 1, 2, 5, 10, 20, 50, 100, 200, 500 of it */
        static const double steps[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1024};
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
            if (steps[i] * p >= raw)
                return steps[i] * p;
    }
    double p = pow(10, floor(log10(raw)));
    static const double steps[] = {1, 2, 5, 10};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * p >= raw)
            return steps[i] * p;
    return 10 * p;
}
