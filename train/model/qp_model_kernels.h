/* qp_model_kernels.h — the two compiled copies of the model's kernels
 * (qp_model_kernels.c and qp_llama_kernels.c, each built for the baseline,
 * x86-64-v3 and x86-64-v4), their working sets, and the Llama's layout functions
 * (qp_llama.c). Internal to train/. */
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

/* ---- the Llama (qp_llama.c, qp_llama_kernels.c) ---------------------------- */

/* Width of a row of the Llama's q, k, v projection: C + 2 KVH hs. */
static inline int64_t qp_llama_qkv_width(const qp_gpt_config *c)
{
    return (int64_t)c->dim + 2 * (int64_t)c->kv_heads * (c->dim / c->heads);
}

/* The Llama's backward working set: gradients of the residual stream (dres),
 * of a norm's output (dln), of the attention output (datty), of the SwiGLU
 * output, then in place of its gate branch (dh), of its up branch (dup), of
 * q, k, v (dqkv), and the RMSNorm gains' row-block partial sums (part). */
typedef struct {
    float *dres, *dln, *datty, *dh, *dup, *dqkv, *part;
} qp_llama_bwd_scratch;

static inline int64_t qp_llama_scratch_floats(const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim, H = c->mlp_hidden, nblk = (BT + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
    return 3 * qp_pad16(BT * C) + 2 * qp_pad16(BT * H) + qp_pad16(BT * qp_llama_qkv_width(c)) + qp_pad16(nblk * C);
}

static inline qp_llama_bwd_scratch qp_llama_scratch_carve(float *mem, const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim, H = c->mlp_hidden;
    qp_llama_bwd_scratch s;
    s.dres = mem, mem += qp_pad16(BT * C);
    s.dln = mem, mem += qp_pad16(BT * C);
    s.datty = mem, mem += qp_pad16(BT * C);
    s.dh = mem, mem += qp_pad16(BT * H);
    s.dup = mem, mem += qp_pad16(BT * H);
    s.dqkv = mem, mem += qp_pad16(BT * qp_llama_qkv_width(c));
    s.part = mem;
    return s;
}

/* Point the n activation fields f into mem, sizes[i] floats each (a field of
 * size 0 is NULL), each on a 64-byte boundary; the floats used (mem NULL:
 * only counts). qp_gpt_carve_acts and qp_llama_carve_acts. */
int64_t qp_model_carve(float **f[], int n, float *mem, const int64_t *sizes);

/* N(0, std) from Philox at (seed, stream), element i: the initial weights. */
float qp_model_normal_at(uint64_t seed, uint64_t stream, uint64_t i, float std);

/* qp_llama.c: the Llama's tensors (c resolved) */
int qp_llama_param_decays(int i);
void qp_llama_param_shapes(const qp_gpt_config *c, int64_t s[QP_MODEL_MAX_NPARAMS][3]);
void qp_llama_act_sizes(const qp_gpt_config *c, int B, int T, int64_t s[QP_LLAMA_NACTS]);
/* The RoPE table and Smooth-SwiGLU's buffers of m (m->cfg, B, T set); 0 or -1 (no memory). */
int qp_llama_alloc(qp_gpt *m);
void qp_llama_init_weights(qp_gpt *m, uint64_t seed);

int qp_llama_forward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_llama_backward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_llama_forward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_llama_backward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_llama_forward_v3(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_llama_backward_v3(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

/* ---- the GPT (qp_model_kernels.c) ----------------------------------------- */

int qp_gpt_forward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_base(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_gpt_forward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_v4(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);
int qp_gpt_forward_v3(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
int qp_gpt_backward_v3(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

#endif
