/* qs_sched.h — talking to Slurm: submitting the job array, asking where
 * its tasks are, and the folder's record of what was submitted.
 *
 * Owns: DIR/slurm.jobs, one line per submission, "JOBID TASKS" (TASKS:
 * the array indices = run indices, as sbatch's --array takes them, e.g.
 * "0-3" or "1,5-7"), appended after sbatch accepted the array; and every
 * call of sbatch, squeue and sacct (found on PATH, run with fork/exec, their
 * output parsed here):
 *   sbatch --parsable --array=TASKS SCRIPT            -> the job id
 *   squeue -h -r -j JOB,JOB... -o %F|%K|%T            -> tasks still queued
 *   sacct -n -P -j JOB,JOB... -o JobID,State,ExitCode,Elapsed,MaxRSS,NodeList
 *                                                     -> how tasks ended: the
 *     allocation's line (JOB_TASK) gives the state, exit code, elapsed time
 *     and nodes; its steps' lines (JOB_TASK.batch, JOB_TASK.0, ...) the
 *     largest MaxRSS of any step (jobacct_gather measures steps only)
 * squeue lists a task while it is PENDING, RUNNING, SUSPENDED, COMPLETING,
 * ...; a task Slurm has forgotten (MinJobAge) is simply not listed. sacct
 * needs Slurm's accounting (slurmdbd); without it ("Slurm accounting storage
 * is disabled") the task states come from squeue and the run files alone,
 * and the caller says so. A run's task is the one of the latest job whose
 * TASKS hold its index. */
#ifndef QS_SCHED_H
#define QS_SCHED_H

#include <stddef.h>

typedef struct {
    long long job;        /* the latest array job holding this run; 0: never submitted */
    char queue[24];       /* its state in squeue (PENDING, RUNNING, ...); "" when not listed */
    char acct[24];        /* its state in sacct (COMPLETED, CANCELLED, ...); "" when unknown */
    char exit_code[16];   /* sacct's ExitCode "RC:SIGNAL" of the allocation; "" when unknown */
    char elapsed[24];     /* sacct's Elapsed ([D-]HH:MM:SS); "" when unknown */
    char nodes[64];       /* sacct's NodeList of the allocation; "" when unknown or none assigned */
    long long maxrss_kib; /* the largest MaxRSS of the task's steps in KiB; -1 when unknown */
} qs_task;

typedef struct {
    qs_task *task;        /* one per run of the plan */
    int n;
    long long *jobs;      /* every recorded submission, in order */
    int njobs;
    int have_queue, have_acct;          /* squeue / sacct answered */
    char queue_note[300], acct_note[300]; /* why not: one line, "" when they did */
} qs_sched;

/* The full path of PROG found on PATH into buf; 0, or -1 when it is not there. */
int qs_sched_which(const char *prog, char *buf, size_t len);

/* Read DIR/slurm.jobs for a plan of nruns runs and, when jobs were
 * submitted, ask squeue (and sacct, with ask_acct) about them. Returns 0
 * (squeue or sacct failing is not an error: have_queue / have_acct say it,
 * the notes why), or -1 with err when slurm.jobs cannot be read or is not
 * the file qsweep writes. */
int qs_sched_load(const char *dir, int nruns, int ask_acct, qs_sched *s, char *err, size_t errlen);
void qs_sched_free(qs_sched *s);

/* "0-3,5,7-9" for sorted distinct indices. */
void qs_sched_tasklist(const int *idx, int n, char *buf, size_t len);

/* sbatch --parsable --array=TASKS SCRIPT for the runs idx[0..n) (sorted),
 * then the line in DIR/slurm.jobs. Returns 0 with *job, or -1 with err
 * (sbatch's own message when it refused). */
int qs_sched_submit(const char *dir, const char *script, const int *idx, int n, long long *job, char *err,
                    size_t errlen);

#endif
