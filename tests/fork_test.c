/* fork() while other threads use the heap core directly (no malloc drop-in): the core's own
 * fork handlers take every heap's lock around the fork, so a child can always use the heaps
 * its parent's threads were inside of. Without them a child deadlocked in a few tries out of
 * five. Release flavour. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "testing.h"

static rp_heap *shared;
static volatile int stop;

static void *busy(void *arg)
{
    rp_heap *h = arg ? shared : NULL; /* a user heap, and the default heap */
    void *keep[64] = {0};
    for (unsigned n = 0; !stop; n++) {
        rp_free(keep[n % 64]);
        keep[n % 64] = rp_alloc(h, 16 + n % 3000, n % 7 ? 0 : 64);
    }
    for (int i = 0; i < 64; i++)
        rp_free(keep[i]);
    return NULL;
}

int main(void)
{
    shared = rp_heap_create(NULL);
    REQUIRE(shared);
    pthread_t t[2];
    REQUIRE(pthread_create(&t[0], NULL, busy, (void *)1) == 0);
    REQUIRE(pthread_create(&t[1], NULL, busy, NULL) == 0);
    int hung = 0, failed = 0;
    for (int i = 0; i < 100; i++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            alarm(5); /* a deadlock ends as SIGALRM */
            for (int k = 0; k < 100; k++) {
                rp_free(rp_alloc(shared, 100 + k, 0));
                rp_free(rp_alloc(NULL, 5000 + k, 0));
            }
            char why[256];
            _exit(rp_heap_check(shared, why, sizeof why) == 0 && rp_heap_check(NULL, why, sizeof why) == 0 ? 0 : 3);
        }
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        hung += WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    stop = 1;
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECKF(hung == 0 && failed == 0, "of 100 children, %d deadlocked and %d failed", hung, failed);
    CHECK_HEAP(shared);
    rp_heap_destroy(shared);
    TEST_MAIN_END();
}
