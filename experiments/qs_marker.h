/* qs_marker.h — DIR/runs/NAME.exit: how a run failed, as qsweep saw it.
 *
 * Owns: the one record of a failure that the run file cannot hold — qtrain
 * refuses bad input (exit 2) before it creates its run file, and a crash
 * leaves a file that says "running". qsweep writes the marker when a run
 * fails and removes it when the run starts again; the summary (also the one
 * --summarize rebuilds) reports a run with a marker as failed. Format: one
 * line "exit CODE", then one line of message (the run log's last line). */
#ifndef QS_MARKER_H
#define QS_MARKER_H

#include <stddef.h>

#include "qs_pool.h"

int qs_marker_write(const char *path, int exit_code, const char *message);
/* 0 and the code and message when the marker exists, -1 otherwise. */
int qs_marker_read(const char *path, int *exit_code, char *message, size_t len);
void qs_marker_remove(const char *path);
/* The last non-empty line of a text file (a run's log), cut to len. */
void qs_last_line(const char *path, char *buf, size_t len);
/* A run's job has ended: exit 0 must leave run file h5 saying "done", else
 * the job failed. For a failed job, 1 and its message in msg (the run
 * file's complaint, qsweep's own reason, the log's last line, or the
 * signal that killed it); 0 otherwise. */
int qs_run_failure(const char *h5, const char *log, qs_job_result *res, char *msg, size_t len);

#endif
