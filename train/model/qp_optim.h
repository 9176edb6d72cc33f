/* qp_optim.h — AdamW, the learning-rate schedule and gradient clipping.
 *
 * Owns: the optimizer step on FP32 master weights. AdamW with decoupled weight
 * decay (applied only to tensors that decay: matrices and embeddings, not
 * norms or biases), bias-corrected moments; linear warm-up to lr over
 * `warmup` steps, then cosine decay to min_lr at `steps`; clipping of the
 * global gradient L2 norm (computed in double, in a fixed order). */
#ifndef QP_OPTIM_H
#define QP_OPTIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double lr, min_lr, beta1, beta2, eps, weight_decay, grad_clip;
    int64_t warmup, steps;
} qp_optim_cfg;

/* Learning rate of optimizer step `step` (0-based). */
double qp_lr_at(const qp_optim_cfg *c, int64_t step);
/* Global L2 norm of n gradients. */
double qp_grad_norm(const float *g, int64_t n);
/* One AdamW step (t is the 1-based step count for bias correction) over the
 * parameter tensors: params/grads/m/v hold sum(sizes) floats in tensor order;
 * decays[i] says whether tensor i gets weight decay. Gradients are scaled by
 * clip_scale first (1 = no clipping). */
void qp_adamw_step(const qp_optim_cfg *c, float *params, const float *grads, float *m, float *v, const int64_t *sizes,
                   const int *decays, int ntensors, int64_t t, double lr, float clip_scale);

#ifdef __cplusplus
}
#endif
#endif
