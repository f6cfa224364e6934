#define _GNU_SOURCE
#include "rpbench_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(const struct timeval *t) { return (double)t->tv_sec + (double)t->tv_usec / 1e6; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* In the child: redirections, environment, exec. Never returns. */
static void exec_child(const rpb_command *cmd)
{
    setpgid(0, 0); /* the time limit kills the whole group */
    const char *paths[3] = {cmd->stdin_path, cmd->stdout_path, cmd->stderr_path};
    for (int fd = 0; fd < 3; fd++) {
        const char *p = paths[fd] ? paths[fd] : "/dev/null";
        int f = fd == 0 ? open(p, O_RDONLY) : open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (f < 0 || dup2(f, fd) < 0)
            _exit(126);
        if (f != fd)
            close(f);
    }
    if (cmd->cwd && chdir(cmd->cwd) != 0)
        _exit(126);
    if (cmd->preload && cmd->preload[0])
        setenv("LD_PRELOAD", cmd->preload, 1);
    else
        unsetenv("LD_PRELOAD");
    if (cmd->options)
        setenv("RAMPART_OPTIONS", cmd->options, 1);
    else
        unsetenv("RAMPART_OPTIONS");
    for (int i = 0; cmd->env && cmd->env[i]; i++)
        putenv((char *)cmd->env[i]);
    execv(cmd->argv[0], (char *const *)cmd->argv);
    _exit(127);
}

/* Waits for pid up to timeout_s (0 = for ever); kills its group at the limit. */
static int wait_limited(pid_t pid, double timeout_s, int *status, struct rusage *ru, int *timed_out)
{
    *timed_out = 0;
    if (timeout_s > 0) {
        int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
        double deadline = now_s() + timeout_s;
        for (;;) {
            double left = deadline - now_s();
            if (left <= 0) {
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                *timed_out = 1;
                break;
            }
            if (pfd >= 0) {
                struct pollfd p = {pfd, POLLIN, 0};
                int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
                if (poll(&p, 1, ms) > 0)
                    break;
            } else {
                pid_t w = wait4(pid, status, WNOHANG, ru);
                if (w == pid) {
                    return 0;
                }
                usleep(2000); /* no pidfd: poll the child every 2 ms */
            }
        }
        if (pfd >= 0)
            close(pfd);
    }
    while (wait4(pid, status, 0, ru) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

int rpb_exec(const rpb_command *cmd, rpb_exec_result *out)
{
    memset(out, 0, sizeof *out);
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        exec_child(cmd);
    setpgid(pid, pid); /* also here, so that a kill right after fork finds the group */
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (wait_limited(pid, cmd->timeout_s, &status, &ru, &out->timed_out) != 0)
        return -1;
    out->wall_s = now_s() - t0;
    out->user_s = seconds(&ru.ru_utime);
    out->sys_s = seconds(&ru.ru_stime);
    out->peak_rss_mib = (double)ru.ru_maxrss / 1024.0; /* Linux reports KiB */
    out->exited = WIFEXITED(status);
    out->code = out->exited ? WEXITSTATUS(status) : 0;
    out->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

void rpb_exec_describe(const rpb_exec_result *r, double timeout_s, char *buf, size_t len)
{
    if (r->timed_out)
        snprintf(buf, len, "timed out after %g s", timeout_s);
    else if (!r->exited)
        snprintf(buf, len, "killed by signal %d (SIG%s)", r->signal,
                 sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
    else if (r->code == 127)
        snprintf(buf, len, "could not be started (status 127)");
    else if (r->code != 0)
        snprintf(buf, len, "exited with status %d", r->code);
    else
        buf[0] = 0;
}
