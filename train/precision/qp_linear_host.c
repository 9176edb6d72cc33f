/* qp_linear_host.c — the CPU's operations of the dispatch (see qp_linear_host.h). */
#include "qp_linear_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_metrics.h"
#include "qp_transpose.h"

/* A quantization h_reuse can hand out again: where its values are (hbuf,
 * qbuf or a kept copy; NULL: none), in which form and what they hold. */
typedef struct {
    const void *data;
    int f32;          /* floats holding BF16 values (an FP32 GEMM kernel's operand), else BF16 bits */
    qp_fmt fmt;
    int qrows, qcols; /* as stored */
    int kchunked;     /* a K-chunked operand's codes: not BF16 values, never handed out again */
} held;

/* A quantized operand kept for a later use (qp_linear_qjob.keep): BF16 bits
 * or floats (as_f32, fixed at the first use: KEPT_F32_BUDGET), grown on
 * first use, what it holds and its statistics. */
typedef struct {
    void *buf;
    size_t cap; /* 0 until first kept: then as_f32 is fixed */
    int as_f32;
    held held;
    qp_linear_stats stats;
} kept_copy;

struct qp_linear_host {
    qp_linear_ops ops;
    qp_gemm *gemm;
    float *tbuf[2], *qbuf[2]; /* per GEMM side: transposed/rotated copy, quantized copy (K-chunked formats) */
    uint16_t *hbuf[2];        /* per GEMM side: the quantized copy as BF16 bits for a BF16 GEMM kernel */
    int f32_operands;         /* the GEMM runs BF16 products in FP32 (qp_gemm_has_bf16 0): quantized copies
                               * are floats (qbuf), which it reads without widening BF16 bits */
    float *mbuf;              /* dequantized values for error metrics */
    /* per side, grown on first use by a format whose block scales cannot go
     * into alpha (FP32-scaled FP8 blocks): packed codes and scales, and the
     * scale of every (row, K-chunk) for qp_gemm_run_kscaled */
    uint8_t *kcodes[2], *kscales[2];
    float *kscale[2];
    size_t kcodes_n[2], kscales_n[2], kscale_n[2];
    qp_linear_stats stats[2]; /* per side: the last quantization's */
    held last[2];             /* per side: the last quantization (h_reuse) */
    kept_copy *copy;          /* n_copies kept quantized operands */
    int n_copies;
    size_t kept_f32_bytes, kept_f32_budget; /* kept copies held as floats, in all; the most there may be */
    qp_linear_stats kept;     /* the one kept slot: statistics apply after each quantization */
    qp_linear_host_gemm_fn gemm_fn; /* the caller's product instead of qp_gemm (qp_linear_host_set_gemm) */
    void *gemm_user;
    char err[256];
};

/* Where the GEMM runs BF16 products on its FP32 kernel, quantized operands
 * are floats it reads as they are; kept copies too, up to this many bytes in
 * all (the first ones kept, in the order of the first step), and BF16 bits
 * beyond, half the memory, which the kernel widens when the backward uses
 * them. Every copy of the baby and llm.c small models fits (14 and 42 MB):
 * kept as bits, the baby model's weight copies alone cost its bf16 step
 * 5-10% in widening. At the GPT-2 124M shape (405 MB as floats) all floats
 * put qtrain's peak RSS above llm.c's (2575 against 2450 MiB). The form
 * changes no value: the same bits either way. */
#define KEPT_F32_BUDGET ((size_t)64 << 20) /* qp_linear_host_set_kept_f32_budget changes it */

#define H ((qp_linear_host *)ctx)

/* A held quantization as a GEMM operand: BF16-valued floats or BF16 bits;
 * a row-scaled format's (nvfp4-row) floats with each row's scale applied,
 * which are not BF16 values (an FP32 GEMM, alpha without them). */
static qp_linear_operand held_operand(const held *q, int trans, float scale_inv)
{
    const int rows_scaled = qp_fmt_valid(q->fmt) && qp_formats[q->fmt].row_scaled;
    return (qp_linear_operand){rows_scaled ? QP_LOP_F32 : q->f32 ? QP_LOP_F32_BF16 : QP_LOP_BF16, q->data, trans,
                               scale_inv, NULL, NULL, NULL};
}

static const char *h_error(void *ctx) { return H->err; }

/* The job's quantizer options: its element counts only when the job keeps
 * statistics (a scaling update or a qerr row reads them); otherwise the
 * quantizers skip counting. The block-scale statistics never: nothing in
 * the trainer reads them. */
static qp_qopts job_opts(const qp_linear_qjob *j)
{
    qp_qopts o = *j->opts;
    o.no_counts = !j->want_stats;
    o.no_block_stats = true;
    return o;
}

/* dst (src_cols x src_rows) = src^T */
static int h_transpose(void *ctx, const float *src, float *dst, int src_rows, int src_cols)
{
    (void)ctx;
    qp_transpose(src, dst, src_cols, src_rows);
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
    if (!qp_rht(x, rows, cols, n, seed)) return 0;
    snprintf(H->err, sizeof H->err, "no %d-point Hadamard transform over %d columns", n, cols);
    return -1;
}

static int h_rht_te(void *ctx, float *x, int rows, int cols)
{
    if (!qp_rht16_te(x, rows, cols)) return 0;
    snprintf(H->err, sizeof H->err, "no Transformer Engine 16-point transform over %d columns", cols);
    return -1;
}

static int h_transpose_rht(void *ctx, const float *src, float *dst, int src_rows, int src_cols, int n, uint64_t seed,
                           float *amax)
{
    if (!qp_transpose_rht_amax(src, dst, src_rows, src_cols, n, seed, amax)) return 0;
    snprintf(H->err, sizeof H->err, "no %d-point Hadamard transform down %d rows", n, src_rows);
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
    *out = (qp_linear_operand){QP_LOP_F32, x, trans, 1.0f, NULL, NULL, NULL};
    return 0;
}

/* Buffers the GEMM reads start on a cache line (64 bytes): realloc's 16 left
 * the GEMM's operand rows straddling lines. */
static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* A buffer of at least `bytes`; what it held is not kept (every user
 * rewrites it whole). */
static int grow(void **buf, size_t *cap, size_t bytes)
{
    if (*cap >= bytes) return 0;
    void *nb = alloc64(bytes);
    if (!nb) return -1;
    free(*buf);
    *buf = nb;
    *cap = bytes;
    return 0;
}

/* A format whose block scales must stay out of the GEMM's operands (FP32
 * scales per QK_FP8_BLOCK along K; rows x cols, K along cols): quantize into
 * packed storage, hand the GEMM the element codes (exact in BF16, into q) and
 * each row's scale per K-chunk, with the job's options o. */
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

/* The per-block scale statistics of job j's operand (a qerr row's): the
 * report qprec.errors and qerr make, qp_metrics_for_format, of the same
 * tensor quantized as stored with the job's options (scale, rounding
 * stream), which gives the values qp_qdq gave the GEMM; mbuf is its
 * scratch. */
static int block_scale_stats(qp_linear_host *h, const qp_linear_qjob *j, qp_linear_stats *st)
{
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    qp_metrics m;
    if (qp_metrics_for_format(j->fmt, j->x, qrows, qcols, j->opts, QP_RHT_OFF, 0, h->mbuf, &m)) {
        snprintf(h->err, sizeof h->err, "no block-scale statistics of a %dx%d %s operand (out of memory)", qrows,
                 qcols, qp_formats[j->fmt].name);
        return -1;
    }
    st->bsd = m.bsd;
    st->elems_flushed_frac = m.elems_flushed_frac, st->elems_saturated_frac = m.elems_saturated_frac;
    return 0;
}

/* quant/'s unscaled quantize-dequantize in the stored order, as BF16 bits
 * a BF16 GEMM reads as they are, or floats for an FP32 one (or the codes
 * and K-chunk scales of a format that needs them); the metrics from the
 * dequantized copy. */
static int h_quantize(void *ctx, const qp_linear_qjob *j, qp_linear_operand *out)
{
    qp_linear_host *h = H;
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    /* a scale per row (nvfp4-row) goes into no alpha and no K-chunk scale:
     * its values come scaled (qp_qdq's unscaled keeps the row scales), as floats */
    const int row_scaled = qp_formats[j->fmt].row_scaled;
    const int kchunked = !qp_formats[j->fmt].unscaled_exact && !row_scaled;
    int f32 = (!kchunked && h->f32_operands) || row_scaled;
    float *q = h->qbuf[j->side];
    void *qv = f32 ? (void *)q : (void *)h->hbuf[j->side];
    if (j->keep >= 0) {
        /* quantized straight into the kept copy, in the form its first use chose */
        int bad = j->keep >= h->n_copies || kchunked;
        if (!bad) {
            kept_copy *c = &h->copy[j->keep];
            const size_t f32_bytes = (size_t)qrows * qcols * sizeof(float);
            if (!c->cap) {
                c->as_f32 = f32 && (row_scaled || h->kept_f32_bytes + f32_bytes <= h->kept_f32_budget);
                if (c->as_f32) h->kept_f32_bytes += f32_bytes;
            }
            f32 = c->as_f32;
            bad = grow(&c->buf, &c->cap, (f32 ? f32_bytes : f32_bytes / 2) + 4);
            qv = c->buf;
        }
        if (bad) {
            snprintf(h->err, sizeof h->err, "cannot keep a %dx%d %s operand as copy %d", qrows, qcols,
                     qp_formats[j->fmt].name, j->keep);
            return -1;
        }
    }
    qp_linear_stats *st = &h->stats[j->side];
    memset(st, 0, sizeof *st);
    const qp_qopts o = job_opts(j);
    if (kchunked) {
        if (quantize_kchunked(h, j, &o, q, &st->qs)) return -1;
    } else if (f32 ? qp_qdq(j->fmt, j->x, qv, qrows, qcols, &o, &st->qs)
                   : qp_qdq_bf16(j->fmt, j->x, qv, qrows, qcols, &o, &st->qs)) {
        snprintf(h->err, sizeof h->err, "cannot quantize to format %d", (int)j->fmt);
        return -1;
    }
    h->last[j->side] = (held){kchunked ? (const void *)q : qv, f32, j->fmt, qrows, qcols, kchunked};
    const float *ks = kchunked ? h->kscale[j->side] : NULL;
    if (j->want_metrics) {
        const int64_t n = (int64_t)j->rows * j->cols;
        if (ks) {
            const int nk = (qcols + QK_FP8_BLOCK - 1) / QK_FP8_BLOCK;
            for (int64_t i = 0; i < n; i++) h->mbuf[i] = q[i] * ks[(i / qcols) * nk + (i % qcols) / QK_FP8_BLOCK];
        } else if (f32) {
            const float *qf = qv;
            for (int64_t i = 0; i < n; i++) h->mbuf[i] = qf[i] * st->qs.scale_inv;
        } else {
            const uint16_t *q16 = qv;
            for (int64_t i = 0; i < n; i++) h->mbuf[i] = qp_bf16_to_f32(q16[i]) * st->qs.scale_inv;
        }
        qp_metrics m;
        qp_metrics_compute(j->x, h->mbuf, n, &st->qs, &m);
        st->rel_l2 = m.rel_l2, st->snr_db = m.snr_db, st->sat_frac = m.sat_frac, st->zero_frac = m.zero_frac;
        st->amax = m.amax;
        if (qp_formats[j->fmt].block_cols > 1 && block_scale_stats(h, j, st)) return -1;
    }
    if (j->keep >= 0) h->copy[j->keep].held = h->last[j->side], h->copy[j->keep].stats = *st;
    *out = kchunked ? (qp_linear_operand){QP_LOP_F32_BF16, q, j->trans, st->qs.scale_inv, NULL, NULL, ks}
                    : held_operand(&h->last[j->side], j->trans, st->qs.scale_inv);
    return 0;
}

/* quant/'s column layout (qp_qdq_bf16_cols) where it quantizes x as
 * stored; the metrics need the rotated tensor in the quantized layout and
 * a kept copy the transposed layout, so those jobs take the transposed
 * path. */
static int h_quantize_stored(void *ctx, const qp_linear_qjob *j, int rht, uint64_t rht_seed, qp_linear_operand *out,
                             int *done)
{
    qp_linear_host *h = H;
    /* stored: j->cols rows of j->rows values (the contraction runs down the stored columns) */
    const int srows = j->cols, scols = j->rows;
    *done = 0;
    if (!j->trans || j->want_metrics || j->keep >= 0 || !qp_qdq_cols_direct(j->fmt, srows, scols, rht, j->opts))
        return 0;
    const int f32 = h->f32_operands;
    void *qv = f32 ? (void *)h->qbuf[j->side] : (void *)h->hbuf[j->side];
    qp_linear_stats *st = &h->stats[j->side];
    memset(st, 0, sizeof *st);
    const qp_qopts o = job_opts(j);
    if (f32 ? qp_qdq_cols(j->fmt, j->x, qv, srows, scols, rht, rht_seed, &o, &st->qs)
            : qp_qdq_bf16_cols(j->fmt, j->x, qv, srows, scols, rht, rht_seed, &o, &st->qs)) {
        snprintf(h->err, sizeof h->err, "cannot quantize a %dx%d operand to %s where it is stored", srows, scols,
                 qp_formats[j->fmt].name);
        return -1;
    }
    h->last[j->side] = (held){qv, f32, j->fmt, srows, scols, 0};
    *out = held_operand(&h->last[j->side], 1, st->qs.scale_inv);
    *done = 1;
    return 0;
}

/* The producer's quantized floats, held as h_quantize would hold its own
 * quantization of them (only where the GEMM reads floats: f32_operands). */
static int h_take_rounded(void *ctx, const qp_linear_qjob *j, const qp_qstats *counts, qp_linear_operand *out)
{
    qp_linear_host *h = H;
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    const qp_format_traits *t = &qp_formats[j->fmt];
    if (j->keep >= h->n_copies || !t->unscaled_exact || t->block_cols != 1 || j->fmt == QP_FMT_FP32) {
        snprintf(h->err, sizeof h->err, "cannot take a rounded %dx%d %s operand as copy %d", qrows, qcols,
                 qp_formats[j->fmt].name, j->keep);
        return -1;
    }
    qp_linear_stats *st = &h->stats[j->side];
    memset(st, 0, sizeof *st);
    st->qs = *counts;
    h->last[j->side] = (held){j->x, 1, j->fmt, qrows, qcols, 0};
    if (j->keep >= 0) h->copy[j->keep].held = h->last[j->side], h->copy[j->keep].stats = *st;
    *out = held_operand(&h->last[j->side], j->trans, counts->scale_inv);
    return 0;
}

/* An earlier quantization, read as the job says: the side's last (dY) or a
 * kept copy (X, W): the same values and statistics (its metrics too,
 * computed when the job wanted them: the same step's uses all want them or
 * none). */
static int h_reuse(void *ctx, const qp_linear_qjob *j, qp_linear_operand *out)
{
    qp_linear_host *h = H;
    const int qrows = j->trans ? j->cols : j->rows, qcols = j->trans ? j->rows : j->cols;
    const int kept = j->from >= 0;
    const held *src = !kept ? &h->last[j->side] : j->from < h->n_copies ? &h->copy[j->from].held : NULL;
    if (!src || !src->data || src->kchunked || src->fmt != j->fmt || src->qrows != qrows || src->qcols != qcols) {
        snprintf(h->err, sizeof h->err, "no %dx%d operand in %s to reuse", qrows, qcols, qp_formats[j->fmt].name);
        return -1;
    }
    if (kept) h->stats[j->side] = h->copy[j->from].stats;
    *out = held_operand(src, j->trans, h->stats[j->side].qs.scale_inv);
    return 0;
}

static int h_keep(void *ctx, int side, int slot)
{
    qp_linear_host *h = H;
    if (slot != 0) {
        snprintf(h->err, sizeof h->err, "kept statistics slot %d of 1", slot);
        return -1;
    }
    h->kept = h->stats[side];
    return 0;
}

static int h_fetch_kept(void *ctx, int n, qp_linear_stats *out)
{
    qp_linear_host *h = H;
    if (n > 1) {
        snprintf(h->err, sizeof h->err, "%d kept statistics of 1", n);
        return -1;
    }
    if (n == 1) out[0] = h->kept;
    return 0;
}

static int h_gemm(void *ctx, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N, int K,
                  float alpha, int accumulate)
{
    qp_linear_host *h = H;
    if (h->gemm_fn) return h->gemm_fn(h->gemm_user, a, b, C, M, N, K, alpha, accumulate, h->err, sizeof h->err);
    const int exact = a->type != QP_LOP_F32 && b->type != QP_LOP_F32;
    const int kc = a->kscale || b->kscale ? QK_FP8_BLOCK : 0;
    const int rc = qp_gemm_run_typed(h->gemm, a->data, a->type == QP_LOP_BF16, a->trans, b->data,
                                     b->type == QP_LOP_BF16, b->trans, C, M, N, K, kc, a->kscale, b->kscale, alpha,
                                     accumulate, exact);
    if (rc) {
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

qp_linear_host *qp_linear_host_create(qp_gemm *gemm, int64_t max_elems, int max_copies)
{
    qp_linear_host *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->gemm = gemm;
    h->f32_operands = !qp_gemm_has_bf16(gemm);
    h->kept_f32_budget = KEPT_F32_BUDGET;
    h->n_copies = max_copies > 0 ? max_copies : 0;
    const size_t bytes = (size_t)(max_elems > 0 ? max_elems : 1) * sizeof(float);
    int bad = !(h->mbuf = alloc64(bytes)) || !(h->copy = calloc((size_t)h->n_copies + 1, sizeof *h->copy));
    for (int s = 0; s < 2; s++)
        bad |= !(h->tbuf[s] = alloc64(bytes)) || !(h->qbuf[s] = alloc64(bytes)) ||
               !(h->hbuf[s] = alloc64(bytes / 2 + 2));
    if (bad) {
        qp_linear_host_destroy(h);
        return NULL;
    }
    h->ops = (qp_linear_ops){.ctx = h,
                             .max_elems = max_elems,
                             .max_kept = 1,
                             .max_copies = h->n_copies,
                             .tbuf = {h->tbuf[0], h->tbuf[1]},
                             .error = h_error,
                             .transpose = h_transpose,
                             .copy = h_copy,
                             .rht = h_rht,
                             .rht_te = h_rht_te,
                             .transpose_rht = h_transpose_rht,
                             .quantize_stored = h_quantize_stored,
                             .amax = h_amax,
                             .plain = h_plain,
                             .gemm_kind = NULL,
                             .quantize = h_quantize,
                             .reuse = h_reuse,
                             .take_rounded = h->f32_operands ? h_take_rounded : NULL,
                             .keep = h_keep,
                             .fetch_kept = h_fetch_kept,
                             .gemm = h_gemm,
                             .bias_add = h_bias_add,
                             .bias_grad = h_bias_grad};
    return h;
}

void qp_linear_host_destroy(qp_linear_host *h)
{
    if (!h) return;
    for (int s = 0; s < 2; s++)
        free(h->tbuf[s]), free(h->qbuf[s]), free(h->hbuf[s]), free(h->kcodes[s]),
            free(h->kscales[s]), free(h->kscale[s]);
    for (int i = 0; h->copy && i < h->n_copies; i++) free(h->copy[i].buf);
    free(h->copy);
    free(h->mbuf);
    free(h);
}

const qp_linear_ops *qp_linear_host_ops(qp_linear_host *h) { return &h->ops; }
void qp_linear_host_set_kept_f32_budget(qp_linear_host *h, size_t bytes) { h->kept_f32_budget = bytes; }

void qp_linear_host_set_gemm(qp_linear_host *h, qp_linear_host_gemm_fn fn, void *user)
{
    h->gemm_fn = fn;
    h->gemm_user = user;
}

int qp_linear_host_reserve(qp_linear_host *h, int64_t max_elems)
{
    if (max_elems <= h->ops.max_elems) return 0;
    const size_t bytes = (size_t)max_elems * sizeof(float);
    float *m = alloc64(bytes), *t[2] = {alloc64(bytes), alloc64(bytes)}, *q[2] = {alloc64(bytes), alloc64(bytes)};
    uint16_t *b[2] = {alloc64(bytes / 2 + 2), alloc64(bytes / 2 + 2)};
    if (!m || !t[0] || !t[1] || !q[0] || !q[1] || !b[0] || !b[1]) {
        free(m);
        for (int s = 0; s < 2; s++) free(t[s]), free(q[s]), free(b[s]);
        return -1;
    }
    /* what the last quantizations held is gone with the old buffers */
    memset(h->last, 0, sizeof h->last);
    free(h->mbuf);
    h->mbuf = m;
    for (int s = 0; s < 2; s++) {
        free(h->tbuf[s]), free(h->qbuf[s]), free(h->hbuf[s]);
        h->tbuf[s] = t[s], h->qbuf[s] = q[s], h->hbuf[s] = b[s];
        h->ops.tbuf[s] = t[s];
    }
    h->ops.max_elems = max_elems;
    return 0;
}
