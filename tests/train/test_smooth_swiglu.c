/* test_smooth_swiglu.c — Smooth-SwiGLU (qp_gpt_config.smooth_swiglu, Fishman
 * et al. 2024) on a Llama with an injected outlier channel, and the outlier
 * statistics (/quant/outliers, qp_outliers.h) that show it.
 *
 * The outlier: one SwiGLU channel's gate (W1) and up (W3) rows scaled up
 * together, as the weight alignment Fishman et al. describe does, so that
 * channel of the down projection's input is thousands of times the others.
 * With the model's observer (what qtrain logs to /quant/outliers) and the
 * dispatch's error records (/quant/error), one forward in fp8-current
 * without and with Smooth-SwiGLU:
 *   - without: the down input's amax is the outlier channel's, its channel
 *     amax ratio in the thousands, that one channel holds nearly all the
 *     energy (top-k share, k = 1 of H), the kurtosis is huge;
 *   - with: the same GEMM input as the dispatch gets it (scaled by s) has
 *     amax < 2 (every channel's max in [1, 2)), channel amax ratio <= 2, an
 *     even energy share and a kurtosis near a Gaussian's;
 *   - the other GEMMs' inputs (qkv, attproj, gate, up) are untouched by it.
 * And the fold is exact: in fp32 the losses and every gradient with and
 * without Smooth-SwiGLU are the same bits (the scales are powers of two).
 * Also qp_outlier_stats against a direct computation on a known tensor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_outliers.h"
#include "qp_test.h"
#include "test_model_util.h"

#define B 4
#define T 16
#define J 7 /* the outlier channel */

typedef struct {
    qp_outlier_row rows[64];
    char gemms[64][16];
    int n;
    qp_qerr_row down_x; /* the dispatch's record of the down GEMM's x in fprop */
    int have_down_x;
} seen;

static void on_input(const qp_outlier_row *r, void *user)
{
    seen *s = user;
    if (s->n < 64) {
        snprintf(s->gemms[s->n], sizeof s->gemms[0], "%s", r->gemm);
        s->rows[s->n] = *r;
        s->rows[s->n].gemm = s->gemms[s->n];
        s->n++;
    }
}

static void on_qerr(const qp_qerr_row *r, void *user)
{
    seen *s = user;
    if (!strcmp(r->gemm, "down") && !strcmp(r->operand, "x") && !strcmp(r->pass, "fprop")) s->down_x = *r, s->have_down_x = 1;
}

static const qp_outlier_row *find(const seen *s, const char *gemm)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->rows[i].gemm, gemm)) return &s->rows[i];
    return NULL;
}

/* A Llama (one block, 32 wide, H 64) with channel J of the SwiGLU blown up;
 * one forward (and backward) in `recipe`; its statistics and gradients. */
static int run(const char *recipe, int smooth, seen *s, float **grads, double *loss)
{
    char err[256];
    const qp_gpt_config c = {.vocab = 64, .max_seq = T, .layers = 1, .heads = 2, .dim = 32, .arch = QP_ARCH_LLAMA,
                             .mlp_hidden = 64, .smooth_swiglu = smooth};
    qp_gpt m;
    qp_recipe rec;
    qp_gemm *g = qp_gemm_create(err, sizeof err);
    CHECK(g && qp_recipe_parse(recipe, &rec, err, sizeof err) == 0 && qp_gpt_init(&m, &c, B, T, 3, err, sizeof err) == 0,
          "set-up: %s", err);
    memset(s, 0, sizeof *s);
    const qp_linear_cfg lc = {.n_layers = 1, .max_elems = qp_gpt_max_gemm_elems(&c, B, T), .seed = 3, .recipe = &rec,
                              .gemm = g, .on_qerr = on_qerr, .user = s};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(lin != NULL, "linear: %s", err);
    const int C = c.dim;
    for (int k = 0; k < C; k++) m.lparams.gatew[J * C + k] *= 40.0f, m.lparams.upw[J * C + k] *= 400.0f;
    m.observe = 1, m.on_input = on_input, m.observer_user = s;
    int32_t in[B * T], tg[B * T];
    uint64_t r = 17;
    for (int i = 0; i < B * T; i++) in[i] = (int32_t)(tm_next(&r) % 64), tg[i] = (int32_t)(tm_next(&r) % 64);
    qp_linear_begin_step(lin, 0, 1);
    qp_gpt_zero_grad(&m);
    const int ok = qp_gpt_forward(&m, lin, in, tg, B, T) == 0;
    m.observe = 0;
    CHECK(ok && qp_gpt_backward(&m, lin, in, tg, 1.0f) == 0, "%s forward/backward: %s", recipe, qp_linear_error(lin));
    *loss = m.mean_loss;
    if (grads) {
        *grads = malloc((size_t)m.num_params * sizeof(float));
        memcpy(*grads, m.grads_memory, (size_t)m.num_params * sizeof(float));
    }
    const int64_t np = m.num_params;
    qp_linear_destroy(lin);
    qp_gpt_free(&m);
    qp_gemm_destroy(g);
    return (int)np;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* qp_outlier_stats against the definitions, on a tensor with one loud channel. */
static void test_stats(void)
{
    const int M = 50, C = 1500; /* k = ceil(1.5) = 2 */
    float *x = malloc(sizeof(float) * M * C);
    uint64_t r = 5;
    for (int i = 0; i < M * C; i++) x[i] = tm_normal(&r);
    for (int i = 0; i < M; i++) x[(int64_t)i * C + 321] *= 30.0f; /* the loud channel */
    x[7] = NAN, x[8] = INFINITY;                                  /* skipped, as non-finite */
    qp_outlier_col *cols = malloc(sizeof *cols * C);
    double *scr = malloc(sizeof *scr * C);
    qp_outlier_row row;
    qp_outlier_stats(x, M, C, cols, scr, &row);
    double n = 0, s1 = 0, amax = 0, *e = calloc(C, sizeof(double)), *ca = calloc(C, sizeof(double));
    for (int i = 0; i < M * C; i++)
        if (isfinite(x[i])) n++, s1 += x[i], amax = fmax(amax, fabs(x[i])), e[i % C] += (double)x[i] * x[i],
                            ca[i % C] = fmax(ca[i % C], fabs(x[i]));
    const double mu = s1 / n;
    double m2 = 0, m4 = 0, tot = 0;
    for (int i = 0; i < M * C; i++)
        if (isfinite(x[i])) m2 += pow(x[i] - mu, 2), m4 += pow(x[i] - mu, 4);
    m2 /= n, m4 /= n;
    int top = 0;
    for (int c = 0; c < C; c++) tot += e[c], top = e[c] > e[top] ? c : top;
    double best2 = 0; /* the two largest energies */
    for (int c = 0; c < C; c++)
        if (c != top) best2 = fmax(best2, e[c]);
    CHECK(row.tokens == M && row.channels == C && row.topk == 2, "shape %lld x %lld, k %lld", (long long)row.tokens,
          (long long)row.channels, (long long)row.topk);
    CHECK(row.amax == amax && row.top_channel == 321 && top == 321, "amax %g (want %g), top channel %lld", row.amax,
          amax, (long long)row.top_channel);
    CHECK(fabs(row.kurtosis - m4 / (m2 * m2)) < 1e-9 * (m4 / (m2 * m2)), "kurtosis %.12g, direct %.12g", row.kurtosis,
          m4 / (m2 * m2));
    CHECK(fabs(row.topk_frac - (e[top] + best2) / tot) < 1e-12, "top-k share %.12g, direct %.12g", row.topk_frac,
          (e[top] + best2) / tot);
    qsort(ca, C, sizeof *ca, cmp_double);
    const double med = 0.5 * (ca[C / 2 - 1] + ca[C / 2]);
    CHECK(fabs(row.chan_amax_ratio - ca[C - 1] / med) < 1e-12 * row.chan_amax_ratio, "channel amax ratio %.12g, direct %.12g",
          row.chan_amax_ratio, ca[C - 1] / med);
    /* a Gaussian tensor's kurtosis is near 3, the loud channel's tensor's far above */
    CHECK(row.kurtosis > 50, "kurtosis %g of a tensor with a 30x channel", row.kurtosis);
    for (int i = 0; i < M; i++) x[(int64_t)i * C + 321] /= 30.0f;
    x[7] = x[8] = 0.5f;
    qp_outlier_stats(x, M, C, cols, scr, &row);
    CHECK(fabs(row.kurtosis - 3.0) < 0.2, "a Gaussian's kurtosis %g", row.kurtosis);
    CHECK(row.topk_frac < 4.0 / C, "a Gaussian's top-2 of %d channels hold %g", C, row.topk_frac);
    free(x), free(cols), free(scr), free(e), free(ca);
}

int main(void)
{
    test_stats();

    seen off, on;
    double loss_off, loss_on;
    run("fp8-current", 0, &off, NULL, &loss_off);
    run("fp8-current", 1, &on, NULL, &loss_on);
    const qp_outlier_row *d0 = find(&off, "down"), *d1 = find(&on, "down");
    CHECK(d0 && d1 && off.n == 5 && on.n == 5, "one row per block GEMM input (%d, %d)", off.n, on.n);
    if (d0 && d1) {
        printf("down projection input          amax   kurtosis  top-1 share  channel amax ratio   fp8 rel_l2 of x\n");
        printf("  without Smooth-SwiGLU  %12.4g %10.4g %12.4g %19.4g %17.4g\n", d0->amax, d0->kurtosis, d0->topk_frac,
               d0->chan_amax_ratio, off.down_x.rel_l2);
        printf("  with Smooth-SwiGLU     %12.4g %10.4g %12.4g %19.4g %17.4g\n", d1->amax, d1->kurtosis, d1->topk_frac,
               d1->chan_amax_ratio, on.down_x.rel_l2);
        CHECK(d0->top_channel == J && d0->chan_amax_ratio > 1000 && d0->topk_frac > 0.99 && d0->kurtosis > 100,
              "without: the injected channel %lld dominates (ratio %g, share %g, kurtosis %g)", (long long)d0->top_channel,
              d0->chan_amax_ratio, d0->topk_frac, d0->kurtosis);
        CHECK(d1->amax < 2.0 && d1->amax < d0->amax / 10, "with: amax %g (without %g)", d1->amax, d0->amax);
        CHECK(d1->chan_amax_ratio <= 2.0 && d1->topk_frac < 0.1 && d1->kurtosis < 10,
              "with: no outlier channel left (ratio %g, top-1 share %g, kurtosis %g)", d1->chan_amax_ratio, d1->topk_frac,
              d1->kurtosis);
        /* the dispatch quantized the scaled input: its record's amax is the observer's */
        CHECK(off.have_down_x && on.have_down_x && on.down_x.amax == d1->amax && off.down_x.amax == d0->amax,
              "/quant/error's amax of down's x (%g, %g) is the quantized input's (%g, %g)", off.down_x.amax,
              on.down_x.amax, d0->amax, d1->amax);
        /* (the relative L2 error printed is energy-weighted: the outlier
         * channel's, which per-tensor FP8 keeps, not the other channels',
         * which it pushes toward the subnormals; it is shown, not judged) */
    }
    for (int i = 0; i < 4 && i < off.n && i < on.n; i++)
        CHECK(!strcmp(off.rows[i].gemm, on.rows[i].gemm) && off.rows[i].amax == on.rows[i].amax &&
                  off.rows[i].kurtosis == on.rows[i].kurtosis,
              "%s's input is the same with and without Smooth-SwiGLU", off.rows[i].gemm);

    /* fp32: the fold is exact */
    float *g0, *g1;
    const int np = run("fp32", 0, &off, &g0, &loss_off);
    run("fp32", 1, &on, &g1, &loss_on);
    CHECK(loss_off == loss_on, "fp32 loss %.9g with, %.9g without", loss_on, loss_off);
    int differ = 0;
    for (int i = 0; i < np; i++) differ += !qp_same_float(g0[i], g1[i]);
    CHECK(differ == 0, "fp32: %d of %d gradients differ with Smooth-SwiGLU", differ, np);
    free(g0), free(g1);
    return qp_test_finish("test_smooth_swiglu");
}
