/* The debug flavour's malloc linked in statically (//src:rampart_malloc_debug, link-time
 * replacement): this binary's malloc, free, ... are rampart's debug heap. Checks the debug
 * semantics through the C API (usable size = requested size, fill patterns, calloc zeroes,
 * realloc keeps the bytes) and that recorded stacks are cut after malloc in a static link
 * too: the leak report names this file's function as frame #0, main as #1. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_debug.h"
#include "rampart_malloc.h"
#include "debug_testing.h"
#include "testing.h"

/* The block leak_site leaks, kept disguised (xor HIDE) so that the leak scan finds no pointer
 * to it, yet the test can free it afterwards. */
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static volatile uintptr_t kept_hidden;

__attribute__((noinline)) void *leak_site(size_t n)
{
    void *p = malloc(n);
    KEEP_FRAME();
    return p;
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* The function name of frame #k under the group header `at`. */
static void frame_name(const char *at, int k, char *out, size_t len)
{
    out[0] = 0;
    const char *p = at;
    for (int i = 0; i <= k && p; i++)
        p = strchr(p + 1, '\n');
    const char *in = p ? strstr(p, " in ") : NULL;
    if (!in)
        return;
    in += 4;
    size_t n = strcspn(in, "+ \n");
    snprintf(out, len, "%.*s", (int)n, in);
}

int main(void)
{
    CHECK(strcmp(rp_flavour(), "debug") == 0);
    unsigned char *p = malloc(37);
    REQUIRE(p);
    CHECK(malloc_usable_size(p) == 37 && all_bytes(p, 37, 0xbe));
    memset(p, 'a', 37);
    p = realloc(p, 5000);
    REQUIRE(p);
    CHECK(malloc_usable_size(p) == 5000 && all_bytes(p, 37, 'a'));
    free(p);
    unsigned char *z = calloc(10, 10);
    CHECK(z && all_bytes(z, 100, 0));
    free(z);

    kept_hidden = (uintptr_t)leak_site(4321) ^ HIDE;
    KEEP_FRAME();
    REQUIRE(kept_hidden != HIDE);
    const char *dir = getenv("TEST_TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/static-leaks.txt", dir ? dir : "/tmp");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    CHECK(rp_leak_report(rp_heap_of((void *)(kept_hidden ^ HIDE)), fd) >= 1);
    static char text[65536];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = 0;
    close(fd);
    const char *group = strstr(text, "Direct leak of 4321 byte(s) in 1 object(s) allocated from:");
    CHECKF(group != NULL, "no group for the leaked block:\n%s", text);
    if (group) {
        char name[96];
        frame_name(group, 0, name, sizeof name);
        CHECKF(strcmp(name, "leak_site") == 0, "frame #0 is '%s':\n%s", name, text);
        frame_name(group, 1, name, sizeof name);
        CHECKF(strcmp(name, "main") == 0, "frame #1 is '%s':\n%s", name, text);
    }
    free((void *)(kept_hidden ^ HIDE));
    char why[256];
    CHECKF(rp_malloc_check(why, sizeof why) == 0, "%s", why);
    TEST_MAIN_END();
}
