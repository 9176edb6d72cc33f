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
 *            gap_pct over seeds with its verdict (qs_stats.h: Student t
 *            for every n >= 2; resolved = the interval excludes 0).
 *            Noise twins (qs_grid.h) form groups of their own (noise = 1):
 *            their gap is to the run they are the twin of (same initial
 *            weights), so its spread is the noise floor of the study; rms
 *            is sqrt(mean(gap_pct^2)), the typical size of a gap made of
 *            noise alone.
 *   attribution — with [sweep] attribute = blocks, per group of a recipe
 *            other than the baseline: a row per block of its model and a
 *            "sum" row (block -1). A block's gap is its attribution run's
 *            gap to the baseline run of the same seed; its share of the gap
 *            is mean(block gap) / mean(full gap) over the seeds where both
 *            are done, with the paired Fieller interval (qs_stats.h:
 *            unbounded when the full gap is unresolved). The sum row adds
 *            the block gaps of one seed (every block of that seed done): a
 *            share far from 100% says the blocks' costs do not add up
 *            (they interact). A block the recipe keeps in the baseline's
 *            format has no run; its gap and share are 0 by construction
 *            (quantized = 0).
 *   contrast — with [sweep] contrast = AXIS (qs_contrast.c), per group of a
 *            recipe other than the baseline at AXIS's first value a, and
 *            each other value b of AXIS, every other axis equal: per seed
 *            with a gap at both values, d = gap_b - gap_a (gap_pct, and
 *            gap_abs in nats; each value has its own baseline runs, and one
 *            seed means the same weights' seed and batches at both), the
 *            mean of d with its Student t interval (every n: the paired
 *            t-test's), resolved when it excludes 0, and each side's gap
 *            over the same seeds with its t interval. A seed with a gap at
 *            one value only is left out and counted (n_unpaired, and named
 *            in the row's message); a combination the grid excludes at a
 *            or at b has no row.
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
    int block;            /* a group of attribution runs: their block; else -1 */
    int n_runs, n_seeds, n_gaps, n_diverged, n_failed;
    double val_mean, val_std, gap_mean, gap_std, gap_rms;
    qs_ci gap_ci;         /* of gap_pct over seeds */
    double params_nonembedding, tokens_per_param, epochs_max; /* of its done runs (NaN: none) */
} qs_group;

/* One row of the attribution table. */
typedef struct {
    int group;            /* the full recipe's group */
    int block;            /* -1: the sum over the blocks */
    int attr_group;       /* the block's group of runs; -1 for the sum and for a block kept in the baseline */
    int quantized;        /* 0: the recipe keeps this block in the baseline's format (no run) */
    qs_ci gap_ci;         /* the block's gap_pct over the paired seeds */
    qs_ratio share;       /* block gap / full gap (a fraction; x100 in the report) */
} qs_attr_row;

/* One row of the contrast table: a recipe group at the contrast axis's
 * first value (a) against its group at another value (b). */
typedef struct {
    int group_a, group_b;  /* the recipe groups at a and at b */
    int value_b;           /* b's index on the contrast axis (a's is 0) */
    char name[320];        /* group_a's name with the axis written AXIS=b-vs-a */
    qs_paired pct, nats;   /* the paired seeds' gap_pct (gap_abs) at a and at b, and d = b - a */
    int n_unpaired;        /* seeds with a gap at one of the two values only: left out */
    char message[512];     /* which seeds those are, and where their gap is missing; "" none */
} qs_contrast_row;

typedef struct {
    const qs_experiment *e;
    const qs_plan *p;
    qs_row *rows;         /* p->n */
    qs_group *groups;
    int ngroups, nlayers, seed_axis;
    qs_attr_row *attr;    /* attribute = blocks: the attribution table */
    int nattr;
    qs_contrast_row *contrast; /* contrast = AXIS: the contrast table */
    int ncontrast, contrast_axis; /* contrast_axis: -1 without contrast */
} qs_summary;

int qs_summary_build(const qs_experiment *e, const qs_plan *p, qs_summary *s, char *err, size_t errlen);
void qs_summary_free(qs_summary *s);

/* A group's name for run i: its axes but seed, `axis=value` joined by '_'
 * ("all" without such axes). vs_axis >= 0: that axis is written
 * `axis=VALUE-vs-REF`, REF its value index vs_ref, VALUE run i's. */
void qs_summary_name(const qs_summary *s, int i, int vs_axis, int vs_ref, char *buf, size_t len);
/* The contrast table into s->contrast (qs_contrast.c). 0, or -1 out of memory. */
int qs_contrast_build(qs_summary *s);

#endif
