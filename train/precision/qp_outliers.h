/* qp_outliers.h — outlier statistics of a GEMM input, for /quant/outliers.
 *
 * Owns: what the Llama studies measure about activation outliers (the
 * SwiGLU output's outlier channels of Fishman et al. 2024; the down
 * projection's input as the quantization bottleneck of 2505.14302), for one
 * input X of M tokens x C channels (the GEMM's rows x contraction):
 *   amax            largest finite |x|
 *   kurtosis        m4 / m2^2 over the finite elements (central moments; 3
 *                   for a Gaussian, large when a few values dominate; NaN
 *                   when every element is equal)
 *   topk_frac       the share of the energy sum x^2 held by the k channels of
 *                   most energy, k = max(1, ceil(0.001 C))
 *   top_channel     the channel of most energy
 *   chan_amax_ratio the largest channel amax over the median channel amax
 *                   (NaN when that median is 0)
 * Each channel's sums run over the tokens in order in double
 * (qp_outlier_column, written once for the host and the device: the GPU
 * computes a channel per thread with it, so both give the same bits); the
 * channels are then combined in order (qp_outlier_finish). */
#ifndef QP_OUTLIERS_H
#define QP_OUTLIERS_H

#include <math.h>
#include <stdint.h>

#include "qp_runschema.h"

#ifdef __CUDACC__
#define QP_OUTLIER_FN static inline __host__ __device__
#else
#define QP_OUTLIER_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One channel's sums over the finite elements: count, sum x, x^2, x^3, x^4,
 * and max |x|. */
typedef struct {
    double n, s1, s2, s3, s4;
    double amax;
} qp_outlier_col;

/* Channel c of X (M rows of C floats), rows in order. */
QP_OUTLIER_FN void qp_outlier_column(qp_outlier_col *o, const float *X, int64_t M, int C, int c)
{
    double n = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, amax = 0;
    for (int64_t i = 0; i < M; i++) {
        const double x = X[i * C + c];
        if (!isfinite(x)) continue;
        const double x2 = x * x;
        n += 1, s1 += x, s2 += x2, s3 += x2 * x, s4 += x2 * x2;
        amax = fabs(x) > amax ? fabs(x) : amax;
    }
    o->n = n, o->s1 = s1, o->s2 = s2, o->s3 = s3, o->s4 = s4, o->amax = amax;
}

/* k of the top-k energy share for C channels. */
static inline int qp_outlier_topk(int C)
{
    const int k = (int)ceil(0.001 * C);
    return k < 1 ? 1 : k;
}

/* The row of the C channel sums (scratch: C doubles); tokens = M. The
 * caller fills step, layer and gemm. */
void qp_outlier_finish(const qp_outlier_col *cols, int64_t M, int C, double *scratch, qp_outlier_row *r);
/* Both steps on the host: cols (C) and scratch (C) are the caller's. */
void qp_outlier_stats(const float *X, int64_t M, int C, qp_outlier_col *cols, double *scratch, qp_outlier_row *r);

#ifdef __cplusplus
}
#endif
#endif
