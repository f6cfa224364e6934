/* Running this test binary again as a child process (re-executed through /proc/self/exe with
 * its own RAMPART_OPTIONS, since options are read once per process) and collecting what it
 * printed and how it ended. For tests of reports that abort the process. */
#ifndef RP_TEST_CHILD_PROCESS_H
#define RP_TEST_CHILD_PROCESS_H

/* Needs _GNU_SOURCE (or POSIX 2008) defined before the first system header. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct child_result {
    int exited;      /* 1: exit status in code; 0: killed by signal `signal` */
    int code;
    int signal;
    char out[32768]; /* stdout */
    char err[65536]; /* stderr */
} child_result;

/* Reads both pipes to the end (poll, so neither side can block the other). */
static void child_drain(int out_fd, int err_fd, child_result *r)
{
    size_t out_len = 0, err_len = 0;
    struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char *buf = i == 0 ? r->out : r->err;
            size_t *len = i == 0 ? &out_len : &err_len;
            size_t cap = (i == 0 ? sizeof r->out : sizeof r->err) - 1;
            char scratch[4096];
            ssize_t n = read(fds[i].fd, scratch, sizeof scratch);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            size_t k = (size_t)n < cap - *len ? (size_t)n : cap - *len;
            memcpy(buf + *len, scratch, k);
            *len += k;
        }
    }
    r->out[out_len] = 0;
    r->err[err_len] = 0;
}

/* Runs argv (searched on PATH) with RAMPART_OPTIONS set to options (unset when NULL),
 * collecting its output and status. Returns 0, or -1 if it could not be started. */
static inline int run_argv(char *const argv[], const char *options, child_result *r)
{
    memset(r, 0, sizeof *r);
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        close(out[1]);
        close(err[1]);
        if (options)
            setenv("RAMPART_OPTIONS", options, 1);
        else
            unsetenv("RAMPART_OPTIONS");
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s\n", argv[0]);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    child_drain(out[0], err[0], r);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->exited = WIFEXITED(status);
    r->code = r->exited ? WEXITSTATUS(status) : 0;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

/* Runs this test binary again (/proc/self/exe) with one argument. */
static inline int run_child(const char *arg, const char *options, child_result *r)
{
    char *argv[] = {(char *)"/proc/self/exe", (char *)arg, NULL};
    return run_argv(argv, options, r);
}

#endif
