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
 * reduction kernel's counts stay on the device, per use, until
 * qp_cuda_linear_flush brings them all back in one copy and applies them in
 * order (qp_cuda_linear_pass.h): no host synchronisation per scaled operand;
 * tensor decode scales reach the GEMM as device pointers. begin_step,
 * begin_micro and set_frozen flush; so must the caller before it reads the
 * host qp_linear's states or counts (checkpoints, the end of a run).
 * qerr rows (rel_l2, snr_db, sat_frac, zero_frac) are computed by a device
 * reduction when the step logs them and go through cfg->on_qerr at the flush.
 *
 * Products, by recipe (qp_cuda_linear_path names the one chosen; the choice
 * is qp_cuda_linear_pass.h's qpl_set_device / qpl_gemm_kind, tested on the
 * CPU with a fake compute capability):
 *   "fp8-native"     per-tensor FP8 recipes (fp8, fp8-current) on a GPU whose
 *                    GEMM runs FP8 (qp_cublt_native: cc >= 8.9): codes from
 *                    qp_cuda_quantize, decode scales passed as device
 *                    pointers, no host round trip except for statistics
 *                    (scaling updates, qerr).
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
 *                    alpha — exactly the hardware formats' products on any GPU.
 *   "bf16", "fp32"   the bf16 and fp32 recipes; the LM head is always FP32.
 * QP_CUDA_EMULATE=1 (read at create) forces "emulated-bf16" for every
 * quantized recipe. None of the native paths has run on a GPU yet
 * (tests/kernels/test_cuda_native.cu compares them with emulation there).
 *
 * Data parallelism (cfg->dp_rank/dp_size, reduce_max/reduce_sum) as in
 * qp_linear.h: SR offsets of the token slices, and the amax of an activation
 * (a device reduction copied to the host) all-reduced before its tensor scale
 * or scaling update, the counts summed.
 *
 * Pointers d_* are device memory; all work is enqueued on the stream given at
 * creation. Functions return 0, or -1 with qp_cuda_linear_error(). */
#ifndef QP_CUDA_LINEAR_H
#define QP_CUDA_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "qp_cuda_prof.h"
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
/* Apply every kept statistic (scaling updates, events, qerr rows): waits for
 * the stream. 0, or -1 with the error (then every later call fails too). */
int qp_cuda_linear_flush(qp_cuda_linear *l);
/* Mark the dispatch's phases (GEMM, quantization, bias) on p, or NULL. */
void qp_cuda_linear_set_profiler(qp_cuda_linear *l, qp_cuda_prof *p);
/* The GEMM path of the transformer blocks' GEMMs: "fp32", "bf16", "emulated-bf16", "fp8-native",
 * "mxfp8-native" or "nvfp4-native". */
const char *qp_cuda_linear_path(const qp_cuda_linear *l);

int qp_cuda_linear_forward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_Y, const float *d_X,
                           const float *d_W, const float *d_b, int M, int IC, int OC);
int qp_cuda_linear_backward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_dX, float *d_dW, float *d_db,
                            const float *d_dY, const float *d_X, const float *d_W, int M, int IC, int OC);

#ifdef __cplusplus
}
#endif
#endif
