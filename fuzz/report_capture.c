/* Reports of the debug flavour captured in-process: see report_capture.h. */
#define _GNU_SOURCE
#include "fuzz/report_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct {
    int count;
    captured_report first;
    int sink;      /* the in-memory file the runtime prints into */
    char options[64];
    char text[8192];
} cap = {.sink = -1};

static void deliver(const rp_report *r, void *arg)
{
    (void)arg;
    if (cap.count++ != 0)
        return;
    captured_report *c = &cap.first;
    c->kind = r->kind;
    c->address = r->address;
    c->block = r->block;
    c->offset = r->offset;
    c->has_history = rp_report_get_history(r, &c->history) == 0;
    snprintf(c->message, sizeof c->message, "%s", r->message ? r->message : "");
}

const char *capture_sink_options(void)
{
    if (cap.sink < 0) {
        cap.sink = memfd_create("rampart-reports", MFD_CLOEXEC);
        if (cap.sink < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(cap.options, sizeof cap.options, "report_path=/dev/fd/%d", cap.sink);
    }
    return cap.options;
}

void capture_install(void) { rp_set_report_fn(deliver, NULL, NULL); }

void capture_reset(void)
{
    cap.count = 0;
    if (cap.sink >= 0 && ftruncate(cap.sink, 0) != 0) {
        perror("ftruncate");
        abort();
    }
}

int capture_count(void) { return cap.count; }

const captured_report *capture_first(void) { return &cap.first; }

const char *capture_text(void)
{
    ssize_t n = cap.sink >= 0 ? pread(cap.sink, cap.text, sizeof cap.text - 1, 0) : 0;
    cap.text[n > 0 ? n : 0] = '\0';
    return cap.text;
}
