/* rpdump's option defaults, shared by the command line (main.c) and in-process callers. */
#include <string.h>

#include "rpdump.h"

void rpd_options_init(rpd_options *o)
{
    memset(o, 0, sizeof *o);
    o->frames = 8;
    o->symbolizer = "auto";
    o->width = 1024;
    o->max_errors = 100;
}
