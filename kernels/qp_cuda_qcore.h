/* qp_cuda_qcore.h — how the quantization kernels cut a tensor into thread
 * jobs, and the per-thread block and tile assembly built on quant/qp_core.h
 * (every element, scale and random rule is qp_core.h's, compiled here by nvcc
 * for the device; nothing of it is restated). The same source compiles with
 * gcc: tests/kernels/test_qcore.c walks tensors job by job through these
 * functions and compares with qp_quantize / qp_qdq / qp_rht, which verifies
 * the kernels' work split without a GPU.
 *
 * Indexing (as quant/): a tensor is rows x cols row-major; element (r, c) has
 * global index g = sr_offset + r*sr_stride + c (qp_qopts; stride 0 meaning
 * cols), and stochastic rounding of it uses qp_sr_word(seed, stream, g, bits):
 * 8 or 16 bits of word g/4 or g/2 of the stream. Padding elements of a partial block are never read, count
 * nowhere and are stored as code 0. */
#ifndef QP_CUDA_QCORE_H
#define QP_CUDA_QCORE_H

#include "qp_core.h"
#include "qp_quant.h"

/* ---- the plan of one quantization ------------------------------------------ */

/* The tensor scale as quant/'s driver picks it: a given scale (> 0) wins,
 * else current scaling from amax (qp_scale_rule_from_amax of the row's
 * tensor_range); formats without one use 1. */
QP_HD qp_tplan qc_make_plan(const qp_format_traits *f, float given_scale, float amax, int unscaled, int sr,
                            uint64_t seed, uint64_t stream)
{
    qp_tplan p;
    p.scale = 1.0f;
    p.scale_inv = 1.0f;
    if (f->tensor_scale) {
        p.scale = given_scale > 0.0f ? given_scale : qp_scale_rule_from_amax(f->tensor_range, amax, 0);
        p.scale_inv = 1.0f / p.scale;
    }
    p.out_mul = unscaled ? 1.0f : p.scale_inv;
    /* TE's Four Over Six decodes its errors with the tensor amax: under a
     * given scale S, the amax S maps onto the row's range (qp_plan_scale's) */
    p.amax = f->tensor_scale && given_scale > 0.0f ? f->tensor_range / given_scale : amax;
    p.sr = sr;
    p.seed = seed;
    p.stream = stream;
    p.sr_offset = 0;
    p.sr_stride = 0;
    return p;
}

/* qp_qopts.sr_offset / sr_row_stride into the plan (as quant/'s driver). */
QP_HD void qc_plan_sr_map(qp_tplan *p, int64_t sr_offset, int64_t sr_row_stride)
{
    p->sr_offset = (uint64_t)sr_offset;
    p->sr_stride = sr_row_stride > 0 ? (uint64_t)sr_row_stride : 0;
}

/* The SR global index of element (r, c) of a tensor with cols columns. */
QP_HD uint64_t qc_sr_gidx(const qp_tplan *p, int64_t cols, int64_t r, int64_t c)
{
    return p->sr_offset + (uint64_t)r * (p->sr_stride ? p->sr_stride : (uint64_t)cols) + (uint64_t)c;
}

QP_HD void qc_counts_zero(qp_ecounts *c) { c->n_nonfinite = c->n_nonzero = c->n_sat = c->n_flushed = 0; }

/* ---- blocks ------------------------------------------------------------------ */

/* Finite amax and a non-finite flag of x[0..n). The loops of this file run
 * to a bound that is a compile-time constant in the kernels (npad, the block
 * size) and skip i >= n, so that nvcc unrolls them and keeps the per-thread
 * arrays in registers; x[i] is never read for i >= n. */
QP_HD void qc_block_amax_pad(const float *x, int n, int npad, float *amax, int *nonfinite)
{
    float m = 0.0f;
    int nf = 0;
    QP_UNROLL
    for (int i = 0; i < npad; i++) {
        if (i >= n) break;
        const float a = qp_fabsf(x[i]);
        if (!qp_isfinitef(a)) nf = 1;
        else if (a > m) m = a;
    }
    *amax = m;
    *nonfinite = nf;
}

QP_HD void qc_block_amax(const float *x, int n, float *amax, int *nonfinite) { qc_block_amax_pad(x, n, n, amax, nonfinite); }

/* The block scale of a block of n elements with finite amax amax_b; x is the
 * block (Four Over Six reads it). MX marks blocks holding NaN/Inf, and TE's
 * Four Over Six reads the flag; the other rules ignore non-finite values.
 * (The device's plan takes the finite amax: TE's NaN/Inf tensor amax, which
 * quant/'s -te rows reproduce, is the CPU's.) */
QP_HD qp_bscale qc_block_scale(const qp_format_traits *f, const qp_tplan *p, float amax_b, int nonfinite,
                               const float *x, int n)
{
    return qp_block_rule(f, p, amax_b, (f->block_scale == QP_SCALE_E8M0 || qp_rule_is_4o6_te(f->rule)) && nonfinite,
                         x, n);
}

/* Store a block's scale at index idx of the packed scales (scale_bytes each). */
QP_HD void qc_store_scale(const qp_format_traits *f, uint8_t *scales, int64_t idx, const qp_bscale *s)
{
    switch (f->block_scale) {
    case QP_SCALE_E8M0:
    case QP_SCALE_UE4M3: scales[idx] = (uint8_t)s->code; return;
    case QP_SCALE_F32:
        scales[4 * idx] = (uint8_t)s->code, scales[4 * idx + 1] = (uint8_t)(s->code >> 8);
        scales[4 * idx + 2] = (uint8_t)(s->code >> 16), scales[4 * idx + 3] = (uint8_t)(s->code >> 24);
        return;
    case QP_SCALE_NONE:
    case QP_SCALE_TENSOR:
    case QP_SCALE_COUNT: return;
    }
}

/* Encode n elements x[0..n) whose global SR indices are gidx0.. (one row of a
 * block, or part of a per-tensor row), as quant/'s encode loop. bs is the
 * block's scale, or NULL for per-tensor formats (p->scale). codes (may be
 * NULL) receives npad >= n elements, packed from byte 0 (codes of the padding
 * are 0; for 4-bit elements codes must start at an even element); y (may be
 * NULL) receives the n decoded values. */
QP_HD void qc_encode_block(const qp_format_traits *f, const qp_tplan *p, const float *x, int n, int npad,
                           const qp_bscale *bs, uint64_t gidx0, uint8_t *codes, float *y, qp_ecounts *cnt)
{
    qp_rng_run g;
    qp_rng_run_init(&g, p->seed, p->stream);
    const int sr_bits = qp_sr_bits(f->elem);
    if (codes) {
        const int nbytes = (npad * f->elem_bits + 7) / 8;
        QP_UNROLL
        for (int i = 0; i < nbytes; i++) codes[i] = 0;
    }
    QP_UNROLL
    for (int i = 0; i < npad; i++) {
        if (i >= n) break;
        const uint32_t r = p->sr ? qp_rng_run_sr_word(&g, gidx0 + (uint64_t)i, sr_bits) : 0;
        float yv;
        const uint32_t code = qp_quantize_elem(f, p, bs, x[i], r, &yv, cnt);
        if (codes) qp_store_code(f->elem, codes, i, code);
        if (y) y[i] = yv;
    }
}

/* One 1D block (n <= block_cols real elements of a row): block amax, scale
 * rule, encode. codes receives the whole block (block_cols elements, padding
 * 0); *scale the block's scale. Returns the block's finite amax. */
QP_HD float qc_quantize_block(const qp_format_traits *f, const qp_tplan *p, const float *x, int n, uint64_t gidx0,
                              uint8_t *codes, qp_bscale *scale, float *y, qp_ecounts *cnt)
{
    float amax;
    int nf;
    qc_block_amax_pad(x, n, f->block_cols, &amax, &nf);
    const qp_bscale bs = qc_block_scale(f, p, amax, nf, x, n);
    if (scale) *scale = bs;
    qc_encode_block(f, p, x, n, f->block_cols, &bs, gidx0, codes, y, cnt);
    return amax;
}

/* One 2D tile (NVFP4-2D 16x16, FP8 128x128): nr x nc real elements at x with
 * row stride ld (elements); row r of the tile has SR index gidx0 + r*g_ld
 * (g_ld: the SR row stride, the tensor's cols by default), codes at codes +
 * r*code_ld, y at y + r*ld. */
QP_HD float qc_quantize_tile(const qp_format_traits *f, const qp_tplan *p, const float *x, int64_t ld, int nr, int nc,
                             uint64_t gidx0, uint64_t g_ld, uint8_t *codes, int64_t code_ld, qp_bscale *scale,
                             float *y, qp_ecounts *cnt)
{
    float amax = 0.0f;
    for (int r = 0; r < nr; r++) {
        float a;
        int nf;
        qc_block_amax(x + r * ld, nc, &a, &nf);
        if (a > amax) amax = a;
    }
    const qp_bscale bs = qc_block_scale(f, p, amax, 0, NULL, 0);
    if (scale) *scale = bs;
    for (int r = 0; r < nr; r++)
        qc_encode_block(f, p, x + r * ld, nc, f->block_cols, &bs, gidx0 + (uint64_t)r * g_ld,
                        codes ? codes + r * code_ld : NULL, y ? y + r * ld : NULL, cnt);
    return amax;
}

/* ---- work split: which elements, codes and scale one thread owns ------- */

/* What one kernel thread (t, its global index) works on: m real elements at
 * x + x_off, all in row `row` from column `col` (the SR global index of the
 * first is qc_sr_gidx(p, cols, row, col)), the codes from byte code_off, the
 * block scale at scale_idx (-1: none). The kernels and test_qcore's driver
 * both walk tensors through these functions. */
typedef struct {
    int64_t x_off, code_off, scale_idx;
    int64_t row, col;
    int m;
    int lane; /* 2D tiles: the row within the tile */
} qc_job;

/* Per-tensor formats: thread t owns chunk t % cpr of row t / cpr, cpr =
 * ceil(cols / 16) chunks of 16 elements per row (a chunk never crosses a row,
 * so a row stride of SR indices other than cols splits nothing; with cols a
 * multiple of 16 this is the flat tensor in chunks of 16). */
#define QC_TENSOR_CHUNK 16
QP_HD int64_t qc_tensor_jobs(int64_t rows, int64_t cols) { return rows * ((cols + QC_TENSOR_CHUNK - 1) / QC_TENSOR_CHUNK); }

QP_HD int qc_tensor_job(const qp_format_traits *f, int64_t rows, int64_t cols, int64_t t, qc_job *j)
{
    if (cols <= 0 || t >= qc_tensor_jobs(rows, cols)) return 0;
    const int64_t cpr = (cols + QC_TENSOR_CHUNK - 1) / QC_TENSOR_CHUNK;
    const int64_t r = t / cpr, c0 = (t % cpr) * QC_TENSOR_CHUNK;
    j->row = r;
    j->col = c0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < QC_TENSOR_CHUNK ? cols - c0 : QC_TENSOR_CHUNK);
    j->code_off = j->x_off * (f->elem_bits / 8);
    j->scale_idx = -1;
    j->lane = 0;
    return 1;
}

/* 1D block formats: thread t owns block t % scale_cols of row t / scale_cols. */
QP_HD int qc_block_job(const qp_format_traits *f, int64_t rows, int64_t cols, int64_t row_bytes, int64_t scale_cols,
                       int64_t t, qc_job *j)
{
    if (t >= rows * scale_cols) return 0;
    const int64_t r = t / scale_cols, b = t % scale_cols, c0 = b * f->block_cols;
    j->row = r;
    j->col = c0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < f->block_cols ? cols - c0 : f->block_cols);
    j->code_off = r * row_bytes + c0 * f->elem_bits / 8;
    j->scale_idx = t;
    j->lane = 0;
    return 1;
}

/* 2D tiles of block_rows x block_cols: threads side*k .. side*k + side-1
 * (side = block_rows) own tile k (row-major over scale_rows x scale_cols),
 * one tile row each; returns 0 for a lane past the last row or tile (it still
 * takes part in the tile's amax reduction, with amax 0). */
QP_HD int qc_tile_job(const qp_format_traits *f, int64_t rows, int64_t cols, int64_t row_bytes, int64_t scale_rows,
                      int64_t scale_cols, int64_t t, qc_job *j)
{
    const int side = f->block_rows;
    const int64_t tile = t / side, tr = tile / scale_cols, tc = tile % scale_cols;
    const int lane = (int)(t % side);
    const int64_t r = tr * side + lane, c0 = tc * f->block_cols;
    j->lane = lane;
    j->scale_idx = tile;
    j->row = r;
    j->col = c0;
    if (tile >= scale_rows * scale_cols || r >= rows) return 0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < f->block_cols ? cols - c0 : f->block_cols);
    j->code_off = r * row_bytes + c0 * f->elem_bits / 8;
    return 1;
}

#endif
