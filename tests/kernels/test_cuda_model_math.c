/* test_cuda_model_math.c — the GPU model's formulas (kernels/qp_cuda_model_math.h)
 * against the CPU trainer's kernels, without a GPU.
 *
 * The CPU kernels are the static functions of train/qp_model_kernels.c,
 * compiled into this test (a third copy, suffix _mathtest); each is run on
 * random data and compared with the loop of per-row / per-element functions
 * the GPU kernels call, to 1e-6 relative. Then the GPU's pass order
 * (qp_cuda_model_pass.h, the code qp_cuda_model.cu runs) is run with host
 * operations over the same formulas and the CPU dispatch, and the whole
 * forward and backward (losses, probabilities, every parameter gradient,
 * with gradient accumulation) compared with the CPU model's. The GPU differs
 * from this host build of the same code only in libm (expf/logf ulps) and
 * its GEMMs, which the GPU test (test_cuda_train) bounds end to end. */
#define QP_KERNEL_SUFFIX _mathtest
#include "../../train/qp_model_kernels.c"

#include <stdlib.h>

#include "qp_cuda_model_math.h"
#include "qp_cuda_model_pass.h"
#include "qp_gemm.h"
#include "qp_optim.h"
#include "qp_recipe.h"
#include "qp_test.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ull;

static float *randv(int64_t n, float scale)
{
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = scale * qp_test_normal(&rng);
    return v;
}

static float *copyv(const float *x, int64_t n)
{
    float *v = malloc((size_t)n * sizeof(float));
    memcpy(v, x, (size_t)n * sizeof(float));
    return v;
}

/* Largest |a - b| / (1 + |a|) over n; reports the worst index. */
static double max_rel(const float *a, const float *b, int64_t n, int64_t *worst)
{
    double m = 0.0;
    *worst = -1;
    for (int64_t i = 0; i < n; i++) {
        const double d = (a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))) ? 0.0
                         : (isnan(a[i]) || isnan(b[i]) || isinf(a[i]) || isinf(b[i]))
                             ? INFINITY
                             : fabs((double)a[i] - b[i]) / (1.0 + fabs(a[i]));
        if (d > m) m = d, *worst = i;
    }
    return m;
}

#define SAME(name, a, b, n)                                                                              \
    do {                                                                                                 \
        int64_t w_;                                                                                      \
        const double e_ = max_rel(a, b, n, &w_);                                                         \
        CHECK(e_ <= 1e-6, "%s: max relative difference %.3g at %lld (cpu %.9g, shared %.9g)", name, e_, \
              (long long)w_, w_ >= 0 ? (a)[w_] : 0.0, w_ >= 0 ? (b)[w_] : 0.0);                             \
    } while (0)

static void test_gelu(void)
{
    const int64_t n = 20000;
    float *x = randv(n, 4.0f);
    x[0] = 0.0f, x[1] = -30.0f, x[2] = 30.0f, x[3] = 1e-8f, x[4] = -1e-8f, x[5] = 88.0f, x[6] = -88.0f;
    float *y0 = malloc(n * sizeof(float)), *y1 = malloc(n * sizeof(float));
    gelu_forward(y0, x, n);
    for (int64_t i = 0; i < n; i++) y1[i] = qpm_gelu_fwd(x[i]);
    SAME("gelu forward", y0, y1, n);
    float *dout = randv(n, 1.0f), *d0 = randv(n, 0.5f), *d1 = copyv(d0, n);
    gelu_backward(d0, x, dout, n);
    for (int64_t i = 0; i < n; i++) d1[i] += qpm_gelu_grad(x[i]) * dout[i];
    SAME("gelu backward", d0, d1, n);
    /* and the approximation itself is GELU: within 1e-3 of the erf form */
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double e = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
        if (fabs(e - y1[i]) > worst) worst = fabs(e - y1[i]);
    }
    CHECK(worst < 1e-3, "tanh GELU off the erf GELU by %g", worst);
    free(x), free(y0), free(y1), free(dout), free(d0), free(d1);
}

static void test_layernorm_n(int N)
{
    const int C = 37;
    float *x = randv((int64_t)N * C, 3.0f), *w = randv(C, 1.0f), *b = randv(C, 0.3f);
    for (int c = 0; c < C; c++) x[c] += 100.0f; /* a row with a large mean */
    float *o0 = malloc(sizeof(float) * N * C), *o1 = malloc(sizeof(float) * N * C);
    float *m0 = malloc(N * sizeof(float)), *r0 = malloc(N * sizeof(float));
    float *m1 = malloc(N * sizeof(float)), *r1 = malloc(N * sizeof(float));
    layernorm_forward(o0, m0, r0, x, w, b, N, C);
    for (int i = 0; i < N; i++) qpm_layernorm_fwd_row(o1 + (int64_t)i * C, m1 + i, r1 + i, x + (int64_t)i * C, w, b, C);
    SAME("layernorm forward out", o0, o1, (int64_t)N * C);
    SAME("layernorm forward mean", m0, m1, N);
    SAME("layernorm forward rstd", r0, r1, N);

    float *dout = randv((int64_t)N * C, 1.0f), *dx0 = randv((int64_t)N * C, 0.1f), *dx1 = copyv(dx0, (int64_t)N * C);
    float *dw0 = randv(C, 0.1f), *db0 = randv(C, 0.1f), *dw1 = copyv(dw0, C), *db1 = copyv(db0, C);
    layernorm_backward(dx0, dw0, db0, dout, x, w, m0, r0, N, C);
    for (int i = 0; i < N; i++)
        qpm_layernorm_bwd_row(dx1 + (int64_t)i * C, dout + (int64_t)i * C, x + (int64_t)i * C, w, m1[i], r1[i], C);
    float *dw2 = copyv(dw1, C), *db2 = copyv(db1, C);
    for (int c = 0; c < C; c++) qpm_layernorm_bwd_channel(dw1, db1, dout, x, m1, r1, N, C, c);
    SAME("layernorm backward dx", dx0, dx1, (int64_t)N * C);
    /* the GPU's chunk order against the CPU's straight sum: rounding only
     * (a sum of N terms of size ~1 reorders to ~N * 2^-24 of its size) */
    char name[96];
    snprintf(name, sizeof name, "layernorm backward dw (N %d, %d chunks)", N, qpm_sum_chunks(N));
    int64_t w_;
    double e_ = max_rel(dw0, dw1, C, &w_);
    CHECK(e_ <= 1e-6 * (1 + N / 64), "%s: %.3g", name, e_);
    e_ = max_rel(db0, db1, C, &w_);
    CHECK(e_ <= 1e-6 * (1 + N / 64), "layernorm backward db (N %d): %.3g", N, e_);
    /* the GPU's two kernels: chunk sums over (chunk, channel), then each channel's
     * chunks in order — the same bits as the one-channel function */
    const int nk = qpm_sum_chunks(N);
    float *pw = malloc((size_t)nk * C * sizeof(float)), *pb = malloc((size_t)nk * C * sizeof(float));
    for (int k = nk - 1; k >= 0; k--) /* any chunk order: each chunk has its own slot */
        for (int c = 0; c < C; c++) {
            const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
            qpm_layernorm_bwd_chunk(pw + (int64_t)k * C + c, pb + (int64_t)k * C + c, dout, x, m1, r1, i0, i1, C, c);
        }
    for (int c = 0; c < C; c++) qpm_layernorm_bwd_combine(dw2, db2, pw, pb, nk, C, c);
    for (int c = 0; c < C; c++)
        CHECK(qp_same_float(dw1[c], dw2[c]) && qp_same_float(db1[c], db2[c]),
              "layernorm backward chunks (N %d) channel %d: %.9g/%.9g vs %.9g/%.9g", N, c, dw1[c], db1[c], dw2[c],
              db2[c]);
    /* bias gradients: the same two levels */
    float *cs0 = randv(C, 0.1f), *cs1 = copyv(cs0, C), *cs2 = copyv(cs0, C);
    for (int c = 0; c < C; c++) {
        float s0 = 0.0f;
        for (int i = 0; i < N; i++) s0 += dout[(int64_t)i * C + c];
        cs0[c] += s0;
        qpm_colsum(cs1, dout, N, C, c);
    }
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) {
            const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
            pw[(int64_t)k * C + c] = qpm_colsum_chunk(dout, i0, i1, C, c);
        }
    for (int c = 0; c < C; c++) qpm_colsum_combine(cs2, pw, nk, C, c);
    e_ = max_rel(cs0, cs1, C, &w_);
    CHECK(e_ <= 1e-6 * (1 + N / 64), "column sums (N %d): %.3g", N, e_);
    for (int c = 0; c < C; c++)
        CHECK(qp_same_float(cs1[c], cs2[c]), "column sum chunks (N %d) column %d: %.9g vs %.9g", N, c, cs1[c], cs2[c]);
    free(pw), free(pb), free(cs0), free(cs1), free(cs2), free(dw2), free(db2);
    free(m0), free(r0), free(m1), free(r1);
    free(x), free(w), free(b), free(o0), free(o1), free(dout), free(dx0), free(dx1);
    free(dw0), free(db0), free(dw1), free(db1);
}

static void test_layernorm(void)
{
    test_layernorm_n(13);  /* one chunk: the CPU's order exactly */
    test_layernorm_n(64);
    test_layernorm_n(300); /* five chunks, the last one short */
}

static void test_attention(int B, int T, int C, int NH)
{
    const int64_t nq = (int64_t)B * T * 3 * C, na = (int64_t)B * NH * T * T, no = (int64_t)B * T * C;
    float *qkv = randv(nq, 1.0f);
    float *out0 = calloc(no, sizeof(float)), *pre0 = calloc(na, sizeof(float)), *att0 = calloc(na, sizeof(float));
    float *out1 = calloc(no, sizeof(float)), *pre1 = calloc(na, sizeof(float)), *att1 = calloc(na, sizeof(float));
    attention_forward(out0, pre0, att0, qkv, B, T, C, NH);
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const int64_t row = (((int64_t)b * NH + h) * T + t) * T;
                qpm_attention_fwd_row(out1 + ((int64_t)b * T + t) * C + h * hs, pre1 + row, att1 + row, qkv, b, t, h,
                                      T, C, NH);
            }
    char name[96];
    snprintf(name, sizeof name, "attention forward out (B%d T%d C%d NH%d)", B, T, C, NH);
    SAME(name, out0, out1, no);
    SAME("attention forward att", att0, att1, na);
    SAME("attention forward preatt", pre0, pre1, na); /* the masked part is 0 in both (calloc) */

    float *dout = randv(no, 1.0f), *dqkv0 = randv(nq, 0.1f), *dqkv1 = copyv(dqkv0, nq);
    float *dpre0 = calloc(na, sizeof(float)), *datt0 = calloc(na, sizeof(float));
    float *dpre1 = calloc(na, sizeof(float)), *datt1 = calloc(na, sizeof(float));
    attention_backward(dqkv0, dpre0, datt0, dout, qkv, att0, B, T, C, NH);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) qpm_attention_bwd_head(dqkv1, dpre1, datt1, dout, qkv, att1, b, h, T, C, NH);
    SAME("attention backward dqkv", dqkv0, dqkv1, nq);
    SAME("attention backward dpreatt", dpre0, dpre1, na);
    SAME("attention backward datt", datt0, datt1, na);
    /* the GPU's split: every query row, then every key row, each an
     * independent thread there; here in reverse order, which must not matter */
    float *dqkv2 = randv(nq, 0.1f);
    float *dqkv3 = copyv(dqkv2, nq), *dpre3 = calloc(na, sizeof(float)), *datt3 = calloc(na, sizeof(float));
    float *dpre2 = calloc(na, sizeof(float)), *datt2 = calloc(na, sizeof(float));
    attention_backward(dqkv2, dpre2, datt2, dout, qkv, att0, B, T, C, NH);
    for (int64_t r = (int64_t)B * T * NH - 1; r >= 0; r--)
        qpm_attention_bwd_query(dqkv3, dpre3, datt3, dout, qkv, att1, (int)(r / NH / T), (int)((r / NH) % T),
                                (int)(r % NH), T, C, NH);
    for (int64_t r = (int64_t)B * T * NH - 1; r >= 0; r--)
        qpm_attention_bwd_key(dqkv3, dpre3, dout, qkv, att1, (int)(r / NH / T), (int)((r / NH) % T), (int)(r % NH),
                              T, C, NH);
    SAME("attention backward split dqkv", dqkv2, dqkv3, nq);
    SAME("attention backward split dpreatt", dpre2, dpre3, na);
    SAME("attention backward split datt", datt2, datt3, na);
    free(dqkv2), free(dqkv3), free(dpre2), free(datt2), free(dpre3), free(datt3);
    free(qkv), free(out0), free(pre0), free(att0), free(out1), free(pre1), free(att1);
    free(dout), free(dqkv0), free(dqkv1), free(dpre0), free(datt0), free(dpre1), free(datt1);
}

static void test_softmax_ce(void)
{
    const int N = 9, V = 67;
    float *logits = randv((int64_t)N * V, 5.0f);
    logits[3] = 80.0f, logits[V + 1] = -80.0f; /* a dominant and a vanishing logit */
    int32_t tg[9];
    for (int i = 0; i < N; i++) tg[i] = (int32_t)(qp_test_next(&rng) % V);
    tg[0] = 3;
    float *p0 = malloc(sizeof(float) * N * V), *p1 = malloc(sizeof(float) * N * V), l0[9], l1[9];
    softmax_crossentropy_forward(p0, l0, logits, tg, N, V);
    for (int i = 0; i < N; i++) l1[i] = qpm_softmax_ce_row(p1 + (int64_t)i * V, logits + (int64_t)i * V, tg[i], V);
    SAME("softmax probs", p0, p1, (int64_t)N * V);
    SAME("cross-entropy losses", l0, l1, N);
    /* without targets: the same probabilities, no loss */
    float *p2 = malloc(sizeof(float) * N * V);
    for (int i = 0; i < N; i++)
        CHECK(qpm_softmax_ce_row(p2 + (int64_t)i * V, logits + (int64_t)i * V, -1, V) == 0.0f, "loss without target");
    SAME("softmax probs without targets", p0, p2, (int64_t)N * V);

    const float dloss = 0.37f / N;
    float *d0 = randv((int64_t)N * V, 0.01f), *d1 = copyv(d0, (int64_t)N * V);
    softmax_crossentropy_backward(d0, p0, tg, dloss, N, V);
    for (int i = 0; i < N; i++)
        for (int v = 0; v < V; v++) d1[(int64_t)i * V + v] += qpm_softmax_ce_grad(p1[(int64_t)i * V + v], v == tg[i], dloss);
    SAME("cross-entropy backward", d0, d1, (int64_t)N * V);
    free(logits), free(p0), free(p1), free(p2), free(d0), free(d1);
}

static void test_adamw(void)
{
    const int64_t sizes[2] = {1000, 333};
    const int decays[2] = {1, 0};
    const int64_t n = sizes[0] + sizes[1];
    const qp_optim_cfg c = {1e-3, 1e-4, 0.9, 0.99, 1e-8, 0.1, 1.0, 10, 100};
    float *p0 = randv(n, 0.5f), *g = randv(n, 0.2f), *m0 = randv(n, 0.01f), *v0 = malloc(n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v0[i] = fabsf(qp_test_normal(&rng)) * 1e-4f;
    g[0] = 0.0f, g[1] = 1e30f, g[2] = -1e-30f;
    float *p1 = copyv(p0, n), *m1 = copyv(m0, n), *v1 = copyv(v0, n);
    for (int64_t t = 1; t <= 3; t++) {
        const double lr = qp_lr_at(&c, t - 1);
        const float clip = t == 2 ? 0.7f : 1.0f;
        qp_adamw_step(&c, p0, g, m0, v0, sizes, decays, 2, t, lr, clip);
        /* the constants as qp_cuda_gpt_adamw computes them on the host */
        const float b1 = (float)c.beta1, b2 = (float)c.beta2, eps = (float)c.eps;
        const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
        for (int64_t i = 0; i < n; i++) {
            const float wd = decays[i < sizes[0] ? 0 : 1] ? (float)c.weight_decay : 0.0f;
            qpm_adamw_elem(p1 + i, m1 + i, v1 + i, g[i], clip, b1, b2, eps, bc1, bc2, (float)lr, wd);
        }
    }
    SAME("adamw params", p0, p1, n);
    SAME("adamw m", m0, m1, n);
    SAME("adamw v", v0, v1, n);
    free(p0), free(g), free(m0), free(v0), free(p1), free(m1), free(v1);
}

static void test_dot8(void)
{
    for (int n = 0; n < 40; n++) {
        float *a = randv(n + 1, 1.0f), *b = randv(n + 1, 1.0f);
        const float x = dot8(a, b, n), y = qpm_dot8(a, b, n);
        CHECK(qp_same_float(x, y), "dot8(%d): %.9g vs %.9g", n, x, y);
        /* the GPU's eight lanes: running sum j on lane j, then an xor butterfly
         * over 1, 2, 4 (lane l adds lane l^k's value); every lane must end
         * with dot8's bits */
        float lane[8], next[8];
        for (int j = 0; j < 8; j++) lane[j] = qpm_dot8_part(a, b, n, j);
        for (int k = 1; k < 8; k <<= 1) {
            for (int j = 0; j < 8; j++) next[j] = lane[j] + lane[j ^ k];
            memcpy(lane, next, sizeof lane);
        }
        const float tail = qpm_dot8_tail(a, b, n);
        for (int j = 0; j < 8; j++)
            CHECK(qp_same_float(x, lane[j] + tail), "dot8(%d) butterfly lane %d: %.9g vs %.9g", n, j, lane[j] + tail, x);
        free(a), free(b);
    }
}


/* ---- the pass order of qp_cuda_model_pass.h with host operations ------------ */

typedef struct {
    qp_linear *lin;
} host_ctx;

static int h_encoder_fwd(void *x, float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T,
                         int C)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)B * T * C; i++) {
        const int64_t bt = i / C, c = i % C;
        out[i] = wte[(int64_t)inp[bt] * C + c] + wpe[(bt % T) * C + c];
    }
    return 0;
}
static int h_encoder_bwd(void *x, float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T, int C)
{
    (void)x;
    /* as the GPU: token rows by channel, positions by (t, c) */
    for (int c = 0; c < C; c++) qpm_encoder_bwd_token(dwte, dout, inp, B * T, C, c);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) qpm_encoder_bwd_pos(dwpe, dout, B, T, C, t, c);
    return 0;
}
static int h_layernorm_fwd(void *x, float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C)
{
    (void)x;
    for (int i = 0; i < N; i++)
        qpm_layernorm_fwd_row(out + (int64_t)i * C, mean + i, rstd + i, inp + (int64_t)i * C, w, b, C);
    return 0;
}
static int h_layernorm_bwd(void *x, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C)
{
    (void)x;
    for (int i = 0; i < N; i++)
        qpm_layernorm_bwd_row(dinp + (int64_t)i * C, dout + (int64_t)i * C, inp + (int64_t)i * C, w, mean[i], rstd[i],
                              C);
    for (int c = 0; c < C; c++) qpm_layernorm_bwd_channel(dw, db, dout, inp, mean, rstd, N, C, c);
    return 0;
}
static int h_attention_fwd(void *x, float *out, float *preatt, float *att, const float *qkv, int B, int T, int C,
                           int NH)
{
    (void)x;
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const int64_t row = (((int64_t)b * NH + h) * T + t) * T;
                qpm_attention_fwd_row(out + ((int64_t)b * T + t) * C + h * hs, preatt + row, att + row, qkv, b, t, h,
                                      T, C, NH);
            }
    return 0;
}
static int h_attention_bwd(void *x, float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH)
{
    (void)x;
    /* as kernels/qp_cuda_model.cu launches it: all query rows, then all key rows */
    for (int64_t r = 0; r < (int64_t)B * T * NH; r++)
        qpm_attention_bwd_query(dqkv, dpreatt, datt, dout, qkv, att, (int)(r / NH / T), (int)((r / NH) % T),
                                (int)(r % NH), T, C, NH);
    for (int64_t r = 0; r < (int64_t)B * T * NH; r++)
        qpm_attention_bwd_key(dqkv, dpreatt, dout, qkv, att, (int)(r / NH / T), (int)((r / NH) % T), (int)(r % NH),
                              T, C, NH);
    return 0;
}
static int h_gelu_fwd(void *x, float *out, const float *inp, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) out[i] = qpm_gelu_fwd(inp[i]);
    return 0;
}
static int h_gelu_bwd(void *x, float *dinp, const float *inp, const float *dout, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) dinp[i] += qpm_gelu_grad(inp[i]) * dout[i];
    return 0;
}
static int h_residual_fwd(void *x, float *out, const float *a, const float *b, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    return 0;
}
static int h_residual_bwd(void *x, float *da, float *db, const float *dout, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) da[i] += dout[i], db[i] += dout[i];
    return 0;
}
static int h_softmax_ce_fwd(void *x, float *probs, float *losses, const float *logits, const int32_t *targets, int N,
                            int V)
{
    (void)x;
    for (int i = 0; i < N; i++) {
        const float l = qpm_softmax_ce_row(probs + (int64_t)i * V, logits + (int64_t)i * V, targets ? targets[i] : -1, V);
        if (targets) losses[i] = l;
    }
    return 0;
}
static int h_softmax_ce_bwd(void *x, float *dlogits, const float *probs, const int32_t *targets, float dloss, int N,
                            int V)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)N * V; i++)
        dlogits[i] += qpm_softmax_ce_grad(probs[i], (int)(i % V) == targets[i / V], dloss);
    return 0;
}
static int h_linear_fwd(void *x, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                        int M, int IC, int OC)
{
    return qp_linear_forward(((host_ctx *)x)->lin, layer, g, Y, X, W, b, M, IC, OC);
}
static int h_linear_bwd(void *x, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                        const float *X, const float *W, int M, int IC, int OC)
{
    return qp_linear_backward(((host_ctx *)x)->lin, layer, g, dX, dW, db, dY, X, W, M, IC, OC);
}
static int h_zero(void *x, float *p, int64_t n)
{
    (void)x;
    memset(p, 0, (size_t)n * sizeof(float));
    return 0;
}

static void test_pass(const char *recipe, int L, int NH, int C, int B, int T, int accum)
{
    const qp_gpt_config mc = {67, T + 3, L, NH, C};
    char err[256];
    qp_recipe rec;
    qp_gpt ref, own;
    CHECK(qp_recipe_parse(recipe, &rec, err, sizeof err) == 0, "%s", err);
    CHECK(qp_gpt_init(&ref, &mc, B, T, 7, err, sizeof err) == 0 && qp_gpt_init(&own, &mc, B, T, 7, err, sizeof err) == 0,
          "%s", err);
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    const qp_linear_cfg lc = {.n_layers = L, .max_elems = qp_gpt_max_gemm_elems(&mc, B, T), .seed = 7, .recipe = &rec, .gemm = gemm};
    qp_linear *lref = qp_linear_create(&lc, err, sizeof err), *lown = qp_linear_create(&lc, err, sizeof err);
    CHECK(gemm && lref && lown, "%s", err);
    host_ctx hc = {lown};
    const qpm_ops ops = {&hc, h_encoder_fwd, h_encoder_bwd, h_layernorm_fwd, h_layernorm_bwd, h_attention_fwd,
                         h_attention_bwd, h_gelu_fwd, h_gelu_bwd, h_residual_fwd, h_residual_bwd, h_softmax_ce_fwd,
                         h_softmax_ce_bwd, h_linear_fwd, h_linear_bwd, h_zero};
    const int BT = B * T;
    int32_t *in = malloc(BT * sizeof(int32_t)), *tg = malloc(BT * sizeof(int32_t));
    qp_linear_begin_step(lref, 0, 0);
    qp_linear_begin_step(lown, 0, 0);
    qp_gpt_zero_grad(&ref);
    qp_gpt_zero_grad(&own);
    char name[160];
    for (int micro = 0; micro < accum; micro++) {
        for (int i = 0; i < BT; i++) in[i] = (int32_t)(qp_test_next(&rng) % 67), tg[i] = (int32_t)(qp_test_next(&rng) % 67);
        qp_linear_begin_micro(lref, micro);
        qp_linear_begin_micro(lown, micro);
        CHECK(qp_gpt_forward(&ref, lref, in, tg, B, T) == 0 && qp_gpt_backward(&ref, lref, in, tg, 1.0f / accum) == 0,
              "CPU model");
        CHECK(qpm_forward(&ops, &mc, B, T, &own.params, &own.acts, in, tg) == 0, "pass forward");
        double sum = 0.0;
        for (int i = 0; i < BT; i++) sum += own.acts.losses[i];
        const float mean = (float)(sum / BT);
        CHECK(fabsf(mean - ref.mean_loss) <= 1e-6f * fabsf(ref.mean_loss), "%s: mean loss %.9g vs %.9g", recipe, mean,
              ref.mean_loss);
        snprintf(name, sizeof name, "%s L%d NH%d C%d B%d T%d: probabilities", recipe, L, NH, C, B, T);
        SAME(name, ref.acts.probs, own.acts.probs, (int64_t)BT * mc.vocab);
        SAME("losses", ref.acts.losses, own.acts.losses, BT);
        CHECK(qpm_backward(&ops, &mc, B, T, &own.params, &own.grads, &own.acts, &own.grads_acts, own.grads_acts_memory,
                           own.num_acts, in, tg, 1.0f / accum) == 0,
              "pass backward");
    }
    /* every parameter gradient, tensor by tensor */
    int64_t off = 0;
    for (int i = 0; i < QP_GPT_NPARAMS; i++) {
        snprintf(name, sizeof name, "%s: gradient of %s (accum %d)", recipe, qp_gpt_param_names[i], accum);
        SAME(name, ref.grads_memory + off, own.grads_memory + off, ref.param_sizes[i]);
        off += ref.param_sizes[i];
    }
    /* evaluation: no targets, probabilities only */
    CHECK(qp_gpt_forward(&ref, lref, in, NULL, B, T) == 0 &&
              qpm_forward(&ops, &mc, B, T, &own.params, &own.acts, in, NULL) == 0,
          "forward without targets");
    SAME("probabilities without targets", ref.acts.probs, own.acts.probs, (int64_t)BT * mc.vocab);
    free(in), free(tg);
    qp_linear_destroy(lref), qp_linear_destroy(lown);
    qp_gemm_destroy(gemm);
    qp_gpt_free(&ref), qp_gpt_free(&own);
}

int main(void)
{
    test_dot8();
    test_gelu();
    test_layernorm();
    test_attention(2, 9, 24, 3);
    test_attention(1, 17, 64, 4); /* head size 16: dot8's full lanes and a tail-free loop */
    test_attention(3, 5, 10, 5);  /* head size 2: only dot8's tail */
    test_softmax_ce();
    test_adamw();
    test_pass("fp32", 2, 4, 32, 2, 16, 1);
    test_pass("fp32", 1, 2, 24, 3, 7, 2); /* odd shapes, gradient accumulation */
    test_pass("bf16", 2, 2, 32, 2, 8, 2);
    test_pass("nvfp4", 2, 2, 32, 2, 8, 1); /* quantized dispatch: the same code on both sides */
    return qp_test_finish("test_cuda_model_math");
}
