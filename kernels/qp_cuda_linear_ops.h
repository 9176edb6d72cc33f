/* qp_cuda_linear_ops.h — the GPU's operations of the precision dispatch
 * (train/precision/qp_linear_ops.h), written once over a table of device primitives.
 *
 * Owns: how a GPU turns one quantization job of the dispatch into what its
 * GEMM takes — FP8 codes with a device decode scale (FP8-native), block codes
 * with cuBLASLt-tiled block scales (MXFP8/NVFP4-native), unscaled BF16 values
 * (emulated), or FP32 values (a quantized operand meeting an unquantized one,
 * and FP8 blocks with FP32 scales and their partners), every tensor decode
 * scale as a device pointer the GEMM applies — how its statistics are kept
 * on the device and come back to the host in one copy per flush, which GEMM
 * kind a pair of formats gets on which GPU (qpl_gemm_kind), and the path's
 * name (qpl_set_device). What is transposed, rotated, quantized in which format
 * with which SR stream and scale, and what the statistics update, is the
 * dispatch's own (train/precision/qp_linear.c), the same code the CPU runs.
 * kernels/qp_cuda_linear.cu instantiates this with kernel launches;
 * tests/kernels/test_cuda_linear_pass.c with host primitives (quant/'s qdq,
 * the CPU GEMM on the operands the GPU GEMM would get) and checks the
 * dispatch on them against the dispatch on the CPU's operations — so what
 * the GPU runs is tested without a GPU. Plain C. */
#ifndef QP_CUDA_LINEAR_OPS_H
#define QP_CUDA_LINEAR_OPS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_linear_ops.h"

/* One quantization's statistics, on the host. */
typedef struct {
    float amax, scale, scale_inv;
    uint64_t n_nonfinite, n_sat, n_nonzero, n_flushed;
    double xx, ee; /* ||x||^2 and ||x - y*scale_inv||^2 over finite x */
} qpl_stats;

/* Device primitives (each returns 0, or -1 with a message error() gives).
 * `side` (0: the GEMM's A, 1: its B) selects the statistics scratch. */
typedef struct {
    void *ctx;
    const char *(*error)(void *ctx);
    int (*transpose)(void *ctx, const float *src, float *dst, int src_rows, int src_cols);
    int (*transpose_u8)(void *ctx, const uint8_t *src, uint8_t *dst, int src_rows, int src_cols);
    int (*copy)(void *ctx, float *dst, const float *src, int64_t n);
    int (*rht)(void *ctx, float *x, int rows, int cols, int n, uint64_t seed);
    /* Transformer Engine's fixed-sign 16-point RHT in place, bit for bit
     * quant/'s qp_rht16_te (NULL: none; the dispatch refuses rht=te) */
    int (*rht_te)(void *ctx, float *x, int rows, int cols);
    /* unscaled quantize-dequantize into y (FP32) and, when y_bf16, BF16 */
    int (*qdq)(void *ctx, qp_fmt fmt, const float *x, float *y, uint16_t *y_bf16, int rows, int cols,
               const qp_qopts *o, int side);
    /* codes in quant/'s packed layout; the decode scale stays in scratch
     * `side`; block formats (MXFP8, NVFP4, NVFP4-2D) also leave their block
     * scales there in cuBLASLt's tiled layout (block_scales_ptr) */
    int (*quantize)(void *ctx, qp_fmt fmt, const float *x, int rows, int cols, const qp_qopts *o, uint8_t *codes,
                    int side);
    int (*to_bf16)(void *ctx, const float *x, uint16_t *y, int64_t n);
    /* the error/flush reduction of x against y (FP32), or against FP8 codes */
    int (*reduce)(void *ctx, const float *x, const float *y, const uint8_t *codes, int e5m2, int64_t n, int side);
    /* keep the statistics now in scratch `side` (its last quantize/qdq and
     * reduce) as kept set `slot`, in stream order */
    int (*keep)(void *ctx, int side, int slot);
    /* kept sets 0..n-1 to the host (waits for the stream) */
    int (*fetch_kept)(void *ctx, int n, qpl_stats *out);
    const float *(*scale_inv_ptr)(void *ctx, int side);
    /* the tiled block scales of the last block-format quantize of `side` */
    const uint8_t *(*block_scales_ptr)(void *ctx, int side);
    /* max |x| over the finite values of x[0..n), to the host (waits) */
    int (*amax)(void *ctx, const float *x, int64_t n, float *out);
    /* D = alpha A B^T + beta D; operands rows x K */
    int (*gemm)(void *ctx, const qp_linear_operand *A, const qp_linear_operand *B, float *D, int M, int N, int K,
                float alpha, float beta);
    int (*bias_add)(void *ctx, float *Y, const float *b, int M, int N);
    int (*bias_grad)(void *ctx, float *db, const float *dY, int M, int N);
} qpl_prims;

/* How one GEMM runs (qpl_gemm_kind). */
enum { QPL_EMULATED = QP_LINEAR_EMULATED, QPL_FP8, QPL_MXFP8, QPL_NVFP4, QPL_F32, QPL_KIND_COUNT };

typedef struct {
    qpl_prims prim;
    qp_linear_ops ops;        /* the dispatch's operations: the functions below over prim */
    float *tbuf[2], *ybuf[2]; /* per side: transposed/rotated copy, quantize-dequantized copy (max_elems) */
    uint16_t *bbuf[2];        /* per side: the GEMM operand (BF16, or codes) (max_elems) */
    int64_t max_elems;
    int64_t n[2];             /* per side: elements of the last quantization */
    int64_t *kept_n;          /* per kept set: its elements (host, max_kept) */
    qpl_stats *kept;          /* where a fetch puts the kept sets (host, max_kept) */
    int fp8_native;   /* per-tensor FP8 GEMMs run natively (qpl_set_device) */
    int block_native; /* MXFP8 and NVFP4 GEMMs run natively, block-scaled */
    const char *path; /* the GEMM path's name */
    char err[256];
} qpl_device;

#define QPL_D ((qpl_device *)ctx)

static inline int qpl_fail(qpl_device *d, const char *msg)
{
    snprintf(d->err, sizeof d->err, "%s", msg);
    return -1;
}

/* A primitive failed: its message. */
static inline int qpl_prim_failed(qpl_device *d)
{
    return qpl_fail(d, d->prim.error ? d->prim.error(d->prim.ctx) : "device operation failed");
}
#define QPL_TRY(call) \
    do { \
        if (call) return qpl_prim_failed(d); \
    } while (0)

static inline const char *qpl_op_error(void *ctx) { return QPL_D->err; }

static inline int qpl_op_transpose(void *ctx, const float *src, float *dst, int src_rows, int src_cols)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.transpose(d->prim.ctx, src, dst, src_rows, src_cols));
    return 0;
}

static inline int qpl_op_copy(void *ctx, float *dst, const float *src, int64_t n)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.copy(d->prim.ctx, dst, src, n));
    return 0;
}

static inline int qpl_op_rht(void *ctx, float *x, int rows, int cols, int n, uint64_t seed)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.rht(d->prim.ctx, x, rows, cols, n, seed));
    return 0;
}

static inline int qpl_op_rht_te(void *ctx, float *x, int rows, int cols)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.rht_te(d->prim.ctx, x, rows, cols));
    return 0;
}

static inline int qpl_op_amax(void *ctx, const float *x, int64_t n, float *out)
{
    qpl_device *d = QPL_D;
    if (!d->prim.amax) return qpl_fail(d, "data parallelism needs the device amax operation");
    QPL_TRY(d->prim.amax(d->prim.ctx, x, n, out));
    return 0;
}

/* An unquantized operand: FP32, transposed into tbuf when stored transposed
 * (the GPU GEMM takes rows x K). */
static inline int qpl_op_plain(void *ctx, const float *x, int trans, int rows, int cols, int side,
                               qp_linear_operand *out)
{
    qpl_device *d = QPL_D;
    const float *v = x;
    if (trans) {
        if ((int64_t)rows * cols > d->max_elems) {
            snprintf(d->err, sizeof d->err, "operand of %dx%d larger than the dispatch's buffers", rows, cols);
            return -1;
        }
        QPL_TRY(d->prim.transpose(d->prim.ctx, x, d->tbuf[side], cols, rows));
        v = d->tbuf[side];
    }
    *out = (qp_linear_operand){QP_LOP_F32, v, 0, 1.0f, NULL, NULL, NULL};
    return 0;
}

/* Keep side's statistics as slot `slot`, with the element count they need. */
static inline int qpl_op_keep(void *ctx, int side, int slot)
{
    qpl_device *d = QPL_D;
    if (slot < 0 || slot >= d->ops.max_kept) return qpl_fail(d, "kept statistics slot out of range");
    QPL_TRY(d->prim.keep(d->prim.ctx, side, slot));
    d->kept_n[slot] = d->n[side];
    return 0;
}

/* Kept sets 0..n-1 as the dispatch wants them: the counts, and the error
 * metrics from the device's sums. */
static inline int qpl_op_fetch_kept(void *ctx, int n, qp_linear_stats *out)
{
    qpl_device *d = QPL_D;
    if (n > d->ops.max_kept) return qpl_fail(d, "more kept statistics than slots");
    QPL_TRY(d->prim.fetch_kept(d->prim.ctx, n, d->kept));
    for (int i = 0; i < n; i++) {
        const qpl_stats *h = &d->kept[i];
        qp_linear_stats *st = &out[i];
        qp_qstats *qs = &st->qs;
        memset(st, 0, sizeof *st);
        qs->n = d->kept_n[i];
        qs->n_nonfinite = (int64_t)h->n_nonfinite;
        qs->n_nonzero = (int64_t)h->n_nonzero;
        qs->n_sat = (int64_t)h->n_sat;
        qs->n_flushed = (int64_t)h->n_flushed;
        qs->amax = h->amax;
        qs->scale = h->scale;
        qs->scale_inv = h->scale_inv;
        const double xx = h->xx, ee = h->ee;
        st->rel_l2 = ee == 0.0 ? 0.0 : (xx == 0.0 ? INFINITY : sqrt(ee / xx));
        st->snr_db = ee == 0.0 ? INFINITY : (xx == 0.0 ? -INFINITY : 10.0 * log10(xx / ee));
        st->sat_frac = qs->n ? (double)qs->n_sat / (double)qs->n : 0.0;
        st->zero_frac = qs->n_nonzero ? (double)qs->n_flushed / (double)qs->n_nonzero : 0.0;
        st->amax = h->amax;
    }
    return 0;
}

/* One operand of a GEMM of job->kind, always rows x K (the TN form); its
 * statistics, when wanted, stay in side's scratch for keep. */
static inline int qpl_op_quantize(void *ctx, const qp_linear_qjob *j, qp_linear_operand *out)
{
    qpl_device *d = QPL_D;
    void *x = d->prim.ctx;
    const qp_format_traits *t = &qp_formats[j->fmt];
    const int side = j->side, rows = j->rows, cols = j->cols;
    if (t->row_scaled) {
        /* one scale per row: qp_cuda_quantize takes one tensor scale */
        snprintf(d->err, sizeof d->err, "format %s (a scale per row) is quantized on the CPU only, not on the GPU",
                 t->name);
        return -1;
    }
    const float *src = j->x;
    int trans = j->trans;
    const int64_t n = (int64_t)rows * cols;
    d->n[side] = n;
    if (trans && t->block_cols > 1) {
        /* square 2D blocks the dispatch leaves as stored (they quantize
         * alike either way): the GPU's block operands are rows x K */
        QPL_TRY(d->prim.transpose(x, src, d->tbuf[side], cols, rows));
        src = d->tbuf[side];
        trans = 0;
    }
    const int qrows = trans ? cols : rows, qcols = trans ? rows : cols;
    switch (j->kind) {
    case QPL_MXFP8:
    case QPL_NVFP4:
        /* block formats are quantized along K (the dispatch transposed them):
         * codes and tiled block scales straight to the GEMM, NVFP4's tensor
         * decode scale as a device pointer (folded into alpha on the device).
         * Statistics come from a quantize-dequantize of the same operand
         * (same options, so the same values). */
        QPL_TRY(d->prim.quantize(x, j->fmt, src, rows, cols, j->opts, (uint8_t *)d->bbuf[side], side));
        *out = (qp_linear_operand){j->kind == QPL_MXFP8 ? QP_LOP_MXFP8 : QP_LOP_NVFP4, d->bbuf[side], 0, 1.0f,
                                   j->kind == QPL_NVFP4 ? d->prim.scale_inv_ptr(x, side) : NULL,
                                   d->prim.block_scales_ptr(x, side), NULL};
        if (j->want_stats)
            QPL_TRY(d->prim.qdq(x, j->fmt, src, d->ybuf[side], NULL, rows, cols, j->opts, side) ||
                    d->prim.reduce(x, src, d->ybuf[side], NULL, 0, n, side));
        return 0;
    case QPL_FP8: {
        /* FP8 codes in stored order (the CPU's SR words), transposed as bytes
         * when stored transposed; the decode scale reaches the GEMM as a
         * device pointer */
        uint8_t *codes = trans ? (uint8_t *)d->ybuf[side] : (uint8_t *)d->bbuf[side];
        QPL_TRY(d->prim.quantize(x, j->fmt, src, qrows, qcols, j->opts, codes, side));
        if (j->want_stats) QPL_TRY(d->prim.reduce(x, src, NULL, codes, j->fmt == QP_FMT_FP8_E5M2, n, side));
        if (trans) QPL_TRY(d->prim.transpose_u8(x, codes, (uint8_t *)d->bbuf[side], qrows, qcols));
        *out = (qp_linear_operand){j->fmt == QP_FMT_FP8_E5M2 ? QP_LOP_E5M2 : QP_LOP_E4M3, d->bbuf[side], 0, 1.0f,
                                   d->prim.scale_inv_ptr(x, side), NULL, NULL};
        return 0;
    }
    case QPL_EMULATED:
    case QPL_F32: {
        /* FP32 copy always (statistics, transposition); BF16 straight from
         * the quantizer when no transpose follows, else a per-tensor format
         * quantized in stored order (the CPU's SR words) and transposed. In
         * an FP32 GEMM (qpl_gemm_kind) a format whose scales cannot go into
         * alpha (FP8 blocks with FP32 scales along K) gives its fully scaled
         * values, each code * scale rounded once to FP32, so the product
         * agrees with the CPU's K-chunked one to FP32 rounding, not bit for
         * bit; other formats stay unscaled, the tensor decode scale a device
         * pointer the GEMM folds into alpha. Block formats are never stored
         * transposed here (see above). */
        const int bf16 = j->kind == QPL_EMULATED;
        qp_qopts o = *j->opts;
        if (!t->unscaled_exact) o.unscaled = false;
        QPL_TRY(d->prim.qdq(x, j->fmt, src, d->ybuf[side], trans || !bf16 ? NULL : d->bbuf[side], qrows, qcols,
                            &o, side));
        const float *f32 = d->ybuf[side];
        if (trans) {
            QPL_TRY(d->prim.transpose(x, d->ybuf[side], d->tbuf[side], qrows, qcols));
            f32 = d->tbuf[side];
            if (bf16) QPL_TRY(d->prim.to_bf16(x, d->tbuf[side], d->bbuf[side], n));
        }
        if (j->want_stats) QPL_TRY(d->prim.reduce(x, src, d->ybuf[side], NULL, 0, n, side));
        const float *scale_inv = t->tensor_scale && t->unscaled_exact ? d->prim.scale_inv_ptr(x, side) : NULL;
        *out = bf16 ? (qp_linear_operand){QP_LOP_BF16, d->bbuf[side], 0, 1.0f, scale_inv, NULL, NULL}
                    : (qp_linear_operand){QP_LOP_F32, f32, 0, 1.0f, scale_inv, NULL, NULL};
        return 0;
    }
    }
    snprintf(d->err, sizeof d->err, "GEMM kind %d is not the GPU's", j->kind);
    return -1;
}

static inline int qpl_is_nvfp4(int f) { return f == QP_FMT_NVFP4 || f == QP_FMT_NVFP4_2D; }

/* How a GEMM (M x N x K) of formats a, b runs: QPL_F32 when some operand's
 * values are not BF16 values (an unquantized FP32 one meeting a quantized
 * one, or an FP8 block format with FP32 scales: the format row's
 * unscaled_exact); QPL_FP8 when both are per-tensor FP8 and the GPU runs
 * FP8; QPL_MXFP8 when both are MXFP8 (E4M3) and QPL_NVFP4 when both are
 * NVFP4 (1x16 or 16x16) on a block-scaling GPU; else QPL_EMULATED (FP32 x
 * FP32: plain). cuBLASLt's FP8 kernels want every dimension a multiple of
 * 16, its block-scaled ones K a multiple of 32 (and M, N of 16 here): other
 * shapes are emulated. Hopper's native block-scaled FP8 GEMM (cuBLAS 12.9+)
 * is not wired here. */
static inline int qpl_gemm_kind(const qpl_device *d, qp_fmt fa, qp_fmt fb, int M, int N, int K)
{
    if (fa == QP_FMT_FP32 && fb == QP_FMT_FP32) return QPL_EMULATED;
    if (!qp_formats[fa].unscaled_exact || !qp_formats[fb].unscaled_exact) return QPL_F32;
    if (M % 16 || N % 16 || K % 16) return QPL_EMULATED;
    if (d->fp8_native && (fa == QP_FMT_FP8_E4M3 || fa == QP_FMT_FP8_E5M2) &&
        (fb == QP_FMT_FP8_E4M3 || fb == QP_FMT_FP8_E5M2))
        return QPL_FP8;
    if (!d->block_native || K % 32) return QPL_EMULATED;
    if (fa == QP_FMT_MXFP8 && fb == QP_FMT_MXFP8) return QPL_MXFP8;
    if (qpl_is_nvfp4(fa) && qpl_is_nvfp4(fb)) return QPL_NVFP4;
    return QPL_EMULATED;
}

static inline int qpl_op_gemm_kind(void *ctx, qp_fmt a, qp_fmt b, int M, int N, int K)
{
    return qpl_gemm_kind(QPL_D, a, b, M, N, K);
}

static inline int qpl_op_gemm(void *ctx, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M,
                              int N, int K, float alpha, int accumulate)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.gemm(d->prim.ctx, a, b, C, M, N, K, alpha, accumulate ? 1.0f : 0.0f));
    return 0;
}

static inline int qpl_op_bias_add(void *ctx, float *Y, const float *b, int M, int N)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.bias_add(d->prim.ctx, Y, b, M, N));
    return 0;
}

static inline int qpl_op_bias_grad(void *ctx, float *db, const float *dY, int M, int N)
{
    qpl_device *d = QPL_D;
    QPL_TRY(d->prim.bias_grad(d->prim.ctx, db, dY, M, N));
    return 0;
}
#undef QPL_D

/* The GPU the dispatch runs on: compute capability cc (e.g. 90, 100) and
 * QP_CUDA_EMULATE (emulate != 0: every quantized GEMM emulated), for a
 * recipe making the GEMMs of s (qp_linear_gemms). Sets which GEMMs run
 * natively and the path's name:
 *   "fp8-native"    recipes whose quantized operands are all per-tensor FP8
 *                   without an RHT, some GEMM FP8 by FP8, cc >= 8.9;
 *   "nvfp4-native"  some GEMM multiplies NVFP4 (1x16 or 16x16) by NVFP4,
 *                   cc >= 10.0;
 *   "mxfp8-native"  else some GEMM multiplies MXFP8 (E4M3) by MXFP8, cc >= 10.0;
 *   "emulated-bf16" every other quantized recipe (MXFP4, MXFP8-E5M2, mixed
 *                   pairs, ...);
 *   "bf16", "fp32"  the unquantized recipes.
 * A native recipe's GEMMs of other formats or shapes (qpl_gemm_kind) still run
 * emulated; the name is that of its quantized GEMMs where they can (a recipe
 * with both NVFP4 and MXFP8 pairs runs both natively, named nvfp4-native). */
static inline void qpl_set_device(qpl_device *d, const qp_linear_gemm_set *s, int cc, int emulate)
{
    int any_bf16 = 0, any_emul = 0, only_fp8 = !s->any_rht, any_f8 = 0, any_mx = 0, any_nv = 0;
    for (int a = 0; a < QP_FMT_COUNT; a++)
        for (int b = 0; b < QP_FMT_COUNT; b++) {
            if (!s->pair[a][b]) continue;
            for (int k = 0; k < 2; k++) {
                const int f = k ? b : a;
                if (f == QP_FMT_BF16) any_bf16 = 1;
                else if (f != QP_FMT_FP32) any_emul = 1;
                if (f != QP_FMT_FP32 && f != QP_FMT_BF16 && f != QP_FMT_FP8_E4M3 && f != QP_FMT_FP8_E5M2)
                    only_fp8 = 0;
            }
            any_f8 |= (a == QP_FMT_FP8_E4M3 || a == QP_FMT_FP8_E5M2) && (b == QP_FMT_FP8_E4M3 || b == QP_FMT_FP8_E5M2);
            any_mx |= a == QP_FMT_MXFP8 && b == QP_FMT_MXFP8;
            any_nv |= qpl_is_nvfp4(a) && qpl_is_nvfp4(b);
        }
    d->fp8_native = any_emul && only_fp8 && !emulate && cc >= 89;
    d->block_native = any_emul && !emulate && cc >= 100;
    d->path = any_emul ? "emulated-bf16" : any_bf16 ? "bf16" : "fp32";
    if (d->fp8_native && any_f8) d->path = "fp8-native";
    else if (d->block_native && any_nv) d->path = "nvfp4-native";
    else if (d->block_native && any_mx) d->path = "mxfp8-native";
}

/* The dispatch's operations over prim, with buffers of max_elems per side
 * (tbuf, ybuf float; bbuf uint16) in the device's memory and a kept list of
 * max_kept sets (prim's keep/fetch_kept hold that many). 0, or -1 without
 * host memory; qpl_device_free releases it. */
static inline int qpl_device_init(qpl_device *d, const qpl_prims *prim, float *const tbuf[2], float *const ybuf[2],
                                  uint16_t *const bbuf[2], int64_t max_elems, int max_kept)
{
    memset(d, 0, sizeof *d);
    d->prim = *prim;
    d->max_elems = max_elems;
    for (int s = 0; s < 2; s++) d->tbuf[s] = tbuf[s], d->ybuf[s] = ybuf[s], d->bbuf[s] = bbuf[s];
    d->path = "fp32";
    if (max_kept < 1) max_kept = 1;
    d->kept_n = (int64_t *)calloc((size_t)max_kept, sizeof *d->kept_n);
    d->kept = (qpl_stats *)calloc((size_t)max_kept, sizeof *d->kept);
    if (!d->kept_n || !d->kept) {
        free(d->kept_n), free(d->kept);
        d->kept_n = NULL, d->kept = NULL;
        return -1;
    }
    d->ops = (qp_linear_ops){.ctx = d,
                             .max_elems = max_elems,
                             .max_kept = max_kept,
                             .max_copies = 0,
                             .tbuf = {tbuf[0], tbuf[1]},
                             .error = qpl_op_error,
                             .transpose = qpl_op_transpose,
                             .copy = qpl_op_copy,
                             .rht = qpl_op_rht,
                             .rht_te = prim->rht_te ? qpl_op_rht_te : NULL,
                             .transpose_rht = NULL,   /* the transpose, then the RHT in place */
                             .quantize_stored = NULL, /* the GPU quantizes the transposed copy */
                             .amax = qpl_op_amax,
                             .plain = qpl_op_plain,
                             .gemm_kind = qpl_op_gemm_kind,
                             .quantize = qpl_op_quantize,
                             .reuse = NULL, /* operands are rows x K: a later use quantizes again, the same values */
                             .take_rounded = NULL, /* the GPU model quantizes its operands in the dispatch */
                             .keep = qpl_op_keep,
                             .fetch_kept = qpl_op_fetch_kept,
                             .gemm = qpl_op_gemm,
                             .bias_add = qpl_op_bias_add,
                             .bias_grad = qpl_op_bias_grad};
    return 0;
}

static inline void qpl_device_free(qpl_device *d)
{
    free(d->kept_n), free(d->kept);
    d->kept_n = NULL, d->kept = NULL;
}

#endif
