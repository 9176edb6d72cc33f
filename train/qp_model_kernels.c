/* qp_model_kernels.c — the GPT's layers and its forward and backward passes.
 *
 * Layer functions follow llm.c's structure (x_forward / x_backward, shapes
 * in a comment), fused where that saves a pass over memory: the residual
 * add with the bias of the projection before it and the LayerNorm after it,
 * the MLP bias with GELU, the bias and norm gradients with the row pass
 * that produces their inputs, the loss gradient in place of the
 * probabilities. Attention is blocked with an online softmax (FlashAttention
 * forward and backward): no T x T matrix is kept, only each query row's
 * log-sum-exp. The linear layers get no bias from here (NULL): the fused row
 * kernels add it and sum its gradient.
 *
 * Threads: each step of a layer is one OpenMP parallel region (its loops are
 * worksharing loops inside it), between the GEMMs, which run outside any
 * region. Work is split into pieces whose results do not depend on which
 * thread runs them; reductions run in a fixed order — a row's sums over
 * explicit 16-lane vectors combined by a fixed tree, column sums over fixed
 * blocks of rows summed in block order — so results are the same for any
 * thread count and deterministic.
 *
 * This file is compiled twice: for the baseline x86-64 and for x86-64-v4
 * (AVX-512), with QP_KERNEL naming the two copies; qp_model.c picks one at
 * run time. Vectors are GCC vector extensions of 16 floats: the same
 * element-wise operations in both copies (four SSE registers per vector in
 * one, one AVX-512 register in the other, no FMA contraction), so the two
 * copies give identical bits. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_model_kernels.h"
#include "qp_prof.h"

/* ---- vectors ------------------------------------------------------------- */

/* Static functions pass 64-byte vectors by value; the baseline copy's ABI for
 * that differs from an AVX-512 build's, which is nothing to warn about here. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define VL 16
typedef float vf __attribute__((vector_size(VL * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(VL * sizeof(int32_t))));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

static inline vf vsplat(float x)
{
    vf v;
    for (int i = 0; i < VL; i++) v[i] = x;
    return v;
}

/* lanes of a where mask is set (-1), else b */
static inline vf vsel(vi mask, vf a, vf b) { return (vf)(((vi)a & mask) | ((vi)b & ~mask)); }
static inline vf vmax(vf a, vf b) { return vsel(a > b, a, b); }

/* Sum of the 16 lanes by a fixed tree. */
static inline float vsum(vf v)
{
    for (int w = VL / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) v[i] = v[i] + v[i + w];
    return v[0];
}

/* Sum of x[0..n): 16 running sums, then their tree, then the tail in order. */
static inline float row_sum(const float *x, int n)
{
    vf acc = vsplat(0.0f);
    int i = 0;
    for (; i + VL <= n; i += VL) acc += vload(x + i);
    float s = vsum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* Dot product of x[0..n) and y[0..n), summed like row_sum. */
static inline float row_dot(const float *x, const float *y, int n)
{
    vf acc = vsplat(0.0f);
    int i = 0;
    for (; i + VL <= n; i += VL) acc += vload(x + i) * vload(y + i);
    float s = vsum(acc);
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

/* exp(x) for x <= 0 (Cody-Waite reduction, Cephes' polynomial, ~1 ulp): plain
 * arithmetic, so it vectorizes, where libm's expf/tanhf calls do not. */
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
    union {
        uint32_t u;
        float f;
    } two_k = {(uint32_t)((int32_t)k + 127) << 23};
    return p * two_k.f;
}

/* exp_nonpos on every lane: the same operations in the same order. */
static inline vf vexp_nonpos(vf x)
{
    x = vmax(x, vsplat(-87.0f));
    const vf k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const vf r = x - k * 0.693359375f + k * 2.12194440e-4f;
    vf p = vsplat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const vi two_k = (__builtin_convertvector(k, vi) + 127) << 23;
    return p * (vf)two_k;
}

static inline float tanh_fast(float u)
{
    const float e = exp_nonpos(-2.0f * fabsf(u)), t = (1.0f - e) / (1.0f + e);
    return u < 0.0f ? -t : t;
}

static inline float gelu(float x)
{
    /* GPT-2's tanh approximation */
    return 0.5f * x * (1.0f + tanh_fast(GELU_SCALE * (x + 0.044715f * x * x * x)));
}

static inline float gelu_grad(float x)
{
    const float u = GELU_SCALE * (x + 0.044715f * x * x * x);
    const float th = tanh_fast(u), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

/* The same three on every lane, operation for operation. */
static inline vf vtanh_fast(vf u)
{
    const vf au = (vf)((vi)u & 0x7fffffff), e = vexp_nonpos(-2.0f * au), t = (1.0f - e) / (1.0f + e);
    return vsel(u < 0.0f, -t, t);
}

static inline vf vgelu(vf x) { return 0.5f * x * (1.0f + vtanh_fast(GELU_SCALE * (x + 0.044715f * x * x * x))); }

static inline vf vgelu_grad(vf x)
{
    const vf u = GELU_SCALE * (x + 0.044715f * x * x * x);
    const vf th = vtanh_fast(u), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
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
        acc += d * d;
    }
    float v = vsum(acc);
    for (; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const float s = 1.0f / sqrtf(v + 1e-5f);
    for (c = 0; c + VL <= C; c += VL) vstore(out + c, (vload(x + c) - m) * s * vload(w + c) + vload(b + c));
    for (; c < C; c++) out[c] = (x[c] - m) * s * w[c] + b[c];
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

/* acc += x over n columns */
static inline void add_row(float *restrict acc, const float *restrict x, int n)
{
    int c = 0;
    for (; c + VL <= n; c += VL) vstore(acc + c, vload(acc + c) + vload(x + c));
    for (; c < n; c++) acc[c] += x[c];
}

/* Column sums of row-block partials: dst[c] += sum over blocks, in block
 * order, of part[blk * stride + c]. Called inside a parallel region. */
static void reduce_blocks(float *restrict dst, const float *restrict part, int nblk, int64_t stride, int n)
{
#pragma omp for schedule(static)
    for (int c0 = 0; c0 < n; c0 += VL) {
        const int c1 = c0 + VL < n ? c0 + VL : n;
        for (int c = c0; c < c1; c++) {
            float s = 0.0f;
            for (int k = 0; k < nblk; k++) s += part[k * stride + c];
            dst[c] += s;
        }
    }
}

static void zero_rows(float *p, int64_t n) { memset(p, 0, (size_t)n * sizeof(float)); }

/* ---- embeddings and the residual stream's LayerNorms --------------------- */

/* Forward of a block's input LayerNorm (ln1 or the final lnf), fused with
 * what makes its input:
 *   first block: res = wte[inp] + wpe[t]                        (the encoder)
 *   later:       res = prev + (y + yb)      (the MLP's residual add with its bias)
 * res, out (N,C); mean, rstd (N). */
static void residual_layernorm_forward(float *res, float *out, float *mean, float *rstd, const float *prev,
                                       const float *y, const float *yb, const int32_t *inp, const float *wte,
                                       const float *wpe, const float *w, const float *b, int N, int T, int C)
{
#pragma omp parallel for schedule(static)
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
    }
}

/* ---- attention -------------------------------------------------------------- */

/* Blocks: QB query rows are the lanes of a vector, keys go KB at a time. */
#define QB VL
#define KB 32
#define KG 8 /* keys of one register block */

/* Scratch floats of one attention task (head size hs). */
static int64_t att_scratch_floats(int hs) { return (int64_t)hs * QB * 4 + 2 * KB * QB + 4 * QB; }

/* Q^T (hs x QB) of query rows t0 .. t0+nq-1 (zero rows past nq). */
static void load_qt(float *restrict qt, const float *base, int64_t rs, int t0, int nq, int hs)
{
    for (int r = 0; r < QB; r++)
        for (int d = 0; d < hs; d++) qt[d * QB + r] = r < nq ? base[(int64_t)(t0 + r) * rs + d] : 0.0f;
}

/* St[c] (lanes: query rows) = scale * k_{k0+c} . q_r for c < nk (rows with
 * c >= nk are computed from key k0, a valid address, and masked later). */
static void scores(float *restrict st, const float *restrict qt, const float *kbase, int64_t rs, int k0, int nk,
                   int hs, float scale)
{
    for (int c0 = 0; c0 < KB && c0 < nk; c0 += KG) {
        const float *k[KG];
        for (int j = 0; j < KG; j++) k[j] = kbase + (int64_t)(c0 + j < nk ? k0 + c0 + j : k0) * rs;
        vf s[KG];
        for (int j = 0; j < KG; j++) s[j] = vsplat(0.0f);
        for (int d = 0; d < hs; d++) {
            const vf q = vload(qt + d * QB);
            for (int j = 0; j < KG; j++) s[j] += k[j][d] * q;
        }
        for (int j = 0; j < KG; j++) vstore(st + (c0 + j) * QB, s[j] * scale);
    }
}

/* The causal mask of key k0+c against query rows t0+r (r < nq). */
static inline vi key_valid(int k0, int c, int nk, int t0, int nq)
{
    vi r;
    for (int i = 0; i < VL; i++) r[i] = i;
    const vi ok = (r >= (k0 + c - t0)) & (r < nq);
    return c < nk ? ok : (vi){0};
}

/* One task of the forward: query rows [t0, t0+QB) of head h of sequence b.
 * out (B,T,C), lse (B,NH,T), qkv (B,T,3C); scr: att_scratch_floats(hs). */
static void attention_forward_block(float *out, float *lse, const float *qkv, int b, int h, int t0, int T, int C,
                                    int NH, float *scr)
{
    const int hs = C / NH, nq = T - t0 < QB ? T - t0 : QB, tend = t0 + nq;
    const int64_t rs = 3 * (int64_t)C;
    const float *base = qkv + (int64_t)b * T * rs;
    const float scale = 1.0f / sqrtf((float)hs);
    float *qt = scr, *acc = qt + hs * QB, *st = acc + hs * QB;
    load_qt(qt, base + h * hs, rs, t0, nq, hs);
    for (int i = 0; i < hs * QB; i++) acc[i] = 0.0f;
    vf m = vsplat(-INFINITY), l = vsplat(0.0f);
    for (int k0 = 0; k0 < tend; k0 += KB) {
        const int nk = tend - k0 < KB ? tend - k0 : KB;
        scores(st, qt, base + C + h * hs, rs, k0, nk, hs, scale);
        vf mnew = m;
        for (int c = 0; c < nk; c++) mnew = vsel(key_valid(k0, c, nk, t0, nq), vmax(mnew, vload(st + c * QB)), mnew);
        const vf alpha = vexp_nonpos(m - mnew);
        l *= alpha;
        for (int d = 0; d < hs; d++) vstore(acc + d * QB, vload(acc + d * QB) * alpha);
        for (int c = 0; c < nk; c++) {
            const vf p = vsel(key_valid(k0, c, nk, t0, nq), vexp_nonpos(vload(st + c * QB) - mnew), vsplat(0.0f));
            vstore(st + c * QB, p);
            l += p;
        }
        /* acc[d] += sum over keys, in order, of v_c[d] * p_c */
        const float *vbase = base + 2 * C + h * hs;
        for (int d0 = 0; d0 < hs; d0 += KG) {
            const int nd = hs - d0 < KG ? hs - d0 : KG;
            vf a[KG];
            for (int j = 0; j < nd; j++) a[j] = vload(acc + (d0 + j) * QB);
            for (int c = 0; c < nk; c++) {
                const vf p = vload(st + c * QB);
                const float *v = vbase + (int64_t)(k0 + c) * rs + d0;
                for (int j = 0; j < nd; j++) a[j] += v[j] * p;
            }
            for (int j = 0; j < nd; j++) vstore(acc + (d0 + j) * QB, a[j]);
        }
        m = mnew;
    }
    const vf inv = 1.0f / l;
    for (int d = 0; d < hs; d++) {
        const vf o = vload(acc + d * QB) * inv;
        for (int r = 0; r < nq; r++) out[((int64_t)b * T + t0 + r) * C + h * hs + d] = o[r];
    }
    for (int r = 0; r < nq; r++) lse[((int64_t)b * NH + h) * T + t0 + r] = m[r] + logf(l[r]);
}

/* out (B,T,C) = softmax(q k^T / sqrt(hs), causal) v per head; lse (B,NH,T);
 * qkv (B,T,3C) gets its bias qkvb (3C) added first. */
static void attention_forward(float *out, float *lse, float *qkv, const float *qkvb, int B, int T, int C, int NH)
{
    const int hs = C / NH, nqb = (T + QB - 1) / QB;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < B * T; i++) add_row(qkv + (int64_t)i * 3 * C, qkvb, 3 * C);
        float *scr = aligned_alloc(64, (size_t)qp_pad16(att_scratch_floats(hs)) * sizeof(float));
        /* later query blocks see more keys: hand them out longest first */
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < B * NH * nqb; task++) {
            const int qb = nqb - 1 - task / (B * NH), bh = task % (B * NH);
            attention_forward_block(out, lse, qkv, bh / NH, bh % NH, qb * QB, T, C, NH, scr);
        }
        free(scr);
    }
}

/* The backward of one head of one sequence: dq, dk, dv of head h (written,
 * not accumulated), from dout (B,T,C), the forward's out and lse. */
static void attention_backward_head(float *dqkv, const float *dout, const float *out, const float *lse,
                                    const float *qkv, int b, int h, int T, int C, int NH, float *scr)
{
    const int hs = C / NH;
    const int64_t rs = 3 * (int64_t)C;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *base = qkv + (int64_t)b * T * rs + h * hs;
    float *dbase = dqkv + (int64_t)b * T * rs + h * hs;
    const float *dob = dout + (int64_t)b * T * C + h * hs, *ob = out + (int64_t)b * T * C + h * hs;
    const float *lrow = lse + ((int64_t)b * NH + h) * T;
    float *qt = scr, *dot = qt + hs * QB, *dqt = dot + hs * QB, *st = dqt + hs * QB, *gt = st + KB * QB;
    for (int t = 0; t < T; t++)
        for (int k = 0; k < 3; k++) zero_rows(dbase + (int64_t)t * rs + k * C, hs);
    for (int t0 = 0; t0 < T; t0 += QB) {
        const int nq = T - t0 < QB ? T - t0 : QB, tend = t0 + nq;
        load_qt(qt, base, rs, t0, nq, hs);
        load_qt(dot, dob, C, t0, nq, hs);
        vf lv = vsplat(0.0f), D = vsplat(0.0f);
        for (int r = 0; r < nq; r++) {
            lv[r] = lrow[t0 + r];
            D[r] = row_dot(dob + (int64_t)(t0 + r) * C, ob + (int64_t)(t0 + r) * C, hs); /* D_r = dout_r . out_r */
        }
        for (int i = 0; i < hs * QB; i++) dqt[i] = 0.0f;
        for (int k0 = 0; k0 < tend; k0 += KB) {
            const int nk = tend - k0 < KB ? tend - k0 : KB;
            scores(st, qt, base + C, rs, k0, nk, hs, scale);         /* S */
            scores(gt, dot, base + 2 * C, rs, k0, nk, hs, 1.0f);     /* dP = v . dout */
            for (int c = 0; c < nk; c++) {
                const vi ok = key_valid(k0, c, nk, t0, nq);
                const vf p = vsel(ok, vexp_nonpos(vload(st + c * QB) - lv), vsplat(0.0f));
                vstore(st + c * QB, p);
                vstore(gt + c * QB, p * (vload(gt + c * QB) - D) * scale); /* dS * scale */
            }
            /* dq_r += sum over keys, in order, of g_c * k_c */
            for (int d0 = 0; d0 < hs; d0 += KG) {
                const int nd = hs - d0 < KG ? hs - d0 : KG;
                vf a[KG];
                for (int j = 0; j < nd; j++) a[j] = vload(dqt + (d0 + j) * QB);
                for (int c = 0; c < nk; c++) {
                    const vf g = vload(gt + c * QB);
                    const float *k = base + C + (int64_t)(k0 + c) * rs + d0;
                    for (int j = 0; j < nd; j++) a[j] += k[j] * g;
                }
                for (int j = 0; j < nd; j++) vstore(dqt + (d0 + j) * QB, a[j]);
            }
            /* dv_c += sum over rows, in order, of p_rc * dout_r; dk_c likewise with g and q
             * (four keys at a time: eight independent running sums) */
            for (int c0 = 0; c0 < nk; c0 += 4) {
                const int ncg = nk - c0 < 4 ? nk - c0 : 4;
                int d = 0;
                for (; d + VL <= hs; d += VL) {
                    vf av[4], ak[4];
                    for (int j = 0; j < ncg; j++) {
                        av[j] = vload(dbase + 2 * C + (int64_t)(k0 + c0 + j) * rs + d);
                        ak[j] = vload(dbase + C + (int64_t)(k0 + c0 + j) * rs + d);
                    }
                    for (int r = 0; r < nq; r++) {
                        const vf dov = vload(dob + (int64_t)(t0 + r) * C + d), qv = vload(base + (int64_t)(t0 + r) * rs + d);
                        for (int j = 0; j < ncg; j++) {
                            av[j] += st[(c0 + j) * QB + r] * dov;
                            ak[j] += gt[(c0 + j) * QB + r] * qv;
                        }
                    }
                    for (int j = 0; j < ncg; j++) {
                        vstore(dbase + 2 * C + (int64_t)(k0 + c0 + j) * rs + d, av[j]);
                        vstore(dbase + C + (int64_t)(k0 + c0 + j) * rs + d, ak[j]);
                    }
                }
                for (; d < hs; d++)
                    for (int j = 0; j < ncg; j++) {
                        float *dk = dbase + C + (int64_t)(k0 + c0 + j) * rs, *dv = dbase + 2 * C + (int64_t)(k0 + c0 + j) * rs;
                        float av = dv[d], ak = dk[d];
                        for (int r = 0; r < nq; r++) {
                            av += st[(c0 + j) * QB + r] * dob[(int64_t)(t0 + r) * C + d];
                            ak += gt[(c0 + j) * QB + r] * base[(int64_t)(t0 + r) * rs + d];
                        }
                        dv[d] = av;
                        dk[d] = ak;
                    }
            }
        }
        for (int d = 0; d < hs; d++)
            for (int r = 0; r < nq; r++) dbase[(int64_t)(t0 + r) * rs + d] = dqt[d * QB + r];
    }
}

/* dqkv (B,T,3C) = the gradient of attention_forward's input (written, not
 * accumulated); the bias gradient dqkvb (3C) += its column sums; dzero
 * (B*T, C) zeroed for the next GEMM's accumulation. */
static void attention_backward(float *dqkv, float *dqkvb, float *part, const float *dout, const float *out,
                               const float *lse, const float *qkv, float *dzero, int B, int T, int C, int NH)
{
    const int hs = C / NH, BT = B * T, nblk = (BT + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
#pragma omp parallel
    {
        float *scr = aligned_alloc(64, (size_t)qp_pad16(att_scratch_floats(hs)) * sizeof(float));
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++)
            attention_backward_head(dqkv, dout, out, lse, qkv, bh / NH, bh % NH, T, C, NH, scr);
        free(scr);
#pragma omp for schedule(static)
        for (int k = 0; k < nblk; k++) {
            float *pb = part + (int64_t)k * 3 * C;
            zero_rows(pb, 3 * C);
            for (int i = k * QP_ROW_BLOCK; i < BT && i < (k + 1) * QP_ROW_BLOCK; i++) {
                add_row(pb, dqkv + (int64_t)i * 3 * C, 3 * C);
                zero_rows(dzero + (int64_t)i * C, C);
            }
        }
        reduce_blocks(dqkvb, part, nblk, 3 * C, 3 * C);
    }
}

/* ---- the MLP's nonlinearity, the loss ----------------------------------- */

/* fchg (N, H) = gelu(fch + fcb); fch is kept without the bias (the
 * backward adds it again: one stream less to write). */
static void bias_gelu_forward(const float *fch, float *fchg, const float *fcb, int N, int H)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = fch + (int64_t)i * H;
        float *y = fchg + (int64_t)i * H;
        int c = 0;
        for (; c + VL <= H; c += VL) vstore(y + c, vgelu(vload(x + c) + vload(fcb + c)));
        for (; c < H; c++) y[c] = gelu(x[c] + fcb[c]);
    }
}

/* dfch (N, H) *= gelu'(fch + fcb), in place; dfcb += its column sums; dzero
 * (N, Cz) is zeroed for the next GEMM's accumulation. */
static void gelu_backward(float *dfch, float *dfcb, float *part, const float *fch, const float *fcb, float *dzero,
                          int Cz, int N, int H)
{
    const int nblk = (N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int k = 0; k < nblk; k++) {
            float *pb = part + (int64_t)k * H;
            zero_rows(pb, H);
            for (int i = k * QP_ROW_BLOCK; i < N && i < (k + 1) * QP_ROW_BLOCK; i++) {
                float *d = dfch + (int64_t)i * H;
                const float *x = fch + (int64_t)i * H;
                int c = 0;
                for (; c + VL <= H; c += VL) vstore(d + c, vgelu_grad(vload(x + c) + vload(fcb + c)) * vload(d + c));
                for (; c < H; c++) d[c] = gelu_grad(x[c] + fcb[c]) * d[c];
                add_row(pb, d, H);
                zero_rows(dzero + (int64_t)i * Cz, Cz);
            }
        }
        reduce_blocks(dfcb, part, nblk, H, H);
    }
}

/* Softmax and cross-entropy per row: probs (N,V), losses (N) (with targets). */
static void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets,
                                         int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *l = logits + (int64_t)i * V;
        float *p = probs + (int64_t)i * V;
        vf mv = vsplat(-INFINITY);
        int v = 0;
        for (; v + VL <= V; v += VL) mv = vmax(mv, vload(l + v));
        float maxv = -INFINITY;
        for (int k = 0; k < VL; k++) maxv = mv[k] > maxv ? mv[k] : maxv;
        for (int k = v; k < V; k++) maxv = l[k] > maxv ? l[k] : maxv;
        vf sv = vsplat(0.0f);
        for (v = 0; v + VL <= V; v += VL) {
            const vf e = vexp_nonpos(vload(l + v) - maxv);
            vstore(p + v, e);
            sv += e;
        }
        float sum = vsum(sv);
        for (; v < V; v++) sum += p[v] = exp_nonpos(l[v] - maxv);
        const float inv = 1.0f / sum;
        for (v = 0; v + VL <= V; v += VL) vstore(p + v, vload(p + v) * inv);
        for (; v < V; v++) p[v] *= inv;
        /* -log p_target, without the rounding of p */
        if (targets) losses[i] = logf(sum) - (l[targets[i]] - maxv);
    }
}

/* ---- the model ------------------------------------------------------------ */

/* The phase profile (qp_prof.h): each layer call counts for its phase; the
 * dispatch's own time is quantization, the GEMMs inside it count as GEMM. */
#define PHASE(p, call) (qp_prof_push(p), call, qp_prof_pop())

static int linear_forward(qp_linear *lin, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, int M,
                          int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc = qp_linear_forward(lin, layer, g, Y, X, W, NULL, M, IC, OC);
    qp_prof_pop();
    return rc;
}

static int linear_backward(qp_linear *lin, int layer, qp_gemm_id g, float *dX, float *dW, const float *dY,
                           const float *X, const float *W, int M, int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc = qp_linear_backward(lin, layer, g, dX, dW, NULL, dY, X, W, M, IC, OC);
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
    for (int l = 0; l < L; l++) {
        const int64_t o = (int64_t)l * BT;
        float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        float *ln1 = a->ln1 + o * C, *qkv = a->qkv + o * 3 * C, *atty = a->atty + o * C;
        float *res2 = a->residual2 + o * C, *ln2 = a->ln2 + o * C;
        float *fch = a->fch + o * 4 * C, *fchg = a->fch_gelu + o * 4 * C;
        /* the residual stream into this block: the embeddings, or the last block's output */
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_forward(residual, ln1, a->ln1_mean + o, a->ln1_rstd + o,
                                         l ? a->residual2 + (o - BT) * C : NULL, a->fcproj,
                                         l ? p->fcprojb + (l - 1) * C : NULL, l ? NULL : inputs, p->wte, p->wpe,
                                         p->ln1w + l * C, p->ln1b + l * C, BT, T, C));
        if (linear_forward(lin, l, QP_GEMM_QKV, qkv, ln1, p->qkvw + (int64_t)l * 3 * C * C, BT, C, 3 * C)) return -1;
        PHASE(QP_PHASE_ATTN, attention_forward(atty, a->att_lse + (int64_t)l * B * NH * T, qkv, p->qkvb + l * 3 * C,
                                               B, T, C, NH));
        if (linear_forward(lin, l, QP_GEMM_ATTPROJ, a->attproj, atty, p->attprojw + (int64_t)l * C * C, BT, C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_forward(res2, ln2, a->ln2_mean + o, a->ln2_rstd + o, residual, a->attproj,
                                         p->attprojb + l * C, NULL, NULL, NULL, p->ln2w + l * C, p->ln2b + l * C, BT,
                                         T, C));
        if (linear_forward(lin, l, QP_GEMM_FC, fch, ln2, p->fcw + (int64_t)l * 4 * C * C, BT, C, 4 * C)) return -1;
        PHASE(QP_PHASE_ROWOPS, bias_gelu_forward(fch, fchg, p->fcb + l * 4 * C, BT, 4 * C));
        if (linear_forward(lin, l, QP_GEMM_FCPROJ, a->fcproj, fchg, p->fcprojw + (int64_t)l * 4 * C * C, BT, 4 * C,
                           C))
            return -1;
    }
    const int64_t last = (int64_t)(L - 1) * BT * C;
    PHASE(QP_PHASE_ROWOPS,
          residual_layernorm_forward(a->residual3 + last, a->lnf, a->lnf_mean, a->lnf_rstd, a->residual2 + last,
                                     a->fcproj, p->fcprojb + (L - 1) * C, NULL, NULL, NULL, p->lnfw, p->lnfb, BT, T,
                                     C));
    if (linear_forward(lin, L, QP_GEMM_HEAD, a->logits, a->lnf, p->wte, BT, C, V)) return -1;
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

/* The backward of a LayerNorm whose input is the residual stream, fused with
 * the residual add: dres (+)= LN's input gradient of dln (accumulate: the
 * stream's gradient from above is already in dres); dw, db += the norm's
 * weight and bias gradients; dbias (when not NULL) += the column sums of the
 * resulting dres (the bias of the projection that wrote that residual add);
 * dzero (N, Cz) is zeroed for the next GEMM's accumulation. */
static void residual_layernorm_backward(float *dres, float *dw, float *db, float *dbias, float *part,
                                        const float *dln, const float *x, const float *w, const float *mean,
                                        const float *rstd, float *dzero, int Cz, int accumulate, int N, int C)
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
                if (dzero) zero_rows(dzero + (int64_t)i * Cz, Cz);
            }
        }
        reduce_blocks(dw, part, nblk, stride, C);
        reduce_blocks(db, part + C, nblk, stride, C);
        if (dbias) reduce_blocks(dbias, part + 2 * C, nblk, stride, C);
    }
}

/* The loss gradient in place of the probabilities: (p - onehot) * dloss; dzero
 * (N, Cz) zeroed for the head's accumulation. */
static void softmax_crossentropy_backward(float *probs, const int32_t *targets, float dloss, float *dzero, int Cz,
                                          int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *p = probs + (int64_t)i * V;
        int v = 0;
        for (; v + VL <= V; v += VL) vstore(p + v, vload(p + v) * dloss);
        for (; v < V; v++) p[v] *= dloss;
        p[targets[i]] -= dloss;
        zero_rows(dzero + (int64_t)i * Cz, Cz);
    }
}

/* Token and position embeddings' gradients: dwte[inp] += dres, dwpe[t] +=
 * dres, by channel slices so that every sum runs in (b,t) order. */
static void encoder_backward(float *dwte, float *dwpe, const float *dres, const int32_t *inp, int N, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += VL) {
        const int nc = C - c0 < VL ? C - c0 : VL;
        for (int i = 0; i < N; i++) {
            const float *d = dres + (int64_t)i * C + c0;
            float *te = dwte + (int64_t)inp[i] * C + c0, *pe = dwpe + (int64_t)(i % T) * C + c0;
            for (int c = 0; c < nc; c++) {
                te[c] += d[c];
                pe[c] += d[c];
            }
        }
    }
}

int QP_KERNEL(qp_gpt_backward)(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets,
                               float loss_scale)
{
    const int B = m->B, T = m->T, L = m->cfg.layers, C = m->cfg.dim, NH = m->cfg.heads, V = m->cfg.vocab,
              BT = B * T;
    qp_gpt_params *p = &m->params, *g = &m->grads;
    qp_gpt_acts *a = &m->acts;
    const qp_gpt_bwd_scratch s = qp_gpt_scratch_carve(m->scratch, &m->cfg, B, T);
    PHASE(QP_PHASE_ROWOPS, softmax_crossentropy_backward(a->probs, targets, loss_scale / (float)BT, s.dln, C, BT, V));
    if (linear_backward(lin, L, QP_GEMM_HEAD, s.dln, g->wte, a->probs, a->lnf, p->wte, BT, C, V)) return -1;
    const int64_t last = (int64_t)(L - 1) * BT * C;
    PHASE(QP_PHASE_ROWOPS,
          residual_layernorm_backward(s.dres, g->lnfw, g->lnfb, g->fcprojb + (L - 1) * C, s.part, s.dln,
                                      a->residual3 + last, p->lnfw, a->lnf_mean, a->lnf_rstd, s.dfch, 4 * C, 0, BT,
                                      C));
    for (int l = L - 1; l >= 0; l--) {
        const int64_t o = (int64_t)l * BT;
        const float *residual = l == 0 ? a->encoded : a->residual3 + (o - BT) * C;
        if (linear_backward(lin, l, QP_GEMM_FCPROJ, s.dfch, g->fcprojw + (int64_t)l * 4 * C * C, s.dres,
                            a->fch_gelu + o * 4 * C, p->fcprojw + (int64_t)l * 4 * C * C, BT, 4 * C, C))
            return -1;
        PHASE(QP_PHASE_ROWOPS, gelu_backward(s.dfch, g->fcb + l * 4 * C, s.part, a->fch + o * 4 * C,
                                             p->fcb + l * 4 * C, s.dln, C, BT, 4 * C));
        if (linear_backward(lin, l, QP_GEMM_FC, s.dln, g->fcw + (int64_t)l * 4 * C * C, s.dfch, a->ln2 + o * C,
                            p->fcw + (int64_t)l * 4 * C * C, BT, C, 4 * C))
            return -1;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_backward(s.dres, g->ln2w + l * C, g->ln2b + l * C, g->attprojb + l * C, s.part,
                                          s.dln, a->residual2 + o * C, p->ln2w + l * C, a->ln2_mean + o,
                                          a->ln2_rstd + o, s.datty, C, 1, BT, C));
        if (linear_backward(lin, l, QP_GEMM_ATTPROJ, s.datty, g->attprojw + (int64_t)l * C * C, s.dres,
                            a->atty + o * C, p->attprojw + (int64_t)l * C * C, BT, C, C))
            return -1;
        PHASE(QP_PHASE_ATTN, attention_backward(s.dqkv, g->qkvb + l * 3 * C, s.part, s.datty, a->atty + o * C,
                                                a->att_lse + (int64_t)l * B * NH * T, a->qkv + o * 3 * C, s.dln, B,
                                                T, C, NH));
        if (linear_backward(lin, l, QP_GEMM_QKV, s.dln, g->qkvw + (int64_t)l * 3 * C * C, s.dqkv, a->ln1 + o * C,
                            p->qkvw + (int64_t)l * 3 * C * C, BT, C, 3 * C))
            return -1;
        PHASE(QP_PHASE_ROWOPS,
              residual_layernorm_backward(s.dres, g->ln1w + l * C, g->ln1b + l * C,
                                          l ? g->fcprojb + (l - 1) * C : NULL, s.part, s.dln, residual,
                                          p->ln1w + l * C, a->ln1_mean + o, a->ln1_rstd + o, l ? s.dfch : NULL,
                                          4 * C, 1, BT, C));
    }
    PHASE(QP_PHASE_ROWOPS, encoder_backward(g->wte, g->wpe, s.dres, inputs, BT, T, C));
    return 0;
}
