/* qp_format.h — element and scale codecs: float32 <-> E4M3, E5M2, E2M1,
 * E2M3, E3M2, BF16, E8M0 and UE4M3, round-to-nearest-even and stochastic
 * rounding. The functions themselves are qp_core.h's (host/device C, the one
 * definition the CUDA kernels compile too); this header states their contract.
 *
 * The round-to-nearest encoders are bit-identical, for all 2^32 float32 inputs,
 * to the CUDA toolkit's host conversions (tests/test_codec_exhaustive.cpp):
 *   qp_f32_to_e4m3  == __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)
 *   qp_f32_to_e5m2  == __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)
 *   qp_f32_to_e2m1  == __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)
 *   qp_f32_to_e2m3  == __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest)
 *   qp_f32_to_e3m2  == __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest)
 *   qp_f32_to_bf16  == __float2bfloat16_rn(x)
 * and E2M3, E3M2, E2M1, E4M3 and E8M0 agree with ml_dtypes around every
 * representable value (tests/oracle/check_mldtypes.py). Consequences:
 *   - FP8/FP6/FP4 saturate: |x| beyond the largest finite value and +-Inf
 *     give +-max (E4M3 448, E5M2 57344, E3M2 28, E2M3 7.5, E2M1 6).
 *   - NaN gives 0x7F for E4M3 and E5M2 (sign dropped), the positive maximum
 *     for the formats without NaN (E2M1 0x7, E2M3/E3M2 0x1F), 0x7FFF for BF16.
 *     BF16 does not saturate: overflow rounds to +-Inf.
 *   - Underflow keeps the sign (-tiny -> 0x80; FP6 0x20, FP4 0x8).
 * Layouts: FP6 codes hold the sign in bit 5 (cuda_fp6's __nv_fp6_storage_t),
 * FP4 codes in bit 3; decoders ignore the bits above.
 * Stochastic-rounding variants take a caller-supplied uniform 32-bit value r:
 * |x| is rounded up to the next representable magnitude with probability
 * frac * 2^-32 (frac = the fraction of the gap, truncated to 32 bits), so the
 * expectation equals x up to 2^-32 of an ulp; saturation and NaN as above.
 *
 *   uint8_t  qp_f32_to_e4m3(float), _e5m2, _e2m1, _e2m3, _e3m2   (+ _sr(x, r))
 *   uint16_t qp_f32_to_bf16(float)                                (+ _sr(x, r))
 *   float    qp_e4m3_to_f32(uint8_t) ...  0x7F/0xFF (E4M3) NaN; E5M2 0x7C Inf,
 *                                          0x7D..0x7F NaN
 *   E8M0 (OCP MX scale, 2^(code-127), 0xFF NaN):
 *     qp_f32_to_e8m0(x)       rounds down (the OCP rule's floor): x >= 2^127
 *                             -> 0xFE, x < 2^-127 (and x <= 0) -> 0, NaN/Inf -> 0xFF
 *     qp_f32_to_e8m0_ceil(x)  rounds up (TE, cuBLAS, cvt.rp.satfinite.ue8m0):
 *                             x > 2^127 -> 0xFE, x <= 2^-127 -> 0, NaN/Inf -> 0xFF
 *     qp_e8m0_from_exp(e)     from an exponent, clamped to [-127, 127]
 *   UE4M3 (NVFP4 block scale): E4M3 with the sign bit 0, RNE, saturating at
 *     448; negative inputs encode as their magnitude; NaN -> 0x7F.
 *   qp_floor_log2(x)          floor(log2|x|) for finite non-zero x, exact. */
#ifndef QP_FORMAT_H
#define QP_FORMAT_H

#include "qp_core.h"

#define QP_E4M3_EMAX 8 /* exponent of the largest normal, 2^8 * 1.75 = 448 */
#define QP_E5M2_EMAX 15
#define QP_E2M1_EMAX 2
#define QP_E2M3_EMAX 2 /* 7.5 = 1.875 * 2^2 */
#define QP_E3M2_EMAX 4 /* 28 = 1.75 * 2^4 */

#ifdef __cplusplus
extern "C" {
#endif

/* The same codecs compiled once into libqpquant (qp_format.c), for a test
 * that compares another compiler's translation of qp_core.h with gcc's
 * (test_qcore_nvcc) and for tools that call a codec by its enum
 * (tests/oracle/codec_dump.c). */
uint32_t qp_lib_encode_elem(qp_elem e, float x, int sr, uint32_t r);
float qp_lib_decode_elem(qp_elem e, uint32_t code);
/* UE4M3 (ceil ignored) or E8M0 (rounded down, or up when ceil) code of x. */
uint32_t qp_lib_scale_code(qp_block_scale kind, float x, int ceil);
float qp_lib_scale_value(qp_block_scale kind, uint8_t code);
int qp_lib_floor_log2(float x);
uint32_t qp_lib_rng_u32(uint64_t seed, uint64_t stream, uint64_t i);

#ifdef __cplusplus
}
#endif

#endif
