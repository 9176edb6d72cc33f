/* qpl_report.h — what a plan says: the one line, plan.md, plan.csv,
 * plan_parts.csv, plan_predictors.csv and the figure plan.png (gnuplot,
 * from plan.gp and plan_fig.dat, written beside it so it can be redrawn).
 *
 * Owns: the plan's tables and their columns (docs/qsweep.md, "Plans"), the
 * line `plan: RECIPE  gap +x.xx% [lo, hi]  budget +B%  fallback K/M parts
 * (N runs, C CPU-minutes)` whose interval is the verification's, and the
 * message when no recipe meets the budget. */
#ifndef QPL_REPORT_H
#define QPL_REPORT_H

#include <stdio.h>

#include "qpl_ini.h"
#include "qpl_parts.h"
#include "qpl_predict.h"
#include "qpl_search.h"
#include "qs_stats.h"

/* One recipe the plan ran: a set of parts in the fallback. */
typedef struct {
    char recipe[1024], id[80], parts[256], stage[16]; /* stage: base, all, attribution, search */
    int k, part;                                      /* parts in the fallback; attribution: the part, else -1 */
    double val_search[QPL_MAX_SEEDS], val_verify[QPL_MAX_SEEDS];   /* final validation losses (+inf: diverged) */
    double gap_search[QPL_MAX_SEEDS], gap_verify[QPL_MAX_SEEDS];   /* paired gaps to the fallback everywhere, % */
    int used_search[QPL_MAX_SEEDS], used_verify[QPL_MAX_SEEDS];
    qs_ci ci_search, ci_verify;
    int meets_search, meets_verify, searched, verified, probed, verify_order;
} qpl_cand;

typedef struct {
    double *score;                     /* [predictor * nparts + part] */
    double *benefit;                   /* [seed * nparts + part]: base gap - the part-alone gap */
    double rho[QPL_PRED_COUNT], lo[QPL_PRED_COUNT], hi[QPL_PRED_COUNT];
    int chosen, defaulted;             /* the predictor the search followed; 1: auto without a correlation */
} qpl_predictors;

typedef struct {
    qpl_status status;
    int k, searched, runs, chosen;     /* chosen: the candidate, or -1 */
    double cpu_min;
} qpl_outcome;

typedef struct {
    const qpl_cfg *cfg;
    const qpl_parts *parts;
    const int *order;
    const qpl_cand *cands;
    int ncands, idx_base, idx_all;
    const qpl_predictors *pred;
    const qpl_outcome *outcome;
    const char *dir, *label, *file;
} qpl_report_in;

/* The plan's files in dir. Returns 0, or -1 with a message (gnuplot
 * missing or failing is not an error: a note on stderr). */
int qpl_report_write(const qpl_report_in *r, char *err, size_t errlen);
/* The plan line (or the budget-unmet message) on f. */
void qpl_report_line(const qpl_report_in *r, FILE *f);

#endif
