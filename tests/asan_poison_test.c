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

#include "child_process.h"
#include "debug_testing.h"
#include "rampart.h"
#include "rampart_debug.h"
#include "testing.h"

#ifdef UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif


/* The program's bug: an off-by-N write from user code (instrumented under ASan). */
__attribute__((noinline)) void write_past_end(char *p, long at)
{
    p[at] = 0x5a;
    KEEP_FRAME();
}

/* Runs the overflow in a forked child (the heap is set up before the fork, so the child's
 * only action is the bad write and the free); collects its stderr and status. */
static void run_overflow_child(child_result *r, void **header)
{
    int out[2], err[2];
    REQUIRE(pipe(out) == 0 && pipe(err) == 0);
    rp_heap *h = rp_heap_create(NULL);
    char *a = rp_alloc(h, 40, 0); /* 48 usable bytes in the core's block: 40 + 8 trailer */
    char *b = rp_alloc(h, 40, 0);
    REQUIRE(a && b && b == a + 96);
    *header = a + 48; /* b's 16-byte block header */
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        write_past_end(a, 48);
        rp_free(a);
        _exit(0);
    }
    close(out[1]);
    close(err[1]);
    child_drain(out[0], err[0], r);
    int status;
    waitpid(pid, &status, 0);
    r->exited = WIFEXITED(status);
    r->code = r->exited ? WEXITSTATUS(status) : 0;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    rp_free(b);
    rp_free(a);
    rp_heap_destroy(h);
}

static void check_overflow_is_reported(void)
{
    static child_result r;
    void *header = NULL;
    run_overflow_child(&r, &header);
    const char *err = r.err;
    char addr[32];
    snprintf(addr, sizeof addr, "%p", header);
#ifdef UNDER_ASAN
    /* ASan stops the write itself: a use-after-poison WRITE at the header, in our function. */
    CHECKF(strstr(err, "ERROR: AddressSanitizer: use-after-poison on address") != NULL, "no ASan report:\n%s", err);
    CHECKF(strstr(err, addr) != NULL, "ASan report does not name %s:\n%s", addr, err);
    CHECKF(strstr(err, "WRITE of size 1") != NULL && strstr(err, "write_past_end") != NULL, "%s", err);
    CHECKF(strstr(err, "ERROR: rampart") == NULL, "rampart reported first:\n%s", err);
    CHECK(r.exited && r.code != 0);
#else
    /* Without ASan, rampart catches the same write when the block is freed, and blames the
     * block whose end it crossed. */
    CHECKF(strstr(err, "ERROR: rampart: heap-buffer-overflow on address") != NULL, "no rampart report:\n%s", err);
    CHECKF(strstr(err, addr) != NULL, "rampart report does not name %s:\n%s", addr, err);
    CHECK(!r.exited && r.signal == SIGABRT);
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
