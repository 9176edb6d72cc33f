/* qp_cuda_llama_pass.h — the order of the Llama's forward and backward passes
 * on the GPU, written once over a table of layer operations.
 *
 * Owns: which layer runs when, on which slices of the parameter and
 * activation buffers (train/model/qp_llama_kernels.c's qp_llama_forward/backward,
 * step for step, on the GPU's layout below). kernels/qp_cuda_model.cu
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

/* The forward pass (the mean loss is the caller's: a reduction of a->losses). */
static inline int qpm_llama_forward(const qpm_llama_ops *op, const qp_gpt_config *cfg, int B, int T,
                                    const qp_llama_params *p, const qp_llama_acts *a, const qpm_llama_scratch *sc,
                                    const float *rope, const int32_t *inputs, const int32_t *targets)
{
    const qpm_ops *o = op->base;
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, KVH = cfg->kv_heads, V = cfg->vocab,
              H = cfg->mlp_hidden, BT = B * T, QKV = C + 2 * KVH * (C / NH);
    void *x = o->ctx;
    if (op->embed_fwd(x, a->encoded, inputs, p->wte, B, T, C)) return -1;
    for (int l = 0; l < L; l++) {
        const int64_t off = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (off - BT) * C;
        float *ln1 = a->ln1 + off * C, *qkv = a->qkv + off * 3 * C, *atty = a->atty + off * C;
        float *attproj = a->attproj + off * C, *res2 = a->residual2 + off * C, *ln2 = a->ln2 + off * C;
        float *gate = a->gate + off * H, *up = a->up + off * H, *h = a->swiglu + off * H, *down = a->down + off * C;
        const float *downw = p->downw + (int64_t)l * C * H, *dx = h, *dw = downw;
        if (op->rmsnorm_fwd(x, ln1, a->ln1_rstd + off, residual, p->ln1w + l * C, BT, C) ||
            o->linear_fwd(x, l, QP_GEMM_QKV, sc->qkvn, ln1, p->qkvw + (int64_t)l * QKV * C, NULL, BT, C, QKV) ||
            op->rope(x, sc->qkvn, rope, BT, T, cfg->max_seq, C, NH, KVH, 0) ||
            op->gqa_expand(x, qkv, sc->qkvn, BT, C, NH, KVH) ||
            o->attention_fwd(x, atty, a->preatt + att_off, a->att + att_off, qkv, B, T, C, NH) ||
            o->linear_fwd(x, l, QP_GEMM_ATTPROJ, attproj, atty, p->attprojw + (int64_t)l * C * C, NULL, BT, C, C) ||
            o->residual_fwd(x, res2, residual, attproj, n) ||
            op->rmsnorm_fwd(x, ln2, a->ln2_rstd + off, res2, p->ln2w + l * C, BT, C) ||
            o->linear_fwd(x, l, QP_GEMM_GATE, gate, ln2, p->gatew + (int64_t)l * H * C, NULL, BT, C, H) ||
            o->linear_fwd(x, l, QP_GEMM_UP, up, ln2, p->upw + (int64_t)l * H * C, NULL, BT, C, H) ||
            op->swiglu_fwd(x, h, gate, up, (int64_t)BT * H))
            return -1;
        if (cfg->smooth_swiglu) {
            float *s = sc->smooth_s + (int64_t)l * H;
            if (op->smooth_scales(x, s, h, BT, H) ||
                op->smooth_apply(x, sc->smooth_x, sc->smooth_w, h, downw, s, BT, C, H))
                return -1;
            dx = sc->smooth_x, dw = sc->smooth_w;
        }
        if (o->linear_fwd(x, l, QP_GEMM_DOWN, down, dx, dw, NULL, BT, H, C) ||
            o->residual_fwd(x, a->residual3 + off * C, res2, down, n))
            return -1;
    }
    return op->rmsnorm_fwd(x, a->lnf, a->lnf_rstd, a->residual3 + (int64_t)(L - 1) * BT * C, p->lnfw, BT, C) ||
                   o->linear_fwd(x, L, QP_GEMM_HEAD, a->logits, a->lnf, p->lmhead, NULL, BT, C, V) ||
                   o->softmax_ce_fwd(x, a->probs, a->losses, a->logits, targets, BT, V)
               ? -1
               : 0;
}

/* The backward pass of mean loss * loss_scale; parameter gradients accumulate. */
static inline int qpm_llama_backward(const qpm_llama_ops *op, const qp_gpt_config *cfg, int B, int T,
                                     const qp_llama_params *p, const qp_llama_params *g, const qp_llama_acts *a,
                                     const qp_llama_acts *d, float *grads_acts_memory, int64_t num_acts,
                                     const qpm_llama_scratch *sc, const float *rope, const int32_t *inputs,
                                     const int32_t *targets, float loss_scale)
{
    const qpm_ops *o = op->base;
    const int L = cfg->layers, C = cfg->dim, NH = cfg->heads, KVH = cfg->kv_heads, V = cfg->vocab,
              H = cfg->mlp_hidden, BT = B * T, QKV = C + 2 * KVH * (C / NH);
    void *x = o->ctx;
    if (o->zero(x, grads_acts_memory, num_acts) ||
        o->softmax_ce_bwd(x, d->logits, a->probs, targets, loss_scale / (float)BT, BT, V) ||
        o->linear_bwd(x, L, QP_GEMM_HEAD, d->lnf, g->lmhead, NULL, d->logits, a->lnf, p->lmhead, BT, C, V))
        return -1;
    const int64_t last = (int64_t)(L - 1) * BT * C;
    if (op->rmsnorm_bwd(x, d->residual3 + last, g->lnfw, d->lnf, a->residual3 + last, p->lnfw, a->lnf_rstd, BT, C))
        return -1;
    for (int l = L - 1; l >= 0; l--) {
        const int64_t off = (int64_t)l * BT, n = (int64_t)BT * C, att_off = (int64_t)l * B * NH * T * T;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (off - BT) * C;
        float *dresidual = l == 0 ? d->encoded : d->residual3 + (off - BT) * C;
        const float *h = a->swiglu + off * H, *downw = p->downw + (int64_t)l * C * H;
        if (o->residual_bwd(x, d->residual2 + off * C, d->down + off * C, d->residual3 + off * C, n)) return -1;
        if (cfg->smooth_swiglu) {
            /* the down GEMM's backward on the forward's scaled operands, then the fold back */
            const float *s = sc->smooth_s + (int64_t)l * H;
            if (op->smooth_apply(x, sc->smooth_x, sc->smooth_w, h, downw, s, BT, C, H) ||
                o->zero(x, sc->smooth_dw, (int64_t)C * H) || o->zero(x, sc->smooth_dx, (int64_t)BT * H) ||
                o->linear_bwd(x, l, QP_GEMM_DOWN, sc->smooth_dx, sc->smooth_dw, NULL, d->down + off * C,
                              sc->smooth_x, sc->smooth_w, BT, H, C) ||
                op->smooth_unfold(x, d->swiglu + off * H, g->downw + (int64_t)l * C * H, sc->smooth_dx,
                                  sc->smooth_dw, s, BT, C, H))
                return -1;
        } else if (o->linear_bwd(x, l, QP_GEMM_DOWN, d->swiglu + off * H, g->downw + (int64_t)l * C * H, NULL,
                                 d->down + off * C, h, downw, BT, H, C)) {
            return -1;
        }
        if (op->swiglu_bwd(x, d->gate + off * H, d->up + off * H, a->gate + off * H, a->up + off * H,
                           d->swiglu + off * H, (int64_t)BT * H) ||
            o->linear_bwd(x, l, QP_GEMM_UP, d->ln2 + off * C, g->upw + (int64_t)l * H * C, NULL, d->up + off * H,
                          a->ln2 + off * C, p->upw + (int64_t)l * H * C, BT, C, H) ||
            o->linear_bwd(x, l, QP_GEMM_GATE, d->ln2 + off * C, g->gatew + (int64_t)l * H * C, NULL,
                          d->gate + off * H, a->ln2 + off * C, p->gatew + (int64_t)l * H * C, BT, C, H) ||
            op->rmsnorm_bwd(x, d->residual2 + off * C, g->ln2w + l * C, d->ln2 + off * C, a->residual2 + off * C,
                            p->ln2w + l * C, a->ln2_rstd + off, BT, C) ||
            o->residual_bwd(x, dresidual, d->attproj + off * C, d->residual2 + off * C, n) ||
            o->linear_bwd(x, l, QP_GEMM_ATTPROJ, d->atty + off * C, g->attprojw + (int64_t)l * C * C, NULL,
                          d->attproj + off * C, a->atty + off * C, p->attprojw + (int64_t)l * C * C, BT, C, C) ||
            o->attention_bwd(x, d->qkv + off * 3 * C, d->preatt + att_off, d->att + att_off, d->atty + off * C,
                             a->qkv + off * 3 * C, a->att + att_off, B, T, C, NH) ||
            op->gqa_reduce(x, sc->dqkvn, d->qkv + off * 3 * C, BT, C, NH, KVH) ||
            op->rope(x, sc->dqkvn, rope, BT, T, cfg->max_seq, C, NH, KVH, 1) ||
            o->linear_bwd(x, l, QP_GEMM_QKV, d->ln1 + off * C, g->qkvw + (int64_t)l * QKV * C, NULL, sc->dqkvn,
                          a->ln1 + off * C, p->qkvw + (int64_t)l * QKV * C, BT, C, QKV) ||
            op->rmsnorm_bwd(x, dresidual, g->ln1w + l * C, d->ln1 + off * C, residual, p->ln1w + l * C,
                            a->ln1_rstd + off, BT, C))
            return -1;
    }
    return op->embed_bwd(x, g->wte, d->encoded, inputs, B, T, C);
}

#endif
