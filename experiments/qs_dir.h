/* qs_dir.h — a sweep folder on disk.
 *
 * Owns: making the folders a sweep writes into: DIR/runs (run files, failure
 * markers) and DIR/logs (each run's stdout and stderr), parents included, for
 * qsweep's folder and for every candidate folder of a plan (qsweep --plan),
 * which is a sweep folder of its own. */
#ifndef QS_DIR_H
#define QS_DIR_H

/* mkdir -p PATH (mode 0755; an existing folder is fine). 0, or -1 with errno. */
int qs_mkdir_p(const char *path);

/* DIR/runs and DIR/logs, DIR and its parents made as needed. 0, or -1 with
 * errno. */
int qs_dir_make(const char *dir);

#endif
