/* qprec_linear_ops.c — the Python package's operations of the precision
 * dispatch (train/qp_linear_ops.h): the dispatch itself (train/qp_linear.c,
 * compiled into libqprec.so unchanged) decides every transpose, RHT,
 * format, stochastic-rounding stream and scale exactly as in qtrain; these
 * operations carry them out with quant/'s code and, instead of multiplying,
 * hand each GEMM's two operands to the caller (PyTorch), which multiplies
 * them itself.
 *
 * Owns: the package's definition of train/qp_linear_host.h's three
 * functions (the dispatch creates its CPU operations through them; qtrain's
 * are train/qp_linear_host.c, which runs oneDNN's GEMM — the package links
 * no GEMM library), and the package's qp_gemm (train/qp_gemm.h's opaque
 * type, the GEMM handed to qp_linear_create): a capture, not a product.
 * Each gemm() writes its operands, A (M x K) and B (N x K), as decoded FP32
 * values — element times block scale times the tensor's decode scale, what
 * quant/'s qp_qdq gives — into the next pair of the caller's buffers
 * (qprec_gemm_capture), so that C = A B^T is the product the dispatch asked
 * for.
 *
 * Differences from qtrain's operations that change no value: no reuse of
 * an earlier use's quantization (the dispatch then quantizes again, to the
 * same values: qp_linear_reusable), no quantization in the stored layout
 * (the transposed copy is quantized instead, as qp_linear_ops.h says the
 * values are the same), one kept statistics slot (statistics apply after
 * each quantization, as on qtrain's CPU). No data parallelism (no amax
 * operation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_linear_host.h"
#include "qp_linear_ops.h"
#include "qp_metrics.h"
#include "qprec_linear_ops.h"

struct qp_gemm {
    float *cap[2 * QPREC_CAPTURES]; /* where the next gemm calls write A and B */
    int n_cap, next_cap;
    qp_linear_host *host;           /* the operations made with it (qp_linear_host_create) */
};

qp_gemm *qprec_gemm_create(void) { return calloc(1, sizeof(qp_gemm)); }
void qprec_gemm_destroy(qp_gemm *g) { free(g); }

void qprec_gemm_capture(qp_gemm *g, float *const *bufs, int n_pairs)
{
    g->n_cap = n_pairs < QPREC_CAPTURES ? n_pairs : QPREC_CAPTURES;
    for (int i = 0; i < 2 * g->n_cap; i++) g->cap[i] = bufs[i];
    g->next_cap = 0;
}

struct qp_linear_host {
    qp_linear_ops ops;
    float *tbuf[2], *qbuf[2]; /* per GEMM side: transposed/rotated copy, quantized copy */
    float *mbuf;              /* decoded values for the error metrics */
    /* per side, grown on first use by a format whose block scales cannot go
     * into alpha (FP32-scaled FP8 blocks): packed codes and scales and the
     * scale of every (row, K-chunk) */
    uint8_t *kcodes[2], *kscales[2];
    float *kscale[2];
    size_t kcodes_n[2], kscales_n[2], kscale_n[2];
    qp_linear_stats stats[2];
    qp_linear_stats kept;
    qp_gemm *gemm;            /* the capture */
    char err[256];
};

#define H ((qp_linear_host *)ctx)

static const char *o_error(void *ctx) { return H->err; }

static int o_transpose(void *ctx, const float *src, float *dst, int src_rows, int src_cols)
{
    (void)ctx;
    for (int r = 0; r < src_rows; r++)
        for (int c = 0; c < src_cols; c++) dst[(size_t)c * src_rows + r] = src[(size_t)r * src_cols + c];
    return 0;
}

static int o_copy(void *ctx, float *dst, const float *src, int64_t n)
{
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return 0;
}

static int o_rht(void *ctx, float *x, int rows, int cols, int n, uint64_t seed)
{
    if (!qp_rht(x, rows, cols, n, seed)) return 0;
    snprintf(H->err, sizeof H->err, "no %d-point Hadamard transform over %d columns", n, cols);
    return -1;
}

static int o_plain(void *ctx, const float *x, int trans, int rows, int cols, int side, qp_linear_operand *out)
{
    (void)ctx, (void)rows, (void)cols, (void)side;
    *out = (qp_linear_operand){QP_LOP_F32, x, trans, 1.0f, NULL, NULL, NULL};
    return 0;
}

static int grow(void **buf, size_t *cap, size_t bytes)
{
    if (*cap >= bytes) return 0;
    void *nb = malloc(bytes);
    if (!nb) return -1;
    free(*buf);
    *buf = nb;
    *cap = bytes;
    return 0;
}

/* A format whose FP32 block scales run along K: element codes into q and
 * each (row, K-chunk) scale, as qtrain's CPU operations hand them over. */
static int quantize_kchunked(qp_linear_host *h, const qp_linear_qjob *j, const qp_qopts *o, float *q, qp_qstats *qs)
{
    const int side = j->side, rows = j->rows, cols = j->cols;
    const qp_format_traits *t = &qp_formats[j->fmt];
    if (j->trans || t->block_cols != QK_FP8_BLOCK) {
        snprintf(h->err, sizeof h->err, "%s: a K-chunked operand must be stored rows x K in blocks of %d", t->name,
                 QK_FP8_BLOCK);
        return -1;
    }
    qp_qtensor qt = {.fmt = j->fmt, .rows = rows, .cols = cols, .row_bytes = qp_row_bytes(j->fmt, cols),
                     .scale_inv = 1.0f};
    qp_scale_shape(j->fmt, rows, cols, &qt.scale_rows, &qt.scale_cols);
    const int nk = (int)qt.scale_cols;
    if (grow((void **)&h->kcodes[side], &h->kcodes_n[side], (size_t)rows * (size_t)qt.row_bytes + 1) ||
        grow((void **)&h->kscales[side], &h->kscales_n[side],
             (size_t)(qt.scale_rows * qt.scale_cols * t->scale_bytes) + 1) ||
        grow((void **)&h->kscale[side], &h->kscale_n[side], (size_t)rows * nk * sizeof(float) + 1)) {
        snprintf(h->err, sizeof h->err, "out of memory for a block-scaled GEMM operand");
        return -1;
    }
    qt.codes = h->kcodes[side];
    qt.scales = h->kscales[side];
    if (qp_quantize(j->x, &qt, o, qs)) {
        snprintf(h->err, sizeof h->err, "cannot quantize to %s", t->name);
        return -1;
    }
    qp_decode_codes(&qt, q);
    float *ks = h->kscale[side];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nk; c++) ks[(size_t)r * nk + c] = qp_block_scale_at(&qt, r, (int64_t)c * t->block_cols);
    return 0;
}

/* quant/'s unscaled quantize-dequantize of the operand as stored (or its
 * codes and K-chunk scales), with the error metrics when asked. */
static int o_quantize(void *ctx, const qp_linear_qjob *j, qp_linear_operand *out)
{
    qp_linear_host *h = H;
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    /* a scale per row (nvfp4-row): the values come with it (qp_qdq's unscaled keeps it) */
    const int row_scaled = qp_formats[j->fmt].row_scaled;
    const int kchunked = !qp_formats[j->fmt].unscaled_exact && !row_scaled;
    float *q = h->qbuf[j->side];
    qp_linear_stats *st = &h->stats[j->side];
    memset(st, 0, sizeof *st);
    qp_qopts o = *j->opts;
    o.no_counts = !j->want_stats;
    o.no_block_stats = true;
    if (kchunked) {
        if (quantize_kchunked(h, j, &o, q, &st->qs)) return -1;
    } else if (qp_qdq(j->fmt, j->x, q, qrows, qcols, &o, &st->qs)) {
        snprintf(h->err, sizeof h->err, "cannot quantize to %s", qp_formats[j->fmt].name);
        return -1;
    }
    const float *ks = kchunked ? h->kscale[j->side] : NULL;
    if (j->want_metrics) {
        const int64_t n = (int64_t)j->rows * j->cols;
        if (ks) {
            const int nk = (qcols + QK_FP8_BLOCK - 1) / QK_FP8_BLOCK;
            for (int64_t i = 0; i < n; i++) h->mbuf[i] = q[i] * ks[(i / qcols) * nk + (i % qcols) / QK_FP8_BLOCK];
        } else {
            for (int64_t i = 0; i < n; i++) h->mbuf[i] = q[i] * st->qs.scale_inv;
        }
        qp_metrics m;
        qp_metrics_compute(j->x, h->mbuf, n, &st->qs, &m);
        st->rel_l2 = m.rel_l2, st->snr_db = m.snr_db, st->sat_frac = m.sat_frac, st->zero_frac = m.zero_frac;
        st->amax = m.amax;
    }
    *out = (qp_linear_operand){row_scaled ? QP_LOP_F32 : QP_LOP_F32_BF16, q, j->trans, st->qs.scale_inv, NULL, NULL,
                               ks};
    return 0;
}

static int o_keep(void *ctx, int side, int slot)
{
    qp_linear_host *h = H;
    if (slot != 0) {
        snprintf(h->err, sizeof h->err, "kept statistics slot %d of 1", slot);
        return -1;
    }
    h->kept = h->stats[side];
    return 0;
}

static int o_fetch_kept(void *ctx, int n, qp_linear_stats *out)
{
    qp_linear_host *h = H;
    if (n > 1) {
        snprintf(h->err, sizeof h->err, "%d kept statistics of 1", n);
        return -1;
    }
    if (n == 1) out[0] = h->kept;
    return 0;
}

/* One operand (rows x K) as decoded FP32 values into dst: element (times
 * the K-chunk scale) times the tensor's decode scale, quant/'s qp_qdq's
 * product. */
static void decode_operand(const qp_linear_operand *a, int rows, int K, float *dst)
{
    const float s = a->scale_inv_ptr ? *a->scale_inv_ptr : a->scale_inv;
    const float *v = a->data;
    const int nk = (K + QK_FP8_BLOCK - 1) / QK_FP8_BLOCK;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++) {
            float x = a->trans ? v[(size_t)k * rows + r] : v[(size_t)r * K + k];
            if (a->kscale) x *= a->kscale[(size_t)r * nk + k / QK_FP8_BLOCK];
            if (s != 1.0f) x *= s;
            dst[(size_t)r * K + k] = x;
        }
}

static int o_gemm(void *ctx, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N, int K,
                  float alpha, int accumulate)
{
    qp_linear_host *h = H;
    (void)C, (void)alpha, (void)accumulate; /* the caller multiplies: alpha is the two decode scales, applied here */
    qp_gemm *g = h->gemm;
    if (!g || g->next_cap >= g->n_cap) {
        snprintf(h->err, sizeof h->err, "a GEMM of the dispatch with no buffers for its operands");
        return -1;
    }
    float *da = g->cap[2 * g->next_cap], *db = g->cap[2 * g->next_cap + 1];
    g->next_cap++;
    if (a->type != QP_LOP_F32 && a->type != QP_LOP_F32_BF16) goto bad;
    if (b->type != QP_LOP_F32 && b->type != QP_LOP_F32_BF16) goto bad;
    decode_operand(a, M, K, da);
    decode_operand(b, N, K, db);
    return 0;
bad:
    snprintf(h->err, sizeof h->err, "an operand held as %d/%d, not floats", (int)a->type, (int)b->type);
    return -1;
}

/* bias: the caller's (PyTorch adds it and sums its gradient) */
static int o_bias_add(void *ctx, float *Y, const float *b, int M, int N)
{
    (void)Y, (void)b, (void)M, (void)N;
    snprintf(H->err, sizeof H->err, "the package's dispatch leaves the bias to its caller");
    return -1;
}

static int o_bias_grad(void *ctx, float *db, const float *dY, int M, int N)
{
    (void)db, (void)dY, (void)M, (void)N;
    snprintf(H->err, sizeof H->err, "the package's dispatch leaves the bias to its caller");
    return -1;
}
#undef H

/* The operations' buffers hold operands of n values from now on (the
 * dispatch reads max_elems and tbuf from the table at each use). */
int qprec_gemm_reserve(qp_gemm *g, int64_t n)
{
    qp_linear_host *h = g->host;
    if (!h) return -1;
    if (n <= h->ops.max_elems) return 0;
    const size_t bytes = (size_t)n * sizeof(float);
    float *m = malloc(bytes), *t0 = malloc(bytes), *t1 = malloc(bytes), *q0 = malloc(bytes), *q1 = malloc(bytes);
    if (!m || !t0 || !t1 || !q0 || !q1) {
        free(m), free(t0), free(t1), free(q0), free(q1);
        return -1;
    }
    free(h->mbuf), free(h->tbuf[0]), free(h->tbuf[1]), free(h->qbuf[0]), free(h->qbuf[1]);
    h->mbuf = m, h->tbuf[0] = t0, h->tbuf[1] = t1, h->qbuf[0] = q0, h->qbuf[1] = q1;
    h->ops.tbuf[0] = t0, h->ops.tbuf[1] = t1;
    h->ops.max_elems = n;
    return 0;
}

qp_linear_host *qp_linear_host_create(qp_gemm *gemm, int64_t max_elems, int max_copies)
{
    (void)max_copies; /* no kept copies */
    qp_linear_host *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->gemm = gemm;
    if (gemm) gemm->host = h;
    const size_t bytes = (size_t)(max_elems > 0 ? max_elems : 1) * sizeof(float);
    int bad = !(h->mbuf = malloc(bytes));
    for (int s = 0; s < 2; s++) bad |= !(h->tbuf[s] = malloc(bytes)) || !(h->qbuf[s] = malloc(bytes));
    if (bad) {
        qp_linear_host_destroy(h);
        return NULL;
    }
    h->ops = (qp_linear_ops){.ctx = h,
                             .max_elems = max_elems,
                             .max_kept = 1,
                             .max_copies = 0,
                             .tbuf = {h->tbuf[0], h->tbuf[1]},
                             .error = o_error,
                             .transpose = o_transpose,
                             .copy = o_copy,
                             .rht = o_rht,
                             .transpose_rht = NULL,
                             .quantize_stored = NULL,
                             .amax = NULL,
                             .plain = o_plain,
                             .gemm_kind = NULL,
                             .quantize = o_quantize,
                             .reuse = NULL,
                             .take_rounded = NULL,
                             .keep = o_keep,
                             .fetch_kept = o_fetch_kept,
                             .gemm = o_gemm,
                             .bias_add = o_bias_add,
                             .bias_grad = o_bias_grad};
    return h;
}

void qp_linear_host_destroy(qp_linear_host *h)
{
    if (!h) return;
    for (int s = 0; s < 2; s++)
        free(h->tbuf[s]), free(h->qbuf[s]), free(h->kcodes[s]), free(h->kscales[s]), free(h->kscale[s]);
    free(h->mbuf);
    free(h);
}

const qp_linear_ops *qp_linear_host_ops(qp_linear_host *h) { return &h->ops; }
void qp_linear_host_set_kept_f32_budget(qp_linear_host *h, size_t bytes) { (void)h, (void)bytes; }
