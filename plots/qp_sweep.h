/* qp_sweep.h — the run files of a sweep directory and which of them each
 * figure of "qplot all" shows.
 *
 * Owns: the sweep layout qplot reads (run files DIR/runs/NAME.h5, figures to DIR/fig/)
 * and the per-figure choice of runs:
 * Noise-floor twins (qp_run_is_twin) and per-layer attribution runs (a
 * recipe "R,~Li=bf16" of qsweep's attribute = blocks, experiments/qs_attr.h:
 * one block of R each) are in no figure: they are the summary's rows, and
 * each would add a recipe to every figure.
 *   loss, gap, throughput: every other run;
 *   qerr:   a panel per recipe but the baseline (whose error is BF16
 *           rounding, the least interesting map): its first run (by file
 *           name) that logged quantization errors; when only baseline runs
 *           did, the first of them;
 *   events: per recipe, the first run with events; the first run when no
 *           run has any.
 * A summary file in DIR, if qsweep wrote one, is not needed: the run files
 * hold everything. Checkpoints next to the runs (*.ckpt.h5) are skipped. */
#ifndef QP_SWEEP_H
#define QP_SWEEP_H

#include <stddef.h>

#include "qp_runread.h"

/* Sorted paths of the DIR/runs/NAME.h5 files (without checkpoints) into *paths (free
 * each and the array). Returns the count, or -1 with err set (no runs
 * directory, or no run file in it). */
int qp_sweep_list(const char *dir, char ***paths, char *err, size_t errlen);

/* Chooses runs for kind; writes their indices into pick and returns how
 * many (0: none fits, err says why; err "" for a figure whose data no run
 * has and that a sweep goes without: bscales of formats without block
 * scales). */
int qp_sweep_pick(const char *kind, const qp_run *const *runs, int n, const char *baseline, int *pick, char *err,
                  size_t errlen);

#endif
