/* Failing a harness: an expectation that does not hold prints where the harness was and what
 * was wrong, then aborts, so libFuzzer records the input (the replay test fails). Each harness
 * says where it is through a context function; TRACE prints while tracing is on (the
 * harness's *_TRACE environment variable), for reading a crasher. */
#ifndef RP_FUZZ_EXPECT_H
#define RP_FUZZ_EXPECT_H

#include <stdio.h>

/* Prints the harness's position ("malloc_api: operation 3 (free): ") before a failure's
 * message, or (after) anything that explains it; either may be NULL. */
typedef void (*fail_context_fn)(FILE *out);
void expect_context(fail_context_fn before, fail_context_fn after);

__attribute__((noreturn, format(printf, 1, 2))) void expect_fail(const char *fmt, ...);

#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond))                                                                           \
            expect_fail(__VA_ARGS__);                                                          \
    } while (0)

extern int expect_tracing;
#define TRACE(...)                                                                             \
    do {                                                                                       \
        if (expect_tracing)                                                                    \
            fprintf(stderr, __VA_ARGS__);                                                      \
    } while (0)

#endif
