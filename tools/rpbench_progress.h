/* rpbench's progress line: what is being measured, how far the run is and an estimate of the
 * time left. On a terminal one line is rewritten in place; otherwise (a log, a pipe) each step
 * prints a line of its own.
 *
 * The estimate: each kind of step (a scenario) has a planned count; the time left is, per
 * kind, the steps left times the mean duration of its steps so far (a first guess until one
 * has finished). */
#ifndef RPBENCH_PROGRESS_H
#define RPBENCH_PROGRESS_H

/* Plans `steps` more steps of kind `kind` (0 <= kind < 16), each guessed to take guess_s
 * seconds until one has been timed. */
void rpb_progress_plan(int kind, long steps, double guess_s);

/* Starts a step of that kind: ends the previous step (its duration counts for its kind) and
 * shows what, the steps done of all planned and the time left. */
void rpb_progress_step(int kind, const char *what);

/* Ends the last step and clears the line (on a terminal). */
void rpb_progress_done(void);

#endif
