/* qp_quant_ref.c — the scalar reference element loops: one element at a time
 * through the codecs of qp_format.c. Every vector path must match these bits. */
#include <math.h>
#include <string.h>

#include "qp_quant_internal.h"
#include "qp_rng.h"

uint32_t qp_encode_elem(qp_elem e, float v, int sr, uint32_t r)
{
    switch (e) {
    case QP_ELEM_F32: return qp_f32_bits(v);
    case QP_ELEM_BF16: return sr ? qp_f32_to_bf16_sr(v, r) : qp_f32_to_bf16(v);
    case QP_ELEM_E4M3: return sr ? qp_f32_to_e4m3_sr(v, r) : qp_f32_to_e4m3(v);
    case QP_ELEM_E5M2: return sr ? qp_f32_to_e5m2_sr(v, r) : qp_f32_to_e5m2(v);
    case QP_ELEM_E2M1: return sr ? qp_f32_to_e2m1_sr(v, r) : qp_f32_to_e2m1(v);
    }
    return 0;
}

float qp_decode_elem(qp_elem e, uint32_t code)
{
    switch (e) {
    case QP_ELEM_F32: return qp_bits_f32(code);
    case QP_ELEM_BF16: return qp_bf16_to_f32((uint16_t)code);
    case QP_ELEM_E4M3: return qp_e4m3_to_f32((uint8_t)code);
    case QP_ELEM_E5M2: return qp_e5m2_to_f32((uint8_t)code);
    case QP_ELEM_E2M1: return qp_e2m1_to_f32((uint8_t)code);
    }
    return 0.0f;
}

static uint32_t magnitude_mask(qp_elem e)
{
    switch (e) {
    case QP_ELEM_F32: return 0x7FFFFFFFu;
    case QP_ELEM_BF16: return 0x7FFFu;
    case QP_ELEM_E2M1: return 0x7u;
    default: return 0x7Fu;
    }
}

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

static void store_code(const qp_format_traits *t, uint8_t *codes, int64_t c, uint32_t code)
{
    switch (t->elem_bits) {
    case 4: codes[c >> 1] |= (uint8_t)(code << (4 * (c & 1))); break;
    case 8: codes[c] = (uint8_t)code; break;
    case 16: codes[2 * c] = (uint8_t)code; codes[2 * c + 1] = (uint8_t)(code >> 8); break;
    default: memcpy(codes + 4 * c, &code, 4); break;
    }
}

static void ref_encode_row(const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                           uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt)
{
    const qp_format_traits *t = p->t;
    const uint32_t mag = magnitude_mask(t->elem);
    for (int64_t c = 0; c < cols; c++) {
        const float xv = x[c];
        const int finite = isfinite(xv);
        if (!finite) cnt->n_nonfinite++;
        else if (xv != 0.0f) cnt->n_nonzero++;
        const int64_t b = c / bc;
        const uint8_t flag = bs ? bs->flag[b] : 0;
        uint32_t code = 0;
        float yv;
        if (flag & QP_BLOCK_NAN) {
            yv = NAN;
        } else if (flag & QP_BLOCK_ZERO) {
            yv = 0.0f;
            if (finite && xv != 0.0f) cnt->n_flushed++;
        } else {
            const float v = xv * (bs ? bs->enc[b] : p->scale);
            const uint32_t r = p->sr ? qp_rng_u32(p->seed, p->stream, gidx0 + (uint64_t)c) : 0;
            code = qp_encode_elem(t->elem, v, p->sr, r);
            if (finite) {
                if (t->elem == QP_ELEM_BF16 ? (code & mag) == 0x7F80u : fabsf(v) > t->elem_max) cnt->n_sat++;
                if (xv != 0.0f && (code & mag) == 0) cnt->n_flushed++;
            }
            yv = qp_decode_elem(t->elem, code) * (bs ? bs->dec[b] : 1.0f) * p->out_mul;
        }
        if (codes) store_code(t, codes, c, code);
        if (y) y[c] = yv;
    }
}

const qp_kernels qp_kernels_ref = {"scalar", ref_amax, ref_block_amax, qp_block_scales_ref, ref_encode_row};
