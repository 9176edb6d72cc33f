/* qp_cuda_model_math.h — the per-row and per-element formulas of the GPT
 * (train/qp_model_kernels.c), written once for the host and the device.
 *
 * Owns: nothing but arithmetic. Each function computes what one iteration of
 * the CPU kernel's outer loop computes, in the same order of operations, so
 * the GPU kernels (kernels/qp_cuda_model.cu: one thread per row / element)
 * and the CPU trainer agree to rounding. tests/kernels/test_cuda_model_math.c
 * checks every function against the CPU model without a GPU. Compiled by
 * nvcc with -fmad=false (no contraction) and by gcc as plain C. */
#ifndef QP_CUDA_MODEL_MATH_H
#define QP_CUDA_MODEL_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define QPM_FN static inline __host__ __device__
#define QPM_INF INFINITY
#else
#define QPM_FN static inline
#define QPM_INF INFINITY
#endif

#define QPM_GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

/* Dot product with eight running sums combined in a fixed order (qp_model_kernels.c's dot8). */
QPM_FN float qpm_dot8(const float *a, const float *b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float tail = 0.0f;
    for (; i < n; i++) tail += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

/* exp(x) for x <= 0: the CPU's Cody-Waite reduction and Cephes polynomial. */
QPM_FN float qpm_exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = x - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union {
        uint32_t u;
        float f;
    } two_k;
    two_k.u = (uint32_t)((int32_t)k + 127) << 23;
    return p * two_k.f;
}

QPM_FN float qpm_tanh(float u)
{
    const float e = qpm_exp_nonpos(-2.0f * fabsf(u)), t = (1.0f - e) / (1.0f + e);
    return u < 0.0f ? -t : t;
}

/* GELU, GPT-2's tanh approximation. */
QPM_FN float qpm_gelu_fwd(float x)
{
    return 0.5f * x * (1.0f + qpm_tanh(QPM_GELU_SCALE * (x + 0.044715f * x * x * x)));
}

/* d gelu(x) / dx (the caller multiplies by dout and accumulates). */
QPM_FN float qpm_gelu_grad(float x)
{
    const float u = QPM_GELU_SCALE * (x + 0.044715f * x * x * x);
    const float th = qpm_tanh(u), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * QPM_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

/* Token + position embedding gradients of channel c, tokens in (b,t) order
 * (the CPU's scatter-add order; one owner per channel, no atomics). */
QPM_FN void qpm_encoder_bwd_channel(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int BT, int T,
                                    int C, int c)
{
    for (int bt = 0; bt < BT; bt++) {
        const float d = dout[(int64_t)bt * C + c];
        dwte[(int64_t)inp[bt] * C + c] += d;
        dwpe[(int64_t)(bt % T) * C + c] += d;
    }
}

/* LayerNorm of one row x[C] into o[C]; its mean and 1/std. */
QPM_FN void qpm_layernorm_fwd_row(float *o, float *mean, float *rstd, const float *x, const float *w, const float *b,
                                  int C)
{
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    float v = 0.0f;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const float s = 1.0f / sqrtf(v + 1e-5f);
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + b[c];
    *mean = m;
    *rstd = s;
}

/* dx[C] += the input gradient of one LayerNorm row. */
QPM_FN void qpm_layernorm_bwd_row(float *dx, const float *d, const float *x, const float *w, float m, float s, int C)
{
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

/* LayerNorm weight and bias gradients of channel c, rows in order
 * (dout, inp: N x C; mean, rstd: N). */
QPM_FN void qpm_layernorm_bwd_channel(float *dw, float *db, const float *dout, const float *inp, const float *mean,
                                      const float *rstd, int N, int C, int c)
{
    float sw = 0.0f, sb = 0.0f;
    for (int i = 0; i < N; i++) {
        const float d = dout[(int64_t)i * C + c];
        sw += (inp[(int64_t)i * C + c] - mean[i]) * rstd[i] * d;
        sb += d;
    }
    dw[c] += sw;
    db[c] += sb;
}

/* Causal attention of query row t of head h of batch b: pre/att rows of T,
 * out[hs]. qkv is (B,T,3C). */
QPM_FN void qpm_attention_fwd_row(float *out, float *pre, float *a, const float *qkv, int b, int t, int h, int T,
                                  int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + ((int64_t)b * T + t) * 3 * C + h * hs;
    float maxv = -QPM_INF;
    for (int t2 = 0; t2 <= t; t2++) {
        const float *k = qkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
        const float v = qpm_dot8(q, k, hs) * scale;
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
    for (int i = 0; i < hs; i++) out[i] = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        const float *v = qkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
        for (int i = 0; i < hs; i++) out[i] += a[t2] * v[i];
    }
}

/* Backward of one whole head (b, h), every query t in order: the key and
 * value gradients of a head sum over t, so one thread owns the head. */
QPM_FN void qpm_attention_bwd_head(float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                                   const float *att, int b, int h, int T, int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    for (int t = 0; t < T; t++) {
        const float *a = att + (((int64_t)b * NH + h) * T + t) * T;
        float *da = datt + (((int64_t)b * NH + h) * T + t) * T;
        float *dpre = dpreatt + (((int64_t)b * NH + h) * T + t) * T;
        const float *q = qkv + ((int64_t)b * T + t) * 3 * C + h * hs;
        float *dq = dqkv + ((int64_t)b * T + t) * 3 * C + h * hs;
        const float *d = dout + ((int64_t)b * T + t) * C + h * hs;
        for (int t2 = 0; t2 <= t; t2++) {
            const float *v = qkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
            float *dv = dqkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
            da[t2] += qpm_dot8(v, d, hs);
            const float at = a[t2];
            for (int i = 0; i < hs; i++) dv[i] += at * d[i];
        }
        const float dot = qpm_dot8(a, da, t + 1);
        for (int t2 = 0; t2 <= t; t2++) dpre[t2] += a[t2] * (da[t2] - dot);
        for (int t2 = 0; t2 <= t; t2++) {
            const float *k = qkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
            float *dk = dqkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
            const float g = dpre[t2] * scale;
            for (int i = 0; i < hs; i++) dq[i] += k[i] * g;
            for (int i = 0; i < hs; i++) dk[i] += q[i] * g;
        }
    }
}

/* The same backward split for parallel threads, with the same sums in the
 * same order as qpm_attention_bwd_head: first every query row (b, h, t) —
 * its datt, dpreatt and dq, which only that row touches —, then every key
 * row (b, h, t2) — its dk and dv, summed over the queries t >= t2 in
 * increasing t, as the head's loop adds them. The key part reads the
 * dpreatt of every later row, so it runs after all query rows. */
QPM_FN void qpm_attention_bwd_query(float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                                    const float *att, int b, int t, int h, int T, int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *a = att + (((int64_t)b * NH + h) * T + t) * T;
    float *da = datt + (((int64_t)b * NH + h) * T + t) * T;
    float *dpre = dpreatt + (((int64_t)b * NH + h) * T + t) * T;
    float *dq = dqkv + ((int64_t)b * T + t) * 3 * C + h * hs;
    const float *d = dout + ((int64_t)b * T + t) * C + h * hs;
    for (int t2 = 0; t2 <= t; t2++) {
        const float *v = qkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
        da[t2] += qpm_dot8(v, d, hs);
    }
    const float dot = qpm_dot8(a, da, t + 1);
    for (int t2 = 0; t2 <= t; t2++) dpre[t2] += a[t2] * (da[t2] - dot);
    for (int t2 = 0; t2 <= t; t2++) {
        const float *k = qkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
        const float g = dpre[t2] * scale;
        for (int i = 0; i < hs; i++) dq[i] += k[i] * g;
    }
}

QPM_FN void qpm_attention_bwd_key(float *dqkv, const float *dpreatt, const float *dout, const float *qkv,
                                  const float *att, int b, int t2, int h, int T, int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    float *dk = dqkv + ((int64_t)b * T + t2) * 3 * C + C + h * hs;
    float *dv = dqkv + ((int64_t)b * T + t2) * 3 * C + 2 * C + h * hs;
    for (int t = t2; t < T; t++) {
        const int64_t row = (((int64_t)b * NH + h) * T + t) * T;
        const float *d = dout + ((int64_t)b * T + t) * C + h * hs;
        const float *q = qkv + ((int64_t)b * T + t) * 3 * C + h * hs;
        const float at = att[row + t2], g = dpreatt[row + t2] * scale;
        for (int i = 0; i < hs; i++) dv[i] += at * d[i];
        for (int i = 0; i < hs; i++) dk[i] += q[i] * g;
    }
}

/* Softmax of one logits row l[V] into p[V]; returns -log p[target]
 * (target < 0: no loss, returns 0). */
QPM_FN float qpm_softmax_ce_row(float *p, const float *l, int target, int V)
{
    float maxv = -QPM_INF;
    for (int v = 0; v < V; v++)
        if (l[v] > maxv) maxv = l[v];
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
        p[v] = expf(l[v] - maxv);
        sum += p[v];
    }
    const float inv = (float)(1.0 / sum);
    for (int v = 0; v < V; v++) p[v] *= inv;
    return target >= 0 ? -logf(p[target]) : 0.0f;
}

/* Gradient of one logit: (p - [v == target]) * dloss. */
QPM_FN float qpm_softmax_ce_grad(float p, int is_target, float dloss) { return (p - (is_target ? 1.0f : 0.0f)) * dloss; }

/* One AdamW element (qp_optim.c): bc1/bc2 are the bias corrections 1 - beta^t. */
QPM_FN void qpm_adamw_elem(float *param, float *m, float *v, float grad, float clip_scale, float b1, float b2,
                           float eps, float bc1, float bc2, float lr, float wd)
{
    const float g = grad * clip_scale;
    const float mi = b1 * *m + (1.0f - b1) * g;
    const float vi = b2 * *v + (1.0f - b2) * g * g;
    *m = mi;
    *v = vi;
    const float mhat = mi / bc1, vhat = vi / bc2;
    *param -= lr * (mhat / (sqrtf(vhat) + eps) + wd * *param);
}

#endif
