#define _GNU_SOURCE
#include "report.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"
#include "mapped_block.h"

static const char *const kind_names[RP_ERR_KIND_COUNT] = {
    [RP_ERR_INVALID_FREE] = "invalid-free",
    [RP_ERR_DOUBLE_FREE] = "double-free",
    [RP_ERR_CORRUPT_BLOCK] = "corrupted-block-header",
    [RP_ERR_CORRUPT_FREE_LIST] = "corrupted-free-list",
    [RP_ERR_HEAP_BUFFER_OVERFLOW] = "heap-buffer-overflow",
    [RP_ERR_HEAP_BUFFER_UNDERFLOW] = "heap-buffer-underflow",
    [RP_ERR_USE_AFTER_FREE_WRITE] = "use-after-free-write",
    [RP_ERR_USE_AFTER_FREE] = "heap-use-after-free",
};

const char *rp_error_kind_name(rp_error_kind kind)
{
    if ((int)kind <= 0 || kind >= RP_ERR_KIND_COUNT)
        return "unknown-error";
    return kind_names[kind];
}

/* Default handler: one line on stderr, written with write(2) (no stdio buffering, no
 * allocation), then abort. */
static void default_report(const rp_report *r, void *arg)
{
    (void)arg;
    char line[256];
    int n = snprintf(line, sizeof line, "rampart: %s: %s\n", rp_error_kind_name(r->kind),
                     r->message);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)n);
        (void)w;
    }
    abort();
}

static struct {
    rp_report_fn fn;
    void *arg;
} handler = {default_report, NULL};
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;

rp_report_fn rp_set_report_fn(rp_report_fn fn, void *arg, void **old_arg)
{
    pthread_mutex_lock(&handler_lock);
    rp_report_fn old = handler.fn;
    if (old_arg)
        *old_arg = handler.arg;
    handler.fn = fn ? fn : default_report;
    handler.arg = fn ? arg : NULL;
    pthread_mutex_unlock(&handler_lock);
    return old;
}

void rp_fault_set(rp_fault *f, rp_error_kind kind, const rp_heap *h, const void *address,
                  const void *block, size_t block_size, const char *fmt, ...)
{
    if (f->kind != 0)
        return;
    f->kind = kind;
    f->heap = h;
    f->address = address;
    f->block = block;
    f->block_size = block_size;
    f->alloc_stack = 0;
    f->free_stack = 0;
    f->requested = 0;
    f->access = 0;
    f->access_stack = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
}

int rp_why(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

void rp_report_fault(const rp_fault *f)
{
    if (f->kind == 0)
        return;
    rp_report r = {
        .kind = f->kind,
        .address = f->address,
        .block = f->block,
        .block_size = f->block_size,
        .offset = f->block ? (long)((const char *)f->address - (const char *)f->block) : 0,
        .heap = f->heap,
        .message = f->message,
    };
    pthread_mutex_lock(&handler_lock);
    rp_report_fn fn = handler.fn;
    void *arg = handler.arg;
    pthread_mutex_unlock(&handler_lock);
    /* The debug flavour prints its full report (stacks, block history) first; with the default
     * handler it may then continue instead of aborting (its on_error option). */
    if (rp_hook_report(f, &r, fn == default_report))
        return;
    fn(&r, arg);
}

void rp_report_foreign(const void *p, const char *who)
{
    rp_fault f;
    f.kind = 0;
    if (rp_mapped_block_freed_recently(p))
        rp_fault_set(&f, RP_ERR_DOUBLE_FREE, NULL, p, p, 0,
                     "%s%p is already free (a mapped block, unmapped when it was freed)", who, p);
    else
        rp_fault_set(&f, RP_ERR_INVALID_FREE, NULL, p, NULL, 0,
                     "%s%p was not allocated by rampart (it is in no rampart heap)", who, p);
    rp_report_fault(&f);
}
