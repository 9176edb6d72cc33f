/* qpl_main.h — qsweep --plan FILE: the cheapest recipe within a loss
 * budget (docs/qsweep.md, "Plans").
 *
 * Owns: the plan's stages and their runs, in DIR (--out; default
 * sweeps/NAME for FILE NAME.ini): a folder per recipe, DIR/r/ID/, holding
 * runs/seed=S.h5 and logs/seed=S.log as a one-axis sweep of qs_grid.h (the
 * same qtrain command: [base] options, the recipe, the seed, --out --resume
 * --quiet --threads), so a rerun skips every finished run and resumes the
 * others. ID names the recipe's set of parts ("base", "all",
 * "fb=L0.qkv+L1.fc", or "fbK-HASH" for a long set): the same recipe is
 * the same folder whichever stage asks for it.
 * Stages: the base recipe and the fallback everywhere at the search seeds;
 * the predictors from the base run of the first seed (qpl_predict.h); with
 * attribution = on, each part alone in the fallback at the search seeds;
 * the search (qpl_search.h) down the chosen predictor's ranking; the
 * verification at verify_seeds with the fallback everywhere there. A
 * [grid] in a plan file (axes other than recipe and seed) and several base
 * recipes make one plan per combination, each in DIR/CELL/.
 * Exit: 0 a plan meets the budget; 3 none does (or the run cap stopped the
 * search): a clear line and the best found; 1 a run failed; 2 bad input;
 * 130 stopped. */
#ifndef QPL_MAIN_H
#define QPL_MAIN_H

typedef struct {
    const char *file, *out, *data, *qtrain; /* out may be NULL */
    int jobs, cores, dry_run;
} qpl_args;

int qpl_main(const qpl_args *a);

#endif
