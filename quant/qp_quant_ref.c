/* qp_quant_ref.c — the scalar reference element loops: one element at a time
 * through qp_core.h's rules. Every vector path must match these bits. */
#include <math.h>
#include <string.h>

#include "qp_quant_internal.h"
#include "qp_rng.h"

static float ref_amax(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        if (isfinite(a) && a > m) m = a;
    }
    return m;
}

static void ref_block_amax(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite)
{
    const int64_t nb = (cols + bc - 1) / bc;
    for (int64_t b = 0; b < nb; b++) {
        const int64_t c0 = b * bc, c1 = c0 + bc < cols ? c0 + bc : cols;
        float m = 0.0f;
        uint8_t nf = 0;
        for (int64_t c = c0; c < c1; c++) {
            const float a = fabsf(x[c]);
            if (!isfinite(a)) nf = 1;
            else if (a > m) m = a;
        }
        amax[b] = m;
        nonfinite[b] = nf;
    }
}

static void ref_encode_row(const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                           uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    qp_ecounts ec = {0, 0, 0, 0};
    if (codes) memset(codes, 0, (size_t)qp_row_bytes(t->fmt, cols)); /* nibbles are OR-ed in; padding stays 0 */
    for (int64_t c = 0; c < cols; c++) {
        qp_bscale s, *sp = NULL;
        if (bs) {
            const int64_t b = c / bc;
            s.enc = bs->enc[b];
            s.dec = bs->dec[b];
            s.flag = bs->flag[b];
            sp = &s;
        }
        const uint32_t r = p->sr ? qp_sr_word(p->seed, p->stream, gidx0 + (uint64_t)c, qp_sr_bits(t->elem)) : 0;
        float yv;
        const uint32_t code = qp_quantize_elem(t, &tp, sp, x[c], r, &yv, &ec);
        if (codes) qp_store_code(t->elem, codes, c, code);
        if (y && p->y_bits) ((uint16_t *)(void *)y)[c] = (uint16_t)(qp_f32_bits(yv) >> 16);
        else if (y) y[c] = yv;
    }
    cnt->n_nonfinite += ec.n_nonfinite;
    cnt->n_nonzero += ec.n_nonzero;
    cnt->n_sat += ec.n_sat;
    cnt->n_flushed += ec.n_flushed;
    if (p->row_amax) {
        const float m = ref_amax(x, cols);
        if (m > cnt->amax) cnt->amax = m;
    }
}

static void ref_col_absmax(const float *x, int64_t rows, int64_t cols, float *colmax)
{
    for (int64_t c = 0; c < cols; c++) {
        uint32_t m = 0;
        for (int64_t r = 0; r < rows; r++) {
            const uint32_t a = qp_f32_bits(x[r * cols + c]) & 0x7FFFFFFFu;
            if (a > m) m = a;
        }
        colmax[c] = qp_bits_f32(m);
    }
}

static void ref_te_errors8(const float *x, int64_t stride, const qp_bscale s[8], float amax, float denom, int mse,
                           float err[8])
{
    for (int j = 0; j < 8; j++) err[j] = qp_4o6_te_row_error(x + j * stride, 16, s[j], amax, denom, mse);
}

/* no column layout: qp_qdq_bf16_cols goes through a transposed copy */
const qp_kernels qp_kernels_ref = {.name = "scalar",
                                   .amax = ref_amax,
                                   .block_amax = ref_block_amax,
                                   .col_absmax = ref_col_absmax,
                                   .block_scales = qp_block_scales_ref,
                                   .encode_row = ref_encode_row,
                                   .band_amax = NULL,
                                   .encode_band = NULL,
                                   .te_errors8 = ref_te_errors8};
