/* qp_model_kernels.c — the GPT's layers and its forward and backward passes.
 * Layer functions follow llm.c's structure; loops that write disjoint outputs
 * run under OpenMP, reductions stay in a fixed order, so results are
 * deterministic for a given thread count.
 *
 * This file is compiled twice: for the baseline x86-64 and for x86-64-v4
 * (AVX-512), with QP_KERNEL naming the two copies; qp_model.c picks one at
 * run time. Both copies compute the same operations in the same order; the
 * wider vectors only change how many run at once. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "qp_model.h"
#include "qp_model_kernels.h"
#include "qp_prof.h"

/* ---- layers --------------------------------------------------------------- */

/* Dot product with eight running sums combined in a fixed order: the compiler
 * can vectorize it (a single running sum is a chain of dependent adds) and
 * the result is the same for every vector width. */
static inline float dot8(const float *restrict a, const float *restrict b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float tail = 0.0f;
    for (; i < n; i++) tail += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

static void encoder_forward(float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    /* out (B,T,C) = wte[inp] + wpe[t] */
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        const float *te = wte + (int64_t)inp[bt] * C, *pe = wpe + (int64_t)(bt % T) * C;
        float *o = out + (int64_t)bt * C;
        for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
}

static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T, int C)
{
    /* Scatter-add by token: split by channel so every sum runs in (b,t) order. */
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++)
        for (int bt = 0; bt < B * T; bt++) {
            const float d = dout[(int64_t)bt * C + c];
            dwte[(int64_t)inp[bt] * C + c] += d;
            dwpe[(int64_t)(bt % T) * C + c] += d;
        }
}

static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                              int N, int C)
{
    /* inp, out (N,C); mean, rstd (N) */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (int64_t)i * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= C;
        const float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + (int64_t)i * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *d = dout + (int64_t)i * C, *x = inp + (int64_t)i * C;
        float *dx = dinp + (int64_t)i * C;
        const float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            const float norm = (x[c] - m) * s, dnorm = w[c] * d[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            const float norm = (x[c] - m) * s, dnorm = w[c] * d[c];
            dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
    /* weight and bias gradients: per channel, rows in order */
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        float sw = 0.0f, sb = 0.0f;
        for (int i = 0; i < N; i++) {
            const float d = dout[(int64_t)i * C + c];
            sw += (inp[(int64_t)i * C + c] - mean[i]) * rstd[i] * d;
            sb += d;
        }
        dw[c] += sw;
        db[c] += sb;
    }
}

static void attention_forward(float *restrict out, float *restrict preatt, float *restrict att,
                              const float *restrict qkv, int B, int T, int C, int NH)
{
    /* qkv (B,T,3C) holds q,k,v; preatt, att (B,NH,T,T); out (B,T,C) */
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + ((int64_t)b * T + t) * 3 * C + h * hs;
                float *pre = preatt + (((int64_t)b * NH + h) * T + t) * T;
                float *a = att + (((int64_t)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
                    const float v = dot8(q, k, hs) * scale;
                    pre[t2] = v;
                    if (v > maxv) maxv = v;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float e = expf(pre[t2] - maxv);
                    a[t2] = e;
                    sum += e;
                }
                const float inv = 1.0f / sum;
                for (int t2 = 0; t2 < T; t2++) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
                float *o = out + ((int64_t)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) o[i] = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                    for (int i = 0; i < hs; i++) o[i] += a[t2] * v[i];
                }
            }
}

static void attention_backward(float *restrict dqkv, float *restrict dpreatt, float *restrict datt,
                               const float *restrict dout, const float *restrict qkv, const float *restrict att, int B,
                               int T, int C, int NH)
{
    /* Parallel over (b, h): the key/value gradients of a head are summed over
     * every query t, so one thread owns a whole head. */
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *a = att + (((int64_t)b * NH + h) * T + t) * T;
                float *da = datt + (((int64_t)b * NH + h) * T + t) * T;
                float *dpre = dpreatt + (((int64_t)b * NH + h) * T + t) * T;
                const float *q = qkv + ((int64_t)b * T + t) * 3 * C + h * hs;
                float *dq = dqkv + ((int64_t)b * T + t) * 3 * C + h * hs;
                const float *d = dout + ((int64_t)b * T + t) * C + h * hs;
                /* out = att @ v */
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                    float *dv = dqkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                    da[t2] += dot8(v, d, hs);
                    const float at = a[t2];
                    for (int i = 0; i < hs; i++) dv[i] += at * d[i];
                }
                /* softmax: dpre = a * (da - sum(a * da)), O(T) instead of the Jacobian's O(T^2) */
                const float dot = dot8(a, da, t + 1);
                for (int t2 = 0; t2 <= t; t2++) dpre[t2] += a[t2] * (da[t2] - dot);
                /* preatt = scale * q . k */
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
                    float *dk = dqkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
                    const float g = dpre[t2] * scale;
                    for (int i = 0; i < hs; i++) dq[i] += k[i] * g;
                    for (int i = 0; i < hs; i++) dk[i] += q[i] * g;
                }
            }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

/* exp(x) for x <= 0 (Cody-Waite reduction, Cephes' polynomial, ~1 ulp): plain
 * arithmetic GCC vectorizes, where libm's expf/tanhf calls are not. */
static inline float exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    const float r = x - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { uint32_t u; float f; } two_k = {(uint32_t)((int32_t)k + 127) << 23};
    return p * two_k.f;
}

static inline float tanh_fast(float u)
{
    const float e = exp_nonpos(-2.0f * fabsf(u)), t = (1.0f - e) / (1.0f + e);
    return u < 0.0f ? -t : t;
}

static void gelu_forward(float *out, const float *inp, int64_t n)
{
    /* GPT-2's tanh approximation */
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanh_fast(GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

static void gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float x = inp[i], u = GELU_SCALE * (x + 0.044715f * x * x * x);
        const float th = tanh_fast(u), sech2 = 1.0f - th * th;
        const float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += grad * dout[i];
    }
}

static void residual_forward(float *out, const float *a, const float *b, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static void residual_backward(float *da, float *db, const float *dout, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

static void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets,
                                         int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *l = logits + (int64_t)i * V;
        float *p = probs + (int64_t)i * V;
        float maxv = -INFINITY;
        for (int v = 0; v < V; v++)
            if (l[v] > maxv) maxv = l[v];
        double sum = 0.0;
        for (int v = 0; v < V; v++) {
            p[v] = expf(l[v] - maxv);
            sum += p[v];
        }
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) p[v] *= inv;
        if (targets) losses[i] = -logf(p[targets[i]]);
    }
}

static void softmax_crossentropy_backward(float *dlogits, const float *probs, const int32_t *targets, float dloss,
                                          int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *p = probs + (int64_t)i * V;
        float *d = dlogits + (int64_t)i * V;
        for (int v = 0; v < V; v++) d[v] += (p[v] - (v == targets[i] ? 1.0f : 0.0f)) * dloss;
    }
}

/* ---- the model ------------------------------------------------------------ */

/* The phase profile (qp_prof.h): each layer call counts for its phase; the
 * dispatch's own time is quantization, the GEMMs inside it count as GEMM. */
#define PHASE(p, call) (qp_prof_push(p), call, qp_prof_pop())

static int linear_forward(qp_linear *lin, int layer, qp_gemm_id g, float *Y, const float *X, const float *W,
                          const float *b, int M, int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc = qp_linear_forward(lin, layer, g, Y, X, W, b, M, IC, OC);
    qp_prof_pop();
    return rc;
}

static int linear_backward(qp_linear *lin, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                           const float *X, const float *W, int M, int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc = qp_linear_backward(lin, layer, g, dX, dW, db, dY, X, W, M, IC, OC);
    qp_prof_pop();
    return rc;
}

int QP_KERNEL(qp_gpt_forward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T)
{
    const int L = m->cfg.layers, C = m->cfg.dim, NH = m->cfg.heads, V = m->cfg.vocab, BT = B * T;
    if (B != m->B || T != m->T) return -1;
    for (int i = 0; i < BT; i++)
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) return -1;
    qp_gpt_params *p = &m->params;
    qp_gpt_acts *a = &m->acts;
    PHASE(QP_PHASE_ROWOPS, encoder_forward(a->encoded, inputs, p->wte, p->wpe, B, T, C));
    for (int l = 0; l < L; l++) {
        const int64_t o = (int64_t)l * BT;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *ln1 = a->ln1 + o * C, *qkv = a->qkv + o * 3 * C, *atty = a->atty + o * C;
        float *attproj = a->attproj + o * C, *res2 = a->residual2 + o * C, *ln2 = a->ln2 + o * C;
        float *fch = a->fch + o * 4 * C, *fchg = a->fch_gelu + o * 4 * C, *fcproj = a->fcproj + o * C;
        PHASE(QP_PHASE_ROWOPS, layernorm_forward(ln1, a->ln1_mean + o, a->ln1_rstd + o, residual, p->ln1w + l * C, p->ln1b + l * C, BT, C));
        if (linear_forward(lin, l, QP_GEMM_QKV, qkv, ln1, p->qkvw + (int64_t)l * 3 * C * C, p->qkvb + l * 3 * C,
                              BT, C, 3 * C))
            return -1;
        PHASE(QP_PHASE_ATTN, attention_forward(atty, a->preatt + (int64_t)l * B * NH * T * T, a->att + (int64_t)l * B * NH * T * T, qkv,
                          B, T, C, NH));
        if (linear_forward(lin, l, QP_GEMM_ATTPROJ, attproj, atty, p->attprojw + (int64_t)l * C * C,
                              p->attprojb + l * C, BT, C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, residual_forward(res2, residual, attproj, (int64_t)BT * C));
        PHASE(QP_PHASE_ROWOPS, layernorm_forward(ln2, a->ln2_mean + o, a->ln2_rstd + o, res2, p->ln2w + l * C, p->ln2b + l * C, BT, C));
        if (linear_forward(lin, l, QP_GEMM_FC, fch, ln2, p->fcw + (int64_t)l * 4 * C * C, p->fcb + l * 4 * C, BT,
                              C, 4 * C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, gelu_forward(fchg, fch, (int64_t)BT * 4 * C));
        if (linear_forward(lin, l, QP_GEMM_FCPROJ, fcproj, fchg, p->fcprojw + (int64_t)l * 4 * C * C,
                              p->fcprojb + l * C, BT, 4 * C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, residual_forward(a->residual3 + o * C, res2, fcproj, (int64_t)BT * C));
    }
    PHASE(QP_PHASE_ROWOPS, layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (int64_t)(L - 1) * BT * C, p->lnfw, p->lnfb,
                      BT, C));
    if (linear_forward(lin, L, QP_GEMM_HEAD, a->logits, a->lnf, p->wte, NULL, BT, C, V)) return -1;
    PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_forward(a->probs, a->losses, a->logits, targets, BT, V));
    if (targets) {
        double s = 0.0;
        for (int i = 0; i < BT; i++) s += a->losses[i];
        m->mean_loss = (float)(s / BT);
    } else {
        m->mean_loss = -1.0f;
    }
    return 0;
}


int QP_KERNEL(qp_gpt_backward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets,
                               float loss_scale)
{
    const int B = m->B, T = m->T, L = m->cfg.layers, C = m->cfg.dim, NH = m->cfg.heads, V = m->cfg.vocab,
              BT = B * T;
    qp_gpt_params *p = &m->params, *g = &m->grads;
    qp_gpt_acts *a = &m->acts, *d = &m->grads_acts;
    memset(m->grads_acts_memory, 0, (size_t)m->num_acts * sizeof(float));
    PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_backward(d->logits, a->probs, targets, loss_scale / (float)BT, BT, V));
    if (linear_backward(lin, L, QP_GEMM_HEAD, d->lnf, g->wte, NULL, d->logits, a->lnf, p->wte, BT, C, V))
        return -1;
    const int64_t last = (int64_t)(L - 1) * BT * C;
    PHASE(QP_PHASE_ROWOPS, layernorm_backward(d->residual3 + last, g->lnfw, g->lnfb, d->lnf, a->residual3 + last, p->lnfw, a->lnf_mean,
                       a->lnf_rstd, BT, C));
    for (int l = L - 1; l >= 0; l--) {
        const int64_t o = (int64_t)l * BT;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *dresidual = l == 0 ? d->encoded : d->residual3 + (o - BT) * C;
        const int64_t att_off = (int64_t)l * B * NH * T * T;
        PHASE(QP_PHASE_ROWOPS, residual_backward(d->residual2 + o * C, d->fcproj + o * C, d->residual3 + o * C, (int64_t)BT * C));
        if (linear_backward(lin, l, QP_GEMM_FCPROJ, d->fch_gelu + o * 4 * C, g->fcprojw + (int64_t)l * 4 * C * C,
                               g->fcprojb + l * C, d->fcproj + o * C, a->fch_gelu + o * 4 * C,
                               p->fcprojw + (int64_t)l * 4 * C * C, BT, 4 * C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, gelu_backward(d->fch + o * 4 * C, a->fch + o * 4 * C, d->fch_gelu + o * 4 * C, (int64_t)BT * 4 * C));
        if (linear_backward(lin, l, QP_GEMM_FC, d->ln2 + o * C, g->fcw + (int64_t)l * 4 * C * C, g->fcb + l * 4 * C,
                               d->fch + o * 4 * C, a->ln2 + o * C, p->fcw + (int64_t)l * 4 * C * C, BT, C, 4 * C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, layernorm_backward(d->residual2 + o * C, g->ln2w + l * C, g->ln2b + l * C, d->ln2 + o * C,
                           a->residual2 + o * C, p->ln2w + l * C, a->ln2_mean + o, a->ln2_rstd + o, BT, C));
        PHASE(QP_PHASE_ROWOPS, residual_backward(dresidual, d->attproj + o * C, d->residual2 + o * C, (int64_t)BT * C));
        if (linear_backward(lin, l, QP_GEMM_ATTPROJ, d->atty + o * C, g->attprojw + (int64_t)l * C * C,
                               g->attprojb + l * C, d->attproj + o * C, a->atty + o * C,
                               p->attprojw + (int64_t)l * C * C, BT, C, C))
            return -1;
        PHASE(QP_PHASE_ATTN, attention_backward(d->qkv + o * 3 * C, d->preatt + att_off, d->att + att_off, d->atty + o * C,
                           a->qkv + o * 3 * C, a->att + att_off, B, T, C, NH));
        if (linear_backward(lin, l, QP_GEMM_QKV, d->ln1 + o * C, g->qkvw + (int64_t)l * 3 * C * C,
                               g->qkvb + l * 3 * C, d->qkv + o * 3 * C, a->ln1 + o * C,
                               p->qkvw + (int64_t)l * 3 * C * C, BT, C, 3 * C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, layernorm_backward(dresidual, g->ln1w + l * C, g->ln1b + l * C, d->ln1 + o * C, residual, p->ln1w + l * C,
                           a->ln1_mean + o, a->ln1_rstd + o, BT, C));
    }
    PHASE(QP_PHASE_ROWOPS, encoder_backward(g->wte, g->wpe, d->encoded, inputs, B, T, C));
    return 0;
}
