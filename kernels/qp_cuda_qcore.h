/* qp_cuda_qcore.h — the element and block rules of quant/, as host+device
 * inline functions: the same source compiles with gcc (CPU tests) and nvcc
 * (the kernels of qp_cuda_quant*.cu).
 *
 * Owns nothing new: every function here must give quant/'s bits (qp_format.c,
 * qp_quant.c, qp_quant_ref.c, qp_rng.c, qp_hadamard.c, qp_scaling.c) for the
 * same input. tests/kernels/test_qcore.c drives these functions block by block
 * over whole tensors and compares with qp_quantize / qp_qdq / qp_rht16, which
 * is what verifies the device code without a GPU.
 *
 * Only a C-compatible subset is used: no libm beyond floorf, float bit casts
 * through memcpy (host) or __float_as_uint (device), no FMA-contractible
 * expressions (a*b+c never appears; the .cu files are also built with
 * -fmad=false), no fast-math.
 *
 * Indexing (as quant/): a tensor is rows x cols row-major; element (r, c) has
 * global index g = sr_offset + r*sr_stride + c (qp_qopts; stride 0 meaning
 * cols, so the default is r*cols + c, unpadded), and stochastic rounding of it
 * uses word g%4 of philox(seed, counter = (g/4, stream)). Padding elements of
 * a partial block are never read, count nowhere and are stored as code 0. */
#ifndef QP_CUDA_QCORE_H
#define QP_CUDA_QCORE_H

#include <float.h>
#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#include "qp_quant.h"

#ifdef __CUDACC__
#define QC_FN __host__ __device__ __forceinline__
#else
#define QC_FN static inline
#endif
#ifdef __CUDA_ARCH__
#define QC_UNROLL _Pragma("unroll")
#else
#define QC_UNROLL
#endif

/* ---- bits ---------------------------------------------------------------- */

QC_FN uint32_t qc_bits(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

QC_FN float qc_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

QC_FN int qc_clz(uint32_t a)
{
#ifdef __CUDA_ARCH__
    return __clz((int)a);
#else
    return __builtin_clz(a);
#endif
}

#define QC_NAN_BITS 0x7FC00000u
QC_FN float qc_nan(void) { return qc_float(QC_NAN_BITS); }
QC_FN int qc_isnan(float x) { return (qc_bits(x) & 0x7FFFFFFFu) > 0x7F800000u; }
QC_FN int qc_isfinite(float x) { return (qc_bits(x) & 0x7FFFFFFFu) < 0x7F800000u; }
QC_FN float qc_fabs(float x) { return qc_float(qc_bits(x) & 0x7FFFFFFFu); }

/* 2^e for -149 <= e <= 127, exact. */
QC_FN float qc_pow2(int e)
{
    return e >= -126 ? qc_float((uint32_t)(e + 127) << 23) : qc_float(1u << (e + 149));
}

/* floor(log2(|x|)) for finite non-zero x (subnormals included). */
QC_FN int qc_floor_log2(float x)
{
    const uint32_t a = qc_bits(x) & 0x7FFFFFFFu;
    const int e = (int)(a >> 23);
    if (e) return e - 127;
    return (31 - qc_clz(a)) - 149;
}

/* ---- element codecs (qp_format.c) ---------------------------------------- */

/* Magnitude code of |x| (abits, not NaN), RNE, saturating at maxcode. */
QC_FN uint32_t qc_encode_magnitude(uint32_t abits, int mbits, int bias, uint32_t maxcode)
{
    const uint32_t minnorm_bits = (uint32_t)(127 - bias + 1) << 23;
    uint32_t code;
    if (abits < minnorm_bits) {
        /* subnormal target: the FPU's RNE addition rounds at the target spacing */
        const float magic = qc_float((uint32_t)(127 + 1 - bias - mbits + 23) << 23);
        const float t = qc_float(abits) + magic;
        code = qc_bits(t) - qc_bits(magic);
    } else {
        const int drop = 23 - mbits;
        const uint32_t rounded = abits + ((1u << (drop - 1)) - 1) + ((abits >> drop) & 1u);
        code = (rounded >> drop) - ((uint32_t)(127 - bias) << mbits);
    }
    return code < maxcode ? code : maxcode;
}

QC_FN uint8_t qc_f32_to_e4m3(float x)
{
    const uint32_t b = qc_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7F;
    return (uint8_t)(qc_encode_magnitude(a, 3, 7, 0x7E) | ((b >> 31) << 7));
}

QC_FN uint8_t qc_f32_to_e5m2(float x)
{
    const uint32_t b = qc_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7F;
    return (uint8_t)(qc_encode_magnitude(a, 2, 15, 0x7B) | ((b >> 31) << 7));
}

QC_FN uint8_t qc_f32_to_e2m1(float x)
{
    const uint32_t b = qc_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7;
    return (uint8_t)(qc_encode_magnitude(a, 1, 1, 0x7) | ((b >> 31) << 3));
}

QC_FN uint16_t qc_f32_to_bf16(float x)
{
    const uint32_t b = qc_bits(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

QC_FN float qc_decode_minifloat(uint32_t code, int mbits, int bias, int sign_shift)
{
    const uint32_t mag = code & ((1u << sign_shift) - 1);
    const uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1);
    /* (small integer) * 2^k: exact */
    const float v = e == 0 ? (float)m * qc_pow2(1 - bias - mbits)
                           : (float)((1u << mbits) | m) * qc_pow2((int)e - bias - mbits);
    return (code >> sign_shift) & 1u ? -v : v;
}

QC_FN float qc_e4m3_to_f32(uint8_t c)
{
    if ((c & 0x7F) == 0x7F) return qc_nan();
    return qc_decode_minifloat(c, 3, 7, 7);
}

QC_FN float qc_e5m2_to_f32(uint8_t c)
{
    if ((c & 0x7F) > 0x7C) return qc_nan();
    if ((c & 0x7F) == 0x7C) return qc_float(c & 0x80 ? 0xFF800000u : 0x7F800000u);
    return qc_decode_minifloat(c, 2, 15, 7);
}

QC_FN float qc_e2m1_to_f32(uint8_t c) { return qc_decode_minifloat(c & 0xFu, 1, 1, 3); }

QC_FN float qc_bf16_to_f32(uint16_t c) { return qc_float((uint32_t)c << 16); }

/* UE4M3 (NVFP4 block scale): |x| as E4M3, NaN -> 0x7F. */
QC_FN uint8_t qc_f32_to_ue4m3(float x)
{
    if (qc_isnan(x)) return 0x7F;
    return qc_f32_to_e4m3(qc_fabs(x));
}

QC_FN float qc_ue4m3_to_f32(uint8_t c)
{
    c &= 0x7F;
    if (c == 0x7F) return qc_nan();
    if (c < 8) return (float)c * (1.0f / 512.0f);
    return qc_float(((uint32_t)c << 20) + (120u << 23));
}

QC_FN uint8_t qc_e8m0_from_exp(int e)
{
    if (e < -127) e = -127;
    if (e > 127) e = 127;
    return (uint8_t)(e + 127);
}

QC_FN float qc_e8m0_to_f32(uint8_t c)
{
    if (c == 0xFF) return qc_nan();
    return qc_pow2((int)c - 127);
}

#define QC_E4M3_MAX_F 448.0f
#define QC_E5M2_MAX_F 57344.0f
#define QC_E2M1_MAX_F 6.0f

/* Stochastic rounding of a finite magnitude ax >= 0 (qp_format.c's
 * sr_magnitude; (q - lo) * 2^32 is exact in float and below 2^32). */
QC_FN float qc_sr_magnitude(float ax, int mbits, int emin, float maxval, uint32_t r)
{
    if (ax >= maxval) return maxval;
    if (ax == 0.0f) return 0.0f;
    int e = qc_floor_log2(ax);
    if (e < emin) e = emin;
    const float ulp = qc_pow2(e - mbits);
    const float q = ax / ulp;
    float lo = floorf(q);
    const uint32_t threshold = (uint32_t)((q - lo) * 4294967296.0f);
    if (r < threshold) lo += 1.0f;
    const float v = lo * ulp;
    return v < maxval ? v : maxval;
}

QC_FN uint8_t qc_f32_to_e4m3_sr(float x, uint32_t r)
{
    if (qc_isnan(x)) return 0x7F;
    const float v = qc_sr_magnitude(qc_fabs(x), 3, -6, QC_E4M3_MAX_F, r);
    return (uint8_t)(qc_f32_to_e4m3(v) | ((qc_bits(x) >> 31) << 7));
}

QC_FN uint8_t qc_f32_to_e5m2_sr(float x, uint32_t r)
{
    if (qc_isnan(x)) return 0x7F;
    const float v = qc_sr_magnitude(qc_fabs(x), 2, -14, QC_E5M2_MAX_F, r);
    return (uint8_t)(qc_f32_to_e5m2(v) | ((qc_bits(x) >> 31) << 7));
}

QC_FN uint8_t qc_f32_to_e2m1_sr(float x, uint32_t r)
{
    if (qc_isnan(x)) return 0x7;
    const float v = qc_sr_magnitude(qc_fabs(x), 1, 0, QC_E2M1_MAX_F, r);
    return (uint8_t)(qc_f32_to_e2m1(v) | ((qc_bits(x) >> 31) << 3));
}

QC_FN uint16_t qc_f32_to_bf16_sr(float x, uint32_t r)
{
    const uint32_t b = qc_bits(x), a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7FFF;
    if (a == 0x7F800000u) return (uint16_t)(b >> 16);
    const uint32_t up = (r >> 16) < (a & 0xFFFFu);
    return (uint16_t)(((a >> 16) + up) | ((b >> 31) << 15));
}

/* ---- Philox-4x32-10 (qp_rng.c) ------------------------------------------- */

QC_FN void qc_philox4x32(uint64_t seed, uint64_t ctr_lo, uint64_t ctr_hi, uint32_t out[4])
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

/* The SR words of consecutive global indices, one Philox call per 4. */
typedef struct {
    uint64_t seed, stream, ctr; /* ctr: the counter `w` holds (UINT64_MAX = none) */
    uint32_t w[4];
} qc_rng;

QC_FN void qc_rng_init(qc_rng *g, uint64_t seed, uint64_t stream)
{
    g->seed = seed;
    g->stream = stream;
    g->ctr = UINT64_MAX;
    g->w[0] = g->w[1] = g->w[2] = g->w[3] = 0;
}

QC_FN uint32_t qc_rng_word(qc_rng *g, uint64_t i)
{
    if ((i >> 2) != g->ctr) {
        g->ctr = i >> 2;
        qc_philox4x32(g->seed, g->ctr, g->stream, g->w);
    }
    const uint32_t k = (uint32_t)(i & 3);  /* a select, not an indexed load: w stays in registers */
    return k == 0 ? g->w[0] : k == 1 ? g->w[1] : k == 2 ? g->w[2] : g->w[3];
}

/* ---- formats (qp_formats[] as plain values, usable on the device) -------- */

typedef struct {
    int fmt, elem, elem_bits;
    float elem_max;
    int elem_emax, block_rows, block_cols, block_scale, tensor_scale;
} qc_fmt_info;

/* The row of qp_formats[] for fmt (test_qcore checks they agree). */
QC_FN qc_fmt_info qc_format(int fmt)
{
    qc_fmt_info f;
    f.fmt = fmt;
    f.block_rows = 1;
    f.block_cols = 1;
    f.block_scale = QP_SCALE_NONE;
    f.tensor_scale = 0;
    switch (fmt) {
    case QP_FMT_BF16: f.elem = QP_ELEM_BF16, f.elem_bits = 16, f.elem_max = 3.38953139e38f, f.elem_emax = 127; break;
    case QP_FMT_FP8_E4M3:
        f.elem = QP_ELEM_E4M3, f.elem_bits = 8, f.elem_max = 448.0f, f.elem_emax = 8;
        f.block_scale = QP_SCALE_TENSOR, f.tensor_scale = 1;
        break;
    case QP_FMT_FP8_E5M2:
        f.elem = QP_ELEM_E5M2, f.elem_bits = 8, f.elem_max = 57344.0f, f.elem_emax = 15;
        f.block_scale = QP_SCALE_TENSOR, f.tensor_scale = 1;
        break;
    case QP_FMT_MXFP8:
        f.elem = QP_ELEM_E4M3, f.elem_bits = 8, f.elem_max = 448.0f, f.elem_emax = 8;
        f.block_cols = QK_MX, f.block_scale = QP_SCALE_E8M0;
        break;
    case QP_FMT_MXFP8_E5M2:
        f.elem = QP_ELEM_E5M2, f.elem_bits = 8, f.elem_max = 57344.0f, f.elem_emax = 15;
        f.block_cols = QK_MX, f.block_scale = QP_SCALE_E8M0;
        break;
    case QP_FMT_MXFP4:
        f.elem = QP_ELEM_E2M1, f.elem_bits = 4, f.elem_max = 6.0f, f.elem_emax = 2;
        f.block_cols = QK_MX, f.block_scale = QP_SCALE_E8M0;
        break;
    case QP_FMT_NVFP4:
    case QP_FMT_NVFP4_2D:
        f.elem = QP_ELEM_E2M1, f.elem_bits = 4, f.elem_max = 6.0f, f.elem_emax = 2;
        f.block_cols = QK_NVFP4, f.block_scale = QP_SCALE_UE4M3, f.tensor_scale = 1;
        f.block_rows = fmt == QP_FMT_NVFP4_2D ? QK_NVFP4 : 1;
        break;
    default: /* QP_FMT_FP32 */
        f.elem = QP_ELEM_F32, f.elem_bits = 32, f.elem_max = FLT_MAX, f.elem_emax = 127;
        break;
    }
    return f;
}

/* What a per-tensor scale maps amax onto (qp_tensor_scale_range). */
QC_FN float qc_tensor_scale_range(const qc_fmt_info *f)
{
    if (!f->tensor_scale) return 0.0f;
    return f->block_scale == QP_SCALE_UE4M3 ? 6.0f * 448.0f : f->elem_max;
}

/* qp_scale_from_amax(range, amax, 0): range/amax, 1 for amax 0 or non-finite,
 * FLT_MAX when the quotient overflows. */
QC_FN float qc_scale_from_amax(float range, float amax)
{
    if (!(amax > 0.0f) || !qc_isfinite(amax)) return 1.0f;
    float s = range / amax;
    if (!(s <= FLT_MAX)) s = FLT_MAX;
    if (s == 0.0f) s = 1.0f;
    return s;
}

/* The plan of one quantization (qp_plan): per-tensor encode/decode scale (1
 * without one), what decoded values are multiplied by last, SR. */
typedef struct {
    float scale, scale_inv, out_mul;
    int sr;
    uint64_t seed, stream;
    uint64_t sr_offset, sr_stride; /* qp_qopts' (stride 0: cols); qc_make_plan sets 0, 0 */
} qc_plan;

/* The tensor scale as quant/'s driver picks it: a given scale (> 0) wins,
 * else current scaling from amax; formats without one use 1. */
QC_FN qc_plan qc_make_plan(const qc_fmt_info *f, float given_scale, float amax, int unscaled, int sr, uint64_t seed,
                           uint64_t stream)
{
    qc_plan p;
    p.scale = 1.0f;
    p.scale_inv = 1.0f;
    if (f->tensor_scale) {
        p.scale = given_scale > 0.0f ? given_scale : qc_scale_from_amax(qc_tensor_scale_range(f), amax);
        p.scale_inv = 1.0f / p.scale;
    }
    p.out_mul = unscaled ? 1.0f : p.scale_inv;
    p.sr = sr;
    p.seed = seed;
    p.stream = stream;
    p.sr_offset = 0;
    p.sr_stride = 0;
    return p;
}

/* qp_qopts.sr_offset / sr_row_stride into the plan (as quant/'s driver). */
QC_FN void qc_plan_sr_map(qc_plan *p, int64_t sr_offset, int64_t sr_row_stride)
{
    p->sr_offset = (uint64_t)sr_offset;
    p->sr_stride = sr_row_stride > 0 ? (uint64_t)sr_row_stride : 0;
}

/* The SR global index of element (r, c) of a tensor with cols columns. */
QC_FN uint64_t qc_sr_gidx(const qc_plan *p, int64_t cols, int64_t r, int64_t c)
{
    return p->sr_offset + (uint64_t)r * (p->sr_stride ? p->sr_stride : (uint64_t)cols) + (uint64_t)c;
}

/* ---- block rules (qp_quant.c) -------------------------------------------- */

#define QC_BLOCK_NAN 1  /* MX block holding NaN/Inf: every element decodes NaN */
#define QC_BLOCK_ZERO 2 /* NVFP4 block whose scale is 0: every element stores 0 */

typedef struct {
    float enc, dec; /* elements are multiplied by enc before the codec, codes by dec after */
    uint8_t code, flag;
} qc_bscale;

/* Finite amax and a non-finite flag of x[0..n). The loops of this file run
 * to a bound that is a compile-time constant in the kernels (npad, the block
 * size) and skip i >= n, so that nvcc unrolls them and keeps the per-thread
 * arrays in registers; x[i] is never read for i >= n. */
QC_FN void qc_block_amax_pad(const float *x, int n, int npad, float *amax, int *nonfinite)
{
    float m = 0.0f;
    int nf = 0;
    QC_UNROLL
    for (int i = 0; i < npad; i++) {
        if (i >= n) break;
        const float a = qc_fabs(x[i]);
        if (!qc_isfinite(a)) nf = 1;
        else if (a > m) m = a;
    }
    *amax = m;
    *nonfinite = nf;
}

QC_FN void qc_block_amax(const float *x, int n, float *amax, int *nonfinite) { qc_block_amax_pad(x, n, n, amax, nonfinite); }

/* The block-scale rule: OCP MX (E8M0) or NVFP4 (UE4M3, Transformer Engine's
 * float order). nonfinite only matters for MX. */
QC_FN qc_bscale qc_block_scale(const qc_fmt_info *f, const qc_plan *p, float amax_b, int nonfinite)
{
    qc_bscale s;
    s.enc = s.dec = 0.0f;
    s.code = 0;
    s.flag = 0;
    if (f->block_scale == QP_SCALE_E8M0) {
        if (nonfinite) {
            s.code = 0xFF;
            s.flag = QC_BLOCK_NAN;
            s.dec = qc_nan();
            return s;
        }
        const int e = amax_b > 0.0f ? qc_floor_log2(amax_b) - f->elem_emax : -127;
        s.code = qc_e8m0_from_exp(e);
        s.enc = qc_pow2(127 - (int)s.code);
        s.dec = qc_pow2((int)s.code - 127);
    } else { /* QP_SCALE_UE4M3 */
        const float d = amax_b * (p->scale * (1.0f / 6.0f));
        s.code = qc_f32_to_ue4m3(d);
        const float d_b = qc_ue4m3_to_f32(s.code);
        if (d_b == 0.0f) {
            s.flag = QC_BLOCK_ZERO;
            return s;
        }
        const float e = 1.0f / (d_b * p->scale_inv);
        s.enc = e <= FLT_MAX ? e : FLT_MAX; /* fminf(e, FLT_MAX), NaN included */
        s.dec = d_b;
    }
    return s;
}

/* Counts as qp_qstats keeps them, over real elements. */
typedef struct {
    uint32_t n_nonfinite, n_nonzero, n_sat, n_flushed;
} qc_counts;

QC_FN void qc_counts_zero(qc_counts *c) { c->n_nonfinite = c->n_nonzero = c->n_sat = c->n_flushed = 0; }

QC_FN uint32_t qc_encode_elem(int elem, float v, int sr, uint32_t r)
{
    switch (elem) {
    case QP_ELEM_BF16: return sr ? qc_f32_to_bf16_sr(v, r) : qc_f32_to_bf16(v);
    case QP_ELEM_E4M3: return sr ? qc_f32_to_e4m3_sr(v, r) : qc_f32_to_e4m3(v);
    case QP_ELEM_E5M2: return sr ? qc_f32_to_e5m2_sr(v, r) : qc_f32_to_e5m2(v);
    case QP_ELEM_E2M1: return sr ? qc_f32_to_e2m1_sr(v, r) : qc_f32_to_e2m1(v);
    default: return qc_bits(v);
    }
}

QC_FN float qc_decode_elem(int elem, uint32_t code)
{
    switch (elem) {
    case QP_ELEM_BF16: return qc_bf16_to_f32((uint16_t)code);
    case QP_ELEM_E4M3: return qc_e4m3_to_f32((uint8_t)code);
    case QP_ELEM_E5M2: return qc_e5m2_to_f32((uint8_t)code);
    case QP_ELEM_E2M1: return qc_e2m1_to_f32((uint8_t)code);
    default: return qc_float(code);
    }
}

QC_FN uint32_t qc_magnitude_mask(int elem)
{
    switch (elem) {
    case QP_ELEM_F32: return 0x7FFFFFFFu;
    case QP_ELEM_BF16: return 0x7FFFu;
    case QP_ELEM_E2M1: return 0x7u;
    default: return 0x7Fu;
    }
}

/* Store code of element i into packed bytes (4-bit: OR into a zeroed byte). */
QC_FN void qc_store_code(int elem_bits, uint8_t *codes, int i, uint32_t code)
{
    switch (elem_bits) {
    case 4: codes[i >> 1] = (uint8_t)(codes[i >> 1] | (code << (4 * (i & 1)))); break;
    case 8: codes[i] = (uint8_t)code; break;
    case 16: codes[2 * i] = (uint8_t)code, codes[2 * i + 1] = (uint8_t)(code >> 8); break;
    default:
        codes[4 * i] = (uint8_t)code, codes[4 * i + 1] = (uint8_t)(code >> 8);
        codes[4 * i + 2] = (uint8_t)(code >> 16), codes[4 * i + 3] = (uint8_t)(code >> 24);
        break;
    }
}

/* Encode n elements x[0..n) whose global indices are gidx0.. (one row, one
 * block, or part of a per-tensor row), as qp_quant_ref.c's encode_row. bs is
 * the block's scale, or NULL for per-tensor formats (p->scale). codes (may be
 * NULL) receives npad >= n elements, packed from byte 0 (codes of the padding
 * are 0; for 4-bit elements codes must start at an even element); y (may be
 * NULL) receives the n decoded values. */
QC_FN void qc_encode_block(const qc_fmt_info *f, const qc_plan *p, const float *x, int n, int npad,
                           const qc_bscale *bs, uint64_t gidx0, uint8_t *codes, float *y, qc_counts *cnt)
{
    const uint32_t mag = qc_magnitude_mask(f->elem);
    const uint8_t flag = bs ? bs->flag : 0;
    const float enc = bs ? bs->enc : p->scale, dec = bs ? bs->dec : 1.0f;
    qc_rng g;
    qc_rng_init(&g, p->seed, p->stream);
    if (codes) {
        const int nbytes = (npad * f->elem_bits + 7) / 8;
        QC_UNROLL
        for (int i = 0; i < nbytes; i++) codes[i] = 0;
    }
    QC_UNROLL
    for (int i = 0; i < npad; i++) {
        if (i >= n) break;
        const float xv = x[i];
        const int finite = qc_isfinite(xv);
        if (!finite) cnt->n_nonfinite++;
        else if (xv != 0.0f) cnt->n_nonzero++;
        uint32_t code = 0;
        float yv;
        if (flag & QC_BLOCK_NAN) {
            yv = qc_nan();
        } else if (flag & QC_BLOCK_ZERO) {
            yv = 0.0f;
            if (finite && xv != 0.0f) cnt->n_flushed++;
        } else {
            const float v = xv * enc;
            const uint32_t r = p->sr ? qc_rng_word(&g, gidx0 + (uint64_t)i) : 0;
            code = qc_encode_elem(f->elem, v, p->sr, r);
            if (finite) {
                if (f->elem == QP_ELEM_BF16 ? (code & mag) == 0x7F80u : qc_fabs(v) > f->elem_max) cnt->n_sat++;
                if (xv != 0.0f && (code & mag) == 0) cnt->n_flushed++;
            }
            yv = qc_decode_elem(f->elem, code) * dec * p->out_mul;
        }
        if (codes) qc_store_code(f->elem_bits, codes, i, code);
        if (y) y[i] = yv;
    }
}

/* One 1D block (n <= block_cols real elements of a row; MX 32, NVFP4 16):
 * block amax, scale rule, encode. codes receives the whole block
 * (block_cols elements, padding 0); *scale_code the stored scale. Returns the
 * block's finite amax. */
QC_FN float qc_quantize_block(const qc_fmt_info *f, const qc_plan *p, const float *x, int n, uint64_t gidx0,
                              uint8_t *codes, uint8_t *scale_code, float *y, qc_counts *cnt)
{
    float amax;
    int nf;
    qc_block_amax_pad(x, n, f->block_cols, &amax, &nf);
    const qc_bscale bs = qc_block_scale(f, p, amax, f->block_scale == QP_SCALE_E8M0 && nf);
    if (scale_code) *scale_code = bs.code;
    qc_encode_block(f, p, x, n, f->block_cols, &bs, gidx0, codes, y, cnt);
    return amax;
}

/* One NVFP4-2D tile: nr x nc real elements (<= 16 x 16) at x with row stride
 * ld (elements); the tile's first element has global index gidx0 and row r of
 * the tile starts at gidx0 + r*g_ld (g_ld: the SR row stride, the tensor's
 * cols by default). codes row r at codes + r*code_ld (8 bytes written per
 * row), y row r at y + r*ld. */
QC_FN float qc_quantize_tile16(const qc_fmt_info *f, const qc_plan *p, const float *x, int64_t ld, int nr, int nc,
                               uint64_t gidx0, uint64_t g_ld, uint8_t *codes, int64_t code_ld, uint8_t *scale_code,
                               float *y, qc_counts *cnt)
{
    float amax = 0.0f;
    for (int r = 0; r < nr; r++) {
        float a;
        int nf;
        qc_block_amax(x + r * ld, nc, &a, &nf);
        if (a > amax) amax = a;
    }
    const qc_bscale bs = qc_block_scale(f, p, amax, 0);
    if (scale_code) *scale_code = bs.code;
    for (int r = 0; r < nr; r++)
        qc_encode_block(f, p, x + r * ld, nc, QK_NVFP4, &bs, gidx0 + (uint64_t)r * g_ld,
                        codes ? codes + r * code_ld : NULL, y ? y + r * ld : NULL, cnt);
    return amax;
}

/* ---- work split: which elements, codes and scale one thread owns ------- */

/* What one kernel thread (t, its global index) works on: m real elements at
 * x + x_off, all in row `row` from column `col` (the SR global index of the
 * first is qc_sr_gidx(p, cols, row, col)), the codes from byte code_off, the
 * block scale at scale_idx (-1: none). The kernels and test_qcore's driver
 * both walk tensors through these functions. */
typedef struct {
    int64_t x_off, code_off, scale_idx;
    int64_t row, col;
    int m;
    int lane; /* nvfp4-2d: the row within the tile */
} qc_job;

/* Per-tensor formats: thread t owns chunk t % cpr of row t / cpr, cpr =
 * ceil(cols / 16) chunks of 16 elements per row (a chunk never crosses a row,
 * so a row stride of SR indices other than cols splits nothing; with cols a
 * multiple of 16 this is the flat tensor in chunks of 16). */
#define QC_TENSOR_CHUNK 16
QC_FN int64_t qc_tensor_jobs(int64_t rows, int64_t cols)
{
    return rows * ((cols + QC_TENSOR_CHUNK - 1) / QC_TENSOR_CHUNK);
}

QC_FN int qc_tensor_job(const qc_fmt_info *f, int64_t rows, int64_t cols, int64_t t, qc_job *j)
{
    if (cols <= 0 || t >= qc_tensor_jobs(rows, cols)) return 0;
    const int64_t cpr = (cols + QC_TENSOR_CHUNK - 1) / QC_TENSOR_CHUNK;
    const int64_t r = t / cpr, c0 = (t % cpr) * QC_TENSOR_CHUNK;
    j->row = r;
    j->col = c0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < QC_TENSOR_CHUNK ? cols - c0 : QC_TENSOR_CHUNK);
    j->code_off = j->x_off * (f->elem_bits / 8);
    j->scale_idx = -1;
    j->lane = 0;
    return 1;
}

/* 1D block formats: thread t owns block t % scale_cols of row t / scale_cols. */
QC_FN int qc_block_job(const qc_fmt_info *f, int64_t rows, int64_t cols, int64_t row_bytes, int64_t scale_cols,
                       int64_t t, qc_job *j)
{
    if (t >= rows * scale_cols) return 0;
    const int64_t r = t / scale_cols, b = t % scale_cols, c0 = b * f->block_cols;
    j->row = r;
    j->col = c0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < f->block_cols ? cols - c0 : f->block_cols);
    j->code_off = r * row_bytes + c0 * f->elem_bits / 8;
    j->scale_idx = t;
    j->lane = 0;
    return 1;
}

/* NVFP4-2D: threads 16k .. 16k+15 own tile k (row-major over scale_rows x
 * scale_cols), one tile row each; returns 0 for a lane past the last row or
 * tile (it still takes part in the tile's amax reduction, with amax 0). */
QC_FN int qc_tile_job(int64_t rows, int64_t cols, int64_t row_bytes, int64_t scale_rows, int64_t scale_cols,
                      int64_t t, qc_job *j)
{
    const int64_t tile = t >> 4, tr = tile / scale_cols, tc = tile % scale_cols;
    const int lane = (int)(t & 15);
    const int64_t r = tr * QK_NVFP4 + lane, c0 = tc * QK_NVFP4;
    j->lane = lane;
    j->scale_idx = tile;
    j->row = r;
    j->col = c0;
    if (tile >= scale_rows * scale_cols || r >= rows) return 0;
    j->x_off = r * cols + c0;
    j->m = (int)(cols - c0 < QK_NVFP4 ? cols - c0 : QK_NVFP4);
    j->code_off = r * row_bytes + c0 / 2;
    return 1;
}

/* ---- 16-point RHT (qp_hadamard.c) ---------------------------------------- */

/* The sign mask: bit i set means s_i = -1. */
QC_FN uint32_t qc_rht_sign_mask(uint64_t seed)
{
    uint32_t r[4];
    qc_philox4x32(seed, 0, 0, r);
    return r[0] & 0xFFFFu;
}

/* v <- diag(s) H16 v / 4 for one 16-vector (x <- x R as a row vector). */
QC_FN void qc_rht16_vec(float v[16], uint32_t sign_mask)
{
    for (int h = 1; h < 16; h <<= 1)
        for (int i = 0; i < 16; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
    for (int j = 0; j < 16; j++) v[j] *= (sign_mask >> j) & 1u ? -0.25f : 0.25f;
}

#endif
