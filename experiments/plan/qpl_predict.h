/* qpl_predict.h — the cheap signals a plan ranks its parts by, read from
 * ONE run of the base recipe, and how a ranking is judged against the
 * measured attribution.
 *
 * Owns: the predictors (names, definitions) and the Spearman correlation
 * with its bootstrap interval over seeds. For part p (a block, block x GEMM
 * or block x GEMM x pass, qpl_parts.h), averaged over every logged step
 * (the run file's quantization-error and outlier rows, read through
 * train/runfile/qp_runfile.h, the one run-file reader):
 *   wgrad_error         mean rel_l2 of the wgrad pass's operands (dy, x) in
 *                       p's block x GEMM(s): NVIDIA's hypothesis (NVFP4
 *                       paper, appendix E.2: a layer whose weight gradient
 *                       quantizes badly must stay in BF16)
 *   fprop_error         the same of the fprop pass (x, w)
 *   dgrad_error         the same of the dgrad pass (dy, w)
 *   kurtosis            mean kurtosis of the GEMM inputs x of p
 *   top_channel_energy  mean share of the energy in the top 0.1% channels
 *   block_scale_spread  mean block_scale_log2_std of p's quantized operands
 *                       (/quant/block_scales, every pass): how far apart
 *                       the block scales lie
 *   block_dynamic_range mean block_dynamic_range_max_log2 of the same
 *                       (TE's max_blockwise_dynamic_range)
 *   elems_flushed       mean elems_flushed_frac of the same
 *   last_blocks_first   the block index (NVIDIA's rule: the last blocks
 *                       stay in BF16)
 *   first_blocks_first  minus the block index
 * A higher score means "fall back first". At pass granularity a part's
 * error predictors are its block x GEMM's (the three passes tie). The
 * block-scale predictors need a base format with block scales (MX, NVFP4,
 * FP8 blocks) and a run file of schema 5; without them they are NaN.
 *
 * Spearman: Pearson's correlation of the average ranks (ties share their
 * mean rank, as scipy.stats.spearmanr); NaN when either side is constant.
 * Its interval: a percentile bootstrap over seeds (resample the seeds with
 * replacement, average each part's measured benefit over the resample,
 * correlate; 2000 resamples from a fixed generator, so it is
 * deterministic). With few seeds the resamples are few distinct sets, and
 * the interval says how much the measured ranking itself moves by chance. */
#ifndef QPL_PREDICT_H
#define QPL_PREDICT_H

#include <stddef.h>

#define QPL_BOOT_RESAMPLES 2000 /* the bootstrap's resamples of the seeds */

typedef enum {
    QPL_PRED_WGRAD = 0,
    QPL_PRED_FPROP,
    QPL_PRED_DGRAD,
    QPL_PRED_KURT,
    QPL_PRED_TOPK,
    QPL_PRED_BSPREAD,
    QPL_PRED_BRANGE,
    QPL_PRED_FLUSH,
    QPL_PRED_LAST,
    QPL_PRED_FIRST,
    QPL_PRED_COUNT
} qpl_pred;
extern const char *const qpl_pred_names[QPL_PRED_COUNT];
/* The predictor named s, or -1. */
int qpl_pred_find(const char *s);

struct qpl_parts;
/* score[k * nparts + p] for predictor k and part p, from the run file at
 * path. A predictor without rows for a part gets NaN. Returns 0, or -1 with
 * a message. */
int qpl_predict(const char *path, const struct qpl_parts *parts, double *score, char *err, size_t errlen);

/* Spearman's rho of x and y over their n pairs (both finite). */
double qpl_spearman(const double *x, const double *y, int n);

/* benefit[s * nparts + p]: seed s's measured benefit of part p. rho: the
 * correlation of score with the mean benefit; [lo, hi]: the 95% percentile
 * bootstrap over seeds with B resamples (NaN when undefined). */
void qpl_spearman_boot(const double *score, const double *benefit, int nparts, int nseeds, int B, double *rho,
                       double *lo, double *hi);

/* The parts in falling score (ties: part order), into order[0..nparts). NaN
 * scores go last. */
void qpl_rank(const double *score, int nparts, int *order);

#endif
