/* qp_simd_avx512.c — AVX-512 element loops, bit-identical to qp_quant_ref.c.
 *
 * Encoding, sixteen lanes at a time, in float arithmetic the FPU rounds:
 * |v| is clamped to the element maximum (saturation), then rounded to the
 * element grid by adding and subtracting 2^(e + 23 - mbits), e the larger of
 * |v|'s exponent and the codec's minimum normal exponent, so the sum's ulp is
 * the grid spacing there and the FPU's round-to-nearest-even is the codec's
 * (normal and subnormal codes alike); the rounded value r is the decoded
 * value, and r * 2^(bias - 127) has the code in its bits (exact: r is on the
 * grid). Stochastic rounding computes q = |v| / ulp, floor and fraction the
 * same way (qp_core.h's qp_sr_magnitude), its words from a sixteen-lane
 * Philox-4x32-10 (64 words per call, two runs cached so any row offset costs
 * no extra call). Non-finite inputs and the NaN/zero blocks of the block
 * rules take a fix-up branch that vectors of finite values never enter.
 * BF16 rounds with vcvtne2ps2bf16 where the CPU has AVX512_BF16 (the same
 * round-to-nearest-even for normal numbers; vectors holding a NaN, an
 * infinity or a subnormal use the integer form, which matches qp_core.h's
 * 0x7FFF NaN and its subnormal rounding).
 *
 * Block amax: raw |x| maxima, sixteen blocks reduced at once; a block whose
 * maximum is not finite is redone over its finite values. Block scales:
 * the OCP MX and round-up MX rules, NVFP4's, the FP8 blocks' FP32 and
 * power-of-two rules and Four Over Six sixteen blocks at a time (Four Over
 * Six computes both candidates' errors with one block per lane, the elements
 * in order, in double, as qp_core.h does). Codes are packed 64 at a time and
 * written whole (padding included); with qp_plan.nt (large tensors) aligned
 * full lines are streamed past the caches.
 *
 * Compiled with target attributes and chosen at run time, so the library
 * runs anywhere. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_quant_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "qp_simd_registers.h"

#define QP_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq"
#define AVX512 __attribute__((target(QP_AVX512_TARGET), always_inline)) static inline
#define AVX512_FN __attribute__((target(QP_AVX512_TARGET))) static
#define AVX512BF16_FN __attribute__((target(QP_AVX512_TARGET ",avx512bf16"))) static
#define AVX512BF16 __attribute__((target(QP_AVX512_TARGET ",avx512bf16"), always_inline)) static inline

#define I32(v) _mm512_set1_epi32((int)(uint32_t)(v))
#define F32(v) _mm512_set1_ps(v)
#define ABS_BITS 0x7FFFFFFFu
#define INF_BITS 0x7F800000u
#define EXP_BITS 0x7F800000u
/* vfpclassps categories */
#define FPC_NAN 0x81u       /* QNaN, SNaN */
#define FPC_NONFINITE 0x99u /* QNaN, SNaN, +Inf, -Inf */
#define FPC_ODD_BF16 0xB9u  /* non-finite or subnormal */
#define XOR3 0x96           /* vpternlog: a ^ b ^ c */
#define OR_AND 0xF8         /* vpternlog: a | (b & c) */

static int have_bf16; /* AVX512_BF16 (set by qp_kernels_avx512) */

static __mmask16 tail_mask(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

static int popc(uint32_t m) { return __builtin_popcount(m); }

/* ---- element codecs ---------------------------------------------------------- */

/* Round the clamped magnitudes a (float bits, 0 <= a <= max) to the grid of
 * f, to nearest even, in one float addition: a + M with M = 2^(e + 23 - mbits)
 * + G ulp, e = max(exponent of a, emin), ulp = 2^(e - mbits) the grid spacing
 * there. The sum's mantissa then counts ulps: n (the rounded significand, the
 * FPU rounding a to even n since G = (e - emin) << mbits is even) plus G,
 * which is exactly the magnitude code: ((e - emin + 1) << mbits) + (n - 2^mbits)
 * for normal results, n for subnormal ones. No operation has a subnormal
 * result (those are slow on some CPUs). Returns the codes; *r (when not
 * NULL) gets the rounded magnitude, sum - M. */
AVX512 __m512i rn_code(__m512i a, qp_minifloat f, __m512 *r)
{
    const __m512i emin = I32((uint32_t)(128 - f.bias) << 23);
    const __m512i e = _mm512_max_epu32(_mm512_and_si512(a, I32(EXP_BITS)), emin);
    const __m512i m0 = _mm512_add_epi32(e, I32((uint32_t)(23 - f.mbits) << 23));
    const __m512i m = _mm512_add_epi32(m0, _mm512_srli_epi32(_mm512_sub_epi32(e, emin), 23 - f.mbits));
    const __m512 t = _mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(m));
    if (r) *r = _mm512_sub_ps(t, _mm512_castsi512_ps(m));
    return _mm512_sub_epi32(_mm512_castps_si512(t), m0);
}

/* qp_sr_magnitude for clamped magnitudes a with words r: up to the next grid
 * value with probability floor(frac * 2^32) / 2^32. Returns the magnitude's
 * code (lo + G: lo the rounded significand count in ulps, G = (e - emin) <<
 * mbits as in rn_code) and, when r_out is not NULL, the magnitude. No
 * min(v, max) is needed: a <= max, and max is the last grid value of its
 * binade for every codec (E4M3's 480 is NaN's code, beyond the clamp). */
AVX512 __m512i sr_code(__m512i a, qp_minifloat f, __m512i r, __m512 *r_out)
{
    const __m512i emin = I32((uint32_t)(128 - f.bias) << 23);
    const __m512i e = _mm512_max_epu32(_mm512_and_si512(a, I32(EXP_BITS)), emin);
    const __m512 inv_ulp = _mm512_castsi512_ps(_mm512_sub_epi32(I32((uint32_t)(254 + f.mbits) << 23), e));
    const __m512 q = _mm512_mul_ps(_mm512_castsi512_ps(a), inv_ulp);
    const __m512 lo = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512i thr = _mm512_cvttps_epu32(_mm512_mul_ps(_mm512_sub_ps(q, lo), F32(4294967296.0f)));
    const __mmask16 up = _mm512_cmplt_epu32_mask(r, thr);
    const __m512 n = _mm512_mask_add_ps(lo, up, lo, F32(1.0f));
    if (r_out) *r_out = _mm512_mul_ps(n, _mm512_castsi512_ps(_mm512_sub_epi32(e, I32((uint32_t)f.mbits << 23))));
    return _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_srli_epi32(_mm512_sub_epi32(e, emin), 23 - f.mbits));
}

/* qp_encode_minifloat of any v (NaN and Inf included), for the few block-scale codes. */
AVX512 __m512i encode_any(__m512 v, qp_minifloat f)
{
    const __m512i b = _mm512_castps_si512(v), av = _mm512_and_si512(b, I32(ABS_BITS));
    const __m512i a = _mm512_min_epu32(av, _mm512_castps_si512(F32(f.max)));
    __m512i code = _mm512_ternarylogic_epi32(rn_code(a, f, NULL), _mm512_srli_epi32(b, 31 - f.sign_shift),
                                             I32(1u << f.sign_shift), OR_AND);
    return _mm512_mask_blend_epi32(_mm512_cmpgt_epu32_mask(av, I32(INF_BITS)), code, I32(f.nan_code));
}

/* The decoded value of codes that are not NaN codes. */
AVX512 __m512 decode_minifloat(__m512i code, qp_minifloat f)
{
    const __m512i mag = _mm512_and_si512(code, I32((1u << f.sign_shift) - 1));
    const __mmask16 sub = _mm512_cmplt_epu32_mask(mag, I32(1u << f.mbits));
    const __m512i normbits = _mm512_add_epi32(_mm512_slli_epi32(mag, 23 - f.mbits), I32((uint32_t)(127 - f.bias) << 23));
    const __m512 subv = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_castsi512_ps(I32((uint32_t)(127 + 1 - f.bias - f.mbits) << 23)));
    const __m512 val = _mm512_mask_blend_ps(sub, _mm512_castsi512_ps(normbits), subv);
    const __m512i sign = _mm512_slli_epi32(_mm512_srli_epi32(code, f.sign_shift), 31);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(val), sign));
}

/* The 64 floats QP_READ_AHEAD after x[i] (qp_quant_internal.h). */
AVX512 void read_ahead64(const float *x, int64_t i, int64_t n) { qp_read_ahead(x, i, n, 64); }

/* ---- amax ---------------------------------------------------------------------- */

/* Max |x| bits over finite values of x[0..n). */
AVX512 uint32_t finite_absmax(const float *x, int64_t n)
{
    __m512i m = _mm512_setzero_si512();
    for (int64_t i = 0; i < n; i += 16) {
        const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(tail_mask(n - i), x + i), I32(ABS_BITS));
        m = _mm512_mask_max_epu32(m, _mm512_cmplt_epu32_mask(a, I32(INF_BITS)), m, a);
    }
    return _mm512_reduce_max_epu32(m);
}

AVX512_FN float v_amax(const float *x, int64_t n)
{
    /* the raw |x| maximum; only a tensor holding NaN or Inf needs the finite one */
    const __m512i absm = I32(ABS_BITS);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        read_ahead64(x, i, n);
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(x + i), absm));
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512(x + i + 16), absm));
        m2 = _mm512_max_epu32(m2, _mm512_and_si512(_mm512_loadu_si512(x + i + 32), absm));
        m3 = _mm512_max_epu32(m3, _mm512_and_si512(_mm512_loadu_si512(x + i + 48), absm));
    }
    for (; i < n; i += 16) m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_maskz_loadu_epi32(tail_mask(n - i), x + i), absm));
    const uint32_t m = _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3)));
    return qp_bits_f32(m < INF_BITS ? m : finite_absmax(x, n));
}

/* Max over each of 16 vectors, as one vector (lane i = max of v[i]): a
 * transposing reduction, 4 levels of two-source permutes. */
AVX512 __m512i hmax16(__m512i v[16])
{
    static const int32_t lo[4][16] = {
        {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
        {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
        {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29},
        {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}};
    static const int32_t hi[4][16] = {
        {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
        {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31},
        {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31},
        {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}};
    for (int level = 0, n = 16; level < 4; level++, n /= 2) {
        const __m512i il = _mm512_loadu_si512(lo[level]), ih = _mm512_loadu_si512(hi[level]);
        for (int i = 0; i < n / 2; i++)
            v[i] = _mm512_max_epu32(_mm512_permutex2var_epi32(v[2 * i], il, v[2 * i + 1]),
                                    _mm512_permutex2var_epi32(v[2 * i], ih, v[2 * i + 1]));
    }
    return v[0];
}

/* Finite amax of one block of n elements and whether it holds NaN/Inf. */
AVX512 float block_amax_one(const float *xb, int64_t n, uint8_t *nonfinite)
{
    __m512i m = _mm512_setzero_si512();
    __mmask16 nf = 0;
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 k = tail_mask(n - c);
        const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, xb + c), I32(ABS_BITS));
        const __mmask16 fin = _mm512_cmplt_epu32_mask(a, I32(INF_BITS));
        m = _mm512_mask_max_epu32(m, fin, m, a);
        nf |= (__mmask16)(k & ~fin);
    }
    *nonfinite = nf != 0;
    return qp_bits_f32(_mm512_reduce_max_epu32(m));
}

/* Block amaxes of the whole groups of sixteen blocks of BC elements (BC a
 * compile-time 16, 32 or 128): raw |x| maxima, reduced sixteen blocks at
 * once; a block whose maximum is not finite is redone. Returns the blocks
 * done. */
AVX512 int64_t block_amax_groups(const float *x, int64_t full, const int bc, float *amax, uint8_t *nonfinite)
{
    int64_t b = 0;
    for (; b + 16 <= full; b += 16) {
        for (int j = 0; j < 16 * bc; j += 64) read_ahead64(x, b * bc + j, full * bc);
        __m512i v[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            const float *xb = x + (b + i) * bc;
            __m512i m = _mm512_and_si512(_mm512_loadu_si512(xb), I32(ABS_BITS));
#pragma GCC unroll 8
            for (int j = 16; j < bc; j += 16) m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_loadu_si512(xb + j), I32(ABS_BITS)));
            v[i] = m;
        }
        const __m512i m = hmax16(v);
        unsigned nf = _mm512_cmpge_epu32_mask(m, I32(INF_BITS));
        _mm512_storeu_si512(amax + b, m);
        _mm_storeu_si128((__m128i *)(nonfinite + b), _mm512_cvtepi32_epi8(_mm512_maskz_set1_epi32((__mmask16)nf, 1)));
        for (; nf; nf &= nf - 1) {
            const int i = __builtin_ctz(nf);
            amax[b + i] = block_amax_one(x + (b + i) * bc, bc, &nonfinite[b + i]);
        }
    }
    return b;
}

AVX512_FN void v_block_amax(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite)
{
    const int64_t nb = (cols + bc - 1) / bc, full = cols / bc;
    int64_t b = 0;
    switch (bc) { /* the block widths of the format table */
    case 16: b = block_amax_groups(x, full, 16, amax, nonfinite); break;
    case 32: b = block_amax_groups(x, full, 32, amax, nonfinite); break;
    case 128: b = block_amax_groups(x, full, 128, amax, nonfinite); break;
    default: break;
    }
    for (; b < nb; b++) amax[b] = block_amax_one(x + b * bc, cols - b * bc < bc ? cols - b * bc : bc, &nonfinite[b]);
}

/* Strips of 256 columns, their maxima in registers, each row's part of a
 * strip 1 KiB read in order (one column at a time down a tall band would
 * read a line from each of its rows: fp8-block-2d's 128-row bands lost a
 * fifth of their speed that way). */
AVX512_FN void v_col_absmax(const float *x, int64_t rows, int64_t cols, float *colmax)
{
    for (int64_t c0 = 0; c0 < cols; c0 += 256) {
        __m512i m[16];
        for (int j = 0; j < 16; j++) m[j] = _mm512_setzero_si512();
        if (c0 + 256 <= cols) {
            for (int64_t r = 0; r < rows; r++)
#pragma GCC unroll 16
                for (int j = 0; j < 16; j++)
                    m[j] = _mm512_max_epu32(m[j], _mm512_and_si512(_mm512_loadu_si512(x + r * cols + c0 + 16 * j), I32(ABS_BITS)));
        } else {
            for (int64_t r = 0; r < rows; r++)
                for (int j = 0; j < 16; j++)
                    m[j] = _mm512_max_epu32(m[j], _mm512_and_si512(_mm512_maskz_loadu_epi32(tail_mask(cols - c0 - 16 * j),
                                                                                            x + r * cols + c0 + 16 * j),
                                                                   I32(ABS_BITS)));
        }
        for (int j = 0; j < 16; j++) _mm512_mask_storeu_epi32(colmax + c0 + 16 * j, tail_mask(cols - c0 - 16 * j), m[j]);
    }
}

/* ---- block scales ------------------------------------------------------------- */

/* Sixteen blocks' scales and what their statistics need. */
typedef struct {
    __m512 enc, dec;
    __m512i code, flag;
    __mmask16 zero, sat, live; /* counted as clamped low / high; with a non-zero decode scale */
} scale16;

/* NVFP4's rule for t = amax_b * (S * (1/6)) (times 1.5: Four Over Six's
 * other candidate): d_b = ue4m3(t), e_b = min(1/(d_b * Sinv), FLT_MAX); a
 * block whose d_b is 0 stores zeros. live: blocks with a non-zero amax. */
AVX512 scale16 nvfp4_scale16(__m512 t, float scale_inv, __mmask16 k, __mmask16 live)
{
    const qp_minifloat e4m3 = QP_MF_E4M3;
    scale16 s;
    s.code = encode_any(t, e4m3); /* t >= 0: the UE4M3 code */
    const __m512 db = decode_minifloat(s.code, e4m3);
    const __mmask16 zero = _mm512_mask_cmp_ps_mask(k, db, _mm512_setzero_ps(), _CMP_EQ_OQ);
    const __m512 e = _mm512_div_ps(F32(1.0f), _mm512_mul_ps(db, F32(scale_inv)));
    s.enc = _mm512_maskz_mov_ps((__mmask16)~zero, _mm512_min_ps(e, F32(FLT_MAX)));
    s.dec = _mm512_maskz_mov_ps((__mmask16)~zero, db);
    s.flag = _mm512_maskz_mov_epi32(zero, I32(QP_BLOCK_ZERO));
    s.zero = live & zero;
    s.sat = _mm512_mask_cmp_ps_mask(live, t, F32(QP_E4M3_MAX), _CMP_GT_OQ);
    s.live = live & (__mmask16)~zero;
    return s;
}

/* qp_log2_fx_f32 of the eight doubles d (positive, from floats); lanes outside m give 0. */
AVX512 __m512i log2_fx8(__m512d d, __mmask8 m)
{
    const __m512i u = _mm512_castpd_si512(d);
    __m512i e = _mm512_sub_epi64(_mm512_srli_epi64(u, 52), _mm512_set1_epi64(1023));
    __m512d x = _mm512_castsi512_pd(_mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi64(0x000FFFFFFFFFFFFFll)),
                                                    _mm512_set1_epi64(0x3FF0000000000000ll)));
    const __mmask8 big = _mm512_cmp_pd_mask(x, _mm512_set1_pd(QP_LOG2_SQRT2), _CMP_GT_OQ);
    x = _mm512_mask_mul_pd(x, big, x, _mm512_set1_pd(0.5));
    e = _mm512_mask_add_epi64(e, big, e, _mm512_set1_epi64(1));
    const __m512d s = _mm512_div_pd(_mm512_sub_pd(x, _mm512_set1_pd(1.0)), _mm512_add_pd(x, _mm512_set1_pd(1.0)));
    const __m512d z = _mm512_mul_pd(s, s);
    __m512d p = _mm512_set1_pd(qp_log2_coef[QP_LOG2_TERMS - 1]);
    for (int i = QP_LOG2_TERMS - 2; i >= 0; i--) p = _mm512_add_pd(_mm512_mul_pd(p, z), _mm512_set1_pd(qp_log2_coef[i]));
    const __m512d l = _mm512_mul_pd(_mm512_mul_pd(s, p), _mm512_set1_pd(4294967296.0));
    const __m512d r = _mm512_roundscale_pd(_mm512_add_pd(l, _mm512_set1_pd(0.5)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_maskz_add_epi64(m, _mm512_slli_epi64(e, 32), _mm512_cvttpd_epi64(r));
}

/* qp_ue4m3_log2_fx of eight UE4M3 codes (64-bit lanes): a normal code c is
 * (c>>3 - 7) * 2^32 plus the entry of its mantissa bits (the table is
 * qp_log2_fx_f32's, which is exponent plus a function of the mantissa), a
 * subnormal one its own entry. */
AVX512 __m512i ue4m3_log2_fx8(__m512i c)
{
    const __m512i t = _mm512_add_epi64(_mm512_loadu_si512(qp_ue4m3_log2_fx + 8), _mm512_set1_epi64(6ll << 32));
    const __m512i s = _mm512_loadu_si512(qp_ue4m3_log2_fx);
    const __m512i m = _mm512_and_si512(c, _mm512_set1_epi64(7));
    const __m512i normal = _mm512_add_epi64(_mm512_slli_epi64(_mm512_sub_epi64(_mm512_srli_epi64(c, 3), _mm512_set1_epi64(7)), 32),
                                            _mm512_permutexvar_epi64(m, t));
    return _mm512_mask_blend_epi64(_mm512_cmplt_epu64_mask(c, _mm512_set1_epi64(8)), normal, _mm512_permutexvar_epi64(m, s));
}

/* qp_block_scales_ref's statistics, accumulated in registers over a row's
 * blocks and added to the caller's at the end (min, max and sums do not
 * depend on the order). */
typedef struct {
    int full;        /* all of them; else n_blocks and amax only (qp_plan.skip_block_stats) */
    int64_t n_blocks, n_zero, n_sat, n_live;
    __m512 min, max; /* of live decode scales */
    __m512i amax;    /* block amax bits */
    __m512i log2_fx; /* eight 64-bit sums */
} stats_acc;

AVX512 stats_acc stats_init(const qp_plan *p)
{
    const stats_acc a = {!p->skip_block_stats, 0, 0, 0, 0, F32(INFINITY), F32(-INFINITY), _mm512_setzero_si512(),
                         _mm512_setzero_si512()};
    return a;
}

AVX512 void stats_add(stats_acc *acc, const scale16 *s, __mmask16 k, __m512 a)
{
    acc->n_blocks += popc(k);
    acc->amax = _mm512_mask_max_epu32(acc->amax, k, acc->amax, _mm512_castps_si512(a));
    if (!acc->full) return;
    acc->n_zero += popc(s->zero);
    acc->n_sat += popc(s->sat);
    acc->n_live += popc(s->live);
    acc->min = _mm512_mask_min_ps(acc->min, s->live, acc->min, s->dec);
    acc->max = _mm512_mask_max_ps(acc->max, s->live, acc->max, s->dec);
}

AVX512 void stats_done(const stats_acc *acc, qp_block_stats *st)
{
    st->n_blocks += acc->n_blocks;
    st->n_zero += acc->n_zero;
    st->n_sat += acc->n_sat;
    if (acc->n_live) {
        const float mn = _mm512_reduce_min_ps(acc->min), mx = _mm512_reduce_max_ps(acc->max);
        if (st->n_live == 0 || mn < st->min) st->min = mn;
        if (st->n_live == 0 || mx > st->max) st->max = mx;
        st->n_live += acc->n_live;
    }
    st->log2_fx += _mm512_reduce_add_epi64(acc->log2_fx);
    const float am = qp_bits_f32(_mm512_reduce_max_epu32(acc->amax));
    if (am > st->amax) st->amax = am;
}

/* The log2 statistic of sixteen UE4M3 scales. */
AVX512 void ue4m3_log2_add(stats_acc *acc, const scale16 *s)
{
    if (!acc->full) return;
    const __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(s->code));
    const __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(s->code, 1));
    acc->log2_fx = _mm512_mask_add_epi64(acc->log2_fx, (__mmask8)s->live, acc->log2_fx, ue4m3_log2_fx8(lo));
    acc->log2_fx = _mm512_mask_add_epi64(acc->log2_fx, (__mmask8)(s->live >> 8), acc->log2_fx, ue4m3_log2_fx8(hi));
}

AVX512 void store_scales16(const scale16 *s, __mmask16 k, qp_blockscales *bs, int64_t b)
{
    _mm512_mask_storeu_ps(bs->enc + b, k, s->enc);
    _mm512_mask_storeu_ps(bs->dec + b, k, s->dec);
    _mm512_mask_cvtepi32_storeu_epi8(bs->code + b, k, s->code);
    _mm512_mask_cvtepi32_storeu_epi8(bs->flag + b, k, s->flag);
}

/* OCP MX (floor) and Transformer Engine's round-up rule. */
AVX512 scale16 mx_scale16(const qp_format_traits *t, __m512 a, __mmask16 k, __mmask16 nan, stats_acc *acc)
{
    scale16 s;
    const __m512i ai = _mm512_castps_si512(a);
    const __mmask16 live = _mm512_mask_cmp_ps_mask((__mmask16)(k & ~nan), a, _mm512_setzero_ps(), _CMP_GT_OQ);
    __m512i e;
    if (t->rule == QP_RULE_MX_RCEIL) {
        /* qp_f32_to_e8m0_ceil of amax * fl(1/elem_max): the exponent field,
         * plus one when a mantissa bit is set (a subnormal only above
         * 2^-127); never 0xFF since the product is finite */
        const __m512i vb = _mm512_castps_si512(_mm512_mul_ps(a, F32(1.0f / t->elem_max)));
        const __m512i ex = _mm512_srli_epi32(vb, 23), man = _mm512_and_si512(vb, I32(0x7FFFFF));
        const __mmask16 up = _mm512_cmpneq_epi32_mask(man, _mm512_setzero_si512()) &
                             _mm512_cmpneq_epi32_mask(ex, I32(0xFE)) &
                             ~(_mm512_cmpeq_epi32_mask(ex, _mm512_setzero_si512()) &
                               _mm512_cmple_epu32_mask(man, I32(0x400000)));
        e = _mm512_sub_epi32(_mm512_mask_add_epi32(ex, up, ex, I32(1)), I32(127));
        s.zero = _mm512_mask_cmplt_epu32_mask(live, vb, I32(0x00400000));
        s.sat = 0;
    } else {
        /* floor(log2 amax) from the exponent field. A subnormal amax reads as
         * -127 instead of its true exponent (< -126); with emax >= 2 both
         * clamp to the same -127 scale, and both count as underflow. */
        e = _mm512_sub_epi32(_mm512_srli_epi32(ai, 23), I32(127 + t->elem_emax));
        s.zero = _mm512_mask_cmplt_epi32_mask(live, e, I32(-127));
        s.sat = _mm512_mask_cmpgt_epi32_mask(live, e, I32(127));
    }
    e = _mm512_mask_blend_epi32(live, I32(-127), e);
    e = _mm512_max_epi32(_mm512_min_epi32(e, I32(127)), I32(-127));
    s.code = _mm512_mask_blend_epi32(nan, _mm512_add_epi32(e, I32(127)), I32(0xFF));
    /* 2^-e and 2^e; 2^-127 is the float subnormal 1 << 22 */
    const __m512i enc_bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(e, I32(127)),
                                                     _mm512_slli_epi32(_mm512_sub_epi32(I32(127), e), 23), I32(1 << 22));
    const __m512i dec_bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(e, I32(-127)),
                                                     _mm512_slli_epi32(_mm512_add_epi32(e, I32(127)), 23), I32(1 << 22));
    s.enc = _mm512_maskz_mov_ps((__mmask16)~nan, _mm512_castsi512_ps(enc_bits));
    s.dec = _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(dec_bits), F32(NAN));
    s.flag = _mm512_maskz_mov_epi32(nan, I32(QP_BLOCK_NAN));
    s.live = live;
    if (!acc->full) return s;
    /* sum of e * 2^32: e as 64-bit lanes, shifted */
    const __m512i elo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(e)), ehi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(e, 1));
    acc->log2_fx = _mm512_mask_add_epi64(acc->log2_fx, (__mmask8)live, acc->log2_fx, _mm512_slli_epi64(elo, 32));
    acc->log2_fx = _mm512_mask_add_epi64(acc->log2_fx, (__mmask8)(live >> 8), acc->log2_fx, _mm512_slli_epi64(ehi, 32));
    return s;
}

/* FP8 blocks: s_b = elem_max / amax_b (1 for 0, FLT_MAX on overflow), its
 * exponent bits only for the power-of-two rule; dec = 1/s_b. */
AVX512 scale16 f32_scale16(const qp_format_traits *t, __m512 a, __mmask16 k, stats_acc *acc)
{
    scale16 s;
    const __mmask16 live = _mm512_mask_cmp_ps_mask(k, a, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 q = _mm512_div_ps(F32(t->elem_max), a);
    const __mmask16 over = (__mmask16)~_mm512_cmp_ps_mask(q, F32(FLT_MAX), _CMP_LE_OQ);
    __m512 sc = _mm512_mask_blend_ps(over, q, F32(FLT_MAX));
    sc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(sc, _mm512_setzero_ps(), _CMP_EQ_OQ), sc, F32(1.0f));
    if (t->rule == QP_RULE_POW2_BLOCK) sc = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(sc), I32(0xFF800000u)));
    sc = _mm512_mask_blend_ps(live, F32(1.0f), sc); /* qp_scale_rule_from_amax: 1 without a positive amax */
    s.enc = sc;
    s.dec = _mm512_div_ps(F32(1.0f), sc);
    s.code = _mm512_castps_si512(s.dec);
    s.flag = _mm512_setzero_si512();
    s.zero = live & over;
    s.sat = 0;
    s.live = _mm512_mask_cmp_ps_mask(live, s.dec, _mm512_setzero_ps(), _CMP_GT_OQ);
    if (!acc->full) return s;
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(s.dec));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s.dec), 1)));
    acc->log2_fx = _mm512_add_epi64(acc->log2_fx, log2_fx8(_mm512_mask_blend_pd((__mmask8)s.live, _mm512_set1_pd(1.0), lo), (__mmask8)s.live));
    acc->log2_fx = _mm512_add_epi64(acc->log2_fx, log2_fx8(_mm512_mask_blend_pd((__mmask8)(s.live >> 8), _mm512_set1_pd(1.0), hi),
                                                           (__mmask8)(s.live >> 8)));
    return s;
}

/* Adds sum over the finite lanes of ((double)|x| - (double)y)^2 to err. */
AVX512 void add_sq_err(__m512d err[2], __m512 ax, __m512 y, __mmask16 fin)
{
    const __m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(ax));
    const __m512d x1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ax), 1)));
    const __m512d y0 = _mm512_cvtps_pd(_mm512_castps512_ps256(y));
    const __m512d y1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y), 1)));
    const __m512d d0 = _mm512_sub_pd(x0, y0), d1 = _mm512_sub_pd(x1, y1);
    err[0] = _mm512_mask_add_pd(err[0], (__mmask8)fin, err[0], _mm512_mul_pd(d0, d0));
    err[1] = _mm512_mask_add_pd(err[1], (__mmask8)(fin >> 8), err[1], _mm512_mul_pd(d1, d1));
}

/* rn_code's rounded magnitude alone: a + M - M with M = 2^(e + 23 - mbits),
 * without the G ulps that only the code needs (adding a multiple of the
 * grid spacing to M moves the sum by exactly as much: the same value; every
 * magnitude up to the largest of the five codecs checked, 2^30 each). */
AVX512 __m512 rn_value(__m512i a, qp_minifloat f)
{
    const __m512i e = _mm512_max_epu32(_mm512_and_si512(a, I32(EXP_BITS)), I32((uint32_t)(128 - f.bias) << 23));
    const __m512 m = _mm512_castsi512_ps(_mm512_add_epi32(e, I32((uint32_t)(23 - f.mbits) << 23)));
    return _mm512_sub_ps(_mm512_add_ps(_mm512_castsi512_ps(a), m), m);
}

/* The E2M1 grid value of |v| (v >= 0 or NaN), saturating. */
AVX512 __m512 e2m1_value(__m512 v)
{
    const qp_minifloat e2m1 = QP_MF_E2M1;
    return rn_value(_mm512_min_epu32(_mm512_castps_si512(v), _mm512_castps_si512(F32(e2m1.max))), e2m1);
}

/* Four Over Six for sixteen whole blocks of 16 at xb: NVFP4's scale to 6
 * and to 4, and each block's squared error under both, 4 only when strictly
 * smaller. qp_4o6_block_error sums in double, in element order; here one
 * block per lane (the blocks transposed), the errors are first summed in
 * float, which decides every block whose two errors differ by more than the
 * float sum's error bound, and only the others (close calls, all-tiny or
 * non-finite blocks: rare) are summed exactly as qp_core.h does. The bound:
 * each float difference, square and sum step rounds relatively by 2^-24 or
 * absolutely by 2^-150 near underflow, so for 16 terms the float sum F and
 * the double sum D of the same squares satisfy |F - D| <= 1.2e-6 F + 2^-143
 * (D's own error is 2^-48 relative); the test takes 2^-12 (F4 + F6) + 2^-100,
 * two hundred times that, which costs nothing measurable (closer calls are
 * that rare). Non-finite inputs make a float sum NaN or Inf, which no
 * comparison decides. The error is taken on |x| and |y|
 * (y has x's sign, so the difference is the same up to its sign). */
AVX512 scale16 fo6_scale16(const qp_plan *p, const float *xb, __m512 a, __mmask16 live)
{
    const __m512 t6 = _mm512_mul_ps(a, F32(p->scale * (1.0f / p->t->elem_max)));
    const scale16 s6 = nvfp4_scale16(t6, p->scale_inv, 0xFFFF, live);
    const scale16 s4 = nvfp4_scale16(_mm512_mul_ps(t6, F32(1.5f)), p->scale_inv, 0xFFFF, live);
    const __m512 sinv = F32(p->scale_inv);
    __m512 col[16];
    for (int i = 0; i < 16; i++)
        col[i] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(xb + 16 * i), I32(ABS_BITS)));
    qp_transpose16_avx512(col);
    __m512 f6 = _mm512_setzero_ps(), f4 = f6;
    for (int j = 0; j < 16; j++) {
        const __m512 d6 = _mm512_sub_ps(col[j], _mm512_mul_ps(_mm512_mul_ps(e2m1_value(_mm512_mul_ps(col[j], s6.enc)), s6.dec), sinv));
        const __m512 d4 = _mm512_sub_ps(col[j], _mm512_mul_ps(_mm512_mul_ps(e2m1_value(_mm512_mul_ps(col[j], s4.enc)), s4.dec), sinv));
        f6 = _mm512_add_ps(f6, _mm512_mul_ps(d6, d6));
        f4 = _mm512_add_ps(f4, _mm512_mul_ps(d4, d4));
    }
    const __m512 bound = _mm512_add_ps(_mm512_mul_ps(_mm512_add_ps(f4, f6), F32(0x1p-12f)), F32(0x1p-100f));
    __mmask16 four = _mm512_cmp_ps_mask(_mm512_sub_ps(f6, f4), bound, _CMP_GT_OQ);
    const __mmask16 six = _mm512_cmp_ps_mask(_mm512_sub_ps(f4, f6), bound, _CMP_GT_OQ) |
                          _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_EQ_OQ); /* no error either way */
    const __mmask16 open = (__mmask16)~(four | six);
    if (open) {
        __m512d e6[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()}, e4[2] = {e6[0], e6[1]};
        for (int j = 0; j < 16; j++) {
            const __mmask16 fin = _mm512_cmplt_epu32_mask(_mm512_castps_si512(col[j]), I32(INF_BITS));
            add_sq_err(e6, col[j], _mm512_mul_ps(_mm512_mul_ps(e2m1_value(_mm512_mul_ps(col[j], s6.enc)), s6.dec), sinv), fin);
            add_sq_err(e4, col[j], _mm512_mul_ps(_mm512_mul_ps(e2m1_value(_mm512_mul_ps(col[j], s4.enc)), s4.dec), sinv), fin);
        }
        const __mmask16 exact4 = (__mmask16)(_mm512_cmp_pd_mask(e4[0], e6[0], _CMP_LT_OQ) |
                                             (_mm512_cmp_pd_mask(e4[1], e6[1], _CMP_LT_OQ) << 8));
        four |= open & exact4;
    }
    scale16 s;
    s.enc = _mm512_mask_blend_ps(four, s6.enc, s4.enc);
    s.dec = _mm512_mask_blend_ps(four, s6.dec, s4.dec);
    s.code = _mm512_mask_blend_epi32(four, s6.code, s4.code);
    s.flag = _mm512_mask_blend_epi32(four, s6.flag, s4.flag);
    s.zero = (__mmask16)((s6.zero & ~four) | (s4.zero & four));
    s.sat = (__mmask16)((s6.sat & ~four) | (s4.sat & four));
    s.live = (__mmask16)((s6.live & ~four) | (s4.live & four));
    return s;
}

/* NVFP4's block scales of the blocks k with amaxes a, and their statistics. */
AVX512 scale16 nvfp4_rule16(const qp_plan *p, __m512 a, __mmask16 k, stats_acc *acc)
{
    const __mmask16 live = _mm512_mask_cmp_ps_mask(k, a, _mm512_setzero_ps(), _CMP_GT_OQ);
    const scale16 s = nvfp4_scale16(_mm512_mul_ps(a, F32(p->scale * (1.0f / p->t->elem_max))), p->scale_inv, k, live);
    ue4m3_log2_add(acc, &s);
    stats_add(acc, &s, k, a);
    return s;
}

/* qp_core.h's block-scale rules, sixteen blocks at a time, with
 * qp_block_scales_ref's statistics. Four Over Six reads the row's elements
 * and takes sixteen whole blocks at a time; its last few blocks (and partial
 * ones) run the scalar rule. */
AVX512_FN void v_block_scales(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                              const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    stats_acc acc = stats_init(p);
    int64_t b = 0;
    switch (t->rule) {
    case QP_RULE_MX_FLOOR:
    case QP_RULE_MX_RCEIL:
        for (; b < nb; b += 16) {
            const __mmask16 k = tail_mask(nb - b);
            const __m512 a = _mm512_maskz_loadu_ps(k, amax + b);
            const __mmask16 nan = _mm512_mask_test_epi32_mask(k, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, nonfinite + b)), I32(0xFF));
            const scale16 s = mx_scale16(t, a, k, nan, &acc);
            store_scales16(&s, k, bs, b);
            stats_add(&acc, &s, k, a);
        }
        break;
    case QP_RULE_NVFP4:
        for (; b < nb; b += 16) {
            const __mmask16 k = tail_mask(nb - b);
            const __m512 a = _mm512_maskz_loadu_ps(k, amax + b);
            const scale16 s = nvfp4_rule16(p, a, k, &acc);
            store_scales16(&s, k, bs, b);
        }
        break;
    case QP_RULE_F32_BLOCK:
    case QP_RULE_POW2_BLOCK:
        for (; b < nb; b += 16) {
            const __mmask16 k = tail_mask(nb - b);
            const __m512 a = _mm512_maskz_loadu_ps(k, amax + b);
            const scale16 s = f32_scale16(t, a, k, &acc);
            store_scales16(&s, k, bs, b);
            stats_add(&acc, &s, k, a);
        }
        break;
    case QP_RULE_NVFP4_4O6:
        if (x && bc == 16)
            for (; b + 16 <= cols / bc; b += 16) {
                for (int j = 0; j < 16 * bc; j += 64) read_ahead64(x, b * bc + j, cols);
                const __m512 a = _mm512_loadu_ps(amax + b);
                const __mmask16 live = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ);
                const scale16 s = fo6_scale16(p, x + b * bc, a, live);
                store_scales16(&s, 0xFFFF, bs, b);
                ue4m3_log2_add(&acc, &s);
                stats_add(&acc, &s, 0xFFFF, a);
            }
        break;
    case QP_RULE_NVFP4_4O6_TE: /* never here: the driver's te_block_scales takes TE's rules */
    case QP_RULE_NVFP4_4O6_TE_MSE:
    case QP_RULE_NONE:
    case QP_RULE_TENSOR:
    case QP_RULE_COUNT: break;
    }
    stats_done(&acc, st);
    if (b < nb) {
        qp_blockscales rest = {bs->enc + b, bs->dec + b, bs->code + b, bs->flag + b};
        qp_block_scales_ref(p, x ? x + b * bc : NULL, cols - b * bc, bc, amax + b, nonfinite + b, nb - b, &rest, st);
    }
}

/* ---- stochastic rounding words ---------------------------------------------------- */

/* Philox-4x32-10 of four vectors of eight 64-bit counters ctr[q] (the
 * counter's high 64 bits: stream), each 32-bit word in the low half of a
 * 64-bit lane (vpmuludq gives the whole product; the high halves carry junk
 * the next multiply ignores), four independent vectors so the multiplies'
 * latency overlaps: words 0-3 of counter j of vector q end in the low halves
 * of lane j of c0[q] .. c3[q]. keys: the ten rounds' key words, two each. */
AVX512 void philox4x8(const uint32_t keys[20], uint64_t stream, const __m512i ctr[4], __m512i c0[4], __m512i c1[4],
                      __m512i c2[4], __m512i c3[4])
{
    for (int q = 0; q < 4; q++) {
        c0[q] = ctr[q];
        c1[q] = _mm512_srli_epi64(ctr[q], 32);
        c2[q] = _mm512_set1_epi64((long long)(stream & 0xFFFFFFFFu));
        c3[q] = _mm512_set1_epi64((long long)(stream >> 32));
    }
    const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57);
    for (int round = 0; round < 10; round++) {
        const __m512i k0 = I32(keys[2 * round]), k1 = I32(keys[2 * round + 1]);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            const __m512i p0 = _mm512_mul_epu32(c0[q], m0), p1 = _mm512_mul_epu32(c2[q], m1);
            c0[q] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p1, 32), c1[q], k0, XOR3);
            c2[q] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p0, 32), c3[q], k1, XOR3);
            c1[q] = p1, c3[q] = p0;
        }
    }
}

/* The words of elements 128g .. 128g+127 of a stream (qp_rng_u32 for index
 * 128g + j): philox4x8 for the counters 32g .. 32g+31, then reordered into
 * element order (out[v]: elements 16v .. 16v+15). */
AVX512 void philox128(const uint32_t keys[20], uint64_t stream, uint64_t g, __m512i out[8])
{
    __m512i ctr[4], c0[4], c1[4], c2[4], c3[4];
    for (int q = 0; q < 4; q++)
        ctr[q] = _mm512_add_epi64(_mm512_set1_epi64((long long)(32 * g + 8 * q)), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    philox4x8(keys, stream, ctr, c0, c1, c2, c3);
    /* qword j of w01 = words 0, 1 of counter j; of w23 = words 2, 3 */
    const __m512i pair = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    const __m512i q0 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), q1 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (int q = 0; q < 4; q++) {
        const __m512i w01 = _mm512_permutex2var_epi32(c0[q], pair, c1[q]), w23 = _mm512_permutex2var_epi32(c2[q], pair, c3[q]);
        out[2 * q] = _mm512_permutex2var_epi64(w01, q0, w23);
        out[2 * q + 1] = _mm512_permutex2var_epi64(w01, q1, w23);
    }
}

/* Runs of 128 words (32 Philox counters), two cached by parity. */
#define QP_RNG_UNIT __m512i
#define QP_RNG_UNITS 8
#define QP_RNG_TARGET QP_AVX512_TARGET
#define QP_RNG_INLINE AVX512
#define QP_RNG_FILL philox128
#include "qp_rng_cache.h"

/* Raw words idx .. idx+15 of the stream. */
AVX512 __m512i rng16(rng_cache *c, uint64_t idx)
{
    const uint64_t g = idx / 128;
    const int q = (int)(idx % 128) / 16, sh = (int)(idx % 16);
    const __m512i *w = rng_run(c, g);
    if (!sh) return w[q];
    const __m512i hi = q < 7 ? w[q + 1] : rng_run(c, g + 1)[0];
    return _mm512_permutex2var_epi32(w[q], _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), I32(sh)), hi);
}

/* qp_sr_word of elements idx .. idx+15 at `bits` (8 or 16) bits each: their
 * raw words' fields moved to the lanes' top bits. */
AVX512 __m512i sr16(rng_cache *c, uint64_t idx, int bits)
{
    const int shift = qp_sr_shift(bits);
    const uint32_t field_mask = (1u << shift) - 1;
    const __m512i pos = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         I32((uint32_t)idx & field_mask));
    const __m512i raw = _mm512_permutexvar_epi32(_mm512_srli_epi32(pos, shift), rng16(c, idx >> shift));
    /* the field times bits (5 - shift = log2(bits)) */
    const __m512i field_shift = _mm512_slli_epi32(_mm512_and_si512(pos, I32(field_mask)), 5 - shift);
    return _mm512_or_si512(_mm512_slli_epi32(_mm512_srlv_epi32(raw, field_shift), 32 - bits), I32(1u << (31 - bits)));
}

/* sr16 at 8 bits for elements 16j .. 16j+15 of 64 that start raw word 0 of raw. */
AVX512 __m512i sr16_of(__m512i raw, int j)
{
    const __m512i word = _mm512_add_epi32(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), I32(4 * j));
    const __m512i field_shift = _mm512_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24);
    return _mm512_or_si512(_mm512_slli_epi32(_mm512_srlv_epi32(_mm512_permutexvar_epi32(word, raw), field_shift), 24),
                           I32(1u << 23));
}

/* ---- storing ---------------------------------------------------------------------- */

/* 64 dword codes (0..255) as 64 bytes in element order. */
AVX512 __m512i pack_bytes(const __m512i c[4])
{
    const __m512i b = _mm512_packus_epi16(_mm512_packus_epi32(c[0], c[1]), _mm512_packus_epi32(c[2], c[3]));
    /* dword 4L + j of b holds elements 4L..4L+3 of c[j] */
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
}

/* n bytes (0 < n <= 64) of v at dst; streamed when a whole aligned line. */
AVX512 void store_bytes64(uint8_t *dst, __m512i v, int64_t n, int nt)
{
    if (n >= 64) {
        if (nt && !((uintptr_t)dst & 63)) _mm512_stream_si512((__m512i *)dst, v);
        else _mm512_storeu_si512(dst, v);
    } else {
        _mm512_mask_storeu_epi8(dst, ((__mmask64)1 << n) - 1, v);
    }
}

AVX512 void store_bytes32(uint8_t *dst, __m256i v, int64_t n, int nt)
{
    if (n >= 32) {
        if (nt && !((uintptr_t)dst & 31)) _mm256_stream_si256((__m256i *)dst, v);
        else _mm256_storeu_si256((__m256i *)dst, v);
    } else {
        _mm256_mask_storeu_epi8(dst, ((__mmask32)1 << n) - 1, v);
    }
}

AVX512 void store_floats(float *dst, __m512 v, __mmask16 k, int nt)
{
    if (k == 0xFFFF && nt && !((uintptr_t)dst & 63)) _mm512_stream_ps(dst, v);
    else _mm512_mask_storeu_ps(dst, k, v);
}

/* ---- encoding rows ------------------------------------------------------------------ */

/* Counts of one row, in registers. */
typedef struct {
    int64_t nonfinite, nonzero, sat, flushed;
    __m512i amax; /* |x| bits, finite x (qp_plan.row_amax) */
} row_counts;

AVX512 void add_counts(qp_counts *total, const row_counts *c)
{
    total->n_nonfinite += c->nonfinite;
    total->n_nonzero += c->nonzero;
    total->n_sat += c->sat;
    total->n_flushed += c->flushed;
    const float m = qp_bits_f32(_mm512_reduce_max_epu32(c->amax));
    if (m > total->amax) total->amax = m;
}

/* The exponent fields a clamped magnitude of f can have: emin's field up to
 * the largest value's. */
static int mf_emin_field(qp_minifloat f) { return 128 - f.bias; }
static int mf_fields(qp_minifloat f) { return (int)(qp_f32_bits(f.max) >> 23) - mf_emin_field(f) + 1; }

/* rn_code's two magic numbers by exponent field, as vpermd/vpermt2d tables
 * indexed by the field's low bits (the fields of f are fewer than 32
 * consecutive values, so the low bits tell them apart): m0 = 2^(e + 23 -
 * mbits) and m = m0 + G ulp. */
typedef struct {
    __m512i m_lo, m_hi, m0_lo, m0_hi;
} rn_tables;

AVX512 rn_tables make_rn_tables(qp_minifloat f)
{
    const int wide = mf_fields(f) > 16, ef0 = mf_emin_field(f);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    rn_tables t;
    for (int h = 0; h < 2; h++) {
        /* field of entry i: ef0 + ((i - ef0) mod 16 or 32) */
        const __m512i i = _mm512_add_epi32(lane, I32(16 * h));
        const __m512i ef = _mm512_add_epi32(I32(ef0), _mm512_and_si512(_mm512_sub_epi32(i, I32(ef0)), I32(wide ? 31 : 15)));
        const __m512i m0 = _mm512_slli_epi32(_mm512_add_epi32(ef, I32(23 - f.mbits)), 23);
        const __m512i m = _mm512_add_epi32(m0, _mm512_slli_epi32(_mm512_sub_epi32(ef, I32(ef0)), f.mbits));
        if (h) t.m_hi = m, t.m0_hi = m0;
        else t.m_lo = m, t.m0_lo = m0;
    }
    return t;
}

AVX512 __m512i tbl(__m512i idx, __m512i lo, __m512i hi, int wide)
{
    return wide ? _mm512_permutex2var_epi32(lo, idx, hi) : _mm512_permutexvar_epi32(idx, lo);
}

/* rn_code with the tables: the codes of clamped magnitudes a (grid values
 * give their own code); *r (when not NULL) the rounded magnitudes. */
AVX512 __m512i rn_code_t(__m512i a, qp_minifloat f, const rn_tables *t, __m512 *r)
{
    const int wide = mf_fields(f) > 16;
    const __m512i idx = _mm512_srli_epi32(_mm512_max_epu32(a, I32((uint32_t)mf_emin_field(f) << 23)), 23);
    const __m512i m = tbl(idx, t->m_lo, t->m_hi, wide);
    const __m512 sum = _mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(m));
    if (r) *r = _mm512_sub_ps(sum, _mm512_castsi512_ps(m));
    return _mm512_sub_epi32(_mm512_castps_si512(sum), tbl(idx, t->m0_lo, t->m0_hi, wide));
}

/* What mf_row writes: codes (qp_quantize) or decoded values (qp_qdq), the
 * latter times the block scale and, for OUT_VALUES2, the tensor's out_mul. */
enum { OUT_CODES = 1, OUT_VALUES = 2, OUT_VALUES2 = 6 };

/* The state of one minifloat row. */
typedef struct {
    const qp_plan *p;
    const float *x;
    const qp_blockscales *bs;
    int64_t cols, padded, row_bytes;
    int bshift;
    uint8_t *codes;
    float *y;
    rn_tables tabs;
    rng_cache rc;
    uint64_t gidx0;
    int64_t nonzero, flushed, sat, nonfinite;
} mf_state;

/* 64 elements from c0 of a minifloat row (full: all inside the row). Counts,
 * over all 64 lanes (the lanes past the row are zeros with code 0, so they
 * cancel): Z lanes with x = +-0, C lanes whose code magnitude (or value) is
 * 0, S lanes above the element maximum; nonzero = 64 - Z - F, flushed = C -
 * Z (F: non-finite lanes). Vectors of NaN/Inf inputs or of a flagged block
 * correct these in a branch the others never take. blocks: a block format
 * (NaN/Inf are flagged per block; else looked for in each vector). */
AVX512 void mf_step(mf_state *st, const qp_minifloat f, const int sr, const int out, const int blocks, const int full,
                    int64_t c0)
{
    const qp_plan *p = st->p;
    const int nibbles = f.sign_shift == 3; /* E2M1: two codes per byte */
    const int count = !p->skip_counts;
    const __m512i maxb = _mm512_castps_si512(F32(f.max));
    __m512i code[4];
    uint64_t zero_x = 0, zero_c = 0, over = 0;
    /* the 16 raw words of the 64 elements when they start a raw word (nearly always) */
    const int aligned_sr = sr && ((st->gidx0 + (uint64_t)c0) & 3) == 0;
    const __m512i raw64 = aligned_sr ? rng16(&st->rc, (st->gidx0 + (uint64_t)c0) >> 2) : _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const int64_t cj = c0 + 16 * j;
        code[j] = _mm512_setzero_si512();
        if (!full && cj >= st->padded) {
            zero_x |= (uint64_t)0xFFFF << (16 * j);
            if (out & OUT_VALUES) zero_c |= (uint64_t)0xFFFF << (16 * j);
            continue;
        }
        const __mmask16 k = full ? (__mmask16)0xFFFF : tail_mask(st->cols - cj);
        const __m512 xv = full ? _mm512_loadu_ps(st->x + cj) : _mm512_maskz_loadu_ps(k, st->x + cj);
        float enc = p->scale, dec = 1.0f;
        unsigned flag = 0;
        if (blocks) {
            const int64_t b = cj >> st->bshift;
            enc = st->bs->enc[b], dec = st->bs->dec[b], flag = st->bs->flag[b];
        }
        const __m512 v = _mm512_mul_ps(xv, F32(enc));
        const __m512i av = _mm512_and_si512(_mm512_castps_si512(v), I32(ABS_BITS));
        __mmask16 sat_j = _mm512_cmpgt_epu32_mask(av, maxb);
        const __m512i a = _mm512_min_epu32(av, maxb);
        __m512 r;
        __m512i mag = _mm512_setzero_si512();
        if (sr) {
            const __m512i rw = aligned_sr ? sr16_of(raw64, j) : sr16(&st->rc, st->gidx0 + (uint64_t)cj, 8);
            const __m512i emin = I32((uint32_t)mf_emin_field(f) << 23);
            /* FP8 with no lane in (0, 2^emin) (nearly always): the gap's fraction is
             * the low 23 - mbits bits of |v|, the step one unit above them */
            if (f.sign_shift == 7 && !_mm512_mask_cmplt_epu32_mask(_mm512_test_epi32_mask(a, a), a, emin)) {
                const int d = 23 - f.mbits;
                const __m512i low = I32((1u << d) - 1), lo = _mm512_andnot_si512(low, a);
                const __mmask16 up = _mm512_cmplt_epu32_mask(rw, _mm512_slli_epi32(_mm512_and_si512(a, low), 32 - d));
                const __m512i vb = _mm512_mask_add_epi32(lo, up, lo, I32(1u << d));
                r = _mm512_castsi512_ps(vb);
                if (out & OUT_CODES)
                    mag = _mm512_max_epi32(_mm512_sub_epi32(_mm512_srli_epi32(vb, d), I32((uint32_t)(127 - f.bias) << f.mbits)),
                                           _mm512_setzero_si512());
            } else {
                mag = sr_code(a, f, rw, (out & OUT_VALUES) ? &r : NULL);
            }
        } else {
            mag = rn_code_t(a, f, &st->tabs, (out & OUT_VALUES) ? &r : NULL);
        }
        const __mmask16 z = _mm512_testn_epi32_mask(_mm512_castps_si512(xv), I32(ABS_BITS));
        __mmask16 zc = 0;
        __m512i cd = _mm512_setzero_si512();
        __m512 yv = _mm512_setzero_ps();
        if (out & OUT_CODES)
            cd = _mm512_ternarylogic_epi32(mag, _mm512_srli_epi32(_mm512_castps_si512(v), 31 - f.sign_shift),
                                           I32(1u << f.sign_shift), OR_AND);
        if (out & OUT_VALUES) {
            zc = _mm512_testn_epi32_mask(_mm512_castps_si512(r), _mm512_castps_si512(r));
            yv = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(r), _mm512_castps_si512(v),
                                                               I32(0x80000000u), OR_AND));
            if (blocks) yv = _mm512_mul_ps(yv, F32(dec));
            if (out == OUT_VALUES2) yv = _mm512_mul_ps(yv, F32(p->out_mul));
        }
        const __mmask16 nf = blocks ? 0 : _mm512_fpclass_ps_mask(xv, FPC_NONFINITE);
        if (__builtin_expect(nf | flag, 0)) {
            const __mmask16 nfj = _mm512_fpclass_ps_mask(xv, FPC_NONFINITE);
            const int live = 16 - popc(z); /* non-zero lanes, finite or not */
            st->nonfinite += popc(nfj);
            sat_j &= (__mmask16)~nfj;
            if (flag & (QP_BLOCK_NAN | QP_BLOCK_ZERO)) {
                /* the block stores zeros: every lane counts in C, as flushed only when ZERO */
                st->flushed -= (flag & QP_BLOCK_ZERO) ? popc(nfj) : live;
                sat_j = 0;
                cd = _mm512_setzero_si512();
                zc = 0xFFFF;
                yv = F32(flag & QP_BLOCK_NAN ? NAN : 0.0f);
            } else {
                const __mmask16 isnan = _mm512_fpclass_ps_mask(xv, FPC_NAN);
                cd = _mm512_mask_blend_epi32(isnan, cd, I32(f.nan_code));
                /* E4M3/E5M2 NaN decodes NaN; E2M1/E2M3/E3M2 encode it as the largest value */
                const float nan_y = f.nan_code != f.maxcode ? NAN : (f.max * dec) * p->out_mul;
                yv = _mm512_mask_blend_ps(isnan, yv, F32(nan_y));
            }
        }
        if (count) {
            zero_x |= (uint64_t)z << (16 * j);
            zero_c |= (uint64_t)zc << (16 * j);
            over |= (uint64_t)sat_j << (16 * j);
        }
        code[j] = cd;
        if ((out & OUT_VALUES) && k && p->y_bits)
            _mm256_mask_storeu_epi16((uint16_t *)(void *)st->y + cj, k,
                                     _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(yv), 16)));
        else if ((out & OUT_VALUES) && k)
            store_floats(st->y + cj, yv, k, p->nt);
    }
    if (out & OUT_CODES) {
        const __m512i bytes = pack_bytes(code);
        if (count) zero_c |= _mm512_testn_epi8_mask(bytes, _mm512_set1_epi8((char)((1u << f.sign_shift) - 1)));
        if (nibbles) {
            const __m512i pairs = _mm512_maddubs_epi16(bytes, _mm512_set1_epi16(0x1001)); /* even + 16 * odd */
            store_bytes32(st->codes + c0 / 2, _mm512_cvtepi16_epi8(pairs), full ? 32 : st->row_bytes - c0 / 2, p->nt);
        } else {
            store_bytes64(st->codes + c0, bytes, full ? 64 : st->row_bytes - c0, p->nt);
        }
    }
    if (count) {
        const int nz_x = __builtin_popcountll(zero_x);
        st->nonzero += 64 - nz_x;
        st->sat += __builtin_popcountll(over);
        st->flushed += __builtin_popcountll(zero_c) - nz_x;
    }
}

/* One row of a minifloat format (E4M3, E5M2, E2M1, E2M3, E3M2), round to
 * nearest or stochastic (sr), writing codes or values (out), 64 elements per
 * step; every byte of the padded row is written. */
AVX512 void mf_row(const qp_plan *p, const qp_minifloat f, const int sr, const int out, const int blocks, const float *x,
                   int64_t cols, const qp_blockscales *bs, int bc, uint8_t *codes, float *y, uint64_t gidx0,
                   qp_counts *total)
{
    mf_state st;
    st.p = p, st.x = x, st.bs = bs, st.cols = cols, st.codes = codes, st.y = y, st.gidx0 = gidx0;
    st.padded = blocks ? (cols + bc - 1) / bc * bc : cols;
    st.row_bytes = f.sign_shift == 3 ? (st.padded + 1) / 2 : st.padded;
    st.bshift = blocks ? __builtin_ctz((unsigned)bc) : 0; /* bc: 16, 32 or 128 */
    st.tabs = make_rn_tables(f);
    if (sr) rng_init(&st.rc, p->seed, p->stream);
    st.nonzero = st.flushed = st.sat = st.nonfinite = 0;
    int64_t c0 = 0;
    for (; c0 + 64 <= cols; c0 += 64) {
        read_ahead64(x, c0, cols);
        mf_step(&st, f, sr, out, blocks, 1, c0);
    }
    for (; c0 < st.padded; c0 += 64) mf_step(&st, f, sr, out, blocks, 0, c0);
    if (p->nt) _mm_sfence();
    total->n_nonfinite += st.nonfinite;
    total->n_nonzero += st.nonzero - st.nonfinite;
    total->n_sat += st.sat;
    total->n_flushed += st.flushed;
}

/* BF16 of sixteen lanes by integer arithmetic (any input), with counts. */
AVX512 __m512i bf16_int(__m512 xv, __mmask16 k, const __m512i *rnd, row_counts *n)
{
    const __m512i b = _mm512_castps_si512(xv), ab = _mm512_and_si512(b, I32(ABS_BITS));
    const __mmask16 fin = _mm512_mask_cmplt_epu32_mask(k, ab, I32(INF_BITS));
    const __mmask16 isnan = _mm512_cmpgt_epu32_mask(ab, I32(INF_BITS));
    __m512i code;
    if (rnd) { /* the magnitude up with probability (low 16 bits) / 2^16 */
        const __mmask16 up = _mm512_cmplt_epu32_mask(_mm512_srli_epi32(*rnd, 16), _mm512_and_si512(ab, I32(0xFFFF)));
        const __m512i hi = _mm512_srli_epi32(ab, 16);
        code = _mm512_or_si512(_mm512_mask_add_epi32(hi, up, hi, I32(1)), _mm512_slli_epi32(_mm512_srli_epi32(b, 31), 15));
    } else {
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), I32(1));
        code = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, I32(0x7FFF)), lsb), 16);
    }
    code = _mm512_mask_blend_epi32(isnan, code, I32(0x7FFF));
    const __m512i mag = _mm512_and_si512(code, I32(0x7FFF));
    const __mmask16 nz = _mm512_mask_test_epi32_mask(fin, ab, ab);
    n->amax = _mm512_mask_max_epu32(n->amax, fin, n->amax, ab);
    n->nonfinite += popc(k & (__mmask16)~fin);
    n->nonzero += popc(nz);
    n->sat += popc(_mm512_mask_cmpeq_epi32_mask(fin, mag, I32(0x7F80)));
    n->flushed += popc(_mm512_mask_cmpeq_epi32_mask(nz, mag, _mm512_setzero_si512()));
    return code;
}

/* 32 dword codes as 32 little-endian 16-bit codes. */
AVX512 __m512i pack_words(__m512i c0, __m512i c1)
{
    static const int16_t even[32] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                                     32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
    return _mm512_permutex2var_epi16(c0, _mm512_loadu_si512(even), c1);
}

/* The decoded values of 16 BF16 codes in the low or high half of 32. */
AVX512 __m512 bf16_values(__m256i w, float out_mul)
{
    __m512 v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(w), 16));
    return out_mul != 1.0f ? _mm512_mul_ps(v, F32(out_mul)) : v;
}

/* One BF16 row, 32 elements per step; hw: vcvtne2ps2bf16 for vectors of
 * normal numbers and zeros (where it is qp_core.h's rounding). */
AVX512BF16 void bf16_row(const qp_plan *p, const int hw, const float *x, int64_t cols, uint8_t *codes, float *y,
                     uint64_t gidx0, qp_counts *total)
{
    rng_cache rc;
    if (p->sr) rng_init(&rc, p->seed, p->stream);
    row_counts n = {0, 0, 0, 0, _mm512_setzero_si512()};
    for (int64_t c0 = 0; c0 < cols; c0 += 32) {
        const __mmask16 k0 = tail_mask(cols - c0), k1 = tail_mask(cols - c0 - 16);
        const __m512 x0 = _mm512_maskz_loadu_ps(k0, x + c0), x1 = _mm512_maskz_loadu_ps(k1, x + c0 + 16);
        __m512i w;
        if (hw && !p->sr && !(_mm512_fpclass_ps_mask(x0, FPC_ODD_BF16) | _mm512_fpclass_ps_mask(x1, FPC_ODD_BF16))) {
            w = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
            /* normal inputs never flush; zero inputs give 0, overflow gives Inf */
            if (p->row_amax) /* vrangeps: the larger magnitude of each pair, sign cleared */
                n.amax = _mm512_max_epu32(n.amax, _mm512_castps_si512(_mm512_range_ps(x0, x1, 0x0B)));
            const __m512i mag = _mm512_and_si512(w, _mm512_set1_epi16(0x7FFF));
            const uint32_t valid = (uint32_t)k0 | (uint32_t)k1 << 16;
            n.nonzero += __builtin_popcount(valid & ~(uint32_t)_mm512_cmpeq_epi16_mask(mag, _mm512_setzero_si512()));
            n.sat += __builtin_popcount((uint32_t)_mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x7F80)));
        } else {
            __m512i r0, r1;
            if (p->sr) r0 = sr16(&rc, gidx0 + (uint64_t)c0, 16), r1 = sr16(&rc, gidx0 + (uint64_t)c0 + 16, 16);
            const __m512i c0v = bf16_int(x0, k0, p->sr ? &r0 : NULL, &n), c1v = bf16_int(x1, k1, p->sr ? &r1 : NULL, &n);
            w = pack_words(c0v, c1v);
        }
        if (codes) {
            const int64_t left = 2 * (cols - c0);
            store_bytes64(codes + 2 * c0, w, left, p->nt);
        }
        if (y && p->y_bits) {
            _mm512_mask_storeu_epi16((uint16_t *)(void *)y + c0, (__mmask32)((uint32_t)k0 | (uint32_t)k1 << 16), w);
        } else if (y) {
            store_floats(y + c0, bf16_values(_mm512_castsi512_si256(w), p->out_mul), k0, p->nt);
            if (k1) store_floats(y + c0 + 16, bf16_values(_mm512_extracti64x4_epi64(w, 1), p->out_mul), k1, p->nt);
        }
    }
    if (p->nt) _mm_sfence();
    add_counts(total, &n);
}

/* FP32 "quantization" (scale 1: the identity, with the counts). */
AVX512 void f32_row(const qp_plan *p, const float *x, int64_t cols, uint8_t *codes, float *y, qp_counts *total)
{
    row_counts n = {0, 0, 0, 0, _mm512_setzero_si512()};
    for (int64_t c = 0; c < cols; c += 16) {
        const __mmask16 k = tail_mask(cols - c);
        const __m512 xv = _mm512_maskz_loadu_ps(k, x + c);
        const __m512i a = _mm512_and_si512(_mm512_castps_si512(xv), I32(ABS_BITS));
        const __mmask16 fin = _mm512_mask_cmplt_epu32_mask(k, a, I32(INF_BITS));
        const __mmask16 nz = _mm512_mask_test_epi32_mask(fin, a, a);
        n.amax = _mm512_mask_max_epu32(n.amax, fin, n.amax, a);
        const __m512 v = _mm512_mul_ps(xv, F32(p->scale));
        const __m512i av = _mm512_and_si512(_mm512_castps_si512(v), I32(ABS_BITS));
        n.nonfinite += popc(k & (__mmask16)~fin);
        n.nonzero += popc(nz);
        n.sat += popc(_mm512_mask_cmp_ps_mask(fin, _mm512_castsi512_ps(av), F32(FLT_MAX), _CMP_GT_OQ));
        n.flushed += popc(_mm512_mask_testn_epi32_mask(nz, av, av));
        if (codes) _mm512_mask_storeu_epi32(codes + 4 * c, k, _mm512_castps_si512(v));
        if (y) _mm512_mask_storeu_ps(y + c, k, _mm512_mul_ps(v, F32(p->out_mul)));
    }
    add_counts(total, &n);
}

#define ENCODE_ROW_ARGS                                                                                              \
    const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc, uint8_t *codes, float *y,      \
        uint64_t gidx0, qp_counts *cnt
/* Codes, values or (no caller does) both: then the values' pass counts nothing. */
#define MF_ROW(name, MF, SR, BLOCKS)                                                                                 \
    AVX512_FN void name(ENCODE_ROW_ARGS)                                                                             \
    {                                                                                                                \
        const qp_minifloat f = MF;                                                                                   \
        qp_counts none = {0, 0, 0, 0, 0.0f};                                                                         \
        if (codes) mf_row(p, f, SR, OUT_CODES, BLOCKS, x, cols, bs, bc, codes, NULL, gidx0, cnt);                    \
        if (y && p->out_mul != 1.0f)                                                                                 \
            mf_row(p, f, SR, OUT_VALUES2, BLOCKS, x, cols, bs, bc, NULL, y, gidx0, codes ? &none : cnt);             \
        else if (y)                                                                                                  \
            mf_row(p, f, SR, OUT_VALUES, BLOCKS, x, cols, bs, bc, NULL, y, gidx0, codes ? &none : cnt);              \
    }
MF_ROW(row_e4m3, QP_MF_E4M3, 0, 1)
MF_ROW(row_e4m3_sr, QP_MF_E4M3, 1, 1)
MF_ROW(row_e4m3_t, QP_MF_E4M3, 0, 0)
MF_ROW(row_e4m3_t_sr, QP_MF_E4M3, 1, 0)
MF_ROW(row_e5m2, QP_MF_E5M2, 0, 1)
MF_ROW(row_e5m2_sr, QP_MF_E5M2, 1, 1)
MF_ROW(row_e5m2_t, QP_MF_E5M2, 0, 0)
MF_ROW(row_e5m2_t_sr, QP_MF_E5M2, 1, 0)
MF_ROW(row_e2m1, QP_MF_E2M1, 0, 1)
MF_ROW(row_e2m1_sr, QP_MF_E2M1, 1, 1)
MF_ROW(row_e2m3, QP_MF_E2M3, 0, 1)
MF_ROW(row_e2m3_sr, QP_MF_E2M3, 1, 1)
MF_ROW(row_e3m2, QP_MF_E3M2, 0, 1)
MF_ROW(row_e3m2_sr, QP_MF_E3M2, 1, 1)

AVX512BF16_FN void row_bf16_hw(ENCODE_ROW_ARGS)
{
    (void)bs, (void)bc;
    bf16_row(p, 1, x, cols, codes, y, gidx0, cnt);
}

/* compiled for AVX512_BF16 too, but never executes it (hw = 0) */
AVX512BF16_FN void row_bf16(ENCODE_ROW_ARGS)
{
    (void)bs, (void)bc;
    bf16_row(p, 0, x, cols, codes, y, gidx0, cnt);
}

AVX512_FN void v_encode_row(ENCODE_ROW_ARGS)
{
    QP_STATIC_ASSERT(QP_ELEM_COUNT == 7, "v_encode_row names every element codec");
    const int sr = p->sr;
    switch (p->t->elem) {
    case QP_ELEM_E4M3:
        (bs ? (sr ? row_e4m3_sr : row_e4m3) : (sr ? row_e4m3_t_sr : row_e4m3_t))(p, x, cols, bs, bc, codes, y, gidx0, cnt);
        return;
    case QP_ELEM_E5M2:
        (bs ? (sr ? row_e5m2_sr : row_e5m2) : (sr ? row_e5m2_t_sr : row_e5m2_t))(p, x, cols, bs, bc, codes, y, gidx0, cnt);
        return;
    /* FP4 and FP6 come only with block scales (bs) */
    case QP_ELEM_E2M1: (sr ? row_e2m1_sr : row_e2m1)(p, x, cols, bs, bc, codes, y, gidx0, cnt); return;
    case QP_ELEM_E2M3: (sr ? row_e2m3_sr : row_e2m3)(p, x, cols, bs, bc, codes, y, gidx0, cnt); return;
    case QP_ELEM_E3M2: (sr ? row_e3m2_sr : row_e3m2)(p, x, cols, bs, bc, codes, y, gidx0, cnt); return;
    case QP_ELEM_BF16: (have_bf16 ? row_bf16_hw : row_bf16)(p, x, cols, bs, bc, codes, y, gidx0, cnt); return;
    case QP_ELEM_F32: f32_row(p, x, cols, codes, y, cnt); return;
    case QP_ELEM_COUNT: break;
    }
}

/* ---- the column layout ------------------------------------------------------------ */

/* The band's 16 x 16 tile at column c0: v[i] = row i (lane k: column c0 + k),
 * rotated down the columns when post, with transpose_rht_tile_n's operations
 * (qp_hadamard.c), so the same bits. */
AVX512 void load_tile(const float *x, int64_t cols, int64_t c0, const float *post, __m512 v[16])
{
    for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_ps(x + i * cols + c0);
    if (post) {
        qp_fwht16_avx512(v);
        for (int i = 0; i < 16; i++) v[i] = _mm512_mul_ps(v[i], _mm512_set1_ps(post[i]));
    }
}

AVX512_FN uint32_t v_band_amax(const float *x, int64_t cols, const float *post)
{
    __m512i m = _mm512_setzero_si512();
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
        __m512 v[16];
        load_tile(x, cols, c0, post, v);
        for (int i = 0; i < 16; i++) m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(v[i]), I32(ABS_BITS)));
    }
    return _mm512_reduce_max_epu32(m);
}

/* The raw words of a tile whose lane k holds elements base + k * stride ..
 * + 15 of the stream (base and stride multiples of 4), for qp_sr_word at 8
 * bits: w[j] lane k = raw word R_k + j, R_k = (base + k * stride) / 4, which
 * is word R_k % 4 + j of the eight of counters R_k / 4 and R_k / 4 + 1:
 * philox4x8 of those two counters for lanes 0-7 and 8-15, then per lane
 * the four words from its offset R_k % 4. */
AVX512 void sr_tile_raw(const uint32_t keys[20], uint64_t stream, uint64_t base, uint64_t stride, __m512i w[4])
{
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i r0 = _mm512_add_epi64(_mm512_set1_epi64((long long)(base / 4)),
                                        _mm512_mullo_epi64(lane, _mm512_set1_epi64((long long)(stride / 4))));
    const __m512i r8 = _mm512_add_epi64(r0, _mm512_set1_epi64((long long)(2 * stride)));
    const __m512i one = _mm512_set1_epi64(1);
    __m512i ctr[4], c[4][4];
    ctr[0] = _mm512_srli_epi64(r0, 2), ctr[1] = _mm512_srli_epi64(r8, 2);
    ctr[2] = _mm512_add_epi64(ctr[0], one), ctr[3] = _mm512_add_epi64(ctr[1], one);
    philox4x8(keys, stream, ctr, c[0], c[1], c[2], c[3]);
    /* the low dwords of a (tile lanes 0-7), then of b (lanes 8-15) */
    const __m512i lows = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    __m512i words[8]; /* words[m]: word m of counter R_k / 4 (m < 4), m - 4 of the next (m >= 4) */
    for (int m = 0; m < 8; m++) words[m] = _mm512_permutex2var_epi32(c[m & 3][2 * (m >> 2)], lows, c[m & 3][2 * (m >> 2) + 1]);
    const __m512i offset = _mm512_and_si512(_mm512_permutex2var_epi32(r0, lows, r8), I32(3));
    const __mmask16 at1 = _mm512_cmpeq_epi32_mask(offset, I32(1)), at2 = _mm512_cmpeq_epi32_mask(offset, I32(2)),
                    at3 = _mm512_cmpeq_epi32_mask(offset, I32(3));
    for (int j = 0; j < 4; j++) {
        __m512i v = _mm512_mask_blend_epi32(at1, words[j], words[j + 1]);
        v = _mm512_mask_blend_epi32(at2, v, words[j + 2]);
        w[j] = _mm512_mask_blend_epi32(at3, v, words[j + 3]);
    }
}

/* sr_tile_raw's words for two tiles, the second at base + 16 * stride, when
 * base and stride are multiples of 16: lane k's sixteen elements are then
 * the four words of counter (base + k * stride) / 16, so a tile takes 16
 * counters and one philox4x8 call serves two. */
AVX512 void sr_tile_raw_pair(const uint32_t keys[20], uint64_t stream, uint64_t base, uint64_t stride, __m512i w[2][4])
{
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i first = _mm512_add_epi64(_mm512_set1_epi64((long long)(base / 16)),
                                           _mm512_mullo_epi64(lane, _mm512_set1_epi64((long long)(stride / 16))));
    __m512i ctr[4], c[4][4]; /* vector 2t + h: tile t, lanes 8h .. 8h+7 */
    for (int q = 0; q < 4; q++)
        ctr[q] = _mm512_add_epi64(first, _mm512_set1_epi64((long long)((q >> 1) * stride + (q & 1) * (stride / 2))));
    philox4x8(keys, stream, ctr, c[0], c[1], c[2], c[3]);
    const __m512i lows = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int t = 0; t < 2; t++)
        for (int j = 0; j < 4; j++) w[t][j] = _mm512_permutex2var_epi32(c[j][2 * t], lows, c[j][2 * t + 1]);
}

/* Element i (0-15) of a tile's lanes: qp_sr_word at 8 bits from sr_tile_raw's words. */
AVX512 __m512i sr_tile_word(const __m512i raw[4], int i)
{
    return _mm512_or_si512(_mm512_slli_epi32(_mm512_srli_epi32(raw[i >> 2], 8 * (i & 3)), 24), I32(1u << 23));
}

/* A band's counts, per lane as mf_step counts a finite vector (nonzero
 * inputs, saturated lanes, zero codes), summed when the band is done. */
typedef struct {
    __m512i nonzero, sat, zero_codes;
} band_counts;

AVX512 band_counts band_counts_init(void)
{
    const band_counts b = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    return b;
}

AVX512 void band_count(band_counts *b, __mmask16 nonzero_x, __mmask16 over, __mmask16 zero_code)
{
    b->nonzero = _mm512_mask_sub_epi32(b->nonzero, nonzero_x, b->nonzero, I32(-1));
    b->sat = _mm512_mask_sub_epi32(b->sat, over, b->sat, I32(-1));
    b->zero_codes = _mm512_mask_sub_epi32(b->zero_codes, zero_code, b->zero_codes, I32(-1));
}

/* flushed: zero codes of non-zero inputs (a zero input always codes 0) */
AVX512 void band_counts_done(const band_counts *b, int64_t elems, qp_counts *cnt)
{
    const int64_t n_nonzero = _mm512_reduce_add_epi32(b->nonzero), n_zero_x = elems - n_nonzero;
    cnt->n_nonzero += n_nonzero;
    cnt->n_sat += _mm512_reduce_add_epi32(b->sat);
    cnt->n_flushed += _mm512_reduce_add_epi32(b->zero_codes) - n_zero_x;
}

/* Sixteen values of a band's row at y + off: their BF16 bits (bits) or floats. */
AVX512 void store_band_values(void *y, const int bits, int64_t off, __m512 yv)
{
    if (bits)
        _mm256_storeu_si256((__m256i *)(void *)((uint16_t *)y + off),
                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(yv), 16)));
    else
        _mm512_storeu_ps((float *)y + off, yv);
}

/* One band of an NVFP4-rule format with 1 x 16 blocks (qp_qdq_cols_direct):
 * per tile, the sixteen blocks' amaxes are a vertical maximum, their scales
 * nvfp4_rule16's, and each register is encoded with a scale per lane,
 * counted as mf_step counts a finite vector (a block whose scale decodes to
 * 0 stores +0, every lane counted as a zero code, none as saturated); the
 * counts are kept per lane and summed at the end. */
AVX512 uint32_t encode_band_e2m1(const qp_plan *p, const int sr, const int bits, const float *x, int64_t cols,
                                 const float *post, void *y, uint64_t gidx0, qp_counts *cnt, qp_block_stats *bst)
{
    __m512i most = _mm512_setzero_si512();
    const qp_minifloat f = QP_MF_E2M1;
    const rn_tables tabs = make_rn_tables(f);
    const __m512i maxb = _mm512_castps_si512(F32(f.max));
    const uint64_t stride = p->sr_stride;
    const int count = !p->skip_counts;
    uint32_t keys[20]; /* the tiles compute their own counters: no cached runs */
    if (sr) qp_philox_keys(p->seed, keys);
    const int pairs = gidx0 % 16 == 0 && stride % 16 == 0;
    __m512i raw_pair[2][4], raw_one[4];
    stats_acc acc = stats_init(p);
    band_counts bc = band_counts_init();
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
        __m512 v[16];
        load_tile(x, cols, c0, post, v);
        __m512i am = _mm512_setzero_si512();
        for (int i = 0; i < 16; i++) am = _mm512_max_epu32(am, _mm512_and_si512(_mm512_castps_si512(v[i]), I32(ABS_BITS)));
        most = _mm512_max_epu32(most, am);
        const scale16 s = nvfp4_rule16(p, _mm512_castsi512_ps(am), 0xFFFF, &acc);
        const __mmask16 zero_block = _mm512_test_epi32_mask(s.flag, I32(QP_BLOCK_ZERO));
        const __m512i *raw = raw_one;
        if (sr && pairs) {
            if ((c0 & 31) == 0) sr_tile_raw_pair(keys, p->stream, gidx0 + (uint64_t)c0 * stride, stride, raw_pair);
            raw = raw_pair[(c0 >> 4) & 1];
        } else if (sr) {
            sr_tile_raw(keys, p->stream, gidx0 + (uint64_t)c0 * stride, stride, raw_one);
        }
        for (int i0 = 0; i0 < 16; i0 += 8) {
#pragma GCC unroll 8
            for (int i = i0; i < i0 + 8; i++) {
                const __m512 e = _mm512_mul_ps(v[i], s.enc);
                const __m512i ae = _mm512_and_si512(_mm512_castps_si512(e), I32(ABS_BITS));
                const __mmask16 over = _mm512_mask_cmpgt_epu32_mask((__mmask16)~zero_block, ae, maxb);
                const __m512i a = _mm512_min_epu32(ae, maxb);
                __m512 r;
                if (sr) (void)sr_code(a, f, sr_tile_word(raw, i), &r);
                else (void)rn_code_t(a, f, &tabs, &r);
                const __mmask16 nzx = _mm512_test_epi32_mask(_mm512_castps_si512(v[i]), I32(ABS_BITS));
                const __mmask16 zc = _mm512_testn_epi32_mask(_mm512_castps_si512(r), _mm512_castps_si512(r)) | zero_block;
                __m512 yv = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(r), _mm512_castps_si512(e),
                                                                          I32(0x80000000u), OR_AND));
                yv = _mm512_mul_ps(yv, s.dec);
                yv = _mm512_maskz_mov_ps((__mmask16)~zero_block, yv);
                store_band_values(y, bits, i * cols + c0, yv);
                if (count) band_count(&bc, nzx, over, zc);
            }
        }
    }
    stats_done(&acc, bst);
    band_counts_done(&bc, 16 * cols, cnt);
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

/* One band of QK_MX stored rows of an MX format (1 x 32 blocks, round to
 * nearest, no rotation: qp_qdq_cols_direct): per 32 x 16 tile, the sixteen
 * blocks' amaxes are a vertical maximum over its rows, their scales
 * mx_scale16's (the band holds no NaN or Inf: qdq_cols checked), and each
 * row is encoded with a scale per lane and counted as mf_step counts a
 * finite vector of a block-scaled row. The tile's rows are read twice, the
 * second time from L1. */
AVX512 uint32_t encode_band_mx(const qp_plan *p, const qp_minifloat f, const int bits, const float *x, int64_t cols,
                               void *y, qp_counts *cnt, qp_block_stats *bst)
{
    __m512i most = _mm512_setzero_si512();
    const rn_tables tabs = make_rn_tables(f);
    const __m512i maxb = _mm512_castps_si512(F32(f.max));
    const int count = !p->skip_counts;
    stats_acc acc = stats_init(p);
    band_counts bc = band_counts_init();
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
        __m512i am = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int i = 0; i < QK_MX; i++)
            am = _mm512_max_epu32(am, _mm512_and_si512(_mm512_loadu_si512(x + i * cols + c0), I32(ABS_BITS)));
        most = _mm512_max_epu32(most, am);
        const __m512 a = _mm512_castsi512_ps(am);
        const scale16 s = mx_scale16(p->t, a, 0xFFFF, 0, &acc);
        stats_add(&acc, &s, 0xFFFF, a);
#pragma GCC unroll 4
        for (int i = 0; i < QK_MX; i++) {
            const __m512 xv = _mm512_loadu_ps(x + i * cols + c0);
            const __m512 e = _mm512_mul_ps(xv, s.enc);
            const __m512i ae = _mm512_and_si512(_mm512_castps_si512(e), I32(ABS_BITS));
            const __mmask16 over = _mm512_cmpgt_epu32_mask(ae, maxb);
            __m512 r;
            (void)rn_code_t(_mm512_min_epu32(ae, maxb), f, &tabs, &r);
            __m512 yv = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(r), _mm512_castps_si512(e),
                                                                      I32(0x80000000u), OR_AND));
            yv = _mm512_mul_ps(yv, s.dec);
            store_band_values(y, bits, i * cols + c0, yv);
            if (count)
                band_count(&bc, _mm512_test_epi32_mask(_mm512_castps_si512(xv), I32(ABS_BITS)), over,
                           _mm512_testn_epi32_mask(_mm512_castps_si512(r), _mm512_castps_si512(r)));
        }
    }
    stats_done(&acc, bst);
    band_counts_done(&bc, QK_MX * cols, cnt);
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

/* An MX band, its element codec and output form constants in each call (the encode folded per variant). */
AVX512_FN uint32_t encode_band_mx_any(const qp_plan *p, const float *x, int64_t cols, void *y, qp_counts *cnt,
                                      qp_block_stats *bst)
{
    QP_STATIC_ASSERT(QP_ELEM_COUNT == 7, "encode_band_mx_any names every element codec");
#define MX_BAND(F)                                                                                                   \
    do {                                                                                                             \
        const qp_minifloat f = F;                                                                                    \
        return p->y_bits ? encode_band_mx(p, f, 1, x, cols, y, cnt, bst)                                            \
                         : encode_band_mx(p, f, 0, x, cols, y, cnt, bst);                                           \
    } while (0)
    switch (p->t->elem) {
    case QP_ELEM_E4M3: MX_BAND(QP_MF_E4M3);
    case QP_ELEM_E5M2: MX_BAND(QP_MF_E5M2);
    case QP_ELEM_E2M1: MX_BAND(QP_MF_E2M1);
    case QP_ELEM_E2M3: MX_BAND(QP_MF_E2M3);
    case QP_ELEM_E3M2: MX_BAND(QP_MF_E3M2);
    /* MX formats have minifloat elements (qp_qdq_cols_direct) */
    case QP_ELEM_F32:
    case QP_ELEM_BF16:
    case QP_ELEM_COUNT: break;
    }
#undef MX_BAND
    abort();
}

/* A band of the column layout: 16 stored rows of NVFP4 (RN or SR, rotated
 * or not, post: the rotation's signs) or QK_MX rows of an MX format. */
AVX512_FN uint32_t v_encode_band(const qp_plan *p, const float *x, int64_t cols, const float *post, void *y,
                                 uint64_t gidx0, qp_counts *cnt, qp_block_stats *bst)
{
    if (p->t->rule == QP_RULE_MX_FLOOR || p->t->rule == QP_RULE_MX_RCEIL)
        return encode_band_mx_any(p, x, cols, y, cnt, bst);
    switch ((p->sr ? 2 : 0) | (p->y_bits ? 1 : 0)) { /* each variant compiled with its branches folded */
    case 0: return encode_band_e2m1(p, 0, 0, x, cols, post, y, gidx0, cnt, bst);
    case 1: return encode_band_e2m1(p, 0, 1, x, cols, post, y, gidx0, cnt, bst);
    case 2: return encode_band_e2m1(p, 1, 0, x, cols, post, y, gidx0, cnt, bst);
    case 3: return encode_band_e2m1(p, 1, 1, x, cols, post, y, gidx0, cnt, bst);
    }
    abort(); /* the switch names all four */
}

static const qp_kernels avx512_kernels = {.name = "avx512",
                                          .amax = v_amax,
                                          .block_amax = v_block_amax,
                                          .col_absmax = v_col_absmax,
                                          .block_scales = v_block_scales,
                                          .encode_row = v_encode_row,
                                          .band_amax = v_band_amax,
                                          .encode_band = v_encode_band,
                                          .te_errors8 = qp_te_errors8_avx2};

const qp_kernels *qp_kernels_avx512(void)
{
    const char *cap = getenv("QP_SIMD");
    if (cap && strcmp(cap, "avx512") != 0 && strcmp(cap, "avx512-nobf16") != 0 && strcmp(cap, "native") != 0)
        return NULL;
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
        return NULL;
    /* QP_SIMD=avx512-nobf16 leaves vcvtne2ps2bf16 out (what a CPU without it runs) */
    have_bf16 = __builtin_cpu_supports("avx512bf16") && !(cap && strcmp(cap, "avx512-nobf16") == 0);
    return &avx512_kernels;
}

#else
const qp_kernels *qp_kernels_avx512(void) { return NULL; }
#endif
