/* qp_format.c — scalar element and scale codecs (see qp_format.h).
 *
 * Encoding works on the float's bits. Normal results: add the round-to-nearest-
 * even bias to the bits and shift the dropped mantissa bits out. Subnormal
 * results: add a power-of-two "magic" constant whose ulp equals the target's
 * subnormal spacing, so the FPU's own round-to-nearest-even does the rounding.
 * The vector paths (qp_simd_avx512.c) use exactly the same arithmetic. */
#include "qp_format.h"

#include <math.h>

typedef struct {
    int mbits;        /* mantissa bits of the target */
    int bias;         /* exponent bias of the target */
    uint32_t maxcode; /* magnitude code of the largest finite value */
} minifloat;

static const minifloat E4M3 = {3, 7, 0x7E};
static const minifloat E5M2 = {2, 15, 0x7B};
static const minifloat E2M1 = {1, 1, 0x7};

/* Magnitude code of |x| (x not NaN), round to nearest even, saturating. */
static inline uint32_t encode_magnitude(uint32_t abits, minifloat f)
{
    const uint32_t minnorm_bits = (uint32_t)(127 - f.bias + 1) << 23;
    uint32_t code;
    if (abits < minnorm_bits) {
        const float magic = qp_bits_f32((uint32_t)(127 + 1 - f.bias - f.mbits + 23) << 23);
        const float t = qp_bits_f32(abits) + magic;
        code = qp_f32_bits(t) - qp_f32_bits(magic);
    } else {
        const int drop = 23 - f.mbits;
        const uint32_t rounded = abits + ((1u << (drop - 1)) - 1) + ((abits >> drop) & 1u);
        code = (rounded >> drop) - ((uint32_t)(127 - f.bias) << f.mbits);
    }
    return code < f.maxcode ? code : f.maxcode;
}

uint8_t qp_f32_to_e4m3(float x)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7F;
    return (uint8_t)(encode_magnitude(a, E4M3) | ((b >> 31) << 7));
}

uint8_t qp_f32_to_e5m2(float x)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7F;
    return (uint8_t)(encode_magnitude(a, E5M2) | ((b >> 31) << 7));
}

uint8_t qp_f32_to_e2m1(float x)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7;
    return (uint8_t)(encode_magnitude(a, E2M1) | ((b >> 31) << 3));
}

uint16_t qp_f32_to_bf16(float x)
{
    const uint32_t b = qp_f32_bits(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

static inline float decode_minifloat(uint32_t code, minifloat f, int sign_shift)
{
    const uint32_t mag = code & ((1u << sign_shift) - 1);
    const uint32_t e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1);
    float v = e == 0 ? ldexpf((float)m, 1 - f.bias - f.mbits)
                     : ldexpf((float)((1u << f.mbits) | m), (int)e - f.bias - f.mbits);
    return (code >> sign_shift) & 1u ? -v : v;
}

float qp_e4m3_to_f32(uint8_t c)
{
    if ((c & 0x7F) == 0x7F) return NAN;
    return decode_minifloat(c, E4M3, 7);
}

float qp_e5m2_to_f32(uint8_t c)
{
    if ((c & 0x7F) > 0x7C) return NAN;
    if ((c & 0x7F) == 0x7C) return c & 0x80 ? -INFINITY : INFINITY;
    return decode_minifloat(c, E5M2, 7);
}

float qp_e2m1_to_f32(uint8_t c) { return decode_minifloat(c & 0xF, E2M1, 3); }

float qp_bf16_to_f32(uint16_t c) { return qp_bits_f32((uint32_t)c << 16); }

int qp_floor_log2(float x)
{
    const uint32_t a = qp_f32_bits(x) & 0x7FFFFFFFu;
    const int e = (int)(a >> 23);
    if (e) return e - 127;
    return (31 - __builtin_clz(a)) - 149; /* subnormal: position of the top bit */
}

/* Stochastic rounding of a finite magnitude ax >= 0 onto the grid of a format
 * with mbits mantissa bits and minimum normal exponent emin; saturates at maxval. */
static float sr_magnitude(float ax, int mbits, int emin, float maxval, uint32_t r)
{
    if (ax >= maxval) return maxval;
    if (ax == 0.0f) return 0.0f;
    int e = qp_floor_log2(ax);
    if (e < emin) e = emin;
    const float ulp = ldexpf(1.0f, e - mbits);
    const float q = ax / ulp; /* exact: division by a power of two */
    float lo = floorf(q);
    const uint32_t threshold = (uint32_t)((double)(q - lo) * 4294967296.0);
    if (r < threshold) lo += 1.0f;
    const float v = lo * ulp;
    return v < maxval ? v : maxval;
}

static inline uint32_t sign_of(float x) { return qp_f32_bits(x) >> 31; }

uint8_t qp_f32_to_e4m3_sr(float x, uint32_t r)
{
    if (isnan(x)) return 0x7F;
    const float v = sr_magnitude(fabsf(x), 3, -6, QP_E4M3_MAX, r);
    return (uint8_t)(qp_f32_to_e4m3(v) | (sign_of(x) << 7));
}

uint8_t qp_f32_to_e5m2_sr(float x, uint32_t r)
{
    if (isnan(x)) return 0x7F;
    const float v = sr_magnitude(fabsf(x), 2, -14, QP_E5M2_MAX, r);
    return (uint8_t)(qp_f32_to_e5m2(v) | (sign_of(x) << 7));
}

uint8_t qp_f32_to_e2m1_sr(float x, uint32_t r)
{
    if (isnan(x)) return 0x7;
    const float v = sr_magnitude(fabsf(x), 1, 0, QP_E2M1_MAX, r);
    return (uint8_t)(qp_f32_to_e2m1(v) | (sign_of(x) << 3));
}

uint16_t qp_f32_to_bf16_sr(float x, uint32_t r)
{
    const uint32_t b = qp_f32_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7FFF;
    if (a == 0x7F800000u) return (uint16_t)(b >> 16);
    /* Round the magnitude up with probability (low 16 bits) / 2^16: exact. */
    const uint32_t up = (r >> 16) < (a & 0xFFFFu);
    return (uint16_t)(((a >> 16) + up) | ((b >> 31) << 15));
}

uint8_t qp_e8m0_from_exp(int e)
{
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return (uint8_t)(e + 127);
}

uint8_t qp_f32_to_e8m0(float x)
{
    if (!isfinite(x)) return QP_E8M0_NAN;
    if (!(x > 0.0f)) return 0;
    return qp_e8m0_from_exp(qp_floor_log2(x));
}

float qp_e8m0_to_f32(uint8_t c)
{
    if (c == QP_E8M0_NAN) return NAN;
    return ldexpf(1.0f, (int)c - 127);
}

uint8_t qp_f32_to_ue4m3(float x)
{
    if (isnan(x)) return 0x7F;
    return qp_f32_to_e4m3(fabsf(x));
}

float qp_ue4m3_to_f32(uint8_t c)
{
    /* Hot in the NVFP4 block-scale rule: decode from the bits, no libm. */
    c &= 0x7F;
    if (c == 0x7F) return NAN;
    if (c < 8) return (float)c * (1.0f / 512.0f);
    return qp_bits_f32(((uint32_t)c << 20) + (120u << 23));
}
