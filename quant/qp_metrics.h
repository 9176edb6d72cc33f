/* qp_metrics.h — error of a tensor against its quantized version.
 *
 * Owns: the definitions every report uses (qerr, the trainer's /quant/error).
 * Over the finite elements of x (non-finite x are left out and counted):
 *   rel_l2  = ||x - y||_2 / ||x||_2          (0 if x == y; inf if ||x|| = 0 != ||x-y||)
 *   snr_db  = 10 log10(||x||^2 / ||x - y||^2) (+inf when exact)
 *   max_abs = max |x - y|,  cosine = <x,y> / (||x|| ||y||)  (1 if both are 0)
 * Sums are in double, in index order, so results are deterministic.
 * sat_frac = n_sat / n, zero_frac = n_flushed / n_nonzero come from qp_qstats. */
#ifndef QP_METRICS_H
#define QP_METRICS_H

#include <stdint.h>

#include "qp_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-block scale statistics of a quantized tensor (what Transformer
 * Engine's users ask for, github.com/NVIDIA/TransformerEngine/issues/2801),
 * from its stored block scales s (decoded: UE4M3, E8M0 or the FP32 decode
 * scale; NVFP4's before the tensor scale) and its input x:
 *   hist[QP_BSHIST_BINS]  blocks per bin: bin 0 s = 0, bin 1 s NaN, bin
 *                         k >= 2 floor(log2 s) = k - QP_BSHIST_OFFSET, i.e.
 *                         every positive float from 2^-149 to 2^127 has its
 *                         bin; the counts sum to n_blocks
 *   log2_std              population std (divided by the count) of log2 s
 *                         over blocks with 0 < s < Inf (NaN: none)
 *   saturated_frac        blocks whose scale is the scale format's largest
 *                         (UE4M3 448, E8M0 2^127; FP32 decode scales: none)
 *   underflow_frac        blocks with a finite non-zero amax whose scale is
 *                         the format's zero or smallest (UE4M3 0, E8M0
 *                         2^-127, FP32: 1/FLT_MAX, the encode scale clamped)
 *   dynamic_range_max_log2  max over blocks of log2(amax_b / the smallest
 *                         non-zero finite |x| of the block) (TE's
 *                         max_blockwise_dynamic_range; 0 without one)
 * all over n_blocks (fractions NaN when there are no block scales). */
#define QP_BSHIST_OFFSET 151
#define QP_BSHIST_BINS (2 + 149 + 128)
typedef struct {
    int64_t n_blocks;
    int64_t hist[QP_BSHIST_BINS];
    double log2_std, saturated_frac, underflow_frac, dynamic_range_max_log2;
} qp_bscale_dist;

typedef struct {
    int64_t n;
    int64_t n_nonfinite;
    double rel_l2;
    double snr_db;
    double max_abs;
    double cosine;
    double sat_frac;      /* saturated elements / elements */
    double zero_frac;     /* non-zeros flushed to zero / non-zeros */
    double amax;
    double scale;         /* per-tensor encode scale used */
    int64_t n_blocks;
    double block_scale_min, block_scale_max, block_scale_log2_mean;
    double elems_flushed_frac;   /* non-zeros flushed to zero / elements */
    double elems_saturated_frac; /* saturated elements / elements (sat_frac) */
    qp_bscale_dist bsd;          /* qp_metrics_for_format's; qp_metrics_compute: none */
} qp_metrics;

/* Compare x with y = dequantized quantization of x (n elements); st (may be
 * NULL) supplies the quantizer's counts. */
void qp_metrics_compute(const float *x, const float *y, int64_t n, const qp_qstats *st, qp_metrics *m);

/* One call for a report: quantize-dequantize x in fmt (optionally with the
 * RHT applied first (rht: a qp_rht_kind, qp_hadamard.h: seeded or TE's), when cols % 16 == 0, and compared in the rotated basis,
 * where the GEMM sees it) and fill m, the block-scale statistics (m->bsd) of
 * the packed quantization included (decoded by qp_dequantize: qp_qdq's
 * values, bit for bit). scratch holds rows*cols floats (or NULL
 * to allocate). Returns 0, or -1 if --rht was asked on cols not divisible by 16
 * or memory ran out. */
int qp_metrics_for_format(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, const qp_qopts *o,
                          int rht, uint64_t rht_seed, float *scratch, qp_metrics *m);

/* The statistics of q (quantized from x, q's shape); all zero and NaN for a
 * format without block scales. */
void qp_block_scale_dist(const qp_qtensor *q, const float *x, qp_bscale_dist *d);

/* The stochastic-rounding stream of a tensor called `name` in a report
 * (qerr, the Python package's qprec.errors): FNV-1a of the name, so a
 * tensor's rounding does not depend on which other tensors are in the run. */
uint64_t qp_metrics_name_stream(const char *name);

#ifdef __cplusplus
}
#endif
#endif
