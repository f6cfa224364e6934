/* A minimal test harness: CHECK prints file:line and the failed expression, and the test
 * exits non-zero at the end (or at once with REQUIRE). */
#ifndef RP_TESTING_H
#define RP_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

#define CHECKF(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

#define REQUIRE(cond)                                                                          \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* Asserts rp_heap_check passes, printing its message otherwise. */
#define CHECK_HEAP(h)                                                                          \
    do {                                                                                       \
        char why_[256];                                                                        \
        if (rp_heap_check((h), why_, sizeof why_) != 0) {                                      \
            fprintf(stderr, "%s:%d: heap check failed: %s\n", __FILE__, __LINE__, why_);       \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

#define TEST_MAIN_END()                                                                        \
    do {                                                                                       \
        if (test_failures) {                                                                   \
            fprintf(stderr, "%d check(s) failed\n", test_failures);                            \
            return 1;                                                                          \
        }                                                                                      \
        printf("all checks passed\n");                                                         \
        return 0;                                                                              \
    } while (0)

/* splitmix64: small, seedable, reproducible. */
typedef struct test_rng {
    unsigned long long s;
} test_rng;

static inline unsigned long long rng_next(test_rng *r)
{
    unsigned long long z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline unsigned long long rng_below(test_rng *r, unsigned long long n)
{
    return n ? rng_next(r) % n : 0;
}

/* malloc(size) and free of the result, for their side effects (a thread's cache set up, a
 * bin's first limit reserved): called through volatile pointers, because an optimising
 * compiler may pair a malloc with its free and drop both (gcc -O2 does). */
static inline void test_malloc_free(size_t size)
{
    void *(*volatile m)(size_t) = malloc;
    void (*volatile f)(void *) = free;
    f(m(size));
}

#endif
