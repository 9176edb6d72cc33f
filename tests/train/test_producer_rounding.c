/* test_producer_rounding.c — GEMM inputs quantized by the kernels that write
 * them (qp_linear_takes_rounded: the bf16 recipe's BF16, the fp8 recipe's
 * delayed-scaled E4M3 and E5M2; train/model/qp_model_simd.h's round_row), against
 * quant/'s quantization of what they wrote before:
 *
 *  - each producer (the GPT's residual LayerNorm, GELU forward and backward,
 *    attention backward (by its tasks and by its row pass); the Llama's
 *    residual RMSNorm, SwiGLU forward and backward, the inverse rotation of
 *    the q and k gradients: the static
 *    kernels of train/model/qp_model_kernels.c and qp_llama_kernels.c, compiled in
 *    here as a copy of their own) writes the bits qp_qdq gives its
 *    unquantized output at the format and scale asked, and its counts make
 *    qp_qdq's statistics (memcmp), on data with NaN, Inf, values that
 *    saturate, subnormals that flush and zeros; in BF16, E4M3 and E5M2; on 1
 *    and 2 threads; at widths with and without a vector tail; GELU
 *    backward's and attention backward's bias gradients are those of the
 *    values before quantization;
 *  - when the dispatch takes an operand quantized (its truth table), and an
 *    operand handed over where it does not, or at another scale, is an
 *    error with nothing run;
 *  - two steps of a GPT and of a Llama in the bf16 and fp8 recipes (forward,
 *    backward; the library's kernels) with the producers quantizing and with
 *    the dispatch quantizing (the model observing its inputs quantizes
 *    none), an Inf weight in the second: the same logits, losses, every
 *    gradient, and the same scaling states and events. */
#define QP_KERNEL_SUFFIX _roundtest
#include "../../train/model/qp_model_kernels.c"
#include "../../train/model/qp_llama_kernels.c"

#include <stdlib.h>

#include "qp_gemm.h"
#include "qp_recipe.h"
#include "qp_test.h"
#include "test_model_util.h"

static uint64_t rng = 0x5EED;

/* n values of scale s with every kind of special value sprinkled in */
static float *data(int64_t n, float s, int specials)
{
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = s * tm_normal(&rng);
    static const float kinds[] = {NAN, INFINITY, -INFINITY, 3.3990e38f, -3.3975e38f, 1e-45f, -3e-42f, 0.0f, -0.0f,
                                  1e-39f};
    for (int k = 0; specials && k < 3 * (int)(sizeof kinds / sizeof kinds[0]); k++)
        v[tm_next(&rng) % (uint64_t)n] = kinds[k % (int)(sizeof kinds / sizeof kinds[0])];
    return v;
}

/* got (quantized by a producer as r says, counted in r's tally) against qp_qdq of ref */
static void same_as_quant(const char *what, const float *got, const qp_linear_rounded *r, const float *ref, int rows,
                          int cols)
{
    const int64_t n = (int64_t)rows * cols;
    float *q = malloc((size_t)n * sizeof *q);
    qp_qstats want, mine;
    const qp_qopts o = {.unscaled = true, .scale = qp_formats[r->fmt].tensor_scale ? r->scale : 0.0f};
    CHECK(qp_qdq(r->fmt, ref, q, rows, cols, &o, &want) == 0, "%s: qdq", what);
    qp_round_tally_stats(&r->tally, n, r->scale, &mine);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(&got[i], &q[i], sizeof q[i]) != 0 && !(isnan(got[i]) && isnan(q[i]));
    CHECK(bad == 0, "%s: %lld of %lld values are not qp_qdq's bits", what, (long long)bad, (long long)n);
    CHECK(memcmp(&mine, &want, sizeof mine) == 0,
          "%s: counts nonfinite %lld/%lld nonzero %lld/%lld sat %lld/%lld flushed %lld/%lld amax %g/%g scale %g/%g",
          what, (long long)mine.n_nonfinite, (long long)want.n_nonfinite, (long long)mine.n_nonzero,
          (long long)want.n_nonzero, (long long)mine.n_sat, (long long)want.n_sat, (long long)mine.n_flushed,
          (long long)want.n_flushed, mine.amax, want.amax, mine.scale, want.scale);
    free(q);
}

/* The formats a producer quantizes to, at scales that put the data's
 * largest values near (E4M3 x 37.5) or past (E5M2 x 2^14) the format's
 * largest value, or leave many in its subnormals (E4M3 x 0.5). */
static const struct {
    qp_fmt fmt;
    float scale;
} kinds_of[] = {{QP_FMT_BF16, 1.0f}, {QP_FMT_FP8_E4M3, 37.5f}, {QP_FMT_FP8_E4M3, 0.5f}, {QP_FMT_FP8_E5M2, 16384.0f}};
#define N_KINDS ((int)(sizeof kinds_of / sizeof kinds_of[0]))

static qp_linear_rounded ask(int k) { return (qp_linear_rounded){kinds_of[k].fmt, kinds_of[k].scale, {0}}; }

static void describe(char *buf, size_t len, const char *kernel, int N, int C, int k, int specials)
{
    snprintf(buf, len, "%s %dx%d %s x%g%s", kernel, N, C, qp_formats[kinds_of[k].fmt].name, kinds_of[k].scale,
             specials ? " with specials" : "");
}

static void test_layernorm(int N, int C, int k, int specials)
{
    float *x = data((int64_t)N * C, 2.0f, 0), *w = data(C, 1.0f, 0), *b = data(C, 0.1f, 0);
    if (specials) {
        /* Inf and NaN through a row and a gain; outputs that round to Inf,
         * overflow FP32, flush to zero, are exactly zero */
        x[3 * C + 1] = NAN, x[5 * C] = INFINITY;
        w[0] = 3.3e38f, w[1] = INFINITY, w[2] = 1e-44f, b[2] = 0.0f, w[3] = 0.0f, b[3] = 0.0f;
        w[4] = 0.0f, b[4] = 3.3990e38f, w[C - 1] = 1e-40f, b[C - 1] = 0.0f;
        /* half the smallest subnormal once scaled, a tie to zero: E4M3 x 0.5, E5M2 x 2^14 */
        w[20] = w[21] = 0.0f, b[20] = 0x1p-9f, b[21] = -0x1p-31f; /* in a vector of plain values */
    }
    float *zy = calloc((size_t)N * C, sizeof(float)), *zb = calloc((size_t)C, sizeof(float));
    float *res = malloc(sizeof(float) * N * C), *o0 = malloc(sizeof(float) * N * C), *o1 = malloc(sizeof(float) * N * C);
    float *m = malloc(sizeof(float) * N), *r = malloc(sizeof(float) * N);
    residual_layernorm_forward(res, o0, m, r, x, zy, zb, NULL, NULL, NULL, w, b, N, 1, C, NULL);
    qp_linear_rounded t = ask(k);
    residual_layernorm_forward(res, o1, m, r, x, zy, zb, NULL, NULL, NULL, w, b, N, 1, C, &t);
    char what[128];
    describe(what, sizeof what, "layernorm", N, C, k, specials);
    same_as_quant(what, o1, &t, o0, N, C);
    if (specials) CHECK(t.tally.nonfinite > 0 && t.tally.sat > 0 && t.tally.flushed > 0, "%s: every kind of count", what);
    free(x), free(w), free(b), free(zy), free(zb), free(res), free(o0), free(o1), free(m), free(r);
}

static void test_gelu(int N, int H, int k, int specials)
{
    float *x = data((int64_t)N * H, 3.0f, specials), *fb = data(H, 0.2f, 0);
    if (specials) x[7] = -30.0f, x[8] = -1e-44f, fb[7] = fb[8] = 0.0f; /* a zero and a flushed subnormal */
    float *y0 = malloc(sizeof(float) * N * H), *y1 = malloc(sizeof(float) * N * H);
    bias_gelu_forward(x, y0, fb, N, H, NULL);
    qp_linear_rounded t = ask(k);
    bias_gelu_forward(x, y1, fb, N, H, &t);
    char what[128];
    describe(what, sizeof what, "gelu forward", N, H, k, specials);
    same_as_quant(what, y1, &t, y0, N, H);
    if (specials) CHECK(t.tally.nonfinite > 0 && t.tally.sat > 0 && t.tally.flushed > 0, "%s: every kind of count", what);

    /* backward: d *= gelu'(x + b) in place, the bias gradient of the products before quantization */
    float *dout = data((int64_t)N * H, 1e-3f, specials), *d0 = malloc(sizeof(float) * N * H),
          *d1 = malloc(sizeof(float) * N * H);
    memcpy(d0, dout, sizeof(float) * N * H);
    memcpy(d1, dout, sizeof(float) * N * H);
    float *db0 = calloc((size_t)H, sizeof(float)), *db1 = calloc((size_t)H, sizeof(float));
    float *part = malloc(sizeof(float) * H * ((N + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK));
    gelu_backward(d0, db0, part, x, fb, N, H, NULL);
    qp_linear_rounded tb = ask(k);
    gelu_backward(d1, db1, part, x, fb, N, H, &tb);
    describe(what, sizeof what, "gelu backward", N, H, k, specials);
    same_as_quant(what, d1, &tb, d0, N, H);
    CHECK(memcmp(db0, db1, sizeof(float) * H) == 0, "%s: the bias gradient is the unquantized values'", what);
    free(x), free(fb), free(y0), free(y1), free(dout), free(d0), free(d1), free(db0), free(db1), free(part);
}

static void test_rmsnorm(int N, int C, int k, int specials)
{
    float *x = data((int64_t)N * C, 2.0f, 0), *w = data(C, 1.0f, 0);
    if (specials) x[3 * C + 1] = NAN, x[5 * C] = INFINITY, w[0] = 3.39e38f, w[1] = INFINITY, w[2] = 1e-44f, w[3] = 0.0f;
    float *zy = calloc((size_t)N * C, sizeof(float)), *res = malloc(sizeof(float) * N * C);
    float *o0 = malloc(sizeof(float) * N * C), *o1 = malloc(sizeof(float) * N * C), *r = malloc(sizeof(float) * N);
    residual_rmsnorm_forward(res, o0, r, x, zy, NULL, NULL, w, N, C, NULL);
    qp_linear_rounded t = ask(k);
    residual_rmsnorm_forward(res, o1, r, x, zy, NULL, NULL, w, N, C, &t);
    char what[128];
    describe(what, sizeof what, "rmsnorm", N, C, k, specials);
    same_as_quant(what, o1, &t, o0, N, C);
    if (specials) CHECK(t.tally.nonfinite > 0 && t.tally.flushed > 0, "%s: non-finite and flushed counts", what);
    free(x), free(w), free(zy), free(res), free(o0), free(o1), free(r);
}

static void test_swiglu(int N, int H, int k, int specials)
{
    const int64_t n = (int64_t)N * H;
    float *ga = data(n, 2.0f, specials), *u = data(n, 1.0f, specials);
    float *h0 = malloc(sizeof(float) * n), *h1 = malloc(sizeof(float) * n);
    swiglu_forward(h0, ga, u, N, H, NULL);
    qp_linear_rounded t = ask(k);
    swiglu_forward(h1, ga, u, N, H, &t);
    char what[128];
    describe(what, sizeof what, "swiglu forward", N, H, k, specials);
    same_as_quant(what, h1, &t, h0, N, H);
    float *dout = data(n, 1e-2f, specials), *dh0 = malloc(sizeof(float) * n), *dh1 = malloc(sizeof(float) * n);
    float *du0 = malloc(sizeof(float) * n), *du1 = malloc(sizeof(float) * n);
    memcpy(dh0, dout, sizeof(float) * n);
    memcpy(dh1, dout, sizeof(float) * n);
    swiglu_backward(dh0, du0, ga, u, N, H, NULL, NULL);
    qp_linear_rounded th = ask(k), tu = ask(k);
    swiglu_backward(dh1, du1, ga, u, N, H, &th, &tu);
    describe(what, sizeof what, "swiglu backward (gate)", N, H, k, specials);
    same_as_quant(what, dh1, &th, dh0, N, H);
    describe(what, sizeof what, "swiglu backward (up)", N, H, k, specials);
    same_as_quant(what, du1, &tu, du0, N, H);
    free(ga), free(u), free(h0), free(h1), free(dout), free(dh0), free(dh1), free(du0), free(du1);
}

/* The GPT's attention backward: dqkv quantized after its bias gradient's
 * sums, by the attention tasks (T a multiple of QP_ROW_BLOCK) or by the
 * pass that sums the rows otherwise. */
static void test_attention_backward(int B, int T, int C, int NH, int k, int specials)
{
    const int BT = B * T;
    const int64_t nq = (int64_t)BT * 3 * C, no = (int64_t)BT * C;
    float *qkv0 = data(nq, 1.0f, 0), *qb = data(3 * C, 0.1f, 0), *dout = data(no, 1e-2f, specials);
    float *qkv = malloc(sizeof(float) * nq), *out = malloc(sizeof(float) * no), *lse = malloc(sizeof(float) * BT * NH);
    memcpy(qkv, qkv0, sizeof(float) * nq);
    attention_forward(out, lse, qkv, qb, B, T, C, NH);
    float *d0 = malloc(sizeof(float) * nq), *d1 = malloc(sizeof(float) * nq);
    float *db0 = calloc((size_t)3 * C, sizeof(float)), *db1 = calloc((size_t)3 * C, sizeof(float));
    float *part = malloc(sizeof(float) * 3 * C * ((BT + QP_ROW_BLOCK - 1) / QP_ROW_BLOCK));
    attention_backward(d0, db0, part, dout, out, lse, qkv, B, T, C, NH, NULL);
    qp_linear_rounded t = ask(k);
    attention_backward(d1, db1, part, dout, out, lse, qkv, B, T, C, NH, &t);
    char what[128], kernel[64];
    snprintf(kernel, sizeof kernel, "attention backward (T%d, %d heads)", T, NH);
    describe(what, sizeof what, kernel, BT, 3 * C, k, specials);
    same_as_quant(what, d1, &t, d0, BT, 3 * C);
    CHECK(memcmp(db0, db1, sizeof(float) * 3 * C) == 0, "%s: the bias gradient is the unquantized values'", what);
    free(qkv0), free(qb), free(dout), free(qkv), free(out), free(lse), free(d0), free(d1), free(db0), free(db1),
        free(part);
}

/* The Llama's rotation of the q and k gradients, each whole row (v too)
 * quantized after it. */
static void test_rope_backward(int N, int T, int C, int NH, int KVH, int k, int specials)
{
    const qp_gpt_config c = {.arch = QP_ARCH_LLAMA, .dim = C, .heads = NH, .kv_heads = KVH, .max_seq = T};
    const qp_att_layout al = llama_att_layout(&c);
    const int half = al.hs / 2;
    float *tab = malloc(sizeof(float) * 2 * T * half);
    qp_llama_rope_table(tab, T, al.hs);
    const int64_t n = (int64_t)N * al.rs;
    float *d0 = data(n, 1e-2f, specials), *d1 = malloc(sizeof(float) * n);
    memcpy(d1, d0, sizeof(float) * n);
    rope_forward(d0, tab, &al, T, N, T, 1, NULL);
    qp_linear_rounded t = ask(k);
    rope_forward(d1, tab, &al, T, N, T, 1, &t);
    char what[128], kernel[64];
    snprintf(kernel, sizeof kernel, "rope backward (%d/%d heads)", NH, KVH);
    describe(what, sizeof what, kernel, N, (int)al.rs, k, specials);
    same_as_quant(what, d1, &t, d0, N, (int)al.rs);
    free(tab), free(d0), free(d1);
}

static void test_kernels(void)
{
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (int k = 0; k < N_KINDS; k++)
            for (int specials = 0; specials < 2; specials++) {
                test_layernorm(70, 37, k, specials);
                test_layernorm(70, 256, k, specials);
                test_gelu(70, 37, k, specials);
                test_gelu(70, 512, k, specials);
                test_rmsnorm(70, 37, k, specials);
                test_rmsnorm(70, 256, k, specials);
                test_swiglu(70, 37, k, specials);
                test_swiglu(70, 176, k, specials);
                test_attention_backward(2, 32, 64, 2, k, specials); /* the tasks round */
                test_attention_backward(3, 20, 40, 2, k, specials); /* the row pass rounds */
                test_rope_backward(70, 35, 64, 4, 2, k, specials);
                test_rope_backward(70, 35, 40, 2, 1, k, specials);
            }
    }
}

/* ---- the dispatch ------------------------------------------------------------ */

static void no_qerr(const qp_qerr_row *row, void *user) { (void)row, (void)user; }

static qp_linear *dispatch_rq(const char *recipe_spec, qp_recipe *r, qp_gemm *gemm, int layers, int requantize)
{
    char err[256];
    CHECK(qp_recipe_parse(recipe_spec, r, err, sizeof err) == 0, "recipe %s: %s", recipe_spec, err);
    const qp_linear_cfg lc = {.n_layers = layers, .max_elems = 1 << 16, .seed = 7, .recipe = r, .gemm = gemm,
                              .on_qerr = no_qerr, .requantize = requantize};
    qp_linear *l = qp_linear_create(&lc, err, sizeof err);
    CHECK(l != NULL, "dispatch for %s: %s", recipe_spec, err);
    return l;
}

static qp_linear *dispatch(const char *recipe_spec, qp_recipe *r, qp_gemm *gemm, int layers)
{
    return dispatch_rq(recipe_spec, r, gemm, layers, 0);
}

/* qp_linear_takes_rounded with the answer thrown away but its format */
static int takes(const qp_linear *l, int layer, qp_gemm_id g, qp_operand o, qp_fmt want)
{
    qp_linear_rounded r;
    return qp_linear_takes_rounded(l, layer, g, o, &r) && r.fmt == want;
}

static void test_dispatch(qp_gemm *gemm)
{
    qp_recipe r;
    qp_linear *l = dispatch("bf16", &r, gemm, 2);
    if (!l) return;
    qp_linear_begin_step(l, 0, 0);
    static const qp_gemm_id block[] = {QP_GEMM_QKV, QP_GEMM_ATTPROJ, QP_GEMM_FC, QP_GEMM_FCPROJ};
    int ok = 1;
    for (int layer = 0; layer < 2; layer++)
        for (int i = 0; i < 4; i++)
            ok &= takes(l, layer, block[i], QP_OPND_X, QP_FMT_BF16) && takes(l, layer, block[i], QP_OPND_DY, QP_FMT_BF16) &&
                  !takes(l, layer, block[i], QP_OPND_W, QP_FMT_BF16);
    CHECK(ok, "bf16 on an FP32 GEMM: X and dY of every block GEMM in BF16, never W");
    qp_linear_rounded how;
    CHECK(qp_linear_takes_rounded(l, 0, QP_GEMM_QKV, QP_OPND_X, &how) && how.scale == 1.0f, "BF16 at scale 1");
    CHECK(!takes(l, 2, QP_GEMM_QKV, QP_OPND_X, QP_FMT_BF16) && !takes(l, -1, QP_GEMM_FC, QP_OPND_X, QP_FMT_BF16) &&
              !takes(l, 0, QP_GEMM_HEAD, QP_OPND_X, QP_FMT_BF16),
          "no layer outside the blocks, not the head");
    qp_linear_begin_step(l, 1, 1);
    CHECK(!takes(l, 0, QP_GEMM_FC, QP_OPND_X, QP_FMT_BF16), "not on a step that records quantization errors");
    qp_linear_begin_step(l, 2, 0);
    CHECK(takes(l, 0, QP_GEMM_FC, QP_OPND_X, QP_FMT_BF16), "again on the next step");
    qp_linear_destroy(l);

    /* fp8: E4M3 X and E5M2 dY at the delayed scale; fp8-current: its scale comes from the tensor's amax */
    l = dispatch("fp8", &r, gemm, 2);
    if (!l) return;
    qp_linear_begin_step(l, 0, 0);
    CHECK(takes(l, 0, QP_GEMM_FC, QP_OPND_X, QP_FMT_FP8_E4M3) && takes(l, 1, QP_GEMM_QKV, QP_OPND_DY, QP_FMT_FP8_E5M2),
          "fp8 (delayed): E4M3 X, E5M2 dY");
    CHECK(qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_X, &how) &&
              how.scale == qp_linear_scaling(l, 0, QP_GEMM_FC, QP_OPND_X)->scale,
          "fp8: at the scaling state's scale (%g)", how.scale);
    enum { M = 32, IC = 16, OC = 16 };
    float X[M * IC], W[OC * IC], Y[M * OC], dX[M * IC], dW[OC * IC];
    for (int i = 0; i < M * IC; i++) X[i] = (float)(i % 7) - 3.0f, dX[i] = 0.0f;
    for (int i = 0; i < OC * IC; i++) W[i] = (float)(i % 5) - 2.0f, dW[i] = 0.0f;
    for (int i = 0; i < M * OC; i++) Y[i] = 12345.0f;
    qp_linear_rounded other = how;
    other.scale *= 2.0f;
    CHECK(qp_linear_forward_rounded(l, 0, QP_GEMM_FC, Y, X, &other, W, NULL, M, IC, OC) == -1 && Y[0] == 12345.0f &&
              strstr(qp_linear_error(l), "handed over quantized") != NULL,
          "X at another scale than the dispatch's: %s", qp_linear_error(l));
    qp_linear_rounded dy_how;
    float db[OC];
    for (int i = 0; i < OC; i++) db[i] = 0.0f;
    CHECK(qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_DY, &dy_how) &&
              qp_linear_backward_rounded(l, 0, QP_GEMM_FC, dX, dW, db, Y, &dy_how, X, W, M, IC, OC, 0) == -1 &&
              dW[0] == 0.0f && strstr(qp_linear_error(l), "bias gradient") != NULL,
          "a quantized dY with a bias gradient to sum: %s", qp_linear_error(l));
    other = how;
    other.fmt = QP_FMT_BF16;
    CHECK(qp_linear_forward_rounded(l, 0, QP_GEMM_FC, Y, X, &other, W, NULL, M, IC, OC) == -1 && Y[0] == 12345.0f,
          "X in another format than the dispatch's: %s", qp_linear_error(l));
    qp_linear_destroy(l);

    /* --requantize: the backward quantizes X again from what the forward read, so X stays unquantized */
    l = dispatch_rq("fp8", &r, gemm, 2, 1);
    if (!l) return;
    qp_linear_begin_step(l, 0, 0);
    CHECK(!qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_X, &how) && takes(l, 0, QP_GEMM_FC, QP_OPND_DY, QP_FMT_FP8_E5M2),
          "requantizing: dY, not X");
    qp_linear_destroy(l);

    l = dispatch("fp8-current", &r, gemm, 2);
    if (!l) return;
    qp_linear_begin_step(l, 0, 0);
    CHECK(!qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_X, &how) &&
              !qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_DY, &how),
          "not under current scaling");
    /* handed over all the same: an error, nothing multiplied */
    const qp_linear_rounded t = {QP_FMT_FP8_E4M3, 1.0f, {0, M * IC, 0, 0, 0x40400000u}};
    CHECK(qp_linear_forward_rounded(l, 0, QP_GEMM_FC, Y, X, &t, W, NULL, M, IC, OC) == -1 && Y[0] == 12345.0f &&
              strstr(qp_linear_error(l), "handed over quantized") != NULL,
          "an X fp8-current does not take: %s", qp_linear_error(l));
    CHECK(qp_linear_backward_rounded(l, 0, QP_GEMM_FC, dX, dW, NULL, Y, &t, X, W, M, IC, OC, 0) == -1 && dW[0] == 0.0f,
          "a dY fp8-current does not take: %s", qp_linear_error(l));
    qp_linear_destroy(l);

    /* the nvfp4 preset keeps its last block in BF16: that block's inputs */
    l = dispatch("nvfp4", &r, gemm, 3);
    if (!l) return;
    qp_linear_begin_step(l, 0, 0);
    CHECK(!qp_linear_takes_rounded(l, 0, QP_GEMM_FC, QP_OPND_X, &how) && takes(l, 2, QP_GEMM_FC, QP_OPND_X, QP_FMT_BF16),
          "nvfp4: the BF16 last block's, not the NVFP4 blocks'");
    qp_linear_destroy(l);
}

/* ---- a whole model ---------------------------------------------------------- */

typedef struct {
    qp_gpt m;
    qp_linear *lin;
    qp_recipe recipe;
} model;

static int model_init(model *f, qp_gemm *gemm, const char *recipe, const qp_gpt_config *c, int B, int T, int observe)
{
    char err[256];
    CHECK(qp_recipe_parse(recipe, &f->recipe, err, sizeof err) == 0, "recipe: %s", err);
    if (qp_gpt_init(&f->m, c, B, T, 11, err, sizeof err)) {
        CHECK(0, "init: %s", err);
        return -1;
    }
    tm_perturb(&f->m, 11);
    const qp_linear_cfg lc = {.n_layers = c->layers, .max_elems = qp_gpt_max_gemm_elems(c, B, T), .seed = 11,
                              .recipe = &f->recipe, .gemm = gemm};
    f->lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(f->lin != NULL, "linear: %s", err);
    f->m.observe = observe; /* with no observer (on_input NULL): only the rounding changes */
    return f->lin ? 0 : -1;
}

static void test_model(qp_gemm *gemm, const char *recipe, qp_arch arch, int C, int T)
{
    const int llama = arch == QP_ARCH_LLAMA;
    qp_gpt_config c = {.arch = arch, .vocab = 64, .layers = 2, .heads = 2, .kv_heads = llama ? 1 : 0, .dim = C,
                       .max_seq = T};
    const int B = 2, BT = B * T;
    model a, b; /* a: the producers round; b: the dispatch does */
    if (model_init(&a, gemm, recipe, &c, B, T, 0) || model_init(&b, gemm, recipe, &c, B, T, 1)) return;
    const int fp8 = strcmp(recipe, "fp8") == 0;
    int32_t in[BT], tg[BT];
    uint64_t s = 5;
    for (int i = 0; i < BT; i++) in[i] = (int32_t)(tm_next(&s) % 64), tg[i] = (int32_t)(tm_next(&s) % 64);
    char what[64];
    for (int step = 0; step < 2; step++) {
        snprintf(what, sizeof what, "%s %s C=%d T=%d step %d", llama ? "Llama" : "GPT", recipe, C, T, step);
        if (step == 1) /* block 1's MLP input: an Inf */
            *(llama ? &a.m.lparams.ln2w[C + 3] : &a.m.params.ln2w[C + 3]) =
                *(llama ? &b.m.lparams.ln2w[C + 3] : &b.m.params.ln2w[C + 3]) = INFINITY;
        model *both[2] = {&a, &b};
        for (int k = 0; k < 2; k++) {
            model *f = both[k];
            qp_linear_begin_step(f->lin, step, 0);
            qp_gpt_zero_grad(&f->m);
            CHECK(qp_gpt_forward(&f->m, f->lin, in, tg, B, T) == 0 &&
                      qp_gpt_backward(&f->m, f->lin, in, tg, 1.0f) == 0 && qp_linear_flush(f->lin) == 0,
                  "%s: %s", what, qp_linear_error(f->lin));
        }
        CHECK(takes(a.lin, 0, QP_GEMM_QKV, QP_OPND_X, fp8 ? QP_FMT_FP8_E4M3 : QP_FMT_BF16), "%s: the producers quantize",
              what);
        /* what ln1 holds: values of the format (FP8's unscaled: at most 4 significant bits) or FP32's */
        int a_q = 1, b_q = 1;
        const uint32_t low = fp8 ? 0xFFFFFu : 0xFFFFu;
        const float *ln1a = llama ? a.m.lacts.ln1 : a.m.acts.ln1, *ln1b = llama ? b.m.lacts.ln1 : b.m.acts.ln1;
        for (int i = 0; i < BT * C; i++) {
            a_q &= (qp_f32_bits(ln1a[i]) & low) == 0;
            b_q &= (qp_f32_bits(ln1b[i]) & low) == 0;
        }
        CHECK(a_q && !b_q, "%s: ln1 holds the format's values where its producer quantizes, FP32 where the dispatch does",
              what);
        CHECK(memcmp(qp_model_logits(&a.m), qp_model_logits(&b.m), sizeof(float) * BT * 64) == 0 &&
                  memcmp(qp_model_losses(&a.m), qp_model_losses(&b.m), sizeof(float) * BT) == 0,
              "%s: logits and losses bit for bit", what);
        CHECK(memcmp(a.m.grads_memory, b.m.grads_memory, sizeof(float) * (size_t)a.m.num_params) == 0,
              "%s: every gradient bit for bit", what);
        int64_t ea[QP_EV_COUNT], eb[QP_EV_COUNT];
        qp_linear_event_counts(a.lin, ea);
        qp_linear_event_counts(b.lin, eb);
        CHECK(memcmp(ea, eb, sizeof ea) == 0, "%s: the same events", what);
        if (step == 1) CHECK(ea[QP_EV_NONFINITE] > 0, "%s: the Inf counted (non-finite events: %lld)", what,
                             (long long)ea[QP_EV_NONFINITE]);
        int same = 1;
        for (int layer = 0; layer < 2; layer++)
            for (int g = 0; g < QP_BLOCK_GEMMS; g++)
                for (int o = 0; o < QP_OPND_COUNT; o++) {
                    const qp_scaling_state *x = qp_linear_scaling(a.lin, layer, (qp_gemm_id)g, (qp_operand)o),
                                           *y = qp_linear_scaling(b.lin, layer, (qp_gemm_id)g, (qp_operand)o);
                    same &= x->n_updates == y->n_updates && x->overflow_ema == y->overflow_ema &&
                            x->underflow_ema == y->underflow_ema && x->last_scale == y->last_scale &&
                            x->scale == y->scale && x->hist_count == y->hist_count &&
                            (x->hist_count == 0 || /* no history allocated: NULL */
                             memcmp(x->amax_history, y->amax_history, sizeof(float) * (size_t)x->hist_count) == 0);
                }
        CHECK(same, "%s: the same scaling states", what);
    }
    qp_linear_destroy(a.lin), qp_linear_destroy(b.lin);
    qp_gpt_free(&a.m), qp_gpt_free(&b.m);
}

int main(void)
{
    unsetenv("QP_PRODUCER_ROUNDING");
    test_kernels();
    /* the FP32 kernel of BF16 products, whatever this CPU's auto choice: the
     * operations that take rounded operands */
    setenv("QP_GEMM", "f32", 1);
    char err[256];
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    CHECK(gemm != NULL, "gemm: %s", err);
    if (gemm) {
        omp_set_num_threads(2);
        test_dispatch(gemm);
        static const char *const recipes[] = {"bf16", "fp8"};
        for (int r = 0; r < 2; r++) {
            test_model(gemm, recipes[r], QP_ARCH_GPT, 64, 16);
            test_model(gemm, recipes[r], QP_ARCH_GPT, 64, 32); /* attention's tasks round dqkv */
            test_model(gemm, recipes[r], QP_ARCH_GPT, 40, 16);
            test_model(gemm, recipes[r], QP_ARCH_LLAMA, 64, 16);
            test_model(gemm, recipes[r], QP_ARCH_LLAMA, 40, 16);
        }
        qp_gemm_destroy(gemm);
    }
    return qp_test_finish("test_producer_rounding");
}
