/* qp_cuda_linear.h — the GPU side of the one precision dispatch
 * (train/qp_linear.h), with the same contract: the same qp_recipe_plan per
 * layer, the same operands and passes, SR streams indexed by (step, micro,
 * layer, GEMM, pass, operand), the RHT on the weight-gradient GEMM, block
 * formats transposed before quantization, and scaling states updated at a
 * tensor's first use in a step.
 *
 * The scaling states, the event counts and the event rows are those of a host
 * qp_linear (created by the caller, used only for them): checkpoints read and
 * restore them with qp_linear_scaling() exactly as for a CPU run, and events
 * go through the same callback. The device amax (qp_cuda_tstats) and a
 * reduction kernel's counts come back in one small copy per scaled operand.
 * qerr rows (rel_l2, snr_db, sat_frac, zero_frac) are computed by a device
 * reduction when the step logs them and go through cfg->on_qerr.
 *
 * Products, by recipe (qp_cuda_linear_path names the one chosen):
 *   "fp8-native"     per-tensor FP8 recipes (fp8, fp8-current) on a GPU whose
 *                    GEMM runs FP8 (qp_cublt_native: cc >= 8.9): codes from
 *                    qp_cuda_quantize, decode scales passed as device
 *                    pointers, no host round trip except for statistics
 *                    (scaling updates, qerr). QP_CUDA_EMULATE=1 turns it off.
 *   "emulated-bf16"  every other quantized recipe (and FP8 elsewhere):
 *                    operands quantize-dequantized unscaled to BF16 on the
 *                    device (qp_cuda_qdq), qp_cublt_gemm "bf16" with the tensor
 *                    decode scales in alpha — exactly the hardware formats'
 *                    products on any GPU. MXFP8/NVFP4 stay here even on
 *                    cc >= 10.0 until the swizzled block-scale layout
 *                    (kernels/qp_scale_layout.h) is in the tree.
 *   "bf16", "fp32"   the bf16 and fp32 recipes; the LM head is always FP32.
 *
 * Pointers d_* are device memory; all work is enqueued on the stream given at
 * creation. Functions return 0, or -1 with qp_cuda_linear_error(). */
#ifndef QP_CUDA_LINEAR_H
#define QP_CUDA_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "qp_linear.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_cuda_linear qp_cuda_linear;

/* cfg as for qp_linear_create (cfg->gemm unused); host: the qp_linear whose
 * scaling states and events this dispatch uses (it must outlive this one). */
qp_cuda_linear *qp_cuda_linear_create(const qp_linear_cfg *cfg, qp_linear *host, void *stream, char *err,
                                      size_t errlen);
void qp_cuda_linear_destroy(qp_cuda_linear *l);
void qp_cuda_linear_begin_step(qp_cuda_linear *l, int64_t step, int log_qerr);
void qp_cuda_linear_begin_micro(qp_cuda_linear *l, int micro);
void qp_cuda_linear_set_frozen(qp_cuda_linear *l, int frozen);
const char *qp_cuda_linear_error(const qp_cuda_linear *l);
/* The GEMM path of the transformer blocks' GEMMs: "fp32", "bf16", "emulated-bf16" or "fp8-native". */
const char *qp_cuda_linear_path(const qp_cuda_linear *l);

int qp_cuda_linear_forward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_Y, const float *d_X,
                           const float *d_W, const float *d_b, int M, int IC, int OC);
int qp_cuda_linear_backward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_dX, float *d_dW, float *d_db,
                            const float *d_dY, const float *d_X, const float *d_W, int M, int IC, int OC);

#ifdef __cplusplus
}
#endif
#endif
