/* test_gemm_recipes.c — the precision dispatch (qp_linear) against quant/:
 * for every recipe, both transformer blocks of a two-block model and all
 * three passes, the product the dispatch computes must equal quant/'s
 * fully-scaled dequantization of each operand (qp_qdq, the formats and
 * per-tensor scales the recipe prescribes) multiplied in float64, within
 * FP32 accumulation error: |got - ref| <= 1e-5 * (sum_k |a_ik b_jk| + |the
 * accumulated-onto value|).
 *
 * What cannot be reproduced from outside qp_linear.c — the stochastic-rounding
 * stream and the RHT seed are derived inside it — is checked by what they must
 * satisfy instead:
 *   SR   every element within one grid step per operand element of the
 *        unquantized-dy product; the mean over 64 steps as close to that
 *        product as the mean of 64 of quant/'s own SR draws (unbiased, a new
 *        stream each step); reproducible for a step, different between steps;
 *   RHT  the weight gradient's error against the exact product is that of
 *        an independent emulation with another seed (to a factor of 2), and
 *        differs from the un-rotated quantized product.
 * Also: each recipe's plan is what qp_recipe.h documents, delayed scaling
 * runs its first step at scale 1 and the next from the previous amax, the
 * LM head is FP32 under every recipe, and the quantization-error records
 * match quant/'s error of the same operand.
 *
 * Every format of the table as an operand format (recipes of rules,
 * "x+w+dy=FORMAT"; contractions 256, 192 and 160, so FP8 blocks of 128 come
 * whole and partial): the same exact check, including the FP32-scaled FP8
 * blocks whose GEMM runs K-chunked (qp_gemm_run_kscaled); DeepSeek-V3's mix
 * (1x128 activations and gradients, 128x128 weights: the docs' recipe) and
 * other mixes; and the wgrad RHT of 16, 32, 64 and 128 points (rht=N),
 * reproduced exactly with the dispatch's public RHT seed
 * (qp_linear_rht_seed), and Transformer Engine's fixed-sign transform
 * (rht=te, the te-nvfp4 preset) reproduced with quant/'s qp_rht16_te, the
 * transform test_te_parity holds to TE's reference. The K-chunked GEMM alone
 * is checked against a float64 sum over chunks of (scale_a * scale_b) * the
 * exact product of the codes. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "qp_hadamard.h"
#include "qp_linear.h"
#include "qp_linear_host.h"
#include "qp_test.h"
#include "test_model_util.h"

enum { M = 32, IC = 64, OC = 96, NL = 2, SR_STEPS = 64 };
#define TOL 1e-5
#define REF_SEED 0x5EEDull /* the test's own SR and RHT seed: never the dispatch's */

typedef struct {
    const char *spec;
    qp_fmt x, w, dy;
    bool sr_dy, rht;
    qp_scaling_mode scaling;
    int bf16_last; /* blocks at the end kept in BF16, of NL = 2 */
} recipe_case;

/* qp_recipe.h's table, restated. */
static const recipe_case cases[] = {
    {"fp32", QP_FMT_FP32, QP_FMT_FP32, QP_FMT_FP32, false, false, QP_SCALING_CURRENT, 0},
    {"bf16", QP_FMT_BF16, QP_FMT_BF16, QP_FMT_BF16, false, false, QP_SCALING_CURRENT, 0},
    {"fp8", QP_FMT_FP8_E4M3, QP_FMT_FP8_E4M3, QP_FMT_FP8_E5M2, false, false, QP_SCALING_DELAYED, 0},
    {"fp8-current", QP_FMT_FP8_E4M3, QP_FMT_FP8_E4M3, QP_FMT_FP8_E5M2, false, false, QP_SCALING_CURRENT, 0},
    {"mxfp8", QP_FMT_MXFP8, QP_FMT_MXFP8, QP_FMT_MXFP8, false, false, QP_SCALING_CURRENT, 0},
    {"nvfp4", QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4, true, true, QP_SCALING_CURRENT, 1},
    {"nvfp4-naive", QP_FMT_NVFP4, QP_FMT_NVFP4, QP_FMT_NVFP4, false, false, QP_SCALING_CURRENT, 0},
    {"mxfp4", QP_FMT_MXFP4, QP_FMT_MXFP4, QP_FMT_MXFP4, false, false, QP_SCALING_CURRENT, 0},
    {"nvfp4,nvfp4-rht", QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4, true, false, QP_SCALING_CURRENT, 1},
    {"nvfp4-sr", QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4, false, true, QP_SCALING_CURRENT, 1},
    {"nvfp4-2d", QP_FMT_NVFP4, QP_FMT_NVFP4, QP_FMT_NVFP4, true, true, QP_SCALING_CURRENT, 1},
    {"nvfp4,nvfp4-rht,nvfp4-sr", QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4, false, false, QP_SCALING_CURRENT, 1},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The per-operand view of a plan that the references below are written in:
 * every recipe here gives an operand one format, rounding and scaling in all
 * its uses and an RHT only in wgrad, which check_plan asserts of the
 * resolved per-use plan before view() is trusted. */
typedef struct {
    qp_fmt fmt[QP_OPND_COUNT];
    bool sr[QP_OPND_COUNT];
    bool rht_wgrad;
    qp_scaling_mode scaling;
} op_plan;

static op_plan view(const qp_linear_plan *p)
{
    op_plan v;
    memset(&v, 0, sizeof v);
    for (int o = 0; o < QP_OPND_COUNT; o++) {
        const qp_use_plan *u = &p->use[p->owner[o]][o];
        v.fmt[o] = u->fmt, v.sr[o] = u->sr;
        if (u->scaling == QP_SCALING_DELAYED) v.scaling = QP_SCALING_DELAYED;
    }
    v.rht_wgrad = p->use[QP_PASS_WGRAD][QP_OPND_X].rht > 0;
    return v;
}

/* ---- data and references -------------------------------------------------- */

/* Normal values times `scale`, 2% of them outliers 30-100x larger. */
static void fill(float *x, int n, float scale, uint64_t *s)
{
    for (int i = 0; i < n; i++) {
        float v = scale * tm_normal(s);
        if (tm_uniform(s) < 0.02) v *= (float)(30.0 + 70.0 * tm_uniform(s));
        x[i] = v;
    }
}

/* dst (cols x rows) = src (rows x cols)^T */
static void transpose(const float *src, float *dst, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

static float amax_of(const float *x, int n)
{
    float a = 0.0f;
    for (int i = 0; i < n; i++) a = fmaxf(a, fabsf(x[i]));
    return a;
}

/* out = dequantize(quantize(in)) fully scaled, in (rows x cols) blocked along
 * cols; scale > 0 is a delayed per-tensor scale; rht: rotate first. */
static void ref_q(qp_fmt fmt, const float *in, float *out, int rows, int cols, float scale, bool sr, uint64_t stream,
                  bool rht)
{
    memcpy(out, in, (size_t)rows * cols * sizeof(float));
    if (rht) qp_rht16(out, rows, cols, REF_SEED);
    if (fmt == QP_FMT_FP32) return;
    const qp_qopts o = {.stochastic = sr, .seed = REF_SEED, .stream = stream, .scale = scale};
    qp_qdq(fmt, out, out, rows, cols, &o, NULL);
}

/* ref = a b^T and mag = |a| |b|^T in double; a is n x k, b is p x k. */
static void gemm_ref(const float *a, const float *b, int n, int p, int k, double *ref, double *mag)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p; j++) {
            double s = 0.0, m = 0.0;
            for (int q = 0; q < k; q++) {
                const double t = (double)a[(size_t)i * k + q] * b[(size_t)j * k + q];
                s += t;
                m += fabs(t);
            }
            ref[(size_t)i * p + j] = s;
            mag[(size_t)i * p + j] = m;
        }
}

/* Largest |got - (pre + ref + bias)| / (mag + |pre| + |bias|) over an n x p
 * result (pre, bias may be NULL); *nbad counts elements beyond TOL. */
static double compare(const float *got, const double *ref, const double *mag, const float *pre, const float *bias,
                      int n, int p, int *nbad)
{
    double worst = 0.0;
    *nbad = 0;
    for (int i = 0; i < n * p; i++) {
        const double pr = pre ? pre[i] : 0.0, bi = bias ? bias[i % p] : 0.0;
        const double scale = mag[i] + fabs(pr) + fabs(bi);
        const double d = fabs((double)got[i] - (pr + ref[i] + bi));
        if (!(d <= TOL * scale + 1e-30)) (*nbad)++;
        if (scale > 0.0 && d / scale > worst) worst = d / scale;
        if (!isfinite(got[i])) worst = INFINITY;
    }
    return worst;
}

static double frob_diff(const float *got, const float *pre, const double *ref, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        const double d = (double)got[i] - (pre ? pre[i] : 0.0) - ref[i];
        s += d * d;
    }
    return sqrt(s);
}

static double frob(const double *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* ---- one layer's tensors ---------------------------------------------------- */

typedef struct {
    float X[M * IC], W[OC * IC], dY[M * OC], b[OC];
    float Xt[IC * M], Wt[IC * OC], dYt[OC * M];     /* contraction-major copies */
    float Y[M * OC], dX[M * IC], dW[OC * IC], db[OC];
    float pdX[M * IC], pdW[OC * IC], pdb[OC];       /* values accumulated onto */
} layer_data;

static void make_layer(layer_data *d, float xs, float ws, float dys, uint64_t *s)
{
    fill(d->X, M * IC, xs, s);
    fill(d->W, OC * IC, ws, s);
    fill(d->dY, M * OC, dys, s);
    fill(d->b, OC, ws, s);
    fill(d->pdX, M * IC, dys * ws, s);
    fill(d->pdW, OC * IC, dys * xs, s);
    fill(d->pdb, OC, dys, s);
    transpose(d->X, d->Xt, M, IC);
    transpose(d->W, d->Wt, OC, IC);
    transpose(d->dY, d->dYt, M, OC);
}

static int run_layer(qp_linear *lin, int layer, qp_gemm_id g, layer_data *d)
{
    memcpy(d->dX, d->pdX, sizeof d->dX);
    memcpy(d->dW, d->pdW, sizeof d->dW);
    memcpy(d->db, d->pdb, sizeof d->db);
    if (qp_linear_forward(lin, layer, g, d->Y, d->X, d->W, d->b, M, IC, OC) ||
        qp_linear_backward(lin, layer, g, d->dX, d->dW, d->db, d->dY, d->X, d->W, M, IC, OC, 1)) {
        CHECK(0, "dispatch layer %d %s: %s", layer, qp_gemm_name(g), qp_linear_error(lin));
        return -1;
    }
    return 0;
}

/* ---- records ------------------------------------------------------------- */

typedef struct {
    int n;
    struct {
        int layer;
        char operand[8], pass[8];
        double rel_l2;
    } rows[64];
} qerr_log;

static void on_qerr(const qp_qerr_row *r, void *user)
{
    qerr_log *q = user;
    if (q->n < 64) {
        q->rows[q->n].layer = r->layer;
        snprintf(q->rows[q->n].operand, 8, "%s", r->operand);
        snprintf(q->rows[q->n].pass, 8, "%s", r->pass);
        q->rows[q->n].rel_l2 = r->rel_l2;
    }
    q->n++;
}

static double rel_l2(const float *x, const float *y, int n)
{
    double e = 0.0, s = 0.0;
    for (int i = 0; i < n; i++) e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]), s += (double)x[i] * x[i];
    return sqrt(e / s);
}

/* ---- the checks ----------------------------------------------------------- */

static double ref_mag[OC * IC], ref_val[OC * IC];
static float qa[OC * IC], qb[OC * IC];

/* SR bound: with a stochastically rounded 1x16-block operand A (n x k, blocks
 * along k) and a deterministic B, each product element is within
 * sum_k e_k |b_k| of the unquantized-A product, e_k = one grid step of E2M1 at
 * element k: at most max(0.5 |a_k|, 0.1 amax_block) (the step is 0.5, 1 or 2
 * block units for |a| below 2, 4, 6 units; a unit is amax_block/6 up to the
 * UE4M3 rounding of the block scale). Returns the number of violations. */
static int sr_bound_violations(const float *got, const float *pre, const float *a, const float *bq, int n, int p,
                               int k)
{
    static double e[OC * M];
    for (int i = 0; i < n; i++)
        for (int b0 = 0; b0 < k; b0 += QK_NVFP4) {
            const float am = amax_of(a + (size_t)i * k + b0, QK_NVFP4);
            for (int q = b0; q < b0 + QK_NVFP4; q++)
                e[(size_t)i * k + q] = fmax(0.5 * fabs(a[(size_t)i * k + q]), 0.1 * am);
        }
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p; j++) {
            double ref = 0.0, bound = 0.0, mag = 0.0;
            for (int q = 0; q < k; q++) {
                ref += (double)a[(size_t)i * k + q] * bq[(size_t)j * k + q];
                mag += fabs((double)a[(size_t)i * k + q] * bq[(size_t)j * k + q]);
                bound += e[(size_t)i * k + q] * fabs(bq[(size_t)j * k + q]);
            }
            const double pr = pre[(size_t)i * p + j];
            bound += TOL * (mag + 2.0 * bound + fabs(pr));
            bad += !(fabs((double)got[(size_t)i * p + j] - pr - ref) <= bound);
        }
    return bad;
}

typedef struct {
    double fprop, dgrad, wgrad, head; /* worst normalized difference of the exact checks (-1: not exact) */
    double sr_mean_ratio, rht_ratio;  /* statistical checks, dispatch / emulation (-1: none) */
} case_result;

/* The exact checks of one layer in one step; scales[o] is the delayed scale
 * each operand must have been quantized with (0: current scaling). */
static void check_layer(const char *spec, int step, int layer, const op_plan *pl, layer_data *d,
                        const float scales[QP_OPND_COUNT], case_result *res)
{
    const qp_fmt fx = pl->fmt[QP_OPND_X], fw = pl->fmt[QP_OPND_W], fdy = pl->fmt[QP_OPND_DY];
    const bool sr = pl->sr[QP_OPND_DY];
    int nbad;
    double w;
    /* fprop: Y = q(X) q(W)^T + b */
    ref_q(fx, d->X, qa, M, IC, scales[QP_OPND_X], false, 0, false);
    ref_q(fw, d->W, qb, OC, IC, scales[QP_OPND_W], false, 0, false);
    gemm_ref(qa, qb, M, OC, IC, ref_val, ref_mag);
    w = compare(d->Y, ref_val, ref_mag, NULL, d->b, M, OC, &nbad);
    res->fprop = fmax(res->fprop, w);
    CHECK(nbad == 0, "%s step %d layer %d fprop: %d of %d outside FP32 accumulation error (worst %.2e)", spec, step,
          layer, nbad, M * OC, w);
    /* dgrad: dX += q(dY) q(W^T)^T */
    if (!sr) {
        ref_q(fdy, d->dY, qa, M, OC, scales[QP_OPND_DY], false, 0, false);
        ref_q(fw, d->Wt, qb, IC, OC, scales[QP_OPND_W], false, 0, false);
        gemm_ref(qa, qb, M, IC, OC, ref_val, ref_mag);
        w = compare(d->dX, ref_val, ref_mag, d->pdX, NULL, M, IC, &nbad);
        res->dgrad = fmax(res->dgrad, w);
        CHECK(nbad == 0, "%s step %d layer %d dgrad: %d of %d outside FP32 accumulation error (worst %.2e)", spec,
              step, layer, nbad, M * IC, w);
    }
    /* wgrad: dW += q(dY^T) q(X^T)^T */
    if (!sr && !pl->rht_wgrad) {
        ref_q(fdy, d->dYt, qa, OC, M, scales[QP_OPND_DY], false, 0, false);
        ref_q(fx, d->Xt, qb, IC, M, scales[QP_OPND_X], false, 0, false);
        gemm_ref(qa, qb, OC, IC, M, ref_val, ref_mag);
        w = compare(d->dW, ref_val, ref_mag, d->pdW, NULL, OC, IC, &nbad);
        res->wgrad = fmax(res->wgrad, w);
        CHECK(nbad == 0, "%s step %d layer %d wgrad: %d of %d outside FP32 accumulation error (worst %.2e)", spec,
              step, layer, nbad, OC * IC, w);
    }
    /* db += column sums of dY, unquantized */
    int bad = 0;
    for (int j = 0; j < OC; j++) {
        double s = 0.0, m = 0.0;
        for (int i = 0; i < M; i++) s += d->dY[i * OC + j], m += fabs(d->dY[i * OC + j]);
        bad += !(fabs(d->db[j] - (d->pdb[j] + s)) <= TOL * (m + fabs(d->pdb[j])));
    }
    CHECK(bad == 0, "%s step %d layer %d: %d bias gradients wrong", spec, step, layer, bad);
}

/* SR on dy (dgrad, and wgrad when there is no RHT): bounds, reproducibility,
 * step dependence, unbiasedness. */
static void check_sr(qp_linear *lin, int layer, qp_gemm_id g, const op_plan *pl, layer_data *d,
                     case_result *res, const char *spec)
{
    static float first_dX[M * IC], first_dW[OC * IC];
    static double sum_dX[M * IC], sum_dW[OC * IC];
    memset(sum_dX, 0, sizeof sum_dX);
    memset(sum_dW, 0, sizeof sum_dW);
    const bool wgrad_sr_only = !pl->rht_wgrad;
    int bound_bad = 0, same_as_first = 0, repro_bad = 0;
    /* B operands are round-to-nearest: their reference quantization */
    static float wq_t[IC * OC], xq_t[IC * M];
    ref_q(pl->fmt[QP_OPND_W], d->Wt, wq_t, IC, OC, 0.0f, false, 0, false);
    ref_q(pl->fmt[QP_OPND_X], d->Xt, xq_t, IC, M, 0.0f, false, 0, false);
    for (int k = 0; k < SR_STEPS; k++) {
        qp_linear_begin_step(lin, 100 + k, 0);
        if (run_layer(lin, layer, g, d)) return;
        bound_bad += sr_bound_violations(d->dX, d->pdX, d->dY, wq_t, M, IC, OC);
        if (wgrad_sr_only) bound_bad += sr_bound_violations(d->dW, d->pdW, d->dYt, xq_t, OC, IC, M);
        for (int i = 0; i < M * IC; i++) sum_dX[i] += (double)d->dX[i] - d->pdX[i];
        for (int i = 0; i < OC * IC; i++) sum_dW[i] += (double)d->dW[i] - d->pdW[i];
        if (k == 0) {
            memcpy(first_dX, d->dX, sizeof first_dX);
            memcpy(first_dW, d->dW, sizeof first_dW);
        } else {
            same_as_first += memcmp(first_dX, d->dX, sizeof first_dX) == 0;
        }
    }
    /* the first step again: the same rounding */
    qp_linear_begin_step(lin, 100, 0);
    if (run_layer(lin, layer, g, d)) return;
    repro_bad = memcmp(first_dX, d->dX, sizeof first_dX) != 0 || memcmp(first_dW, d->dW, sizeof first_dW) != 0;
    CHECK(bound_bad == 0, "%s layer %d: %d SR products beyond one grid step per element", spec, layer, bound_bad);
    CHECK(same_as_first == 0, "%s layer %d: SR dgrad identical in %d of %d other steps", spec, layer, same_as_first,
          SR_STEPS - 1);
    CHECK(repro_bad == 0, "%s layer %d: SR not reproducible for the same step", spec, layer);

    /* Mean over the steps against the unquantized-dy product, compared with
     * round-to-nearest's error: SR's error averages out, RN's does not. */
    static double target[OC * IC], rn[OC * IC];
    static float dyq[M * OC];
    double ratio = 0.0;
    for (int pass = 0; pass < (wgrad_sr_only ? 2 : 1); pass++) {
        const int n = pass ? OC : M, p = IC, k = pass ? M : OC;
        const float *a = pass ? d->dYt : d->dY, *bq = pass ? xq_t : wq_t;
        double *sum = pass ? sum_dW : sum_dX;
        gemm_ref(a, bq, n, p, k, target, ref_mag);
        ref_q(pl->fmt[QP_OPND_DY], a, dyq, n, k, 0.0f, false, 0, false);
        gemm_ref(dyq, bq, n, p, k, rn, ref_mag);
        /* the same statistic of quant/'s own SR over as many streams */
        static double emu[OC * IC];
        memset(emu, 0, sizeof emu);
        for (int k2 = 0; k2 < SR_STEPS; k2++) {
            ref_q(pl->fmt[QP_OPND_DY], a, dyq, n, k, 0.0f, true, 1000 + (uint64_t)k2, false);
            gemm_ref(dyq, bq, n, p, k, ref_val, ref_mag);
            for (int i = 0; i < n * p; i++) emu[i] += ref_val[i];
        }
        double e_mean = 0.0, e_rn = 0.0, e_emu = 0.0;
        for (int i = 0; i < n * p; i++) {
            const double mdiff = sum[i] / SR_STEPS - target[i], rdiff = rn[i] - target[i],
                         ediff = emu[i] / SR_STEPS - target[i];
            e_mean += mdiff * mdiff;
            e_rn += rdiff * rdiff;
            e_emu += ediff * ediff;
        }
        /* Outliers clip at their block's maximum (the UE4M3 block scale can
         * round down), a bias SR shares with RN: so the reference is quant/'s
         * SR, not zero. A stream that did not change with the step would give
         * about 4 here, a biased rounding more. */
        const double r = sqrt(e_mean / e_rn), r_emu = sqrt(e_emu / e_rn);
        CHECK(r < 1.5 * r_emu, "%s layer %d %s: mean of %d SR results is %.2f x RN's distance from the exact "
              "product, quant/'s SR %.2f (biased, or not varying with the step)", spec, layer,
              pass ? "wgrad" : "dgrad", SR_STEPS, r, r_emu);
        ratio = fmax(ratio, r / r_emu);
    }
    res->sr_mean_ratio = ratio;
}

/* RHT on the weight gradient: error level of an independent emulation; and
 * (without SR) not the un-rotated product. */
static void check_rht(const op_plan *pl, layer_data *d, case_result *res, const char *spec, int layer)
{
    static double exact[OC * IC];
    const bool sr = pl->sr[QP_OPND_DY];
    gemm_ref(d->dYt, d->Xt, OC, IC, M, exact, ref_mag);
    ref_q(pl->fmt[QP_OPND_DY], d->dYt, qa, OC, M, 0.0f, sr, 77, true);
    ref_q(pl->fmt[QP_OPND_X], d->Xt, qb, IC, M, 0.0f, false, 0, true);
    gemm_ref(qa, qb, OC, IC, M, ref_val, ref_mag);
    double e_emu = 0.0;
    for (int i = 0; i < OC * IC; i++) e_emu += (ref_val[i] - exact[i]) * (ref_val[i] - exact[i]);
    e_emu = sqrt(e_emu);
    const double e_got = frob_diff(d->dW, d->pdW, exact, OC * IC);
    const double r = e_got / e_emu;
    res->rht_ratio = r;
    CHECK(r > 0.5 && r < 2.0, "%s layer %d wgrad: error %.3e vs an RHT emulation's %.3e (relative to |dW| %.3e)",
          spec, layer, e_got, e_emu, frob(exact, OC * IC));
    if (!sr) {
        ref_q(pl->fmt[QP_OPND_DY], d->dYt, qa, OC, M, 0.0f, false, 0, false);
        ref_q(pl->fmt[QP_OPND_X], d->Xt, qb, IC, M, 0.0f, false, 0, false);
        gemm_ref(qa, qb, OC, IC, M, ref_val, ref_mag);
        int nbad;
        compare(d->dW, ref_val, ref_mag, d->pdW, NULL, OC, IC, &nbad);
        CHECK(nbad > OC * IC / 2, "%s layer %d wgrad: equals the un-rotated product (%d of %d within FP32 error)",
              spec, layer, OC * IC - nbad, OC * IC);
    }
}

static void check_plan(const recipe_case *c, const qp_recipe *r)
{
    qp_linear_plan plans[NL * QP_BLOCK_GEMMS];
    char err[512];
    CHECK(qp_recipe_resolve(r, NL, 0, plans, err, sizeof err) == 0, "%s: %s", c->spec, err);
    for (int i = 0; i < NL * QP_BLOCK_GEMMS; i++) {
        const int layer = i / QP_BLOCK_GEMMS;
        const qp_linear_plan *pl = &plans[i];
        /* the view holds: each operand's uses alike, an RHT only on both wgrad operands */
        for (int o = 0; o < QP_OPND_COUNT; o++)
            for (int ps = 0; ps < QP_PASS_COUNT; ps++) {
                if (!qp_pass_uses((qp_pass)ps, (qp_operand)o)) continue;
                qp_use_plan u = pl->use[ps][o], ref = pl->use[pl->owner[o]][o];
                CHECK(u.rht == (ps == QP_PASS_WGRAD ? pl->use[QP_PASS_WGRAD][QP_OPND_DY].rht : 0),
                      "%s layer %d: %s.%s rht %d", c->spec, layer, qp_pass_name((qp_pass)ps),
                      qp_operand_name((qp_operand)o), u.rht);
                u.rht = ref.rht = 0;
                CHECK(!memcmp(&u, &ref, sizeof u), "%s layer %d: %s.%s differs from the operand's other use", c->spec,
                      layer, qp_pass_name((qp_pass)ps), qp_operand_name((qp_operand)o));
            }
        CHECK(!memcmp(pl, &plans[layer * QP_BLOCK_GEMMS], sizeof *pl), "%s layer %d: GEMMs differ", c->spec, layer);
        const op_plan p = view(pl);
        const bool bf16_block = layer >= NL - c->bf16_last;
        const qp_fmt x = bf16_block ? QP_FMT_BF16 : c->x, w = bf16_block ? QP_FMT_BF16 : c->w,
                     dy = bf16_block ? QP_FMT_BF16 : c->dy;
        CHECK(p.fmt[QP_OPND_X] == x && p.fmt[QP_OPND_W] == w && p.fmt[QP_OPND_DY] == dy,
              "%s layer %d: formats %s/%s/%s, documented %s/%s/%s", c->spec, layer, qp_formats[p.fmt[0]].name,
              qp_formats[p.fmt[1]].name, qp_formats[p.fmt[2]].name, qp_formats[x].name, qp_formats[w].name,
              qp_formats[dy].name);
        CHECK(!p.sr[QP_OPND_X] && !p.sr[QP_OPND_W] && p.sr[QP_OPND_DY] == (c->sr_dy && !bf16_block),
              "%s layer %d: stochastic rounding x %d w %d dy %d", c->spec, layer, p.sr[0], p.sr[1], p.sr[2]);
        CHECK(p.rht_wgrad == (c->rht && !bf16_block), "%s layer %d: RHT %d", c->spec, layer, p.rht_wgrad);
        CHECK(p.scaling == (bf16_block ? QP_SCALING_CURRENT : c->scaling), "%s layer %d: scaling mode %d", c->spec,
              layer, (int)p.scaling);
    }
}

static void run_case(const recipe_case *c, qp_gemm *gemm, uint64_t seed)
{
    char err[256];
    qp_recipe r;
    const int parsed = qp_recipe_parse(c->spec, &r, err, sizeof err) == 0;
    CHECK(parsed, "parse %s: %s", c->spec, err);
    if (!parsed) return;
    check_plan(c, &r);
    qerr_log qlog = {0};
    const qp_linear_cfg lc = {.n_layers = NL, .max_elems = (int64_t)OC * OC, .seed = seed, .recipe = &r,
                              .gemm = gemm, .on_qerr = on_qerr, .user = &qlog};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(lin != NULL, "create %s: %s", c->spec, err);
    if (!lin) return;
    static layer_data data[NL];
    op_plan plans[NL];
    const qp_gemm_id gid[NL] = {QP_GEMM_QKV, QP_GEMM_FCPROJ};
    float hist[NL][QP_OPND_COUNT] = {{0}}; /* delayed scaling: amax seen in earlier steps */
    float used[NL][QP_OPND_COUNT];          /* delayed scales of this step (0: current) */
    case_result res = {0, 0, 0, 0, -1, -1};
    uint64_t s = seed;
    for (int layer = 0; layer < NL; layer++) plans[layer] = view(qp_linear_plan_of(lin, layer, gid[layer]));

    /* Two steps; the second one's data twice as large, so a delayed scale
     * (from the first step's amax) differs from the current one and clips. */
    for (int step = 0; step < 2; step++) {
        qp_linear_begin_step(lin, step, step == 1);
        qlog.n = 0;
        for (int layer = 0; layer < NL; layer++) {
            layer_data *d = &data[layer];
            const float k = step ? 2.0f : 1.0f;
            make_layer(d, 3.0f * k, 0.05f * k, 1e-3f * k, &s);
            if (run_layer(lin, layer, gid[layer], d)) goto done;
            const op_plan *pl = &plans[layer];
            float *scales = used[layer];
            memset(scales, 0, sizeof used[layer]);
            const float *src[QP_OPND_COUNT] = {d->X, d->W, d->dY};
            const int n[QP_OPND_COUNT] = {M * IC, OC * IC, M * OC};
            for (int o = 0; o < QP_OPND_COUNT; o++) {
                const qp_fmt f = pl->fmt[o];
                if (!qp_formats[f].tensor_scale) continue;
                const float range = qp_tensor_scale_range(f), amax = amax_of(src[o], n[o]);
                const float want = pl->scaling == QP_SCALING_DELAYED ? qp_scale_from_amax(range, hist[layer][o], 0)
                                                                      : qp_scale_from_amax(range, amax, 0);
                if (pl->scaling == QP_SCALING_DELAYED) {
                    scales[o] = want;
                    hist[layer][o] = fmaxf(hist[layer][o], amax);
                }
                const qp_scaling_state *st = qp_linear_scaling(lin, layer, gid[layer], (qp_operand)o);
                CHECK(st && fabsf(st->last_scale - want) <= 1e-6f * want, "%s step %d layer %d %s: scale %.8g, want %.8g",
                      c->spec, step, layer, qp_operand_name((qp_operand)o), st ? st->last_scale : -1.0f, want);
                if (pl->scaling == QP_SCALING_DELAYED && step == 0)
                    CHECK(want == 1.0f, "%s: first delayed step not at scale 1", c->spec);
            }
            check_layer(c->spec, step, layer, pl, d, scales, &res);
            if (step == 1 && pl->rht_wgrad) check_rht(pl, d, &res, c->spec, layer);
        }
        if (step == 1) {
            /* six records (x, w, dy in two passes each) per quantized block, none for FP32 */
            int want = 0;
            for (int layer = 0; layer < NL; layer++) want += plans[layer].fmt[QP_OPND_X] != QP_FMT_FP32 ? 6 : 0;
            CHECK(qlog.n == want, "%s: %d quantization-error records, want %d", c->spec, qlog.n, want);
            for (int i = 0; i < qlog.n && i < 64; i++) {
                /* fprop operands are exact: the record's error must be quant/'s */
                const int layer = qlog.rows[i].layer;
                if (strcmp(qlog.rows[i].pass, "fprop") || layer < 0 || layer >= NL) continue;
                const qp_operand o = strcmp(qlog.rows[i].operand, "x") ? QP_OPND_W : QP_OPND_X;
                const float *x = o == QP_OPND_X ? data[layer].X : data[layer].W;
                const int rows = o == QP_OPND_X ? M : OC;
                ref_q(plans[layer].fmt[o], x, qa, rows, IC, used[layer][o], false, 0, false);
                const double want_rel = rel_l2(x, qa, rows * IC), got = qlog.rows[i].rel_l2;
                CHECK(fabs(got - want_rel) <= 1e-6 * want_rel + 1e-12,
                      "%s layer %d %s: recorded rel_l2 %.8g, quant/ %.8g",
                      c->spec, layer, qlog.rows[i].operand, got, want_rel);
            }
        }
    }

    /* the LM head: FP32 whatever the recipe (layer index = n_layers) */
    {
        layer_data *d = &data[0];
        int nbad;
        memcpy(d->dX, d->pdX, sizeof d->dX);
        memcpy(d->dW, d->pdW, sizeof d->dW);
        CHECK(qp_linear_forward(lin, NL, QP_GEMM_HEAD, d->Y, d->X, d->W, NULL, M, IC, OC) == 0 &&
                  qp_linear_backward(lin, NL, QP_GEMM_HEAD, d->dX, d->dW, NULL, d->dY, d->X, d->W, M, IC, OC, 1) == 0,
              "%s head: %s", c->spec, qp_linear_error(lin));
        gemm_ref(d->X, d->W, M, OC, IC, ref_val, ref_mag);
        double w = compare(d->Y, ref_val, ref_mag, NULL, NULL, M, OC, &nbad);
        CHECK(nbad == 0, "%s head fprop not FP32: worst %.2e", c->spec, w);
        res.head = w;
        gemm_ref(d->dY, d->Wt, M, IC, OC, ref_val, ref_mag);
        w = compare(d->dX, ref_val, ref_mag, d->pdX, NULL, M, IC, &nbad);
        CHECK(nbad == 0, "%s head dgrad not FP32: worst %.2e", c->spec, w);
        res.head = fmax(res.head, w);
        gemm_ref(d->dYt, d->Xt, OC, IC, M, ref_val, ref_mag);
        w = compare(d->dW, ref_val, ref_mag, d->pdW, NULL, OC, IC, &nbad);
        CHECK(nbad == 0, "%s head wgrad not FP32: worst %.2e", c->spec, w);
        res.head = fmax(res.head, w);
    }

    /* stochastic rounding, in the blocks that have it */
    for (int layer = 0; layer < NL; layer++)
        if (plans[layer].sr[QP_OPND_DY]) check_sr(lin, layer, gid[layer], &plans[layer], &data[layer], &res, c->spec);

    {
        char f[16], dg[16], wg[16], srs[16], rh[16];
        snprintf(f, sizeof f, "%.1e", res.fprop);
        snprintf(dg, sizeof dg, c->sr_dy ? "sr" : "%.1e", res.dgrad);
        snprintf(wg, sizeof wg, c->sr_dy || c->rht ? "sr/rht" : "%.1e", res.wgrad);
        snprintf(srs, sizeof srs, res.sr_mean_ratio < 0 ? "-" : "%.2f", res.sr_mean_ratio);
        snprintf(rh, sizeof rh, res.rht_ratio < 0 ? "-" : "%.2f", res.rht_ratio);
        printf("  %-26s %9s %9s %9s %9.1e %9s %9s\n", c->spec, f, dg, wg, res.head, srs, rh);
    }
done:
    qp_linear_destroy(lin);
}

/* ---- every format as an operand ---------------------------------------------- */

enum { FM = 256, FIC = 192, FOC = 160 };

/* out = fully scaled dequantization of in (rows x cols, blocked along cols),
 * after an n-point RHT with the dispatch's seed when rht_n, or Transformer
 * Engine's fixed-sign 16-point one when rht_n is RHT_TE. */
#define RHT_TE (-16)
static void fref_q(qp_fmt fmt, const float *in, float *out, int rows, int cols, int rht_n, uint64_t seed)
{
    memcpy(out, in, (size_t)rows * cols * sizeof(float));
    if (rht_n == RHT_TE) CHECK(qp_rht16_te(out, rows, cols) == 0, "reference TE RHT");
    else if (rht_n) CHECK(qp_rht(out, rows, cols, rht_n, qp_linear_rht_seed(seed)) == 0, "reference RHT");
    if (fmt != QP_FMT_FP32) CHECK(qp_qdq(fmt, out, out, rows, cols, NULL, NULL) == 0, "reference qdq");
}

/* One recipe on one layer: every GEMM of the fc layer against quant/'s
 * dequantized operands of its plan's uses in float64. Returns the worst
 * normalized difference. */
static double run_plan(qp_gemm *gemm, const char *spec, int want_rht, uint64_t seed)
{
    char err[512];
    static qp_recipe r;
    if (qp_recipe_parse(spec, &r, err, sizeof err)) {
        CHECK(0, "%s: %s", spec, err);
        return INFINITY;
    }
    const qp_linear_cfg lc = {.n_layers = 1, .max_elems = (int64_t)FM * FIC, .seed = seed, .recipe = &r, .gemm = gemm};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(lin != NULL, "%s: %s", spec, err);
    if (!lin) return INFINITY;
    float *X = malloc(sizeof(float) * FM * FIC), *W = malloc(sizeof(float) * FOC * FIC), *dY = malloc(sizeof(float) * FM * FOC);
    float *Xt = malloc(sizeof(float) * FM * FIC), *Wt = malloc(sizeof(float) * FOC * FIC), *dYt = malloc(sizeof(float) * FM * FOC);
    float *Y = malloc(sizeof(float) * FM * FOC), *dX = malloc(sizeof(float) * FM * FIC), *dW = malloc(sizeof(float) * FOC * FIC);
    float *pdX = malloc(sizeof(float) * FM * FIC), *pdW = malloc(sizeof(float) * FOC * FIC);
    float *qa = malloc(sizeof(float) * FM * FOC), *qb = malloc(sizeof(float) * FM * FIC);
    double *rv = malloc(sizeof(double) * FM * FIC), *rm = malloc(sizeof(double) * FM * FIC);
    uint64_t s = seed;
    fill(X, FM * FIC, 2.0f, &s);
    fill(W, FOC * FIC, 0.05f, &s);
    fill(dY, FM * FOC, 1e-3f, &s);
    fill(pdX, FM * FIC, 1e-4f, &s);
    fill(pdW, FOC * FIC, 1e-3f, &s);
    transpose(X, Xt, FM, FIC);
    transpose(W, Wt, FOC, FIC);
    transpose(dY, dYt, FM, FOC);
    memcpy(dX, pdX, sizeof(float) * FM * FIC);
    memcpy(dW, pdW, sizeof(float) * FOC * FIC);
    qp_linear_begin_step(lin, 0, 0);
    double worst = 0.0;
    if (qp_linear_forward(lin, 0, QP_GEMM_FC, Y, X, W, NULL, FM, FIC, FOC) ||
        qp_linear_backward(lin, 0, QP_GEMM_FC, dX, dW, NULL, dY, X, W, FM, FIC, FOC, 1)) {
        CHECK(0, "%s: %s", spec, qp_linear_error(lin));
        worst = INFINITY;
    } else {
        const qp_use_plan *u[QP_PASS_COUNT];
        for (int ps = 0; ps < QP_PASS_COUNT; ps++) u[ps] = qp_linear_plan_of(lin, 0, QP_GEMM_FC)->use[ps];
        const int te = u[QP_PASS_WGRAD][QP_OPND_X].rht_te,
                  rn = te ? RHT_TE : u[QP_PASS_WGRAD][QP_OPND_X].rht;
        CHECK(rn == want_rht && u[QP_PASS_WGRAD][QP_OPND_DY].rht == u[QP_PASS_WGRAD][QP_OPND_X].rht &&
                  u[QP_PASS_WGRAD][QP_OPND_DY].rht_te == te && u[QP_PASS_FPROP][QP_OPND_X].rht == 0,
              "%s: wgrad RHT of %d points, expected %d (%d: TE's)", spec, rn, want_rht, RHT_TE);
        int nbad;
        double w;
        fref_q(u[QP_PASS_FPROP][QP_OPND_X].fmt, X, qb, FM, FIC, 0, seed); /* fprop: Y = q(X) q(W)^T */
        fref_q(u[QP_PASS_FPROP][QP_OPND_W].fmt, W, qa, FOC, FIC, 0, seed);
        gemm_ref(qb, qa, FM, FOC, FIC, rv, rm);
        w = compare(Y, rv, rm, NULL, NULL, FM, FOC, &nbad);
        CHECK(nbad == 0, "%s fprop: %d outside FP32 accumulation error (worst %.2e)", spec, nbad, w);
        worst = fmax(worst, w);
        fref_q(u[QP_PASS_DGRAD][QP_OPND_DY].fmt, dY, qa, FM, FOC, 0, seed); /* dgrad: dX += q(dY) q(W^T)^T */
        fref_q(u[QP_PASS_DGRAD][QP_OPND_W].fmt, Wt, qb, FIC, FOC, 0, seed);
        gemm_ref(qa, qb, FM, FIC, FOC, rv, rm);
        w = compare(dX, rv, rm, pdX, NULL, FM, FIC, &nbad);
        CHECK(nbad == 0, "%s dgrad: %d outside FP32 accumulation error (worst %.2e)", spec, nbad, w);
        worst = fmax(worst, w);
        fref_q(u[QP_PASS_WGRAD][QP_OPND_DY].fmt, dYt, qa, FOC, FM, rn, seed); /* wgrad: dW += q(R dY^T) q(R X^T)^T */
        fref_q(u[QP_PASS_WGRAD][QP_OPND_X].fmt, Xt, qb, FIC, FM, rn, seed);
        gemm_ref(qa, qb, FOC, FIC, FM, rv, rm);
        w = compare(dW, rv, rm, pdW, NULL, FOC, FIC, &nbad);
        CHECK(nbad == 0, "%s wgrad: %d outside FP32 accumulation error (worst %.2e)", spec, nbad, w);
        worst = fmax(worst, w);
    }
    free(X), free(W), free(dY), free(Xt), free(Wt), free(dYt), free(Y), free(dX), free(dW), free(pdX), free(pdW);
    free(qa), free(qb), free(rv), free(rm);
    qp_linear_destroy(lin);
    return worst;
}

static void test_every_format(qp_gemm *gemm)
{
    printf("every format as x, w and dy (%dx%dx%d), worst |got - ref| / sum|a b|:\n", FM, FIC, FOC);
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        char spec[64];
        snprintf(spec, sizeof spec, "x+w+dy=%s", qp_formats[f].name);
        const double w = run_plan(gemm, spec, 0, 500 + (uint64_t)f);
        printf("  %-20s %9.1e%s\n", qp_formats[f].name, w,
               qp_formats[f].row_scaled ? "  (FP32, row scales applied)"
               : f != QP_FMT_FP32 && !qp_formats[f].unscaled_exact ? "  (K-chunked)" : "");
    }
    static const struct {
        const char *what, *spec;
        int rht_n;
    } mixes[] = {
        {"deepseek-v3 fp8 blocks", "bf16,x+dy=fp8-block,w=fp8-block-2d", 0},
        {"te fp8 blocks (pow2)", "x+dy=fp8-block-pow2,w=fp8-block-2d-pow2", 0},
        {"fp8-block x, bf16 w", "x=fp8-block,w=bf16,dy=fp8-e5m2", 0},
        {"mxfp6 x, nvfp4-4o6 w", "x=mxfp6-e2m3,w=nvfp4-4o6,dy=mxfp6-e3m2", 0},
        {"nvfp4 rht 16", "x=nvfp4,w=nvfp4-2d,dy=nvfp4,wgrad:rht=16", 16},
        {"nvfp4 rht 32", "x=nvfp4,w=nvfp4-2d,dy=nvfp4,wgrad:rht=32", 32},
        {"nvfp4 rht 64", "x=nvfp4,w=nvfp4-2d,dy=nvfp4,wgrad:rht=64", 64},
        {"nvfp4 rht 128", "x=nvfp4,w=nvfp4-2d,dy=nvfp4,wgrad:rht=128", 128},
        {"mxfp8-rceil rht 128", "x+w+dy=mxfp8-rceil,wgrad:rht=128", 128},
        {"nvfp4 rht te", "x=nvfp4,w=nvfp4-2d,dy=nvfp4,wgrad:rht=te", RHT_TE},
        {"te-nvfp4, rn", "te-nvfp4,dy:rn", RHT_TE},
        {"mxfp8 rht te", "x+w+dy=mxfp8,wgrad:rht=te", RHT_TE},
    };
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        printf("  %-20s %9.1e\n", mixes[i].what, run_plan(gemm, mixes[i].spec, mixes[i].rht_n, 900 + (uint64_t)i));
}

/* qp_gemm_run_kscaled alone: C = alpha * sum_c (sa sb) (A_c B_c^T) (+ C) in
 * float64 from the codes (small integers times powers of two: exact) and the
 * scales, for transposed and plain operands, whole and partial chunks. */
static void test_kscaled(qp_gemm *gemm)
{
    enum { KM = 40, KN = 24, KK = 300, KC = 128, NK = 3 };
    float *A = malloc(sizeof(float) * KM * KK), *B = malloc(sizeof(float) * KN * KK), *At = malloc(sizeof(float) * KM * KK);
    float sa[KM * NK], sb[KN * NK], C[KM * KN], C0[KM * KN];
    uint64_t s = 4242;
    for (int i = 0; i < KM * KK; i++) A[i] = qp_e4m3_to_f32((uint8_t)(tm_next(&s) % 0x7E)) * (tm_next(&s) & 1 ? -1.0f : 1.0f);
    for (int i = 0; i < KN * KK; i++) B[i] = qp_e4m3_to_f32((uint8_t)(tm_next(&s) % 0x7E));
    for (int i = 0; i < KM * NK; i++) sa[i] = (float)(0.001 + tm_uniform(&s));
    for (int i = 0; i < KN * NK; i++) sb[i] = (float)(0.01 + 10.0 * tm_uniform(&s));
    for (int i = 0; i < KM * KN; i++) C0[i] = (float)tm_uniform(&s);
    transpose(A, At, KM, KK);
    int bad = 0;
    double worst = 0.0;
    for (int variant = 0; variant < 4; variant++) {
        const int a_t = variant & 1, acc = variant >> 1;
        const float alpha = 0.75f;
        memcpy(C, C0, sizeof C);
        CHECK(qp_gemm_run_kscaled(gemm, a_t ? At : A, a_t, B, 0, C, KM, KN, KK, KC, sa, sb, alpha, acc, 1) == 0,
              "kscaled: %s", qp_gemm_error(gemm));
        for (int m = 0; m < KM; m++)
            for (int n = 0; n < KN; n++) {
                double ref = 0.0, mag = 0.0;
                for (int c = 0; c < NK; c++) {
                    double part = 0.0;
                    for (int k = c * KC; k < (c + 1) * KC && k < KK; k++) part += (double)A[m * KK + k] * B[n * KK + k];
                    const double sc = (double)((float)sa[m * NK + c] * sb[n * NK + c]);
                    ref += sc * part;
                    mag += fabs(sc * part);
                }
                ref = alpha * ref + (acc ? C0[m * KN + n] : 0.0);
                mag = alpha * mag + (acc ? fabs(C0[m * KN + n]) : 0.0);
                const double d = fabs(C[m * KN + n] - ref) / (mag + 1e-30);
                worst = fmax(worst, d);
                bad += !(d <= TOL);
            }
    }
    CHECK(bad == 0, "kscaled: %d results beyond %.0e of the float64 chunked sum (worst %.2e)", bad, TOL, worst);
    printf("K-chunked GEMM (%dx%dx%d, chunks of %d) vs float64: worst %.1e\n", KM, KN, KK, KC, worst);
    /* without the chunk scales the result must differ: the test can see the scales */
    memcpy(C, C0, sizeof C);
    qp_gemm_run_kscaled(gemm, A, 0, B, 0, C, KM, KN, KK, KC, NULL, NULL, 1.0f, 0, 1);
    int same = 0;
    float Cs[KM * KN];
    qp_gemm_run_kscaled(gemm, A, 0, B, 0, Cs, KM, KN, KK, KC, sa, sb, 1.0f, 0, 1);
    for (int i = 0; i < KM * KN; i++) same += C[i] == Cs[i];
    CHECK(same < KM * KN / 10, "kscaled: the chunk scales change nothing (%d of %d equal)", same, KM * KN);
    CHECK(qp_gemm_run_kscaled(gemm, A, 0, B, 0, C, KM, KN, KK, 0, sa, sb, 1.0f, 0, 1) == -1, "kscaled: chunk 0 refused");
    free(A), free(B), free(At);
}

/* ---- reusing an earlier use's quantization ----------------------------------- */

/* The CPU's operations, counting reuses. */
static const qp_linear_ops *counted_base;
static int n_reused;

static int counted_reuse(void *ctx, const qp_linear_qjob *job, qp_linear_operand *out)
{
    n_reused++;
    return counted_base->reuse(ctx, job, out);
}

static int same_bits(const float *a, const float *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* A later use handed the earlier use's quantization (qp_linear_reusable: dY
 * from dgrad, X and W kept from the forward) gives exactly what quantizing
 * again gives: outputs, scaling states and error records of a dispatch with
 * reuse equal those of one without (qp_linear_ops.reuse NULL), bit for bit,
 * for every recipe; each recipe reuses the operands its formats allow; and
 * a kept copy is not used for another tensor or a later step. */
static void test_reuse(qp_gemm *gemm)
{
    /* block 0, block 1 (the last: BF16 in NVIDIA's recipes) */
    static const struct {
        const char *spec;
        int reused[NL], dy[NL]; /* operands reused per block; of which dY */
    } want[] = {
        {"bf16", {3, 3}, {1, 1}},
        {"fp8", {3, 3}, {1, 1}},
        {"fp8-current", {3, 3}, {1, 1}},
        {"mxfp8", {0, 0}, {0, 0}},
        {"mxfp4", {0, 0}, {0, 0}},
        {"nvfp4-naive", {0, 0}, {0, 0}},
        {"nvfp4", {1, 3}, {0, 1}},          /* W (16x16 blocks): X has 1x16 blocks and the RHT, dY SR */
        {"nvfp4,nvfp4-sr", {1, 3}, {0, 1}}, /* dY's 1x16 blocks transpose: no reuse without SR either */
        {"bf16,x+dy=fp8-block,w=fp8-block-2d", {0, 0}, {0, 0}}, /* scales per K-chunk follow the layout */
        {"bf16,w=nvfp4-2d", {3, 3}, {1, 1}},
        {"fp32", {0, 0}, {0, 0}},
    };
    char err[256];
    int bad_total = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        qp_recipe r;
        if (qp_recipe_parse(want[i].spec, &r, err, sizeof err)) {
            CHECK(0, "parse %s: %s", want[i].spec, err);
            continue;
        }
        qerr_log qa_log = {0}, qb_log = {0};
        qp_linear_cfg lc = {.n_layers = NL, .max_elems = (int64_t)OC * OC, .seed = 77, .recipe = &r, .gemm = gemm,
                            .on_qerr = on_qerr, .user = &qa_log};
        qp_linear *a = qp_linear_create(&lc, err, sizeof err);
        lc.user = &qb_log;
        qp_linear *b = qp_linear_create(&lc, err, sizeof err);
        qp_linear_host *ha = qp_linear_host_create(gemm, lc.max_elems, NL * QP_BLOCK_GEMMS * 2),
                       *hb = qp_linear_host_create(gemm, lc.max_elems, NL * QP_BLOCK_GEMMS * 2);
        CHECK(a && b && ha && hb, "create %s: %s", want[i].spec, err);
        if (!a || !b || !ha || !hb) goto next;
        /* room for one kept copy as floats: on an FP32 kernel the others are BF16 bits, widened when used */
        qp_linear_host_set_kept_f32_budget(ha, (size_t)M * IC * sizeof(float));
        counted_base = qp_linear_host_ops(ha);
        qp_linear_ops ops_a = *counted_base, ops_b = *qp_linear_host_ops(hb);
        ops_a.reuse = counted_reuse;
        ops_b.reuse = NULL;
        qp_linear_set_ops(a, &ops_a);
        qp_linear_set_ops(b, &ops_b);
        static layer_data da[NL], db[NL];
        const qp_gemm_id gid[NL] = {QP_GEMM_QKV, QP_GEMM_FCPROJ};
        uint64_t s = 123;
        int bad = 0;
        for (int step = 0; step < 3; step++) {
            qp_linear_begin_step(a, step, step == 1);
            qp_linear_begin_step(b, step, step == 1);
            const float k = step ? 2.0f : 1.0f;
            for (int layer = 0; layer < NL; layer++) make_layer(&da[layer], 3.0f * k, 0.05f * k, 1e-3f * k, &s);
            memcpy(db, da, sizeof da);
            for (int layer = 0; layer < NL; layer++) {
                layer_data *x = &da[layer], *y = &db[layer];
                CHECK(qp_linear_forward(a, layer, gid[layer], x->Y, x->X, x->W, x->b, M, IC, OC) == 0 &&
                          qp_linear_forward(b, layer, gid[layer], y->Y, y->X, y->W, y->b, M, IC, OC) == 0,
                      "%s forward: %s %s", want[i].spec, qp_linear_error(a), qp_linear_error(b));
                bad += !same_bits(x->Y, y->Y, M * OC);
            }
            n_reused = 0;
            for (int layer = NL - 1; layer >= 0; layer--) {
                layer_data *x = &da[layer], *y = &db[layer];
                if (step == 2) {
                    /* the backward of other X and W buffers than the
                     * forward's: what the forward kept is not theirs */
                    for (int j = 0; j < M * IC; j++) x->Xt[j] = y->Xt[j] = -0.5f * x->X[j] + 0.25f;
                    for (int j = 0; j < OC * IC; j++) x->Wt[j] = y->Wt[j] = 1.5f * x->W[j];
                }
                const float *xa = step == 2 ? x->Xt : x->X, *wa = step == 2 ? x->Wt : x->W;
                const float *xb = step == 2 ? y->Xt : y->X, *wb = step == 2 ? y->Wt : y->W;
                const int before = n_reused;
                CHECK(qp_linear_backward(a, layer, gid[layer], x->dX, x->dW, x->db, x->dY, xa, wa, M, IC, OC, 1) == 0 &&
                          qp_linear_backward(b, layer, gid[layer], y->dX, y->dW, y->db, y->dY, xb, wb, M, IC, OC, 1) == 0,
                      "%s backward: %s %s", want[i].spec, qp_linear_error(a), qp_linear_error(b));
                bad += !same_bits(x->dX, y->dX, M * IC) + !same_bits(x->dW, y->dW, OC * IC) + !same_bits(x->db, y->db, OC);
                const int got = n_reused - before, expect = step == 2 ? want[i].dy[layer] : want[i].reused[layer];
                CHECK(got == expect, "%s step %d block %d: %d operands reused, want %d", want[i].spec, step, layer, got,
                      expect);
            }
            for (int o = 0; o < QP_OPND_COUNT; o++)
                for (int layer = 0; layer < NL; layer++) {
                    const qp_scaling_state *sa = qp_linear_scaling(a, layer, gid[layer], (qp_operand)o),
                                           *sb = qp_linear_scaling(b, layer, gid[layer], (qp_operand)o);
                    bad += sa->last_scale != sb->last_scale;
                }
        }
        qp_linear_flush(a);
        qp_linear_flush(b);
        bad += qa_log.n != qb_log.n;
        for (int j = 0; j < qa_log.n && j < qb_log.n && j < 64; j++)
            bad += qa_log.rows[j].rel_l2 != qb_log.rows[j].rel_l2 || strcmp(qa_log.rows[j].pass, qb_log.rows[j].pass) ||
                   strcmp(qa_log.rows[j].operand, qb_log.rows[j].operand);
        CHECK(bad == 0, "%s: with reuse, %d outputs, scales or records differ from quantizing again", want[i].spec,
              bad);
        bad_total += bad;
    next:
        qp_linear_destroy(a);
        qp_linear_destroy(b);
        qp_linear_host_destroy(ha);
        qp_linear_host_destroy(hb);
    }
    printf("reuse of earlier quantizations: %zu recipes, outputs, scales and records identical to quantizing again "
           "(%d differences)\n", sizeof want / sizeof want[0], bad_total);
}

/* dx_accumulate 0 writes dX, never reading it: from a dX of NaNs, the values
 * a zeroed dX accumulates (plain, BF16 and K-chunked GEMMs). */
static void test_dx_written(qp_gemm *gemm)
{
    static const char *specs[] = {"fp32", "bf16", "fp8", "nvfp4", "bf16,x+dy=fp8-block,w=fp8-block-2d"};
    char err[256];
    int bad_total = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        qp_recipe r;
        if (qp_recipe_parse(specs[i], &r, err, sizeof err)) {
            CHECK(0, "parse %s: %s", specs[i], err);
            continue;
        }
        const qp_linear_cfg lc = {.n_layers = NL, .max_elems = (int64_t)OC * OC, .seed = 5, .recipe = &r,
                                  .gemm = gemm};
        qp_linear *a = qp_linear_create(&lc, err, sizeof err), *b = qp_linear_create(&lc, err, sizeof err);
        CHECK(a && b, "create %s: %s", specs[i], err);
        static layer_data d;
        static float dXa[M * IC], dXb[M * IC], dWa[OC * IC], dWb[OC * IC];
        uint64_t seed = 9;
        make_layer(&d, 3.0f, 0.05f, 1e-3f, &seed);
        int bad = 0;
        for (int layer = 0; a && b && layer < NL; layer++) {
            const qp_gemm_id g = layer ? QP_GEMM_FCPROJ : QP_GEMM_QKV;
            for (int j = 0; j < M * IC; j++) dXa[j] = NAN, dXb[j] = 0.0f;
            memset(dWa, 0, sizeof dWa), memset(dWb, 0, sizeof dWb);
            qp_linear_begin_step(a, 0, 0), qp_linear_begin_step(b, 0, 0);
            CHECK(qp_linear_forward(a, layer, g, d.Y, d.X, d.W, NULL, M, IC, OC) == 0 &&
                      qp_linear_forward(b, layer, g, d.Y, d.X, d.W, NULL, M, IC, OC) == 0 &&
                      qp_linear_backward(a, layer, g, dXa, dWa, NULL, d.dY, d.X, d.W, M, IC, OC, 0) == 0 &&
                      qp_linear_backward(b, layer, g, dXb, dWb, NULL, d.dY, d.X, d.W, M, IC, OC, 1) == 0,
                  "%s: %s %s", specs[i], qp_linear_error(a), qp_linear_error(b));
            for (int j = 0; j < M * IC; j++) bad += !(dXa[j] == dXb[j]); /* +0 and -0 alike */
            bad += !same_bits(dWa, dWb, OC * IC);
        }
        CHECK(bad == 0, "%s: dX written (from NaN) differs from dX accumulated onto zeros in %d places", specs[i], bad);
        bad_total += bad;
        qp_linear_destroy(a);
        qp_linear_destroy(b);
    }
    printf("dgrad writing dX: %zu recipes, the values accumulated onto zeros (%d differences)\n",
           sizeof specs / sizeof specs[0], bad_total);
}

/* ---- per-block scale statistics with the qerr rows ------------------------------ */

typedef struct {
    int n, n_qerr;
    struct {
        char operand[8], pass[8], format[32];
        qp_bscale_row row;
        int64_t hist[QP_BSHIST_BINS];
    } r[8];
} bscale_log;

static void bs_on_qerr(const qp_qerr_row *r, void *user)
{
    (void)r;
    ((bscale_log *)user)->n_qerr++;
}

static void bs_on_bscale(const qp_bscale_row *row, const int64_t *hist, int nbins, void *user)
{
    bscale_log *b = user;
    CHECK(nbins == QP_BSHIST_BINS, "block-scale rows come with %d bins, not %d", nbins, QP_BSHIST_BINS);
    if (b->n < 8 && nbins == QP_BSHIST_BINS) {
        snprintf(b->r[b->n].operand, 8, "%s", row->operand);
        snprintf(b->r[b->n].pass, 8, "%s", row->pass);
        snprintf(b->r[b->n].format, 32, "%s", row->format);
        b->r[b->n].row = *row;
        memcpy(b->r[b->n].hist, hist, sizeof b->r[b->n].hist);
    }
    b->n++;
}

static int same_real(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* The dispatch's block-scale row of a use against qp_metrics_for_format (the
 * report of qerr and qprec.errors) of the same tensor as the GEMM takes it
 * (rows x cols along the contraction), bit for bit. */
static void check_bscale(const bscale_log *b, const char *pass, const char *operand, qp_fmt fmt, const float *x,
                         int rows, int cols)
{
    int i = 0;
    while (i < b->n && i < 8 && (strcmp(b->r[i].pass, pass) || strcmp(b->r[i].operand, operand))) i++;
    CHECK(i < b->n && i < 8, "no block-scale row of %s.%s", pass, operand);
    if (i >= b->n || i >= 8) return;
    qp_metrics m;
    CHECK(qp_metrics_for_format(fmt, x, rows, cols, NULL, QP_RHT_OFF, 0, NULL, &m) == 0, "reference report");
    const qp_bscale_row *r = &b->r[i].row;
    int64_t sum = 0;
    for (int k = 0; k < QP_BSHIST_BINS; k++) sum += b->r[i].hist[k];
    CHECK(sum == r->n_blocks && r->n_blocks > 0, "%s.%s: the histogram holds %lld of %lld blocks", pass, operand,
          (long long)sum, (long long)r->n_blocks);
    CHECK(!strcmp(b->r[i].format, qp_formats[fmt].name), "%s.%s: format %s", pass, operand, b->r[i].format);
    CHECK(r->n_blocks == m.bsd.n_blocks && !memcmp(b->r[i].hist, m.bsd.hist, sizeof m.bsd.hist),
          "%s.%s (%s): the histogram is not qp_metrics_for_format's", pass, operand, qp_formats[fmt].name);
    CHECK(same_real(r->log2_std, m.bsd.log2_std) && same_real(r->saturated_frac, m.bsd.saturated_frac) &&
              same_real(r->underflow_frac, m.bsd.underflow_frac) &&
              same_real(r->elems_flushed_frac, m.elems_flushed_frac) &&
              same_real(r->elems_saturated_frac, m.elems_saturated_frac) &&
              same_real(r->dynamic_range_max_log2, m.bsd.dynamic_range_max_log2),
          "%s.%s (%s): statistics %g %g %g %g %g %g, the report's %g %g %g %g %g %g", pass, operand,
          qp_formats[fmt].name, r->log2_std, r->saturated_frac, r->underflow_frac, r->elems_flushed_frac,
          r->elems_saturated_frac, r->dynamic_range_max_log2, m.bsd.log2_std, m.bsd.saturated_frac,
          m.bsd.underflow_frac, m.elems_flushed_frac, m.elems_saturated_frac, m.bsd.dynamic_range_max_log2);
}

/* A step that logs qerr rows gives, for each quantized use of a format with
 * block scales, one block-scale row: its histogram sums to its blocks, and
 * it is the report qerr and qprec.errors make of the same tensor (X and W in
 * fprop, their transposes in wgrad and dgrad; dY, whose rows come from SR,
 * by the count only). FP8 with a tensor scale has no block scales: no row. */
static void test_block_scale_rows(qp_gemm *gemm)
{
    char err[512];
    static qp_recipe r;
    const char *spec = "x=nvfp4,w=mxfp8,dy=fp8-e5m2,dgrad.w=fp8-block-2d,wgrad.x=mxfp6-e2m3";
    CHECK(qp_recipe_parse(spec, &r, err, sizeof err) == 0, "%s: %s", spec, err);
    static bscale_log b;
    memset(&b, 0, sizeof b);
    const qp_linear_cfg lc = {.n_layers = 1, .max_elems = (int64_t)FM * FIC, .seed = 77, .recipe = &r, .gemm = gemm,
                              .on_qerr = bs_on_qerr, .on_bscale = bs_on_bscale, .user = &b};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(lin != NULL, "%s: %s", spec, err);
    if (!lin) return;
    float *X = malloc(sizeof(float) * FM * FIC), *W = malloc(sizeof(float) * FOC * FIC),
          *dY = malloc(sizeof(float) * FM * FOC), *Xt = malloc(sizeof(float) * FM * FIC),
          *Wt = malloc(sizeof(float) * FOC * FIC), *Y = malloc(sizeof(float) * FM * FOC),
          *dX = malloc(sizeof(float) * FM * FIC), *dW = malloc(sizeof(float) * FOC * FIC);
    uint64_t s = 4242;
    fill(X, FM * FIC, 2.0f, &s);
    fill(W, FOC * FIC, 0.05f, &s);
    fill(dY, FM * FOC, 1e-3f, &s);
    X[5] = 3e4f, X[FIC + 7] = 1e-6f; /* a wide block: its dynamic range */
    transpose(X, Xt, FM, FIC);
    transpose(W, Wt, FOC, FIC);
    qp_linear_begin_step(lin, 0, 1);
    CHECK(qp_linear_forward(lin, 0, QP_GEMM_FC, Y, X, W, NULL, FM, FIC, FOC) == 0 &&
              qp_linear_backward(lin, 0, QP_GEMM_FC, dX, dW, NULL, dY, X, W, FM, FIC, FOC, 0) == 0 &&
              qp_linear_flush(lin) == 0,
          "%s: %s", spec, qp_linear_error(lin));
    CHECK(b.n_qerr == 6 && b.n == 4, "%s: %d qerr rows and %d block-scale rows, want 6 and 4 (no row for dy's "
          "per-tensor FP8)", spec, b.n_qerr, b.n);
    check_bscale(&b, "fprop", "x", QP_FMT_NVFP4, X, FM, FIC);
    check_bscale(&b, "fprop", "w", QP_FMT_MXFP8, W, FOC, FIC);
    check_bscale(&b, "dgrad", "w", QP_FMT_FP8_BLOCK_2D, Wt, FIC, FOC);
    check_bscale(&b, "wgrad", "x", QP_FMT_MXFP6_E2M3, Xt, FIC, FM);
    printf("block-scale rows: %d of %d qerr rows (fprop x, w; dgrad w; wgrad x), each qp_metrics_for_format's\n", b.n,
           b.n_qerr);
    free(X), free(W), free(dY), free(Xt), free(Wt), free(Y), free(dX), free(dW);
    qp_linear_destroy(lin);
}

int main(void)
{
    char err[256];
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    CHECK(gemm != NULL, "gemm: %s", err);
    if (!gemm) return qp_test_finish("test_gemm_recipes");
    printf("GEMMs %dx%dx%d, BF16 kernel: %s; worst |got - ref| / sum|a b| (limit %.0e)\n", M, IC, OC,
           qp_gemm_has_bf16(gemm) ? "yes" : "no (FP32 fallback)", TOL);
    printf("  %-26s %9s %9s %9s %9s %9s %9s\n", "recipe", "fprop", "dgrad", "wgrad", "head", "SR mean", "RHT err");
    for (int i = 0; i < NCASES; i++) run_case(&cases[i], gemm, 1000 + (uint64_t)i);
    test_reuse(gemm);
    test_dx_written(gemm);
    test_kscaled(gemm);
    test_every_format(gemm);
    test_block_scale_rows(gemm);
    qp_gemm_destroy(gemm);
    return qp_test_finish("test_gemm_recipes");
}
