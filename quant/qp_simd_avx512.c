/* qp_simd_avx512.c — AVX-512 element loops, bit-identical to qp_quant_ref.c.
 *
 * The encoders are the arithmetic of qp_format.c sixteen lanes at a time:
 * normal results by adding the round-to-nearest-even bias to the float bits,
 * subnormal results by letting the FPU round |x| + magic. Block scales come
 * from the shared scalar rule; stochastic rounding uses the reference loop
 * (it is gradient-only and bound by the Philox generator). Compiled with
 * target attributes and chosen at run time, so the library runs anywhere. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_quant_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), always_inline)) static inline
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static

typedef struct {
    int mbits, bias;
    uint32_t maxcode, nancode, sign_shift;
    float elem_max;
} vfmt;

static const vfmt V_E4M3 = {3, 7, 0x7E, 0x7F, 7, 448.0f};
static const vfmt V_E5M2 = {2, 15, 0x7B, 0x7F, 7, 57344.0f};
static const vfmt V_E2M1 = {1, 1, 0x7, 0x7, 3, 6.0f};

static __mmask16 tail_mask(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1); }

AVX512 __m512i encode_minifloat(__m512 v, vfmt f, __mmask16 *nan)
{
    const __m512i b = _mm512_castps_si512(v);
    const __m512i a = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 sub = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32((127 - f.bias + 1) << 23));
    const int drop = 23 - f.mbits;
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, drop), _mm512_set1_epi32(1));
    const __m512i rnd = _mm512_add_epi32(_mm512_add_epi32(a, _mm512_set1_epi32((1 << (drop - 1)) - 1)), lsb);
    const __m512i norm = _mm512_sub_epi32(_mm512_srli_epi32(rnd, drop), _mm512_set1_epi32((127 - f.bias) << f.mbits));
    const __m512 magic = _mm512_castsi512_ps(_mm512_set1_epi32((127 + 1 - f.bias - f.mbits + 23) << 23));
    const __m512i subc = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), magic)),
                                          _mm512_castps_si512(magic));
    __m512i code = _mm512_min_epu32(_mm512_mask_blend_epi32(sub, norm, subc), _mm512_set1_epi32((int)f.maxcode));
    code = _mm512_or_si512(code, _mm512_slli_epi32(_mm512_srli_epi32(b, 31), f.sign_shift));
    *nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_blend_epi32(*nan, code, _mm512_set1_epi32((int)f.nancode));
}

/* Decoded value of a minifloat code (NaN codes are handled by the caller). */
AVX512 __m512 decode_minifloat(__m512i code, vfmt f)
{
    const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32((int)((1u << f.sign_shift) - 1)));
    const __mmask16 sub = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(1 << f.mbits));
    const __m512i normbits =
        _mm512_add_epi32(_mm512_slli_epi32(mag, 23 - f.mbits), _mm512_set1_epi32((127 - f.bias) << 23));
    const __m512 subv = _mm512_mul_ps(_mm512_cvtepi32_ps(mag),
                                      _mm512_castsi512_ps(_mm512_set1_epi32((127 + 1 - f.bias - f.mbits) << 23)));
    const __m512 val = _mm512_mask_blend_ps(sub, _mm512_castsi512_ps(normbits), subv);
    const __m512i sign = _mm512_slli_epi32(_mm512_srli_epi32(code, f.sign_shift), 31);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(val), sign));
}

AVX512_FN float v_amax(const float *x, int64_t n)
{
    const __m512i absmask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i a0 = _mm512_and_si512(_mm512_loadu_si512(x + i), absmask);
        const __m512i a1 = _mm512_and_si512(_mm512_loadu_si512(x + i + 16), absmask);
        const __m512i a2 = _mm512_and_si512(_mm512_loadu_si512(x + i + 32), absmask);
        const __m512i a3 = _mm512_and_si512(_mm512_loadu_si512(x + i + 48), absmask);
        m0 = _mm512_mask_max_epu32(m0, _mm512_cmplt_epu32_mask(a0, inf), m0, a0);
        m1 = _mm512_mask_max_epu32(m1, _mm512_cmplt_epu32_mask(a1, inf), m1, a1);
        m2 = _mm512_mask_max_epu32(m2, _mm512_cmplt_epu32_mask(a2, inf), m2, a2);
        m3 = _mm512_mask_max_epu32(m3, _mm512_cmplt_epu32_mask(a3, inf), m3, a3);
    }
    for (; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + i), absmask);
        m0 = _mm512_mask_max_epu32(m0, _mm512_cmplt_epu32_mask(a, inf), m0, a);
    }
    m0 = _mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3));
    return qp_bits_f32(_mm512_reduce_max_epu32(m0));
}

AVX512_FN void v_block_amax(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite)
{
    const __m512i absmask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const int64_t nb = (cols + bc - 1) / bc;
    for (int64_t b = 0; b < nb; b++) {
        __m512i m = _mm512_setzero_si512();
        __mmask16 nf = 0;
        for (int64_t c = b * bc; c < (b + 1) * bc && c < cols; c += 16) {
            const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(tail_mask(cols - c), x + c), absmask);
            const __mmask16 fin = _mm512_cmplt_epu32_mask(a, inf);
            nf |= (__mmask16)~fin;
            m = _mm512_mask_max_epu32(m, fin, m, a);
        }
        amax[b] = qp_bits_f32(_mm512_reduce_max_epu32(m));
        nonfinite[b] = nf != 0;
    }
}

/* Store 16 codes at element offset c of a packed row. */
AVX512 void store_codes(int bits, uint8_t *codes, int64_t c, __m512i code, __mmask16 k)
{
    switch (bits) {
    case 4: {
        const __m512i pairs = _mm512_or_si512(_mm512_and_si512(code, _mm512_set1_epi64(0xF)),
                                              _mm512_slli_epi64(_mm512_srli_epi64(code, 32), 4));
        const int nbytes = (__builtin_popcount(k) + 1) / 2;
        _mm512_mask_cvtepi64_storeu_epi8(codes + c / 2, (__mmask8)((1u << nbytes) - 1), pairs);
        break;
    }
    case 8: _mm512_mask_cvtepi32_storeu_epi8(codes + c, k, code); break;
    case 16: _mm512_mask_cvtepi32_storeu_epi16(codes + 2 * c, k, code); break;
    default: _mm512_mask_storeu_epi32(codes + 4 * c, k, code); break;
    }
}

/* Per-lane counters, kept in registers across a row (a count through a
 * pointer would be reloaded after every store of codes). */
typedef struct {
    __m512i nonfinite, nonzero, sat, flushed;
} vcounts;

#define COUNT(acc, mask) ((acc) = _mm512_mask_add_epi32((acc), (mask), (acc), _mm512_set1_epi32(1)))

/* Sixteen elements with one encode multiplier and one decode multiplier. */
AVX512 void encode16(const qp_plan *p, vfmt f, const float *x, int64_t n_left, float enc, float dec,
                     uint8_t *codes, int64_t c, float *y, vcounts *cnt)
{
    const qp_format_traits *t = p->t;
    const __mmask16 k = tail_mask(n_left);
    const __m512 xv = _mm512_maskz_loadu_ps(k, x);
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(xv), _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 fin = _mm512_mask_cmplt_epu32_mask(k, a, _mm512_set1_epi32(0x7F800000));
    const __mmask16 nz = _mm512_mask_cmpneq_epi32_mask(fin, a, _mm512_setzero_si512());
    COUNT(cnt->nonfinite, k & ~fin);
    COUNT(cnt->nonzero, nz);
    __m512i code;
    __m512 yv;
    if (t->elem == QP_ELEM_F32) {
        code = _mm512_castps_si512(_mm512_mul_ps(xv, _mm512_set1_ps(enc)));
        yv = _mm512_mul_ps(_mm512_mul_ps(_mm512_castsi512_ps(code), _mm512_set1_ps(dec)),
                           _mm512_set1_ps(p->scale_inv));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(
            nz, _mm512_and_si512(code, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_setzero_si512()));
    } else if (t->elem == QP_ELEM_BF16) {
        const __m512i b = _mm512_castps_si512(_mm512_mul_ps(xv, _mm512_set1_ps(enc)));
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
        code = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)), lsb), 16);
        const __mmask16 isnan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF)),
                                                        _mm512_set1_epi32(0x7F800000));
        code = _mm512_mask_blend_epi32(isnan, code, _mm512_set1_epi32(0x7FFF));
        const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32(0x7FFF));
        COUNT(cnt->sat, _mm512_mask_cmpeq_epi32_mask(fin, mag, _mm512_set1_epi32(0x7F80)));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(nz, mag, _mm512_setzero_si512()));
        yv = _mm512_mul_ps(_mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(code, 16)), _mm512_set1_ps(dec)),
                           _mm512_set1_ps(p->scale_inv));
    } else {
        const __m512 v = _mm512_mul_ps(xv, _mm512_set1_ps(enc));
        __mmask16 isnan;
        code = encode_minifloat(v, f, &isnan);
        const __m512 av = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)));
        COUNT(cnt->sat, _mm512_mask_cmp_ps_mask(fin, av, _mm512_set1_ps(f.elem_max), _CMP_GT_OQ));
        const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32((int)((1u << f.sign_shift) - 1)));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(nz, mag, _mm512_setzero_si512()));
        if (y) {
            yv = _mm512_mul_ps(_mm512_mul_ps(decode_minifloat(code, f), _mm512_set1_ps(dec)),
                               _mm512_set1_ps(p->scale_inv));
            /* E4M3/E5M2 NaN codes decode to NaN; E2M1 has none (NaN encodes as 6). */
            if (f.nancode != f.maxcode) yv = _mm512_mask_blend_ps(isnan, yv, _mm512_set1_ps(NAN));
        } else {
            yv = _mm512_setzero_ps();
        }
    }
    if (codes) store_codes(t->elem_bits, codes, c, code, k);
    if (y) _mm512_mask_storeu_ps(y + c, k, yv);
}

AVX512 void encode_blocks(const qp_plan *p, vfmt f, const float *x, int64_t cols, const qp_blockscale *bs, int bc,
                          uint8_t *codes, float *y, vcounts *cnt)
{
    const int64_t nb = (cols + bc - 1) / bc;
    for (int64_t b = 0; b < nb; b++) {
        const qp_blockscale *s = &bs[b];
        const int64_t c0 = b * bc, c1 = c0 + bc < cols ? c0 + bc : cols;
        if (s->nan || s->zero) {
            /* Codes stay 0 (the row was cleared); values are NaN or 0. */
            for (int64_t c = c0; c < c1; c += 16) {
                const __mmask16 k = tail_mask(c1 - c);
                const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + c), _mm512_set1_epi32(0x7FFFFFFF));
                const __mmask16 fin = _mm512_mask_cmplt_epu32_mask(k, a, _mm512_set1_epi32(0x7F800000));
                const __mmask16 nz = _mm512_mask_cmpneq_epi32_mask(fin, a, _mm512_setzero_si512());
                COUNT(cnt->nonfinite, k & ~fin);
                COUNT(cnt->nonzero, nz);
                if (s->zero) COUNT(cnt->flushed, nz);
                if (y) _mm512_mask_storeu_ps(y + c, k, _mm512_set1_ps(s->nan ? NAN : 0.0f));
            }
            continue;
        }
        for (int64_t c = c0; c < c1; c += 16) encode16(p, f, x + c, c1 - c, s->enc, s->dec, codes, c, y, cnt);
    }
}

AVX512 void encode_row_fmt(const qp_plan *p, vfmt f, const float *x, int64_t cols, const qp_blockscale *bs, int bc,
                           uint8_t *codes, float *y, qp_counts *total)
{
    vcounts acc = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    vcounts *cnt = &acc;
    if (!bs) {
        for (int64_t c = 0; c < cols; c += 16)
            encode16(p, f, x + c, cols - c, p->scale, 1.0f, codes, c, y, cnt);
    } else {
        encode_blocks(p, f, x, cols, bs, bc, codes, y, cnt);
    }
    total->n_nonfinite += _mm512_reduce_add_epi32(acc.nonfinite);
    total->n_nonzero += _mm512_reduce_add_epi32(acc.nonzero);
    total->n_sat += _mm512_reduce_add_epi32(acc.sat);
    total->n_flushed += _mm512_reduce_add_epi32(acc.flushed);
}
AVX512_FN void v_encode_row(const qp_plan *p, const float *x, int64_t cols, const qp_blockscale *bs, int bc,
                            uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt)
{
    if (p->sr) {
        qp_kernels_ref.encode_row(p, x, cols, bs, bc, codes, y, gidx0, cnt);
        return;
    }
    switch (p->t->elem) {
    case QP_ELEM_E4M3: encode_row_fmt(p, V_E4M3, x, cols, bs, bc, codes, y, cnt); break;
    case QP_ELEM_E5M2: encode_row_fmt(p, V_E5M2, x, cols, bs, bc, codes, y, cnt); break;
    case QP_ELEM_E2M1: encode_row_fmt(p, V_E2M1, x, cols, bs, bc, codes, y, cnt); break;
    default: encode_row_fmt(p, V_E4M3, x, cols, bs, bc, codes, y, cnt); break; /* BF16/F32 ignore f */
    }
}

static const qp_kernels avx512_kernels = {"avx512", v_amax, v_block_amax, v_encode_row};

const qp_kernels *qp_kernels_avx512(void)
{
    const char *cap = getenv("QP_SIMD");
    if (cap && strcmp(cap, "avx512") != 0 && strcmp(cap, "native") != 0) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return &avx512_kernels;
    return NULL;
}

#else
const qp_kernels *qp_kernels_avx512(void) { return NULL; }
#endif
