/* qp_dist_grads.h — the gradient exchange of a data-parallel step.
 *
 * Owns: summing every rank's gradient into each rank's, and the codec of a
 * low-precision exchange (--grad-comm). fp32: MPI_Allreduce (qp_dist_sum_f32).
 * bf16 / fp8: each rank rounds its gradient (plus the error-feedback residual
 * with ef) — BF16 round-to-nearest-even, or FP8 E4M3 round-to-nearest with
 * one scale per parameter tensor from the max over ranks of its amax
 * (448 / amax: E4M3 rather than E5M2 because a per-tensor scale already
 * covers the range, and E4M3's extra mantissa bit halves the error) — the
 * payloads are all-gathered and summed in FP32 in rank order, so every rank
 * gets the same bits. A low-precision exchange also measures itself: the
 * relative L2 error of its result against an FP32 all-reduce of the same
 * gradients (an extra all-reduce, whose time it reports apart so that the
 * step's comm_ms leaves it out). Without MPI (one process) the rounding
 * still happens, which isolates its effect on training. */
#ifndef QP_DIST_GRADS_H
#define QP_DIST_GRADS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_GRAD_COMM_FP32 = 0, QP_GRAD_COMM_BF16, QP_GRAD_COMM_FP8, QP_GRAD_COMM_COUNT } qp_grad_comm;
extern const char *const qp_grad_comm_names[QP_GRAD_COMM_COUNT]; /* "fp32", "bf16", "fp8" */

typedef struct qp_grad_exchange qp_grad_exchange;

/* For a gradient of ntensors tensors of these sizes (in order, contiguous);
 * ef: keep an error-feedback residual (bf16/fp8). NULL when out of memory. */
qp_grad_exchange *qp_grad_exchange_create(qp_grad_comm kind, int ef, const int64_t *sizes, int ntensors);
void qp_grad_exchange_destroy(qp_grad_exchange *x);
/* Payload bytes one rank sends per exchange: fp32 4, bf16 2, fp8 1 per
 * parameter (fp8 plus one float32 amax per tensor). */
int64_t qp_grad_exchange_bytes(const qp_grad_exchange *x);
/* g <- the sum over ranks, identically on every rank. *rel_err: the
 * exchange's relative L2 error (NaN for fp32); *meas_ms: time of the extra
 * all-reduce that measured it (0 for fp32). */
void qp_grad_exchange_run(qp_grad_exchange *x, float *g, double *rel_err, double *meas_ms);

#ifdef __cplusplus
}
#endif
#endif
