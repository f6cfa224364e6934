#define _POSIX_C_SOURCE 200809L
#include "rpbench_progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define KINDS 16

static long planned[KINDS], done[KINDS];
static double guess[KINDS], spent[KINDS];
static int current = -1;
static double started;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void rpb_progress_plan(int kind, long steps, double guess_s)
{
    if (kind < 0 || kind >= KINDS || steps <= 0)
        return;
    planned[kind] += steps;
    guess[kind] = guess_s;
}

static void end_step(void)
{
    if (current < 0)
        return;
    spent[current] += now_s() - started;
    done[current]++;
    current = -1;
}

/* "12 min", "40 s" */
static void format_left(double s, char *buf, size_t len)
{
    if (s >= 5400)
        snprintf(buf, len, "%.1f h", s / 3600);
    else if (s >= 90)
        snprintf(buf, len, "%.0f min", s / 60);
    else
        snprintf(buf, len, "%.0f s", s);
}

void rpb_progress_step(int kind, const char *what)
{
    end_step();
    if (kind < 0 || kind >= KINDS)
        return;
    long all = 0, finished = 0;
    double left = 0;
    for (int k = 0; k < KINDS; k++) {
        all += planned[k];
        finished += done[k];
        long remaining = planned[k] - done[k];
        if (remaining > 0)
            left += (double)remaining * (done[k] ? spent[k] / (double)done[k] : guess[k]);
    }
    char eta[32];
    format_left(left, eta, sizeof eta);
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[Krpbench: [%ld/%ld, about %s left] %s", finished + 1, all, eta, what);
    else
        fprintf(stderr, "rpbench: [%ld/%ld, about %s left] %s\n", finished + 1, all, eta, what);
    fflush(stderr);
    current = kind;
    started = now_s();
}

void rpb_progress_done(void)
{
    end_step();
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}
