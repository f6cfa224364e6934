/* Reading the debug flavour's printed reports back (debug/debug_report.h format), so tests
 * assert on what a user actually sees: the kind and address, the location line
 *     0x... is located N bytes after|before|inside the S-byte block [start, end)
 * and every part of the first frames of each stack (debug/symbolize.h):
 *     #N 0xPC in function+0xOFF [file:line] (module+0xOFF)
 *     #N 0xPC in inner file:line, inlined in function+0xOFF (module+0xOFF)
 *     #N 0xPC (module+0xOFF)                                  no symbol: function "??" */
#ifndef RP_TEST_REPORT_PARSE_H
#define RP_TEST_REPORT_PARSE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARSED_FRAMES 4

typedef struct parsed_frame {
    unsigned long pc;
    char function[96];              /* "??" when the frame has no symbol */
    unsigned long function_offset;  /* pc - function start (0 for "??" and inlined code) */
    char file[256];                 /* source file, "" when the frame has none */
    unsigned line;
    char module[256];
    unsigned long module_offset;    /* pc - module base */
} parsed_frame;

typedef struct parsed_location {
    int found;
    unsigned long address;
    unsigned long distance;
    char where[8]; /* "after", "before" or "inside" */
    unsigned long size;
    unsigned long start, end;
} parsed_location;

typedef struct parsed_report {
    int found;
    char kind[64];
    unsigned long address;
    int has_offset;
    long offset;
    parsed_location location;
    char detect[PARSED_FRAMES][96]; /* function names of the first frames of each stack */
    char alloc[PARSED_FRAMES][96];
    char freed[PARSED_FRAMES][96];
    parsed_frame detect_frames[PARSED_FRAMES]; /* the same frames in full */
    parsed_frame alloc_frames[PARSED_FRAMES];
    parsed_frame freed_frames[PARSED_FRAMES];
    int has_alloc, has_free;
} parsed_report;

/* Parses one frame line (up to its newline); 1 if it is one. */
static int parse_frame_line(const char *p, parsed_frame *f)
{
    memset(f, 0, sizeof *f);
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[2048];
    if (strncmp(p, "    #", 5) != 0 || len >= sizeof line)
        return 0;
    memcpy(line, p, len);
    line[len] = 0;
    const char *open = strrchr(line, '(');
    if (!open || line[len - 1] != ')')
        return 0;
    const char *in = strstr(line, " in ");
    f->pc = strtoul(strstr(line, " 0x") + 1, NULL, 16);
    snprintf(f->function, sizeof f->function, "??");
    if (in && in < open) {
        const char *name = in + 4;
        size_t n = strcspn(name, "+ ,(");
        if (n >= sizeof f->function)
            n = sizeof f->function - 1;
        memcpy(f->function, name, n);
        f->function[n] = 0;
        const char *rest = name + n;
        if (*rest == '+') {
            f->function_offset = strtoul(rest + 1, NULL, 16);
            rest += strcspn(rest, " (");
        }
        while (*rest == ' ')
            rest++;
        /* file:line up to ", inlined" or " (module" */
        size_t k = strcspn(rest, ",(");
        while (k && rest[k - 1] == ' ')
            k--;
        const char *colon = NULL;
        for (size_t i = k; i-- > 0 && !colon;)
            if (rest[i] == ':')
                colon = rest + i;
        if (colon && k < sizeof f->file) {
            memcpy(f->file, rest, (size_t)(colon - rest));
            f->file[colon - rest] = 0;
            f->line = (unsigned)strtoul(colon + 1, NULL, 10);
        }
    }
    /* The module path may hold '+': its offset follows the last "+0x". */
    const char *module = open + 1, *plus = NULL;
    for (const char *s = strstr(module, "+0x"); s; s = strstr(s + 1, "+0x"))
        plus = s;
    if (!plus)
        return 0;
    size_t m = (size_t)(plus - module);
    if (m >= sizeof f->module)
        m = sizeof f->module - 1;
    memcpy(f->module, module, m);
    f->module[m] = 0;
    f->module_offset = strtoul(plus + 1, NULL, 16);
    return 1;
}

/* Fills the frames (and their function names) of the frame lines following `line`. */
static void parse_frames(const char *line, char names[PARSED_FRAMES][96], parsed_frame frames[PARSED_FRAMES])
{
    const char *p = strchr(line, '\n');
    for (int i = 0; p && i < PARSED_FRAMES; i++) {
        p++;
        if (!parse_frame_line(p, &frames[i]))
            return;
        snprintf(names[i], 96, "%s", frames[i].function);
        p = strchr(p, '\n');
    }
}

/* Parses "0x... is located N bytes WHERE the S-byte block [START, END)" somewhere in text. */
static void parse_location(const char *text, parsed_location *l)
{
    memset(l, 0, sizeof *l);
    const char *at = strstr(text, " is located ");
    if (!at)
        return;
    const char *line = at;
    while (line > text && line[-1] != '\n')
        line--;
    char where[8];
    if (sscanf(line, "%lx is located %lu bytes %7s the %lu-byte block [%lx, %lx)", &l->address, &l->distance,
               where, &l->size, &l->start, &l->end) != 6)
        return;
    snprintf(l->where, sizeof l->where, "%s", where);
    l->found = 1;
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
    parse_location(e, &r->location);
    if (d && r->location.found && strstr(e, " is located ") > d)
        r->location.found = 0; /* only the report's own location line counts */
    if (d)
        parse_frames(d + 1, r->detect, r->detect_frames);
    const char *a = strstr(e, "\nBlock allocated here:");
    if (a) {
        r->has_alloc = 1;
        parse_frames(a + 1, r->alloc, r->alloc_frames);
    }
    const char *f = strstr(e, "\nBlock freed here:");
    if (f) {
        r->has_free = 1;
        parse_frames(f + 1, r->freed, r->freed_frames);
    }
}

#endif
