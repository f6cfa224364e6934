/* rpd_caller_path (rpdump.h): relative paths under `bazel run` are the caller's. */
#include <stdlib.h>
#include <string.h>

#include "rpdump.h"

char *rpd_caller_path(const char *path)
{
    const char *dir = getenv("BUILD_WORKING_DIRECTORY");
    if (!path || !dir || !dir[0] || path[0] == '/' || !strcmp(path, "-"))
        return NULL;
    size_t a = strlen(dir), b = strlen(path);
    char *full = malloc(a + 1 + b + 1);
    if (!full)
        return NULL;
    memcpy(full, dir, a);
    full[a] = '/';
    memcpy(full + a + 1, path, b + 1);
    return full;
}
