/* qp_model_kernels.c — the GPT's layers and its forward and backward passes.
 *
 * Layer functions follow llm.c's structure (x_forward / x_backward, shapes
 * in a comment), fused where that saves a pass over memory: the residual
 * add with the bias of the projection before it and the LayerNorm after it,
 * the MLP bias with GELU, the bias and norm gradients with the row pass
 * that produces their inputs, the loss gradient in place of the
 * probabilities. Attention works on blocks of 16 query rows (the forward's
 * softmax over the O(T) scores of a block, the backward in FlashAttention-2's
 * loop order): no T x T matrix is kept, only each query row's log-sum-exp.
 * The linear layers get no bias from here (NULL): the fused row kernels and
 * attention add it and sum its gradient.
 *
 * Threads: each step of a layer is one OpenMP parallel region (its loops are
 * worksharing loops inside it), between the GEMMs, which run outside any
 * region. Work is split into pieces whose results do not depend on which
 * thread runs them; reductions run in a fixed order — a row's sums over
 * explicit 16-lane vectors combined by a fixed tree, column sums over fixed
 * blocks of rows summed in block order — so results are the same for any
 * thread count and deterministic.
 *
 * The vectors, attention blocks, loss and dispatch calls it shares with the
 * Llama (qp_llama_kernels.c) are qp_model_simd.h's.
 *
 * This file is compiled three times: for the baseline x86-64, x86-64-v3
 * (AVX2) and x86-64-v4 (AVX-512), with QP_KERNEL naming the copies;
 * qp_model.c picks one at run time. Vectors are GCC vector extensions of 16
 * floats: the same element-wise operations in every copy (four SSE, two AVX
 * or one AVX-512 register per vector, no FMA contraction), so the copies
 * give identical bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_model_kernels.h"
#include "qp_model_pass.h"
#include "qp_model_simd.h"
#include "qp_prof.h"

/* ---- GELU ------------------------------------------------------------------- */

/* qp_model_math.h's qpm_tanh, qpm_gelu_arg, qpm_gelu_fwd and qpm_gelu_grad
 * (GPT-2's tanh approximation: gelu(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi)
 * (x + 0.044715 x^3)) on every lane, operation for operation. */
static inline __attribute__((always_inline)) vf vtanh_fast(vf u)
{
    const vf au = (vf)((vi)u & 0x7fffffff), e = vexp_nonpos(-2.0f * au), t = (1.0f - e) / (1.0f + e);
    return vsel(vlt(u, vsplat(0.0f)), -t, t);
}

static inline __attribute__((always_inline)) vf vgelu_arg(vf x) { return QPM_GELU_SCALE * vfma(0.044715f * x * x, x, x); }

static inline __attribute__((always_inline)) vf vgelu(vf x)
{
    const vf h = 0.5f * x;
    return vfma(h, vtanh_fast(vgelu_arg(x)), h);
}

static inline __attribute__((always_inline)) vf vgelu_grad(vf x)
{
    const vf th = vtanh_fast(vgelu_arg(x)), sech2 = vfma(-th, th, vsplat(1.0f));
    return vfma(vsplat(0.5f), th, vsplat(0.5f)) +
           0.5f * x * sech2 * QPM_GELU_SCALE * vfma(3.0f * 0.044715f * x, x, vsplat(1.0f));
}

/* ---- row operations -------------------------------------------------------- */

/* One LayerNorm row: out = (x - mean) * rstd * w + b. */
static inline void layernorm_row(float *restrict out, float *mean, float *rstd, const float *restrict x,
                                 const float *restrict w, const float *restrict b, int C)
{
    const float m = row_sum(x, C) / C;
    vf acc = vsplat(0.0f);
    int c = 0;
    for (; c + VL <= C; c += VL) {
        const vf d = vload(x + c) - m;
        acc = vfma(d, d, acc);
    }
    float v = vsum(acc);
    for (; c < C; c++) v = sfma(x[c] - m, x[c] - m, v);
    v /= C;
    const float s = 1.0f / sqrtf(v + 1e-5f);
    for (c = 0; c + VL <= C; c += VL) vstore(out + c, vfma((vload(x + c) - m) * s, vload(w + c), vload(b + c)));
    for (; c < C; c++) out[c] = sfma((x[c] - m) * s, w[c], b[c]);
    *mean = m;
    *rstd = s;
}

/* One LayerNorm row backward: dx (+)= the input gradient of dout; the
 * weight and bias gradients' terms go to pw, pb (+=). */
static inline void layernorm_row_backward(float *restrict dx, float *restrict pw, float *restrict pb,
                                          const float *restrict d, const float *restrict x, const float *restrict w,
                                          float m, float s, int C, int accumulate)
{
    vf a1 = vsplat(0.0f), a2 = vsplat(0.0f);
    int c = 0;
    for (; c + VL <= C; c += VL) {
        const vf norm = (vload(x + c) - m) * s, dv = vload(d + c), dnorm = vload(w + c) * dv;
        a1 += dnorm;
        a2 += dnorm * norm;
        vstore(pw + c, vload(pw + c) + norm * dv);
        vstore(pb + c, vload(pb + c) + dv);
    }
    float dnorm_mean = vsum(a1), dnorm_norm_mean = vsum(a2);
    for (int k = c; k < C; k++) {
        const float norm = (x[k] - m) * s, dnorm = w[k] * d[k];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
        pw[k] += norm * d[k];
        pb[k] += d[k];
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (c = 0; c + VL <= C; c += VL) {
        const vf norm = (vload(x + c) - m) * s, dnorm = vload(w + c) * vload(d + c);
        const vf g = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        vstore(dx + c, accumulate ? vload(dx + c) + g : g);
    }
    for (; c < C; c++) {
        const float norm = (x[c] - m) * s, dnorm = w[c] * d[c];
        const float g = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        dx[c] = accumulate ? dx[c] + g : g;
    }
}


/* ---- embeddings and the residual stream's LayerNorms --------------------- */

/* Forward of a LayerNorm whose input is the residual stream, fused with
 * what makes its input:
 *   first block: res = wte[inp] + wpe[t]                        (the encoder)
 *   later:       res = prev + (y + yb)      (the MLP's residual add with its bias)
 * res, out (N,C); mean, rstd (N). rounded (not NULL): out is quantized
 * as the dispatch asked (qp_linear_takes_rounded) and counted in its tally
 * (round_row). */
static void residual_layernorm_forward(float *res, float *out, float *mean, float *rstd, const float *prev,
                                       const float *y, const float *yb, const int32_t *inp, const float *wte,
                                       const float *wpe, const float *w, const float *b, int N, int T, int C,
                                       qp_linear_rounded *rounded)
{
#pragma omp parallel
    {
        round_counter cnt;
        const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            float *r = res + (int64_t)i * C;
            if (inp) {
                const float *te = wte + (int64_t)inp[i] * C, *pe = wpe + (int64_t)(i % T) * C;
                for (int c = 0; c < C; c++) r[c] = te[c] + pe[c];
            } else {
                const float *p = prev + (int64_t)i * C, *yy = y + (int64_t)i * C;
                for (int c = 0; c < C; c++) r[c] = p[c] + (yy[c] + yb[c]);
            }
            layernorm_row(out + (int64_t)i * C, mean + i, rstd + i, r, w, b, C);
            round_row(out + (int64_t)i * C, C, &q, &cnt);
        }
        round_end(&cnt, &q);
    }
}

/* ---- attention -------------------------------------------------------------- */

/* qkv (B,T,3C): q, k and v of NH heads side by side. */
static qp_att_layout gpt_att_layout(int C, int NH)
{
    return (qp_att_layout){.rs = 3 * (int64_t)C, .koff = C, .voff = 2 * (int64_t)C, .NH = NH, .KVH = NH, .hs = C / NH};
}

/* out (B,T,C) = softmax(q k^T / sqrt(hs), causal) v per head; lse (B,NH,T);
 * qkv (B,T,3C) gets its bias qkvb (3C) added first (by each head's task as
 * it reads its rows: no pass of its own over qkv). */
static void attention_forward(float *out, float *lse, float *qkv, const float *qkvb, int B, int T, int C, int NH)
{
    const qp_att_layout a = gpt_att_layout(C, NH);
#pragma omp parallel
    attention_forward_tasks(out, lse, qkv, qkvb, &a, B, T);
}

/* dqkv (B,T,3C) = the gradient of attention_forward's input (written, not
 * accumulated); the bias gradient dqkvb (3C) += its column sums (row
 * blocks of QP_ROW_BLOCK summed by the attention tasks as they write their
 * rows when the blocks lie within sequences, else by a pass of their own);
 * rounded: dqkv quantized after the sums, by whichever wrote them (as in
 * gelu_backward). */
static void attention_backward(float *dqkv, float *dqkvb, float *part, const float *dout, const float *out,
                               const float *lse, const float *qkv, int B, int T, int C, int NH,
                               qp_linear_rounded *rounded)
{
    const int BT = B * T, nblk = (BT + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK, fused = T % QP_ROW_BLOCK == 0;
    const qp_att_layout a = gpt_att_layout(C, NH);
#pragma omp parallel
    {
        attention_backward_tasks(dqkv, fused ? part : NULL, dout, out, lse, qkv, &a, B, T, rounded);
        if (!fused) {
            round_counter cnt;
            const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
            for (int k = 0; k < nblk; k++) {
                float *pb = part + (int64_t)k * 3 * C;
                zero_rows(pb, 3 * C);
                for (int i = k * QP_ROW_BLOCK; i < BT && i < (k + 1) * QP_ROW_BLOCK; i++) {
                    add_row(pb, dqkv + (int64_t)i * 3 * C, 3 * C);
                    round_row(dqkv + (int64_t)i * 3 * C, 3 * C, &q, &cnt);
                }
            }
            round_end(&cnt, &q);
        }
        reduce_blocks(dqkvb, part, nblk, 3 * C, 3 * C);
    }
}

/* ---- the MLP's nonlinearity ---------------------------------------------------- */

/* fchg (N, H) = gelu(fch + fcb); fch is kept without the bias (the
 * backward adds it again: one stream less to write). rounded: as in
 * residual_layernorm_forward. */
static void bias_gelu_forward(const float *fch, float *fchg, const float *fcb, int N, int H, qp_linear_rounded *rounded)
{
#pragma omp parallel
    {
        round_counter cnt;
        const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *x = fch + (int64_t)i * H;
            float *y = fchg + (int64_t)i * H;
            int c = 0;
            for (; c + VL <= H; c += VL) vstore(y + c, vgelu(vload(x + c) + vload(fcb + c)));
            for (; c < H; c++) y[c] = qpm_gelu_fwd(x[c] + fcb[c]);
            round_row(y, H, &q, &cnt);
        }
        round_end(&cnt, &q);
    }
}

/* dfch (N, H) *= gelu'(fch + fcb), in place; dfcb += its column sums (of
 * the products before rounding); rounded: as in residual_layernorm_forward. */
static void gelu_backward(float *dfch, float *dfcb, float *part, const float *fch, const float *fcb, int N, int H,
                          qp_linear_rounded *rounded)
{
    const int nblk = (N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
#pragma omp parallel
    {
        round_counter cnt;
        const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
        for (int k = 0; k < nblk; k++) {
            float *pb = part + (int64_t)k * H;
            zero_rows(pb, H);
            for (int i = k * QP_ROW_BLOCK; i < N && i < (k + 1) * QP_ROW_BLOCK; i++) {
                float *d = dfch + (int64_t)i * H;
                const float *x = fch + (int64_t)i * H;
                int c = 0;
                for (; c + VL <= H; c += VL) vstore(d + c, vgelu_grad(vload(x + c) + vload(fcb + c)) * vload(d + c));
                for (; c < H; c++) d[c] = qpm_gelu_grad(x[c] + fcb[c]) * d[c];
                add_row(pb, d, H);
                round_row(d, H, &q, &cnt);
            }
        }
        round_end(&cnt, &q);
        reduce_blocks(dfcb, part, nblk, H, H);
    }
}

/* The backward of a LayerNorm whose input is the residual stream, fused with
 * the residual add: dres (+)= LN's input gradient of dln (accumulate: the
 * stream's gradient from above is already in dres); dw, db += the norm's
 * weight and bias gradients; dbias (when not NULL) += the column sums of the
 * resulting dres (the bias of the projection that wrote that residual add). */
static void residual_layernorm_backward(float *dres, float *dw, float *db, float *dbias, float *part,
                                        const float *dln, const float *x, const float *w, const float *mean,
                                        const float *rstd, int accumulate, int N, int C)
{
    const int nblk = (N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
    const int64_t stride = 3 * (int64_t)C;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int k = 0; k < nblk; k++) {
            float *pw = part + k * stride, *pb = pw + C, *pr = pb + C;
            zero_rows(pw, stride);
            for (int i = k * QP_ROW_BLOCK; i < N && i < (k + 1) * QP_ROW_BLOCK; i++) {
                const int64_t o = (int64_t)i * C;
                layernorm_row_backward(dres + o, pw, pb, dln + o, x + o, w, mean[i], rstd[i], C, accumulate);
                if (dbias) add_row(pr, dres + o, C);
            }
        }
        reduce_blocks(dw, part, nblk, stride, C);
        reduce_blocks(db, part + C, nblk, stride, C);
        if (dbias) reduce_blocks(dbias, part + 2 * C, nblk, stride, C);
    }
}

/* ---- the model: the GPT's steps of the pass order (qp_model_pass.h) ----------- */

/* One pass over the model: what its steps share. */
typedef struct {
    qp_gpt *m;
    qp_linear *lin;
    const int32_t *inputs, *targets;
    int B, T;
    float loss_scale;
    qp_gpt_bwd_scratch s; /* the backward's working set (one layer's gradients) */
    /* the operand of GEMM g its producer hands over quantized in this layer
     * (x forward, dy backward; NULL: the dispatch quantizes it) */
    qp_linear_rounded rounded[QP_GEMM_COUNT], *r[QP_GEMM_COUNT];
} gpt_pass;

/* GEMM g of block l (L: the LM head): its operands, forward and backward. */
static qp_model_gemm gpt_gemm(const gpt_pass *x, int l, qp_gemm_id g)
{
    const qp_gpt *m = x->m;
    const qp_gpt_params *p = &m->params, *gr = &m->grads;
    const qp_gpt_acts *a = &m->acts;
    const qp_gpt_bwd_scratch *s = &x->s;
    const int C = m->cfg.dim;
    const int64_t o = (int64_t)l * x->B * x->T;
    switch (g) {
    case QP_GEMM_QKV:
        return (qp_model_gemm){a->qkv + o * 3 * C, a->ln1 + o * C, p->qkvw + (int64_t)l * 3 * C * C, s->dln,
                               gr->qkvw + (int64_t)l * 3 * C * C, s->dqkv, C, 3 * C, 0};
    case QP_GEMM_ATTPROJ:
        return (qp_model_gemm){a->attproj, a->atty + o * C, p->attprojw + (int64_t)l * C * C, s->datty,
                               gr->attprojw + (int64_t)l * C * C, s->dres, C, C, 0};
    case QP_GEMM_FC:
        return (qp_model_gemm){a->fch + o * 4 * C, a->ln2 + o * C, p->fcw + (int64_t)l * 4 * C * C, s->dln,
                               gr->fcw + (int64_t)l * 4 * C * C, s->dfch, C, 4 * C, 0};
    case QP_GEMM_FCPROJ:
        return (qp_model_gemm){a->fcproj, a->fch_gelu + o * 4 * C, p->fcprojw + (int64_t)l * 4 * C * C, s->dfch,
                               gr->fcprojw + (int64_t)l * 4 * C * C, s->dres, 4 * C, C, 0};
    case QP_GEMM_HEAD:
        return (qp_model_gemm){a->logits, a->lnf, p->wte, s->dln, gr->wte, a->probs, C, m->cfg.vocab, 0};
    case QP_GEMM_GATE:
    case QP_GEMM_UP:
    case QP_GEMM_DOWN:
    case QP_GEMM_COUNT: break; /* not the GPT's */
    }
    return (qp_model_gemm){0};
}

static int gpt_forward_step(gpt_pass *x, qp_pass_step st, int l)
{
    qp_gpt *m = x->m;
    const qp_gpt_params *p = &m->params;
    qp_gpt_acts *a = &m->acts;
    const int B = x->B, T = x->T, BT = B * T, C = m->cfg.dim, NH = m->cfg.heads, L = m->cfg.layers;
    const int64_t o = (int64_t)l * BT;
    float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
    switch (st.op) {
    case QP_STEP_NORM_IN: /* the embeddings, or the last block's output */
        x->r[QP_GEMM_QKV] = rounds_operand(m, x->lin, l, QP_GEMM_QKV, QP_OPND_X, &x->rounded[QP_GEMM_QKV]);
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_forward(residual, a->ln1 + o * C, a->ln1_mean + o, a->ln1_rstd + o,
                                         l ? a->residual2 + (o - BT) * C : NULL, a->fcproj,
                                         l ? p->fcprojb + (l - 1) * C : NULL, l ? NULL : x->inputs, p->wte, p->wpe,
                                         p->ln1w + l * C, p->ln1b + l * C, BT, T, C, x->r[QP_GEMM_QKV]));
        return 0;
    case QP_STEP_LINEAR: return model_linear_forward(m, x->lin, l, st.gemm, gpt_gemm(x, l, st.gemm), x->r[st.gemm], BT);
    case QP_STEP_ATTENTION:
        PHASE(QP_PHASE_ATTN, attention_forward(a->atty + o * C, a->att_lse + (int64_t)l * B * NH * T, a->qkv + o * 3 * C,
                                               p->qkvb + l * 3 * C, B, T, C, NH));
        return 0;
    case QP_STEP_NORM_MID:
        x->r[QP_GEMM_FC] = rounds_operand(m, x->lin, l, QP_GEMM_FC, QP_OPND_X, &x->rounded[QP_GEMM_FC]);
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_forward(a->residual2 + o * C, a->ln2 + o * C, a->ln2_mean + o, a->ln2_rstd + o,
                                         residual, a->attproj, p->attprojb + l * C, NULL, NULL, NULL, p->ln2w + l * C,
                                         p->ln2b + l * C, BT, T, C, x->r[QP_GEMM_FC]));
        return 0;
    case QP_STEP_GELU:
        x->r[QP_GEMM_FCPROJ] = rounds_operand(m, x->lin, l, QP_GEMM_FCPROJ, QP_OPND_X, &x->rounded[QP_GEMM_FCPROJ]);
        PHASE(QP_PHASE_ROWOPS, bias_gelu_forward(a->fch + o * 4 * C, a->fch_gelu + o * 4 * C, p->fcb + l * 4 * C, BT,
                                                 4 * C, x->r[QP_GEMM_FCPROJ]));
        return 0;
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_forward(a->residual3 + last, a->lnf, a->lnf_mean, a->lnf_rstd, a->residual2 + last,
                                         a->fcproj, p->fcprojb + (L - 1) * C, NULL, NULL, NULL, p->lnfw, p->lnfb, BT,
                                         T, C, NULL));
        return 0;
    }
    case QP_STEP_LOSS:
        PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_forward(a->probs, a->losses, a->logits, x->targets, BT,
                                                            m->cfg.vocab));
        set_mean_loss(m, a->losses, x->targets, BT);
        return 0;
    case QP_STEP_ROPE:
    case QP_STEP_SWIGLU:
    case QP_STEP_DOWN:
    case QP_STEP_COUNT: break; /* not the GPT's */
    }
    return -1;
}

static int gpt_backward_step(gpt_pass *x, qp_pass_step st, int l)
{
    qp_gpt *m = x->m;
    const qp_gpt_params *p = &m->params, *g = &m->grads;
    const qp_gpt_acts *a = &m->acts;
    const qp_gpt_bwd_scratch *s = &x->s;
    const int B = x->B, T = x->T, BT = B * T, C = m->cfg.dim, NH = m->cfg.heads, L = m->cfg.layers;
    const int64_t o = (int64_t)l * BT;
    switch (st.op) {
    case QP_STEP_LOSS:
        PHASE(QP_PHASE_ROWOPS,
              softmax_crossentropy_backward(a->probs, x->targets, x->loss_scale / (float)BT, BT, m->cfg.vocab));
        return 0;
    case QP_STEP_LINEAR:
        return model_linear_backward(x->lin, l, st.gemm, gpt_gemm(x, l, st.gemm), x->r[st.gemm], BT);
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_backward(s->dres, g->lnfw, g->lnfb, g->fcprojb + (L - 1) * C, s->part, s->dln,
                                          a->residual3 + last, p->lnfw, a->lnf_mean, a->lnf_rstd, 0, BT, C));
        return 0;
    }
    case QP_STEP_GELU:
        x->r[QP_GEMM_FC] = rounds_operand(m, x->lin, l, QP_GEMM_FC, QP_OPND_DY, &x->rounded[QP_GEMM_FC]);
        PHASE(QP_PHASE_ROWOPS, gelu_backward(s->dfch, g->fcb + l * 4 * C, s->part, a->fch + o * 4 * C,
                                             p->fcb + l * 4 * C, BT, 4 * C, x->r[QP_GEMM_FC]));
        return 0;
    case QP_STEP_NORM_MID:
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_backward(s->dres, g->ln2w + l * C, g->ln2b + l * C, g->attprojb + l * C, s->part,
                                          s->dln, a->residual2 + o * C, p->ln2w + l * C, a->ln2_mean + o,
                                          a->ln2_rstd + o, 1, BT, C));
        return 0;
    case QP_STEP_ATTENTION:
        x->r[QP_GEMM_QKV] = rounds_operand(m, x->lin, l, QP_GEMM_QKV, QP_OPND_DY, &x->rounded[QP_GEMM_QKV]);
        PHASE(QP_PHASE_ATTN, attention_backward(s->dqkv, g->qkvb + l * 3 * C, s->part, s->datty, a->atty + o * C,
                                                a->att_lse + (int64_t)l * B * NH * T, a->qkv + o * 3 * C, B, T, C, NH,
                                                x->r[QP_GEMM_QKV]));
        return 0;
    case QP_STEP_NORM_IN: {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_backward(s->dres, g->ln1w + l * C, g->ln1b + l * C,
                                          l ? g->fcprojb + (l - 1) * C : NULL, s->part, s->dln, residual,
                                          p->ln1w + l * C, a->ln1_mean + o, a->ln1_rstd + o, 1, BT, C));
        if (l == 0) PHASE(QP_PHASE_ROWOPS, encoder_backward(g->wte, g->wpe, s->dres, x->inputs, BT, T, C));
        return 0;
    }
    case QP_STEP_ROPE:
    case QP_STEP_SWIGLU:
    case QP_STEP_DOWN:
    case QP_STEP_COUNT: break; /* not the GPT's */
    }
    return -1;
}

static int gpt_step(void *ctx, qp_pass_step st, int layer, int backward)
{
    return backward ? gpt_backward_step(ctx, st, layer) : gpt_forward_step(ctx, st, layer);
}

int QP_KERNEL(qp_gpt_forward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T)
{
    const int V = m->cfg.vocab, BT = B * T;
    if (B != m->B || T != m->T) return -1;
    for (int i = 0; i < BT; i++)
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) return -1;
    gpt_pass x = {.m = m, .lin = lin, .inputs = inputs, .targets = targets, .B = B, .T = T};
    return qp_pass_forward(QP_ARCH_GPT, m->cfg.layers, gpt_step, &x);
}

int QP_KERNEL(qp_gpt_backward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets,
                               float loss_scale)
{
    gpt_pass x = {.m = m, .lin = lin, .inputs = inputs, .targets = targets, .B = m->B, .T = m->T,
                  .loss_scale = loss_scale, .s = qp_gpt_scratch_carve(m->scratch, &m->cfg, m->B, m->T)};
    return qp_pass_backward(QP_ARCH_GPT, m->cfg.layers, gpt_step, &x);
}
