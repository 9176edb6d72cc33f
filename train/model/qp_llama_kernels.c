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

int QP_KERNEL(qp_llama_forward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T)
{
    const qp_gpt_config *cf = &m->cfg;
    const int L = cf->layers, C = cf->dim, NH = cf->heads, V = cf->vocab, H = cf->mlp_hidden, BT = B * T;
    const int QKV = (int)qp_llama_qkv_width(cf);
    if (B != m->B || T != m->T) return -1;
    for (int i = 0; i < BT; i++)
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) return -1;
    const qp_llama_params *p = &m->lparams;
    qp_llama_acts *a = &m->lacts;
    const qp_att_layout al = llama_att_layout(cf);
    for (int l = 0; l < L; l++) {
        const int64_t o = (int64_t)l * BT;
        float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *ln1 = a->ln1 + o * C, *qkv = a->qkv + o * QKV, *atty = a->atty + o * C;
        float *res2 = a->residual2 + o * C, *ln2 = a->ln2 + o * C;
        float *gate = a->gate + o * H, *up = a->up + o * H, *h = a->swiglu + o * H;
        const float *downw = p->downw + (int64_t)l * C * H;
        /* the GEMM inputs their producers quantize for the dispatch (ln2 feeds
         * two GEMMs: both must take it at one format and scale), and their counts */
        qp_linear_rounded r_ln1, r_ln2, r_ln2_up, r_h;
        qp_linear_rounded *ln1_r = rounds_operand(m, lin, l, QP_GEMM_QKV, QP_OPND_X, &r_ln1);
        qp_linear_rounded *ln2_r = rounds_operand(m, lin, l, QP_GEMM_GATE, QP_OPND_X, &r_ln2) &&
                                           rounds_operand(m, lin, l, QP_GEMM_UP, QP_OPND_X, &r_ln2_up) &&
                                           r_ln2.fmt == r_ln2_up.fmt && r_ln2.scale == r_ln2_up.scale
                                       ? &r_ln2
                                       : NULL;
        qp_linear_rounded *h_r = cf->smooth_swiglu ? NULL : rounds_operand(m, lin, l, QP_GEMM_DOWN, QP_OPND_X, &r_h);
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(residual, ln1, a->ln1_rstd + o,
                                                        l ? a->residual2 + (o - BT) * C : NULL, a->down,
                                                        l ? NULL : inputs, p->wte, p->ln1w + l * C, BT, C, ln1_r));
        if (linear_forward(m, lin, l, QP_GEMM_QKV, qkv, ln1, ln1_r, p->qkvw + (int64_t)l * QKV * C, BT, C, QKV))
            return -1;
        PHASE(QP_PHASE_ROWOPS, rope_forward(qkv, m->rope, &al, cf->max_seq, BT, T, 0, NULL));
        PHASE(QP_PHASE_ATTN, llama_attention_forward(atty, a->att_lse + (int64_t)l * B * NH * T, qkv, &al, B, T));
        if (linear_forward(m, lin, l, QP_GEMM_ATTPROJ, a->attproj, atty, NULL, p->attprojw + (int64_t)l * C * C, BT, C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(res2, ln2, a->ln2_rstd + o, residual, a->attproj, NULL, NULL,
                                                        p->ln2w + l * C, BT, C, ln2_r));
        if (linear_forward(m, lin, l, QP_GEMM_GATE, gate, ln2, ln2_r, p->gatew + (int64_t)l * H * C, BT, C, H) ||
            linear_forward(m, lin, l, QP_GEMM_UP, up, ln2, ln2_r, p->upw + (int64_t)l * H * C, BT, C, H))
            return -1;
        PHASE(QP_PHASE_ROWOPS, swiglu_forward(h, gate, up, BT, H, h_r));
        const float *x = h, *w = downw;
        if (cf->smooth_swiglu) {
            float *s = m->smooth_s + (int64_t)l * H;
            PHASE(QP_PHASE_ROWOPS, (smooth_scales(s, h, BT, H, m),
                                    smooth_apply(m->smooth_x, m->smooth_w, h, downw, s, BT, C, H)));
            x = m->smooth_x, w = m->smooth_w;
        }
        if (linear_forward(m, lin, l, QP_GEMM_DOWN, a->down, x, h_r, w, BT, H, C)) return -1;
    }
    const int64_t last = (int64_t)(L - 1) * BT * C;
    PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_forward(a->residual3 + last, a->lnf, a->lnf_rstd, a->residual2 + last,
                                                    a->down, NULL, NULL, p->lnfw, BT, C, NULL));
    if (linear_forward(m, lin, L, QP_GEMM_HEAD, a->logits, a->lnf, NULL, p->lmhead, BT, C, V)) return -1;
    PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_forward(a->probs, a->losses, a->logits, targets, BT, V));
    set_mean_loss(m, a->losses, targets, BT);
    return 0;
}

int QP_KERNEL(qp_llama_backward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets,
                                 float loss_scale)
{
    const qp_gpt_config *cf = &m->cfg;
    const int B = m->B, T = m->T, L = cf->layers, C = cf->dim, NH = cf->heads, V = cf->vocab, H = cf->mlp_hidden,
              BT = B * T, QKV = (int)qp_llama_qkv_width(cf);
    const qp_llama_params *p = &m->lparams, *g = &m->lgrads;
    const qp_llama_acts *a = &m->lacts;
    const qp_att_layout al = llama_att_layout(cf);
    const qp_llama_bwd_scratch s = qp_llama_scratch_carve(m->scratch, cf, B, T);
    PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_backward(a->probs, targets, loss_scale / (float)BT, BT, V));
    if (linear_backward(lin, L, QP_GEMM_HEAD, s.dln, g->lmhead, a->probs, NULL, a->lnf, p->lmhead, BT, C, V, 0)) return -1;
    const int64_t last = (int64_t)(L - 1) * BT * C;
    PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s.dres, g->lnfw, s.part, s.dln, a->residual3 + last, p->lnfw,
                                                     a->lnf_rstd, 0, BT, C));
    for (int l = L - 1; l >= 0; l--) {
        const int64_t o = (int64_t)l * BT;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        const float *ln2 = a->ln2 + o * C, *h = a->swiglu + o * H;
        const float *downw = p->downw + (int64_t)l * C * H;
        if (cf->smooth_swiglu) {
            /* the GEMMs on the forward's scaled operands, then the fold back */
            const float *sc = m->smooth_s + (int64_t)l * H;
            PHASE(QP_PHASE_ROWOPS, (smooth_apply(m->smooth_x, m->smooth_w, h, downw, sc, BT, C, H),
                                    zero_rows(m->smooth_dw, (int64_t)C * H)));
            if (linear_backward(lin, l, QP_GEMM_DOWN, s.dh, m->smooth_dw, s.dres, NULL, m->smooth_x, m->smooth_w, BT, H, C, 0))
                return -1;
            PHASE(QP_PHASE_ROWOPS, smooth_unfold(s.dh, g->downw + (int64_t)l * C * H, m->smooth_dw, sc, BT, C, H));
        } else if (linear_backward(lin, l, QP_GEMM_DOWN, s.dh, g->downw + (int64_t)l * C * H, s.dres, NULL, h, downw, BT,
                                   H, C, 0)) {
            return -1;
        }
        qp_linear_rounded r_dgate, r_dup;
        qp_linear_rounded *dgate_r = rounds_operand(m, lin, l, QP_GEMM_GATE, QP_OPND_DY, &r_dgate);
        qp_linear_rounded *dup_r = rounds_operand(m, lin, l, QP_GEMM_UP, QP_OPND_DY, &r_dup);
        PHASE(QP_PHASE_ROWOPS, swiglu_backward(s.dh, s.dup, a->gate + o * H, a->up + o * H, BT, H, dgate_r, dup_r));
        if (linear_backward(lin, l, QP_GEMM_UP, s.dln, g->upw + (int64_t)l * H * C, s.dup, dup_r, ln2,
                            p->upw + (int64_t)l * H * C, BT, C, H, 0) ||
            linear_backward(lin, l, QP_GEMM_GATE, s.dln, g->gatew + (int64_t)l * H * C, s.dh, dgate_r, ln2,
                            p->gatew + (int64_t)l * H * C, BT, C, H, 1))
            return -1;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s.dres, g->ln2w + l * C, s.part, s.dln, a->residual2 + o * C,
                                                         p->ln2w + l * C, a->ln2_rstd + o, 1, BT, C));
        if (linear_backward(lin, l, QP_GEMM_ATTPROJ, s.datty, g->attprojw + (int64_t)l * C * C, s.dres, NULL,
                            a->atty + o * C, p->attprojw + (int64_t)l * C * C, BT, C, C, 0))
            return -1;
        PHASE(QP_PHASE_ATTN, llama_attention_backward(s.dqkv, s.datty, a->atty + o * C,
                                                      a->att_lse + (int64_t)l * B * NH * T, a->qkv + o * QKV, &al,
                                                      B, T));
        qp_linear_rounded r_dqkv;
        qp_linear_rounded *dqkv_r = rounds_operand(m, lin, l, QP_GEMM_QKV, QP_OPND_DY, &r_dqkv);
        PHASE(QP_PHASE_ROWOPS, rope_forward(s.dqkv, m->rope, &al, cf->max_seq, BT, T, 1, dqkv_r));
        if (linear_backward(lin, l, QP_GEMM_QKV, s.dln, g->qkvw + (int64_t)l * QKV * C, s.dqkv, dqkv_r, a->ln1 + o * C,
                            p->qkvw + (int64_t)l * QKV * C, BT, C, QKV, 0))
            return -1;
        PHASE(QP_PHASE_ROWOPS, residual_rmsnorm_backward(s.dres, g->ln1w + l * C, s.part, s.dln, residual,
                                                         p->ln1w + l * C, a->ln1_rstd + o, 1, BT, C));
    }
    PHASE(QP_PHASE_ROWOPS, encoder_backward(g->wte, NULL, s.dres, inputs, BT, T, C));
    return 0;
}
