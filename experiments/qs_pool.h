/* qs_pool.h — running jobs as child processes, N at a time.
 *
 * Owns: fork/exec/waitpid of the runs, their log files (stdout and stderr
 * appended to the job's log, with a header line per attempt), signals and the
 * sweep's progress line. SIGINT/SIGTERM/SIGCHLD are blocked and taken with
 * sigtimedwait, so no signal is lost between checks. On SIGINT or SIGTERM no
 * new job starts, SIGTERM goes to every running job and the pool waits for
 * them (a second signal sends SIGKILL). Children run in their own process
 * group (a terminal's Ctrl-C reaches qsweep only, which forwards it) and get
 * SIGTERM if qsweep itself dies (PR_SET_PDEATHSIG). */
#ifndef QS_POOL_H
#define QS_POOL_H

typedef enum { QS_JOB_OK, QS_JOB_DIVERGED, QS_JOB_FAILED, QS_JOB_STOPPED } qs_job_outcome;

typedef struct {
    const char *name;
    char *const *argv;       /* argv[0]: the program's path */
    const char *log;
} qs_job;

typedef struct {
    qs_job_outcome outcome;
    int exit_code;           /* exit status, or 128 + signal */
    double seconds;
    char why[256];           /* for QS_JOB_FAILED when qsweep itself failed (no log, fork) */
} qs_job_result;

typedef struct {
    int total, already_done;   /* for the progress line: the sweep's runs, runs skipped as finished */
    /* called just before a job starts / just after it ends (res may be changed,
     * e.g. an exit 0 whose run file does not say done becomes QS_JOB_FAILED) */
    void (*on_start)(int job, void *user);
    void (*on_end)(int job, qs_job_result *res, void *user);
    void *user;
} qs_pool_cb;

/* Run jobs[0..n) with at most `parallel` at once; res[i] for each job (jobs
 * never started are QS_JOB_STOPPED). Returns 0, or 1 if a signal stopped the
 * pool (every child has been reaped by then). */
int qs_pool_run(const qs_job *jobs, int n, int parallel, const qs_pool_cb *cb, qs_job_result *res);

/* "1h02m", "3m05s", "12s" */
void qs_fmt_duration(double seconds, char *buf, int len);

#endif
