/* qp_cuda_quant.h — CUDA quantization kernels (the GPU side of quant/).
 *
 * Owns: device-side amax, quantization of every format of qp_formats[] into
 * quant/'s packed layout, fused quantize-dequantize (for the emulated GEMM
 * path; formats no GPU has, such as MXFP6 or Four Over Six, run only this
 * way), the random Hadamard transforms and transposition — each
 * bit-identical to its quant/ counterpart (qp_quantize, qp_qdq, qp_rht,
 * qp_rht16_te) for
 * the same input, options and seed. The element and block rules are
 * quant/qp_core.h's, compiled for the device; the work split is
 * qp_cuda_qcore.h's, which CPU tests check against quant/ without a GPU; the
 * GPU tests (tests/kernels/) check the kernels themselves and SKIP without one.
 *
 * All functions are host-callable with C linkage, enqueue on `stream` (a
 * cudaStream_t; NULL = the default stream), do not synchronise unless stated,
 * and return 0 or a cudaError_t value (qp_cuda_error_string: "cudaErrorXxx (text)").
 * Device pointers are prefixed d_. */
#ifndef QP_CUDA_QUANT_H
#define QP_CUDA_QUANT_H

#include <stdint.h>

#include "qp_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices, 0 when there is no driver or GPU. */
int qp_cuda_device_count(void);
const char *qp_cuda_error_string(int rc);

/* What a device-side quantization saw, written to device memory so the
 * caller's stream never waits for the host: amax over finite inputs, the
 * per-tensor encode scale used and its decode scale (1 for formats without
 * one), and counts as in qp_qstats. */
typedef struct {
    float amax, scale, scale_inv;
    int32_t pad;
    unsigned long long n_nonfinite, n_sat;
} qp_cuda_tstats;

/* *d_amax = max |x| over the finite values of d_x[0..n). */
int qp_cuda_amax(const float *d_x, int64_t n, float *d_amax, void *stream);

/* Quantize d_x (rows x cols, row-major) in format fmt into quant/'s packed
 * layout (qp_row_bytes, qp_scale_shape; plain, unswizzled scale order).
 * opts as in qp_quantize (sr_offset/sr_row_stride included: element (r, c)
 * draws SR word sr_offset + r*sr_row_stride + c): opts->scale > 0 gives the per-tensor encode scale
 * (delayed scaling); otherwise it is computed on the device from the amax
 * (current scaling). d_tensor_scale_in, when not NULL, overrides both with a
 * scale already on the device (e.g. from an all-reduced amax; a value <= 0
 * there means 1). d_stats may be NULL. d_scales may be NULL for formats without
 * block scales. */
int qp_cuda_quantize(qp_fmt fmt, const float *d_x, int rows, int cols, const qp_qopts *opts,
                     const float *d_tensor_scale_in, uint8_t *d_codes, uint8_t *d_scales, qp_cuda_tstats *d_stats,
                     void *stream);

/* Fused quantize-dequantize, the values qp_qdq gives (opts->unscaled included):
 * written as FP32 to d_y and/or as BF16 bits to d_y_bf16 (either may be NULL;
 * with opts->unscaled the BF16 copy is exact). */
int qp_cuda_qdq(qp_fmt fmt, const float *d_x, float *d_y, uint16_t *d_y_bf16, int rows, int cols,
                const qp_qopts *opts, const float *d_tensor_scale_in, qp_cuda_tstats *d_stats, void *stream);

/* In place, x <- x R along each row's consecutive n-vectors (n = 16, 32, 64
 * or 128), as qp_rht; the inverse as qp_rht_inverse. cols must be a multiple
 * of n (else cudaErrorInvalidValue). */
int qp_cuda_rht(float *d_x, int rows, int cols, int n, uint64_t seed, void *stream);
int qp_cuda_rht_inverse(float *d_x, int rows, int cols, int n, uint64_t seed, void *stream);
/* qp_cuda_rht with n = 16. */
int qp_cuda_rht16(float *d_x, int rows, int cols, uint64_t seed, void *stream);
/* In place, Transformer Engine's fixed-sign 16-point RHT of each row's
 * consecutive 16-vectors, bit for bit quant/'s qp_rht16_te (the same
 * qp_rht_te_vec per vector: products rounded first, then the butterflies).
 * cols must be a multiple of 16 (else cudaErrorInvalidValue). */
int qp_cuda_rht16_te(float *d_x, int rows, int cols, void *stream);

/* d_dst (cols x rows) = transpose of d_src (rows x cols). */
int qp_cuda_transpose(const float *d_src, float *d_dst, int rows, int cols, void *stream);

/* Kept for the first FP8 test: synchronous per-tensor current-scaling FP8
 * (e5m2 selects E5M2), *scale_inv returned to the host. */
int qp_cuda_quantize_fp8(const float *d_x, int64_t n, int e5m2, uint8_t *d_codes, float *scale_inv);

#ifdef __cplusplus
}
#endif
#endif
