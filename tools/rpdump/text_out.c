#include "text_out.h"

#include <stdio.h>

const char *text_size(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

const char *text_clean(char *buf, size_t len, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (len)
        buf[i < len ? i : len - 1] = 0;
    return buf;
}

double text_fragmentation(uint64_t largest_free, uint64_t total_free)
{
    if (!total_free || largest_free >= total_free)
        return 0.0;
    return 1.0 - (double)largest_free / (double)total_free;
}
