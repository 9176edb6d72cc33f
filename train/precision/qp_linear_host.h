/* qp_linear_host.h — the CPU's operations of the precision dispatch
 * (qp_linear_ops.h): quant/'s quantize-dequantize (unscaled, in the stored
 * order of each operand), quant/'s error metrics, the RHT, SIMD tiled
 * transposes (qp_transpose.h), OpenMP bias loops, and oneDNN's GEMM (qp_gemm.h), which reads either operand
 * transposed and runs BF16 when both operands are BF16 values. Formats whose
 * scaled values are not BF16 values (FP8 blocks with FP32 scales along K)
 * hand the GEMM their codes and each (row, K-chunk) scale, and the GEMM runs
 * K-chunked (qp_gemm_run_kscaled). A later use gets an earlier one's
 * quantized operand back when the dispatch says it is the same (reuse): the
 * wgrad pass dgrad's dY, the backward the X and W the forward kept. One kept
 * statistics slot: the dispatch applies each quantization's statistics at
 * once.
 *
 * Owns: the CPU's operand buffers (per GEMM side: a transposed/rotated copy,
 * the quantized copy, the packed codes and chunk scales of a K-chunked
 * operand; one for the metrics) and the kept copies (the BF16 bits of the X
 * and W of every block GEMM whose backward reuses them). qp_linear_create
 * makes one. */
#ifndef QP_LINEAR_HOST_H
#define QP_LINEAR_HOST_H

#include <stdint.h>

#include "qp_gemm.h"
#include "qp_linear_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_linear_host qp_linear_host;

/* Buffers for operands of up to max_elems, and room for max_copies kept
 * quantized operands (each allocated when first kept); NULL without memory. */
qp_linear_host *qp_linear_host_create(qp_gemm *gemm, int64_t max_elems, int max_copies);
void qp_linear_host_destroy(qp_linear_host *h);
const qp_linear_ops *qp_linear_host_ops(qp_linear_host *h);
/* Where BF16 products run on the FP32 kernel, the kept copies held as
 * floats, in bytes (64 MiB unless set before the first copy is kept; beyond
 * it, BF16 bits: the same values in half the memory, widened when used). */
void qp_linear_host_set_kept_f32_budget(qp_linear_host *h, size_t bytes);
/* Buffers for operands of up to max_elems from now on (never smaller; the
 * operations' max_elems and tbuf follow): 0, or -1 without memory (the
 * buffers stay as they were). For a caller whose operand sizes grow, as
 * the Python package's. */
int qp_linear_host_reserve(qp_linear_host *h, int64_t max_elems);
/* The product each GEMM operation asks for goes to fn instead of qp_gemm:
 * the two operands as the operations hold them (qp_linear_operand: values
 * or BF16 bits, their decode scale and K-chunk scales), for a caller that
 * multiplies them itself (the Python package hands them to PyTorch). fn
 * returns 0, or -1 with its message in the operations' error. NULL: qp_gemm
 * again. */
typedef int (*qp_linear_host_gemm_fn)(void *user, const qp_linear_operand *a, const qp_linear_operand *b, float *C,
                                      int M, int N, int K, float alpha, int accumulate, char *err, size_t errlen);
void qp_linear_host_set_gemm(qp_linear_host *h, qp_linear_host_gemm_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
