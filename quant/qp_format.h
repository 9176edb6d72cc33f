/* qp_format.h — element and scale codecs: float32 <-> E4M3, E5M2, E2M1, BF16,
 * E8M0 and UE4M3, round-to-nearest-even and stochastic rounding.
 *
 * Owns: the bit-level definition of every number format qprec emulates.
 * The round-to-nearest encoders are bit-identical, for all 2^32 float32 inputs,
 * to the CUDA toolkit's host conversions (tests/test_codec_exhaustive.cpp):
 *   qp_f32_to_e4m3  == __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)
 *   qp_f32_to_e5m2  == __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)
 *   qp_f32_to_e2m1  == __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)
 *   qp_f32_to_bf16  == __float2bfloat16_rn(x)
 * Consequences of that oracle, worth knowing:
 *   - FP8/FP4 saturate: |x| beyond the largest finite value and +-Inf give +-max.
 *   - NaN gives 0x7F for E4M3 and E5M2 (sign dropped), +6.0 (0x7) for E2M1,
 *     0x7FFF for BF16. BF16 does not saturate: overflow rounds to +-Inf.
 *   - Underflow keeps the sign (-tiny -> 0x80).
 * Stochastic-rounding variants take a caller-supplied uniform 32-bit value r:
 * |x| is rounded up to the next representable magnitude with probability
 * frac * 2^-32 (frac = the fraction of the gap, truncated to 32 bits), so the
 * expectation equals x up to 2^-32 of an ulp; saturation and NaN as above.
 */
#ifndef QP_FORMAT_H
#define QP_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QP_E4M3_MAX 448.0f
#define QP_E5M2_MAX 57344.0f
#define QP_E2M1_MAX 6.0f
#define QP_E4M3_EMAX 8   /* exponent of the largest normal, 2^8 * 1.75 = 448 */
#define QP_E5M2_EMAX 15
#define QP_E2M1_EMAX 2
#define QP_E8M0_NAN 0xFF
#define QP_E8M0_BIAS 127

/* Element codecs (round to nearest even, saturating for FP8/FP4). */
uint8_t  qp_f32_to_e4m3(float x);
uint8_t  qp_f32_to_e5m2(float x);
uint8_t  qp_f32_to_e2m1(float x);   /* code in the low nibble */
uint16_t qp_f32_to_bf16(float x);
float qp_e4m3_to_f32(uint8_t c);    /* 0x7F / 0xFF decode to NaN */
float qp_e5m2_to_f32(uint8_t c);    /* 0x7C = Inf, 0x7D..0x7F = NaN */
float qp_e2m1_to_f32(uint8_t c);    /* high nibble ignored */
float qp_bf16_to_f32(uint16_t c);

/* Stochastic rounding; r is a uniform 32-bit random value. */
uint8_t  qp_f32_to_e4m3_sr(float x, uint32_t r);
uint8_t  qp_f32_to_e5m2_sr(float x, uint32_t r);
uint8_t  qp_f32_to_e2m1_sr(float x, uint32_t r);
uint16_t qp_f32_to_bf16_sr(float x, uint32_t r);

/* E8M0 (OCP MX scale): value 2^(code-127); code 0xFF is NaN.
 * Encoding rounds down to a power of two, as the OCP MX scale rule
 * floor(log2(amax)) needs: x >= 2^127 -> 0xFE, x < 2^-127 (and x <= 0) -> 0,
 * NaN or Inf -> 0xFF. */
uint8_t qp_f32_to_e8m0(float x);
float   qp_e8m0_to_f32(uint8_t c);
/* E8M0 code straight from an unbiased exponent, clamped to [-127, 127]. */
uint8_t qp_e8m0_from_exp(int e);

/* UE4M3 (NVFP4 block scale): E4M3 with the sign bit always 0, RNE, saturating
 * at 448. Negative inputs encode as their magnitude; NaN -> 0x7F. */
uint8_t qp_f32_to_ue4m3(float x);
float   qp_ue4m3_to_f32(uint8_t c);

/* floor(log2(|x|)) for finite non-zero x, exact (subnormals included). */
int qp_floor_log2(float x);

/* Bit casts. */
static inline uint32_t qp_f32_bits(float x) { union { float f; uint32_t u; } v; v.f = x; return v.u; }
static inline float qp_bits_f32(uint32_t u) { union { float f; uint32_t u; } v; v.u = u; return v.f; }

#ifdef __cplusplus
}
#endif
#endif
