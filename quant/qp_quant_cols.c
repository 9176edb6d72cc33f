/* qp_quant_cols.c — quantizing a tensor's transpose from its stored layout
 * (see qp_quant.h, qp_qdq_bf16_cols).
 *
 * A weight-gradient GEMM contracts over tokens, so its operands are blocked
 * down the columns of the activations and gradients as they are stored.
 * Transposing them first (and rotating them by the Hadamard transform)
 * costs a pass that writes and rereads the whole tensor through 16 x 16
 * register transposes. Here a 16 x 16 tile of the stored tensor is sixteen
 * blocks at once, one per lane: the rotation is butterflies between the
 * tile's registers, a block's amax a vertical maximum, each register is
 * encoded with a scale per lane, and the values go back in the stored
 * layout, which the GEMM reads transposed. The first pass (the rotated
 * tensor's amax, for the tensor scale) reads the tensor without writing. */
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_quant_internal.h"

int qp_qdq_cols_direct(qp_fmt fmt, int64_t rows, int64_t cols, int rht_n, const qp_qopts *o)
{
    const qp_kernels *k = qp_active_kernels();
    if (!qp_fmt_valid(fmt) || !k->encode_band || !o || !o->unscaled) return 0;
    const qp_format_traits *t = &qp_formats[fmt];
    const int64_t stride = o->sr_row_stride > 0 ? o->sr_row_stride : rows;
    if (rows <= 0 || cols <= 0 || cols % 16 || t->block_rows != 1 || t->row_scaled) return 0;
    switch (t->rule) {
    case QP_RULE_NVFP4:
        return t->elem == QP_ELEM_E2M1 && t->block_cols == 16 && rows % 16 == 0 && (rht_n == 0 || rht_n == 16) &&
               (!o->stochastic || (o->sr_offset % 4 == 0 && stride % 4 == 0));
    case QP_RULE_MX_FLOOR:
    case QP_RULE_MX_RCEIL: /* bands of QK_MX rows, round to nearest, not rotated */
        return t->block_cols == QK_MX && rows % QK_MX == 0 && rht_n == 0 && !o->stochastic &&
               (t->elem == QP_ELEM_E4M3 || t->elem == QP_ELEM_E5M2 || t->elem == QP_ELEM_E2M1 ||
                t->elem == QP_ELEM_E2M3 || t->elem == QP_ELEM_E3M2);
    case QP_RULE_NONE:
    case QP_RULE_TENSOR:
    case QP_RULE_NVFP4_4O6:
    case QP_RULE_NVFP4_4O6_TE:
    case QP_RULE_NVFP4_4O6_TE_MSE:
    case QP_RULE_F32_BLOCK:
    case QP_RULE_POW2_BLOCK:
    case QP_RULE_COUNT: return 0;
    }
    return 0;
}

/* Through a transposed copy: what the direct path must equal, bit for bit,
 * and what runs where it does not apply (or the tensor holds NaN or Inf).
 * y: BF16 bits (bits) or floats. */
static int via_transpose(qp_fmt fmt, const float *x, void *y, int bits, int64_t rows, int64_t cols, int rht_n,
                         uint64_t rht_seed, const qp_qopts *o, qp_qstats *st)
{
    const int64_t n = rows * cols;
    float *t = qp_scratch(3, (size_t)n * sizeof *t + 1);
    void *u = qp_scratch(4, (size_t)n * (bits ? sizeof(uint16_t) : sizeof(float)) + 1);
    if (!t || !u) abort(); /* out of memory inside a quantizer: nothing sensible to return */
    if (rht_n) {
        if (qp_transpose_rht(x, t, rows, cols, rht_n, rht_seed)) return -1;
    } else {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) t[c * rows + r] = x[r * cols + c];
    }
    if (bits) {
        uint16_t *u16 = u, *y16 = y;
        if (qp_qdq_bf16(fmt, t, u16, cols, rows, o, st)) return -1;
        for (int64_t c = 0; c < cols; c++)
            for (int64_t r = 0; r < rows; r++) y16[r * cols + c] = u16[c * rows + r];
    } else {
        float *uf = u, *yf = y;
        if (qp_qdq(fmt, t, uf, cols, rows, o, st)) return -1;
        for (int64_t c = 0; c < cols; c++)
            for (int64_t r = 0; r < rows; r++) yf[r * cols + c] = uf[c * rows + r];
    }
    return 0;
}

static int qdq_cols(qp_fmt fmt, const float *x, void *y, int bits, int64_t rows, int64_t cols, int rht_n,
                    uint64_t rht_seed, const qp_qopts *o, qp_qstats *st)
{
    if (!qp_fmt_valid(fmt) || !qp_formats[fmt].unscaled_exact || !o || !o->unscaled || rows < 0 || cols < 0 ||
        (rht_n && (!qp_rht_size_ok(rht_n) || rows % rht_n)))
        return -1;
    if (!qp_qdq_cols_direct(fmt, rows, cols, rht_n, o))
        return via_transpose(fmt, x, y, bits, rows, cols, rht_n, rht_seed, o, st);
    const qp_kernels *k = qp_active_kernels();
    float post_buf[16];
    const float *post = NULL;
    if (rht_n) {
        uint32_t w[4];
        qp_rht_sign_words(rht_seed, w);
        const float norm = qp_rht_norm(16);
        for (int j = 0; j < 16; j++) post_buf[j] = qp_rht_sign_neg(w, j) ? -norm : norm;
        post = post_buf;
    }
    /* a band: as many stored rows as a block (pass 1 reads 16 at a time) */
    const int64_t n = rows * cols, band = qp_formats[fmt].block_cols, nbands = rows / band;
    const int parallel = n >= qp_parallel_min() && nbands > 1;
    (void)parallel; /* without OpenMP */
    /* pass 1, for a tensor scale (NVFP4): the (rotated) tensor's amax; NaN
       or Inf anywhere takes the transposed path. MX's scales are the
       blocks' own, and its amax theirs (qp_finish_stats): pass 2 finds NaN
       and Inf as it reads. */
    uint32_t most = 0;
    if (qp_formats[fmt].tensor_scale) {
#if QP_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(max : most) if (parallel)
#endif
        for (int64_t b = 0; b < rows / 16; b++) {
            const uint32_t m = k->band_amax(x + b * 16 * cols, cols, post);
            if (m > most) most = m;
        }
        if (most >= 0x7F800000u) return via_transpose(fmt, x, y, bits, rows, cols, rht_n, rht_seed, o, st);
    }
    const float amax = qp_bits_f32(most);
    qp_plan p = qp_plan_from_opts(&qp_formats[fmt], o, rows, bits != 0);
    qp_plan_scale(&p, o, amax);
    qp_chunk_result *res = qp_scratch(0, (size_t)nbands * sizeof *res + 1);
    if (!res) abort();
    memset(res, 0, (size_t)nbands * sizeof *res);
    const size_t esz = bits ? sizeof(uint16_t) : sizeof(float);
    /* pass 2: each band's blocks, values in x's layout; band b holds elements band*b.. of every transposed row */
    uint32_t seen = 0;
#if QP_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(max : seen) if (parallel)
#endif
    for (int64_t b = 0; b < nbands; b++) {
        const uint32_t m =
            k->encode_band(&p, x + b * band * cols, cols, post, (char *)y + (size_t)(b * band * cols) * esz,
                           p.sr_offset + (uint64_t)(b * band), &res[b].cnt, &res[b].bst);
        if (m > seen) seen = m;
    }
    /* NaN or Inf (MX: first seen here): y written again, whole, the other way */
    if (seen >= 0x7F800000u) return via_transpose(fmt, x, y, bits, rows, cols, rht_n, rht_seed, o, st);
    if (st) qp_finish_stats(&p, res, nbands, n, amax, st);
    return 0;
}

int qp_qdq_bf16_cols(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, int rht_n,
                     uint64_t rht_seed, const qp_qopts *o, qp_qstats *st)
{
    return qdq_cols(fmt, x, y, 1, rows, cols, rht_n, rht_seed, o, st);
}

int qp_qdq_cols(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, int rht_n, uint64_t rht_seed,
                const qp_qopts *o, qp_qstats *st)
{
    return qdq_cols(fmt, x, y, 0, rows, cols, rht_n, rht_seed, o, st);
}
