/* qpl_predict.c — predictors and their Spearman correlation with the
 * measured attribution (see qpl_predict.h). */
#include "qpl_predict.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"
#include "qp_runread.h"
#include "qpl_parts.h"

const char *const qpl_pred_names[] = {
    [QPL_PRED_WGRAD] = "wgrad_error",       [QPL_PRED_FPROP] = "fprop_error",
    [QPL_PRED_DGRAD] = "dgrad_error",       [QPL_PRED_KURT] = "kurtosis",
    [QPL_PRED_TOPK] = "top_channel_energy", [QPL_PRED_LAST] = "last_blocks_first",
    [QPL_PRED_FIRST] = "first_blocks_first",
};
_Static_assert(sizeof qpl_pred_names / sizeof qpl_pred_names[0] == QPL_PRED_COUNT, "a name per predictor");

int qpl_pred_find(const char *s)
{
    for (int k = 0; k < QPL_PRED_COUNT; k++)
        if (!strcmp(s, qpl_pred_names[k])) return k;
    return -1;
}

/* does a row of (layer, gemm) belong to part q (its block x GEMM; a block) */
static int in_part(const qpl_part *q, int64_t layer, const char *gemm)
{
    return layer == q->block && (q->gemm < 0 || !strcmp(gemm, qp_gemm_name((qp_gemm_id)q->gemm)));
}

int qpl_predict(const char *path, const qpl_parts *ps, double *score, char *err, size_t errlen)
{
    qp_run r;
    if (qp_run_load(&r, path, QP_RUN_QERR | QP_RUN_OUTLIERS, err, errlen)) return -1;
    static const char *const pass_of[QPL_PRED_COUNT] = {[QPL_PRED_WGRAD] = "wgrad", [QPL_PRED_FPROP] = "fprop",
                                                        [QPL_PRED_DGRAD] = "dgrad"};
    for (int p = 0; p < ps->n; p++) {
        const qpl_part *q = &ps->p[p];
        for (int k = 0; k < QPL_PRED_COUNT; k++) {
            double sum = 0;
            long n = 0;
            switch ((qpl_pred)k) {
            case QPL_PRED_WGRAD:
            case QPL_PRED_FPROP:
            case QPL_PRED_DGRAD:
                for (size_t i = 0; i < r.n_qerr; i++)
                    if (in_part(q, r.qerr[i].layer, r.qerr[i].gemm) && !strcmp(r.qerr[i].pass, pass_of[k]) &&
                        isfinite(r.qerr[i].rel_l2))
                        sum += r.qerr[i].rel_l2, n++;
                break;
            case QPL_PRED_KURT:
            case QPL_PRED_TOPK:
                for (size_t i = 0; i < r.n_outliers; i++) {
                    const double v = k == QPL_PRED_KURT ? r.outliers[i].kurtosis : r.outliers[i].topk_frac;
                    if (in_part(q, r.outliers[i].layer, r.outliers[i].gemm) && isfinite(v)) sum += v, n++;
                }
                break;
            case QPL_PRED_LAST: sum = q->block, n = 1; break;
            case QPL_PRED_FIRST: sum = -q->block, n = 1; break;
            case QPL_PRED_COUNT: break;
            }
            score[k * ps->n + p] = n ? sum / (double)n : NAN;
        }
    }
    qp_run_free(&r);
    return 0;
}
