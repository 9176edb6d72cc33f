/* qpl_ini.h — the [plan] section of a plan file (qsweep --plan FILE).
 *
 * Owns: the keys of [plan] and how they are checked, and how a plan file is
 * split into its [plan] section and the rest, which is an ordinary
 * experiment file (qs_ini.h) with [base] (every run's qtrain options) and
 * optionally [sweep] threads_per_run and [slurm]:
 *   base          = RECIPE, ...  the recipe whose parts may fall back ('|' for
 *                              ','); several: a plan for each
 *   fallback      = FORMAT     the format a part falls back to (default bf16):
 *                              a name of quant/'s format table, given to every
 *                              use of the part ("L0.qkv=bf16")
 *   granularity   = block | block.gemm | block.gemm.pass   what a part is
 *   budget        = B          the most the verified upper 95% bound of the
 *                              paired gap to the fallback-everywhere run may
 *                              be, in % (0 < B <= 100)
 *   seeds         = S1, S2...  the search's seeds (at least 2)
 *   verify_seeds  = V1, V2...  the verification's own seeds (at least 2,
 *                              none of the search's)
 *   max_runs      = N          the cap on runs (the base's, fallback's,
 *                              attribution's, search's and verification's)
 *   attribution   = on | off   measure each part alone in the fallback
 *                              (default on), to rank the predictors
 *   predictor     = auto | NAME  the ranking the search follows (default
 *                              auto: the predictor of the highest Spearman
 *                              correlation with the attribution; needs it)
 * A [grid] may give axes (not recipe, seed or exclude): a plan for each
 * combination (with each base recipe), the axis values added to [base].
 * The rest may not hold recipe or seed in [base], nor other [sweep] keys
 * than threads_per_run. Errors are one `FILE:LINE: message`, as qs_ini's. */
#ifndef QPL_INI_H
#define QPL_INI_H

#include <stddef.h>

#include "qpl_predict.h"

#define QPL_MAX_SEEDS 32
#define QPL_MAX_BASES 8
#define QPL_MAX_AXES 4
#define QPL_MAX_VALUES 8

typedef enum { QPL_GRAN_BLOCK = 0, QPL_GRAN_GEMM, QPL_GRAN_PASS, QPL_GRAN_COUNT } qpl_gran;
extern const char *const qpl_gran_names[QPL_GRAN_COUNT]; /* "block", "block.gemm", "block.gemm.pass" */

typedef struct {
    char base[1024];        /* this plan's recipe, ',' form (one of bases) */
    char bases[QPL_MAX_BASES][1024];
    int nbases;
    struct {
        char key[64];
        char values[QPL_MAX_VALUES][256];
        int nvalues, line;
    } axes[QPL_MAX_AXES];   /* [grid]: a plan per combination */
    int naxes;
    char fallback[64];
    qpl_gran gran;
    double budget;          /* % */
    long long seeds[QPL_MAX_SEEDS], verify[QPL_MAX_SEEDS];
    int nseeds, nverify;
    int max_runs;
    int attribution;        /* 0/1 */
    int predictor;          /* a qpl_pred id, or -1 for auto */
    int line;               /* the [plan] header's line */
} qpl_cfg;

/* Split text (len bytes) into *cfg and rest: a malloc'd copy of text whose
 * [plan] and [grid] lines are blanked (so qs_ini's line numbers stay the file's).
 * Returns 0, or -1 with err = "FILE:LINE: message". */
int qpl_ini_parse(const char *path, const char *text, size_t len, qpl_cfg *cfg, char **rest, char *err,
                  size_t errlen);

#endif
