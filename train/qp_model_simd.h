/* qp_model_simd.h — what the two model kernel files share (qp_model_kernels.c,
 * the GPT; qp_llama_kernels.c, the Llama): GCC vectors of 16 floats, exp for
 * x <= 0, fixed-order row and column sums, blocked attention with an online
 * softmax over any q/k/v layout (grouped-query included), softmax
 * cross-entropy and the precision dispatch's calls with their phase.
 * Internal to train/: static functions, compiled into each copy (baseline and
 * x86-64-v4) of each kernel file, the same operations in the same order in
 * every copy, so the two builds give identical bits. */
#ifndef QP_MODEL_SIMD_H
#define QP_MODEL_SIMD_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_linear.h"
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

/* ---- attention -------------------------------------------------------------- */

/* Where a head's q, k and v sit in a row of the projections (rs floats):
 * NH query heads of hs channels from 0, KVH key and value heads (KVH
 * divides NH; query head h reads key/value head h / (NH / KVH), grouped-query
 * attention) from koff and from voff. The GPT's: rs 3C, koff C, voff 2C, KVH
 * NH. */
typedef struct {
    int64_t rs, koff, voff;
    int NH, KVH, hs;
} qp_att_layout;

static inline int att_kv_head(const qp_att_layout *a, int h) { return h / (a->NH / a->KVH); }

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

/* Acc^T[d] (lanes: query rows) += sum over keys c < nk, in order, of
 * row_{k0+c}[d] * W[c]: the forward's P.V and the backward's dS.K. */
static void accumulate_rows(float *restrict acc, const float *restrict w, const float *rbase, int64_t rs, int k0,
                            int nk, int hs)
{
    for (int d0 = 0; d0 < hs; d0 += KG) {
        const int nd = hs - d0 < KG ? hs - d0 : KG;
        vf a[KG];
        for (int j = 0; j < nd; j++) a[j] = vload(acc + (d0 + j) * QB);
        for (int c = 0; c < nk; c++) {
            const vf p = vload(w + c * QB);
            const float *row = rbase + (int64_t)(k0 + c) * rs + d0;
            for (int j = 0; j < nd; j++) a[j] += row[j] * p;
        }
        for (int j = 0; j < nd; j++) vstore(acc + (d0 + j) * QB, a[j]);
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
 * out (B,T,NH*hs), lse (B,NH,T), qkv (B,T,rs) as laid out by a; scr:
 * att_scratch_floats(hs). */
static void attention_forward_block(float *out, float *lse, const float *qkv, const qp_att_layout *a, int b, int h,
                                    int t0, int T, float *scr)
{
    const int hs = a->hs, NH = a->NH, nq = T - t0 < QB ? T - t0 : QB, tend = t0 + nq;
    const int64_t rs = a->rs, C = (int64_t)NH * hs, kv = (int64_t)att_kv_head(a, h) * hs;
    const float *base = qkv + (int64_t)b * T * rs;
    const float scale = 1.0f / sqrtf((float)hs);
    float *qt = scr, *acc = qt + hs * QB, *st = acc + hs * QB;
    load_qt(qt, base + h * hs, rs, t0, nq, hs);
    for (int i = 0; i < hs * QB; i++) acc[i] = 0.0f;
    vf m = vsplat(-INFINITY), l = vsplat(0.0f);
    for (int k0 = 0; k0 < tend; k0 += KB) {
        const int nk = tend - k0 < KB ? tend - k0 : KB;
        scores(st, qt, base + a->koff + kv, rs, k0, nk, hs, scale);
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
        accumulate_rows(acc, st, base + a->voff + kv, rs, k0, nk, hs); /* acc[d] += sum_c v_c[d] * p_c */
        m = mnew;
    }
    const vf inv = 1.0f / l;
    for (int d = 0; d < hs; d++) {
        const vf o = vload(acc + d * QB) * inv;
        for (int r = 0; r < nq; r++) out[((int64_t)b * T + t0 + r) * C + h * hs + d] = o[r];
    }
    for (int r = 0; r < nq; r++) lse[((int64_t)b * NH + h) * T + t0 + r] = m[r] + logf(l[r]);
}


/* The backward of query head h of one sequence: its dq (written), and the
 * dk, dv of its key/value head (accumulated: the group's heads add in
 * turn), from dout (B,T,NH*hs), the forward's out and lse. */
static void attention_backward_head(float *dqkv, const float *dout, const float *out, const float *lse,
                                    const float *qkv, const qp_att_layout *a, int b, int h, int T, float *scr)
{
    const int hs = a->hs, NH = a->NH;
    const int64_t rs = a->rs, C = (int64_t)NH * hs, kv = (int64_t)att_kv_head(a, h) * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *qb = qkv + (int64_t)b * T * rs + h * hs, *kb = qkv + (int64_t)b * T * rs + a->koff + kv,
                *vb = qkv + (int64_t)b * T * rs + a->voff + kv;
    float *dqb = dqkv + (int64_t)b * T * rs + h * hs, *dkb = dqkv + (int64_t)b * T * rs + a->koff + kv,
          *dvb = dqkv + (int64_t)b * T * rs + a->voff + kv;
    const float *dob = dout + (int64_t)b * T * C + h * hs, *ob = out + (int64_t)b * T * C + h * hs;
    const float *lrow = lse + ((int64_t)b * NH + h) * T;
    float *qt = scr, *dot = qt + hs * QB, *dqt = dot + hs * QB, *st = dqt + hs * QB, *gt = st + KB * QB;
    for (int t0 = 0; t0 < T; t0 += QB) {
        const int nq = T - t0 < QB ? T - t0 : QB, tend = t0 + nq;
        load_qt(qt, qb, rs, t0, nq, hs);
        load_qt(dot, dob, C, t0, nq, hs);
        vf lv = vsplat(0.0f), D = vsplat(0.0f);
        for (int r = 0; r < nq; r++) {
            lv[r] = lrow[t0 + r];
            D[r] = row_dot(dob + (int64_t)(t0 + r) * C, ob + (int64_t)(t0 + r) * C, hs); /* D_r = dout_r . out_r */
        }
        for (int i = 0; i < hs * QB; i++) dqt[i] = 0.0f;
        for (int k0 = 0; k0 < tend; k0 += KB) {
            const int nk = tend - k0 < KB ? tend - k0 : KB;
            scores(st, qt, kb, rs, k0, nk, hs, scale);         /* S */
            scores(gt, dot, vb, rs, k0, nk, hs, 1.0f);     /* dP = v . dout */
            for (int c = 0; c < nk; c++) {
                const vi ok = key_valid(k0, c, nk, t0, nq);
                const vf p = vsel(ok, vexp_nonpos(vload(st + c * QB) - lv), vsplat(0.0f));
                vstore(st + c * QB, p);
                vstore(gt + c * QB, p * (vload(gt + c * QB) - D) * scale); /* dS * scale */
            }
            accumulate_rows(dqt, gt, kb, rs, k0, nk, hs); /* dq_r += sum_c g_c * k_c */
            /* dv_c += sum over rows, in order, of p_rc * dout_r; dk_c likewise with g and q
             * (four keys at a time: eight independent running sums) */
            for (int c0 = 0; c0 < nk; c0 += 4) {
                const int ncg = nk - c0 < 4 ? nk - c0 : 4;
                int d = 0;
                for (; d + VL <= hs; d += VL) {
                    vf av[4], ak[4];
                    for (int j = 0; j < ncg; j++) {
                        av[j] = vload(dvb + (int64_t)(k0 + c0 + j) * rs + d);
                        ak[j] = vload(dkb + (int64_t)(k0 + c0 + j) * rs + d);
                    }
                    for (int r = 0; r < nq; r++) {
                        const vf dov = vload(dob + (int64_t)(t0 + r) * C + d), qv = vload(qb + (int64_t)(t0 + r) * rs + d);
                        for (int j = 0; j < ncg; j++) {
                            av[j] += st[(c0 + j) * QB + r] * dov;
                            ak[j] += gt[(c0 + j) * QB + r] * qv;
                        }
                    }
                    for (int j = 0; j < ncg; j++) {
                        vstore(dvb + (int64_t)(k0 + c0 + j) * rs + d, av[j]);
                        vstore(dkb + (int64_t)(k0 + c0 + j) * rs + d, ak[j]);
                    }
                }
                for (; d < hs; d++)
                    for (int j = 0; j < ncg; j++) {
                        float *dk = dkb + (int64_t)(k0 + c0 + j) * rs, *dv = dvb + (int64_t)(k0 + c0 + j) * rs;
                        float av = dv[d], ak = dk[d];
                        for (int r = 0; r < nq; r++) {
                            av += st[(c0 + j) * QB + r] * dob[(int64_t)(t0 + r) * C + d];
                            ak += gt[(c0 + j) * QB + r] * qb[(int64_t)(t0 + r) * rs + d];
                        }
                        dv[d] = av;
                        dk[d] = ak;
                    }
            }
        }
        for (int d = 0; d < hs; d++)
            for (int r = 0; r < nq; r++) dqb[(int64_t)(t0 + r) * rs + d] = dqt[d * QB + r];
    }
}

/* dq of every query head of key/value head kvh of sequence b (written), and
 * that head's dk and dv (written: zeroed, then each query head of the group
 * adds its share in head order). */
static void attention_backward_kv(float *dqkv, const float *dout, const float *out, const float *lse,
                                  const float *qkv, const qp_att_layout *a, int b, int kvh, int T, float *scr)
{
    const int hs = a->hs, group = a->NH / a->KVH;
    float *dkb = dqkv + (int64_t)b * T * a->rs + a->koff + (int64_t)kvh * hs,
          *dvb = dqkv + (int64_t)b * T * a->rs + a->voff + (int64_t)kvh * hs;
    for (int t = 0; t < T; t++) {
        zero_rows(dkb + (int64_t)t * a->rs, hs);
        zero_rows(dvb + (int64_t)t * a->rs, hs);
    }
    for (int h = kvh * group; h < (kvh + 1) * group; h++)
        attention_backward_head(dqkv, dout, out, lse, qkv, a, b, h, T, scr);
}

/* out (B,T,NH*hs) = softmax(q k^T / sqrt(hs), causal) v per head; lse
 * (B,NH,T). Worksharing loops: call inside a parallel region. */
static void attention_forward_tasks(float *out, float *lse, const float *qkv, const qp_att_layout *a, int B, int T)
{
    const int NH = a->NH, nqb = (T + QB - 1) / QB;
    float *scr = aligned_alloc(64, (size_t)qp_pad16(att_scratch_floats(a->hs)) * sizeof(float));
    /* later query blocks see more keys: hand them out longest first */
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < B * NH * nqb; task++) {
        const int qb = nqb - 1 - task / (B * NH), bh = task % (B * NH);
        attention_forward_block(out, lse, qkv, a, bh / NH, bh % NH, qb * QB, T, scr);
    }
    free(scr);
}

/* dqkv (B,T,rs) = the gradient of attention_forward_tasks' input (q, k and v
 * written, not accumulated). Worksharing loops: call inside a parallel
 * region. */
static void attention_backward_tasks(float *dqkv, const float *dout, const float *out, const float *lse,
                                     const float *qkv, const qp_att_layout *a, int B, int T)
{
    const int KVH = a->KVH;
    float *scr = aligned_alloc(64, (size_t)qp_pad16(att_scratch_floats(a->hs)) * sizeof(float));
#pragma omp for schedule(static)
    for (int bk = 0; bk < B * KVH; bk++) attention_backward_kv(dqkv, dout, out, lse, qkv, a, bk / KVH, bk % KVH, T, scr);
    free(scr);
}

/* ---- the loss, the token embedding's gradient -------------------------------- */

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

/* The loss gradient in place of the probabilities: (p - onehot) * dloss. */
static void softmax_crossentropy_backward(float *probs, const int32_t *targets, float dloss, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *p = probs + (int64_t)i * V;
        int v = 0;
        for (; v + VL <= V; v += VL) vstore(p + v, vload(p + v) * dloss);
        for (; v < V; v++) p[v] *= dloss;
        p[targets[i]] -= dloss;
    }
}


/* Token (and, when dwpe is not NULL, position) embeddings' gradients:
 * dwte[inp] += dres, dwpe[t] += dres, by channel slices so that every sum
 * runs in (b,t) order. */
static void encoder_backward(float *dwte, float *dwpe, const float *dres, const int32_t *inp, int N, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += VL) {
        const int nc = C - c0 < VL ? C - c0 : VL;
        for (int i = 0; i < N; i++) {
            const float *d = dres + (int64_t)i * C + c0;
            float *te = dwte + (int64_t)inp[i] * C + c0;
            for (int c = 0; c < nc; c++) te[c] += d[c];
            if (!dwpe) continue;
            float *pe = dwpe + (int64_t)(i % T) * C + c0;
            for (int c = 0; c < nc; c++) pe[c] += d[c];
        }
    }
}

/* The mean of the per-position losses (summed in double, in order) as the
 * model's mean_loss; -1 without targets. */
static void set_mean_loss(qp_gpt *m, const float *losses, const int32_t *targets, int N)
{
    if (!targets) {
        m->mean_loss = -1.0f;
        return;
    }
    double s = 0.0;
    for (int i = 0; i < N; i++) s += losses[i];
    m->mean_loss = (float)(s / N);
}

/* ---- the precision dispatch -------------------------------------------------- */

/* The phase profile (qp_prof.h): each layer call counts for its phase; the
 * dispatch's own time is quantization, the GEMMs inside it count as GEMM. */
#define PHASE(p, call) (qp_prof_push(p), call, qp_prof_pop())

/* Y = X W^T through the dispatch; a block GEMM's input's statistics go to
 * the model's observer first when it observes (qp_gpt.observe). */
static int linear_forward(qp_gpt *m, qp_linear *lin, int layer, qp_gemm_id g, float *Y, const float *X, const float *W,
                          int M, int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    if (m->observe && m->on_input && g != QP_GEMM_HEAD) {
        qp_outlier_row row;
        qp_outlier_stats(X, M, IC, m->ocols, m->oscratch, &row);
        row.step = -1, row.layer = layer, row.gemm = qp_gemm_name(g);
        m->on_input(&row, m->observer_user);
    }
    const int rc = qp_linear_forward(lin, layer, g, Y, X, W, NULL, M, IC, OC);
    qp_prof_pop();
    return rc;
}

static int linear_backward(qp_linear *lin, int layer, qp_gemm_id g, float *dX, float *dW, const float *dY,
                           const float *X, const float *W, int M, int IC, int OC, int dx_accumulate)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc = qp_linear_backward(lin, layer, g, dX, dW, NULL, dY, X, W, M, IC, OC, dx_accumulate);
    qp_prof_pop();
    return rc;
}

#endif
