/* What rpdump's pictures (map, flame, timeline) share: opening and closing the output
 * file, the document's head, escaped text, text widths, colours and axis ticks.
 *
 * Text comes from dumps and binaries (heap names, paths, function names): it is written with
 * XML escapes and bytes outside printable ASCII replaced, so no input can break the
 * document. Labels use a 12 px monospace font; SVG_CHAR_PX is its advance. */
#ifndef RPDUMP_SVG_OUT_H
#define RPDUMP_SVG_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SVG_CHAR_PX 7.3 /* advance of one character of the 12 px monospace font */

/* Opens path for writing; on failure prints "rpdump: cannot write PATH: why" and returns
 * NULL. */
FILE *svg_open(const char *path);

/* Closes the document's file; 0, or -1 after printing "rpdump: writing PATH failed". */
int svg_close(FILE *f, const char *path);

/* Writes the XML declaration, the <svg> element of width x height pixels, a style sheet
 * (the shared text classes plus css, which may be NULL) and a white background. */
void svg_begin(FILE *f, unsigned width, double height, const char *css);
void svg_end(FILE *f);

/* Writes s escaped for XML text or attributes. With max > 0, at most max characters: a
 * longer s is cut to max - 2 and ends with "..". */
void svg_text(FILE *f, const char *s, size_t max);

/* The characters of label text that fit in px pixels. */
size_t svg_chars_fit(double px);

/* "#rrggbb" for a hue (degrees), saturation and lightness (0..1), into buf (8 bytes). */
const char *svg_hsl(char buf[8], double hue, double sat, double light);

/* A round step (1, 2 or 5 times a power of ten; for bytes, also powers of two when
 * binary) splitting range into at most max_ticks intervals. */
double svg_tick_step(double range, int max_ticks, int binary);

#endif
