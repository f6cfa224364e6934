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

/* The peak resident set the kernel reports for a process (ru_maxrss) is a high-water mark that
 * an exec does not reset: a child forked from rpbench starts at rpbench's own resident set,
 * several MiB once its tables are filled, and small programs would all show that floor. So
 * the child execs rpbench again as a small spawner (`rpbench --spawn ...`, a fresh address
 * space), which forks the program from there, waits for it and writes its rusage to a pipe:
 * the program's figure is its own, as /usr/bin/time's is in the suite's bench.sh. */

/* In the child: redirections, then the spawner. Never returns. */
static void exec_child(const rpb_command *cmd, int result_fd)
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
    /* rpbench --spawn FD PRELOAD OPTIONS NENV ENV... ARGV... ("-" = unset) */
    const char *argv[96];
    char fd_s[16], nenv_s[16];
    int n = 0, nenv = 0;
    while (cmd->env && cmd->env[nenv])
        nenv++;
    snprintf(fd_s, sizeof fd_s, "%d", result_fd);
    snprintf(nenv_s, sizeof nenv_s, "%d", nenv);
    argv[n++] = "rpbench";
    argv[n++] = "--spawn";
    argv[n++] = fd_s;
    argv[n++] = cmd->preload && cmd->preload[0] ? cmd->preload : "-";
    argv[n++] = cmd->options ? cmd->options : "-";
    argv[n++] = nenv_s;
    for (int i = 0; i < nenv && n < 60; i++)
        argv[n++] = cmd->env[i];
    for (int i = 0; cmd->argv[i] && n < 95; i++)
        argv[n++] = cmd->argv[i];
    argv[n] = NULL;
    unsetenv("LD_PRELOAD"); /* the spawner runs on the system malloc */
    execv("/proc/self/exe", (char *const *)argv);
    _exit(127);
}

int rpb_spawn_main(int argc, char **argv)
{
    if (argc < 7)
        return 125;
    int fd = atoi(argv[2]), nenv = atoi(argv[5]);
    if (nenv < 0 || 6 + nenv >= argc)
        return 125;
    char **target = argv + 6 + nenv;
    pid_t pid = fork();
    if (pid < 0)
        return 125;
    if (pid == 0) {
        close(fd);
        if (strcmp(argv[3], "-") != 0)
            setenv("LD_PRELOAD", argv[3], 1);
        if (strcmp(argv[4], "-") != 0)
            setenv("RAMPART_OPTIONS", argv[4], 1);
        else
            unsetenv("RAMPART_OPTIONS");
        for (int i = 0; i < nenv; i++)
            putenv(argv[6 + i]);
        execv(target[0], target);
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR)
            return 125;
    char line[128];
    int len = snprintf(line, sizeof line, "%ld %ld.%06ld %ld.%06ld\n", ru.ru_maxrss, (long)ru.ru_utime.tv_sec,
                       (long)ru.ru_utime.tv_usec, (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    if (write(fd, line, (size_t)len) != len)
        return 125;
    close(fd);
    if (WIFSIGNALED(status)) { /* end the same way, so the driver sees the signal */
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
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
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        exec_child(cmd, fds[1]);
    }
    close(fds[1]);
    setpgid(pid, pid); /* also here, so that a kill right after fork finds the group */
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int rc = wait_limited(pid, cmd->timeout_s, &status, &ru, &out->timed_out);
    out->wall_s = now_s() - t0;
    char line[128] = "";
    ssize_t got = rc == 0 ? read(fds[0], line, sizeof line - 1) : -1;
    close(fds[0]);
    if (rc != 0)
        return -1;
    line[got > 0 ? got : 0] = 0;
    long rss_kb = 0;
    double user = 0, sys = 0;
    if (sscanf(line, "%ld %lf %lf", &rss_kb, &user, &sys) == 3) { /* the program's own figures */
        out->user_s = user;
        out->sys_s = sys;
        out->peak_rss_mib = (double)rss_kb / 1024.0;
    } else { /* the spawner did not report (killed at the time limit) */
        out->user_s = seconds(&ru.ru_utime);
        out->sys_s = seconds(&ru.ru_stime);
        out->peak_rss_mib = (double)ru.ru_maxrss / 1024.0;
    }
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
    else if (r->code == 127 || r->code == 126 || r->code == 125)
        snprintf(buf, len, "could not be started (status %d)", r->code);
    else if (r->code != 0)
        snprintf(buf, len, "exited with status %d", r->code);
    else
        buf[0] = 0;
}
