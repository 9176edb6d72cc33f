/* test_dist_linear — the precision dispatch under data parallelism (MPI, 2 ranks).
 *
 * Each rank holds half of the tokens of x and dy; rank 1's half holds the
 * global maxima. For every recipe the sliced dispatch (qp_linear_cfg dp_* and
 * the reduce hooks over MPI) must give, for this rank's rows, the single
 * process's forward output and dgrad bit for bit (same per-tensor scales from
 * the global amax, same stochastic-rounding words), its wgrad once the ranks'
 * partial products are summed (to FP32 summation order), and the same scaling
 * states (scales, delayed-scaling history) — over two steps, the second with
 * larger data so a delayed scale differs from the current one. Run:
 *   mpirun -np 2 test_dist_linear */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_dist.h"
#include "qp_gemm.h"
#include "qp_linear.h"
#include "qp_recipe.h"
#include "qp_scaling.h"
#include "qp_test.h"

#define NL 8 /* layer 0 of 8: outside the BF16 last blocks of the NVFP4 recipe */
#define M 128 /* a rank's 64 rows: qp_gemm's ROW_QUANTUM */
#define IC 64
#define OC 48

static void dist_max(float *v, int n, void *u) { (void)u, qp_dist_max_f32(v, n); }
static void dist_sum(double *v, int n, void *u) { (void)u, qp_dist_sum_f64(v, n); }

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

static void fill(float *x, int64_t n, float k, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) x[i] = k * (frand(s) + frand(s) + frand(s));
}

static void run_recipe(const char *spec, qp_gemm *gemm, int rank, int world)
{
    char err[256];
    qp_recipe r;
    if (qp_recipe_parse(spec, &r, err, sizeof err)) {
        CHECK(0, "parse %s: %s", spec, err);
        return;
    }
    const qp_linear_cfg one = {.n_layers = NL, .max_elems = (int64_t)M * IC, .seed = 99, .recipe = &r, .gemm = gemm};
    qp_linear_cfg dp = one;
    dp.dp_rank = rank, dp.dp_size = world, dp.reduce_max = dist_max, dp.reduce_sum = dist_sum;
    qp_linear *ref = qp_linear_create(&one, err, sizeof err), *par = qp_linear_create(&dp, err, sizeof err);
    CHECK(ref && par, "create %s: %s", spec, err);
    if (!ref || !par) return;
    const int Ml = M / world, off = rank * Ml;
    float *X = malloc(sizeof(float) * M * IC), *W = malloc(sizeof(float) * OC * IC), *dY = malloc(sizeof(float) * M * OC);
    float *Yr = malloc(sizeof(float) * M * OC), *Yd = malloc(sizeof(float) * Ml * OC);
    float *dXr = calloc(M * IC, sizeof(float)), *dXd = calloc(Ml * IC, sizeof(float));
    float *dWr = calloc(OC * IC, sizeof(float)), *dWd = calloc(OC * IC, sizeof(float));
    uint64_t s = 12345;
    const qp_gemm_id g = QP_GEMM_FC;
    for (int step = 0; step < 2; step++) {
        const float k = step ? 2.0f : 1.0f;
        fill(X, M * IC, 0.5f * k, &s), fill(W, OC * IC, 0.05f, &s), fill(dY, M * OC, 1e-3f * k, &s);
        /* the maxima sit in rank 1's half of the tokens */
        X[(M - 3) * IC + 5] = 9.0f * k;
        dY[(M - 2) * OC + 7] = -0.05f * k;
        memset(dXr, 0, sizeof(float) * M * IC), memset(dXd, 0, sizeof(float) * Ml * IC);
        memset(dWr, 0, sizeof(float) * OC * IC), memset(dWd, 0, sizeof(float) * OC * IC);
        qp_linear_begin_step(ref, step, 0), qp_linear_begin_step(par, step, 0);
        int bad = qp_linear_forward(ref, 0, g, Yr, X, W, NULL, M, IC, OC) ||
                  qp_linear_backward(ref, 0, g, dXr, dWr, NULL, dY, X, W, M, IC, OC, 1);
        bad |= qp_linear_forward(par, 0, g, Yd, X + off * IC, W, NULL, Ml, IC, OC) ||
               qp_linear_backward(par, 0, g, dXd, dWd, NULL, dY + off * OC, X + off * IC, W, Ml, IC, OC, 1);
        CHECK(!bad, "%s: dispatch failed: %s %s", spec, qp_linear_error(ref), qp_linear_error(par));
        if (bad) break;
        CHECK(memcmp(Yd, Yr + off * OC, sizeof(float) * Ml * OC) == 0, "%s step %d rank %d: fprop rows differ", spec,
              step, rank);
        CHECK(memcmp(dXd, dXr + off * IC, sizeof(float) * Ml * IC) == 0, "%s step %d rank %d: dgrad rows differ",
              spec, step, rank);
        qp_dist_sum_f32(dWd, OC * IC);
        double num = 0, den = 0;
        for (int i = 0; i < OC * IC; i++) num += (double)(dWd[i] - dWr[i]) * (dWd[i] - dWr[i]), den += (double)dWr[i] * dWr[i];
        CHECK(sqrt(num / den) < 1e-5, "%s step %d rank %d: wgrad summed over ranks, rel err %g", spec, step, rank,
              sqrt(num / den));
        for (int o = 0; o < QP_OPND_COUNT; o++) {
            const qp_scaling_state *a = qp_linear_scaling(ref, 0, g, (qp_operand)o), *b = qp_linear_scaling(par, 0, g, (qp_operand)o);
            CHECK(a->last_scale == b->last_scale && a->scale == b->scale, "%s step %d rank %d operand %d: scale %g/%g, single process %g/%g",
                  spec, step, rank, o, b->last_scale, b->scale, a->last_scale, a->scale);
            int same_hist = 1;
            if (a->amax_history)
                for (int h = 0; h < a->cfg.history_len; h++) same_hist &= a->amax_history[h] == b->amax_history[h];
            CHECK(same_hist && a->n_updates == b->n_updates, "%s step %d rank %d operand %d: amax history differs", spec, step, rank, o);
            for (int e = 0; e < QP_EV_COUNT; e++)
                CHECK(a->n_events[e] == b->n_events[e], "%s rank %d operand %d: %lld events of kind %d, single process %lld",
                      spec, rank, o, (long long)b->n_events[e], e, (long long)a->n_events[e]);
        }
        /* the explicit case: FP8 current scaling of x takes 448 / the GLOBAL max, which rank 0 does not hold */
        if (!strcmp(spec, "fp8-current")) {
            const float local = qp_amax(X + off * IC, (int64_t)Ml * IC), global = qp_amax(X, (int64_t)M * IC);
            const float got = qp_linear_scaling(par, 0, g, QP_OPND_X)->last_scale;
            CHECK(got == qp_scale_from_amax(448.0f, global, 0), "rank %d: x scale %g is not 448/global amax %g", rank,
                  got, global);
            if (rank == 0) CHECK(local < global && got != qp_scale_from_amax(448.0f, local, 0), "rank 0 holds the max?");
        }
    }
    free(X), free(W), free(dY), free(Yr), free(Yd), free(dXr), free(dXd), free(dWr), free(dWd);
    qp_linear_destroy(ref), qp_linear_destroy(par);
}

int main(int argc, char **argv)
{
    if (qp_dist_init(&argc, &argv)) return 1;
    const int rank = qp_dist_rank(), world = qp_dist_size();
    if (world != 2) { /* 4 ranks hold 16 tokens each: MX's 32-blocks of wgrad would straddle ranks */
        if (rank == 0) printf("test_dist_linear: needs mpirun -np 2; skipped\n");
        qp_dist_finalize();
        return 77;
    }
    char err[256];
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    CHECK(gemm != NULL, "gemm: %s", err);
    const char *recipes[] = {"fp8-current", "fp8", "mxfp8", "nvfp4", "nvfp4-naive", "mxfp4", "bf16"};
    for (unsigned i = 0; gemm && i < sizeof recipes / sizeof recipes[0]; i++) run_recipe(recipes[i], gemm, rank, world);
    qp_gemm_destroy(gemm);
    /* every rank's verdict */
    double f = qp_test_failed;
    qp_dist_sum_f64(&f, 1);
    if (f > 0) qp_test_failed = qp_test_failed ? qp_test_failed : 1;
    char name[64];
    snprintf(name, sizeof name, "test_dist_linear rank %d/%d", rank, world);
    const int rc = qp_test_finish(name);
    qp_dist_finalize();
    return rc;
}
