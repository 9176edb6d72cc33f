// bench_cuda_host.cpp — the same quantizations done element by element with
// the CUDA toolkit's host conversion functions (__nv_cvt_float_to_fp8/fp4,
// __float2bfloat16_rn), the baseline bench_quant compares against. Same scale
// rules as quant/, so the codes must also come out identical.
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "qp_format.h"
#include "qp_quant.h"

extern "C" {

static float amax_of(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float a = std::fabs(x[i]);
        if (std::isfinite(a) && a > m) m = a;
    }
    return m;
}

// Quantize rows x cols (cols a multiple of 32) in fmt into codes/scales with
// CUDA host conversions; returns 0, or -1 for a format it does not cover.
int bench_cuda_host_quantize(int fmt, const float *x, int64_t rows, int64_t cols, uint8_t *codes, uint8_t *scales)
{
    const int64_t n = rows * cols;
    switch (fmt) {
    case QP_FMT_BF16:
        for (int64_t i = 0; i < n; i++) {
            const __nv_bfloat16_raw r = __nv_bfloat16_raw(__float2bfloat16_rn(x[i]));
            std::memcpy(codes + 2 * i, &r.x, 2);
        }
        return 0;
    case QP_FMT_FP8_E4M3:
    case QP_FMT_FP8_E5M2: {
        const __nv_fp8_interpretation_t k = fmt == QP_FMT_FP8_E4M3 ? __NV_E4M3 : __NV_E5M2;
        const float a = amax_of(x, n);
        const float s = a > 0.0f ? (fmt == QP_FMT_FP8_E4M3 ? 448.0f : 57344.0f) / a : 1.0f;
        for (int64_t i = 0; i < n; i++) codes[i] = __nv_cvt_float_to_fp8(x[i] * s, __NV_SATFINITE, k);
        return 0;
    }
    case QP_FMT_MXFP8:
    case QP_FMT_MXFP4:
        for (int64_t b = 0; b < n / 32; b++) {
            const float a = amax_of(x + 32 * b, 32);
            const int e = a > 0.0f ? qp_floor_log2(a) - (fmt == QP_FMT_MXFP8 ? 8 : 2) : -127;
            scales[b] = qp_e8m0_from_exp(e);
            const float inv = std::ldexp(1.0f, 127 - scales[b]);
            for (int j = 0; j < 32; j++) {
                const float v = x[32 * b + j] * inv;
                if (fmt == QP_FMT_MXFP8)
                    codes[32 * b + j] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
                else if (j & 1)
                    codes[16 * b + j / 2] |= (uint8_t)(__nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest) << 4);
                else
                    codes[16 * b + j / 2] = __nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest);
            }
        }
        return 0;
    case QP_FMT_NVFP4: {
        const float a = amax_of(x, n);
        const float S = a > 0.0f ? 2688.0f / a : 1.0f, Sinv = 1.0f / S;
        for (int64_t b = 0; b < n / 16; b++) {
            const float ab = amax_of(x + 16 * b, 16);
            __nv_fp8_e4m3 d;
            d.__x = __nv_cvt_float_to_fp8(ab * (S * (1.0f / 6.0f)), __NV_SATFINITE, __NV_E4M3);
            scales[b] = d.__x;
            const float db = (float)d;
            const float enc = db == 0.0f ? 0.0f : std::fmin(1.0f / (db * Sinv), 3.40282347e38f);
            for (int j = 0; j < 16; j += 2) {
                const uint8_t lo = __nv_cvt_float_to_fp4(x[16 * b + j] * enc, __NV_E2M1, cudaRoundNearest);
                const uint8_t hi = __nv_cvt_float_to_fp4(x[16 * b + j + 1] * enc, __NV_E2M1, cudaRoundNearest);
                codes[8 * b + j / 2] = (uint8_t)(lo | hi << 4);
            }
        }
        return 0;
    }
    default: return -1;
    }
}
}
