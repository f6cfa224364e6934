/* Failing a harness: see expect.h. */
#include "fuzz/expect.h"

#include <stdarg.h>
#include <stdlib.h>

int expect_tracing;
static fail_context_fn context_before, context_after;

void expect_context(fail_context_fn before, fail_context_fn after)
{
    context_before = before;
    context_after = after;
}

void expect_fail(const char *fmt, ...)
{
    if (context_before)
        context_before(stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (context_after)
        context_after(stderr);
    abort();
}
