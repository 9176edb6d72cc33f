/* qp_llama_kernels.c — the Llama's layers and its forward and backward passes.
 *
 * Layers as pairs x_forward / x_backward in llm.c's style (shapes in a
 * comment, parameter gradients accumulated with +=), fused where that saves
 * a pass over memory as the GPT's are (qp_model_kernels.c): the residual add
 * with the RMSNorm after it, the norm gains' gradients with the row pass that
 * produces their inputs, each row pass zeroing the buffer the next GEMM
 * accumulates into. Attention, the loss and the dispatch calls are
 * qp_model_simd.h's, shared with the GPT; rotary embeddings rotate q and k in
 * place after the qkv projection (the activation keeps them rotated; the
 * backward rotates their gradients back).
 *
 *   RMSNorm   y = x * rstd * g,  rstd = 1 / sqrt(mean(x^2) + 1e-5)
 *   RoPE      pairs (i, i + hs/2) of a head at position t rotated by
 *             t * 10000^(-2i/hs) (GPT-NeoX's / Hugging Face's layout)
 *   SwiGLU    h = silu(a) * u,  a = W1 x (gate), u = W3 x (up),
 *             silu(a) = a * sigmoid(a); the MLP's output is W2 h (down)
 *
 * Smooth-SwiGLU (Fishman et al. 2024, cfg.smooth_swiglu): before the down
 * projection, each channel j of h is scaled by s_j, the power of two that
 * puts the channel's largest |h| over the batch (all ranks) in [1, 2), and
 * the weight's column j by 1/s_j: the dispatch quantizes h s and W2 / s,
 * whose product is h W2^T (exactly so in FP32: powers of two), so a channel
 * the SwiGLU amplified no longer sets the tensor's scale. The paper takes s
 * from the channel maximum too; rounding it to a power of two makes the fold
 * exact. The backward runs the down GEMM's on the same scaled operands and
 * scales dh back by s and the weight gradient by 1/s.
 *
 * Threads and determinism as in the GPT: one parallel region per step of a
 * layer, fixed-order sums, the same operations in both compiled copies. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_model_kernels.h"
#include "qp_model_pass.h"
#include "qp_model_simd.h"
#include "qp_prof.h"

#define RMS_EPS 1e-5f

/* ---- RMSNorm ------------------------------------------------------------------ */

/* One row: out (C) = x * rstd * w. */
static inline void rmsnorm_row(float *restrict out, float *rstd, const float *restrict x, const float *restrict w,
                               int C)
{
    const float s = 1.0f / sqrtf(row_dot(x, x, C) / C + RMS_EPS);
    int c = 0;
    for (; c + VL <= C; c += VL) vstore(out + c, vload(x + c) * s * vload(w + c));
    for (; c < C; c++) out[c] = x[c] * s * w[c];
    *rstd = s;
}

/* One row backward: dx (+)= the input gradient of d; the gain's terms go to
 * pw (+=). With n = x * rstd and dn = w * d: dx = rstd (dn - n mean(dn n)). */
static inline void rmsnorm_row_backward(float *restrict dx, float *restrict pw, const float *restrict d,
                                        const float *restrict x, const float *restrict w, float s, int C,
                                        int accumulate)
{
    vf a = vsplat(0.0f);
    int c = 0;
    for (; c + VL <= C; c += VL) {
        const vf n = vload(x + c) * s, dv = vload(d + c);
        a += vload(w + c) * dv * n;
        vstore(pw + c, vload(pw + c) + n * dv);
    }
    float dn_n = vsum(a);
    for (int k = c; k < C; k++) {
        const float n = x[k] * s;
        dn_n += w[k] * d[k] * n;
        pw[k] += n * d[k];
    }
    dn_n /= C;
    for (c = 0; c + VL <= C; c += VL) {
        const vf n = vload(x + c) * s, g = (vload(w + c) * vload(d + c) - n * dn_n) * s;
        vstore(dx + c, accumulate ? vload(dx + c) + g : g);
    }
    for (; c < C; c++) {
        const float n = x[c] * s, g = (w[c] * d[c] - n * dn_n) * s;
        dx[c] = accumulate ? dx[c] + g : g;
    }
}

/* Forward of a block's input RMSNorm (ln1, ln2 or the final lnf), fused
 * with what makes its input:
 *   first block: res = wte[inp]                (the token embedding)
 *   later:       res = prev + y                (the residual add)
 * res, out (N,C); rstd (N). */
static void residual_rmsnorm_forward(float *res, float *out, float *rstd, const float *prev, const float *y,
                                     const int32_t *inp, const float *wte, const float *w, int N, int C,
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
                memcpy(r, wte + (int64_t)inp[i] * C, (size_t)C * sizeof(float));
            } else {
                const float *p = prev + (int64_t)i * C, *yy = y + (int64_t)i * C;
                for (int c = 0; c < C; c++) r[c] = p[c] + yy[c];
            }
            rmsnorm_row(out + (int64_t)i * C, rstd + i, r, w, C);
            round_row(out + (int64_t)i * C, C, &q, &cnt);
        }
        round_end(&cnt, &q);
    }
}

/* Backward of an RMSNorm of the residual stream: dres (+)= its input
 * gradient of dln (accumulate: the stream's gradient from above is already
 * in dres); dw += the gain's gradient (row blocks, then blocks in order). */
static void residual_rmsnorm_backward(float *dres, float *dw, float *part, const float *dln, const float *x,
                                      const float *w, const float *rstd, int accumulate, int N, int C)
{
    const int nblk = (N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int k = 0; k < nblk; k++) {
            float *pw = part + (int64_t)k * C;
            zero_rows(pw, C);
            for (int i = k * QP_ROW_BLOCK; i < N && i < (k + 1) * QP_ROW_BLOCK; i++) {
                const int64_t o = (int64_t)i * C;
                rmsnorm_row_backward(dres + o, pw, dln + o, x + o, w, rstd[i], C, accumulate);
            }
        }
        reduce_blocks(dw, part, nblk, C, C);
    }
}

/* ---- rotary position embeddings ---------------------------------------------- */

/* Rotate the n = hs/2 pairs (x1[i], x2[i]) of one head by the angles whose
 * cos and sin are c[i], s[i]; inverse: by minus those angles (the backward:
 * a rotation's transpose). */
static inline void rope_pairs(float *restrict x1, float *restrict x2, const float *restrict c,
                              const float *restrict s, int n, int inverse)
{
    int i = 0;
    for (; i + VL <= n; i += VL) {
        const vf a = vload(x1 + i), b = vload(x2 + i), cv = vload(c + i), sv = inverse ? -vload(s + i) : vload(s + i);
        vstore(x1 + i, a * cv - b * sv);
        vstore(x2 + i, b * cv + a * sv);
    }
    for (; i < n; i++) {
        const float a = x1[i], b = x2[i], sv = inverse ? -s[i] : s[i];
        x1[i] = a * c[i] - b * sv;
        x2[i] = b * c[i] + a * sv;
    }
}

/* qkv (B,T,rs): q (NH heads) and k (KVH heads) of every row rotated for its
 * position in place; inverse for their gradients. tab: qp_llama_rope_table
 * of maxT rows. rounded: each whole row (v too) then quantized for the
 * dispatch, as residual_rmsnorm_forward's output (the gradients' rotation is
 * the last writer of the qkv GEMM's dY). */
static void rope_forward(float *qkv, const float *tab, const qp_att_layout *a, int maxT, int N, int T, int inverse,
                         qp_linear_rounded *rounded)
{
    const int half = a->hs / 2;
    const float *cosv = tab, *sinv = tab + (int64_t)maxT * half;
#pragma omp parallel
    {
        round_counter cnt;
        const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            float *row = qkv + (int64_t)i * a->rs;
            const int64_t t = i % T;
            const float *c = cosv + t * half, *s = sinv + t * half;
            for (int h = 0; h < a->NH; h++) rope_pairs(row + h * a->hs, row + h * a->hs + half, c, s, half, inverse);
            for (int h = 0; h < a->KVH; h++) {
                float *k = row + a->koff + (int64_t)h * a->hs;
                rope_pairs(k, k + half, c, s, half, inverse);
            }
            round_row(row, (int)a->rs, &q, &cnt);
        }
        round_end(&cnt, &q);
    }
}

/* ---- SwiGLU ----------------------------------------------------------------------- */

/* qp_model_math.h's qpm_sigmoid (from exp of -|x|: never overflows) on every lane. */
static inline __attribute__((always_inline)) vf vsigmoid(vf x)
{
    const vf e = vexp_nonpos(-(vf)((vi)x & 0x7fffffff));
    return vsel(vge(x, vsplat(0.0f)), 1.0f / (1.0f + e), e / (1.0f + e));
}

/* h (N,H) = silu(a) * u; rounded (not NULL): h quantized as the dispatch
 * asked (qp_linear_takes_rounded) and counted in its tally (round_row). */
static void swiglu_forward(float *h, const float *a, const float *u, int N, int H, qp_linear_rounded *rounded)
{
#pragma omp parallel
    {
        round_counter cnt;
        const rounder q = round_begin(rounded, &cnt);
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            const int64_t o = (int64_t)i * H;
            int c = 0;
            for (; c + VL <= H; c += VL) {
                const vf x = vload(a + o + c);
                vstore(h + o + c, x * vsigmoid(x) * vload(u + o + c));
            }
            for (; c < H; c++) h[o + c] = qpm_swiglu_fwd(a[o + c], u[o + c]);
            round_row(h + o, H, &q, &cnt);
        }
        round_end(&cnt, &q);
    }
}

/* dh (N,H), the gradient of h, becomes the gradient of a in place (dh u
 * silu'(a), silu'(a) = sig (1 + a (1 - sig))); du (N,H) = dh silu(a)
 * (written). dh_rounded, du_rounded: each rounded as in swiglu_forward. */
static void swiglu_backward(float *dh, float *du, const float *a, const float *u, int N, int H,
                            qp_linear_rounded *dh_rounded, qp_linear_rounded *du_rounded)
{
#pragma omp parallel
    {
        round_counter cnt_h, cnt_u;
        const rounder qh = round_begin(dh_rounded, &cnt_h), qu = round_begin(du_rounded, &cnt_u);
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            const int64_t o = (int64_t)i * H;
            int c = 0;
            for (; c + VL <= H; c += VL) {
                const vf x = vload(a + o + c), sg = vsigmoid(x), d = vload(dh + o + c);
                vstore(du + o + c, d * (x * sg));
                vstore(dh + o + c, d * vload(u + o + c) * (sg * (1.0f + x * (1.0f - sg))));
            }
            for (; c < H; c++) {
                const float x = a[o + c], sg = qpm_sigmoid(x), d = dh[o + c];
                du[o + c] = d * (x * sg);
                dh[o + c] = d * u[o + c] * (sg * (1.0f + x * (1.0f - sg)));
            }
            round_row(dh + o, H, &qh, &cnt_h);
            round_row(du + o, H, &qu, &cnt_u);
        }
        round_end(&cnt_h, &qh);
        round_end(&cnt_u, &qu);
    }
}

/* ---- Smooth-SwiGLU ---------------------------------------------------------------- */

/* s (H): for each channel j of h (N,H), the power of two putting max_i
 * |h_ij| in [1, 2) (1 for a channel of zeros or non-finite values); with
 * reduce, the maxima are the ranks' first (the global batch's). */
static void smooth_scales(float *s, const float *h, int N, int H, const qp_gpt *m)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < H; c0 += VL) {
        const int nc = H - c0 < VL ? H - c0 : VL;
        float mx[VL] = {0};
        for (int i = 0; i < N; i++)
            for (int c = 0; c < nc; c++) {
                const float v = fabsf(h[(int64_t)i * H + c0 + c]);
                mx[c] = v > mx[c] ? v : mx[c]; /* NaN never wins: the scale ignores it */
            }
        memcpy(s + c0, mx, (size_t)nc * sizeof(float));
    }
    if (m->reduce_max) m->reduce_max(s, H, m->reduce_user);
    for (int j = 0; j < H; j++) {
        int e = 0;
        if (s[j] > 0.0f && isfinite(s[j])) frexpf(s[j], &e); /* s = f 2^e, f in [0.5, 1) */
        e = e < -120 ? -120 : e > 120 ? 120 : e;
        s[j] = s[j] > 0.0f && isfinite(s[j]) ? ldexpf(1.0f, 1 - e) : 1.0f;
    }
}

/* xs (N,H) = h s per column; ws (C,H) = w / s per column (exact: powers of two). */
static void smooth_apply(float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C, int H)
{
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < H; j++) xs[(int64_t)i * H + j] = h[(int64_t)i * H + j] * s[j];
#pragma omp for schedule(static)
        for (int i = 0; i < C; i++)
            for (int j = 0; j < H; j++) ws[(int64_t)i * H + j] = w[(int64_t)i * H + j] / s[j];
    }
}

/* The fold back after the down GEMM's backward on scaled operands: dh (N,H)
 * *= s (dh held d(h s)); dw (C,H) += dws / s. */
static void smooth_unfold(float *dh, float *dw, const float *dws, const float *s, int N, int C, int H)
{
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < H; j++) dh[(int64_t)i * H + j] *= s[j];
#pragma omp for schedule(static)
        for (int i = 0; i < C; i++)
            for (int j = 0; j < H; j++) dw[(int64_t)i * H + j] += dws[(int64_t)i * H + j] / s[j];
    }
}

/* ---- the model ---------------------------------------------------------------------- */

static qp_att_layout llama_att_layout(const qp_gpt_config *c)
{
    const int hs = c->dim / c->heads;
    return (qp_att_layout){.rs = qp_llama_qkv_width(c), .koff = c->dim,
                           .voff = c->dim + (int64_t)c->kv_heads * hs, .NH = c->heads, .KVH = c->kv_heads, .hs = hs};
}

static void llama_attention_forward(float *out, float *lse, float *qkv, const qp_att_layout *a, int B, int T)
{
#pragma omp parallel
    attention_forward_tasks(out, lse, qkv, NULL, a, B, T);
}

/* dqkv = the gradient of attention's input. */
static void llama_attention_backward(float *dqkv, const float *dout, const float *out, const float *lse,
                                     const float *qkv, const qp_att_layout *a, int B, int T)
{
#pragma omp parallel
    attention_backward_tasks(dqkv, NULL, dout, out, lse, qkv, a, B, T, NULL);
}

/* ---- the model: the Llama's steps of the pass order (qp_model_pass.h) ----------- */

/* One pass over the model: what its steps share. */
typedef struct {
    qp_gpt *m;
    qp_linear *lin;
    const int32_t *inputs, *targets;
    int B, T;
    float loss_scale;
    qp_att_layout al;
    qp_llama_bwd_scratch s; /* the backward's working set (one layer's gradients) */
    /* the operand of GEMM g its producer hands over quantized in this layer
     * (x forward, dy backward; NULL: the dispatch quantizes it) */
    qp_linear_rounded rounded[QP_GEMM_COUNT], *r[QP_GEMM_COUNT];
} llama_pass;

/* GEMM g of block l (L: the LM head): its operands, forward and backward
 * (the down GEMM's: llama_down, on Smooth-SwiGLU's scaled operands). */
static qp_model_gemm llama_gemm(const llama_pass *x, int l, qp_gemm_id g)
{
    const qp_gpt *m = x->m;
    const qp_llama_params *p = &m->lparams, *gr = &m->lgrads;
    const qp_llama_acts *a = &m->lacts;
    const qp_llama_bwd_scratch *s = &x->s;
    const int C = m->cfg.dim, H = m->cfg.mlp_hidden, QKV = (int)qp_llama_qkv_width(&m->cfg);
    const int64_t o = (int64_t)l * x->B * x->T;
    switch (g) {
    case QP_GEMM_QKV:
        return (qp_model_gemm){a->qkv + o * QKV, a->ln1 + o * C, p->qkvw + (int64_t)l * QKV * C, s->dln,
                               gr->qkvw + (int64_t)l * QKV * C, s->dqkv, C, QKV, 0};
    case QP_GEMM_ATTPROJ:
        return (qp_model_gemm){a->attproj, a->atty + o * C, p->attprojw + (int64_t)l * C * C, s->datty,
                               gr->attprojw + (int64_t)l * C * C, s->dres, C, C, 0};
    case QP_GEMM_GATE: /* its input gradient adds to the up GEMM's (the backward runs up first) */
        return (qp_model_gemm){a->gate + o * H, a->ln2 + o * C, p->gatew + (int64_t)l * H * C, s->dln,
                               gr->gatew + (int64_t)l * H * C, s->dh, C, H, 1};
    case QP_GEMM_UP:
        return (qp_model_gemm){a->up + o * H, a->ln2 + o * C, p->upw + (int64_t)l * H * C, s->dln,
                               gr->upw + (int64_t)l * H * C, s->dup, C, H, 0};
    case QP_GEMM_DOWN:
        return (qp_model_gemm){a->down, a->swiglu + o * H, p->downw + (int64_t)l * C * H, s->dh,
                               gr->downw + (int64_t)l * C * H, s->dres, H, C, 0};
    case QP_GEMM_HEAD:
        return (qp_model_gemm){a->logits, a->lnf, p->lmhead, s->dln, gr->lmhead, a->probs, C, m->cfg.vocab, 0};
    case QP_GEMM_FC:
    case QP_GEMM_FCPROJ:
    case QP_GEMM_COUNT: break; /* not the Llama's */
    }
    return (qp_model_gemm){0};
}

/* The down GEMM: with Smooth-SwiGLU on the scaled input and folded weight
 * (the forward makes the scales; the backward the same operands again, then
 * folds the gradients back). */
static int llama_down(llama_pass *x, int l, int backward)
{
    qp_gpt *m = x->m;
    const int C = m->cfg.dim, H = m->cfg.mlp_hidden, BT = x->B * x->T;
    qp_model_gemm op = llama_gemm(x, l, QP_GEMM_DOWN);
    if (!m->cfg.smooth_swiglu)
        return backward ? model_linear_backward(x->lin, l, QP_GEMM_DOWN, op, NULL, BT)
                        : model_linear_forward(m, x->lin, l, QP_GEMM_DOWN, op, x->r[QP_GEMM_DOWN], BT);
    float *sc = m->smooth_s + (int64_t)l * H, *dw = op.dW;
    const float *h = op.X, *w = op.W;
    op.X = m->smooth_x, op.W = m->smooth_w, op.dW = m->smooth_dw;
    if (!backward) {
        PHASE(QP_PHASE_ROWOPS, (smooth_scales(sc, h, BT, H, m), smooth_apply(m->smooth_x, m->smooth_w, h, w, sc, BT, C, H)));
        return model_linear_forward(m, x->lin, l, QP_GEMM_DOWN, op, x->r[QP_GEMM_DOWN], BT);
    }
    PHASE(QP_PHASE_ROWOPS, (smooth_apply(m->smooth_x, m->smooth_w, h, w, sc, BT, C, H),
                            zero_rows(m->smooth_dw, (int64_t)C * H)));
    if (model_linear_backward(x->lin, l, QP_GEMM_DOWN, op, NULL, BT)) return -1;
    PHASE(QP_PHASE_ROWOPS, smooth_unfold(op.dX, dw, m->smooth_dw, sc, BT, C, H));
    return 0;
}

static int llama_forward_step(llama_pass *x, qp_pass_step st, int l)
{
    qp_gpt *m = x->m;
    const qp_gpt_config *cf = &m->cfg;
    const qp_llama_params *p = &m->lparams;
    qp_llama_acts *a = &m->lacts;
    const int B = x->B, T = x->T, BT = B * T, C = cf->dim, NH = cf->heads, H = cf->mlp_hidden, L = cf->layers;
    const int QKV = (int)qp_llama_qkv_width(cf);
    const int64_t o = (int64_t)l * BT;
    float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
    switch (st.op) {
    case QP_STEP_NORM_IN: /* the embeddings, or the last block's output */
        x->r[QP_GEMM_QKV] = rounds_operand(m, x->lin, l, QP_GEMM_QKV, QP_OPND_X, &x->rounded[QP_GEMM_QKV]);
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(residual, a->ln1 + o * C, a->ln1_rstd + o,
                                                        l ? a->residual2 + (o - BT) * C : NULL, a->down,
                                                        l ? NULL : x->inputs, p->wte, p->ln1w + l * C, BT, C,
                                                        x->r[QP_GEMM_QKV]));
        return 0;
    case QP_STEP_LINEAR:
        return model_linear_forward(m, x->lin, l, st.gemm, llama_gemm(x, l, st.gemm), x->r[st.gemm], BT);
    case QP_STEP_ROPE:
        PHASE(QP_PHASE_ROWOPS, rope_forward(a->qkv + o * QKV, m->rope, &x->al, cf->max_seq, BT, T, 0, NULL));
        return 0;
    case QP_STEP_ATTENTION:
        PHASE(QP_PHASE_ATTN, llama_attention_forward(a->atty + o * C, a->att_lse + (int64_t)l * B * NH * T,
                                                     a->qkv + o * QKV, &x->al, B, T));
        return 0;
    case QP_STEP_NORM_MID: {
        /* ln2 feeds two GEMMs: both must take it at one format and scale */
        qp_linear_rounded *gate = &x->rounded[QP_GEMM_GATE], *up = &x->rounded[QP_GEMM_UP];
        qp_linear_rounded *ln2_r = rounds_operand(m, x->lin, l, QP_GEMM_GATE, QP_OPND_X, gate) &&
                                           rounds_operand(m, x->lin, l, QP_GEMM_UP, QP_OPND_X, up) &&
                                           gate->fmt == up->fmt && gate->scale == up->scale
                                       ? gate
                                       : NULL;
        x->r[QP_GEMM_GATE] = x->r[QP_GEMM_UP] = ln2_r;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(a->residual2 + o * C, a->ln2 + o * C, a->ln2_rstd + o,
                                                        residual, a->attproj, NULL, NULL, p->ln2w + l * C, BT, C,
                                                        ln2_r));
        return 0;
    }
    case QP_STEP_SWIGLU:
        x->r[QP_GEMM_DOWN] = cf->smooth_swiglu ? NULL
                                               : rounds_operand(m, x->lin, l, QP_GEMM_DOWN, QP_OPND_X,
                                                                &x->rounded[QP_GEMM_DOWN]);
        PHASE(QP_PHASE_ROWOPS, swiglu_forward(a->swiglu + o * H, a->gate + o * H, a->up + o * H, BT, H,
                                              x->r[QP_GEMM_DOWN]));
        return 0;
    case QP_STEP_DOWN: return llama_down(x, l, 0);
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(a->residual3 + last, a->lnf, a->lnf_rstd, a->residual2 + last,
                                                        a->down, NULL, NULL, p->lnfw, BT, C, NULL));
        return 0;
    }
    case QP_STEP_LOSS:
        PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_forward(a->probs, a->losses, a->logits, x->targets, BT, cf->vocab));
        set_mean_loss(m, a->losses, x->targets, BT);
        return 0;
    case QP_STEP_GELU:
    case QP_STEP_COUNT: break; /* not the Llama's */
    }
    return -1;
}

static int llama_backward_step(llama_pass *x, qp_pass_step st, int l)
{
    qp_gpt *m = x->m;
    const qp_gpt_config *cf = &m->cfg;
    const qp_llama_params *p = &m->lparams, *g = &m->lgrads;
    const qp_llama_acts *a = &m->lacts;
    const qp_llama_bwd_scratch *s = &x->s;
    const int B = x->B, T = x->T, BT = B * T, C = cf->dim, NH = cf->heads, H = cf->mlp_hidden, L = cf->layers;
    const int QKV = (int)qp_llama_qkv_width(cf);
    const int64_t o = (int64_t)l * BT;
    switch (st.op) {
    case QP_STEP_LOSS:
        PHASE(QP_PHASE_ROWOPS,
              softmax_crossentropy_backward(a->probs, x->targets, x->loss_scale / (float)BT, BT, cf->vocab));
        return 0;
    case QP_STEP_LINEAR:
        return model_linear_backward(x->lin, l, st.gemm, llama_gemm(x, l, st.gemm), x->r[st.gemm], BT);
    case QP_STEP_NORM_OUT: {
        const int64_t last = (int64_t)(L - 1) * BT * C;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s->dres, g->lnfw, s->part, s->dln, a->residual3 + last,
                                                         p->lnfw, a->lnf_rstd, 0, BT, C));
        return 0;
    }
    case QP_STEP_DOWN: return llama_down(x, l, 1);
    case QP_STEP_SWIGLU:
        x->r[QP_GEMM_GATE] = rounds_operand(m, x->lin, l, QP_GEMM_GATE, QP_OPND_DY, &x->rounded[QP_GEMM_GATE]);
        x->r[QP_GEMM_UP] = rounds_operand(m, x->lin, l, QP_GEMM_UP, QP_OPND_DY, &x->rounded[QP_GEMM_UP]);
        PHASE(QP_PHASE_ROWOPS, swiglu_backward(s->dh, s->dup, a->gate + o * H, a->up + o * H, BT, H,
                                               x->r[QP_GEMM_GATE], x->r[QP_GEMM_UP]));
        return 0;
    case QP_STEP_NORM_MID:
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s->dres, g->ln2w + l * C, s->part, s->dln,
                                                         a->residual2 + o * C, p->ln2w + l * C, a->ln2_rstd + o, 1,
                                                         BT, C));
        return 0;
    case QP_STEP_ATTENTION:
        PHASE(QP_PHASE_ATTN, llama_attention_backward(s->dqkv, s->datty, a->atty + o * C,
                                                      a->att_lse + (int64_t)l * B * NH * T, a->qkv + o * QKV, &x->al,
                                                      B, T));
        return 0;
    case QP_STEP_ROPE:
        x->r[QP_GEMM_QKV] = rounds_operand(m, x->lin, l, QP_GEMM_QKV, QP_OPND_DY, &x->rounded[QP_GEMM_QKV]);
        PHASE(QP_PHASE_ROWOPS, rope_forward(s->dqkv, m->rope, &x->al, cf->max_seq, BT, T, 1, x->r[QP_GEMM_QKV]));
        return 0;
    case QP_STEP_NORM_IN: {
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s->dres, g->ln1w + l * C, s->part, s->dln, residual,
                                                         p->ln1w + l * C, a->ln1_rstd + o, 1, BT, C));
        if (l == 0) PHASE(QP_PHASE_ROWOPS, encoder_backward(g->wte, NULL, s->dres, x->inputs, BT, T, C));
        return 0;
    }
    case QP_STEP_GELU:
    case QP_STEP_COUNT: break; /* not the Llama's */
    }
    return -1;
}

static int llama_step(void *ctx, qp_pass_step st, int layer, int backward)
{
    return backward ? llama_backward_step(ctx, st, layer) : llama_forward_step(ctx, st, layer);
}

int QP_KERNEL(qp_llama_forward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T)
{
    const int V = m->cfg.vocab, BT = B * T;
    if (B != m->B || T != m->T) return -1;
    for (int i = 0; i < BT; i++)
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) return -1;
    llama_pass x = {.m = m, .lin = lin, .inputs = inputs, .targets = targets, .B = B, .T = T,
                    .al = llama_att_layout(&m->cfg)};
    return qp_pass_forward(QP_ARCH_LLAMA, m->cfg.layers, llama_step, &x);
}

int QP_KERNEL(qp_llama_backward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets,
                                 float loss_scale)
{
    llama_pass x = {.m = m, .lin = lin, .inputs = inputs, .targets = targets, .B = m->B, .T = m->T,
                    .loss_scale = loss_scale, .al = llama_att_layout(&m->cfg),
                    .s = qp_llama_scratch_carve(m->scratch, &m->cfg, m->B, m->T)};
    return qp_pass_backward(QP_ARCH_LLAMA, m->cfg.layers, llama_step, &x);
}
