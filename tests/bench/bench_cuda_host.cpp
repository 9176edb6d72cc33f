// bench_cuda_host.cpp — the same quantizations done element by element with
// the CUDA toolkit's host conversion functions (__nv_cvt_float_to_fp8/fp6/fp4,
// __nv_cvt_float_to_e8m0, __float2bfloat16_rn), the baseline bench_quant
// compares against. The scale rules are written here again from the published
// recipes (OCP MX, TE's round-up MX, NVIDIA's NVFP4, Four Over Six, DeepSeek-V3
// / TE FP8 blocks), so the codes must also come out identical to quant/'s.
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "qp_quant.h"

namespace {

float amax_of(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float a = std::fabs(x[i]);
        if (std::isfinite(a) && a > m) m = a;
    }
    return m;
}

// The element codec of a format through CUDA's conversions.
uint8_t cuda_encode(qp_elem e, float v)
{
    switch (e) {
    case QP_ELEM_E4M3: return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    case QP_ELEM_E5M2: return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
    case QP_ELEM_E2M1: return __nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest);
    case QP_ELEM_E2M3: return __nv_cvt_float_to_fp6(v, __NV_E2M3, cudaRoundNearest);
    case QP_ELEM_E3M2: return __nv_cvt_float_to_fp6(v, __NV_E3M2, cudaRoundNearest);
    default: return 0;
    }
}

float e4m3_value(uint8_t c)
{
    __nv_fp8_e4m3 d;
    d.__x = c;
    return (float)d;
}

float e2m1_value(uint8_t c)
{
    __nv_fp4_e2m1 d;
    d.__x = c;
    return (float)d;
}

void store(qp_elem e, uint8_t *row, int64_t c, uint8_t code)
{
    if (e == QP_ELEM_E2M1) {
        if (c & 1) row[c / 2] |= (uint8_t)(code << 4);
        else row[c / 2] = code;
    } else {
        row[c] = code;
    }
}

// NVFP4's block scale (UE4M3 of t, as E4M3) and element multiplier under Sinv.
struct nv_scale {
    uint8_t code;
    float dec, enc;
};

nv_scale nvfp4_scale(float t, float sinv)
{
    nv_scale s;
    s.code = __nv_cvt_float_to_fp8(t, __NV_SATFINITE, __NV_E4M3);
    s.dec = e4m3_value(s.code);
    s.enc = s.dec == 0.0f ? 0.0f : std::fmin(1.0f / (s.dec * sinv), FLT_MAX);
    return s;
}

// Four Over Six: the squared error of a block's decoded values under s.
double block_error(const float *x, int n, nv_scale s, float sinv)
{
    double err = 0.0;
    for (int i = 0; i < n; i++) {
        if (!std::isfinite(x[i])) continue;
        const float y = s.dec == 0.0f ? 0.0f
                                      : e2m1_value(__nv_cvt_float_to_fp4(x[i] * s.enc, __NV_E2M1, cudaRoundNearest)) *
                                            s.dec * sinv;
        const double d = (double)x[i] - (double)y;
        err += d * d;
    }
    return err;
}

} // namespace

extern "C" {

// Quantize rows x cols (cols a multiple of 128, rows of 128 for the 128x128
// blocks) in fmt into packed codes/scales with CUDA host conversions; returns
// 0, or -1 for a format it does not cover.
int bench_cuda_host_quantize(int fmt, const float *x, int64_t rows, int64_t cols, uint8_t *codes, uint8_t *scales)
{
    const int64_t n = rows * cols;
    if (!qp_fmt_valid(fmt)) return -1;
    const qp_format_traits *t = &qp_formats[fmt];
    const int64_t row_bytes = qp_row_bytes((qp_fmt)fmt, cols);
    switch (t->rule) {
    case QP_RULE_NONE:
        if (t->elem != QP_ELEM_BF16) return -1;
        for (int64_t i = 0; i < n; i++) {
            const __nv_bfloat16_raw r = __nv_bfloat16_raw(__float2bfloat16_rn(x[i]));
            std::memcpy(codes + 2 * i, &r.x, 2);
        }
        return 0;
    case QP_RULE_TENSOR: {
        const float a = amax_of(x, n);
        const float s = a > 0.0f ? t->elem_max / a : 1.0f;
        for (int64_t i = 0; i < n; i++) codes[i] = cuda_encode(t->elem, x[i] * s);
        return 0;
    }
    case QP_RULE_MX_FLOOR:
    case QP_RULE_MX_RCEIL: {
        const int64_t nb = cols / 32;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nb; b++) {
                const float *xb = x + r * cols + 32 * b;
                const float a = amax_of(xb, 32);
                uint8_t sc;
                if (t->rule == QP_RULE_MX_FLOOR) {
                    // OCP MX v1.0: X = 2^(floor(log2 amax) - emax_elem)
                    int e = a > 0.0f ? std::ilogb(a) - t->elem_emax : -127;
                    e = e < -127 ? -127 : e > 127 ? 127 : e;
                    sc = (uint8_t)(e + 127);
                } else {
                    // TE / cuBLAS: amax * (1/elem_max) rounded up to a power of two
                    sc = __nv_cvt_float_to_e8m0(a * (1.0f / t->elem_max), __NV_SATFINITE, cudaRoundPosInf);
                }
                scales[r * nb + b] = sc;
                const float inv = std::ldexp(1.0f, 127 - sc);
                for (int j = 0; j < 32; j++) store(t->elem, codes + r * row_bytes, 32 * b + j, cuda_encode(t->elem, xb[j] * inv));
            }
        return 0;
    }
    case QP_RULE_NVFP4:
    case QP_RULE_NVFP4_4O6: {
        const float a = amax_of(x, n);
        const int64_t nb = cols / 16, br = t->block_rows;
        for (int64_t r0 = 0; r0 < rows; r0 += br)
            for (int64_t b = 0; b < nb; b++) {
                // nvfp4-row (TE's row_scaled_nvfp4): S from the row's amax, FLT_MAX for a zero row
                const float ar = t->row_scaled ? amax_of(x + r0 * cols, cols) : a;
                const float S = t->row_scaled ? (ar > 0.0f ? std::fmin(t->tensor_range / ar, FLT_MAX) : FLT_MAX)
                                              : (a > 0.0f ? t->tensor_range / a : 1.0f),
                            Sinv = 1.0f / S;
                float ab = 0.0f;
                for (int64_t r = r0; r < r0 + br && r < rows; r++) ab = std::fmax(ab, amax_of(x + r * cols + 16 * b, 16));
                const float t6 = ab * (S * (1.0f / 6.0f));
                nv_scale s = nvfp4_scale(t6, Sinv);
                if (t->rule == QP_RULE_NVFP4_4O6) {
                    const nv_scale s4 = nvfp4_scale(t6 * 1.5f, Sinv);
                    const float *xb = x + r0 * cols + 16 * b;
                    if (block_error(xb, 16, s4, Sinv) < block_error(xb, 16, s, Sinv)) s = s4;
                }
                scales[(r0 / br) * nb + b] = s.code;
                for (int64_t r = r0; r < r0 + br && r < rows; r++)
                    for (int j = 0; j < 16; j++) {
                        const uint8_t c = s.dec == 0.0f ? 0 : cuda_encode(QP_ELEM_E2M1, x[r * cols + 16 * b + j] * s.enc);
                        store(QP_ELEM_E2M1, codes + r * row_bytes, 16 * b + j, c);
                    }
            }
        return 0;
    }
    case QP_RULE_F32_BLOCK:
    case QP_RULE_POW2_BLOCK: {
        // DeepSeek-V3 / TE Float8BlockScaling: s = 448 / amax (1 for 0,
        // FLT_MAX on overflow), -pow2 keeps its exponent bits; dec = 1/s
        const int64_t nb = cols / 128, br = t->block_rows;
        for (int64_t r0 = 0; r0 < rows; r0 += br)
            for (int64_t b = 0; b < nb; b++) {
                float ab = 0.0f;
                for (int64_t r = r0; r < r0 + br && r < rows; r++) ab = std::fmax(ab, amax_of(x + r * cols + 128 * b, 128));
                float s = ab > 0.0f ? std::fmin(t->elem_max / ab, FLT_MAX) : 1.0f;
                if (t->rule == QP_RULE_POW2_BLOCK) s = std::ldexp(1.0f, std::ilogb(s));
                const float dec = 1.0f / s;
                std::memcpy(scales + 4 * ((r0 / br) * nb + b), &dec, 4);
                for (int64_t r = r0; r < r0 + br && r < rows; r++)
                    for (int j = 0; j < 128; j++) codes[r * row_bytes + 128 * b + j] = cuda_encode(t->elem, x[r * cols + 128 * b + j] * s);
            }
        return 0;
    }
    case QP_RULE_NVFP4_4O6_TE: // TE's float32 error: tests/test_te_parity.c's vectors check these
    case QP_RULE_NVFP4_4O6_TE_MSE:
    case QP_RULE_COUNT: break;
    }
    return -1;
}
}
