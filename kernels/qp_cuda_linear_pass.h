/* qp_cuda_linear_pass.h — the GPU precision dispatch's decisions, written once
 * over a table of device operations.
 *
 * Owns: for each GEMM of a linear layer, which operand is transposed,
 * rotated, quantized in which order and format, with which SR stream and
 * scale, how its statistics update the scaling state and make a qerr row, and
 * which GEMM runs — train/qp_linear.c's prepare()/run() for a GPU.
 * kernels/qp_cuda_linear.cu instantiates it with kernel launches;
 * tests/kernels/test_cuda_linear_pass.c with host operations (quant/'s qdq,
 * the CPU GEMM) and checks every recipe against qp_linear on the CPU — so the
 * dispatch logic the GPU runs is tested without a GPU. Plain C. */
#ifndef QP_CUDA_LINEAR_PASS_H
#define QP_CUDA_LINEAR_PASS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qp_cublaslt.h"
#include "qp_linear.h"

/* One quantization's statistics, on the host. */
typedef struct {
    float amax, scale, scale_inv;
    uint64_t n_nonfinite, n_sat, n_nonzero, n_flushed;
    double xx, ee; /* ||x||^2 and ||x - y*scale_inv||^2 over finite x */
} qpl_stats;

/* Device operations (each returns 0, or -1 after writing the state's err).
 * `side` (0: the GEMM's A, 1: its B) selects the statistics scratch. */
typedef struct {
    void *ctx;
    int (*transpose)(void *ctx, const float *src, float *dst, int src_rows, int src_cols);
    int (*transpose_u8)(void *ctx, const uint8_t *src, uint8_t *dst, int src_rows, int src_cols);
    int (*copy)(void *ctx, float *dst, const float *src, int64_t n);
    int (*rht16)(void *ctx, float *x, int rows, int cols, uint64_t seed);
    /* unscaled quantize-dequantize into y (FP32) and, when y_bf16, BF16 */
    int (*qdq)(void *ctx, qp_fmt fmt, const float *x, float *y, uint16_t *y_bf16, int rows, int cols,
               const qp_qopts *o, int side);
    /* per-tensor FP8 codes; the decode scale stays in scratch `side` */
    int (*quantize)(void *ctx, qp_fmt fmt, const float *x, int rows, int cols, const qp_qopts *o, uint8_t *codes,
                    int side);
    int (*to_bf16)(void *ctx, const float *x, uint16_t *y, int64_t n);
    /* the error/flush reduction of x against y (FP32), or against FP8 codes */
    int (*reduce)(void *ctx, const float *x, const float *y, const uint8_t *codes, int e5m2, int64_t n, int side);
    int (*fetch)(void *ctx, int side, qpl_stats *out); /* waits */
    const float *(*scale_inv_ptr)(void *ctx, int side);
    int (*gemm)(void *ctx, const qp_cublt_operand *A, const qp_cublt_operand *B, float *D, int M, int N, int K,
                float alpha, float beta);
    int (*bias_add)(void *ctx, float *Y, const float *b, int M, int N);
    int (*bias_grad)(void *ctx, float *db, const float *dY, int M, int N);
} qpl_ops;

typedef struct {
    qp_linear_cfg cfg;
    qp_linear *host;           /* scaling states and events */
    qp_linear_plan *plans;     /* per layer */
    float *tbuf[2], *ybuf[2];  /* per side: transposed/rotated copy, quantize-dequantized copy (max_elems) */
    uint16_t *bbuf[2];         /* per side: the GEMM operand (BF16, or FP8 codes) (max_elems) */
    int64_t step;
    int micro, log_qerr, frozen;
    int fp8_native;
    char err[256];
} qpl_state;

typedef struct {
    qp_cublt_operand op;
    float scale_inv; /* per-tensor decode scale, folded into alpha */
} qpl_operand;

static inline uint64_t qpl_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Statistics to the host: the scaling update, the qerr row, the decode scale. */
static inline int qpl_finish_stats(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, qp_pass pass,
                                   qp_operand o, qp_scaling_state *st, int update, int have_red, int64_t n, int side,
                                   float *scale_inv)
{
    qpl_stats h;
    if (op->fetch(op->ctx, side, &h)) return -1;
    *scale_inv = h.scale_inv;
    if (!have_red) return 0;
    qp_qstats qs;
    memset(&qs, 0, sizeof qs);
    qs.n = n;
    qs.n_nonfinite = (int64_t)h.n_nonfinite;
    qs.n_nonzero = (int64_t)h.n_nonzero;
    qs.n_sat = (int64_t)h.n_sat;
    qs.n_flushed = (int64_t)h.n_flushed;
    qs.amax = h.amax;
    qs.scale = h.scale;
    qs.scale_inv = h.scale_inv;
    if (update) qp_scaling_update(st, l->step, &qs);
    if (l->log_qerr && l->cfg.on_qerr) {
        const double xx = h.xx, ee = h.ee;
        const double rel = ee == 0.0 ? 0.0 : (xx == 0.0 ? INFINITY : sqrt(ee / xx));
        const double snr = ee == 0.0 ? INFINITY : (xx == 0.0 ? -INFINITY : 10.0 * log10(xx / ee));
        const double sat = n ? (double)qs.n_sat / (double)n : 0.0;
        const double zero = qs.n_nonzero ? (double)qs.n_flushed / (double)qs.n_nonzero : 0.0;
        qp_qerr_row row = {l->step, layer, qp_gemm_name(g), qp_operand_name(o), qp_pass_name(pass),
                           rel, snr, sat, zero, qs.amax, qs.scale};
        l->cfg.on_qerr(&row, l->cfg.user);
    }
    return 0;
}

/* Quantize one GEMM operand (rows x cols, contraction along cols; src stored
 * cols x rows when src_trans) for `pass`: qp_linear.c's prepare(). The
 * operand handed to the GEMM is always rows x cols, K contiguous (the TN form). */
static inline int qpl_prepare(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, qp_pass pass, qp_operand o,
                              int side, const float *src, int src_trans, int rows, int cols, int native,
                              qpl_operand *out)
{
    void *x = op->ctx;
    if (g == QP_GEMM_HEAD || l->plans[layer].fmt[o] == QP_FMT_FP32) {
        const float *d = src;
        if (src_trans) {
            if (op->transpose(x, src, l->tbuf[side], cols, rows)) return -1;
            d = l->tbuf[side];
        }
        out->op = (qp_cublt_operand){QP_CUBLT_F32, d, NULL, NULL, 0};
        out->scale_inv = 1.0f;
        return 0;
    }
    const qp_linear_plan *plan = &l->plans[layer];
    const qp_fmt fmt = plan->fmt[o];
    const qp_format_traits *t = &qp_formats[fmt];
    const int rht = pass == QP_PASS_WGRAD && plan->rht_wgrad;
    const float *in = src;
    int trans = src_trans;
    if (trans && (t->block_cols > 1 || rht)) {
        if (op->transpose(x, src, l->tbuf[side], cols, rows)) return -1;
        in = l->tbuf[side];
        trans = 0;
    }
    if (rht) {
        if (cols % 16) {
            snprintf(l->err, sizeof l->err,
                     "the Hadamard transform needs a contraction of a multiple of 16, not %d (layer %d, %s)", cols,
                     layer, qp_gemm_name(g));
            return -1;
        }
        if (in != l->tbuf[side] && op->copy(x, l->tbuf[side], in, (int64_t)rows * cols)) return -1;
        if (op->rht16(x, l->tbuf[side], rows, cols, qpl_mix64(l->cfg.seed ^ 0x52485431ull))) return -1;
        in = l->tbuf[side];
    }
    qp_qopts opts;
    memset(&opts, 0, sizeof opts);
    opts.unscaled = true;
    opts.stochastic = plan->sr[o];
    opts.seed = l->cfg.seed;
    opts.stream = qpl_mix64((uint64_t)l->step) ^ qpl_mix64(((uint64_t)l->micro << 32) | ((uint64_t)layer << 24) |
                                                         ((uint64_t)g << 16) | ((uint64_t)pass << 8) | (uint64_t)o);
    qp_scaling_state *st = qp_linear_scaling(l->host, layer, g, o);
    const int first_use = (pass == QP_PASS_FPROP && o != QP_OPND_DY) || (pass == QP_PASS_DGRAD && o == QP_OPND_DY);
    const int update = first_use && !l->frozen;
    if (t->tensor_scale) {
        if (first_use) qp_scaling_prepare(st, &opts);
        else if (plan->scaling == QP_SCALING_DELAYED) opts.scale = st->last_scale;
    }
    const int qrows = trans ? cols : rows, qcols = trans ? rows : cols;
    const int64_t n = (int64_t)rows * cols;
    const int want_stats = update || (l->log_qerr && l->cfg.on_qerr);
    if (native) {
        /* FP8 codes in stored order (the CPU's SR words), transposed as bytes
         * when stored transposed; the decode scale reaches the GEMM as a
         * device pointer */
        uint8_t *codes = trans ? (uint8_t *)l->ybuf[side] : (uint8_t *)l->bbuf[side];
        if (op->quantize(x, fmt, in, qrows, qcols, &opts, codes, side)) return -1;
        if (want_stats && op->reduce(x, in, NULL, codes, fmt == QP_FMT_FP8_E5M2, n, side)) return -1;
        if (trans && op->transpose_u8(x, codes, (uint8_t *)l->bbuf[side], qrows, qcols)) return -1;
        out->op = (qp_cublt_operand){fmt == QP_FMT_FP8_E5M2 ? QP_CUBLT_E5M2 : QP_CUBLT_E4M3, l->bbuf[side],
                                     op->scale_inv_ptr(x, side), NULL, 0};
        out->scale_inv = 1.0f;
        float unused;
        return want_stats ? qpl_finish_stats(l, op, layer, g, pass, o, st, update, 1, n, side, &unused) : 0;
    }
    /* FP32 copy always (statistics, transposition); BF16 straight from the
     * quantizer when no transpose follows, else a per-tensor format quantized
     * in stored order (the CPU's SR words) and transposed */
    if (op->qdq(x, fmt, in, l->ybuf[side], trans ? NULL : l->bbuf[side], qrows, qcols, &opts, side)) return -1;
    if (trans && (op->transpose(x, l->ybuf[side], l->tbuf[side], qrows, qcols) ||
                  op->to_bf16(x, l->tbuf[side], l->bbuf[side], n)))
        return -1;
    float scale_inv = 1.0f;
    if (t->tensor_scale || want_stats) {
        if (want_stats && op->reduce(x, in, l->ybuf[side], NULL, 0, n, side)) return -1;
        if (qpl_finish_stats(l, op, layer, g, pass, o, st, update, want_stats, n, side, &scale_inv)) return -1;
    }
    out->op = (qp_cublt_operand){QP_CUBLT_BF16, l->bbuf[side], NULL, NULL, fmt != QP_FMT_BF16};
    out->scale_inv = scale_inv;
    return 0;
}

/* 1 when both operands of a GEMM (M x N x K) are per-tensor FP8 and the GPU
 * runs FP8 natively; cuBLASLt's FP8 kernels want every dimension a multiple
 * of 16, so other shapes take the emulated path. */
static inline int qpl_native_pair(const qpl_state *l, int layer, qp_gemm_id g, qp_operand a, qp_operand b, int M,
                                  int N, int K)
{
    if (!l->fp8_native || g == QP_GEMM_HEAD || layer < 0 || layer >= l->cfg.n_layers) return 0;
    if (M % 16 || N % 16 || K % 16) return 0;
    const qp_fmt fa = l->plans[layer].fmt[a], fb = l->plans[layer].fmt[b];
    return (fa == QP_FMT_FP8_E4M3 || fa == QP_FMT_FP8_E5M2) && (fb == QP_FMT_FP8_E4M3 || fb == QP_FMT_FP8_E5M2);
}

static inline int qpl_check(qpl_state *l, int layer, qp_gemm_id g, int M, int IC, int OC)
{
    const int64_t biggest = (int64_t)(M > OC ? M : OC) * (IC > OC ? IC : OC);
    if (g != QP_GEMM_HEAD && (layer < 0 || layer >= l->cfg.n_layers || biggest > l->cfg.max_elems)) {
        snprintf(l->err, sizeof l->err, "GEMM %s of layer %d (%dx%dx%d) outside the dispatch's sizes",
                 qp_gemm_name(g), layer, M, IC, OC);
        return -1;
    }
    const int64_t mo = (int64_t)M * OC, oi = (int64_t)OC * IC, mi = (int64_t)M * IC;
    if (g == QP_GEMM_HEAD && (mo > oi ? (mo > mi ? mo : mi) : (oi > mi ? oi : mi)) > l->cfg.max_elems) {
        /* the head's transposed operands (dgrad, wgrad) pass through tbuf too */
        snprintf(l->err, sizeof l->err, "LM head GEMM (%dx%dx%d) larger than the dispatch's buffers", M, IC, OC);
        return -1;
    }
    return 0;
}

static inline int qpl_run(const qpl_ops *op, const qpl_operand *a, const qpl_operand *b, float *C, int M, int N,
                          int K, int accumulate)
{
    return op->gemm(op->ctx, &a->op, &b->op, C, M, N, K, a->scale_inv * b->scale_inv, accumulate ? 1.0f : 0.0f);
}

/* Y[M,OC] = X[M,IC] W[OC,IC]^T + b */
static inline int qpl_forward(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, float *Y, const float *X,
                              const float *W, const float *b, int M, int IC, int OC)
{
    if (qpl_check(l, layer, g, M, IC, OC)) return -1;
    qpl_operand a, w;
    const int nat = qpl_native_pair(l, layer, g, QP_OPND_X, QP_OPND_W, M, OC, IC);
    if (qpl_prepare(l, op, layer, g, QP_PASS_FPROP, QP_OPND_X, 0, X, 0, M, IC, nat, &a) ||
        qpl_prepare(l, op, layer, g, QP_PASS_FPROP, QP_OPND_W, 1, W, 0, OC, IC, nat, &w) ||
        qpl_run(op, &a, &w, Y, M, OC, IC, 0))
        return -1;
    return b ? op->bias_add(op->ctx, Y, b, M, OC) : 0;
}

/* dX += dY W, dW += dY^T X, db += column sums of dY */
static inline int qpl_backward(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, float *dX, float *dW,
                               float *db, const float *dY, const float *X, const float *W, int M, int IC, int OC)
{
    if (qpl_check(l, layer, g, M, IC, OC)) return -1;
    qpl_operand a, b;
    /* dgrad: dX[M,IC] += dY[M,OC] (W^T)[IC,OC]^T; W is stored OC x IC */
    int nat = qpl_native_pair(l, layer, g, QP_OPND_DY, QP_OPND_W, M, IC, OC);
    if (qpl_prepare(l, op, layer, g, QP_PASS_DGRAD, QP_OPND_DY, 0, dY, 0, M, OC, nat, &a) ||
        qpl_prepare(l, op, layer, g, QP_PASS_DGRAD, QP_OPND_W, 1, W, 1, IC, OC, nat, &b) ||
        qpl_run(op, &a, &b, dX, M, IC, OC, 1))
        return -1;
    /* wgrad: dW[OC,IC] += (dY^T)[OC,M] (X^T)[IC,M]^T */
    nat = qpl_native_pair(l, layer, g, QP_OPND_DY, QP_OPND_X, OC, IC, M);
    if (qpl_prepare(l, op, layer, g, QP_PASS_WGRAD, QP_OPND_DY, 0, dY, 1, OC, M, nat, &a) ||
        qpl_prepare(l, op, layer, g, QP_PASS_WGRAD, QP_OPND_X, 1, X, 1, IC, M, nat, &b) ||
        qpl_run(op, &a, &b, dW, OC, IC, M, 1))
        return -1;
    return db ? op->bias_grad(op->ctx, db, dY, M, OC) : 0;
}

#endif
