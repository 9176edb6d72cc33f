/* qpl_runs.h — the runs of one plan: its recipes (a set of parts in the
 * fallback each), their folders and runs, and their paired gaps.
 *
 * Owns: a candidate recipe's folder DIR/r/ID (qpl_main.h), the one-axis
 * experiment text that expands it (the plan file with the recipe and the
 * cell's values in [base], seed as the only axis, through qs_ini.h and
 * qs_grid.h, so a run is the same qtrain command a sweep would run),
 * running the unfinished ones through qs_pool.h, reading each final
 * validation loss (qs_runfile.h), counting runs once and their CPU time
 * (steps x median step time x threads, from the run files), and each
 * candidate's paired gap to the fallback everywhere with its t interval. */
#ifndef QPL_RUNS_H
#define QPL_RUNS_H

#include <stddef.h>

#include "qpl_ini.h"
#include "qpl_main.h"
#include "qpl_parts.h"
#include "qpl_report.h"
#include "qs_grid.h"
#include "qs_ini.h"

/* One plan: a base recipe in one cell of the plan file's grid. */
typedef struct {
    const qpl_args *a;
    qpl_cfg cfg;
    const char *rest;              /* the plan file without [plan] and [grid] */
    char extra[1024];              /* the cell's axis values as [base] lines */
    char dir[4096];                /* this plan's folder */
    int threads;
    qpl_parts parts;
    int *order;                    /* the ranking the search follows */
    qpl_cand *cands;               /* every recipe the plan ran, in order */
    int ncands;
    int runs_used;                 /* distinct (recipe, seed) runs */
    double cpu_min;
    int failed, stopped;           /* a run failed; a signal stopped the pool */
    char stop_msg[512];
    int idx_base, idx_all;         /* cands of the base and the fallback everywhere */
} qpl_plan;

/* The candidate of the parts in[] (created if new), or -1 when its recipe
 * does not fit the recipe grammar's limits. */
int qpl_cand_of(qpl_plan *P, const char *in, const char *stage);
/* The one-axis experiment of a recipe at seeds (malloc'd text). */
char *qpl_candidate_ini(const qpl_plan *P, const char *recipe, const long long *seeds, int n);
/* Candidate c at seeds as a sweep plan in DIR/r/ID. 0, or -1 with err. */
int qpl_expand(qpl_plan *P, int c, const long long *seeds, int n, qs_experiment *e, qs_plan *g, char *err,
               size_t errlen);
/* Run candidates cs[0..nc) at seeds (the search's: verify = 0; the
 * verification's: 1) and read their final validation losses (+inf: a run
 * that diverged). Returns 1 done, 0 the run cap would be passed (nothing
 * run; P->stop_msg says so), -1 a run failed or a signal stopped the pool,
 * -2 bad input (err). */
int qpl_run_cands(qpl_plan *P, const int *cs, int nc, const long long *seeds, int n, int verify, char *err,
                  size_t errlen);
/* Candidate c's paired gaps and interval at the search (verify = 0) or
 * verification seeds, and whether its upper bound meets the budget. */
void qpl_set_gap(qpl_plan *P, int c, int verify);

#endif
