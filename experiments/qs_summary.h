/* qs_summary.h — the sweep's results as two tables.
 *
 * Owns: turning the run files (qs_runfile.h) and failure markers
 * (qs_marker.h) of a planned sweep into
 *   rows   — one per run: status, the run file's numbers, and the gap of its
 *            final validation loss to its baseline run: the run with the
 *            baseline recipe and every other axis value equal (same seed).
 *            gap_abs = val - val_base, gap_pct = 100 * gap_abs / val_base;
 *            NaN unless both runs are done.
 *   groups — one per combination of all axes but seed: n runs, the done ones
 *            with a final validation loss ("seeds"), mean and sample
 *            standard deviation (n-1; NaN below 2) of their final validation
 *            loss and of their gap_pct, and the 95% interval of the mean
 *            gap_pct over seeds with its verdict (qs_stats.h: t below 5
 *            seeds, bootstrap from 5; resolved = the interval excludes 0).
 *            Noise twins (qs_grid.h) form groups of their own (noise = 1):
 *            their gap is to the run they are the twin of (same initial
 *            weights), so its spread is the noise floor of the study; rms
 *            is sqrt(mean(gap_pct^2)), the typical size of a gap made of
 *            noise alone.
 * Status: done, diverged (qtrain exit 3, a result), failed (exit 1/2, a
 * crash, or the run file says failed), running (its writer is alive),
 * interrupted (killed; qtrain --resume continues it), stopped, missing (no
 * run file yet), unreadable. */
#ifndef QS_SUMMARY_H
#define QS_SUMMARY_H

#include <stddef.h>

#include "qs_grid.h"
#include "qs_ini.h"
#include "qs_runfile.h"
#include "qs_stats.h"

typedef struct {
    char status[16];
    char message[520];
    int has_stats;        /* the run file was read */
    qs_runstats st;
    int baseline;         /* row of the baseline run (a twin: its run), or -1 */
    double gap_abs, gap_pct;
    int diverged;         /* status diverged, or a divergence row in the file */
    int group;            /* index into groups */
} qs_row;

typedef struct {
    char name[256];       /* the run name without its seed part ("all" without axes) */
    int first;            /* a member row: the group's axis values are its values */
    int noise;            /* a group of noise twins */
    int n_runs, n_seeds, n_gaps, n_diverged, n_failed;
    double val_mean, val_std, gap_mean, gap_std, gap_rms;
    qs_ci gap_ci;         /* of gap_pct over seeds */
    double params_nonembedding, tokens_per_param, epochs_max; /* of its done runs (NaN: none) */
} qs_group;

typedef struct {
    const qs_experiment *e;
    const qs_plan *p;
    qs_row *rows;         /* p->n */
    qs_group *groups;
    int ngroups, nlayers, seed_axis;
} qs_summary;

int qs_summary_build(const qs_experiment *e, const qs_plan *p, qs_summary *s, char *err, size_t errlen);
void qs_summary_free(qs_summary *s);

#endif
