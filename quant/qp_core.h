/* qp_core.h — the number formats of qprec, written once: element codecs,
 * stochastic rounding, Philox, the random Hadamard transform, the format
 * table and the block-scale rules, as plain C that gcc compiles for the CPU
 * (quant/, the trainer, the tests) and nvcc compiles for the host and the
 * device (kernels/). Nothing here is restated anywhere else: quant/'s C files
 * and kernels/qp_cuda_qcore.h include it.
 *
 * Owns: the bit-level definition of every format (qp_format.h describes the
 * codecs' contract, qp_quant.h the tensor formats', docs/formats.md both).
 *
 * Rules for this file: libc only (no libm beyond floorf), no FMA-contractible
 * expression a*b+c (the .cu files also build with --fmad=false), float bit
 * casts through memcpy on the host and intrinsics on the device, and every
 * switch over an enum names every value with the unknown value handled after
 * the switch (gcc's -Wswitch then flags a value someone forgot). */
#ifndef QP_CORE_H
#define QP_CORE_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define QP_HD __host__ __device__ __forceinline__
#else
#define QP_HD static inline
#endif
#ifdef __CUDA_ARCH__
#define QP_UNROLL _Pragma("unroll")
#else
#define QP_UNROLL
#endif
#ifdef __cplusplus
#define QP_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define QP_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- enums ------------------------------------------------------------------ */

/* Tensor formats: the rows of QP_FORMAT_TABLE, in this order (new ones go at
 * the end so stored numbers keep their meaning). */
typedef enum {
    QP_FMT_FP32 = 0,
    QP_FMT_BF16,
    QP_FMT_FP8_E4M3,
    QP_FMT_FP8_E5M2,
    QP_FMT_MXFP8,
    QP_FMT_MXFP8_E5M2,
    QP_FMT_MXFP4,
    QP_FMT_NVFP4,
    QP_FMT_NVFP4_2D,
    QP_FMT_MXFP8_RCEIL,
    QP_FMT_MXFP4_RCEIL,
    QP_FMT_FP8_BLOCK,
    QP_FMT_FP8_BLOCK_2D,
    QP_FMT_FP8_BLOCK_POW2,
    QP_FMT_FP8_BLOCK_2D_POW2,
    QP_FMT_NVFP4_4O6,
    QP_FMT_MXFP6_E2M3,
    QP_FMT_MXFP6_E3M2,
    QP_FMT_NVFP4_4O6_TE,
    QP_FMT_NVFP4_4O6_TE_MSE,
    QP_FMT_NVFP4_4O6_TE_2D,
    QP_FMT_NVFP4_4O6_TE_MSE_2D,
    QP_FMT_NVFP4_ROW,
    QP_FMT_COUNT
} qp_fmt;

/* Element codecs. */
typedef enum {
    QP_ELEM_F32 = 0,
    QP_ELEM_BF16,
    QP_ELEM_E4M3,
    QP_ELEM_E5M2,
    QP_ELEM_E2M1,
    QP_ELEM_E2M3,
    QP_ELEM_E3M2,
    QP_ELEM_COUNT
} qp_elem;

/* How a block scale is stored. */
typedef enum {
    QP_SCALE_NONE = 0, /* no scale (fp32, bf16) */
    QP_SCALE_TENSOR,   /* one FP32 scale per tensor, no block scales */
    QP_SCALE_E8M0,     /* one byte, 2^(code-127) */
    QP_SCALE_UE4M3,    /* one byte, E4M3 without sign */
    QP_SCALE_F32,      /* four bytes, the FP32 decode scale (little-endian bits) */
    QP_SCALE_COUNT
} qp_block_scale;

/* The rule that computes a block's scale (docs/formats.md). */
typedef enum {
    QP_RULE_NONE = 0,   /* no scaling */
    QP_RULE_TENSOR,     /* per-tensor FP8: s = elem_max / amax */
    QP_RULE_MX_FLOOR,   /* OCP MX: 2^(floor(log2 amax_b) - emax) */
    QP_RULE_MX_RCEIL,   /* TE/cuBLAS: 2^ceil(log2(amax_b * (1/elem_max))) */
    QP_RULE_NVFP4,      /* NVIDIA: ue4m3(amax_b * (S * (1/6))) under a tensor scale S */
    QP_RULE_NVFP4_4O6,  /* Four Over Six: the NVFP4 scale to 6 or to 4, smaller error */
    QP_RULE_F32_BLOCK,  /* DeepSeek-V3 / TE: s_b = elem_max / amax_b in FP32 */
    QP_RULE_POW2_BLOCK, /* the same, s_b truncated to a power of two (TE's default) */
    QP_RULE_NVFP4_4O6_TE,     /* Four Over Six as Transformer Engine computes it: MAE in float32 */
    QP_RULE_NVFP4_4O6_TE_MSE, /* the same with TE's squared-error mode */
    QP_RULE_COUNT
} qp_scale_rule;

#define QK_MX 32        /* OCP MX block */
#define QK_NVFP4 16     /* NVFP4 block (and 2D tile side) */
#define QK_FP8_BLOCK 128 /* FP8 block scaling: 1x128 tiles, 128x128 blocks */
#define QK_RHT 16       /* the NVFP4 recipe's random Hadamard transform */
#define QP_RHT_MAX 128  /* largest RHT size */
#define QP_BLOCK_MAX 128 /* largest block along a row */

/* ---- bits ------------------------------------------------------------------- */

QP_HD uint32_t qp_f32_bits(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

QP_HD float qp_bits_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

QP_HD int qp_clz32(uint32_t a)
{
#ifdef __CUDA_ARCH__
    return __clz((int)a);
#else
    return __builtin_clz(a);
#endif
}

QP_HD float qp_nanf(void) { return qp_bits_f32(0x7FC00000u); }
QP_HD int qp_isnanf(float x) { return (qp_f32_bits(x) & 0x7FFFFFFFu) > 0x7F800000u; }
QP_HD int qp_isfinitef(float x) { return (qp_f32_bits(x) & 0x7FFFFFFFu) < 0x7F800000u; }
QP_HD float qp_fabsf(float x) { return qp_bits_f32(qp_f32_bits(x) & 0x7FFFFFFFu); }

/* 2^e for -149 <= e <= 127, exact. */
QP_HD float qp_pow2f(int e) { return e >= -126 ? qp_bits_f32((uint32_t)(e + 127) << 23) : qp_bits_f32(1u << (e + 149)); }

/* floor(log2(|x|)) for finite non-zero x, exact (subnormals included). */
QP_HD int qp_floor_log2(float x)
{
    const uint32_t a = qp_f32_bits(x) & 0x7FFFFFFFu;
    const int e = (int)(a >> 23);
    if (e) return e - 127;
    return (31 - qp_clz32(a)) - 149;
}

/* ---- minifloat element codecs ---------------------------------------------- */

/* A sign-magnitude minifloat without infinities: mantissa bits, exponent bias,
 * the magnitude code of the largest finite value, the code NaN encodes to,
 * where the sign bit sits, and the largest value. */
typedef struct {
    int mbits, bias;
    uint32_t maxcode, nan_code;
    int sign_shift;
    float max;
} qp_minifloat;

#define QP_MF_E4M3 {3, 7, 0x7Eu, 0x7Fu, 7, 448.0f}
#define QP_MF_E5M2 {2, 15, 0x7Bu, 0x7Fu, 7, 57344.0f}
#define QP_MF_E2M1 {1, 1, 0x7u, 0x7u, 3, 6.0f}
#define QP_MF_E2M3 {3, 1, 0x1Fu, 0x1Fu, 5, 7.5f}
#define QP_MF_E3M2 {2, 3, 0x1Fu, 0x1Fu, 5, 28.0f}

/* Magnitude code of |x| (abits, not NaN): round to nearest even, saturating.
 * Normal results add the RNE bias to the float bits and shift the dropped
 * mantissa bits out; subnormal results add a power of two whose ulp is the
 * target's subnormal spacing, so the FPU's own RNE does the rounding. */
QP_HD uint32_t qp_encode_magnitude(uint32_t abits, int mbits, int bias, uint32_t maxcode)
{
    const uint32_t minnorm_bits = (uint32_t)(127 - bias + 1) << 23;
    uint32_t code;
    if (abits < minnorm_bits) {
        const float magic = qp_bits_f32((uint32_t)(127 + 1 - bias - mbits + 23) << 23);
        const float t = qp_bits_f32(abits) + magic;
        code = qp_f32_bits(t) - qp_f32_bits(magic);
    } else {
        const int drop = 23 - mbits;
        const uint32_t rounded = abits + ((1u << (drop - 1)) - 1) + ((abits >> drop) & 1u);
        code = (rounded >> drop) - ((uint32_t)(127 - bias) << mbits);
    }
    return code < maxcode ? code : maxcode;
}

QP_HD uint32_t qp_encode_minifloat(float x, qp_minifloat f)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return f.nan_code;
    return qp_encode_magnitude(a, f.mbits, f.bias, f.maxcode) | ((b >> 31) << f.sign_shift);
}

/* (small integer) * 2^k: exact. */
QP_HD float qp_decode_minifloat(uint32_t code, qp_minifloat f)
{
    const uint32_t mag = code & ((1u << f.sign_shift) - 1);
    const uint32_t e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1);
    const float v = e == 0 ? (float)m * qp_pow2f(1 - f.bias - f.mbits)
                           : (float)((1u << f.mbits) | m) * qp_pow2f((int)e - f.bias - f.mbits);
    return (code >> f.sign_shift) & 1u ? -v : v;
}

/* Stochastic rounding of a finite magnitude ax >= 0 onto a grid with mbits
 * mantissa bits and minimum normal exponent emin, saturating at maxval: up to
 * the next grid value when r < floor(frac * 2^32) (frac: the position inside
 * the gap; (q - lo) * 2^32 is exact in float and < 2^32); r is qp_sr_word's,
 * which states the probability. */
QP_HD float qp_sr_magnitude(float ax, int mbits, int emin, float maxval, uint32_t r)
{
    if (ax >= maxval) return maxval;
    if (ax == 0.0f) return 0.0f;
    int e = qp_floor_log2(ax);
    if (e < emin) e = emin;
    const float ulp = qp_pow2f(e - mbits);
    const float q = ax / ulp;
    float lo = floorf(q);
    const uint32_t threshold = (uint32_t)((q - lo) * 4294967296.0f);
    if (r < threshold) lo += 1.0f;
    const float v = lo * ulp;
    return v < maxval ? v : maxval;
}

QP_HD uint32_t qp_encode_minifloat_sr(float x, uint32_t r, qp_minifloat f)
{
    const uint32_t b = qp_f32_bits(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return f.nan_code;
    const float v = qp_sr_magnitude(qp_fabsf(x), f.mbits, 1 - f.bias, f.max, r);
    return qp_encode_magnitude(qp_f32_bits(v), f.mbits, f.bias, f.maxcode) | ((b >> 31) << f.sign_shift);
}

/* The codecs by name (qp_format.h states what they are checked against). */
QP_HD uint8_t qp_f32_to_e4m3(float x) { const qp_minifloat f = QP_MF_E4M3; return (uint8_t)qp_encode_minifloat(x, f); }
QP_HD uint8_t qp_f32_to_e5m2(float x) { const qp_minifloat f = QP_MF_E5M2; return (uint8_t)qp_encode_minifloat(x, f); }
QP_HD uint8_t qp_f32_to_e2m1(float x) { const qp_minifloat f = QP_MF_E2M1; return (uint8_t)qp_encode_minifloat(x, f); }
QP_HD uint8_t qp_f32_to_e2m3(float x) { const qp_minifloat f = QP_MF_E2M3; return (uint8_t)qp_encode_minifloat(x, f); }
QP_HD uint8_t qp_f32_to_e3m2(float x) { const qp_minifloat f = QP_MF_E3M2; return (uint8_t)qp_encode_minifloat(x, f); }

QP_HD uint8_t qp_f32_to_e4m3_sr(float x, uint32_t r) { const qp_minifloat f = QP_MF_E4M3; return (uint8_t)qp_encode_minifloat_sr(x, r, f); }
QP_HD uint8_t qp_f32_to_e5m2_sr(float x, uint32_t r) { const qp_minifloat f = QP_MF_E5M2; return (uint8_t)qp_encode_minifloat_sr(x, r, f); }
QP_HD uint8_t qp_f32_to_e2m1_sr(float x, uint32_t r) { const qp_minifloat f = QP_MF_E2M1; return (uint8_t)qp_encode_minifloat_sr(x, r, f); }
QP_HD uint8_t qp_f32_to_e2m3_sr(float x, uint32_t r) { const qp_minifloat f = QP_MF_E2M3; return (uint8_t)qp_encode_minifloat_sr(x, r, f); }
QP_HD uint8_t qp_f32_to_e3m2_sr(float x, uint32_t r) { const qp_minifloat f = QP_MF_E3M2; return (uint8_t)qp_encode_minifloat_sr(x, r, f); }

QP_HD float qp_e4m3_to_f32(uint8_t c)
{
    const qp_minifloat f = QP_MF_E4M3;
    if ((c & 0x7F) == 0x7F) return qp_nanf();
    return qp_decode_minifloat(c, f);
}

QP_HD float qp_e5m2_to_f32(uint8_t c)
{
    const qp_minifloat f = QP_MF_E5M2;
    if ((c & 0x7F) > 0x7C) return qp_nanf();
    if ((c & 0x7F) == 0x7C) return qp_bits_f32(c & 0x80 ? 0xFF800000u : 0x7F800000u);
    return qp_decode_minifloat(c, f);
}

QP_HD float qp_e2m1_to_f32(uint8_t c) { const qp_minifloat f = QP_MF_E2M1; return qp_decode_minifloat(c & 0xFu, f); }
QP_HD float qp_e2m3_to_f32(uint8_t c) { const qp_minifloat f = QP_MF_E2M3; return qp_decode_minifloat(c & 0x3Fu, f); }
QP_HD float qp_e3m2_to_f32(uint8_t c) { const qp_minifloat f = QP_MF_E3M2; return qp_decode_minifloat(c & 0x3Fu, f); }

/* ---- BF16 ------------------------------------------------------------------- */

QP_HD uint16_t qp_f32_to_bf16(float x)
{
    const uint32_t b = qp_f32_bits(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* Up with probability (low 16 bits) / 2^16: exact. */
QP_HD uint16_t qp_f32_to_bf16_sr(float x, uint32_t r)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7FFF;
    if (a == 0x7F800000u) return (uint16_t)(b >> 16);
    const uint32_t up = (r >> 16) < (a & 0xFFFFu);
    return (uint16_t)(((a >> 16) + up) | ((b >> 31) << 15));
}

QP_HD float qp_bf16_to_f32(uint16_t c) { return qp_bits_f32((uint32_t)c << 16); }

/* ---- scale codecs ------------------------------------------------------------ */

#define QP_E4M3_MAX 448.0f
#define QP_E5M2_MAX 57344.0f
#define QP_E2M1_MAX 6.0f
#define QP_E2M3_MAX 7.5f
#define QP_E3M2_MAX 28.0f
#define QP_BF16_MAX 3.38953139e38f
#define QP_E8M0_NAN 0xFF
#define QP_E8M0_BIAS 127

/* E8M0 code from an unbiased exponent, clamped to [-127, 127]. */
QP_HD uint8_t qp_e8m0_from_exp(int e)
{
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return (uint8_t)(e + 127);
}

/* Rounded down to a power of two (the OCP rule's floor): x >= 2^127 -> 0xFE,
 * x < 2^-127 (and x <= 0) -> 0, NaN or Inf -> 0xFF. */
QP_HD uint8_t qp_f32_to_e8m0(float x)
{
    if (!qp_isfinitef(x)) return QP_E8M0_NAN;
    if (!(x > 0.0f)) return 0;
    return qp_e8m0_from_exp(qp_floor_log2(x));
}

/* Rounded up to a power of two (Transformer Engine's float_to_e8m0, the
 * hardware's cvt.rp.satfinite.ue8m0): x > 2^127 -> 0xFE, x <= 2^-127 (and
 * x <= 0) -> 0, NaN or Inf -> 0xFF. */
QP_HD uint8_t qp_f32_to_e8m0_ceil(float x)
{
    if (!qp_isfinitef(x)) return QP_E8M0_NAN;
    if (!(x > 0.0f)) return 0;
    const uint32_t b = qp_f32_bits(x);
    uint32_t e = b >> 23;
    const uint32_t m = b & 0x7FFFFFu;
    if (m && e != 0xFE && !(e == 0 && m <= 0x400000u)) e++;
    return (uint8_t)e;
}

QP_HD float qp_e8m0_to_f32(uint8_t c)
{
    if (c == QP_E8M0_NAN) return qp_nanf();
    return qp_pow2f((int)c - 127);
}

/* UE4M3 (NVFP4 block scale): |x| as E4M3, NaN -> 0x7F. */
QP_HD uint8_t qp_f32_to_ue4m3(float x)
{
    if (qp_isnanf(x)) return 0x7F;
    return qp_f32_to_e4m3(qp_fabsf(x));
}

QP_HD float qp_ue4m3_to_f32(uint8_t c)
{
    c &= 0x7F;
    if (c == 0x7F) return qp_nanf();
    if (c < 8) return (float)c * (1.0f / 512.0f);
    return qp_bits_f32(((uint32_t)c << 20) + (120u << 23));
}

/* ---- elements by enum ----------------------------------------------------------- */

/* The minifloat of an element codec (F32 and BF16 are not minifloats: ok = 0). */
QP_HD qp_minifloat qp_elem_minifloat(qp_elem e, int *ok)
{
    const qp_minifloat e4m3 = QP_MF_E4M3, e5m2 = QP_MF_E5M2, e2m1 = QP_MF_E2M1, e2m3 = QP_MF_E2M3, e3m2 = QP_MF_E3M2;
    const qp_minifloat none = {0, 0, 0u, 0u, 0, 0.0f};
    *ok = 1;
    switch (e) {
    case QP_ELEM_E4M3: return e4m3;
    case QP_ELEM_E5M2: return e5m2;
    case QP_ELEM_E2M1: return e2m1;
    case QP_ELEM_E2M3: return e2m3;
    case QP_ELEM_E3M2: return e3m2;
    case QP_ELEM_F32:
    case QP_ELEM_BF16:
    case QP_ELEM_COUNT: break;
    }
    *ok = 0;
    return none;
}

/* Encode v (already scaled) with element codec e; r is the SR word when sr. */
QP_HD uint32_t qp_encode_elem(qp_elem e, float v, int sr, uint32_t r)
{
    switch (e) {
    case QP_ELEM_F32: return qp_f32_bits(v);
    case QP_ELEM_BF16: return sr ? qp_f32_to_bf16_sr(v, r) : qp_f32_to_bf16(v);
    case QP_ELEM_E4M3: return sr ? qp_f32_to_e4m3_sr(v, r) : qp_f32_to_e4m3(v);
    case QP_ELEM_E5M2: return sr ? qp_f32_to_e5m2_sr(v, r) : qp_f32_to_e5m2(v);
    case QP_ELEM_E2M1: return sr ? qp_f32_to_e2m1_sr(v, r) : qp_f32_to_e2m1(v);
    case QP_ELEM_E2M3: return sr ? qp_f32_to_e2m3_sr(v, r) : qp_f32_to_e2m3(v);
    case QP_ELEM_E3M2: return sr ? qp_f32_to_e3m2_sr(v, r) : qp_f32_to_e3m2(v);
    case QP_ELEM_COUNT: break;
    }
    return 0; /* unreachable: formats are validated where they enter */
}

QP_HD float qp_decode_elem(qp_elem e, uint32_t code)
{
    switch (e) {
    case QP_ELEM_F32: return qp_bits_f32(code);
    case QP_ELEM_BF16: return qp_bf16_to_f32((uint16_t)code);
    case QP_ELEM_E4M3: return qp_e4m3_to_f32((uint8_t)code);
    case QP_ELEM_E5M2: return qp_e5m2_to_f32((uint8_t)code);
    case QP_ELEM_E2M1: return qp_e2m1_to_f32((uint8_t)code);
    case QP_ELEM_E2M3: return qp_e2m3_to_f32((uint8_t)code);
    case QP_ELEM_E3M2: return qp_e3m2_to_f32((uint8_t)code);
    case QP_ELEM_COUNT: break;
    }
    return qp_nanf();
}

/* The bits of a code that hold its magnitude. */
QP_HD uint32_t qp_elem_magnitude_mask(qp_elem e)
{
    switch (e) {
    case QP_ELEM_F32: return 0x7FFFFFFFu;
    case QP_ELEM_BF16: return 0x7FFFu;
    case QP_ELEM_E4M3:
    case QP_ELEM_E5M2: return 0x7Fu;
    case QP_ELEM_E2M1: return 0x7u;
    case QP_ELEM_E2M3:
    case QP_ELEM_E3M2: return 0x1Fu;
    case QP_ELEM_COUNT: break;
    }
    return 0;
}

/* Store code of element i into packed bytes zeroed beforehand: FP4 two to a
 * byte (even element in the low nibble, as cuda_fp4's __nv_fp4x2), FP8 and
 * FP6 one byte each (FP6 in the low six bits, as cuda_fp6's
 * __nv_fp6_storage_t), BF16 two bytes and FP32 four, little-endian. */
QP_HD void qp_store_code(qp_elem e, uint8_t *codes, int64_t i, uint32_t code)
{
    switch (e) {
    case QP_ELEM_E2M1: codes[i >> 1] = (uint8_t)(codes[i >> 1] | (code << (4 * (i & 1)))); return;
    case QP_ELEM_E4M3:
    case QP_ELEM_E5M2:
    case QP_ELEM_E2M3:
    case QP_ELEM_E3M2: codes[i] = (uint8_t)code; return;
    case QP_ELEM_BF16:
        codes[2 * i] = (uint8_t)code;
        codes[2 * i + 1] = (uint8_t)(code >> 8);
        return;
    case QP_ELEM_F32:
        codes[4 * i] = (uint8_t)code;
        codes[4 * i + 1] = (uint8_t)(code >> 8);
        codes[4 * i + 2] = (uint8_t)(code >> 16);
        codes[4 * i + 3] = (uint8_t)(code >> 24);
        return;
    case QP_ELEM_COUNT: break;
    }
}

QP_HD uint32_t qp_load_code(qp_elem e, const uint8_t *codes, int64_t i)
{
    switch (e) {
    case QP_ELEM_E2M1: return (codes[i >> 1] >> (4 * (i & 1))) & 0xFu;
    case QP_ELEM_E4M3:
    case QP_ELEM_E5M2:
    case QP_ELEM_E2M3:
    case QP_ELEM_E3M2: return codes[i];
    case QP_ELEM_BF16: return (uint32_t)codes[2 * i] | (uint32_t)codes[2 * i + 1] << 8;
    case QP_ELEM_F32:
        return (uint32_t)codes[4 * i] | (uint32_t)codes[4 * i + 1] << 8 | (uint32_t)codes[4 * i + 2] << 16 |
               (uint32_t)codes[4 * i + 3] << 24;
    case QP_ELEM_COUNT: break;
    }
    return 0;
}

/* ---- Philox-4x32-10 (Salmon et al., SC'11; cuRAND's philox) ---------------- */

/* The ten rounds' key words, two per round (the vector paths precompute them). */
QP_HD void qp_philox_keys(uint64_t seed, uint32_t keys[20])
{
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u)
        keys[2 * round] = k0, keys[2 * round + 1] = k1;
}

QP_HD void qp_philox4x32(uint64_t seed, uint64_t ctr_lo, uint64_t ctr_hi, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)ctr_lo, c1 = (uint32_t)(ctr_lo >> 32);
    uint32_t c2 = (uint32_t)ctr_hi, c3 = (uint32_t)(ctr_hi >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Raw word i of a stream: word i%4 of philox(seed, (i/4, stream)) (stochastic
 * rounding takes its bits through qp_sr_word). */
QP_HD uint32_t qp_rng_u32(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint32_t r[4];
    qp_philox4x32(seed, i >> 2, stream, r);
    const uint32_t k = (uint32_t)(i & 3); /* a select, not an indexed load: r stays in registers */
    return k == 0 ? r[0] : k == 1 ? r[1] : k == 2 ? r[2] : r[3];
}

/* ---- stochastic rounding's random bits ---------------------------------------- */

/* Random bits per element, as many as Blackwell's cvt.rs gives an element of
 * its one 32-bit rbits operand: 16 for BF16 (bf16x2), 8 for the FP8, FP6 and
 * FP4 codecs (e4m3x4 .. e2m1x4). FP32 is never rounded. */
QP_HD int qp_sr_bits(qp_elem e)
{
    switch (e) {
    case QP_ELEM_BF16: return 16;
    case QP_ELEM_F32:
    case QP_ELEM_E4M3:
    case QP_ELEM_E5M2:
    case QP_ELEM_E2M1:
    case QP_ELEM_E2M3:
    case QP_ELEM_E3M2:
    case QP_ELEM_COUNT: break;
    }
    return 8;
}

/* log2 of the elements one raw word serves (32 / bits). */
QP_HD int qp_sr_shift(int bits) { return bits == 16 ? 1 : 2; }

/* The SR word of an element from field `field` of its raw word: the field in
 * the top `bits` bits, the bit below them set. Against qp_sr_magnitude's
 * threshold floor(frac * 2^32), the element rounds up with probability
 * ceil(frac * 2^bits - 1/2) / 2^bits: frac to the nearest multiple of
 * 2^-bits (halves down), so at most 2^-(bits+1) of a step from frac, an exact
 * value (frac 0) never moves, and a frac within that of 1 always does. */
QP_HD uint32_t qp_sr_word_of(uint32_t raw, uint32_t field, int bits)
{
    return ((raw >> (bits * (int)field)) << (32 - bits)) | (1u << (31 - bits));
}

/* The SR word of element g of a stream whose codec takes `bits` random bits:
 * field g % (32/bits) of raw word g / (32/bits), qp_rng_u32's. */
QP_HD uint32_t qp_sr_word(uint64_t seed, uint64_t stream, uint64_t g, int bits)
{
    const int shift = qp_sr_shift(bits);
    return qp_sr_word_of(qp_rng_u32(seed, stream, g >> shift), (uint32_t)(g & ((1u << shift) - 1)), bits);
}

/* The raw words of consecutive indices, one Philox call per four. */
typedef struct {
    uint64_t seed, stream, ctr; /* ctr: the counter `w` holds (UINT64_MAX = none) */
    uint32_t w[4];
} qp_rng_run;

QP_HD void qp_rng_run_init(qp_rng_run *g, uint64_t seed, uint64_t stream)
{
    g->seed = seed;
    g->stream = stream;
    g->ctr = UINT64_MAX;
    g->w[0] = g->w[1] = g->w[2] = g->w[3] = 0;
}

QP_HD uint32_t qp_rng_run_word(qp_rng_run *g, uint64_t i)
{
    if ((i >> 2) != g->ctr) {
        g->ctr = i >> 2;
        qp_philox4x32(g->seed, g->ctr, g->stream, g->w);
    }
    const uint32_t k = (uint32_t)(i & 3);
    return k == 0 ? g->w[0] : k == 1 ? g->w[1] : k == 2 ? g->w[2] : g->w[3];
}

/* qp_sr_word of consecutive elements from a run of raw words. */
QP_HD uint32_t qp_rng_run_sr_word(qp_rng_run *g, uint64_t i, int bits)
{
    const int shift = qp_sr_shift(bits);
    return qp_sr_word_of(qp_rng_run_word(g, i >> shift), (uint32_t)(i & ((1u << shift) - 1)), bits);
}

/* ---- random Hadamard transform ---------------------------------------------- */

/* R = H_n diag(s) / sqrt(n), H_n the Sylvester Hadamard matrix, n = 16, 32,
 * 64 or 128; sign s_j = -1 where bit j%32 of word j/32 of philox(seed, 0, 0)
 * is set (n = 16 uses the low 16 bits of word 0, as the 16-point transform
 * always did). 1/sqrt(n) is the float nearest to it: exact for 16 and 64. */
QP_HD int qp_rht_size_ok(int n) { return n == 16 || n == 32 || n == 64 || n == 128; }

QP_HD float qp_rht_norm(int n)
{
    return n == 16 ? 0.25f : n == 32 ? 0.17677669529663688f : n == 64 ? 0.125f : 0.088388347648318441f;
}

QP_HD void qp_rht_sign_words(uint64_t seed, uint32_t w[4]) { qp_philox4x32(seed, 0, 0, w); }

QP_HD int qp_rht_sign_neg(const uint32_t w[4], int j) { return (int)((w[j >> 5] >> (j & 31)) & 1u); }

/* In place, the unnormalised fast Walsh-Hadamard butterflies (H_n symmetric). */
QP_HD void qp_fwht(float *v, int n)
{
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
}

/* One n-vector as a row: forward v <- v R = diag(s) H v / sqrt(n); inverse
 * v <- v R^T = H diag(s) v / sqrt(n). Multiplications by +-1 and +-1/sqrt(n),
 * in this order, are the definition every path reproduces. */
QP_HD void qp_rht_vec(float *v, int n, const uint32_t w[4], int inverse)
{
    const float norm = qp_rht_norm(n);
    if (inverse)
        for (int j = 0; j < n; j++) v[j] *= qp_rht_sign_neg(w, j) ? -1.0f : 1.0f;
    qp_fwht(v, n);
    for (int j = 0; j < n; j++) v[j] *= inverse ? norm : (qp_rht_sign_neg(w, j) ? -norm : norm);
}

/* Transformer Engine's 16-point RHT (transformer_engine/pytorch/
 * custom_recipes/reference_nvfp4.py at d0067d0: get_wgrad_sign_vector, lines
 * 335-340; _build_hadamard_matrix and _apply_rht, lines 396-448): each group
 * of 16 along the last dimension times diag(s) H16 / 4, with TE's fixed
 * signs s on H's rows (qprec's seeded R = H diag(s) / sqrt(n) puts them on
 * the columns). s = [+ + + - + - - - - - - + - + - -]: s_j = -1 where bit j of
 * QP_RHT_TE_NEG is set. TE forms the matrix M = diag(s) H * 0.25 and
 * multiplies x M, leaving the order of each output's 16 products
 * x_i * (+-0.25) to the BLAS; here each product is formed first, exactly as
 * TE forms it (x_i * +-0.25, rounded once, in the subnormal range too), and
 * the 16 are summed by the Sylvester butterflies (qp_fwht: pairs at distance
 * 1, 2, 4, 8). Wherever those sums are exact in float32 the result is TE's bit
 * for bit whatever order its BLAS takes; elsewhere the two can differ in the
 * last bit of a sum. */
#define QP_RHT_TE_NEG 0xD7E8u

QP_HD void qp_rht_te_vec(float v[16])
{
    for (int j = 0; j < 16; j++) v[j] = v[j] * (((QP_RHT_TE_NEG >> j) & 1u) ? -0.25f : 0.25f);
    qp_fwht(v, 16);
}

/* ---- the format table ------------------------------------------------------- */

typedef struct {
    qp_fmt fmt;
    const char *name;          /* CLI name, e.g. "nvfp4-2d" */
    qp_elem elem;
    int elem_bits;             /* storage bits per element (FP6: 8, one byte each) */
    float elem_max;            /* largest finite element magnitude */
    int elem_emax;             /* exponent of elem_max (the OCP MX rule) */
    int block_rows;            /* 1, or the side of 2D blocks */
    int block_cols;            /* elements per block along a row; 1 = no blocks */
    qp_block_scale block_scale; /* how block scales are stored */
    qp_scale_rule rule;        /* how they are computed */
    int scale_bytes;           /* bytes per stored block scale (0: none) */
    bool tensor_scale;         /* has an FP32 per-tensor scale */
    float tensor_range;        /* what that scale maps the tensor amax onto (0: none) */
    bool unscaled_exact;       /* qp_qdq's unscaled values are BF16 values (qp_qopts.unscaled) */
    const char *description;
    bool row_scaled;           /* the FP32 second-level scale is per row (TE's row_scaled_nvfp4),
                                  from each row's amax by qp_te_tensor_scale, not per tensor */
} qp_format_traits;

/* One row per format, in qp_fmt order: ROW(id, the other fields in declaration
 * order). Expanded into quant/'s qp_formats[] and into qp_format(), the same
 * rows as a switch the device can evaluate at compile time. */
#define QP_FORMAT_TABLE(ROW)                                                                                         \
    ROW(QP_FMT_FP32, .name = "fp32", .elem = QP_ELEM_F32, .elem_bits = 32, .elem_max = FLT_MAX, .elem_emax = 127,    \
        .block_rows = 1, .block_cols = 1, .block_scale = QP_SCALE_NONE, .rule = QP_RULE_NONE, .scale_bytes = 0,      \
        .tensor_scale = false, .tensor_range = 0.0f, .unscaled_exact = false,                                        \
        .description = "IEEE float32, unchanged (the reference)", .row_scaled = false)                               \
    ROW(QP_FMT_BF16, .name = "bf16", .elem = QP_ELEM_BF16, .elem_bits = 16, .elem_max = QP_BF16_MAX,                 \
        .elem_emax = 127, .block_rows = 1, .block_cols = 1, .block_scale = QP_SCALE_NONE, .rule = QP_RULE_NONE,      \
        .scale_bytes = 0, .tensor_scale = false, .tensor_range = 0.0f, .unscaled_exact = true,                       \
        .description = "bfloat16, round to nearest even", .row_scaled = false)                                       \
    ROW(QP_FMT_FP8_E4M3, .name = "fp8-e4m3", .elem = QP_ELEM_E4M3, .elem_bits = 8, .elem_max = QP_E4M3_MAX,          \
        .elem_emax = 8, .block_rows = 1, .block_cols = 1, .block_scale = QP_SCALE_TENSOR, .rule = QP_RULE_TENSOR,    \
        .scale_bytes = 0, .tensor_scale = true, .tensor_range = QP_E4M3_MAX, .unscaled_exact = true,                 \
        .description = "FP8 E4M3, one FP32 scale per tensor", .row_scaled = false)                                   \
    ROW(QP_FMT_FP8_E5M2, .name = "fp8-e5m2", .elem = QP_ELEM_E5M2, .elem_bits = 8, .elem_max = QP_E5M2_MAX,          \
        .elem_emax = 15, .block_rows = 1, .block_cols = 1, .block_scale = QP_SCALE_TENSOR, .rule = QP_RULE_TENSOR,   \
        .scale_bytes = 0, .tensor_scale = true, .tensor_range = QP_E5M2_MAX, .unscaled_exact = true,                 \
        .description = "FP8 E5M2, one FP32 scale per tensor", .row_scaled = false)                                   \
    ROW(QP_FMT_MXFP8, .name = "mxfp8", .elem = QP_ELEM_E4M3, .elem_bits = 8, .elem_max = QP_E4M3_MAX,                \
        .elem_emax = 8, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_FLOOR, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "OCP MXFP8: E4M3 elements, E8M0 scale per 32", .row_scaled = false)   \
    ROW(QP_FMT_MXFP8_E5M2, .name = "mxfp8-e5m2", .elem = QP_ELEM_E5M2, .elem_bits = 8, .elem_max = QP_E5M2_MAX,      \
        .elem_emax = 15, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                         \
        .rule = QP_RULE_MX_FLOOR, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "OCP MXFP8: E5M2 elements, E8M0 scale per 32", .row_scaled = false)   \
    ROW(QP_FMT_MXFP4, .name = "mxfp4", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,                \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_FLOOR, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "OCP MXFP4: E2M1 elements, E8M0 scale per 32", .row_scaled = false)   \
    ROW(QP_FMT_NVFP4, .name = "nvfp4", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,                \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,                      \
        .rule = QP_RULE_NVFP4, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * QP_E4M3_MAX,    \
        .unscaled_exact = true, .description = "NVFP4: E2M1 elements, E4M3 scale per 1x16, FP32 tensor scale", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_2D, .name = "nvfp4-2d", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,          \
        .elem_emax = 2, .block_rows = QK_NVFP4, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,               \
        .rule = QP_RULE_NVFP4, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * QP_E4M3_MAX,    \
        .unscaled_exact = true, .description = "NVFP4 with one E4M3 scale per 16x16 tile (weights)", .row_scaled = false) \
    ROW(QP_FMT_MXFP8_RCEIL, .name = "mxfp8-rceil", .elem = QP_ELEM_E4M3, .elem_bits = 8, .elem_max = QP_E4M3_MAX,    \
        .elem_emax = 8, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_RCEIL, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "MXFP8 with the E8M0 scale rounded up (TE, cuBLAS)", .row_scaled = false) \
    ROW(QP_FMT_MXFP4_RCEIL, .name = "mxfp4-rceil", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,    \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_RCEIL, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "MXFP4 with the E8M0 scale rounded up", .row_scaled = false)          \
    ROW(QP_FMT_FP8_BLOCK, .name = "fp8-block", .elem = QP_ELEM_E4M3, .elem_bits = 8, .elem_max = QP_E4M3_MAX,        \
        .elem_emax = 8, .block_rows = 1, .block_cols = QK_FP8_BLOCK, .block_scale = QP_SCALE_F32,                    \
        .rule = QP_RULE_F32_BLOCK, .scale_bytes = 4, .tensor_scale = false, .tensor_range = 0.0f,                    \
        .unscaled_exact = false, .description = "FP8 E4M3, FP32 scale per 1x128 tile (DeepSeek-V3 activations)", .row_scaled = false) \
    ROW(QP_FMT_FP8_BLOCK_2D, .name = "fp8-block-2d", .elem = QP_ELEM_E4M3, .elem_bits = 8, .elem_max = QP_E4M3_MAX,  \
        .elem_emax = 8, .block_rows = QK_FP8_BLOCK, .block_cols = QK_FP8_BLOCK, .block_scale = QP_SCALE_F32,         \
        .rule = QP_RULE_F32_BLOCK, .scale_bytes = 4, .tensor_scale = false, .tensor_range = 0.0f,                    \
        .unscaled_exact = false, .description = "FP8 E4M3, FP32 scale per 128x128 block (DeepSeek-V3 weights)", .row_scaled = false) \
    ROW(QP_FMT_FP8_BLOCK_POW2, .name = "fp8-block-pow2", .elem = QP_ELEM_E4M3, .elem_bits = 8,                       \
        .elem_max = QP_E4M3_MAX, .elem_emax = 8, .block_rows = 1, .block_cols = QK_FP8_BLOCK,                        \
        .block_scale = QP_SCALE_F32, .rule = QP_RULE_POW2_BLOCK, .scale_bytes = 4, .tensor_scale = false,            \
        .tensor_range = 0.0f, .unscaled_exact = true,                                                                \
        .description = "FP8 E4M3, power-of-two scale per 1x128 tile (TE Float8BlockScaling default)", .row_scaled = false) \
    ROW(QP_FMT_FP8_BLOCK_2D_POW2, .name = "fp8-block-2d-pow2", .elem = QP_ELEM_E4M3, .elem_bits = 8,                 \
        .elem_max = QP_E4M3_MAX, .elem_emax = 8, .block_rows = QK_FP8_BLOCK, .block_cols = QK_FP8_BLOCK,             \
        .block_scale = QP_SCALE_F32, .rule = QP_RULE_POW2_BLOCK, .scale_bytes = 4, .tensor_scale = false,            \
        .tensor_range = 0.0f, .unscaled_exact = true,                                                                \
        .description = "FP8 E4M3, power-of-two scale per 128x128 block (TE default, weights)", .row_scaled = false)  \
    ROW(QP_FMT_NVFP4_4O6, .name = "nvfp4-4o6", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,        \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,                      \
        .rule = QP_RULE_NVFP4_4O6, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * 256.0f,     \
        .unscaled_exact = true, .description = "NVFP4, each 1x16 block scaled to 6 or to 4 (Four Over Six)", .row_scaled = false) \
    ROW(QP_FMT_MXFP6_E2M3, .name = "mxfp6-e2m3", .elem = QP_ELEM_E2M3, .elem_bits = 8, .elem_max = QP_E2M3_MAX,      \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_FLOOR, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "OCP MXFP6: E2M3 elements (a byte each), E8M0 scale per 32", .row_scaled = false) \
    ROW(QP_FMT_MXFP6_E3M2, .name = "mxfp6-e3m2", .elem = QP_ELEM_E3M2, .elem_bits = 8, .elem_max = QP_E3M2_MAX,      \
        .elem_emax = 4, .block_rows = 1, .block_cols = QK_MX, .block_scale = QP_SCALE_E8M0,                          \
        .rule = QP_RULE_MX_FLOOR, .scale_bytes = 1, .tensor_scale = false, .tensor_range = 0.0f,                     \
        .unscaled_exact = true, .description = "OCP MXFP6: E3M2 elements (a byte each), E8M0 scale per 32", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_4O6_TE, .name = "nvfp4-4o6-te", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,  \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,                      \
        .rule = QP_RULE_NVFP4_4O6_TE, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * 256.0f,  \
        .unscaled_exact = true, .description = "Four Over Six as TE computes it: float32 MAE, 1x16", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_4O6_TE_MSE, .name = "nvfp4-4o6-te-mse", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX, \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,                      \
        .rule = QP_RULE_NVFP4_4O6_TE_MSE, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * 256.0f, \
        .unscaled_exact = true, .description = "Four Over Six as TE computes it: float32 MSE, 1x16", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_4O6_TE_2D, .name = "nvfp4-4o6-te-2d", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX, \
        .elem_emax = 2, .block_rows = QK_NVFP4, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,               \
        .rule = QP_RULE_NVFP4_4O6_TE, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * 256.0f,  \
        .unscaled_exact = true, .description = "Four Over Six as TE computes it: float32 MAE, 16x16", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_4O6_TE_MSE_2D, .name = "nvfp4-4o6-te-mse-2d", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX, \
        .elem_emax = 2, .block_rows = QK_NVFP4, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,               \
        .rule = QP_RULE_NVFP4_4O6_TE_MSE, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * 256.0f, \
        .unscaled_exact = true, .description = "Four Over Six as TE computes it: float32 MSE, 16x16", .row_scaled = false) \
    ROW(QP_FMT_NVFP4_ROW, .name = "nvfp4-row", .elem = QP_ELEM_E2M1, .elem_bits = 4, .elem_max = QP_E2M1_MAX,        \
        .elem_emax = 2, .block_rows = 1, .block_cols = QK_NVFP4, .block_scale = QP_SCALE_UE4M3,                      \
        .rule = QP_RULE_NVFP4, .scale_bytes = 1, .tensor_scale = true, .tensor_range = QP_E2M1_MAX * QP_E4M3_MAX,    \
        .unscaled_exact = false, .description = "NVFP4 with an FP32 second-level scale per row (TE row_scaled_nvfp4)", \
        .row_scaled = true)

#define QP_FORMAT_ROW_COUNT(id, ...) +1
QP_STATIC_ASSERT(0 QP_FORMAT_TABLE(QP_FORMAT_ROW_COUNT) == QP_FMT_COUNT, "QP_FORMAT_TABLE: one row per qp_fmt");

#define QP_FORMAT_ROW_CASE(id, ...)                                                                                  \
    case id: {                                                                                                       \
        const qp_format_traits row = {.fmt = id, __VA_ARGS__};                                                       \
        return row;                                                                                                  \
    }

/* The row of fmt; for a value outside qp_fmt, a row with fmt = QP_FMT_COUNT,
 * block_cols 0 and name "?" (callers validate formats where they enter). */
QP_HD qp_format_traits qp_format(int fmt)
{
    switch (fmt) { QP_FORMAT_TABLE(QP_FORMAT_ROW_CASE) }
    const qp_format_traits unknown = {.fmt = QP_FMT_COUNT, .name = "?", .elem = QP_ELEM_COUNT, .elem_bits = 0,
                                      .elem_max = 0.0f, .elem_emax = 0, .block_rows = 0, .block_cols = 0,
                                      .block_scale = QP_SCALE_COUNT, .rule = QP_RULE_COUNT, .scale_bytes = 0,
                                      .tensor_scale = false, .tensor_range = 0.0f, .unscaled_exact = false,
                                      .description = "unknown format", .row_scaled = false};
    return unknown;
}

QP_HD int qp_fmt_valid(int fmt) { return fmt >= 0 && fmt < QP_FMT_COUNT; }

/* ---- scale rules ------------------------------------------------------------ */

/* Transformer Engine's compute_scale_from_amax (epsilon 0): range/amax, 1 for
 * amax 0 or non-finite, FLT_MAX when the quotient overflows; pow2: the
 * exponent bits only (rounded down to a power of two). */
QP_HD float qp_scale_rule_from_amax(float range, float amax, int pow2)
{
    if (!(amax > 0.0f) || !qp_isfinitef(amax)) return 1.0f;
    float s = range / amax;
    if (!(s <= FLT_MAX)) s = FLT_MAX;
    if (s == 0.0f) s = 1.0f;
    if (pow2) s = qp_bits_f32(qp_f32_bits(s) & 0xFF800000u);
    return s;
}

/* Transformer Engine's NVFP4 second-level encode scale from an amax that
 * may be NaN or Inf (reference_nvfp4.py at d0067d0, lines 708-730, the
 * row-scaled amax at lines 881-888): S = range/amax in float32, at most
 * FLT_MAX (so FLT_MAX for amax 0), 1 where S is 0 (amax Inf), NaN for a NaN
 * amax (torch.max propagates it). quant/'s per-tensor NVFP4 rule
 * (qp_scale_rule_from_amax) takes the finite amax and gives 1 for 0; the
 * codes and block scales of a zero tensor are 0 under either. */
QP_HD float qp_te_tensor_scale(float range, float amax)
{
    if (qp_isnanf(amax)) return qp_nanf();
    float s = range / amax;
    if (!(s <= FLT_MAX)) s = FLT_MAX;
    return s == 0.0f ? 1.0f : s;
}

/* What a quantization of one tensor uses throughout: the per-tensor encode
 * and decode scales (1 without one), what decoded values are multiplied by
 * last (scale_inv, or 1 for unscaled output), and stochastic rounding with
 * its word map: element (r, c) draws word sr_offset + r*sr_stride + c
 * (sr_stride 0 meaning the tensor's cols). */
typedef struct {
    float scale, scale_inv, out_mul;
    int sr;
    uint64_t seed, stream;
    uint64_t sr_offset, sr_stride;
    float amax; /* the tensor's finite amax (TE's Four Over Six error decodes with it) */
} qp_tplan;

/* A block's scale: elements are multiplied by enc before the element codec,
 * codes by dec after decoding; code is what is stored (an E8M0 or UE4M3 byte,
 * or for QP_SCALE_F32 the bits of dec). */
#define QP_BLOCK_NAN 1  /* MX block holding NaN/Inf: every element decodes NaN */
#define QP_BLOCK_ZERO 2 /* block whose UE4M3 scale is 0: every element stores 0 */
typedef struct {
    float enc, dec;
    uint32_t code;
    uint8_t flag;
    uint8_t clamped_low, clamped_high; /* the rule's exponent/scale clamped (statistics) */
} qp_bscale;

/* NVFP4: ue4m3(t) as the block's scale under tensor scale S (inverse Sinv). */
QP_HD qp_bscale qp_nvfp4_scale(float t, float scale_inv)
{
    qp_bscale s;
    s.enc = s.dec = 0.0f;
    s.flag = 0;
    s.clamped_low = 0;
    s.clamped_high = t > QP_E4M3_MAX;
    s.code = qp_f32_to_ue4m3(t);
    const float d_b = qp_ue4m3_to_f32((uint8_t)s.code);
    if (d_b == 0.0f) {
        s.flag = QP_BLOCK_ZERO;
        s.clamped_low = 1;
        return s;
    }
    const float e = 1.0f / (d_b * scale_inv);
    s.enc = e <= FLT_MAX ? e : FLT_MAX; /* fminf(e, FLT_MAX), NaN included */
    s.dec = d_b;
    return s;
}

/* Four Over Six: the squared error of a block of n elements under candidate
 * scale s, as the decoded values y = fl(fl(e2m1 * d_b) * Sinv) (the values a
 * reader gets), in double, in element order; non-finite x do not count. */
QP_HD double qp_4o6_block_error(const float *x, int n, qp_bscale s, float scale_inv)
{
    double err = 0.0;
    for (int i = 0; i < n; i++) {
        const float xv = x[i];
        if (!qp_isfinitef(xv)) continue;
        float y = 0.0f;
        if (!(s.flag & QP_BLOCK_ZERO)) y = qp_e2m1_to_f32(qp_f32_to_e2m1(xv * s.enc)) * s.dec * scale_inv;
        const double d = (double)xv - (double)y;
        err += d * d;
    }
    return err;
}

/* ---- Four Over Six as Transformer Engine computes it ---------------------------
 * (transformer_engine/pytorch/custom_recipes/reference_nvfp4.py at d0067d0,
 * _quantize_blockwise_4over6_reference, lines 524-648; the tensor scale,
 * lines 712-730.) Everything in float32, in this order:
 *   S = 6*256 / amax (the row's tensor_range; FLT_MAX at most), Sinv = 1/S
 *   base = (amax_b / 6) * S;  d6 = ue4m3(base), d4 = ue4m3(base * 1.5)
 *   e_k = min(1 / (d_k * Sinv), FLT_MAX)   (FLT_MAX also when d_k is 0)
 *   codes_k = e2m1(x * e_k), TE's bins (qp_te_e2m1)
 *   err_k = sum over the block's elements, in element order, of
 *           |((q * d_k) * amax) / (6*256) - x|   (MAE, TE's default)
 *           or its square (MSE), q the decoded E2M1 value
 *   map to 4 only when err_4 < err_6 (ties: 6).
 * The error decodes with amax / 1536, not with Sinv: on a tensor of
 * magnitude 1e-30 the squared differences (~1e-62) underflow float32 to 0,
 * both candidates' errors are 0 and the tie picks 6 (at 1e30 they overflow
 * to Inf, the same tie); docs/formats.md sets this beside the authors' rule
 * (nvfp4-4o6, double, decoded with Sinv). TE's tensor amax takes NaN and Inf
 * in: quant/'s driver passes them as p->amax (qp_quant.c te_nonfinite_amax),
 * and the rule below makes every scale NaN, or takes an Inf block's amax as
 * Inf and map-to-6 everywhere. */

/* An element code as TE's reference stores it (cast_to_fp4x2, lines 49-71):
 * the value clamped to [-6, 6] and binned; NaN falls in no bin and -0.0 in
 * the bin of +0, so both store 0. Elsewhere the bins are qp_f32_to_e2m1's
 * round-to-nearest-even. */
QP_HD uint32_t qp_te_e2m1(float v)
{
    if (qp_isnanf(v) || v == 0.0f) return 0;
    return qp_f32_to_e2m1(v);
}

QP_HD int qp_rule_is_4o6_te(qp_scale_rule r) { return r == QP_RULE_NVFP4_4O6_TE || r == QP_RULE_NVFP4_4O6_TE_MSE; }

/* TE's error of one row of n elements of a block under candidate scale s
 * (decoded d = s.dec, 0 for a zero scale, whose elements TE encodes with
 * FLT_MAX), in float32, element order; non-finite x do not count. */
QP_HD float qp_4o6_te_row_error(const float *x, int n, qp_bscale s, float amax, float denom, int mse)
{
    const float enc = (s.flag & QP_BLOCK_ZERO) ? FLT_MAX : s.enc;
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
        const float xv = x[i];
        if (!qp_isfinitef(xv)) continue;
        const float q = qp_e2m1_to_f32((uint8_t)qp_te_e2m1(xv * enc));
        const float qd = q * s.dec;
        const float qa = qd * amax;
        const float diff = qa / denom - xv;
        const float e = mse ? diff * diff : qp_fabsf(diff);
        err = err + e;
    }
    return err;
}

/* TE's two candidates of a block with finite amax amax_b (lines 551-566). */
QP_HD void qp_4o6_te_candidates(float amax_b, const qp_tplan *p, float elem_max, qp_bscale *s4, qp_bscale *s6)
{
    const float base = (amax_b / elem_max) * p->scale;
    *s6 = qp_nvfp4_scale(base, p->scale_inv);
    *s4 = qp_nvfp4_scale(base * 1.5f, p->scale_inv);
}

/* A 16x16 tile's error from its rows' errors (rows past the tensor: 0), in
 * the tree order of TE's warp reduction (_sum_4over6_2d_error, lines 513-522). */
QP_HD float qp_4o6_te_tile_error(float e[16])
{
    for (int h = 8; h >= 1; h >>= 1)
        for (int i = 0; i < h; i++) e[i] = e[i] + e[i + h];
    return e[0];
}

/* The block-scale rule of format f for a block whose finite amax is amax_b
 * (nonfinite: it holds NaN/Inf), under the tensor plan p. x/n: the block's
 * elements, read by the Four Over Six rule only (which is 1D). */
QP_HD qp_bscale qp_block_rule(const qp_format_traits *f, const qp_tplan *p, float amax_b, int nonfinite,
                               const float *x, int n)
{
    qp_bscale s;
    s.enc = s.dec = 0.0f;
    s.code = 0;
    s.flag = 0;
    s.clamped_low = s.clamped_high = 0;
    switch (f->rule) {
    case QP_RULE_MX_FLOOR:
    case QP_RULE_MX_RCEIL: {
        if (nonfinite) {
            s.code = QP_E8M0_NAN;
            s.flag = QP_BLOCK_NAN;
            s.dec = qp_nanf();
            return s;
        }
        if (f->rule == QP_RULE_MX_FLOOR) {
            const int e = amax_b > 0.0f ? qp_floor_log2(amax_b) - f->elem_emax : -127;
            s.clamped_low = amax_b > 0.0f && e < -127;
            s.clamped_high = e > 127;
            s.code = qp_e8m0_from_exp(e);
        } else {
            /* Transformer Engine's order: amax times the float reciprocal of
             * the element maximum, then rounded up to a power of two */
            const float v = amax_b * (1.0f / f->elem_max);
            s.clamped_low = amax_b > 0.0f && v < qp_pow2f(-127);
            s.code = qp_f32_to_e8m0_ceil(v);
        }
        s.enc = qp_pow2f(127 - (int)s.code);
        s.dec = qp_pow2f((int)s.code - 127);
        return s;
    }
    case QP_RULE_NVFP4: return qp_nvfp4_scale(amax_b * (p->scale * (1.0f / f->elem_max)), p->scale_inv);
    case QP_RULE_NVFP4_4O6: {
        /* candidate 6 is the NVFP4 rule; candidate 4 is its value before
         * rounding times 1.5 (the authors' scale_expansion_factor); 4 wins
         * only with a strictly smaller error */
        const float t6 = amax_b * (p->scale * (1.0f / f->elem_max));
        const qp_bscale s6 = qp_nvfp4_scale(t6, p->scale_inv), s4 = qp_nvfp4_scale(t6 * 1.5f, p->scale_inv);
        if (!x) return s6;
        return qp_4o6_block_error(x, n, s4, p->scale_inv) < qp_4o6_block_error(x, n, s6, p->scale_inv) ? s4 : s6;
    }
    case QP_RULE_NVFP4_4O6_TE:
    case QP_RULE_NVFP4_4O6_TE_MSE: {
        /* 1D here; a 16x16 tile's choice needs all its rows (x NULL: the
         * driver decides, qp_4o6_te_tile_error) */
        qp_bscale s4, s6;
        if (qp_isnanf(p->amax)) { /* a NaN in the tensor: TE's every scale is NaN, every code 0 */
            s.code = 0x7F;
            s.flag = QP_BLOCK_NAN;
            s.enc = s.dec = qp_nanf();
            return s;
        }
        /* an Inf in the tensor (S = 1): its blocks' amax is Inf, and every
         * error is Inf or NaN (they decode with amax = Inf): map-to-6 */
        qp_4o6_te_candidates(nonfinite ? qp_bits_f32(0x7F800000u) : amax_b, p, f->elem_max, &s4, &s6);
        if (!x || !qp_isfinitef(p->amax)) return s6;
        const int mse = f->rule == QP_RULE_NVFP4_4O6_TE_MSE;
        return qp_4o6_te_row_error(x, n, s4, p->amax, f->tensor_range, mse) <
                       qp_4o6_te_row_error(x, n, s6, p->amax, f->tensor_range, mse)
                   ? s4
                   : s6;
    }
    case QP_RULE_F32_BLOCK:
    case QP_RULE_POW2_BLOCK: {
        const float q = f->elem_max / amax_b;
        s.clamped_low = amax_b > 0.0f && !(q <= FLT_MAX);
        s.enc = qp_scale_rule_from_amax(f->elem_max, amax_b, f->rule == QP_RULE_POW2_BLOCK);
        s.dec = 1.0f / s.enc;
        s.code = qp_f32_bits(s.dec);
        return s;
    }
    case QP_RULE_NONE:
    case QP_RULE_TENSOR:
    case QP_RULE_COUNT: break;
    }
    s.enc = s.dec = 1.0f; /* formats without block scales never ask */
    return s;
}

/* The stored block scale decoded (what qp_dequantize multiplies by). */
QP_HD float qp_block_scale_decode(qp_block_scale bs, const uint8_t *stored)
{
    switch (bs) {
    case QP_SCALE_E8M0: return qp_e8m0_to_f32(stored[0]);
    case QP_SCALE_UE4M3: return qp_ue4m3_to_f32(stored[0]);
    case QP_SCALE_F32:
        return qp_bits_f32((uint32_t)stored[0] | (uint32_t)stored[1] << 8 | (uint32_t)stored[2] << 16 |
                           (uint32_t)stored[3] << 24);
    case QP_SCALE_NONE:
    case QP_SCALE_TENSOR:
    case QP_SCALE_COUNT: break;
    }
    return 1.0f;
}

/* ---- one element ---------------------------------------------------------- */

typedef struct {
    uint32_t n_nonfinite, n_nonzero, n_sat, n_flushed;
} qp_ecounts;

/* Quantize element x of a block with scale bs (NULL: a per-tensor format,
 * p->scale) and SR word r: its code, its decoded value, and the counts
 * (qp_qstats: saturated = scaled magnitude above elem_max, or BF16 overflow;
 * flushed = a finite non-zero input that became 0). */
QP_HD uint32_t qp_quantize_elem(const qp_format_traits *f, const qp_tplan *p, const qp_bscale *bs, float x,
                                uint32_t r, float *y, qp_ecounts *cnt)
{
    const int finite = qp_isfinitef(x);
    if (!finite) cnt->n_nonfinite++;
    else if (x != 0.0f) cnt->n_nonzero++;
    const uint8_t flag = bs ? bs->flag : 0;
    if (flag & QP_BLOCK_NAN) {
        *y = qp_nanf();
        return 0;
    }
    const int te = qp_rule_is_4o6_te(f->rule);
    if (flag & QP_BLOCK_ZERO) {
        /* a UE4M3 scale that rounded to 0: the encode scale is min(1/0,
         * FLT_MAX), so the element is stored as x * FLT_MAX encoded (as
         * Transformer Engine's kernels and reference store it; the -te rows
         * by TE's reference bins) and decodes to 0 under the zero scale */
        *y = 0.0f;
        if (finite && x != 0.0f) cnt->n_flushed++;
        return te ? qp_te_e2m1(x * FLT_MAX) : qp_encode_elem(f->elem, x * FLT_MAX, p->sr, r);
    }
    const float v = x * (bs ? bs->enc : p->scale);
    const uint32_t code = te && (qp_isnanf(v) || v == 0.0f) ? 0 : qp_encode_elem(f->elem, v, p->sr, r);
    if (finite) {
        const uint32_t mag = code & qp_elem_magnitude_mask(f->elem);
        if (f->elem == QP_ELEM_BF16 ? mag == 0x7F80u : qp_fabsf(v) > f->elem_max) cnt->n_sat++;
        if (x != 0.0f && mag == 0) cnt->n_flushed++;
    }
    *y = qp_decode_elem(f->elem, code) * (bs ? bs->dec : 1.0f) * p->out_mul;
    return code;
}

/* What a per-tensor quantization by round-to-nearest counts, kept by a
 * producer that writes its output quantized itself (the trainer's row
 * kernels: qp_linear_takes_rounded): finite inputs (nonzero, the largest
 * magnitude's bits), NaN or Inf inputs, finite inputs that saturated or
 * quantized to zero, as qp_qstats counts them (qp_round_tally_stats). */
typedef struct {
    int64_t nonfinite, nonzero, sat, flushed;
    uint32_t amax_bits;
} qp_round_tally;

/* x quantized by format f (no blocks, round to nearest) at tensor scale
 * `scale` (1 for none): qp_quantize_elem's unscaled value, counted in t. */
QP_HD float qp_round_elem_tally(const qp_format_traits *f, float scale, float x, qp_round_tally *t)
{
    const qp_tplan p = {scale, 1.0f / scale, 1.0f, 0, 0, 0, 0, 0, 0.0f};
    qp_ecounts ec = {0, 0, 0, 0};
    float y;
    (void)qp_quantize_elem(f, &p, NULL, x, 0, &y, &ec);
    const uint32_t a = qp_f32_bits(x) & 0x7FFFFFFFu;
    if (a < 0x7F800000u && a > t->amax_bits) t->amax_bits = a;
    t->nonfinite += ec.n_nonfinite, t->nonzero += ec.n_nonzero, t->sat += ec.n_sat, t->flushed += ec.n_flushed;
    return y;
}

#ifdef __cplusplus
}
#endif
#endif
