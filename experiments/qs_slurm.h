/* qs_slurm.h — the sweep as a Slurm job array.
 *
 * Owns: DIR/qsweep.sbatch, a bash script whose array task i runs the i-th
 * run's exact qtrain command (the same command qsweep would run, embedded as
 * a bash array of quoted command lines), and the resources it asks for,
 * from the experiment's [slurm] section (qs_ini.h):
 *   --cpus-per-task  cpus_per_task, else the threads per run
 *   --ntasks         ntasks (default 1); above 1 every run is an MPI job of
 *                    that many ranks, started with `srun --mpi=MPI` (mpi,
 *                    default pmix: what Debian's Open MPI talks to), or with
 *                    `mpirun -np N` for mpi = mpirun
 *   --gpus-per-task  gpus_per_task, else 1 when a run has --device cuda
 *   --partition, --account, --time   when given
 * Slurm's own output goes to DIR/logs/slurm-JOB_TASK.log; the run's output
 * is appended to DIR/logs/NAME.log with a header and a footer line, as a
 * local qsweep does. A task whose qtrain fails (an exit other than 0, 3
 * (diverged) or a stop by SIGINT/SIGTERM/SIGKILL: scancel, a time limit)
 * writes DIR/runs/NAME.exit (qs_marker.h), so --summarize and --status
 * report it; the marker is removed when the task starts again. Tasks share
 * DIR, so `qsweep --summarize DIR` sees every run while the array runs;
 * a task rerun resumes its run (qtrain --resume). The array is submitted
 * with --requeue: a task whose node fails goes back to the queue and resumes
 * its run from the last checkpoint wherever it starts again (Slurm's log is
 * opened for appending, so both attempts stay in it). Outside Slurm, setting
 * SLURM_ARRAY_TASK_ID runs one task by hand (single-rank runs only). */
#ifndef QS_SLURM_H
#define QS_SLURM_H

#include <stddef.h>

#include "qs_grid.h"
#include "qs_ini.h"

/* What the array asks Slurm for, [slurm] with its defaults applied. */
typedef struct {
    int cpus_per_task, gpus_per_task, ntasks;
    const char *mpi;      /* srun --mpi= when ntasks > 1; "mpirun": mpirun -np ntasks */
} qs_slurm_res;

void qs_slurm_resources(const qs_experiment *e, const qs_plan *p, qs_slurm_res *r);

/* 0 if the sweep folder can appear in #SBATCH lines, else -1 with err
 * (checked before the folder is created). */
int qs_slurm_dir_ok(const qs_plan *p, char *err, size_t errlen);
int qs_slurm_write(const qs_experiment *e, const qs_plan *p, const char *path, char *err, size_t errlen);

#endif
