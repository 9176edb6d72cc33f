/* qp_model_math.h — the per-row and per-element formulas of the GPT and
 * the Llama, written once for the host and the device.
 *
 * Owns: nothing but arithmetic. Each row function computes one row of a
 * layer of the model of qp_model_kernels.c / qp_llama_kernels.c; the GPU
 * kernels (kernels/qp_cuda_model.cu, qp_cuda_llama.cu) call exactly these,
 * and the pieces they spread over lanes and threads (dot8's eight running
 * sums, the attention rows' per-channel sums, the two-level column sums) are
 * the same sums in the same order, so a GPU kernel gives these functions'
 * bits (test_cuda_model_kernels, on a GPU). The CPU kernels' element
 * formulas are these too: their scalar tails call qpm_exp_nonpos, qpm_tanh,
 * qpm_sigmoid and the GELU pair, and their 16-lane twins in
 * qp_model_simd.h / qp_model_kernels.c repeat them operation for operation
 * (test_model_torch's bit-identity of the baseline and AVX-512 copies
 * checks both). Rows the CPU kernels
 * compute in their own order — rows summed in 16 vector lanes, attention in
 * blocks of 16 query rows (no T x T matrix, each row's log-sum-exp kept)
 * where the GPU takes a warp per row over the T x T scores — agree with these
 * to rounding, not to the bit: tests/kernels/test_cuda_model_math.c checks
 * every function against the CPU kernels (1e-6 relative; see there for the
 * few looser bounds), and the column sums and embedding gradients, whose
 * order is the same, bit for bit.
 * Compiled by nvcc with -fmad=false (no contraction) and by gcc as plain C
 * (-ffp-contract=off in the model's kernels). */
#ifndef QP_MODEL_MATH_H
#define QP_MODEL_MATH_H

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

/* Dot product with eight running sums combined in a fixed order (qp_model_kernels.c's dot8),
 * in three pieces the GPU computes on eight lanes: running sum j (j = 0..7) over the
 * elements 8m + j of the whole groups of eight, in increasing m; the tail (the last
 * n % 8 elements, in order); the fixed tree ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) plus
 * the tail. An xor butterfly over lanes 1, 2, 4 forms exactly that tree (IEEE
 * addition is commutative), so every lane of the group ends with qpm_dot8's bits. */
QPM_FN float qpm_dot8_part(const float *a, const float *b, int n, int j)
{
    float s = 0.0f;
    for (int i = j; i + 8 - j <= n; i += 8) s += a[i] * b[i];
    return s;
}

QPM_FN float qpm_dot8_tail(const float *a, const float *b, int n)
{
    float tail = 0.0f;
    for (int i = n - n % 8; i < n; i++) tail += a[i] * b[i];
    return tail;
}

QPM_FN float qpm_dot8_tree(const float s[8], float tail)
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

QPM_FN float qpm_dot8(const float *a, const float *b, int n)
{
    float s[8];
    for (int j = 0; j < 8; j++) s[j] = qpm_dot8_part(a, b, n, j);
    return qpm_dot8_tree(s, qpm_dot8_tail(a, b, n));
}

/* Column sums over many rows (LayerNorm weight/bias gradients, bias
 * gradients) in a fixed two-level order, so the GPU can spread them over the
 * whole device without atomics: rows in chunks of QPM_SUM_ROWS, each chunk
 * summed in row order from 0, the chunk sums added in chunk order from 0.
 * The CPU kernels' column sums (train/model/qp_model_kernels.h QP_ROW_BLOCK) use
 * the same chunks, so on the same inputs the two give the same bits
 * (test_cuda_model_math). */
#define QPM_SUM_ROWS 32
QPM_FN int qpm_sum_chunks(int N) { return (N + QPM_SUM_ROWS - 1) / QPM_SUM_ROWS; }

/* exp(x) for x <= 0: the CPU's Cody-Waite reduction and Cephes polynomial,
 * with its fused multiply-adds (fmaf: one rounding on either device). */
QPM_FN float qpm_exp_nonpos(float x)
{
    x = x < -87.0f ? -87.0f : x;
    const float k = fmaf(x, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
    const float r = fmaf(k, 2.12194440e-4f, fmaf(k, -0.693359375f, x));
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r) + 1.0f;
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

/* GELU, GPT-2's tanh approximation: x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * with the CPU's fused multiply-adds. */
QPM_FN float qpm_gelu_arg(float x) { return QPM_GELU_SCALE * fmaf(0.044715f * x * x, x, x); }

QPM_FN float qpm_gelu_fwd(float x)
{
    const float h = 0.5f * x;
    return fmaf(h, qpm_tanh(qpm_gelu_arg(x)), h);
}

/* d gelu(x) / dx (the caller multiplies by dout and accumulates). */
QPM_FN float qpm_gelu_grad(float x)
{
    const float th = qpm_tanh(qpm_gelu_arg(x)), sech2 = fmaf(-th, th, 1.0f);
    return fmaf(0.5f, th, 0.5f) + 0.5f * x * sech2 * QPM_GELU_SCALE * fmaf(3.0f * 0.044715f * x, x, 1.0f);
}

/* Token embedding gradient of channel c, tokens in (b,t) order (the CPU's
 * scatter-add order; one owner per channel, no atomics). */
QPM_FN void qpm_encoder_bwd_token(float *dwte, const float *dout, const int32_t *inp, int BT, int C, int c)
{
    for (int bt = 0; bt < BT; bt++) dwte[(int64_t)inp[bt] * C + c] += dout[(int64_t)bt * C + c];
}

/* Position embedding gradient of (t, c): the sequences in order (the CPU
 * adds them in (b,t) order, so position t sees b = 0, 1, ... in turn). */
QPM_FN void qpm_encoder_bwd_pos(float *dwpe, const float *dout, int B, int T, int C, int t, int c)
{
    float s = dwpe[(int64_t)t * C + c];
    for (int b = 0; b < B; b++) s += dout[((int64_t)b * T + t) * C + c];
    dwpe[(int64_t)t * C + c] = s;
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

/* LayerNorm weight and bias gradients of channel c over rows [i0, i1) in
 * order (dout, inp: N x C; mean, rstd: N): one chunk's sums. */
QPM_FN void qpm_layernorm_bwd_chunk(float *sw, float *sb, const float *dout, const float *inp, const float *mean,
                                    const float *rstd, int i0, int i1, int C, int c)
{
    float w = 0.0f, b = 0.0f;
    for (int i = i0; i < i1; i++) {
        const float d = dout[(int64_t)i * C + c];
        w += (inp[(int64_t)i * C + c] - mean[i]) * rstd[i] * d;
        b += d;
    }
    *sw = w;
    *sb = b;
}

/* dw[c] += the chunk sums of channel c (part_w, part_b: chunk k at k * C + c) in chunk order. */
QPM_FN void qpm_layernorm_bwd_combine(float *dw, float *db, const float *part_w, const float *part_b, int nchunks,
                                      int C, int c)
{
    float w = 0.0f, b = 0.0f;
    for (int k = 0; k < nchunks; k++) {
        w += part_w[(int64_t)k * C + c];
        b += part_b[(int64_t)k * C + c];
    }
    dw[c] += w;
    db[c] += b;
}

/* Both levels for one channel, as the GPU's two kernels compute them. */
QPM_FN void qpm_layernorm_bwd_channel(float *dw, float *db, const float *dout, const float *inp, const float *mean,
                                      const float *rstd, int N, int C, int c)
{
    float w = 0.0f, b = 0.0f;
    for (int k = 0; k < qpm_sum_chunks(N); k++) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
        float cw, cb;
        qpm_layernorm_bwd_chunk(&cw, &cb, dout, inp, mean, rstd, i0, i1, C, c);
        w += cw;
        b += cb;
    }
    dw[c] += w;
    db[c] += b;
}

/* Column n of dY (M x N) summed over rows [i0, i1) in order. */
QPM_FN float qpm_colsum_chunk(const float *dY, int i0, int i1, int N, int n)
{
    float s = 0.0f;
    for (int i = i0; i < i1; i++) s += dY[(int64_t)i * N + n];
    return s;
}

/* db[n] += column sum of dY, in chunks (the bias gradient; part: chunk k at k * N + n). */
QPM_FN void qpm_colsum_combine(float *db, const float *part, int nchunks, int N, int n)
{
    float s = 0.0f;
    for (int k = 0; k < nchunks; k++) s += part[(int64_t)k * N + n];
    db[n] += s;
}

QPM_FN void qpm_colsum(float *db, const float *dY, int M, int N, int n)
{
    float s = 0.0f;
    for (int k = 0; k < qpm_sum_chunks(M); k++) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < M ? i0 + QPM_SUM_ROWS : M;
        s += qpm_colsum_chunk(dY, i0, i1, N, n);
    }
    db[n] += s;
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

/* ---- the Llama (train/model/qp_llama_kernels.c) ----------------------------------- */

/* RMSNorm of one row x[C] into o[C] (gain w); its 1/rms. */
QPM_FN void qpm_rmsnorm_fwd_row(float *o, float *rstd, const float *x, const float *w, int C)
{
    float ss = 0.0f;
    for (int c = 0; c < C; c++) ss += x[c] * x[c];
    const float s = 1.0f / sqrtf(ss / C + 1e-5f);
    for (int c = 0; c < C; c++) o[c] = x[c] * s * w[c];
    *rstd = s;
}

/* dx[C] += the input gradient of one RMSNorm row: s (w d - n mean(w d n)), n = x s. */
QPM_FN void qpm_rmsnorm_bwd_row(float *dx, const float *d, const float *x, const float *w, float s, int C)
{
    float dn_n = 0.0f;
    for (int c = 0; c < C; c++) dn_n += w[c] * d[c] * (x[c] * s);
    dn_n /= C;
    for (int c = 0; c < C; c++) dx[c] += (w[c] * d[c] - (x[c] * s) * dn_n) * s;
}

/* The gain gradient of channel c over rows [i0, i1) in order: one chunk's sum. */
QPM_FN float qpm_rmsnorm_bwd_chunk(const float *dout, const float *inp, const float *rstd, int i0, int i1, int C, int c)
{
    float w = 0.0f;
    for (int i = i0; i < i1; i++) w += inp[(int64_t)i * C + c] * rstd[i] * dout[(int64_t)i * C + c];
    return w;
}

/* dw[c] += the chunk sums of channel c (part: chunk k at k * C + c) in chunk order. */
QPM_FN void qpm_rmsnorm_bwd_combine(float *dw, const float *part, int nchunks, int C, int c)
{
    float w = 0.0f;
    for (int k = 0; k < nchunks; k++) w += part[(int64_t)k * C + c];
    dw[c] += w;
}

/* Both levels for one channel, as the GPU's two kernels compute them. */
QPM_FN void qpm_rmsnorm_bwd_channel(float *dw, const float *dout, const float *inp, const float *rstd, int N, int C,
                                    int c)
{
    float w = 0.0f;
    for (int k = 0; k < qpm_sum_chunks(N); k++) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
        w += qpm_rmsnorm_bwd_chunk(dout, inp, rstd, i0, i1, C, c);
    }
    dw[c] += w;
}

/* Rotary embedding of one pair (x1, x2) by the angle whose cos and sin are
 * c, s (qp_llama_rope_table's); inverse: by minus it (the backward). */
QPM_FN void qpm_rope_pair(float *x1, float *x2, float c, float s, int inverse)
{
    const float a = *x1, b = *x2, sv = inverse ? -s : s;
    *x1 = a * c - b * sv;
    *x2 = b * c + a * sv;
}

/* Pair p of a row of q and k heads (NH + KVH heads of hs; k from koff) at
 * position t: which two elements of the row it rotates, and by which table
 * entry. p < (NH + KVH) hs / 2. */
QPM_FN void qpm_rope_pair_at(int p, int NH, int hs, int64_t koff, int64_t *i1, int64_t *i2, int *freq)
{
    const int half = hs / 2, head = p / half, i = p % half;
    const int64_t base = head < NH ? (int64_t)head * hs : koff + (int64_t)(head - NH) * hs;
    *i1 = base + i, *i2 = base + i + half, *freq = i;
}

/* sigmoid from exp of -|x| (the CPU's exp for x <= 0). */
QPM_FN float qpm_sigmoid(float x)
{
    const float e = qpm_exp_nonpos(-fabsf(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

/* SwiGLU: silu(a) * u. */
QPM_FN float qpm_swiglu_fwd(float a, float u) { return a * qpm_sigmoid(a) * u; }

/* Its gradients from d: da += d u silu'(a), du += d silu(a). */
QPM_FN void qpm_swiglu_bwd(float *da, float *du, float a, float u, float d)
{
    const float sg = qpm_sigmoid(a);
    *du += d * (a * sg);
    *da += d * u * (sg * (1.0f + a * (1.0f - sg)));
}

/* Grouped-query attention on the GPT's attention kernels: the Llama's row of
 * q (C = NH hs), k and v (KVH hs each) widened to the GPT's (3C: every query
 * head its own key and value head, the group's copied). Element j < 3C of
 * the wide row from the narrow row (width C + 2 KVH hs). */
QPM_FN float qpm_gqa_expand(const float *narrow, int64_t j, int C, int NH, int KVH, int hs)
{
    if (j < C) return narrow[j];
    const int part = (int)(j / C), h = (int)(j % C) / hs, d = (int)(j % C) % hs;
    const int kvh = h / (NH / KVH);
    return narrow[C + (int64_t)(part - 1) * KVH * hs + (int64_t)kvh * hs + d];
}

/* Element j of the narrow row's gradient from the wide one's: q's own; a key
 * or value head's the sum over its group's query heads in head order. */
QPM_FN float qpm_gqa_reduce(const float *wide, int64_t j, int C, int NH, int KVH, int hs)
{
    if (j < C) return wide[j];
    const int64_t r = j - C;
    const int part = (int)(r / ((int64_t)KVH * hs)), kvh = (int)(r % ((int64_t)KVH * hs)) / hs, d = (int)(r % hs);
    const int group = NH / KVH;
    float s = 0.0f;
    for (int h = kvh * group; h < (kvh + 1) * group; h++) s += wide[(int64_t)(part + 1) * C + (int64_t)h * hs + d];
    return s;
}

/* Smooth-SwiGLU: the largest |x| of channel j of h (N x H), rows in order
 * (NaN never wins), and the power of two that puts it in [1, 2) (1 for 0 or a
 * non-finite maximum). */
QPM_FN float qpm_col_amax(const float *h, int N, int H, int j)
{
    float mx = 0.0f;
    for (int i = 0; i < N; i++) {
        const float v = fabsf(h[(int64_t)i * H + j]);
        mx = v > mx ? v : mx;
    }
    return mx;
}

QPM_FN float qpm_smooth_scale(float amax)
{
    if (!(amax > 0.0f) || isinf(amax)) return 1.0f;
    int e = 0;
    frexpf(amax, &e);
    e = e < -120 ? -120 : e > 120 ? 120 : e;
    return ldexpf(1.0f, 1 - e);
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
