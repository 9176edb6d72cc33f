/* qp_cuda_llama_pass.h — the Llama's forward and backward passes on the GPU:
 * the shared pass order's steps over a table of layer operations.
 *
 * Owns: the GPU's form of each step of the Llama's pass order
 * (train/model/qp_model_pass.h, which the CPU's passes walk too): which layer
 * operations a step launches, on which slices of the parameter and
 * activation buffers (the GPU's layout below). kernels/qp_cuda_model.cu
 * instantiates it with operations that launch GPU kernels;
 * tests/kernels/test_cuda_model_math.c with host loops over the same
 * qp_model_math.h formulas and the CPU dispatch, and checks the result
 * against the CPU Llama — so the pass order, the buffer offsets and the
 * grouped-query widening are tested without a GPU. The operations it shares
 * with the GPT (attention, residual adds, softmax/cross-entropy, the
 * dispatch, zeroing) are qp_cuda_model_pass.h's qpm_ops; the Llama's own
 * are qpm_llama_ops. Plain C, included by C and CUDA.
 *
 * Attention runs on the GPT's kernels: the qkv projection's narrow rows (q,
 * then KVH key and value heads) are rotated (RoPE) in a one-layer scratch,
 * then widened to the GPT's (B,T,3C) layout, each query head its group's
 * key and value head (qpm_gqa_expand), which is the activation kept for the
 * backward; attention's gradient is narrowed back, a key or value head's the
 * sum of its group's (qpm_gqa_reduce), rotated back and handed to the qkv
 * GEMM's backward. With KVH = NH the widening is a copy. */
#ifndef QP_CUDA_LLAMA_PASS_H
#define QP_CUDA_LLAMA_PASS_H

#include <stdint.h>

#include "qp_cuda_model_pass.h"
#include "qp_linear.h"
#include "qp_model.h"

/* The GPU's Llama layout: every layer's tensors, qkv widened to (L,B,T,3C)
 * and rotated, attention's T x T scores and probabilities of every layer,
 * no log-sum-exp. Its gradients use the same layout. */
static inline void qpm_llama_act_sizes(const qp_gpt_config *c, int B, int T, int64_t s[QP_LLAMA_NACTS])
{
    const int64_t L = c->layers, C = c->dim, NH = c->heads, V = c->vocab, H = c->mlp_hidden, BT = (int64_t)B * T;
    for (int i = 0; i < QP_LLAMA_NACTS; i++) s[i] = 0;
    s[QP_LACT_ENCODED] = BT * C;
    s[QP_LACT_LN1] = L * BT * C, s[QP_LACT_LN1_RSTD] = L * BT;
    s[QP_LACT_QKV] = L * BT * 3 * C, s[QP_LACT_ATTY] = L * BT * C;
    s[QP_LACT_PREATT] = L * B * NH * T * T, s[QP_LACT_ATT] = L * B * NH * T * T;
    s[QP_LACT_ATTPROJ] = L * BT * C, s[QP_LACT_RESIDUAL2] = L * BT * C;
    s[QP_LACT_LN2] = L * BT * C, s[QP_LACT_LN2_RSTD] = L * BT;
    s[QP_LACT_GATE] = L * BT * H, s[QP_LACT_UP] = L * BT * H, s[QP_LACT_SWIGLU] = L * BT * H;
    s[QP_LACT_DOWN] = L * BT * C, s[QP_LACT_RESIDUAL3] = L * BT * C;
    s[QP_LACT_LNF] = BT * C, s[QP_LACT_LNF_RSTD] = BT;
    s[QP_LACT_LOGITS] = BT * V, s[QP_LACT_PROBS] = BT * V, s[QP_LACT_LOSSES] = BT;
}

/* A layer's working set besides the activations: the narrow qkv rows and
 * their gradient (B T x (C + 2 KVH hs) each), and Smooth-SwiGLU's scales of
 * every layer (L x H), scaled input and its gradient (B T x H each), folded
 * weight and its gradient (C x H each) — these five only with
 * cfg.smooth_swiglu. */
typedef struct {
    float *qkvn, *dqkvn, *smooth_s, *smooth_x, *smooth_dx, *smooth_w, *smooth_dw;
} qpm_llama_scratch;

static inline int64_t qpm_llama_scratch_floats(const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim, H = c->mlp_hidden, L = c->layers;
    const int64_t qkv = C + 2 * (int64_t)c->kv_heads * (C / c->heads);
    return 2 * BT * qkv + (c->smooth_swiglu ? L * H + 2 * BT * H + 2 * C * H : 0);
}

static inline qpm_llama_scratch qpm_llama_scratch_carve(float *mem, const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, C = c->dim, H = c->mlp_hidden, L = c->layers;
    const int64_t qkv = C + 2 * (int64_t)c->kv_heads * (C / c->heads);
    qpm_llama_scratch s = {0, 0, 0, 0, 0, 0, 0};
    s.qkvn = mem, mem += BT * qkv;
    s.dqkvn = mem, mem += BT * qkv;
    if (c->smooth_swiglu) {
        s.smooth_s = mem, mem += L * H;
        s.smooth_x = mem, mem += BT * H;
        s.smooth_dx = mem, mem += BT * H;
        s.smooth_w = mem, mem += C * H;
        s.smooth_dw = mem;
    }
    return s;
}

/* The Llama's own operations (each returns 0, or -1; the context keeps the message). */
typedef struct {
    const qpm_ops *base; /* attention, residuals, loss, dispatch, zero: the GPT's */
    /* out (B,T,C) = wte[inp] */
    int (*embed_fwd)(void *ctx, float *out, const int32_t *inp, const float *wte, int B, int T, int C);
    /* dwte[inp] += dout (a channel's tokens in (b,t) order) */
    int (*embed_bwd)(void *ctx, float *dwte, const float *dout, const int32_t *inp, int B, int T, int C);
    int (*rmsnorm_fwd)(void *ctx, float *out, float *rstd, const float *inp, const float *w, int N, int C);
    /* dinp += input gradient; dw += gain gradient (chunks of QPM_SUM_ROWS rows, then chunks in order) */
    int (*rmsnorm_bwd)(void *ctx, float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                       const float *rstd, int N, int C);
    /* qkv narrow rows (N, C + 2 KVH hs): q and k heads rotated for position row % T, in place */
    int (*rope)(void *ctx, float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse);
    /* wide (N, 3C) from narrow (qpm_gqa_expand) */
    int (*gqa_expand)(void *ctx, float *wide, const float *narrow, int N, int C, int NH, int KVH);
    /* narrow (N, C + 2 KVH hs) = the gradient of the widening from wide's (written) */
    int (*gqa_reduce)(void *ctx, float *narrow, const float *wide, int N, int C, int NH, int KVH);
    int (*swiglu_fwd)(void *ctx, float *h, const float *a, const float *u, int64_t n);
    /* da += ..., du += ... (qpm_swiglu_bwd) */
    int (*swiglu_bwd)(void *ctx, float *da, float *du, const float *a, const float *u, const float *dh, int64_t n);
    /* s (H) = qpm_smooth_scale of each channel's amax over the N rows of h
     * (data parallel: the amaxes reduced over the ranks first) */
    int (*smooth_scales)(void *ctx, float *s, const float *h, int N, int H);
    /* xs (N,H) = h s by column; ws (C,H) = w / s by column */
    int (*smooth_apply)(void *ctx, float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C,
                        int H);
    /* dh (N,H) += dxs s by column; dw (C,H) += dws / s by column */
    int (*smooth_unfold)(void *ctx, float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N,
                         int C, int H);
} qpm_llama_ops;

/* One pass over the Llama on the GPU layout: what its steps share (g and
 * d: the backward's parameter and activation gradients). */
typedef struct {
    const qpm_llama_ops *op;
    const qp_gpt_config *cfg;
    int B, T;
    const qp_llama_params *p, *g;
    const qp_llama_acts *a, *d;
    float *grads_acts_memory;
    int64_t num_acts;
    const qpm_llama_scratch *sc;
    const float *rope;
    const int32_t *inputs, *targets;
    float loss_scale;
} qpm_llama_pass;

/* The residual add that ends block l: residual3 = residual2 + down. */
static inline int qpm_llama_block_out_fwd(const qpm_llama_pass *x, int l)
{
    const qpm_ops *o = x->op->base;
    const int64_t n = (int64_t)x->B * x->T * x->cfg->dim, off = (int64_t)l * n;
    return o->residual_fwd(o->ctx, x->a->residual3 + off, x->a->residual2 + off, x->a->down + off, n);
}

static inline int qpm_llama_block_out_bwd(const qpm_llama_pass *x, int l)
{
    const qpm_ops *o = x->op->base;
    const int64_t n = (int64_t)x->B * x->T * x->cfg->dim, off = (int64_t)l * n;
    return o->residual_bwd(o->ctx, x->d->residual2 + off, x->d->down + off, x->d->residual3 + off, n);
}

/* GEMM g of block l (L: the LM head), forward or backward; the down GEMM's
 * is qpm_llama_down. */
static inline int qpm_llama_linear(const qpm_llama_pass *x, int l, qp_gemm_id gid, int backward)
{
    const qpm_ops *o = x->op->base;
    const qp_llama_params *p = x->p, *g = x->g;
    const qp_llama_acts *a = x->a, *d = x->d;
    const int C = x->cfg->dim, H = x->cfg->mlp_hidden, BT = x->B * x->T;
    const int QKV = C + 2 * x->cfg->kv_heads * (C / x->cfg->heads);
    const int64_t off = (int64_t)l * BT;
    void *c = o->ctx;
    switch (gid) {
    case QP_GEMM_QKV: /* the narrow rows, rotated and widened by QP_STEP_ROPE */
        return backward ? o->linear_bwd(c, l, gid, d->ln1 + off * C, g->qkvw + (int64_t)l * QKV * C, NULL,
                                        x->sc->dqkvn, a->ln1 + off * C, p->qkvw + (int64_t)l * QKV * C, BT, C, QKV)
                        : o->linear_fwd(c, l, gid, x->sc->qkvn, a->ln1 + off * C, p->qkvw + (int64_t)l * QKV * C, NULL,
                                        BT, C, QKV);
    case QP_GEMM_ATTPROJ:
        return backward ? o->linear_bwd(c, l, gid, d->atty + off * C, g->attprojw + (int64_t)l * C * C, NULL,
                                        d->attproj + off * C, a->atty + off * C, p->attprojw + (int64_t)l * C * C, BT, C,
                                        C)
                        : o->linear_fwd(c, l, gid, a->attproj + off * C, a->atty + off * C,
                                        p->attprojw + (int64_t)l * C * C, NULL, BT, C, C);
    case QP_GEMM_GATE:
        return backward ? o->linear_bwd(c, l, gid, d->ln2 + off * C, g->gatew + (int64_t)l * H * C, NULL,
                                        d->gate + off * H, a->ln2 + off * C, p->gatew + (int64_t)l * H * C, BT, C, H)
                        : o->linear_fwd(c, l, gid, a->gate + off * H, a->ln2 + off * C, p->gatew + (int64_t)l * H * C,
                                        NULL, BT, C, H);
    case QP_GEMM_UP:
        return backward ? o->linear_bwd(c, l, gid, d->ln2 + off * C, g->upw + (int64_t)l * H * C, NULL,
                                        d->up + off * H, a->ln2 + off * C, p->upw + (int64_t)l * H * C, BT, C, H)
                        : o->linear_fwd(c, l, gid, a->up + off * H, a->ln2 + off * C, p->upw + (int64_t)l * H * C, NULL,
                                        BT, C, H);
    case QP_GEMM_HEAD:
        return backward ? o->linear_bwd(c, l, gid, d->lnf, g->lmhead, NULL, d->logits, a->lnf, p->lmhead, BT, C,
                                        x->cfg->vocab)
                        : o->linear_fwd(c, l, gid, a->logits, a->lnf, p->lmhead, NULL, BT, C, x->cfg->vocab);
    case QP_GEMM_FC:
    case QP_GEMM_FCPROJ:
    case QP_GEMM_DOWN: /* qpm_llama_down */
    case QP_GEMM_COUNT: break;
    }
    return -1;
}

/* The down GEMM: with Smooth-SwiGLU on the scaled input and folded weight
 * (the forward makes the scales; the backward the same operands again, then
 * folds the gradients back). */
static inline int qpm_llama_down(const qpm_llama_pass *x, int l, int backward)
{
    const qpm_llama_ops *op = x->op;
    const qpm_ops *o = op->base;
    const qpm_llama_scratch *sc = x->sc;
    const int C = x->cfg->dim, H = x->cfg->mlp_hidden, BT = x->B * x->T;
    const int64_t off = (int64_t)l * BT;
    const float *h = x->a->swiglu + off * H, *downw = x->p->downw + (int64_t)l * C * H;
    void *c = o->ctx;
    if (!backward) {
        const float *dx = h, *dw = downw;
        if (x->cfg->smooth_swiglu) {
            float *s = sc->smooth_s + (int64_t)l * H;
            if (op->smooth_scales(c, s, h, BT, H) || op->smooth_apply(c, sc->smooth_x, sc->smooth_w, h, downw, s, BT, C, H))
                return -1;
            dx = sc->smooth_x, dw = sc->smooth_w;
        }
        return o->linear_fwd(c, l, QP_GEMM_DOWN, x->a->down + off * C, dx, dw, NULL, BT, H, C);
    }
    const qp_llama_acts *d = x->d;
    if (!x->cfg->smooth_swiglu)
        return o->linear_bwd(c, l, QP_GEMM_DOWN, d->swiglu + off * H, x->g->downw + (int64_t)l * C * H, NULL,
                             d->down + off * C, h, downw, BT, H, C);
    /* the down GEMM's backward on the forward's scaled operands, then the fold back */
    const float *s = sc->smooth_s + (int64_t)l * H;
    return op->smooth_apply(c, sc->smooth_x, sc->smooth_w, h, downw, s, BT, C, H) ||
                   o->zero(c, sc->smooth_dw, (int64_t)C * H) || o->zero(c, sc->smooth_dx, (int64_t)BT * H) ||
                   o->linear_bwd(c, l, QP_GEMM_DOWN, sc->smooth_dx, sc->smooth_dw, NULL, d->down + off * C,
                                 sc->smooth_x, sc->smooth_w, BT, H, C) ||
                   op->smooth_unfold(c, d->swiglu + off * H, x->g->downw + (int64_t)l * C * H, sc->smooth_dx,
                                     sc->smooth_dw, s, BT, C, H)
               ? -1
               : 0;
}

static inline int qpm_llama_forward_step(const qpm_llama_pass *x, qp_pass_step st, int l)
{
    const qpm_llama_ops *op = x->op;
    const qpm_ops *o = op->base;
    const qp_gpt_config *cfg = x->cfg;
    const qp_llama_params *p = x->p;
    const qp_llama_acts *a = x->a;
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, KVH = cfg->kv_heads, H = cfg->mlp_hidden, B = x->B,
              T = x->T, BT = B * T;
    const int64_t off = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
    const float *residual = l == 0 ? a->encoded : a->residual3 + (off - BT) * C;
    void *c = o->ctx;
    switch (st.op) {
    case QP_STEP_NORM_IN: /* the embeddings, or the last block's output */
        return (l == 0 ? op->embed_fwd(c, a->encoded, x->inputs, p->wte, B, T, C) : qpm_llama_block_out_fwd(x, l - 1)) ||
                       op->rmsnorm_fwd(c, a->ln1 + off * C, a->ln1_rstd + off, residual, p->ln1w + l * C, BT, C)
                   ? -1
                   : 0;
    case QP_STEP_LINEAR: return qpm_llama_linear(x, l, st.gemm, 0);
    case QP_STEP_ROPE: /* rotated in the narrow rows, then widened to the GPT's layout */
        return op->rope(c, x->sc->qkvn, x->rope, BT, T, cfg->max_seq, C, NH, KVH, 0) ||
                       op->gqa_expand(c, a->qkv + off * 3 * C, x->sc->qkvn, BT, C, NH, KVH)
                   ? -1
                   : 0;
    case QP_STEP_ATTENTION:
        return o->attention_fwd(c, a->atty + off * C, a->preatt + att_off, a->att + att_off, a->qkv + off * 3 * C, B, T,
                                C, NH);
    case QP_STEP_NORM_MID:
        return o->residual_fwd(c, a->residual2 + off * C, residual, a->attproj + off * C, n) ||
                       op->rmsnorm_fwd(c, a->ln2 + off * C, a->ln2_rstd + off, a->residual2 + off * C, p->ln2w + l * C,
                                       BT, C)
                   ? -1
                   : 0;
    case QP_STEP_SWIGLU:
        return op->swiglu_fwd(c, a->swiglu + off * H, a->gate + off * H, a->up + off * H, (int64_t)BT * H);
    case QP_STEP_DOWN: return qpm_llama_down(x, l, 0);
    case QP_STEP_NORM_OUT:
        return qpm_llama_block_out_fwd(x, L - 1) ||
                       op->rmsnorm_fwd(c, a->lnf, a->lnf_rstd, a->residual3 + (int64_t)(L - 1) * BT * C, p->lnfw, BT, C)
                   ? -1
                   : 0;
    case QP_STEP_LOSS: return o->softmax_ce_fwd(c, a->probs, a->losses, a->logits, x->targets, BT, cfg->vocab);
    case QP_STEP_GELU:
    case QP_STEP_COUNT: break; /* not the Llama's */
    }
    return -1;
}

static inline int qpm_llama_backward_step(const qpm_llama_pass *x, qp_pass_step st, int l)
{
    const qpm_llama_ops *op = x->op;
    const qpm_ops *o = op->base;
    const qp_gpt_config *cfg = x->cfg;
    const qp_llama_params *p = x->p, *g = x->g;
    const qp_llama_acts *a = x->a, *d = x->d;
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, KVH = cfg->kv_heads, H = cfg->mlp_hidden, B = x->B,
              T = x->T, BT = B * T;
    const int64_t off = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
    const float *residual = l == 0 ? a->encoded : a->residual3 + (off - BT) * C;
    float *dresidual = l == 0 ? d->encoded : d->residual3 + (off - BT) * C;
    void *c = o->ctx;
    switch (st.op) {
    case QP_STEP_LOSS:
        return o->zero(c, x->grads_acts_memory, x->num_acts) ||
                       o->softmax_ce_bwd(c, d->logits, a->probs, x->targets, x->loss_scale / (float)BT, BT, cfg->vocab)
                   ? -1
                   : 0;
    case QP_STEP_LINEAR: return qpm_llama_linear(x, l, st.gemm, 1);
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        return op->rmsnorm_bwd(c, d->residual3 + last, g->lnfw, d->lnf, a->residual3 + last, p->lnfw, a->lnf_rstd, BT,
                               C) ||
                       qpm_llama_block_out_bwd(x, L - 1)
                   ? -1
                   : 0;
    }
    case QP_STEP_DOWN: return qpm_llama_down(x, l, 1);
    case QP_STEP_SWIGLU:
        return op->swiglu_bwd(c, d->gate + off * H, d->up + off * H, a->gate + off * H, a->up + off * H,
                              d->swiglu + off * H, (int64_t)BT * H);
    case QP_STEP_NORM_MID:
        return op->rmsnorm_bwd(c, d->residual2 + off * C, g->ln2w + l * C, d->ln2 + off * C, a->residual2 + off * C,
                               p->ln2w + l * C, a->ln2_rstd + off, BT, C) ||
                       o->residual_bwd(c, dresidual, d->attproj + off * C, d->residual2 + off * C, n)
                   ? -1
                   : 0;
    case QP_STEP_ATTENTION:
        return o->attention_bwd(c, d->qkv + off * 3 * C, d->preatt + att_off, d->att + att_off, d->atty + off * C,
                                a->qkv + off * 3 * C, a->att + att_off, B, T, C, NH);
    case QP_STEP_ROPE: /* narrowed back, then rotated back */
        return op->gqa_reduce(c, x->sc->dqkvn, d->qkv + off * 3 * C, BT, C, NH, KVH) ||
                       op->rope(c, x->sc->dqkvn, x->rope, BT, T, cfg->max_seq, C, NH, KVH, 1)
                   ? -1
                   : 0;
    case QP_STEP_NORM_IN: /* into the embeddings, or the last block's output */
        return op->rmsnorm_bwd(c, dresidual, g->ln1w + l * C, d->ln1 + off * C, residual, p->ln1w + l * C,
                               a->ln1_rstd + off, BT, C) ||
                       (l == 0 ? op->embed_bwd(c, g->wte, d->encoded, x->inputs, B, T, C)
                               : qpm_llama_block_out_bwd(x, l - 1))
                   ? -1
                   : 0;
    case QP_STEP_GELU:
    case QP_STEP_COUNT: break; /* not the Llama's */
    }
    return -1;
}

static inline int qpm_llama_step(void *ctx, qp_pass_step st, int layer, int backward)
{
    const qpm_llama_pass *x = (const qpm_llama_pass *)ctx;
    return backward ? qpm_llama_backward_step(x, st, layer) : qpm_llama_forward_step(x, st, layer);
}

/* The forward pass (the mean loss is the caller's: a reduction of a->losses). */
static inline int qpm_llama_forward(const qpm_llama_ops *op, const qp_gpt_config *cfg, int B, int T,
                                    const qp_llama_params *p, const qp_llama_acts *a, const qpm_llama_scratch *sc,
                                    const float *rope, const int32_t *inputs, const int32_t *targets)
{
    qpm_llama_pass x = {op, cfg, B, T, p, NULL, a, NULL, NULL, 0, sc, rope, inputs, targets, 0.0f};
    return qp_pass_forward(QP_ARCH_LLAMA, cfg->layers, qpm_llama_step, &x);
}

/* The backward pass of mean loss * loss_scale; parameter gradients accumulate. */
static inline int qpm_llama_backward(const qpm_llama_ops *op, const qp_gpt_config *cfg, int B, int T,
                                     const qp_llama_params *p, const qp_llama_params *g, const qp_llama_acts *a,
                                     const qp_llama_acts *d, float *grads_acts_memory, int64_t num_acts,
                                     const qpm_llama_scratch *sc, const float *rope, const int32_t *inputs,
                                     const int32_t *targets, float loss_scale)
{
    qpm_llama_pass x = {op, cfg, B, T, p, g, a, d, grads_acts_memory, num_acts, sc, rope, inputs, targets, loss_scale};
    return qp_pass_backward(QP_ARCH_LLAMA, cfg->layers, qpm_llama_step, &x);
}

#endif
