/* qp_cuda_model_pass.h — the order of the GPT's forward and backward passes,
 * written once over a table of layer operations.
 *
 * Owns: which layer runs when, on which slices of the parameter and
 * activation buffers (train/model/qp_model_kernels.c's qp_gpt_forward/backward,
 * step for step). kernels/qp_cuda_model.cu instantiates it with operations
 * that launch GPU kernels; tests/kernels/test_cuda_model_math.c with host
 * loops over the same qp_model_math.h formulas and the CPU dispatch, and
 * checks the result against the CPU model — so the GPU's pass order and
 * buffer offsets are tested without a GPU. Plain C, included by C and CUDA. */
#ifndef QP_CUDA_MODEL_PASS_H
#define QP_CUDA_MODEL_PASS_H

#include <stdint.h>

#include "qp_linear.h"
#include "qp_model.h"

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

/* The forward pass (the mean loss is the caller's: a reduction of a->losses). */
static inline int qpm_forward(const qpm_ops *op, const qp_gpt_config *cfg, int B, int T, const qp_gpt_params *p,
                              const qp_gpt_acts *a, const int32_t *inputs, const int32_t *targets)
{
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, V = cfg->vocab, BT = B * T;
    void *x = op->ctx;
    if (op->encoder_fwd(x, a->encoded, inputs, p->wte, p->wpe, B, T, C)) return -1;
    for (int l = 0; l < L; l++) {
        const int64_t o = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *ln1 = a->ln1 + o * C, *qkv = a->qkv + o * 3 * C, *atty = a->atty + o * C;
        float *attproj = a->attproj + o * C, *res2 = a->residual2 + o * C, *ln2 = a->ln2 + o * C;
        float *fch = a->fch + o * 4 * C, *fchg = a->fch_gelu + o * 4 * C, *fcproj = a->fcproj + o * C;
        if (op->layernorm_fwd(x, ln1, a->ln1_mean + o, a->ln1_rstd + o, residual, p->ln1w + l * C, p->ln1b + l * C,
                              BT, C) ||
            op->linear_fwd(x, l, QP_GEMM_QKV, qkv, ln1, p->qkvw + (int64_t)l * 3 * C * C, p->qkvb + l * 3 * C, BT, C,
                           3 * C) ||
            op->attention_fwd(x, atty, a->preatt + att_off, a->att + att_off, qkv, B, T, C, NH) ||
            op->linear_fwd(x, l, QP_GEMM_ATTPROJ, attproj, atty, p->attprojw + (int64_t)l * C * C,
                           p->attprojb + l * C, BT, C, C) ||
            op->residual_fwd(x, res2, residual, attproj, n) ||
            op->layernorm_fwd(x, ln2, a->ln2_mean + o, a->ln2_rstd + o, res2, p->ln2w + l * C, p->ln2b + l * C, BT,
                              C) ||
            op->linear_fwd(x, l, QP_GEMM_FC, fch, ln2, p->fcw + (int64_t)l * 4 * C * C, p->fcb + l * 4 * C, BT, C,
                           4 * C) ||
            op->gelu_fwd(x, fchg, fch, 4 * n) ||
            op->linear_fwd(x, l, QP_GEMM_FCPROJ, fcproj, fchg, p->fcprojw + (int64_t)l * 4 * C * C,
                           p->fcprojb + l * C, BT, 4 * C, C) ||
            op->residual_fwd(x, a->residual3 + o * C, res2, fcproj, n))
            return -1;
    }
    return op->layernorm_fwd(x, a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (int64_t)(L - 1) * BT * C, p->lnfw,
                             p->lnfb, BT, C) ||
                   op->linear_fwd(x, L, QP_GEMM_HEAD, a->logits, a->lnf, p->wte, NULL, BT, C, V) ||
                   op->softmax_ce_fwd(x, a->probs, a->losses, a->logits, targets, BT, V)
               ? -1
               : 0;
}

/* The backward pass of mean loss * loss_scale; parameter gradients accumulate. */
static inline int qpm_backward(const qpm_ops *op, const qp_gpt_config *cfg, int B, int T, const qp_gpt_params *p,
                               const qp_gpt_params *g, const qp_gpt_acts *a, const qp_gpt_acts *d,
                               float *grads_acts_memory, int64_t num_acts, const int32_t *inputs,
                               const int32_t *targets, float loss_scale)
{
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, V = cfg->vocab, BT = B * T;
    void *x = op->ctx;
    if (op->zero(x, grads_acts_memory, num_acts) ||
        op->softmax_ce_bwd(x, d->logits, a->probs, targets, loss_scale / (float)BT, BT, V) ||
        op->linear_bwd(x, L, QP_GEMM_HEAD, d->lnf, g->wte, NULL, d->logits, a->lnf, p->wte, BT, C, V))
        return -1;
    const int64_t last = (int64_t)(L - 1) * BT * C;
    if (op->layernorm_bwd(x, d->residual3 + last, g->lnfw, g->lnfb, d->lnf, a->residual3 + last, p->lnfw, a->lnf_mean,
                          a->lnf_rstd, BT, C))
        return -1;
    for (int l = L - 1; l >= 0; l--) {
        const int64_t o = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *dresidual = l == 0 ? d->encoded : d->residual3 + (o - BT) * C;
        if (op->residual_bwd(x, d->residual2 + o * C, d->fcproj + o * C, d->residual3 + o * C, n) ||
            op->linear_bwd(x, l, QP_GEMM_FCPROJ, d->fch_gelu + o * 4 * C, g->fcprojw + (int64_t)l * 4 * C * C,
                           g->fcprojb + l * C, d->fcproj + o * C, a->fch_gelu + o * 4 * C,
                           p->fcprojw + (int64_t)l * 4 * C * C, BT, 4 * C, C) ||
            op->gelu_bwd(x, d->fch + o * 4 * C, a->fch + o * 4 * C, d->fch_gelu + o * 4 * C, 4 * n) ||
            op->linear_bwd(x, l, QP_GEMM_FC, d->ln2 + o * C, g->fcw + (int64_t)l * 4 * C * C, g->fcb + l * 4 * C,
                           d->fch + o * 4 * C, a->ln2 + o * C, p->fcw + (int64_t)l * 4 * C * C, BT, C, 4 * C) ||
            op->layernorm_bwd(x, d->residual2 + o * C, g->ln2w + l * C, g->ln2b + l * C, d->ln2 + o * C,
                              a->residual2 + o * C, p->ln2w + l * C, a->ln2_mean + o, a->ln2_rstd + o, BT, C) ||
            op->residual_bwd(x, dresidual, d->attproj + o * C, d->residual2 + o * C, n) ||
            op->linear_bwd(x, l, QP_GEMM_ATTPROJ, d->atty + o * C, g->attprojw + (int64_t)l * C * C,
                           g->attprojb + l * C, d->attproj + o * C, a->atty + o * C,
                           p->attprojw + (int64_t)l * C * C, BT, C, C) ||
            op->attention_bwd(x, d->qkv + o * 3 * C, d->preatt + att_off, d->att + att_off, d->atty + o * C,
                              a->qkv + o * 3 * C, a->att + att_off, B, T, C, NH) ||
            op->linear_bwd(x, l, QP_GEMM_QKV, d->ln1 + o * C, g->qkvw + (int64_t)l * 3 * C * C, g->qkvb + l * 3 * C,
                           d->qkv + o * 3 * C, a->ln1 + o * C, p->qkvw + (int64_t)l * 3 * C * C, BT, C, 3 * C) ||
            op->layernorm_bwd(x, dresidual, g->ln1w + l * C, g->ln1b + l * C, d->ln1 + o * C, residual,
                              p->ln1w + l * C, a->ln1_mean + o, a->ln1_rstd + o, BT, C))
            return -1;
    }
    return op->encoder_bwd(x, g->wte, g->wpe, d->encoded, inputs, B, T, C);
}

#endif
