/* test_cuda_model_math.c — the GPU model's formulas (train/model/qp_model_math.h)
 * against the CPU trainer's kernels, without a GPU.
 *
 * The CPU kernels are the static functions of train/model/qp_model_kernels.c,
 * compiled into this test (a third copy, suffix _mathtest); each is run on
 * random data and compared with the loop of per-row / per-element functions
 * the GPU kernels call. The two compute the same quantities in different
 * orders, so they agree to rounding, not to the bit: the CPU sums a row in
 * 16 vector lanes and runs attention in blocks of 16 query rows keeping
 * only each row's log-sum-exp (its output, log-sum-exp and input gradient are
 * compared with the GPU's row softmax over T x T scores). Tolerances: 1e-6
 * relative (|a - b| / (1 + |a|)); 5e-5 for a LayerNorm row of mean 100
 * (below). Column sums (the CPU's blocks of QP_ROW_BLOCK rows, the GPU's
 * chunks of QPM_SUM_ROWS: the same size) and the embedding gradients add the
 * same terms in the same order: bit for bit. What the GPU splits over lanes
 * and threads (dot8's eight lanes and butterfly, the chunk sums, attention's
 * query/key split) is checked bit for bit against the one-thread host
 * formula. Then the GPU's pass order
 * (qp_cuda_model_pass.h, the code qp_cuda_model.cu runs, on the GPU's own
 * activation layout, qpm_act_sizes) is run with host operations over the
 * same formulas and the CPU dispatch, and the whole forward and backward
 * (losses, probabilities, every parameter gradient, with gradient
 * accumulation) compared with the CPU model's. The GPU differs from this
 * host build of the same code only in libm (expf/logf ulps) and its GEMMs,
 * which the GPU test (test_cuda_train) bounds end to end.
 *
 * The Llama likewise (train/model/qp_llama_kernels.c, compiled in the same way):
 * RMSNorm rows and gain gradients, rotary embeddings, SwiGLU and
 * Smooth-SwiGLU's scales (the same operations in the same order: bit for
 * bit), grouped-query attention as the GPU runs it (widened to the GPT's
 * layout, the GPT's row formulas, the gradient narrowed back) against the
 * CPU's blocked grouped-query attention, and the pass order of
 * qp_cuda_llama_pass.h against the CPU Llama. */
#define QP_KERNEL_SUFFIX _mathtest
#include "../../train/model/qp_model_kernels.c"
#include "../../train/model/qp_llama_kernels.c"

#include <stdlib.h>

#include "qp_cuda_llama_pass.h"
#include "qp_model_math.h"
#include "qp_cuda_model_pass.h"
#include "qp_gemm.h"
#include "qp_optim.h"
#include "qp_recipe.h"
#include "qp_test.h"
#include "train/test_model_util.h"

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

#define SAME_TOL(name, a, b, n, tol)                                                                     \
    do {                                                                                                 \
        int64_t w_;                                                                                      \
        const double e_ = max_rel(a, b, n, &w_);                                                         \
        CHECK(e_ <= (tol), "%s: max relative difference %.3g at %lld (cpu %.9g, shared %.9g)", name, e_, \
              (long long)w_, w_ >= 0 ? (a)[w_] : 0.0, w_ >= 0 ? (b)[w_] : 0.0);                             \
    } while (0)
#define SAME(name, a, b, n) SAME_TOL(name, a, b, n, 1e-6)
/* LayerNorm of a row whose mean is 100 and spread 3: the CPU sums a row in
 * 16 lanes, the GPU's row function in order, so their means differ in the
 * last bits of 100 (an ulp is 7.6e-6; 37 terms round differently by a few),
 * which reach the output times rstd·|w| (~1/3 × up to ~3 here). A wrong
 * formula is off by whole units. */
#define LN_TOL 5e-5

static void test_gelu(void)
{
    const int64_t n = 20000;
    float *x = randv(n, 4.0f);
    x[0] = 0.0f, x[1] = -30.0f, x[2] = 30.0f, x[3] = 1e-8f, x[4] = -1e-8f, x[5] = 88.0f, x[6] = -88.0f;
    /* as one row of n: the bias 0 (no input is -0) */
    float *y0 = malloc(n * sizeof(float)), *y1 = malloc(n * sizeof(float)), *zero = calloc(n, sizeof(float));
    float *xb = copyv(x, n);
    bias_gelu_forward(xb, y0, zero, 1, (int)n, NULL);
    for (int64_t i = 0; i < n; i++) y1[i] = qpm_gelu_fwd(x[i]);
    SAME("gelu forward", y0, y1, n);
    float *dout = randv(n, 1.0f), *d0 = copyv(dout, n), *d1 = malloc(n * sizeof(float)), *db = calloc(n, sizeof(float));
    float *part = malloc(n * sizeof(float));
    gelu_backward(d0, db, part, x, zero, 1, (int)n, NULL);
    for (int64_t i = 0; i < n; i++) d1[i] = qpm_gelu_grad(x[i]) * dout[i];
    SAME("gelu backward", d0, d1, n);
    SAME("gelu backward's bias gradient (one row)", db, d1, n);
    free(zero), free(xb), free(db), free(part);
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
    /* the fused residual add with a zero projection: its input is x */
    float *res = malloc(sizeof(float) * N * C), *zy = calloc((size_t)N * C, sizeof(float)), *zb = calloc(C, sizeof(float));
    residual_layernorm_forward(res, o0, m0, r0, x, zy, zb, NULL, NULL, NULL, w, b, N, 1, C, NULL);
    SAME("residual add of zero", res, x, (int64_t)N * C);
    for (int i = 0; i < N; i++) qpm_layernorm_fwd_row(o1 + (int64_t)i * C, m1 + i, r1 + i, x + (int64_t)i * C, w, b, C);
    SAME_TOL("layernorm forward out", o0, o1, (int64_t)N * C, LN_TOL);
    SAME("layernorm forward mean", m0, m1, N);
    SAME("layernorm forward rstd", r0, r1, N);

    float *dout = randv((int64_t)N * C, 1.0f), *dx0 = randv((int64_t)N * C, 0.1f), *dx1 = copyv(dx0, (int64_t)N * C);
    float *dw0 = randv(C, 0.1f), *db0 = randv(C, 0.1f), *dw1 = copyv(dw0, C), *db1 = copyv(db0, C);
    float *part = malloc(sizeof(float) * ((N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK) * 3 * C);
    residual_layernorm_backward(dx0, dw0, db0, NULL, part, dout, x, w, m0, r0, 1, N, C);
    for (int i = 0; i < N; i++)
        qpm_layernorm_bwd_row(dx1 + (int64_t)i * C, dout + (int64_t)i * C, x + (int64_t)i * C, w, m1[i], r1[i], C);
    float *dw2 = copyv(dw1, C), *db2 = copyv(db1, C);
    for (int c = 0; c < C; c++) qpm_layernorm_bwd_channel(dw1, db1, dout, x, m1, r1, N, C, c);
    SAME_TOL("layernorm backward dx", dx0, dx1, (int64_t)N * C, LN_TOL);
    /* the CPU's blocks of QP_ROW_BLOCK rows are the GPU's chunks: the bias
     * gradient (dout's column sums) has the same bits; the weight gradient's
     * terms carry the row statistics' difference (LN_TOL) */
    char name[96];
    snprintf(name, sizeof name, "layernorm backward dw (N %d, %d chunks)", N, qpm_sum_chunks(N));
    SAME_TOL(name, dw0, dw1, C, LN_TOL);
    for (int c = 0; c < C; c++)
        CHECK(qp_same_float(db0[c], db1[c]), "layernorm backward db (N %d) channel %d: %.9g vs %.9g", N, c, db0[c],
              db1[c]);
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
    /* bias gradients: the same two levels, against the CPU's fused column sums
     * (residual_layernorm_backward's dbias: the sums of the dres it wrote) */
    float *cs0 = randv(C, 0.1f), *cs1 = copyv(cs0, C), *cs2 = copyv(cs0, C);
    float *dres = calloc((size_t)N * C, sizeof(float)), *dw3 = calloc(C, sizeof(float)), *db3 = calloc(C, sizeof(float));
    residual_layernorm_backward(dres, dw3, db3, cs0, part, dout, x, w, m0, r0, 0, N, C);
    for (int c = 0; c < C; c++) qpm_colsum(cs1, dres, N, C, c);
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) {
            const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
            pw[(int64_t)k * C + c] = qpm_colsum_chunk(dres, i0, i1, C, c);
        }
    for (int c = 0; c < C; c++) qpm_colsum_combine(cs2, pw, nk, C, c);
    for (int c = 0; c < C; c++)
        CHECK(qp_same_float(cs0[c], cs1[c]) && qp_same_float(cs1[c], cs2[c]),
              "column sums (N %d) column %d: cpu %.9g, host formula %.9g, chunks %.9g", N, c, cs0[c], cs1[c], cs2[c]);
    free(pw), free(pb), free(cs0), free(cs1), free(cs2), free(dw2), free(db2), free(dres), free(dw3), free(db3);
    free(m0), free(r0), free(m1), free(r1);
    free(x), free(w), free(b), free(o0), free(o1), free(dout), free(dx0), free(dx1);
    free(dw0), free(db0), free(dw1), free(db1), free(res), free(zy), free(zb), free(part);
}

_Static_assert(QPM_SUM_ROWS == QP_ROW_BLOCK, "the GPU's column-sum chunks are the CPU's row blocks");

static void test_layernorm(void)
{
    test_layernorm_n(13);  /* one chunk, one CPU block short of 32 */
    test_layernorm_n(64);
    test_layernorm_n(300); /* five chunks, the last one short */
}

/* The embeddings' gradients: the CPU adds every (b,t) row in order into its
 * token's and position's rows, which is each GPU thread's order (a channel's
 * tokens; a (t, c)'s sequences): the same bits. */
static void test_encoder(int B, int T, int C, int V)
{
    const int BT = B * T;
    int32_t *inp = malloc(BT * sizeof(int32_t));
    for (int i = 0; i < BT; i++) inp[i] = (int32_t)(qp_test_next(&rng) % V); /* repeats: V < BT */
    float *dres = randv((int64_t)BT * C, 1.0f), *te0 = randv((int64_t)V * C, 0.1f), *pe0 = randv((int64_t)T * C, 0.1f);
    float *te1 = copyv(te0, (int64_t)V * C), *pe1 = copyv(pe0, (int64_t)T * C);
    encoder_backward(te0, pe0, dres, inp, BT, T, C);
    for (int c = 0; c < C; c++) qpm_encoder_bwd_token(te1, dres, inp, BT, C, c);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) qpm_encoder_bwd_pos(pe1, dres, B, T, C, t, c);
    int bad = 0;
    for (int64_t i = 0; i < (int64_t)V * C; i++) bad += !qp_same_float(te0[i], te1[i]);
    for (int64_t i = 0; i < (int64_t)T * C; i++) bad += !qp_same_float(pe0[i], pe1[i]);
    CHECK(bad == 0, "embedding gradients (B%d T%d C%d V%d): %d elements differ", B, T, C, V, bad);
    free(inp), free(dres), free(te0), free(pe0), free(te1), free(pe1);
}

/* dot8, the GPU's dot product (attention's scores): its eight lanes and the
 * xor butterfly give qpm_dot8's bits on every lane; against the CPU's
 * 16-lane row_dot, rounding only. */
static void test_dot8(void)
{
    for (int n = 0; n < 40; n++) {
        float *a = randv(n + 1, 1.0f), *b = randv(n + 1, 1.0f);
        const float x = row_dot(a, b, n), y = qpm_dot8(a, b, n);
        double mag = 0.0;
        for (int i = 0; i < n; i++) mag += fabs((double)a[i] * b[i]);
        CHECK(fabs((double)x - y) <= 1e-6 * (1.0 + mag), "dot8(%d): cpu %.9g vs %.9g", n, x, y);
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
            CHECK(qp_same_float(y, lane[j] + tail), "dot8(%d) butterfly lane %d: %.9g vs %.9g", n, j, lane[j] + tail, y);
        free(a), free(b);
    }
}

static void test_attention(int B, int T, int C, int NH)
{
    const int64_t nq = (int64_t)B * T * 3 * C, na = (int64_t)B * NH * T * T, no = (int64_t)B * T * C;
    float *qkv = randv(nq, 1.0f), *q0 = copyv(qkv, nq), *zb = calloc(3 * C, sizeof(float));
    float *out0 = calloc(no, sizeof(float)), *lse0 = calloc((size_t)B * NH * T, sizeof(float));
    float *out1 = calloc(no, sizeof(float)), *pre1 = calloc(na, sizeof(float)), *att1 = calloc(na, sizeof(float));
    attention_forward(out0, lse0, q0, zb, B, T, C, NH);
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
    SAME("attention forward leaves qkv (zero bias)", q0, qkv, nq);
    /* the log-sum-exp of each row's scaled scores, against the GPU's scores */
    float *lse1 = malloc(sizeof(float) * B * NH * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *pre = pre1 + (((int64_t)b * NH + h) * T + t) * T;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j <= t; j++) mx = fmax(mx, pre[j]);
                for (int j = 0; j <= t; j++) sum += exp(pre[j] - mx);
                lse1[((int64_t)b * NH + h) * T + t] = (float)(mx + log(sum));
            }
    SAME("attention forward log-sum-exp", lse0, lse1, (int64_t)B * NH * T);

    /* backward: the CPU writes dqkv, the GPU's functions add to it (from 0) */
    float *dout = randv(no, 1.0f), *dqkv0 = randv(nq, 0.1f), *dqkv1 = calloc(nq, sizeof(float));
    float *dpre1 = calloc(na, sizeof(float)), *datt1 = calloc(na, sizeof(float)), *db = calloc(3 * C, sizeof(float));
    float *part = malloc(sizeof(float) * ((B * T + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK) * 3 * C);
    attention_backward(dqkv0, db, part, dout, out0, lse0, qkv, B, T, C, NH, NULL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) qpm_attention_bwd_head(dqkv1, dpre1, datt1, dout, qkv, att1, b, h, T, C, NH);
    SAME("attention backward dqkv", dqkv0, dqkv1, nq);
    /* the bias gradient: the column sums of the CPU's dqkv, as the GPU
     * dispatch forms them (qpm_colsum's chunks, the CPU's row blocks) */
    float *cs = calloc(3 * C, sizeof(float));
    for (int c = 0; c < 3 * C; c++) qpm_colsum(cs, dqkv0, B * T, 3 * C, c);
    int bad = 0;
    for (int c = 0; c < 3 * C; c++) bad += !qp_same_float(db[c], cs[c]);
    CHECK(bad == 0, "attention backward bias gradient: %d of %d columns differ from qpm_colsum", bad, 3 * C);
    /* the GPU's split: every query row, then every key row, each an
     * independent thread there; here in reverse order, which must not matter */
    float *dqkv3 = calloc(nq, sizeof(float)), *dpre3 = calloc(na, sizeof(float)), *datt3 = calloc(na, sizeof(float));
    for (int64_t r = (int64_t)B * T * NH - 1; r >= 0; r--)
        qpm_attention_bwd_query(dqkv3, dpre3, datt3, dout, qkv, att1, (int)(r / NH / T), (int)((r / NH) % T),
                                (int)(r % NH), T, C, NH);
    for (int64_t r = (int64_t)B * T * NH - 1; r >= 0; r--)
        qpm_attention_bwd_key(dqkv3, dpre3, dout, qkv, att1, (int)(r / NH / T), (int)((r / NH) % T), (int)(r % NH),
                              T, C, NH);
    SAME("attention backward split dqkv", dqkv1, dqkv3, nq);
    SAME("attention backward split dpreatt", dpre1, dpre3, na);
    SAME("attention backward split datt", datt1, datt3, na);
    free(dqkv3), free(dpre3), free(datt3), free(cs), free(lse1), free(part), free(db);
    free(qkv), free(q0), free(zb), free(out0), free(lse0), free(out1), free(pre1), free(att1);
    free(dout), free(dqkv0), free(dqkv1), free(dpre1), free(datt1);
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

    /* the CPU writes the gradient in place of the probabilities */
    const float dloss = 0.37f / N;
    float *d0 = copyv(p0, (int64_t)N * V), *d1 = calloc((size_t)N * V, sizeof(float));
    softmax_crossentropy_backward(d0, tg, dloss, N, V);
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
    return qp_linear_backward(((host_ctx *)x)->lin, layer, g, dX, dW, db, dY, X, W, M, IC, OC, 1);
}
static int h_zero(void *x, float *p, int64_t n)
{
    (void)x;
    memset(p, 0, (size_t)n * sizeof(float));
    return 0;
}

/* The GPU's activation layout (qpm_act_sizes: every layer's T x T
 * attention matrices, no log-sum-exp), which the pass order works on; the
 * CPU model's qp_gpt keeps less. */
typedef struct {
    qp_gpt_acts acts, grads;
    float *mem, *gmem;
    int64_t n;
} gpu_layout;

static void gpu_layout_init(gpu_layout *g, const qp_gpt_config *c, int B, int T)
{
    int64_t sz[QP_GPT_NACTS];
    qpm_act_sizes(c, B, T, sz);
    g->n = qp_gpt_carve_acts(&g->acts, NULL, sz);
    g->mem = calloc((size_t)g->n, sizeof(float));
    g->gmem = calloc((size_t)g->n, sizeof(float));
    qp_gpt_carve_acts(&g->acts, g->mem, sz);
    qp_gpt_carve_acts(&g->grads, g->gmem, sz);
    CHECK(g->acts.preatt && g->acts.att && !g->acts.att_lse, "the GPU layout has T x T matrices and no log-sum-exp");
}

static void test_pass(const char *recipe, int L, int NH, int C, int B, int T, int accum)
{
    const qp_gpt_config mc = {.vocab = 67, .max_seq = T + 3, .layers = L, .heads = NH, .dim = C};
    char err[256];
    qp_recipe rec;
    qp_gpt ref, own;
    CHECK(qp_recipe_parse(recipe, &rec, err, sizeof err) == 0, "%s", err);
    CHECK(qp_gpt_init(&ref, &mc, B, T, 7, err, sizeof err) == 0 && qp_gpt_init(&own, &mc, B, T, 7, err, sizeof err) == 0,
          "%s", err);
    gpu_layout gl;
    gpu_layout_init(&gl, &mc, B, T);
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
        CHECK(qp_gpt_forward(&ref, lref, in, tg, B, T) == 0, "CPU model forward");
        CHECK(qpm_forward(&ops, &mc, B, T, &own.params, &gl.acts, in, tg) == 0, "pass forward");
        double sum = 0.0;
        for (int i = 0; i < BT; i++) sum += gl.acts.losses[i];
        const float mean = (float)(sum / BT);
        CHECK(fabsf(mean - ref.mean_loss) <= 1e-6f * fabsf(ref.mean_loss), "%s: mean loss %.9g vs %.9g", recipe, mean,
              ref.mean_loss);
        snprintf(name, sizeof name, "%s L%d NH%d C%d B%d T%d: probabilities", recipe, L, NH, C, B, T);
        SAME(name, ref.acts.probs, gl.acts.probs, (int64_t)BT * mc.vocab);
        SAME("losses", ref.acts.losses, gl.acts.losses, BT);
        CHECK(qp_gpt_backward(&ref, lref, in, tg, 1.0f / accum) == 0, "CPU model backward");
        CHECK(qpm_backward(&ops, &mc, B, T, &own.params, &own.grads, &gl.acts, &gl.grads, gl.gmem, gl.n, in, tg,
                           1.0f / accum) == 0,
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
              qpm_forward(&ops, &mc, B, T, &own.params, &gl.acts, in, NULL) == 0,
          "forward without targets");
    SAME("probabilities without targets", ref.acts.probs, gl.acts.probs, (int64_t)BT * mc.vocab);
    free(gl.mem), free(gl.gmem);
    free(in), free(tg);
    qp_linear_destroy(lref), qp_linear_destroy(lown);
    qp_gemm_destroy(gemm);
    qp_gpt_free(&ref), qp_gpt_free(&own);
}

/* ---- the Llama's formulas -------------------------------------------------- */

static void test_rmsnorm_n(int N, int C)
{
    float *x = randv((int64_t)N * C, 2.0f), *w = randv(C, 1.0f), *zy = calloc((size_t)N * C, sizeof(float));
    float *res = malloc(sizeof(float) * N * C), *o0 = malloc(sizeof(float) * N * C), *o1 = malloc(sizeof(float) * N * C);
    float *r0 = malloc(N * sizeof(float)), *r1 = malloc(N * sizeof(float));
    residual_rmsnorm_forward(res, o0, r0, x, zy, NULL, NULL, w, N, C, NULL);
    for (int i = 0; i < N; i++) qpm_rmsnorm_fwd_row(o1 + (int64_t)i * C, r1 + i, x + (int64_t)i * C, w, C);
    char name[96];
    snprintf(name, sizeof name, "rmsnorm forward out (N %d, C %d)", N, C);
    SAME(name, o0, o1, (int64_t)N * C);
    SAME("rmsnorm forward rstd", r0, r1, N);
    float *dout = randv((int64_t)N * C, 1.0f), *dx0 = randv((int64_t)N * C, 0.1f), *dx1 = copyv(dx0, (int64_t)N * C);
    float *dw0 = randv(C, 0.1f), *dw1 = copyv(dw0, C), *dw2 = copyv(dw0, C);
    float *part = malloc(sizeof(float) * ((N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK) * C);
    residual_rmsnorm_backward(dx0, dw0, part, dout, x, w, r0, 1, N, C);
    for (int i = 0; i < N; i++)
        qpm_rmsnorm_bwd_row(dx1 + (int64_t)i * C, dout + (int64_t)i * C, x + (int64_t)i * C, w, r1[i], C);
    for (int c = 0; c < C; c++) qpm_rmsnorm_bwd_channel(dw1, dout, x, r1, N, C, c);
    SAME("rmsnorm backward dx", dx0, dx1, (int64_t)N * C);
    /* each row's rstd differs in its last bits (the CPU's 16-lane sum of
     * squares, the GPU's in order), and the gain gradient sums N rows' x rstd d */
    SAME_TOL("rmsnorm backward gain gradient", dw0, dw1, C, 5e-6);
    /* the GPU's two kernels against the one-channel function: the same bits */
    const int nk = qpm_sum_chunks(N);
    float *pw = malloc((size_t)nk * C * sizeof(float));
    for (int k = nk - 1; k >= 0; k--)
        for (int c = 0; c < C; c++) {
            const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
            pw[(int64_t)k * C + c] = qpm_rmsnorm_bwd_chunk(dout, x, r1, i0, i1, C, c);
        }
    for (int c = 0; c < C; c++) qpm_rmsnorm_bwd_combine(dw2, pw, nk, C, c);
    int bad = 0;
    for (int c = 0; c < C; c++) bad += !qp_same_float(dw1[c], dw2[c]);
    CHECK(bad == 0, "rmsnorm gain gradient chunks (N %d): %d channels differ", N, bad);
    free(x), free(w), free(zy), free(res), free(o0), free(o1), free(r0), free(r1), free(dout), free(dx0), free(dx1);
    free(dw0), free(dw1), free(dw2), free(part), free(pw);
}

/* RoPE, SwiGLU and Smooth-SwiGLU's scales: the CPU's vector code and the
 * shared formulas do the same operations in the same order: the same bits. */
static void test_llama_elementwise(void)
{
    const int N = 11, T = 5, maxT = 7, C = 64, NH = 2, KVH = 1, hs = C / NH, half = hs / 2;
    const qp_gpt_config cf = {.vocab = 2, .max_seq = maxT, .layers = 1, .heads = NH, .dim = C, .arch = QP_ARCH_LLAMA,
                              .kv_heads = KVH, .mlp_hidden = 8};
    const qp_att_layout al = llama_att_layout(&cf);
    float *tab = malloc(sizeof(float) * 2 * maxT * half);
    qp_llama_rope_table(tab, maxT, hs);
    const int64_t n = (int64_t)N * al.rs;
    for (int inverse = 0; inverse < 2; inverse++) {
        float *q0 = randv(n, 1.0f), *q1 = copyv(q0, n);
        rope_forward(q0, tab, &al, maxT, N, T, inverse, NULL);
        for (int i = 0; i < N; i++)
            for (int p = 0; p < (NH + KVH) * half; p++) {
                int64_t i1, i2;
                int f;
                qpm_rope_pair_at(p, NH, hs, al.koff, &i1, &i2, &f);
                const int t = i % T;
                float *row = q1 + (int64_t)i * al.rs;
                qpm_rope_pair(row + i1, row + i2, tab[(int64_t)t * half + f], tab[(int64_t)maxT * half + t * half + f],
                              inverse);
            }
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !qp_same_float(q0[i], q1[i]);
        CHECK(bad == 0, "rope (inverse %d): %d elements differ (v unrotated too)", inverse, bad);
        free(q0), free(q1);
    }
    /* a rotation and its inverse: back to the start (to rounding) */
    float *q = randv(n, 1.0f), *q2 = copyv(q, n);
    rope_forward(q2, tab, &al, maxT, N, T, 0, NULL);
    rope_forward(q2, tab, &al, maxT, N, T, 1, NULL);
    SAME("rope then its inverse", q, q2, n);
    free(q), free(q2), free(tab);

    const int R = 7, H = 53; /* a tail after three 16-lane vectors */
    float *a = randv((int64_t)R * H, 4.0f), *u = randv((int64_t)R * H, 1.0f);
    a[0] = 0.0f, a[1] = -90.0f, a[2] = 90.0f, a[3] = -1e-30f;
    float *h0 = malloc(sizeof(float) * R * H), *h1 = malloc(sizeof(float) * R * H);
    swiglu_forward(h0, a, u, R, H, NULL);
    for (int64_t i = 0; i < (int64_t)R * H; i++) h1[i] = qpm_swiglu_fwd(a[i], u[i]);
    int bad = 0;
    for (int64_t i = 0; i < (int64_t)R * H; i++) bad += !qp_same_float(h0[i], h1[i]);
    CHECK(bad == 0, "swiglu forward: %d elements differ", bad);
    float *d = randv((int64_t)R * H, 1.0f), *dh = copyv(d, (int64_t)R * H), *du0 = malloc(sizeof(float) * R * H);
    float *da1 = calloc((size_t)R * H, sizeof(float)), *du1 = calloc((size_t)R * H, sizeof(float));
    swiglu_backward(dh, du0, a, u, R, H, NULL, NULL);
    for (int64_t i = 0; i < (int64_t)R * H; i++) qpm_swiglu_bwd(da1 + i, du1 + i, a[i], u[i], d[i]);
    /* the GPU adds into a zeroed gradient, the CPU writes it: a -0 becomes +0 (a = 0: du = d * 0) */
    bad = 0;
    for (int64_t i = 0; i < (int64_t)R * H; i++) bad += !qp_same_float(dh[i], da1[i]) + !qp_same_float(du0[i] + 0.0f, du1[i]);
    CHECK(bad == 0, "swiglu backward: %d elements differ", bad);
    /* and SwiGLU is silu(a) u, silu(a) = a / (1 + exp(-a)), to float rounding */
    double worst = 0.0;
    for (int64_t i = 0; i < (int64_t)R * H; i++)
        worst = fmax(worst, fabs(a[i] / (1.0 + exp(-(double)a[i])) * u[i] - h1[i]) / (1e-30 + fabs(h1[i]) + 1e-6));
    CHECK(worst < 1e-5, "swiglu off silu(a) u by %g relative", worst);

    /* Smooth-SwiGLU's scales: a channel of zeros, one with a NaN, one huge */
    for (int i = 0; i < R; i++) a[(int64_t)i * H + 5] = 0.0f;
    a[(int64_t)2 * H + 6] = NAN, a[(int64_t)3 * H + 7] = 3e30f, a[(int64_t)4 * H + 8] = INFINITY;
    float *s0 = malloc(sizeof(float) * H), *s1 = malloc(sizeof(float) * H);
    qp_gpt sm = {0};
    smooth_scales(s0, a, R, H, &sm);
    for (int j = 0; j < H; j++) s1[j] = qpm_smooth_scale(qpm_col_amax(a, R, H, j));
    bad = 0;
    for (int j = 0; j < H; j++) bad += !qp_same_float(s0[j], s1[j]);
    CHECK(bad == 0, "smooth-swiglu scales: %d channels differ", bad);
    CHECK(s0[5] == 1.0f && s0[8] == 1.0f, "scale 1 for a channel of zeros (%g) and an infinite one (%g)", s0[5], s0[8]);
    for (int j = 0; j < H; j++) {
        const float m = qpm_col_amax(a, R, H, j) * s0[j];
        CHECK(j == 5 || j == 8 || (m >= 1.0f && m < 2.0f), "channel %d scaled to max %g, not in [1, 2)", j, m);
    }
    free(a), free(u), free(h0), free(h1), free(d), free(dh), free(du0), free(da1), free(du1), free(s0), free(s1);
}

/* Grouped-query attention: the CPU's blocked kernel on the narrow layout
 * against the GPU's way (widen, the GPT's row formulas, narrow the gradient). */
static void test_gqa(int B, int T, int C, int NH, int KVH)
{
    const qp_gpt_config cf = {.vocab = 2, .max_seq = T, .layers = 1, .heads = NH, .dim = C, .arch = QP_ARCH_LLAMA,
                              .kv_heads = KVH, .mlp_hidden = 8};
    const qp_att_layout al = llama_att_layout(&cf);
    const int BT = B * T;
    const int64_t nn = (int64_t)BT * al.rs, nw = (int64_t)BT * 3 * C, na = (int64_t)B * NH * T * T, no = (int64_t)BT * C;
    float *narrow = randv(nn, 1.0f), *wide = malloc(sizeof(float) * nw);
    for (int64_t i = 0; i < BT; i++)
        for (int64_t j = 0; j < 3 * C; j++) wide[i * 3 * C + j] = qpm_gqa_expand(narrow + i * al.rs, j, C, NH, KVH, al.hs);
    float *out0 = calloc(no, sizeof(float)), *lse0 = calloc((size_t)B * NH * T, sizeof(float));
    float *out1 = calloc(no, sizeof(float)), *pre = calloc(na, sizeof(float)), *att = calloc(na, sizeof(float));
    llama_attention_forward(out0, lse0, narrow, &al, B, T);
    h_attention_fwd(NULL, out1, pre, att, wide, B, T, C, NH);
    char name[96];
    snprintf(name, sizeof name, "grouped-query attention out (B%d T%d C%d NH%d KVH%d)", B, T, C, NH, KVH);
    SAME(name, out0, out1, no);
    float *dout = randv(no, 1.0f), *dn0 = randv(nn, 0.1f), *dw = calloc(nw, sizeof(float));
    float *dpre = calloc(na, sizeof(float)), *datt = calloc(na, sizeof(float));
    llama_attention_backward(dn0, dout, out0, lse0, narrow, &al, B, T);
    h_attention_bwd(NULL, dw, dpre, datt, dout, wide, att, B, T, C, NH);
    float *dn1 = malloc(sizeof(float) * nn);
    for (int64_t i = 0; i < BT; i++)
        for (int64_t j = 0; j < al.rs; j++) dn1[i * al.rs + j] = qpm_gqa_reduce(dw + i * 3 * C, j, C, NH, KVH, al.hs);
    SAME("grouped-query attention backward (narrowed)", dn0, dn1, nn);
    free(narrow), free(wide), free(out0), free(lse0), free(out1), free(pre), free(att), free(dout), free(dn0), free(dw);
    free(dpre), free(datt), free(dn1);
}

/* ---- the Llama's pass order of qp_cuda_llama_pass.h with host operations ---- */

static int hl_embed_fwd(void *x, float *out, const int32_t *inp, const float *wte, int B, int T, int C)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)B * T * C; i++) out[i] = wte[(int64_t)inp[i / C] * C + i % C];
    return 0;
}
static int hl_embed_bwd(void *x, float *dwte, const float *dout, const int32_t *inp, int B, int T, int C)
{
    (void)x;
    for (int c = 0; c < C; c++) qpm_encoder_bwd_token(dwte, dout, inp, B * T, C, c);
    return 0;
}
static int hl_rmsnorm_fwd(void *x, float *out, float *rstd, const float *inp, const float *w, int N, int C)
{
    (void)x;
    for (int i = 0; i < N; i++) qpm_rmsnorm_fwd_row(out + (int64_t)i * C, rstd + i, inp + (int64_t)i * C, w, C);
    return 0;
}
static int hl_rmsnorm_bwd(void *x, float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                          const float *rstd, int N, int C)
{
    (void)x;
    for (int i = 0; i < N; i++)
        qpm_rmsnorm_bwd_row(dinp + (int64_t)i * C, dout + (int64_t)i * C, inp + (int64_t)i * C, w, rstd[i], C);
    for (int c = 0; c < C; c++) qpm_rmsnorm_bwd_channel(dw, dout, inp, rstd, N, C, c);
    return 0;
}
static int hl_rope(void *x, float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse)
{
    (void)x;
    const int hs = C / NH, half = hs / 2;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    for (int i = 0; i < N; i++)
        for (int p = 0; p < (NH + KVH) * half; p++) {
            int64_t i1, i2;
            int f;
            qpm_rope_pair_at(p, NH, hs, C, &i1, &i2, &f);
            const int64_t t = i % T;
            qpm_rope_pair(qkv + i * rs + i1, qkv + i * rs + i2, tab[t * half + f], tab[(int64_t)maxT * half + t * half + f],
                          inverse);
        }
    return 0;
}
static int hl_gqa_expand(void *x, float *wide, const float *narrow, int N, int C, int NH, int KVH)
{
    (void)x;
    const int hs = C / NH;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < 3 * C; j++) wide[i * 3 * C + j] = qpm_gqa_expand(narrow + i * rs, j, C, NH, KVH, hs);
    return 0;
}
static int hl_gqa_reduce(void *x, float *narrow, const float *wide, int N, int C, int NH, int KVH)
{
    (void)x;
    const int hs = C / NH;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < rs; j++) narrow[i * rs + j] = qpm_gqa_reduce(wide + i * 3 * C, j, C, NH, KVH, hs);
    return 0;
}
static int hl_swiglu_fwd(void *x, float *h, const float *a, const float *u, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) h[i] = qpm_swiglu_fwd(a[i], u[i]);
    return 0;
}
static int hl_swiglu_bwd(void *x, float *da, float *du, const float *a, const float *u, const float *dh, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) qpm_swiglu_bwd(da + i, du + i, a[i], u[i], dh[i]);
    return 0;
}
static int hl_smooth_scales(void *x, float *s, const float *h, int N, int H)
{
    (void)x;
    for (int j = 0; j < H; j++) s[j] = qpm_smooth_scale(qpm_col_amax(h, N, H, j));
    return 0;
}
static int hl_smooth_apply(void *x, float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C,
                           int H)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)N * H; i++) xs[i] = h[i] * s[i % H];
    for (int64_t i = 0; i < (int64_t)C * H; i++) ws[i] = w[i] / s[i % H];
    return 0;
}
static int hl_smooth_unfold(void *x, float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N,
                            int C, int H)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)N * H; i++) dh[i] += dxs[i] * s[i % H];
    for (int64_t i = 0; i < (int64_t)C * H; i++) dw[i] += dws[i] / s[i % H];
    return 0;
}

/* The Llama's pass against the CPU Llama. In fp32 with every weight moved off
 * the init (tm_perturb: values of order one, peaked attention) to LLAMA_TOL:
 * the two differ by rounding only (RMSNorm's and attention's sums in other
 * orders), which the perturbed weights grow to 1.5e-6 at most here, past the
 * GPT's 1e-6; a wrong formula, offset or fold is off by whole percents. A
 * quantized recipe from the init, to 1e-6 (4e-9 seen): the same dispatch on
 * both sides (perturbed, operands that differ by rounding fall on the two
 * sides of a BF16 rounding boundary now and then). */
#define LLAMA_TOL 3e-6
#define QUANT_TOL 1e-6
static void test_llama_pass(const char *recipe, int L, int NH, int KVH, int C, int H, int smooth, int B, int T,
                            int accum)
{
    const int fp32 = !strcmp(recipe, "fp32");
    const double tol = fp32 ? LLAMA_TOL : QUANT_TOL;
    const qp_gpt_config mc0 = {.vocab = 67, .max_seq = T + 3, .layers = L, .heads = NH, .dim = C,
                               .arch = QP_ARCH_LLAMA, .kv_heads = KVH, .mlp_hidden = H, .smooth_swiglu = smooth};
    char err[256];
    qp_recipe rec;
    qp_gpt ref, own;
    CHECK(qp_recipe_parse(recipe, &rec, err, sizeof err) == 0, "%s", err);
    CHECK(qp_gpt_init(&ref, &mc0, B, T, 7, err, sizeof err) == 0 && qp_gpt_init(&own, &mc0, B, T, 7, err, sizeof err) == 0,
          "%s", err);
    const qp_gpt_config mc = ref.cfg; /* resolved */
    int64_t sz[QP_LLAMA_NACTS];
    qpm_llama_act_sizes(&mc, B, T, sz);
    qp_llama_acts ga, gd;
    const int64_t nacts = qp_llama_carve_acts(&ga, NULL, sz);
    float *amem = calloc((size_t)nacts, sizeof(float)), *dmem = calloc((size_t)nacts, sizeof(float));
    qp_llama_carve_acts(&ga, amem, sz);
    qp_llama_carve_acts(&gd, dmem, sz);
    CHECK(ga.preatt && ga.att && !ga.att_lse, "the GPU's Llama layout has T x T matrices and no log-sum-exp");
    float *smem = calloc((size_t)qpm_llama_scratch_floats(&mc, B, T) + 1, sizeof(float));
    const qpm_llama_scratch sc = qpm_llama_scratch_carve(smem, &mc, B, T);
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    const qp_linear_cfg lc = {.n_layers = L, .max_elems = qp_gpt_max_gemm_elems(&mc, B, T), .seed = 7, .recipe = &rec,
                              .gemm = gemm};
    qp_linear *lref = qp_linear_create(&lc, err, sizeof err), *lown = qp_linear_create(&lc, err, sizeof err);
    CHECK(gemm && lref && lown, "%s", err);
    host_ctx hc = {lown};
    const qpm_ops base = {&hc, h_encoder_fwd, h_encoder_bwd, h_layernorm_fwd, h_layernorm_bwd, h_attention_fwd,
                          h_attention_bwd, h_gelu_fwd, h_gelu_bwd, h_residual_fwd, h_residual_bwd, h_softmax_ce_fwd,
                          h_softmax_ce_bwd, h_linear_fwd, h_linear_bwd, h_zero};
    const qpm_llama_ops ops = {&base, hl_embed_fwd, hl_embed_bwd, hl_rmsnorm_fwd, hl_rmsnorm_bwd, hl_rope,
                               hl_gqa_expand, hl_gqa_reduce, hl_swiglu_fwd, hl_swiglu_bwd, hl_smooth_scales,
                               hl_smooth_apply, hl_smooth_unfold};
    if (fp32) tm_perturb(&ref, 5), tm_perturb(&own, 5); /* off the init: gains and every path carry weight */
    const int BT = B * T;
    int32_t *in = malloc(BT * sizeof(int32_t)), *tg = malloc(BT * sizeof(int32_t));
    qp_linear_begin_step(lref, 0, 0);
    qp_linear_begin_step(lown, 0, 0);
    qp_gpt_zero_grad(&ref);
    qp_gpt_zero_grad(&own);
    char name[200];
    for (int micro = 0; micro < accum; micro++) {
        for (int i = 0; i < BT; i++) in[i] = (int32_t)(qp_test_next(&rng) % 67), tg[i] = (int32_t)(qp_test_next(&rng) % 67);
        qp_linear_begin_micro(lref, micro);
        qp_linear_begin_micro(lown, micro);
        CHECK(qp_gpt_forward(&ref, lref, in, tg, B, T) == 0, "CPU Llama forward");
        CHECK(qpm_llama_forward(&ops, &mc, B, T, &own.lparams, &ga, &sc, own.rope, in, tg) == 0, "pass forward");
        double sum = 0.0;
        for (int i = 0; i < BT; i++) sum += ga.losses[i];
        const float mean = (float)(sum / BT);
        CHECK(fabs(mean - ref.mean_loss) <= tol * fabsf(ref.mean_loss), "%s: Llama mean loss %.9g vs %.9g", recipe,
              mean, ref.mean_loss);
        snprintf(name, sizeof name, "%s Llama L%d NH%d KVH%d C%d H%d smooth %d B%d T%d: probabilities", recipe, L, NH,
                 KVH, C, mc.mlp_hidden, smooth, B, T);
        SAME_TOL(name, ref.lacts.probs, ga.probs, (int64_t)BT * mc.vocab, tol);
        SAME_TOL("Llama losses", ref.lacts.losses, ga.losses, BT, tol);
        CHECK(qp_gpt_backward(&ref, lref, in, tg, 1.0f / accum) == 0, "CPU Llama backward");
        CHECK(qpm_llama_backward(&ops, &mc, B, T, &own.lparams, &own.lgrads, &ga, &gd, dmem, nacts, &sc, own.rope, in,
                                 tg, 1.0f / accum) == 0,
              "pass backward");
    }
    int64_t off = 0;
    for (int i = 0; i < ref.n_tensors; i++) {
        snprintf(name, sizeof name, "%s Llama: gradient of %s (accum %d)", recipe, qp_llama_param_names[i], accum);
        SAME_TOL(name, ref.grads_memory + off, own.grads_memory + off, ref.param_sizes[i], tol);
        off += ref.param_sizes[i];
    }
    CHECK(qp_gpt_forward(&ref, lref, in, NULL, B, T) == 0 &&
              qpm_llama_forward(&ops, &mc, B, T, &own.lparams, &ga, &sc, own.rope, in, NULL) == 0,
          "Llama forward without targets");
    SAME_TOL("Llama probabilities without targets", ref.lacts.probs, ga.probs, (int64_t)BT * mc.vocab, tol);
    free(amem), free(dmem), free(smem), free(in), free(tg);
    qp_linear_destroy(lref), qp_linear_destroy(lown);
    qp_gemm_destroy(gemm);
    qp_gpt_free(&ref), qp_gpt_free(&own);
}

int main(void)
{
    test_dot8();
    test_gelu();
    test_layernorm();
    test_encoder(3, 7, 37, 5);
    test_encoder(2, 16, 64, 50);
    test_attention(2, 9, 24, 3);
    test_attention(1, 17, 64, 4); /* head size 16: dot8's full lanes and a tail-free loop */
    test_attention(3, 5, 10, 5);  /* head size 2: only dot8's tail */
    test_softmax_ce();
    test_adamw();
    test_pass("fp32", 2, 4, 32, 2, 16, 1);
    test_pass("fp32", 1, 2, 24, 3, 7, 2); /* odd shapes, gradient accumulation */
    test_pass("bf16", 2, 2, 32, 2, 8, 2);
    test_pass("nvfp4", 2, 2, 32, 2, 8, 1); /* quantized dispatch: the same code on both sides */
    test_rmsnorm_n(13, 37);
    test_rmsnorm_n(300, 64); /* ten chunks, the last one short */
    test_llama_elementwise();
    test_gqa(2, 9, 32, 4, 2);  /* two query heads per key/value head */
    test_gqa(1, 37, 64, 4, 1); /* one key/value head (multi-query), three query blocks */
    test_gqa(2, 5, 24, 3, 3);  /* a key/value head per query head */
    test_llama_pass("fp32", 2, 4, 2, 32, 0, 0, 2, 16, 1);
    test_llama_pass("fp32", 1, 2, 1, 24, 40, 1, 3, 7, 2); /* multi-query, Smooth-SwiGLU, gradient accumulation */
    test_llama_pass("bf16", 2, 2, 2, 32, 0, 1, 2, 8, 2);
    test_llama_pass("fp8", 2, 4, 2, 32, 64, 1, 2, 8, 1); /* quantized dispatch on the scaled operands */
    /* last, to leave the random data of the cases above as they were */
    test_attention(2, 64, 128, 2); /* head size 64, T a multiple of QP_ROW_BLOCK: the tasks sum the bias gradient */
    return qp_test_finish("test_cuda_model_math");
}
