/* qs_status.h — `qsweep --status DIR`: where every run of a sweep is.
 *
 * Owns: the states a sweep on Slurm reports per run, from the summary's row
 * (the run file and failure marker, qs_summary.h) and Slurm's view of the
 * run's latest array task (qs_sched.h), first match wins:
 *   done, diverged  the run file says so (a result, whatever Slurm says)
 *   pending         squeue lists the task PENDING
 *   running         squeue lists it in another state (RUNNING, SUSPENDED,
 *                   COMPLETING, ...), or a qtrain holds the run file's writer lock
 *   failed          a failure marker (qtrain exited 1/2 or crashed), the run
 *                   file says failed, or sacct says FAILED, OUT_OF_MEMORY,
 *                   NODE_FAIL or BOOT_FAIL
 *   interrupted     a run file that stopped short (scancel, a time limit, a
 *                   kill): the next --submit resumes it from its checkpoint
 *   not submitted   no run file, and no submission holds the run
 *   missing         no run file, and not queued although submitted
 *   unreadable      the run file cannot be read
 * With sacct (Slurm's accounting, slurmdbd) each run also shows its latest
 * task's exit code (RC:SIGNAL), elapsed time, the largest MaxRSS of its steps
 * and the node(s) it ran on; "-" where sacct does not know them.
 * Without squeue the queue is unknown (a pending run shows as not submitted
 * or missing), without sacct (no slurmdbd) there are no final Slurm states:
 * the report says which it lacked. */
#ifndef QS_STATUS_H
#define QS_STATUS_H

#include <stddef.h>
#include <stdio.h>

#include "qs_grid.h"
#include "qs_ini.h"

/* Print the report to f. Returns 0, or -1 with err (DIR/slurm.jobs
 * unreadable, out of memory). */
int qs_status_print(const qs_experiment *e, const qs_plan *p, FILE *f, char *err, size_t errlen);

#endif
