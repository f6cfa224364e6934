#include "sort.h"

#include <string.h>

static void swap(char *a, char *b, size_t size)
{
    char t[64];
    memcpy(t, a, size);
    memcpy(a, b, size);
    memcpy(b, t, size);
}

static void sift_down(char *base, size_t root, size_t n, size_t size, int (*before)(const void *, const void *))
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && before(base + child * size, base + (child + 1) * size))
            child++;
        if (!before(base + root * size, base + child * size))
            return;
        swap(base + root * size, base + child * size, size);
        root = child;
    }
}

void rp_sort(void *base, size_t n, size_t size, int (*before)(const void *a, const void *b))
{
    char *b = base;
    if (n < 2 || size > 64)
        return;
    for (size_t start = n / 2; start-- > 0;)
        sift_down(b, start, n, size, before);
    for (size_t end = n; end-- > 1;) {
        swap(b, b + end * size, size);
        sift_down(b, 0, end, size, before);
    }
}
