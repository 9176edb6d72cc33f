/* qp_cuda_linear.h — the GPU's operations of the one precision dispatch
 * (train/precision/qp_linear.h, train/precision/qp_linear_ops.h): the dispatch itself — recipe
 * plans, operands and passes, SR streams indexed by (step, micro, layer,
 * GEMM, pass, operand), the RHT, transposes before block formats, scaling
 * states, events and qerr rows — is train/precision/qp_linear.c, the same code the
 * CPU runs; qp_linear_set_ops(lin, qp_cuda_linear_ops(gpu)) makes it run
 * here. The device amax (qp_cuda_tstats) and a reduction kernel's counts stay
 * on the device, per use, in a kept list of max_kept sets, until the
 * dispatch flushes (qp_linear_flush: one copy, applied in the order of the
 * uses): no host synchronisation per scaled operand; tensor decode scales
 * reach the GEMM as device pointers. The backend flushes where the stream is
 * drained anyway and before anything reads the scaling states
 * (kernels/qp_backend_cuda.c). qerr metrics (rel_l2, snr_db, sat_frac,
 * zero_frac) come from a device reduction when the step logs them.
 *
 * Products, by recipe (qp_cuda_linear_path names the one chosen; the choice
 * is qp_cuda_linear_ops.h's qpl_set_device / qpl_gemm_kind, tested on the
 * CPU with a fake compute capability):
 *   "fp8-native"     per-tensor FP8 recipes (fp8, fp8-current) on a GPU whose
 *                    GEMM runs FP8 (qp_cublt_native: cc >= 8.9): codes from
 *                    qp_cuda_quantize, decode scales passed as device
 *                    pointers, no host round trip (statistics wait for
 *                    the flush).
 *   "mxfp8-native",  MXFP8 (E4M3) and NVFP4 (1x16, 16x16) operands on
 *   "nvfp4-native"   cc >= 10.0: codes and plain block scales from
 *                    qp_cuda_quantize, the scales swizzled on the device into
 *                    cuBLASLt's tiled layout (qp_cuda_scale_swizzle; 16x16
 *                    tiles expanded to per-row scales), qp_cublt_gemm with the
 *                    block-scaled types, NVFP4's tensor decode scales as
 *                    device pointers folded into alpha — the emulated path's
 *                    products. Statistics, when a step wants them, come from
 *                    an extra quantize-dequantize of the same operand. GEMMs
 *                    with K not a multiple of 32 or M, N not of 16, and the
 *                    LM head, stay emulated/FP32.
 *   "emulated-bf16"  every other quantized recipe (MXFP4, MXFP8-E5M2, and
 *                    everything on older GPUs): operands quantize-dequantized
 *                    unscaled to BF16 on the device (qp_cuda_qdq),
 *                    qp_cublt_gemm "bf16" with the tensor decode scales in
 *                    alpha — exactly the hardware formats' products on any
 *                    GPU. A quantized operand whose GEMM partner is
 *                    unquantized (FP32) stays FP32 (its values are exact);
 *                    FP8 block formats with FP32 scales along K (fp8-block,
 *                    fp8-block-2d) run an FP32 GEMM of their scaled values,
 *                    and so does their partner (unscaled, its tensor scale a
 *                    device pointer folded into alpha): the CPU's K-chunked
 *                    products to FP32 rounding.
 *   "bf16", "fp32"   the bf16 and fp32 recipes; the LM head is always FP32.
 * QP_CUDA_EMULATE=1 (read at create) forces "emulated-bf16" for every
 * quantized recipe. None of the native paths has run on a GPU yet
 * (tests/kernels/test_cuda_native.cu compares them with emulation there).
 *
 * Pointers are device memory; all work is enqueued on the stream given at
 * creation. */
#ifndef QP_CUDA_LINEAR_H
#define QP_CUDA_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "qp_cuda_prof.h"
#include "qp_linear_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_cuda_linear qp_cuda_linear;

/* Device operations for operands of up to max_elems elements (the model's
 * qp_gpt_linear_elems), keeping up to max_kept statistics sets between
 * flushes (qp_linear_max_kept: a micro-batch's), on stream (cudaStream_t),
 * for a recipe making the GEMMs of gemms (qp_linear_gemms). NULL + err. */
qp_cuda_linear *qp_cuda_linear_create(int64_t max_elems, int max_kept, const qp_linear_gemm_set *gemms, void *stream,
                                      char *err, size_t errlen);
void qp_cuda_linear_destroy(qp_cuda_linear *l);
/* The dispatch's operations (valid while l lives). */
const qp_linear_ops *qp_cuda_linear_ops(qp_cuda_linear *l);
/* Mark the operations' phases (GEMM, quantization, bias, the statistics'
 * wait) on p, or NULL. */
void qp_cuda_linear_set_profiler(qp_cuda_linear *l, qp_cuda_prof *p);
/* The GEMM path of the transformer blocks' GEMMs: "fp32", "bf16", "emulated-bf16", "fp8-native",
 * "mxfp8-native" or "nvfp4-native". */
const char *qp_cuda_linear_path(const qp_cuda_linear *l);

#ifdef __cplusplus
}
#endif
#endif
