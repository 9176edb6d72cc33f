// test_codec_exhaustive.cpp — every one of the 2^32 float32 inputs through
// qprec's round-to-nearest encoders and through the CUDA toolkit's host
// conversion functions (the oracle), compared bit for bit: E4M3, E5M2, E2M1,
// BF16 and the FP6 elements E2M3, E3M2 (cuda_fp6.h). Also checks that every
// code decodes to the value the CUDA decoders give.
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cmath>

#include "qp_format.h"

static float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

static int same_float(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y;
}

int main(int argc, char **argv)
{
    // An optional stride lets a quick run sample the space; ctest runs it whole.
    uint64_t stride = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1;
    if (stride == 0) stride = 1;
    uint64_t bad[6] = {0, 0, 0, 0, 0, 0}, checked = 0;
    for (uint64_t i = 0; i <= 0xFFFFFFFFull; i += stride) {
        const float x = bits_to_float((uint32_t)i);
        const uint8_t e4 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
        const uint8_t e5 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
        const uint8_t e2 = __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
        const __nv_bfloat16_raw b16 = __nv_bfloat16_raw(__float2bfloat16_rn(x));
        const uint8_t q4 = qp_f32_to_e4m3(x), q5 = qp_f32_to_e5m2(x), q2 = qp_f32_to_e2m1(x);
        const uint16_t qb = qp_f32_to_bf16(x);
        const uint8_t f23 = __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
        const uint8_t f32 = __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
        const uint8_t q23 = qp_f32_to_e2m3(x), q32 = qp_f32_to_e3m2(x);
        if (q23 != f23 && bad[4]++ < 5) std::printf("e2m3 %08llx: qprec %02x cuda %02x\n", (unsigned long long)i, q23, f23);
        if (q32 != f32 && bad[5]++ < 5) std::printf("e3m2 %08llx: qprec %02x cuda %02x\n", (unsigned long long)i, q32, f32);
        if (q4 != e4 && bad[0]++ < 5) std::printf("e4m3 %08llx: qprec %02x cuda %02x\n", (unsigned long long)i, q4, e4);
        if (q5 != e5 && bad[1]++ < 5) std::printf("e5m2 %08llx: qprec %02x cuda %02x\n", (unsigned long long)i, q5, e5);
        if (q2 != e2 && bad[2]++ < 5) std::printf("e2m1 %08llx: qprec %x cuda %x\n", (unsigned long long)i, q2, e2);
        if (qb != b16.x && bad[3]++ < 5) std::printf("bf16 %08llx: qprec %04x cuda %04x\n", (unsigned long long)i, qb, b16.x);
        checked++;
    }
    std::printf("encoders: %llu inputs checked; mismatches e4m3 %llu e5m2 %llu e2m1 %llu bf16 %llu e2m3 %llu "
                "e3m2 %llu\n",
                (unsigned long long)checked, (unsigned long long)bad[0], (unsigned long long)bad[1],
                (unsigned long long)bad[2], (unsigned long long)bad[3], (unsigned long long)bad[4],
                (unsigned long long)bad[5]);

    uint64_t dbad = 0;
    for (unsigned c = 0; c < 256; c++) {
        __nv_fp8_e4m3 a; a.__x = (__nv_fp8_storage_t)c;
        __nv_fp8_e5m2 b; b.__x = (__nv_fp8_storage_t)c;
        if (!same_float(qp_e4m3_to_f32((uint8_t)c), (float)a) && dbad++ < 5) std::printf("decode e4m3 %02x\n", c);
        if (!same_float(qp_e5m2_to_f32((uint8_t)c), (float)b) && dbad++ < 5) std::printf("decode e5m2 %02x\n", c);
        if (c < 64) {
            __nv_fp6_e2m3 a6; a6.__x = (__nv_fp6_storage_t)c;
            __nv_fp6_e3m2 b6; b6.__x = (__nv_fp6_storage_t)c;
            if (!same_float(qp_e2m3_to_f32((uint8_t)c), (float)a6) && dbad++ < 5) std::printf("decode e2m3 %02x\n", c);
            if (!same_float(qp_e3m2_to_f32((uint8_t)c), (float)b6) && dbad++ < 5) std::printf("decode e3m2 %02x\n", c);
        }
        if (c < 16) {
            __nv_fp4_e2m1 f; f.__x = (__nv_fp4_storage_t)c;
            if (!same_float(qp_e2m1_to_f32((uint8_t)c), (float)f) && dbad++ < 5) std::printf("decode e2m1 %x\n", c);
        }
    }
    for (unsigned c = 0; c < 65536; c++) {
        __nv_bfloat16_raw r; r.x = (unsigned short)c;
        if (!same_float(qp_bf16_to_f32((uint16_t)c), __bfloat162float(__nv_bfloat16(r))) && dbad++ < 5)
            std::printf("decode bf16 %04x\n", c);
    }
    std::printf("decoders: mismatches %llu\n", (unsigned long long)dbad);
    const int ok = !bad[0] && !bad[1] && !bad[2] && !bad[3] && !bad[4] && !bad[5] && !dbad;
    std::printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
