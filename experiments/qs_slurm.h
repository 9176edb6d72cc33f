/* qs_slurm.h — the sweep as a Slurm job array.
 *
 * Owns: DIR/qsweep.sbatch, a bash script whose array task i runs the i-th
 * run's exact qtrain command (the same command qsweep would run, embedded as
 * a bash array of quoted command lines), with --cpus-per-task = the threads
 * per run and Slurm's output in DIR/logs/%a.log. Tasks share DIR, so
 * `qsweep --summarize DIR` afterwards sees every run; a task rerun resumes
 * its run (qtrain --resume). Outside Slurm, setting SLURM_ARRAY_TASK_ID
 * runs one task by hand. */
#ifndef QS_SLURM_H
#define QS_SLURM_H

#include <stddef.h>

#include "qs_grid.h"
#include "qs_ini.h"

int qs_slurm_write(const qs_experiment *e, const qs_plan *p, const char *path, char *err, size_t errlen);

#endif
