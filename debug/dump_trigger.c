/* Automatic dumps: on a signal (option dump_signal), every dump_interval seconds, on a new peak
 * of the live bytes (dump_on_peak, decided by the malloc drop-in: src/malloc/malloc_totals.c)
 * and at exit (dump_at_exit).
 *
 * A signal handler may only do async-signal-safe work, and a dump takes heap locks and walks
 * the heaps: so the handler writes one byte into a pipe and returns, and so does a peak request
 * (rpd_request, dump_request.h: it comes from inside malloc). A dumper thread, started at load
 * time when any of dump_signal, dump_interval and dump_on_peak is set, waits on the pipe (with
 * a timeout when dump_interval is set) and writes the dumps in ordinary thread context. Bytes
 * that arrive while a dump is being written are read in one go afterwards, so a burst of
 * requests costs one more dump, not one each. The pipe's write end is non-blocking: a signal
 * storm can never block the handler, nor a request its thread. Interval dumps are counted from
 * the end of the previous dump of any kind.
 *
 * The exit dump is an atexit handler registered at load time; handlers run in reverse order
 * of registration, so it runs after those the program registers itself. Dumps are serialised
 * by one mutex, and the exit dump tells the dumper thread to stop: a dump in progress at exit
 * is finished first, and none is started after the exit dump (one cut off by the process
 * ending would leave a PATH.tmp behind). A forked child has no dumper thread: its signal,
 * interval and peak dumps are off.
 *
 * Both are set up by a constructor, which is why //debug:dump and the debug bundle are
 * alwayslink libraries. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug/dump_internal.h"
#include "debug/dump_request.h"
#include "src/clock.h"
#include "src/options.h"
#include "src/signal_action.h"

/* Tells the options parser that this library has the dump writer (src/options.h). */
const char rp_options_part_dump = 1;

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting; /* under dump_lock: the exit dump has started, no more signal dumps */
static int request_read_fd = -1;
static int request_write_fd = -1; /* atomic: read by the signal handler; -1 = no dumper */

static void say(const char *a, const char *b, const char *c)
{
    const char *parts[] = {"rampart: ", a, b, c, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t n = write(STDERR_FILENO, parts[i], strlen(parts[i]));
        (void)n;
    }
}

/* Runs in the dumper thread or at exit, never in a handler: no heap is locked here, so even
 * the libc calls that may allocate (strerror) are safe. */
static void dump_and_tell(unsigned reason)
{
    pthread_mutex_lock(&dump_lock);
    if (!exiting) {
        exiting = reason == RPD_REASON_EXIT;
        char path[4096];
        if (rpd_dump_to_path_for(NULL, reason, path, sizeof path) == 0)
            say("heap dump written to ", path, "");
        else
            say("heap dump failed: ", strerror(errno), "");
    }
    pthread_mutex_unlock(&dump_lock);
}

int rpd_request(int what)
{
    int saved = errno;
    int fd = __atomic_load_n(&request_write_fd, __ATOMIC_RELAXED);
    if (fd >= 0) {
        char byte = (char)what;
        ssize_t n = write(fd, &byte, 1); /* a full pipe already holds a pending request */
        (void)n;
    }
    errno = saved;
    return fd >= 0 ? 0 : -1;
}

static void on_dump_signal(int sig)
{
    (void)sig;
    (void)rpd_request(RPD_REQUEST_SIGNAL);
}

static unsigned interval_s; /* dump_interval */

/* The reason a batch of requests records: a signal if any asked, else a peak. */
static unsigned reason_of(const char *requests, ssize_t n)
{
    for (ssize_t i = 0; i < n; i++)
        if (requests[i] == RPD_REQUEST_SIGNAL)
            return RPD_REASON_SIGNAL;
    return RPD_REASON_PEAK;
}

static void *dumper_main(void *arg)
{
    (void)arg;
    char requests[256];
    uint64_t next = interval_s ? rp_clock_ms() + (uint64_t)interval_s * 1000u : 0;
    for (;;) {
        int timeout = -1;
        if (next) {
            uint64_t now = rp_clock_ms();
            timeout = now >= next ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
        }
        struct pollfd pfd = {request_read_fd, POLLIN, 0};
        int ready = poll(&pfd, 1, timeout);
        if (ready < 0 && errno != EINTR)
            return NULL;
        unsigned reason = RPD_REASON_INTERVAL;
        if (ready > 0) {
            ssize_t n = read(request_read_fd, requests, sizeof requests);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return NULL;
            reason = reason_of(requests, n);
        } else if (!next || rp_clock_ms() < next) {
            continue; /* interrupted, or a partial wait of a long interval */
        }
        dump_and_tell(reason);
        if (next)
            next = rp_clock_ms() + (uint64_t)interval_s * 1000u;
    }
}

/* The signal that requests dumps, and what it did before rampart handled it. */
static int dump_sig;
static struct sigaction previous_action;

/* The child of a fork has no dumper thread: it must not feed its parent's pipe, and the dump
 * lock may have been held by that thread at the fork. The signal does again what it did
 * before (a handler left in place would swallow it). */
static void forget_dumper_in_child(void)
{
    __atomic_store_n(&request_write_fd, -1, __ATOMIC_RELAXED);
    pthread_mutex_init(&dump_lock, NULL);
    if (dump_sig > 0)
        (void)sigaction(dump_sig, &previous_action, NULL);
}

/* Starts the dumper thread and its pipe. 0, or -1 (said why). */
static int start_dumper(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        say("signal, interval and peak dumps are off: ", strerror(errno), "");
        return -1;
    }
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    request_read_fd = fds[0];

    /* The dumper thread blocks every signal, so signals go to the program's threads. */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, dumper_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        close(fds[0]);
        close(fds[1]);
        say("signal, interval and peak dumps are off: ", strerror(rc), "");
        return -1;
    }
    __atomic_store_n(&request_write_fd, fds[1], __ATOMIC_RELAXED);
    pthread_atfork(NULL, NULL, forget_dumper_in_child);
    return 0;
}

static void start_signal_dumps(int sig)
{
    char num[16];
    size_t k = sizeof num - 1;
    num[k] = 0;
    for (int v = sig; v > 0 && k > 0; v /= 10)
        num[--k] = (char)('0' + v % 10);
    /* A synchronous fault (a bad access, a trap, an abort) would run the handler again at the
     * faulting instruction: a dump loop instead of a crash. The options refuse them too. */
    if (rp_options_fault_signal(sig)) {
        say("dump_signal=", num + k, " is a fault signal; signal dumps are off");
        return;
    }
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0) {
        say("dump_signal=", num + k, " cannot be handled; signal dumps are off");
        return;
    }
    /* The program's own handler (either kind) stays: dumps on this signal are off. */
    if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
        say("dump_signal=", num + k, " already has a handler; signal dumps are off");
        return;
    }
    dump_sig = sig;
    rp_sigaction_keep(&previous_action, &old); /* not a copy: src/signal_action.h */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0)
        say("dump_signal=", num + k, " cannot be handled; signal dumps are off");
}

static void dump_at_exit(void) { dump_and_tell(RPD_REASON_EXIT); }

__attribute__((constructor)) static void dump_triggers_init(void)
{
    const rp_options *o = rp_options_get();
    if (o->dump_at_exit)
        atexit(dump_at_exit);
    interval_s = o->dump_interval;
    if ((o->dump_signal > 0 || o->dump_interval > 0 || o->dump_on_peak) && start_dumper() == 0 && o->dump_signal > 0)
        start_signal_dumps(o->dump_signal);
}
