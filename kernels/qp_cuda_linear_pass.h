/* qp_cuda_linear_pass.h — the GPU precision dispatch's decisions, written once
 * over a table of device operations.
 *
 * Owns: for each GEMM of a linear layer, which operand is transposed,
 * rotated, quantized in which order and format, with which SR stream and
 * scale, how its statistics update the scaling state and make a qerr row, and
 * which GEMM runs — train/qp_linear.c's prepare()/run() for a GPU.
 * Statistics never stop the stream per operand: a quantization's statistics
 * are kept on the device (op keep) with a pending record on the host, and
 * qpl_flush fetches every kept set in one copy and applies them in order —
 * the scaling updates, events and qerr rows qp_linear makes at each use.
 * Nothing read between a use and the flush depends on them (a delayed
 * scale's other uses in the step take the scale that use took, noted at
 * once; current scaling computes its scales on the device), so the results
 * are qp_linear's; the caller flushes before anything reads the scaling
 * states (the next micro-batch, checkpoints, the end of a step).
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
    int (*rht)(void *ctx, float *x, int rows, int cols, int n, uint64_t seed); /* n-point, in place */
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
     * reduce) as kept set `slot` (< qpl_state.max_pending), in stream order */
    int (*keep)(void *ctx, int side, int slot);
    /* kept sets 0..n-1 to the host (waits for the stream) */
    int (*fetch_kept)(void *ctx, int n, qpl_stats *out);
    const float *(*scale_inv_ptr)(void *ctx, int side);
    int (*gemm)(void *ctx, const qp_cublt_operand *A, const qp_cublt_operand *B, float *D, int M, int N, int K,
                float alpha, float beta);
    int (*bias_add)(void *ctx, float *Y, const float *b, int M, int N);
    int (*bias_grad)(void *ctx, float *db, const float *dY, int M, int N);
    /* max |x| over the finite values of x[0..n), to the host (waits); only
     * data parallelism needs it (the ranks' amaxes are all-reduced there) */
    int (*amax)(void *ctx, const float *x, int64_t n, float *out);
    /* the tiled block scales of the last block-format quantize of `side` */
    const uint8_t *(*block_scales_ptr)(void *ctx, int side);
} qpl_ops;

/* A use whose statistics wait on the device for qpl_flush. */
typedef struct {
    int64_t step;
    int log_qerr; /* the step logs qerr rows */
    int layer;
    qp_gemm_id g;
    qp_pass pass;
    qp_operand o;
    int update;   /* scaling update (first use, not frozen) */
    int64_t n;    /* elements */
    float gamax;  /* data parallel: the ranks' amax, else < 0 */
} qpl_pending;

typedef struct {
    qp_linear_cfg cfg;
    qp_linear *host;           /* scaling states and events */
    qp_linear_plan *plans;     /* per layer */
    float *tbuf[2], *ybuf[2];  /* per side: transposed/rotated copy, quantize-dequantized copy (max_elems) */
    uint16_t *bbuf[2];         /* per side: the GEMM operand (BF16, or FP8 codes) (max_elems) */
    int64_t step;
    int micro, log_qerr, frozen;
    int fp8_native;   /* per-tensor FP8 GEMMs run natively (qpl_set_device) */
    int block_native; /* MXFP8 and NVFP4 GEMMs run natively, block-scaled */
    const char *path; /* qp_cuda_linear_path's name */
    qpl_pending *pending;     /* max_pending records, n_pending waiting */
    qpl_stats *kept;          /* max_pending: where qpl_flush fetches them */
    int n_pending, max_pending;
    /* the dgrad pass's global amax of dY (data parallel), for the wgrad pass
     * when qp_linear_dy_reusable: the same tensor, so no second all-reduce */
    float dy_gamax;
    int dy_gamax_ok;
    char err[256];
} qpl_state;

/* How one GEMM runs (qpl_gemm_kind). */
enum { QPL_EMULATED = 0, QPL_FP8, QPL_MXFP8, QPL_NVFP4 };

typedef struct {
    qp_cublt_operand op;
    float scale_inv; /* per-tensor decode scale, folded into alpha */
} qpl_operand;

/* One kept use's statistics on the host: the scaling update and the qerr row,
 * as qp_linear.c's prepare() makes them. gamax >= 0: data parallel, the
 * ranks' max amax (this operand is a token slice): the update sees it and the
 * counts summed over ranks through the cfg's reduce_sum. */
static inline void qpl_apply_stats(qpl_state *l, const qpl_pending *p, const qpl_stats *h)
{
    qp_qstats qs;
    memset(&qs, 0, sizeof qs);
    qs.n = p->n;
    qs.n_nonfinite = (int64_t)h->n_nonfinite;
    qs.n_nonzero = (int64_t)h->n_nonzero;
    qs.n_sat = (int64_t)h->n_sat;
    qs.n_flushed = (int64_t)h->n_flushed;
    qs.amax = h->amax;
    qs.scale = h->scale;
    qs.scale_inv = h->scale_inv;
    if (p->update && p->gamax >= 0.0f) {
        qs.amax = p->gamax;
        qp_linear_reduce_counts(&l->cfg, &qs);
    }
    if (p->update) qp_scaling_update(qp_linear_scaling(l->host, p->layer, p->g, p->o), p->step, &qs);
    if (p->log_qerr && l->cfg.on_qerr) {
        const double xx = h->xx, ee = h->ee;
        const double rel = ee == 0.0 ? 0.0 : (xx == 0.0 ? INFINITY : sqrt(ee / xx));
        const double snr = ee == 0.0 ? INFINITY : (xx == 0.0 ? -INFINITY : 10.0 * log10(xx / ee));
        const double sat = qs.n ? (double)qs.n_sat / (double)qs.n : 0.0;
        const double zero = qs.n_nonzero ? (double)qs.n_flushed / (double)qs.n_nonzero : 0.0;
        qp_qerr_row row = {p->step, p->layer, qp_gemm_name(p->g), qp_operand_name(p->o), qp_pass_name(p->pass),
                           rel, snr, sat, zero, qs.amax, qs.scale};
        l->cfg.on_qerr(&row, l->cfg.user);
    }
}

/* Every kept use's statistics to the host in one copy, applied in the order
 * of the uses. 0, or -1 (the op wrote err). */
static inline int qpl_flush(qpl_state *l, const qpl_ops *op)
{
    if (l->n_pending == 0) return 0;
    const int n = l->n_pending;
    l->n_pending = 0;
    if (op->fetch_kept(op->ctx, n, l->kept)) return -1;
    for (int i = 0; i < n; i++) qpl_apply_stats(l, &l->pending[i], &l->kept[i]);
    return 0;
}

/* The statistics of the use just quantized on `side` wait for qpl_flush (a
 * full list is flushed first: applying earlier is what qp_linear does anyway).
 * Under delayed scaling the step's other uses of this tensor take the scale
 * this use took (qp_scaling_update's last_scale), noted now. */
static inline int qpl_keep_stats(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, qp_pass pass,
                                 qp_operand o, const qp_linear_use *u, int64_t n, int side, float gamax)
{
    if (l->n_pending == l->max_pending && qpl_flush(l, op)) return -1;
    if (op->keep(op->ctx, side, l->n_pending)) return -1;
    l->pending[l->n_pending++] = (qpl_pending){l->step, l->log_qerr, layer, g, pass, o, u->update, n, gamax};
    qp_scaling_state *st = qp_linear_scaling(l->host, layer, g, o);
    if (u->update && st->cfg.mode == QP_SCALING_DELAYED && qp_formats[st->fmt].tensor_scale)
        st->last_scale = u->opts.scale;
    return 0;
}

/* Quantize one GEMM operand (rows x cols, contraction along cols; src stored
 * cols x rows when src_trans) for `pass`: qp_linear.c's prepare(). The
 * operand handed to the GEMM is always rows x cols, K contiguous (the TN form). */
static inline int qpl_prepare(qpl_state *l, const qpl_ops *op, int layer, qp_gemm_id g, qp_pass pass, qp_operand o,
                              int side, const float *src, int src_trans, int rows, int cols, int native,
                              qpl_operand *out) /* native: a QPL_* kind */
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
    const int rht = pass == QP_PASS_WGRAD ? qp_linear_rht_n(plan) : 0;
    const float *in = src;
    int trans = src_trans;
    if (trans && (t->block_cols > 1 || rht)) {
        if (op->transpose(x, src, l->tbuf[side], cols, rows)) return -1;
        in = l->tbuf[side];
        trans = 0;
    }
    if (rht) {
        if (cols % rht) {
            snprintf(l->err, sizeof l->err,
                     "the %d-point Hadamard transform needs a contraction of a multiple of %d, not %d (layer %d, %s)",
                     rht, rht, cols, layer, qp_gemm_name(g));
            return -1;
        }
        if (in != l->tbuf[side] && op->copy(x, l->tbuf[side], in, (int64_t)rows * cols)) return -1;
        if (op->rht(x, l->tbuf[side], rows, cols, rht, qp_linear_rht_seed(l->cfg.seed))) return -1;
        in = l->tbuf[side];
    }
    qp_scaling_state *st = qp_linear_scaling(l->host, layer, g, o);
    qp_linear_use u;
    qp_linear_use_init(&u, &l->cfg, plan, st, l->step, l->micro, l->frozen, layer, g, pass, o, trans, rows, cols);
    const int update = u.update;
    const int qrows = trans ? cols : rows, qcols = trans ? rows : cols;
    const int64_t n = (int64_t)rows * cols;
    const int want_stats = update || (l->log_qerr && l->cfg.on_qerr);
    /* Data parallel (qp_linear.h): the tensor scale of current scaling and the
     * scaling update see every rank's amax. */
    float gamax = -1.0f;
    if (u.reduce_amax) {
        float a = 0.0f;
        if (!op->amax) {
            snprintf(l->err, sizeof l->err, "data parallelism needs the device amax operation");
            return -1;
        }
        if (pass == QP_PASS_WGRAD && o == QP_OPND_DY && l->dy_gamax_ok) {
            a = l->dy_gamax; /* dgrad's, of this same dY (qp_linear_dy_reusable) */
        } else {
            if (op->amax(x, in, n, &a)) return -1;
            l->cfg.reduce_max(&a, 1, l->cfg.reduce_user);
        }
        if (pass == QP_PASS_DGRAD && o == QP_OPND_DY) l->dy_gamax = a, l->dy_gamax_ok = qp_linear_dy_reusable(plan);
        if (update) gamax = a;
        qp_linear_use_global_amax(&u, fmt, a);
    }
    if (native == QPL_MXFP8 || native == QPL_NVFP4) {
        /* block formats are quantized along K (transposed above): codes and
         * tiled block scales straight to the GEMM, NVFP4's tensor decode scale
         * as a device pointer (folded into alpha on the device). Statistics
         * come from a quantize-dequantize of the same operand (same options,
         * so the same values) reduced as on the emulated path. */
        if (op->quantize(x, fmt, in, rows, cols, &u.opts, (uint8_t *)l->bbuf[side], side)) return -1;
        out->op = (qp_cublt_operand){native == QPL_MXFP8 ? QP_CUBLT_MXFP8 : QP_CUBLT_NVFP4, l->bbuf[side],
                                     native == QPL_NVFP4 ? op->scale_inv_ptr(x, side) : NULL,
                                     op->block_scales_ptr(x, side), 0};
        out->scale_inv = 1.0f;
        if (!want_stats) return 0;
        if (op->qdq(x, fmt, in, l->ybuf[side], NULL, rows, cols, &u.opts, side) ||
            op->reduce(x, in, l->ybuf[side], NULL, 0, n, side))
            return -1;
        return qpl_keep_stats(l, op, layer, g, pass, o, &u, n, side, gamax);
    }
    if (native == QPL_FP8) {
        /* FP8 codes in stored order (the CPU's SR words), transposed as bytes
         * when stored transposed; the decode scale reaches the GEMM as a
         * device pointer */
        uint8_t *codes = trans ? (uint8_t *)l->ybuf[side] : (uint8_t *)l->bbuf[side];
        if (op->quantize(x, fmt, in, qrows, qcols, &u.opts, codes, side)) return -1;
        if (want_stats && op->reduce(x, in, NULL, codes, fmt == QP_FMT_FP8_E5M2, n, side)) return -1;
        if (trans && op->transpose_u8(x, codes, (uint8_t *)l->bbuf[side], qrows, qcols)) return -1;
        out->op = (qp_cublt_operand){fmt == QP_FMT_FP8_E5M2 ? QP_CUBLT_E5M2 : QP_CUBLT_E4M3, l->bbuf[side],
                                     op->scale_inv_ptr(x, side), NULL, 0};
        out->scale_inv = 1.0f;
        return want_stats ? qpl_keep_stats(l, op, layer, g, pass, o, &u, n, side, gamax) : 0;
    }
    /* FP32 copy always (statistics, transposition); BF16 straight from the
     * quantizer when no transpose follows, else a per-tensor format quantized
     * in stored order (the CPU's SR words) and transposed.
     * An FP32-scaled FP8 block format (its row says unscaled_exact = 0: the
     * scales along K cannot go into alpha and code * scale is not a BF16
     * value) runs its fully scaled values through an FP32 GEMM
     * (CUBLAS_COMPUTE_32F), and so does its partner operand (unscaled, its
     * tensor scale in alpha; cuBLASLt multiplies like with like): each value
     * is code * scale rounded once to FP32, so the product agrees with the
     * CPU's K-chunked emulation (qp_gemm_run_kscaled) to FP32 rounding, not
     * bit for bit. Hopper's native block-scaled FP8 GEMM (cuBLAS 12.9+) is
     * not wired here. Block formats are never stored transposed here. */
    const qp_operand partner = pass == QP_PASS_FPROP   ? (o == QP_OPND_X ? QP_OPND_W : QP_OPND_X)
                               : pass == QP_PASS_DGRAD ? (o == QP_OPND_DY ? QP_OPND_W : QP_OPND_DY)
                                                       : (o == QP_OPND_DY ? QP_OPND_X : QP_OPND_DY);
    const int f32_gemm = !t->unscaled_exact || !qp_formats[plan->fmt[partner]].unscaled_exact;
    qp_qopts qo = u.opts;
    if (!t->unscaled_exact) qo.unscaled = false;
    if (op->qdq(x, fmt, in, l->ybuf[side], trans || f32_gemm ? NULL : l->bbuf[side], qrows, qcols, &qo, side))
        return -1;
    if (trans && (op->transpose(x, l->ybuf[side], l->tbuf[side], qrows, qcols) ||
                  (!f32_gemm && op->to_bf16(x, l->tbuf[side], l->bbuf[side], n))))
        return -1;
    if (want_stats && (op->reduce(x, in, l->ybuf[side], NULL, 0, n, side) ||
                       qpl_keep_stats(l, op, layer, g, pass, o, &u, n, side, gamax)))
        return -1;
    /* the tensor decode scale stays on the device: folded into alpha there */
    const float *scale_inv = t->tensor_scale ? op->scale_inv_ptr(x, side) : NULL;
    out->scale_inv = 1.0f;
    if (f32_gemm) {
        out->op = (qp_cublt_operand){QP_CUBLT_F32, trans ? l->tbuf[side] : l->ybuf[side],
                                     t->unscaled_exact ? scale_inv : NULL, NULL, 0};
        return 0;
    }
    out->op = (qp_cublt_operand){QP_CUBLT_BF16, l->bbuf[side], scale_inv, NULL, fmt != QP_FMT_BF16};
    return 0;
}

/* The GPU the dispatch runs on: compute capability cc (e.g. 90, 100) and
 * QP_CUDA_EMULATE (emulate != 0: every quantized GEMM emulated). Sets which
 * GEMMs run natively and the path's name (qp_cuda_linear_path):
 *   "fp8-native"    recipes whose quantized operands are all per-tensor FP8,
 *                   cc >= 8.9;
 *   "mxfp8-native"  MXFP8 (E4M3 elements) operands, cc >= 10.0;
 *   "nvfp4-native"  NVFP4 (1x16 or 16x16) operands, cc >= 10.0;
 *   "emulated-bf16" every other quantized recipe (MXFP4, MXFP8-E5M2, ...);
 *   "bf16", "fp32"  the unquantized recipes.
 * A native recipe's GEMMs of other formats or shapes (qpl_gemm_kind) still run
 * emulated; the name is that of its quantized GEMMs where they can. */
static inline void qpl_set_device(qpl_state *l, int cc, int emulate)
{
    int any_bf16 = 0, any_emul = 0, only_fp8 = 1, any_mx = 0, any_nv = 0;
    for (int layer = 0; layer < l->cfg.n_layers; layer++) {
        for (int o = 0; o < QP_OPND_COUNT; o++) {
            const qp_fmt f = l->plans[layer].fmt[o];
            if (f == QP_FMT_BF16) any_bf16 = 1;
            else if (f != QP_FMT_FP32) any_emul = 1;
            if (f != QP_FMT_FP32 && f != QP_FMT_BF16 && f != QP_FMT_FP8_E4M3 && f != QP_FMT_FP8_E5M2) only_fp8 = 0;
            any_mx |= f == QP_FMT_MXFP8;
            any_nv |= f == QP_FMT_NVFP4 || f == QP_FMT_NVFP4_2D;
        }
        if (l->plans[layer].rht_wgrad) only_fp8 = 0;
    }
    l->fp8_native = any_emul && only_fp8 && !emulate && cc >= 89;
    l->block_native = any_emul && !emulate && cc >= 100;
    l->path = any_emul ? "emulated-bf16" : any_bf16 ? "bf16" : "fp32";
    if (l->fp8_native) l->path = "fp8-native";
    else if (l->block_native && any_nv) l->path = "nvfp4-native";
    else if (l->block_native && any_mx) l->path = "mxfp8-native";
}

/* How a GEMM (M x N x K) of operands a, b runs: QPL_FP8 when both are
 * per-tensor FP8 and the GPU runs FP8; QPL_MXFP8 when both are MXFP8 (E4M3)
 * and QPL_NVFP4 when both are NVFP4 (1x16 or 16x16) on a block-scaling GPU;
 * else QPL_EMULATED. cuBLASLt's FP8 kernels want every dimension a multiple
 * of 16, its block-scaled ones K a multiple of 32 (and M, N of 16 here):
 * other shapes are emulated. */
static inline int qpl_gemm_kind(const qpl_state *l, int layer, qp_gemm_id g, qp_operand a, qp_operand b, int M,
                                int N, int K)
{
    if (g == QP_GEMM_HEAD || layer < 0 || layer >= l->cfg.n_layers) return QPL_EMULATED;
    if (M % 16 || N % 16 || K % 16) return QPL_EMULATED;
    const qp_fmt fa = l->plans[layer].fmt[a], fb = l->plans[layer].fmt[b];
    if (l->fp8_native && (fa == QP_FMT_FP8_E4M3 || fa == QP_FMT_FP8_E5M2) &&
        (fb == QP_FMT_FP8_E4M3 || fb == QP_FMT_FP8_E5M2))
        return QPL_FP8;
    if (!l->block_native || K % 32) return QPL_EMULATED;
    if (fa == QP_FMT_MXFP8 && fb == QP_FMT_MXFP8) return QPL_MXFP8;
    if ((fa == QP_FMT_NVFP4 || fa == QP_FMT_NVFP4_2D) && (fb == QP_FMT_NVFP4 || fb == QP_FMT_NVFP4_2D))
        return QPL_NVFP4;
    return QPL_EMULATED;
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
    const int nat = qpl_gemm_kind(l, layer, g, QP_OPND_X, QP_OPND_W, M, OC, IC);
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
    l->dy_gamax_ok = 0;
    /* dgrad: dX[M,IC] += dY[M,OC] (W^T)[IC,OC]^T; W is stored OC x IC */
    int nat = qpl_gemm_kind(l, layer, g, QP_OPND_DY, QP_OPND_W, M, IC, OC);
    if (qpl_prepare(l, op, layer, g, QP_PASS_DGRAD, QP_OPND_DY, 0, dY, 0, M, OC, nat, &a) ||
        qpl_prepare(l, op, layer, g, QP_PASS_DGRAD, QP_OPND_W, 1, W, 1, IC, OC, nat, &b) ||
        qpl_run(op, &a, &b, dX, M, IC, OC, 1))
        return -1;
    /* wgrad: dW[OC,IC] += (dY^T)[OC,M] (X^T)[IC,M]^T */
    nat = qpl_gemm_kind(l, layer, g, QP_OPND_DY, QP_OPND_X, OC, IC, M);
    if (qpl_prepare(l, op, layer, g, QP_PASS_WGRAD, QP_OPND_DY, 0, dY, 1, OC, M, nat, &a) ||
        qpl_prepare(l, op, layer, g, QP_PASS_WGRAD, QP_OPND_X, 1, X, 1, IC, M, nat, &b) ||
        qpl_run(op, &a, &b, dW, OC, IC, M, 1))
        return -1;
    return db ? op->bias_grad(op->ctx, db, dY, M, OC) : 0;
}

#endif
