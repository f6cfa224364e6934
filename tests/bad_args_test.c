/* Bad arguments and misuse: alignments 3/24/48, SIZE_MAX, n*size overflow, rp_free(NULL),
 * double free, an interior pointer, a stack address and a pointer from another allocator.
 * Misuse is checked twice: in a forked child with the default report function (it must abort
 * with one line naming the address), and in-process with a counting report function (the
 * report carries the right kind and address, and the heap stays consistent and usable). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "testing.h"

typedef struct seen {
    int count;
    rp_error_kind kind;
    const void *address;
    char message[256];
} seen;

static void count_report(const rp_report *r, void *arg)
{
    seen *s = arg;
    s->count++;
    s->kind = r->kind;
    s->address = r->address;
    snprintf(s->message, sizeof s->message, "%s", r->message);
}

/* Runs fn(arg) in a child with the default report function; returns its stderr and sets
 * *signaled to the terminating signal (0 if it exited). */
static void run_child(void (*fn)(void *), void *arg, char *err, size_t errlen, int *signaled)
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < errlen && (k = read(fds[0], err + got, errlen - 1 - got)) > 0)
        got += (size_t)k;
    err[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    *signaled = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void *g_ptr;
static void free_g(void *arg)
{
    (void)arg;
    rp_free(g_ptr);
}

static void expect_abort(const char *what, void *p, const char *kind)
{
    char err[512], addr[32];
    int sig;
    g_ptr = p;
    run_child(free_g, NULL, err, sizeof err, &sig);
    snprintf(addr, sizeof addr, "%p", p);
    CHECKF(sig == SIGABRT, "%s: child ended with signal %d", what, sig);
    CHECKF(strstr(err, addr) != NULL, "%s: message does not name %s: %s", what, addr, err);
    CHECKF(strstr(err, kind) != NULL, "%s: message is not '%s': %s", what, kind, err);
    /* One line. */
    char *nl = strchr(err, '\n');
    CHECKF(nl && nl[1] == 0, "%s: not exactly one line: %s", what, err);
}

static void expect_report(seen *s, const char *what, void *p, rp_error_kind kind)
{
    memset(s, 0, sizeof *s);
    rp_free(p);
    CHECKF(s->count == 1, "%s: %d reports", what, s->count);
    CHECKF(s->kind == kind, "%s: kind %s", what, rp_error_kind_name(s->kind));
    CHECKF(s->address == p, "%s: report names %p, not %p", what, s->address, p);
}

int main(void)
{
    rp_heap *h = rp_heap_create(NULL);
    REQUIRE(h);
    size_t aligns[] = {3, 24, 48, 6, 12, 1000};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        errno = 0;
        CHECK(rp_alloc(h, 64, aligns[i]) == NULL && errno == EINVAL);
        errno = 0;
        CHECK(rp_calloc(h, 2, 64, aligns[i]) == NULL && errno == EINVAL);
    }
    /* Alignments up to 1 GiB are served; larger ones fail at once with ENOMEM (they would take
     * a region as large as the alignment, and its address map). */
    void *giant = rp_alloc(h, 100, (size_t)1 << 30);
    CHECK(giant && ((uintptr_t)giant & (((size_t)1 << 30) - 1)) == 0);
    rp_free(giant);
    size_t too_aligned[] = {(size_t)1 << 31, (size_t)1 << 40, (size_t)1 << 63};
    for (size_t i = 0; i < sizeof too_aligned / sizeof *too_aligned; i++) {
        rp_heap_stats_t before, after;
        rp_heap_stats(h, &before);
        errno = 0;
        CHECKF(rp_alloc(h, 1, too_aligned[i]) == NULL && errno == ENOMEM, "align %zu", too_aligned[i]);
        errno = 0;
        CHECK(rp_calloc(h, 1, 1, too_aligned[i]) == NULL && errno == ENOMEM);
        rp_heap_stats(h, &after);
        CHECKF(after.os_bytes == before.os_bytes, "align %zu mapped %zu bytes", too_aligned[i],
               after.os_bytes - before.os_bytes);
    }
    errno = 0;
    CHECK(rp_alloc(h, SIZE_MAX, 0) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_alloc(h, SIZE_MAX, 4096) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_alloc(h, 16, (size_t)1 << 62) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_calloc(h, SIZE_MAX / 16 + 1, 16, 0) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rp_calloc(h, (size_t)1 << 33, (size_t)1 << 33, 0) == NULL && errno == ENOMEM);
    void *keep = rp_alloc(h, 100, 0);
    errno = 0;
    CHECK(rp_realloc(h, keep, SIZE_MAX) == NULL && errno == ENOMEM);
    rp_free(NULL);
    CHECK_HEAP(h);

    /* Forked children with the default report function: abort, one line, naming the address. */
    void *a = rp_alloc(h, 100, 0);
    void *big = rp_alloc(h, 1 << 20, 0);
    int on_stack;
    rp_free(a);
    expect_abort("double free", a, "double-free");
    void *b = rp_alloc(h, 200, 0);
    expect_abort("interior pointer", (char *)b + 16, "invalid-free");
    expect_abort("interior of a large block", (char *)big + 8192, "invalid-free");
    expect_abort("stack address", &on_stack, "invalid-free");
    void *foreign = malloc(64);
    expect_abort("pointer from another allocator", foreign, "invalid-free");
    rp_free(big);
    expect_abort("double free of a large block", big, "double-free");

    /* In-process, with a counting report function: the heap survives every misuse. */
    seen s;
    rp_set_report_fn(count_report, &s, NULL);
    void *c = rp_alloc(h, 300, 0);
    rp_free(c);
    expect_report(&s, "double free", c, RP_ERR_DOUBLE_FREE);
    expect_report(&s, "interior", (char *)b + 32, RP_ERR_INVALID_FREE);
    expect_report(&s, "misaligned", (char *)b + 1, RP_ERR_INVALID_FREE);
    expect_report(&s, "stack", &on_stack, RP_ERR_INVALID_FREE);
    expect_report(&s, "foreign", foreign, RP_ERR_INVALID_FREE);
    expect_report(&s, "large double free", big, RP_ERR_DOUBLE_FREE);
    memset(&s, 0, sizeof s);
    CHECK(rp_usable_size(&on_stack) == 0 && s.count == 1 && s.kind == RP_ERR_INVALID_FREE);
    memset(&s, 0, sizeof s);
    errno = 0;
    CHECK(rp_realloc(h, c, 10) == NULL && s.count == 1 && s.kind == RP_ERR_DOUBLE_FREE && errno == EINVAL);
    CHECK(rp_heap_of(c) == NULL && rp_heap_of(&on_stack) == NULL);
    CHECK_HEAP(h);
    /* Still usable, and the live blocks are intact. */
    void *d = rp_alloc(h, 300, 64);
    CHECK(d != NULL);
    rp_free(d);
    rp_free(b);
    rp_free(keep);
    CHECK_HEAP(h);
    rp_heap_stats_t st;
    rp_heap_stats(h, &st);
    CHECK(st.blocks_in_use == 0);
    rp_set_report_fn(NULL, NULL, NULL);
    free(foreign);
    rp_heap_destroy(h);
    TEST_MAIN_END();
}
