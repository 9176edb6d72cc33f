/* qp_cuda_model_pass.h — the GPT's forward and backward passes on the GPU:
 * the shared pass order's steps over a table of layer operations.
 *
 * Owns: the GPU's form of each step of the GPT's pass order
 * (train/model/qp_model_pass.h, which the CPU's passes walk too): which layer
 * operations a step launches, on which slices of the parameter and
 * activation buffers. kernels/qp_cuda_model.cu instantiates it with operations
 * that launch GPU kernels; tests/kernels/test_cuda_model_math.c with host
 * loops over the same qp_model_math.h formulas and the CPU dispatch, and
 * checks the result against the CPU model — so the GPU's pass order and
 * buffer offsets are tested without a GPU. Plain C, included by C and CUDA. */
#ifndef QP_CUDA_MODEL_PASS_H
#define QP_CUDA_MODEL_PASS_H

#include <stdint.h>

#include "qp_linear.h"
#include "qp_model.h"
#include "qp_model_pass.h"

/* The GPU's activation layout, which the passes below index: every layer's
 * tensors, the attention's T x T scores and probabilities of every layer
 * (preatt, att; the GPU attention is a warp per row over them), no
 * log-sum-exp. The CPU model (train/model/qp_model.c) keeps no T x T matrix and
 * one layer's projection outputs instead; the two share qp_gpt_acts' fields
 * and nothing else. Its gradients use the same layout. */
static inline void qpm_act_sizes(const qp_gpt_config *c, int B, int T, int64_t s[QP_GPT_NACTS])
{
    const int64_t L = c->layers, C = c->dim, NH = c->heads, V = c->vocab, BT = (int64_t)B * T;
    for (int i = 0; i < QP_GPT_NACTS; i++) s[i] = 0;
    s[QP_ACT_ENCODED] = BT * C;
    s[QP_ACT_LN1] = L * BT * C, s[QP_ACT_LN1_MEAN] = L * BT, s[QP_ACT_LN1_RSTD] = L * BT;
    s[QP_ACT_QKV] = L * BT * 3 * C, s[QP_ACT_ATTY] = L * BT * C;
    s[QP_ACT_PREATT] = L * B * NH * T * T, s[QP_ACT_ATT] = L * B * NH * T * T;
    s[QP_ACT_ATTPROJ] = L * BT * C;
    s[QP_ACT_RESIDUAL2] = L * BT * C;
    s[QP_ACT_LN2] = L * BT * C, s[QP_ACT_LN2_MEAN] = L * BT, s[QP_ACT_LN2_RSTD] = L * BT;
    s[QP_ACT_FCH] = L * BT * 4 * C, s[QP_ACT_FCH_GELU] = L * BT * 4 * C;
    s[QP_ACT_FCPROJ] = L * BT * C;
    s[QP_ACT_RESIDUAL3] = L * BT * C;
    s[QP_ACT_LNF] = BT * C, s[QP_ACT_LNF_MEAN] = BT, s[QP_ACT_LNF_RSTD] = BT;
    s[QP_ACT_LOGITS] = BT * V, s[QP_ACT_PROBS] = BT * V, s[QP_ACT_LOSSES] = BT;
    s[QP_ACT_ATT_LSE] = 0;
}

/* Each returns 0, or -1 (the context keeps the message). */
typedef struct {
    void *ctx;
    int (*encoder_fwd)(void *ctx, float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T,
                       int C);
    int (*encoder_bwd)(void *ctx, float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T, int C);
    int (*layernorm_fwd)(void *ctx, float *out, float *mean, float *rstd, const float *inp, const float *w,
                         const float *b, int N, int C);
    int (*layernorm_bwd)(void *ctx, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                         const float *w, const float *mean, const float *rstd, int N, int C);
    int (*attention_fwd)(void *ctx, float *out, float *preatt, float *att, const float *qkv, int B, int T, int C,
                         int NH);
    int (*attention_bwd)(void *ctx, float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                         const float *att, int B, int T, int C, int NH);
    int (*gelu_fwd)(void *ctx, float *out, const float *inp, int64_t n);
    int (*gelu_bwd)(void *ctx, float *dinp, const float *inp, const float *dout, int64_t n);
    int (*residual_fwd)(void *ctx, float *out, const float *a, const float *b, int64_t n);
    int (*residual_bwd)(void *ctx, float *da, float *db, const float *dout, int64_t n);
    /* targets may be NULL: probabilities only */
    int (*softmax_ce_fwd)(void *ctx, float *probs, float *losses, const float *logits, const int32_t *targets, int N,
                          int V);
    int (*softmax_ce_bwd)(void *ctx, float *dlogits, const float *probs, const int32_t *targets, float dloss, int N,
                          int V);
    int (*linear_fwd)(void *ctx, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                      int M, int IC, int OC);
    int (*linear_bwd)(void *ctx, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                      const float *X, const float *W, int M, int IC, int OC);
    int (*zero)(void *ctx, float *p, int64_t n);
} qpm_ops;

/* One pass over the GPT on the GPU layout: what its steps share (g and d:
 * the backward's parameter and activation gradients). */
typedef struct {
    const qpm_ops *op;
    const qp_gpt_config *cfg;
    int B, T;
    const qp_gpt_params *p, *g;
    const qp_gpt_acts *a, *d;
    float *grads_acts_memory;
    int64_t num_acts;
    const int32_t *inputs, *targets;
    float loss_scale;
} qpm_gpt_pass;

/* The residual add that ends block l: residual3 = residual2 + fcproj. */
static inline int qpm_block_out_fwd(const qpm_gpt_pass *x, int l)
{
    const int64_t n = (int64_t)x->B * x->T * x->cfg->dim, o = (int64_t)l * n;
    return x->op->residual_fwd(x->op->ctx, x->a->residual3 + o, x->a->residual2 + o, x->a->fcproj + o, n);
}

static inline int qpm_block_out_bwd(const qpm_gpt_pass *x, int l)
{
    const int64_t n = (int64_t)x->B * x->T * x->cfg->dim, o = (int64_t)l * n;
    return x->op->residual_bwd(x->op->ctx, x->d->residual2 + o, x->d->fcproj + o, x->d->residual3 + o, n);
}

/* GEMM g of block l (L: the LM head), forward or backward. */
static inline int qpm_gpt_linear(const qpm_gpt_pass *x, int l, qp_gemm_id gid, int backward)
{
    const qpm_ops *op = x->op;
    const qp_gpt_params *p = x->p, *g = x->g;
    const qp_gpt_acts *a = x->a, *d = x->d;
    const int C = x->cfg->dim, BT = x->B * x->T;
    const int64_t o = (int64_t)l * BT;
    void *c = op->ctx;
    switch (gid) {
    case QP_GEMM_QKV:
        return backward ? op->linear_bwd(c, l, gid, d->ln1 + o * C, g->qkvw + (int64_t)l * 3 * C * C, g->qkvb + l * 3 * C,
                                         d->qkv + o * 3 * C, a->ln1 + o * C, p->qkvw + (int64_t)l * 3 * C * C, BT, C,
                                         3 * C)
                        : op->linear_fwd(c, l, gid, a->qkv + o * 3 * C, a->ln1 + o * C, p->qkvw + (int64_t)l * 3 * C * C,
                                         p->qkvb + l * 3 * C, BT, C, 3 * C);
    case QP_GEMM_ATTPROJ:
        return backward ? op->linear_bwd(c, l, gid, d->atty + o * C, g->attprojw + (int64_t)l * C * C,
                                         g->attprojb + l * C, d->attproj + o * C, a->atty + o * C,
                                         p->attprojw + (int64_t)l * C * C, BT, C, C)
                        : op->linear_fwd(c, l, gid, a->attproj + o * C, a->atty + o * C,
                                         p->attprojw + (int64_t)l * C * C, p->attprojb + l * C, BT, C, C);
    case QP_GEMM_FC:
        return backward ? op->linear_bwd(c, l, gid, d->ln2 + o * C, g->fcw + (int64_t)l * 4 * C * C, g->fcb + l * 4 * C,
                                         d->fch + o * 4 * C, a->ln2 + o * C, p->fcw + (int64_t)l * 4 * C * C, BT, C,
                                         4 * C)
                        : op->linear_fwd(c, l, gid, a->fch + o * 4 * C, a->ln2 + o * C, p->fcw + (int64_t)l * 4 * C * C,
                                         p->fcb + l * 4 * C, BT, C, 4 * C);
    case QP_GEMM_FCPROJ:
        return backward ? op->linear_bwd(c, l, gid, d->fch_gelu + o * 4 * C, g->fcprojw + (int64_t)l * 4 * C * C,
                                         g->fcprojb + l * C, d->fcproj + o * C, a->fch_gelu + o * 4 * C,
                                         p->fcprojw + (int64_t)l * 4 * C * C, BT, 4 * C, C)
                        : op->linear_fwd(c, l, gid, a->fcproj + o * C, a->fch_gelu + o * 4 * C,
                                         p->fcprojw + (int64_t)l * 4 * C * C, p->fcprojb + l * C, BT, 4 * C, C);
    case QP_GEMM_HEAD:
        return backward ? op->linear_bwd(c, l, gid, d->lnf, g->wte, NULL, d->logits, a->lnf, p->wte, BT, C,
                                         x->cfg->vocab)
                        : op->linear_fwd(c, l, gid, a->logits, a->lnf, p->wte, NULL, BT, C, x->cfg->vocab);
    case QP_GEMM_GATE:
    case QP_GEMM_UP:
    case QP_GEMM_DOWN:
    case QP_GEMM_COUNT: break; /* not the GPT's */
    }
    return -1;
}

static inline int qpm_gpt_forward_step(const qpm_gpt_pass *x, qp_pass_step st, int l)
{
    const qpm_ops *op = x->op;
    const qp_gpt_params *p = x->p;
    const qp_gpt_acts *a = x->a;
    const int L = x->cfg->layers, C = x->cfg->dim, NH = x->cfg->heads, B = x->B, T = x->T, BT = B * T;
    const int64_t o = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
    const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
    void *c = op->ctx;
    switch (st.op) {
    case QP_STEP_NORM_IN: /* the embeddings, or the last block's output */
        return (l == 0 ? op->encoder_fwd(c, a->encoded, x->inputs, p->wte, p->wpe, B, T, C) : qpm_block_out_fwd(x, l - 1)) ||
                       op->layernorm_fwd(c, a->ln1 + o * C, a->ln1_mean + o, a->ln1_rstd + o, residual, p->ln1w + l * C,
                                         p->ln1b + l * C, BT, C)
                   ? -1
                   : 0;
    case QP_STEP_LINEAR: return qpm_gpt_linear(x, l, st.gemm, 0);
    case QP_STEP_ATTENTION:
        return op->attention_fwd(c, a->atty + o * C, a->preatt + att_off, a->att + att_off, a->qkv + o * 3 * C, B, T, C,
                                 NH);
    case QP_STEP_NORM_MID:
        return op->residual_fwd(c, a->residual2 + o * C, residual, a->attproj + o * C, n) ||
                       op->layernorm_fwd(c, a->ln2 + o * C, a->ln2_mean + o, a->ln2_rstd + o, a->residual2 + o * C,
                                         p->ln2w + l * C, p->ln2b + l * C, BT, C)
                   ? -1
                   : 0;
    case QP_STEP_GELU: return op->gelu_fwd(c, a->fch_gelu + o * 4 * C, a->fch + o * 4 * C, 4 * n);
    case QP_STEP_NORM_OUT:
        return qpm_block_out_fwd(x, L - 1) ||
                       op->layernorm_fwd(c, a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (int64_t)(L - 1) * BT * C,
                                         p->lnfw, p->lnfb, BT, C)
                   ? -1
                   : 0;
    case QP_STEP_LOSS: return op->softmax_ce_fwd(c, a->probs, a->losses, a->logits, x->targets, BT, x->cfg->vocab);
    case QP_STEP_ROPE:
    case QP_STEP_SWIGLU:
    case QP_STEP_DOWN:
    case QP_STEP_COUNT: break; /* not the GPT's */
    }
    return -1;
}

static inline int qpm_gpt_backward_step(const qpm_gpt_pass *x, qp_pass_step st, int l)
{
    const qpm_ops *op = x->op;
    const qp_gpt_params *p = x->p, *g = x->g;
    const qp_gpt_acts *a = x->a, *d = x->d;
    const int L = x->cfg->layers, C = x->cfg->dim, NH = x->cfg->heads, B = x->B, T = x->T, BT = B * T;
    const int64_t o = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
    const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
    float *dresidual = l == 0 ? d->encoded : d->residual3 + (o - BT) * C;
    void *c = op->ctx;
    switch (st.op) {
    case QP_STEP_LOSS:
        return op->zero(c, x->grads_acts_memory, x->num_acts) ||
                       op->softmax_ce_bwd(c, d->logits, a->probs, x->targets, x->loss_scale / (float)BT, BT,
                                          x->cfg->vocab)
                   ? -1
                   : 0;
    case QP_STEP_LINEAR: return qpm_gpt_linear(x, l, st.gemm, 1);
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        return op->layernorm_bwd(c, d->residual3 + last, g->lnfw, g->lnfb, d->lnf, a->residual3 + last, p->lnfw,
                                 a->lnf_mean, a->lnf_rstd, BT, C) ||
                       qpm_block_out_bwd(x, L - 1)
                   ? -1
                   : 0;
    }
    case QP_STEP_GELU: return op->gelu_bwd(c, d->fch + o * 4 * C, a->fch + o * 4 * C, d->fch_gelu + o * 4 * C, 4 * n);
    case QP_STEP_NORM_MID:
        return op->layernorm_bwd(c, d->residual2 + o * C, g->ln2w + l * C, g->ln2b + l * C, d->ln2 + o * C,
                                 a->residual2 + o * C, p->ln2w + l * C, a->ln2_mean + o, a->ln2_rstd + o, BT, C) ||
                       op->residual_bwd(c, dresidual, d->attproj + o * C, d->residual2 + o * C, n)
                   ? -1
                   : 0;
    case QP_STEP_ATTENTION:
        return op->attention_bwd(c, d->qkv + o * 3 * C, d->preatt + att_off, d->att + att_off, d->atty + o * C,
                                 a->qkv + o * 3 * C, a->att + att_off, B, T, C, NH);
    case QP_STEP_NORM_IN: /* into the embeddings, or the last block's output */
        return op->layernorm_bwd(c, dresidual, g->ln1w + l * C, g->ln1b + l * C, d->ln1 + o * C, residual,
                                 p->ln1w + l * C, a->ln1_mean + o, a->ln1_rstd + o, BT, C) ||
                       (l == 0 ? op->encoder_bwd(c, g->wte, g->wpe, d->encoded, x->inputs, B, T, C)
                               : qpm_block_out_bwd(x, l - 1))
                   ? -1
                   : 0;
    case QP_STEP_ROPE:
    case QP_STEP_SWIGLU:
    case QP_STEP_DOWN:
    case QP_STEP_COUNT: break; /* not the GPT's */
    }
    return -1;
}

static inline int qpm_gpt_step(void *ctx, qp_pass_step st, int layer, int backward)
{
    const qpm_gpt_pass *x = (const qpm_gpt_pass *)ctx;
    return backward ? qpm_gpt_backward_step(x, st, layer) : qpm_gpt_forward_step(x, st, layer);
}

/* The forward pass (the mean loss is the caller's: a reduction of a->losses). */
static inline int qpm_forward(const qpm_ops *op, const qp_gpt_config *cfg, int B, int T, const qp_gpt_params *p,
                              const qp_gpt_acts *a, const int32_t *inputs, const int32_t *targets)
{
    qpm_gpt_pass x = {op, cfg, B, T, p, NULL, a, NULL, NULL, 0, inputs, targets, 0.0f};
    return qp_pass_forward(QP_ARCH_GPT, cfg->layers, qpm_gpt_step, &x);
}

/* The backward pass of mean loss * loss_scale; parameter gradients accumulate. */
static inline int qpm_backward(const qpm_ops *op, const qp_gpt_config *cfg, int B, int T, const qp_gpt_params *p,
                               const qp_gpt_params *g, const qp_gpt_acts *a, const qp_gpt_acts *d,
                               float *grads_acts_memory, int64_t num_acts, const int32_t *inputs,
                               const int32_t *targets, float loss_scale)
{
    qpm_gpt_pass x = {op, cfg, B, T, p, g, a, d, grads_acts_memory, num_acts, inputs, targets, loss_scale};
    return qp_pass_backward(QP_ARCH_GPT, cfg->layers, qpm_gpt_step, &x);
}

#endif
