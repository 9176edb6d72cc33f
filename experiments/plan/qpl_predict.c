/* qpl_predict.c — predictors and their Spearman correlation with the
 * measured attribution (see qpl_predict.h). */
#include "qpl_predict.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"
#include "qp_runfile.h"
#include "qpl_parts.h"

const char *const qpl_pred_names[] = {
    [QPL_PRED_WGRAD] = "wgrad_error",       [QPL_PRED_FPROP] = "fprop_error",
    [QPL_PRED_DGRAD] = "dgrad_error",       [QPL_PRED_KURT] = "kurtosis",
    [QPL_PRED_TOPK] = "top_channel_energy", [QPL_PRED_BSPREAD] = "block_scale_spread",
    [QPL_PRED_BRANGE] = "block_dynamic_range", [QPL_PRED_FLUSH] = "elems_flushed",
    [QPL_PRED_LAST] = "last_blocks_first",
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

/* The rows of /quant/error, /quant/outliers and /quant/block_scales the predictors read. */
typedef struct {
    int64_t layer;
    char gemm[33], pass[17];
    double rel_l2;
} qerr_row;
typedef struct {
    int64_t layer;
    char gemm[33];
    double kurtosis, topk_frac;
} outlier_row;
typedef struct {
    int64_t layer;
    char gemm[33];
    double block_scale_log2_std, block_dynamic_range_max_log2, elems_flushed_frac;
} bscale_row;
#define BIND(type, field) {#field, offsetof(type, field), sizeof(((type *)0)->field)}
static const qp_runbind QERR_COLS[] = {BIND(qerr_row, layer), BIND(qerr_row, gemm), BIND(qerr_row, pass),
                                       BIND(qerr_row, rel_l2)};
static const qp_runbind OUTLIER_COLS[] = {BIND(outlier_row, layer), BIND(outlier_row, gemm),
                                          BIND(outlier_row, kurtosis), BIND(outlier_row, topk_frac)};
static const qp_runbind BSCALE_COLS[] = {BIND(bscale_row, layer), BIND(bscale_row, gemm),
                                         BIND(bscale_row, block_scale_log2_std),
                                         BIND(bscale_row, block_dynamic_range_max_log2),
                                         BIND(bscale_row, elems_flushed_frac)};
#define NB(a) ((int)(sizeof a / sizeof a[0]))

int qpl_predict(const char *path, const qpl_parts *ps, double *score, char *err, size_t errlen)
{
    qp_runfile *rf = NULL;
    if (qp_runfile_open(&rf, path, "qsweep", err, errlen)) return -1;
    qerr_row *qerr = NULL;
    outlier_row *outl = NULL;
    size_t n_qerr = 0, n_outl = 0;
    int rc = qp_runfile_read_table(rf, QP_RS_QERR, QERR_COLS, NB(QERR_COLS), sizeof *qerr, (void **)&qerr, &n_qerr,
                                   err, errlen);
    /* the outlier table came with schema 3: a file without it has no rows */
    if (!rc && qp_runfile_has(rf, QP_RS_OUTLIERS, "kurtosis"))
        rc = qp_runfile_read_table(rf, QP_RS_OUTLIERS, OUTLIER_COLS, NB(OUTLIER_COLS), sizeof *outl, (void **)&outl,
                                   &n_outl, err, errlen);
    /* the block-scale table came with schema 5; a format without block scales has no rows */
    bscale_row *bsc = NULL;
    size_t n_bsc = 0;
    if (!rc && qp_runfile_has(rf, QP_RS_BSCALE, "block_scale_log2_std"))
        rc = qp_runfile_read_table(rf, QP_RS_BSCALE, BSCALE_COLS, NB(BSCALE_COLS), sizeof *bsc, (void **)&bsc, &n_bsc,
                                   err, errlen);
    qp_runfile_close(rf);
    if (rc) {
        free(qerr);
        free(outl);
        free(bsc);
        return -1;
    }
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
                for (size_t i = 0; i < n_qerr; i++)
                    if (in_part(q, qerr[i].layer, qerr[i].gemm) && !strcmp(qerr[i].pass, pass_of[k]) &&
                        isfinite(qerr[i].rel_l2))
                        sum += qerr[i].rel_l2, n++;
                break;
            case QPL_PRED_KURT:
            case QPL_PRED_TOPK:
                for (size_t i = 0; i < n_outl; i++) {
                    const double v = k == QPL_PRED_KURT ? outl[i].kurtosis : outl[i].topk_frac;
                    if (in_part(q, outl[i].layer, outl[i].gemm) && isfinite(v)) sum += v, n++;
                }
                break;
            case QPL_PRED_BSPREAD:
            case QPL_PRED_BRANGE:
            case QPL_PRED_FLUSH:
                for (size_t i = 0; i < n_bsc; i++) {
                    const double v = k == QPL_PRED_BSPREAD  ? bsc[i].block_scale_log2_std
                                     : k == QPL_PRED_BRANGE ? bsc[i].block_dynamic_range_max_log2
                                                            : bsc[i].elems_flushed_frac;
                    if (in_part(q, bsc[i].layer, bsc[i].gemm) && isfinite(v)) sum += v, n++;
                }
                break;
            case QPL_PRED_LAST: sum = q->block, n = 1; break;
            case QPL_PRED_FIRST: sum = -q->block, n = 1; break;
            case QPL_PRED_COUNT: break;
            }
            score[k * ps->n + p] = n ? sum / (double)n : NAN;
        }
    }
    free(qerr);
    free(outl);
    free(bsc);
    return 0;
}
