/* qp_linear_host.c — the CPU's operations of the dispatch (see qp_linear_host.h). */
#include "qp_linear_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_metrics.h"

struct qp_linear_host {
    qp_linear_ops ops;
    qp_gemm *gemm;
    float *tbuf[2], *qbuf[2]; /* per GEMM side: transposed/rotated copy, quantized copy */
    float *mbuf;              /* dequantized values for error metrics */
    char err[256];
};

#define H ((qp_linear_host *)ctx)

static const char *h_error(void *ctx) { return H->err; }

/* dst (src_cols x src_rows) = src^T, in 32 x 32 tiles */
static int h_transpose(void *ctx, const float *src, float *dst, int src_rows, int src_cols)
{
    (void)ctx;
    const int rows = src_cols, cols = src_rows;
#pragma omp parallel for schedule(static)
    for (int r0 = 0; r0 < rows; r0 += 32)
        for (int c0 = 0; c0 < cols; c0 += 32)
            for (int r = r0; r < r0 + 32 && r < rows; r++)
                for (int c = c0; c < c0 + 32 && c < cols; c++) dst[(size_t)r * cols + c] = src[(size_t)c * rows + r];
    return 0;
}

static int h_copy(void *ctx, float *dst, const float *src, int64_t n)
{
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return 0;
}

static int h_rht(void *ctx, float *x, int rows, int cols, int n, uint64_t seed)
{
    if (n == QK_RHT && !qp_rht16(x, rows, cols, seed)) return 0;
    snprintf(H->err, sizeof H->err, "no %d-point Hadamard transform over %d columns", n, cols);
    return -1;
}

static int h_amax(void *ctx, const float *x, int64_t n, float *out)
{
    (void)ctx;
    *out = qp_amax(x, n);
    return 0;
}

static int h_plain(void *ctx, const float *x, int trans, int rows, int cols, int side, qp_linear_operand *out)
{
    (void)ctx, (void)rows, (void)cols, (void)side;
    *out = (qp_linear_operand){QP_LOP_F32, x, trans, 1.0f, NULL, NULL};
    return 0;
}

/* quant/'s unscaled quantize-dequantize in the stored order; the metrics
 * from the dequantized copy. */
static int h_quantize(void *ctx, const qp_linear_qjob *j, qp_linear_operand *out, qp_linear_stats *st)
{
    qp_linear_host *h = H;
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    float *q = h->qbuf[j->side];
    qp_qdq(j->fmt, j->x, q, qrows, qcols, j->opts, &st->qs);
    if (j->want_metrics) {
        const int64_t n = (int64_t)j->rows * j->cols;
        for (int64_t i = 0; i < n; i++) h->mbuf[i] = q[i] * st->qs.scale_inv;
        qp_metrics m;
        qp_metrics_compute(j->x, h->mbuf, n, &st->qs, &m);
        st->rel_l2 = m.rel_l2, st->snr_db = m.snr_db, st->sat_frac = m.sat_frac, st->zero_frac = m.zero_frac;
        st->amax = m.amax;
    }
    *out = (qp_linear_operand){QP_LOP_F32_BF16, q, j->trans, st->qs.scale_inv, NULL, NULL};
    return 0;
}

static int h_gemm(void *ctx, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N, int K,
                  float alpha, int accumulate)
{
    qp_linear_host *h = H;
    if (qp_gemm_run(h->gemm, a->data, a->trans, b->data, b->trans, C, M, N, K, alpha, accumulate,
                    a->type == QP_LOP_F32_BF16 && b->type == QP_LOP_F32_BF16)) {
        snprintf(h->err, sizeof h->err, "%s", qp_gemm_error(h->gemm));
        return -1;
    }
    return 0;
}

static int h_bias_add(void *ctx, float *Y, const float *b, int M, int N)
{
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) Y[(size_t)m * N + n] += b[n];
    return 0;
}

/* column sums, rows in order; threads own disjoint column ranges */
static int h_bias_grad(void *ctx, float *db, const float *dY, int M, int N)
{
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int n0 = 0; n0 < N; n0 += 64) {
        const int n1 = n0 + 64 < N ? n0 + 64 : N;
        float sum[64] = {0};
        for (int m = 0; m < M; m++)
            for (int n = n0; n < n1; n++) sum[n - n0] += dY[(size_t)m * N + n];
        for (int n = n0; n < n1; n++) db[n] += sum[n - n0];
    }
    return 0;
}
#undef H

qp_linear_host *qp_linear_host_create(qp_gemm *gemm, int64_t max_elems)
{
    qp_linear_host *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->gemm = gemm;
    const size_t bytes = (size_t)(max_elems > 0 ? max_elems : 1) * sizeof(float);
    int bad = !(h->mbuf = malloc(bytes));
    for (int s = 0; s < 2; s++) bad |= !(h->tbuf[s] = malloc(bytes)) || !(h->qbuf[s] = malloc(bytes));
    if (bad) {
        qp_linear_host_destroy(h);
        return NULL;
    }
    h->ops = (qp_linear_ops){.ctx = h,
                             .max_elems = max_elems,
                             .tbuf = {h->tbuf[0], h->tbuf[1]},
                             .error = h_error,
                             .transpose = h_transpose,
                             .copy = h_copy,
                             .rht = h_rht,
                             .amax = h_amax,
                             .plain = h_plain,
                             .gemm_kind = NULL,
                             .quantize = h_quantize,
                             .gemm = h_gemm,
                             .bias_add = h_bias_add,
                             .bias_grad = h_bias_grad};
    return h;
}

void qp_linear_host_destroy(qp_linear_host *h)
{
    if (!h) return;
    for (int s = 0; s < 2; s++) free(h->tbuf[s]), free(h->qbuf[s]);
    free(h->mbuf);
    free(h);
}

const qp_linear_ops *qp_linear_host_ops(qp_linear_host *h) { return &h->ops; }
