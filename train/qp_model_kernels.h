/* qp_model_kernels.h — the two compiled copies of the model's kernels
 * (qp_model_kernels.c built for the baseline and for x86-64-v4). Internal to
 * train/. */
#ifndef QP_MODEL_KERNELS_H
#define QP_MODEL_KERNELS_H

#include "qp_model.h"

#ifndef QP_KERNEL_SUFFIX
#define QP_KERNEL_SUFFIX _base
#endif
#define QP_KERNEL_CAT2(a, b) a##b
#define QP_KERNEL_CAT(a, b) QP_KERNEL_CAT2(a, b)
#define QP_KERNEL(name) QP_KERNEL_CAT(name, QP_KERNEL_SUFFIX)

int qp_gpt_forward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_gpt_forward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

#endif
