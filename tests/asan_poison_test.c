/* The debug flavour under AddressSanitizer (--config=asan): headers, debug metadata, trailer
 * padding, quarantined blocks and free span memory are poisoned with ASan's manual-poisoning
 * interface, user bytes are not, so ASan itself reports an overflow from user code into the
 * next block's header at the faulting write — and a heap's memory is unpoisoned before it goes
 * back to the OS.
 *
 * Without ASan (the default gcc run) the same overflow, in the same child process, must be
 * caught by rampart itself when the block is freed: the test is meaningful in both builds and
 * checks whichever detector the build has. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "rampart_debug.h"
#include "testing.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif
#ifdef UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* The program's bug: an off-by-N write from user code (instrumented under ASan). */
__attribute__((noinline)) void write_past_end(char *p, long at)
{
    p[at] = 0x5a;
    KEEP_FRAME();
}

/* Runs the overflow in a child; returns what it printed on stderr and how it ended. */
static int run_overflow_child(char *err, size_t len, int *status, void **header)
{
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    rp_heap *h = rp_heap_create(NULL);
    char *a = rp_alloc(h, 40, 0); /* 48 usable bytes in the core's block: 40 + 8 trailer */
    char *b = rp_alloc(h, 40, 0);
    REQUIRE(a && b && b == a + 96);
    *header = a + 48; /* b's 16-byte block header */
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(pipe_fds[1], 2);
        close(pipe_fds[0]);
        write_past_end(a, 48);
        rp_free(a);
        _exit(0);
    }
    close(pipe_fds[1]);
    size_t used = 0;
    ssize_t n;
    while (used + 1 < len && (n = read(pipe_fds[0], err + used, len - 1 - used)) > 0)
        used += (size_t)n;
    err[used] = 0;
    close(pipe_fds[0]);
    waitpid(pid, status, 0);
    rp_free(b);
    rp_free(a);
    rp_heap_destroy(h);
    return 0;
}

static void check_overflow_is_reported(void)
{
    static char err[65536];
    int status = 0;
    void *header = NULL;
    run_overflow_child(err, sizeof err, &status, &header);
    char addr[32];
    snprintf(addr, sizeof addr, "%p", header);
#ifdef UNDER_ASAN
    /* ASan stops the write itself: a use-after-poison WRITE at the header, in our function. */
    CHECKF(strstr(err, "ERROR: AddressSanitizer: use-after-poison on address") != NULL, "no ASan report:\n%s", err);
    CHECKF(strstr(err, addr) != NULL, "ASan report does not name %s:\n%s", addr, err);
    CHECKF(strstr(err, "WRITE of size 1") != NULL && strstr(err, "write_past_end") != NULL, "%s", err);
    CHECKF(strstr(err, "ERROR: rampart") == NULL, "rampart reported first:\n%s", err);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0);
#else
    /* Without ASan, rampart catches the same write when the block is freed. */
    CHECKF(strstr(err, "ERROR: rampart: corrupted-block-header on address") != NULL, "no rampart report:\n%s", err);
    CHECKF(strstr(err, addr) != NULL, "rampart report does not name %s:\n%s", addr, err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
#endif
}

#ifdef UNDER_ASAN
static int poisoned(const void *p) { return __asan_address_is_poisoned(p); }

typedef struct free_seen {
    char *addr;
    size_t size;
} free_seen;

static int find_free(const rp_block_info *b, void *arg)
{
    free_seen *f = arg;
    if (b->state == RP_BLOCK_FREE && b->tier == RP_TIER_SPAN && b->size > 64 && !f->addr) {
        f->addr = b->addr;
        f->size = b->size;
    }
    return 0;
}

static void check_poison_map(void)
{
    rp_heap *h = rp_heap_create(NULL);
    char *a = rp_alloc(h, 40, 0);
    char *b = rp_alloc(h, 13, 0);
    REQUIRE(a && b);
    for (int i = 0; i < 40; i++)
        CHECKF(!poisoned(a + i), "user byte %d poisoned", i);
    for (int i = 40; i < 48; i++)
        CHECKF(poisoned(a + i), "trailer byte %d not poisoned", i);
    for (int i = 1; i <= 48; i++)
        CHECKF(poisoned(a - i), "header/metadata byte -%d not poisoned", i);
    CHECK(!poisoned(b + 12) && poisoned(b + 13));
    /* Quarantined: the whole block. */
    rp_free(b);
    CHECK(poisoned(b) && poisoned(b + 12));
    /* Free span memory. */
    free_seen f = {0};
    rp_heap_walk(h, find_free, &f);
    REQUIRE(f.addr);
    CHECK(poisoned(f.addr) && poisoned(f.addr + 40) && poisoned(f.addr + f.size - 1));
    /* Large blocks: the lead page is allocator space. */
    char *big = rp_alloc(h, 100000, 0);
    REQUIRE(big);
    CHECK(!poisoned(big) && !poisoned(big + 99999) && poisoned(big + 100000) && poisoned(big - 1) &&
          poisoned(big - 4096));
    rp_free(big);
    CHECK(poisoned(big));

    /* After destruction the memory goes back to the OS unpoisoned: map it again and use it. */
    char *region_byte = f.addr;
    rp_heap_destroy(h);
    void *again = mmap(region_byte, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
    if (again == region_byte) {
        CHECKF(!poisoned(region_byte), "memory of a destroyed heap is still poisoned");
        munmap(again, 4096);
    }
}
#endif

int main(void)
{
    check_overflow_is_reported();
#ifdef UNDER_ASAN
    check_poison_map();
    printf("ASan build: poisoning checked\n");
#else
    printf("no ASan in this build: rampart's own detection checked (run with --config=asan for ASan's)\n");
#endif
    TEST_MAIN_END();
}
