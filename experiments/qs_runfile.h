/* qs_runfile.h — what the summary needs from one qtrain run file.
 *
 * Owns: reducing a run file (schema: docs/runfile.md) to one summary row.
 * The file is read through the one run-file reader (train/runfile/qp_runfile.h:
 * columns by their schema names; SWMR, so live runs, runs whose writer was
 * killed and finished runs read alike). Definitions (docs/qsweep.md):
 *   steps           rows of /train (the shortest of its eight datasets)
 *   final_train     mean of the last min(10, steps) /train/loss values
 *   final_val       the last /eval/val_loss
 *   steps_to_target the first /train/step whose 10-step running mean of the
 *                   loss (that step and the 9 before it) is <= target; -1 if
 *                   none or no target
 *   events[k]       /events/recalib rows of kind scale_change, overflow,
 *                   underflow, nonfinite
 *   qerr[l]         mean rel_l2 over every /quant/error row of layer l (all
 *                   steps, GEMMs, operands, passes; non-finite values skipped)
 *   tokps_median    median of /train/tokens_per_s (mean of the middle two
 *                   for an even count); step_ms_median likewise
 *   wait_share      sum /train/data_wait_ms / sum /train/step_ms
 *   threads_median  median of /train/threads over the rows that record a
 *                   count (> 0; a row of a file upgraded from schema 3 has
 *                   0); NaN for a file before schema 4 or without one
 *   phase_share[p]  sum of phase p's column (qp_runschema.h qp_phases) /
 *                   sum /train/step_ms over the rows that measured it; NaN
 *                   for a file without the profile (schema version 1) or
 *                   none measured
 *   params_nonembedding, tokens_total, tokens_per_param, epochs
 *                   the root attributes of that name (NaN when absent: a run
 *                   file of an older qtrain)
 * A file whose schema version is newer than this build's is refused. */
#ifndef QS_RUNFILE_H
#define QS_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "qp_runschema.h"

#define QS_NKINDS 4
extern const char *const qs_event_kinds[QS_NKINDS]; /* scale_change, overflow, underflow, nonfinite */

typedef struct {
    char state[32];          /* last /status row; "" when it has none */
    char message[520];
    int writer_alive;        /* a process holds the run file's writer lock */
    int layers;              /* root attribute "layers"; 0 when absent */
    int64_t steps, steps_to_target, divergences;
    int64_t events[QS_NKINDS];
    double final_train, final_val, tokps_median, wait_share, step_ms_median, threads_median;
    double phase_share[QP_PHASE_COUNT];
    double params_nonembedding, tokens_total, tokens_per_param, epochs;
    double *qerr;            /* per layer, NaN for a layer without rows */
    int nqerr;
} qs_runstats;

/* Returns 0, or -1 with a one-line message (s is then empty but freeable). */
int qs_runfile_read(const char *path, double target_loss, qs_runstats *s, char *err, size_t errlen);
/* 1 when path is a run file whose last state is done or diverged (a result
 * a sweep keeps), else 0. */
int qs_runfile_finished(const char *path);
void qs_runstats_free(qs_runstats *s);

#endif
