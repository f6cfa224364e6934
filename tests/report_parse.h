/* Reading the debug flavour's printed reports back (debug/debug_report.h format), so tests
 * assert on what a user actually sees. */
#ifndef RP_TEST_REPORT_PARSE_H
#define RP_TEST_REPORT_PARSE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARSED_FRAMES 4

typedef struct parsed_report {
    int found;
    char kind[64];
    unsigned long address;
    int has_offset;
    long offset;
    char detect[PARSED_FRAMES][96]; /* function names of the first frames of each stack */
    char alloc[PARSED_FRAMES][96];
    char freed[PARSED_FRAMES][96];
    int has_alloc, has_free;
} parsed_report;

/* Copies the function names of the frame lines following `line` ("    #N 0x... in NAME+0x..."). */
static void parse_frames(const char *line, char names[PARSED_FRAMES][96])
{
    const char *p = strchr(line, '\n');
    for (int i = 0; p && i < PARSED_FRAMES; i++) {
        p++;
        const char *in = strstr(p, " in ");
        const char *eol = strchr(p, '\n');
        if (strncmp(p, "    #", 5) != 0 || !in || (eol && in > eol))
            return;
        in += 4;
        size_t n = strcspn(in, "+ \n");
        if (n >= 96)
            n = 95;
        memcpy(names[i], in, n);
        names[i][n] = 0;
        p = eol;
    }
}

/* Parses the first report in text. */
static void parse_report(const char *text, parsed_report *r)
{
    memset(r, 0, sizeof *r);
    const char *e = strstr(text, "ERROR: rampart: ");
    if (!e)
        return;
    e += strlen("ERROR: rampart: ");
    const char *on = strstr(e, " on address ");
    if (!on || on - e >= (long)sizeof r->kind)
        return;
    memcpy(r->kind, e, (size_t)(on - e));
    r->address = strtoul(on + strlen(" on address "), NULL, 16);
    r->found = 1;
    const char *o = strstr(e, "is at offset ");
    if (o) {
        r->has_offset = 1;
        r->offset = strtol(o + strlen("is at offset "), NULL, 10);
    }
    const char *d = strstr(e, "\nDetected");
    if (d)
        parse_frames(d + 1, r->detect);
    const char *a = strstr(e, "\nBlock allocated here:");
    if (a) {
        r->has_alloc = 1;
        parse_frames(a + 1, r->alloc);
    }
    const char *f = strstr(e, "\nBlock freed here:");
    if (f) {
        r->has_free = 1;
        parse_frames(f + 1, r->freed);
    }
}

#endif
