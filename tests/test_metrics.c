/* test_metrics.c — error metrics against values computed by hand, the
 * non-finite and all-zero conventions, and the RHT option of the report path. */
#include <stdlib.h>

#include "qp_hadamard.h"
#include "qp_metrics.h"
#include "qp_test.h"

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol * (fabs(b) + 1e-300); }

/* The block-scale statistics of x's packed quantization in fmt. */
static void block_dist(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, qp_bscale_dist *d)
{
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) abort();
    qp_quantize(x, &q, NULL, NULL);
    qp_block_scale_dist(&q, x, d);
    qp_qtensor_free(&q);
}

int main(void)
{
    const float x[4] = {3.0f, 4.0f, 0.0f, -1.0f}, y[4] = {3.0f, 3.0f, 0.0f, -1.0f};
    qp_metrics m;
    qp_metrics_compute(x, y, 4, NULL, &m);
    /* ||x||^2 = 26, ||x-y||^2 = 1 */
    CHECK(close_to(m.rel_l2, sqrt(1.0 / 26.0), 1e-12), "rel_l2 %g", m.rel_l2);
    CHECK(close_to(m.snr_db, 10 * log10(26.0), 1e-12), "snr %g", m.snr_db);
    CHECK(m.max_abs == 1.0 && m.amax == 4.0, "max_abs, amax");
    CHECK(close_to(m.cosine, (9 + 12 + 1) / sqrt(26.0 * 19.0), 1e-12), "cosine %g", m.cosine);

    qp_metrics_compute(x, x, 4, NULL, &m);
    CHECK(m.rel_l2 == 0.0 && isinf(m.snr_db) && m.snr_db > 0 && m.cosine == 1.0, "exact result");
    const float z[3] = {0, 0, 0};
    qp_metrics_compute(z, z, 3, NULL, &m);
    CHECK(m.rel_l2 == 0.0 && m.cosine == 1.0, "all zero");
    const float xn[3] = {1.0f, NAN, INFINITY}, yn[3] = {1.0f, NAN, 448.0f};
    qp_metrics_compute(xn, yn, 3, NULL, &m);
    CHECK(m.n_nonfinite == 2 && m.rel_l2 == 0.0, "non-finite inputs left out");

    /* Through a quantizer: fractions come from its counts. */
    float v[32] = {7.9f, 0.1f, 1.0f, 2.0f};
    float out[32];
    qp_qstats st;
    qp_qdq(QP_FMT_MXFP4, v, out, 1, 32, NULL, &st);
    qp_metrics_compute(v, out, 32, &st, &m);
    CHECK(close_to(m.sat_frac, 1.0 / 32.0, 1e-12) && close_to(m.zero_frac, 1.0 / 4.0, 1e-12),
          "sat %g zero %g", m.sat_frac, m.zero_frac);

    /* Report path: same numbers as by hand; RHT compares in the rotated basis. */
    unsigned long long s = 3;
    float *w = malloc(8 * 64 * 4);
    for (int i = 0; i < 8 * 64; i++) w[i] = qp_test_normal(&s) * (i % 64 == 7 ? 50.0f : 1.0f);
    qp_metrics a, b;
    CHECK(qp_metrics_for_format(QP_FMT_NVFP4, w, 8, 64, NULL, 0, 0, NULL, &a) == 0, "report");
    float *yy = malloc(8 * 64 * 4);
    qp_qdq(QP_FMT_NVFP4, w, yy, 8, 64, NULL, &st);
    qp_metrics_compute(w, yy, 8 * 64, &st, &b);
    block_dist(QP_FMT_NVFP4, w, 8, 64, &b.bsd);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "report == qdq + compute + the packed scales' statistics");
    CHECK(qp_metrics_for_format(QP_FMT_NVFP4, w, 8, 64, NULL, 1, 5, NULL, &b) == 0, "rht report");
    float *wr = malloc(8 * 64 * 4);
    memcpy(wr, w, 8 * 64 * 4);
    qp_rht16(wr, 8, 64, 5);
    qp_qdq(QP_FMT_NVFP4, wr, yy, 8, 64, NULL, &st);
    qp_metrics_compute(wr, yy, 8 * 64, &st, &a);
    block_dist(QP_FMT_NVFP4, wr, 8, 64, &a.bsd);
    CHECK(memcmp(&a, &b, sizeof a) == 0 && b.rel_l2 > 0, "rht report == rotate + qdq + compute");

    /* block-scale statistics worked by hand: MXFP8, one block of amax 1 (E8M0
     * 2^(0-8)) holding 1 and 0.25, one all-zero block (2^-127, not an underflow) */
    float hv[64] = {0};
    hv[0] = 1.0f, hv[5] = -0.25f;
    qp_bscale_dist d;
    block_dist(QP_FMT_MXFP8, hv, 1, 64, &d);
    CHECK(d.n_blocks == 2 && d.hist[-8 + QP_BSHIST_OFFSET] == 1 && d.hist[-127 + QP_BSHIST_OFFSET] == 1 &&
              close_to(d.log2_std, 59.5, 1e-12) && d.saturated_frac == 0.0 && d.underflow_frac == 0.0 &&
              d.dynamic_range_max_log2 == 2.0,
          "mxfp8 by hand: std %g range %g", d.log2_std, d.dynamic_range_max_log2);
    hv[40] = 1e-38f; /* its block's E8M0 exponent -127 - 8 clamps to 2^-127: an underflow */
    block_dist(QP_FMT_MXFP8, hv, 1, 64, &d);
    CHECK(d.underflow_frac == 0.5 && d.hist[-127 + QP_BSHIST_OFFSET] == 1, "mxfp8: an underflowing block");
    hv[40] = 1e6f; /* NVFP4: the block of 1e6 takes UE4M3 448 (saturated), the other 1 and 0.25 round to 0 */
    block_dist(QP_FMT_NVFP4, hv, 1, 64, &d);
    CHECK(d.n_blocks == 4 && d.saturated_frac == 0.25 && d.underflow_frac == 0.25 && d.hist[0] == 3,
          "nvfp4: sat %g under %g zero %lld", d.saturated_frac, d.underflow_frac, (long long)d.hist[0]);
    qp_qtensor nq = {0};
    qp_bscale_dist none;
    qp_qtensor_alloc(&nq, QP_FMT_FP8_E4M3, 1, 64);
    qp_quantize(hv, &nq, NULL, NULL);
    qp_block_scale_dist(&nq, hv, &none);
    CHECK(none.n_blocks == 0 && isnan(none.log2_std) && isnan(none.saturated_frac), "no block scales: none");
    qp_qtensor_free(&nq);
    free(wr);
    CHECK(qp_metrics_for_format(QP_FMT_NVFP4, w, 8, 63, NULL, 1, 5, NULL, &b) == -1, "rht needs cols %% 16");
    free(w), free(yy);
    return qp_test_finish("test_metrics");
}
