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

/* The backward's working set (qp_gpt.scratch): one layer's gradients of the
 * residual stream (dres), of a LayerNorm output (dln), of the attention
 * output (datty), of the MLP hidden layer (dfch) and of qkv (dqkv), and the
 * per-row-block partial sums of bias and norm gradients (part: a block of
 * QP_ROW_BLOCK rows sums its rows in order, the blocks are then summed in
 * order, so these sums do not depend on the thread count). */
#define QP_ROW_BLOCK 32
typedef struct {
    float *dres, *dln, *datty, *dfch, *dqkv, *part;
} qp_gpt_bwd_scratch;

static inline int64_t qp_pad16(int64_t n) { return (n + 15) / 16 * 16; }

static inline int64_t qp_gpt_scratch_floats(const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim, nblk = (BT + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
    return 3 * qp_pad16(BT * C) + qp_pad16(BT * 4 * C) + qp_pad16(BT * 3 * C) + qp_pad16(nblk * 4 * C);
}

static inline qp_gpt_bwd_scratch qp_gpt_scratch_carve(float *mem, const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim;
    qp_gpt_bwd_scratch s;
    s.dres = mem, mem += qp_pad16(BT * C);
    s.dln = mem, mem += qp_pad16(BT * C);
    s.datty = mem, mem += qp_pad16(BT * C);
    s.dfch = mem, mem += qp_pad16(BT * 4 * C);
    s.dqkv = mem, mem += qp_pad16(BT * 3 * C);
    s.part = mem;
    return s;
}

int qp_gpt_forward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_gpt_forward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

#endif
