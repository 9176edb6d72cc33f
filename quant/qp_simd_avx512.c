/* qp_simd_avx512.c — AVX-512 element loops, bit-identical to qp_quant_ref.c.
 *
 * The encoders are the arithmetic of qp_format.c sixteen lanes at a time:
 * normal results by adding the round-to-nearest-even bias to the float bits,
 * subnormal results by letting the FPU round |x| + magic; stochastic rounding
 * adds a vector Philox (64 words per call) and the integer form of
 * qp_format.c's rule (rows not starting at a multiple of 16 elements use the
 * reference loop). Compiled with
 * target attributes and chosen at run time, so the library runs anywhere. */
#include <float.h>
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
static const vfmt V_E2M3 = {3, 1, 0x1F, 0x1F, 5, 7.5f};
static const vfmt V_E3M2 = {2, 3, 0x1F, 0x1F, 5, 28.0f};

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

/* |x| bits of 16 lanes with non-finite lanes zeroed; sets the lanes' non-finite bits in *nf. */
AVX512 __m512i finite_abs(const float *x, __mmask16 k, __mmask16 *nf)
{
    const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x), _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 fin = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    *nf = (__mmask16)~fin;
    return _mm512_maskz_mov_epi32(fin, a);
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

AVX512_FN void v_block_amax(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite)
{
    const int64_t nb = (cols + bc - 1) / bc, full = cols / bc;
    int64_t b = 0;
    if (bc == 16 || bc == 32) {
        /* sixteen whole blocks at a time */
        for (; b + 16 <= full; b += 16) {
            __m512i v[16];
            uint32_t nfbits = 0;
            for (int i = 0; i < 16; i++) {
                const float *xb = x + (b + i) * bc;
                __mmask16 nf0, nf1 = 0;
                v[i] = finite_abs(xb, 0xFFFF, &nf0);
                if (bc == 32) v[i] = _mm512_max_epu32(v[i], finite_abs(xb + 16, 0xFFFF, &nf1));
                nfbits |= (uint32_t)((nf0 | nf1) != 0) << i;
            }
            _mm512_storeu_si512(amax + b, hmax16(v));
            _mm_storeu_si128((__m128i *)(nonfinite + b),
                             _mm512_cvtepi32_epi8(_mm512_maskz_set1_epi32((__mmask16)nfbits, 1)));
        }
    }
    for (; b < nb; b++) {
        __m512i m = _mm512_setzero_si512();
        __mmask16 nf = 0;
        for (int64_t c = b * bc; c < (b + 1) * bc && c < cols; c += 16) {
            __mmask16 lane_nf;
            const __mmask16 k = tail_mask(cols - c);
            m = _mm512_max_epu32(m, finite_abs(x + c, k, &lane_nf));
            nf |= lane_nf & k;
        }
        amax[b] = qp_bits_f32(_mm512_reduce_max_epu32(m));
        nonfinite[b] = nf != 0;
    }
}

/* qp_core.h's block-scale rule, sixteen blocks at a time, with the same
 * statistics (qp_block_scales_ref), for the OCP MX rule, the round-up MX rule
 * and NVFP4's. The other rules run the scalar reference, explicitly: Four Over
 * Six quantizes every block twice to choose (its encode loop is vectorized),
 * and the FP8 block formats have one scale per 128 elements, where the rule
 * is not the cost. */
AVX512_FN void v_block_scales(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                              const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    switch (t->rule) {
    case QP_RULE_MX_FLOOR:
    case QP_RULE_MX_RCEIL:
    case QP_RULE_NVFP4: break;
    case QP_RULE_NVFP4_4O6:
    case QP_RULE_F32_BLOCK:
    case QP_RULE_POW2_BLOCK:
    case QP_RULE_NONE:
    case QP_RULE_TENSOR:
    case QP_RULE_COUNT: qp_block_scales_ref(p, x, cols, bc, amax, nonfinite, nb, bs, st); return;
    }
    const int mx = t->block_scale == QP_SCALE_E8M0, rceil = t->rule == QP_RULE_MX_RCEIL;
    const __m512i one = _mm512_set1_epi32(1);
    for (int64_t b = 0; b < nb; b += 16) {
        const __mmask16 k = tail_mask(nb - b);
        const __m512 a = _mm512_maskz_loadu_ps(k, amax + b);
        const __m512i ai = _mm512_castps_si512(a);
        __mmask16 nan = 0;
        if (mx) nan = _mm512_mask_test_epi32_mask(k, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, nonfinite + b)),
                                                  _mm512_set1_epi32(0xFF));
        const __mmask16 live = _mm512_mask_cmp_ps_mask((__mmask16)(k & ~nan), a, _mm512_setzero_ps(), _CMP_GT_OQ);
        __m512 enc, dec;
        __m512i code, flag;
        __mmask16 counted_zero, counted_sat, scale_live;
        if (mx) {
            __m512i e;
            if (rceil) {
                /* qp_f32_to_e8m0_ceil of amax * fl(1/elem_max): the exponent
                 * field, plus one when a mantissa bit is set (a subnormal
                 * only above 2^-127); never 0xFF since the product is finite */
                const __m512i vb = _mm512_castps_si512(_mm512_mul_ps(a, _mm512_set1_ps(1.0f / t->elem_max)));
                const __m512i ex = _mm512_srli_epi32(vb, 23), man = _mm512_and_si512(vb, _mm512_set1_epi32(0x7FFFFF));
                const __mmask16 up = _mm512_cmpneq_epi32_mask(man, _mm512_setzero_si512()) &
                                     _mm512_cmpneq_epi32_mask(ex, _mm512_set1_epi32(0xFE)) &
                                     ~(_mm512_cmpeq_epi32_mask(ex, _mm512_setzero_si512()) &
                                       _mm512_cmple_epu32_mask(man, _mm512_set1_epi32(0x400000)));
                e = _mm512_sub_epi32(_mm512_mask_add_epi32(ex, up, ex, _mm512_set1_epi32(1)), _mm512_set1_epi32(127));
                counted_zero = _mm512_mask_cmplt_epu32_mask(live, vb, _mm512_set1_epi32(0x00400000));
                counted_sat = 0;
            } else {
                /* floor(log2 amax) from the exponent field. A subnormal amax
                 * reads as -127 instead of its true exponent (< -126); with
                 * emax >= 2 both clamp to the same -127 scale, and both count
                 * as underflow. */
                e = _mm512_sub_epi32(_mm512_srli_epi32(ai, 23), _mm512_set1_epi32(127 + t->elem_emax));
                counted_zero = _mm512_mask_cmplt_epi32_mask(live, e, _mm512_set1_epi32(-127));
                counted_sat = _mm512_mask_cmpgt_epi32_mask(live, e, _mm512_set1_epi32(127));
            }
            e = _mm512_mask_blend_epi32(live, _mm512_set1_epi32(-127), e);
            e = _mm512_max_epi32(_mm512_min_epi32(e, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
            code = _mm512_mask_blend_epi32(nan, _mm512_add_epi32(e, _mm512_set1_epi32(127)), _mm512_set1_epi32(0xFF));
            /* 2^-e and 2^e; 2^-127 is the float subnormal 1 << 22 */
            const __m512i enc_bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(127)),
                                                             _mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(127), e), 23),
                                                             _mm512_set1_epi32(1 << 22));
            const __m512i dec_bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(-127)),
                                                             _mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23),
                                                             _mm512_set1_epi32(1 << 22));
            enc = _mm512_maskz_mov_ps((__mmask16)~nan, _mm512_castsi512_ps(enc_bits));
            dec = _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(dec_bits), _mm512_set1_ps(NAN));
            flag = _mm512_maskz_mov_epi32(nan, _mm512_set1_epi32(QP_BLOCK_NAN));
            scale_live = live;
            st->log2_fx += (int64_t)_mm512_mask_reduce_add_epi32(live, e) * 4294967296LL;
        } else {
            const __m512 d = _mm512_mul_ps(a, _mm512_set1_ps(p->scale * (1.0f / t->elem_max)));
            __mmask16 dnan;
            code = encode_minifloat(d, V_E4M3, &dnan);
            const __m512 db = decode_minifloat(code, V_E4M3);
            const __mmask16 zero = _mm512_mask_cmp_ps_mask(k, db, _mm512_setzero_ps(), _CMP_EQ_OQ);
            enc = _mm512_min_ps(_mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(db, _mm512_set1_ps(p->scale_inv))),
                                _mm512_set1_ps(FLT_MAX));
            enc = _mm512_maskz_mov_ps((__mmask16)~zero, enc);
            dec = _mm512_maskz_mov_ps((__mmask16)~zero, db);
            flag = _mm512_maskz_mov_epi32(zero, _mm512_set1_epi32(QP_BLOCK_ZERO));
            counted_zero = live & zero;
            counted_sat = _mm512_mask_cmp_ps_mask(live, d, _mm512_set1_ps(QP_E4M3_MAX), _CMP_GT_OQ);
            scale_live = live & (__mmask16)~zero;
            uint8_t c8[16];
            _mm_storeu_si128((__m128i *)c8, _mm512_cvtepi32_epi8(code));
            for (unsigned m = scale_live; m; m &= m - 1) st->log2_fx += qp_ue4m3_log2_fx[c8[__builtin_ctz(m)]];
        }
        (void)one;
        _mm512_mask_storeu_ps(bs->enc + b, k, enc);
        _mm512_mask_storeu_ps(bs->dec + b, k, dec);
        _mm512_mask_cvtepi32_storeu_epi8(bs->code + b, k, code);
        _mm512_mask_cvtepi32_storeu_epi8(bs->flag + b, k, flag);
        st->n_blocks += __builtin_popcount(k);
        st->n_zero += __builtin_popcount(counted_zero);
        st->n_sat += __builtin_popcount(counted_sat);
        if (scale_live) {
            const float mn = _mm512_mask_reduce_min_ps(scale_live, dec), mxv = _mm512_mask_reduce_max_ps(scale_live, dec);
            if (st->n_live == 0 || mn < st->min) st->min = mn;
            if (st->n_live == 0 || mxv > st->max) st->max = mxv;
            st->n_live += __builtin_popcount(scale_live);
        }
        const float am = qp_bits_f32(_mm512_mask_reduce_max_epu32(k, ai));
        if (am > st->amax) st->amax = am;
    }
}

/* Store 16 codes at element offset c of a packed row (qp_store_code's layout). */
AVX512 void store_codes(qp_elem e, uint8_t *codes, int64_t c, __m512i code, __mmask16 k)
{
    switch (e) {
    case QP_ELEM_E2M1: {
        const __m512i pairs = _mm512_or_si512(_mm512_and_si512(code, _mm512_set1_epi64(0xF)),
                                              _mm512_slli_epi64(_mm512_srli_epi64(code, 32), 4));
        const int nbytes = (__builtin_popcount(k) + 1) / 2;
        _mm512_mask_cvtepi64_storeu_epi8(codes + c / 2, (__mmask8)((1u << nbytes) - 1), pairs);
        break;
    }
    case QP_ELEM_E4M3:
    case QP_ELEM_E5M2:
    case QP_ELEM_E2M3:
    case QP_ELEM_E3M2: _mm512_mask_cvtepi32_storeu_epi8(codes + c, k, code); break;
    case QP_ELEM_BF16: _mm512_mask_cvtepi32_storeu_epi16(codes + 2 * c, k, code); break;
    case QP_ELEM_F32: _mm512_mask_storeu_epi32(codes + 4 * c, k, code); break;
    case QP_ELEM_COUNT: break;
    }
}

/* ---- stochastic rounding ---------------------------------------------------- */

/* 32x32 -> 64-bit products of all sixteen lanes, split into high and low words. */
AVX512 void mulhilo(__m512i c, uint32_t m, __m512i *hi, __m512i *lo)
{
    const __m512i mv = _mm512_set1_epi32((int)m);
    const __m512i pe = _mm512_mul_epu32(c, mv), po = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), mv);
    *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
}

/* The random words of elements 64g .. 64g+63 of a stream (qp_rng_u32 for
 * index = 64g + j): Philox-4x32-10 for the sixteen counters 16g .. 16g+15 in
 * the lanes, then a 4x16 transpose into element order. */
AVX512 void philox64(uint64_t seed, uint64_t stream, uint64_t g, __m512i out[4])
{
    const uint64_t k0 = 16 * g;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i base = _mm512_set1_epi32((int)(uint32_t)k0);
    __m512i c0 = _mm512_add_epi32(base, lane);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, base);
    __m512i c1 = _mm512_mask_add_epi32(_mm512_set1_epi32((int)(uint32_t)(k0 >> 32)), carry,
                                       _mm512_set1_epi32((int)(uint32_t)(k0 >> 32)), _mm512_set1_epi32(1));
    __m512i c2 = _mm512_set1_epi32((int)(uint32_t)stream), c3 = _mm512_set1_epi32((int)(uint32_t)(stream >> 32));
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        __m512i hi0, lo0, hi1, lo1;
        mulhilo(c0, 0xD2511F53u, &hi0, &lo0);
        mulhilo(c2, 0xCD9E8D57u, &hi1, &lo1);
        c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)key0));
        c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)key1));
        c1 = lo1;
        c3 = lo0;
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
    }
    /* lanes hold counters; element 4k + w is word w of counter k */
    const __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    const __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    const __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    const __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    const __m512i x = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i y = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i x2 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i y2 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
    out[0] = _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0));
    out[1] = _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1));
    out[2] = _mm512_shuffle_i32x4(x2, y2, _MM_SHUFFLE(2, 0, 2, 0));
    out[3] = _mm512_shuffle_i32x4(x2, y2, _MM_SHUFFLE(3, 1, 3, 1));
}

/* The random words of 16 elements starting at global index idx, generated 64
 * at a time; an idx that is not a multiple of 16 (a slice of a bigger tensor,
 * qp_qopts.sr_offset / sr_row_stride) takes its words from two aligned runs. */
typedef struct {
    uint64_t seed, stream, group;
    int valid;
    __m512i words[4];
} rng_cache;

AVX512 __m512i rng16_aligned(rng_cache *rc, uint64_t idx)
{
    const uint64_t g = idx / 64;
    if (!rc->valid || rc->group != g) {
        philox64(rc->seed, rc->stream, g, rc->words);
        rc->group = g;
        rc->valid = 1;
    }
    return rc->words[(idx % 64) / 16];
}

AVX512 __m512i rng16(rng_cache *rc, uint64_t idx)
{
    const int sh = (int)(idx % 16);
    if (!sh) return rng16_aligned(rc, idx);
    const __m512i lo = rng16_aligned(rc, idx - (uint64_t)sh), hi = rng16_aligned(rc, idx - (uint64_t)sh + 16);
    const __m512i sel = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(sh));
    return _mm512_permutex2var_epi32(lo, sel, hi);
}

/* Stochastic rounding of v onto the grid of f, as qp_format.c's sr_magnitude:
 * the result is a representable value (signed), NaN stays NaN. */
AVX512 __m512 sr_round(__m512 v, vfmt f, __m512i r)
{
    const __m512i b = _mm512_castps_si512(v), a = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i sign = _mm512_and_si512(b, _mm512_set1_epi32((int)0x80000000u));
    const int emin = 1 - f.bias, drop = 23 - f.mbits;
    const __m512i E = _mm512_sub_epi32(_mm512_srli_epi32(a, 23), _mm512_set1_epi32(127));
    const __mmask16 normal = _mm512_cmpge_epi32_mask(E, _mm512_set1_epi32(emin));
    /* normal results: the dropped mantissa bits are the fraction of the gap */
    const __m512i dmask = _mm512_set1_epi32((1 << drop) - 1);
    const __m512i thr_n = _mm512_slli_epi32(_mm512_and_si512(a, dmask), 32 - drop);
    const __m512i lo_n = _mm512_andnot_si512(dmask, a);
    const __mmask16 up_n = _mm512_cmplt_epu32_mask(r, thr_n);
    const __m512i vn = _mm512_mask_add_epi32(lo_n, up_n, lo_n, _mm512_set1_epi32(1 << drop));
    /* subnormal results: significand m times 2^(Eeff-23) on a grid of 2^(emin-mbits) */
    const __mmask16 has_exp = _mm512_cmpneq_epi32_mask(_mm512_srli_epi32(a, 23), _mm512_setzero_si512());
    const __m512i m = _mm512_mask_or_epi32(_mm512_and_si512(a, _mm512_set1_epi32(0x7FFFFF)), has_exp,
                                           _mm512_and_si512(a, _mm512_set1_epi32(0x7FFFFF)),
                                           _mm512_set1_epi32(0x800000));
    const __m512i Eeff = _mm512_max_epi32(E, _mm512_set1_epi32(-126));
    const __m512i sh = _mm512_sub_epi32(_mm512_set1_epi32(23 + emin - f.mbits), Eeff);
    const __m512i lo_s = _mm512_srlv_epi32(m, sh);
    const __m512i frac = _mm512_sub_epi32(m, _mm512_sllv_epi32(lo_s, sh));
    const __mmask16 le32 = _mm512_cmple_epi32_mask(sh, _mm512_set1_epi32(32));
    const __m512i thr_s = _mm512_mask_blend_epi32(le32, _mm512_srlv_epi32(frac, _mm512_sub_epi32(sh, _mm512_set1_epi32(32))),
                                                  _mm512_sllv_epi32(frac, _mm512_sub_epi32(_mm512_set1_epi32(32), sh)));
    const __mmask16 up_s = _mm512_cmplt_epu32_mask(r, thr_s);
    const __m512i qs = _mm512_mask_add_epi32(lo_s, up_s, lo_s, _mm512_set1_epi32(1));
    const __m512 vs = _mm512_mul_ps(_mm512_cvtepi32_ps(qs),
                                    _mm512_castsi512_ps(_mm512_set1_epi32((127 + emin - f.mbits) << 23)));
    __m512 mag = _mm512_mask_blend_ps(normal, vs, _mm512_castsi512_ps(vn));
    mag = _mm512_min_ps(mag, _mm512_set1_ps(f.elem_max));
    const __m512 out = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), sign));
    const __mmask16 isnan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_blend_ps(isnan, out, v);
}

/* Per-lane counters, kept in registers across a row (a count through a
 * pointer would be reloaded after every store of codes). */
typedef struct {
    __m512i nonfinite, nonzero, sat, flushed;
} vcounts;

#define COUNT(acc, mask) ((acc) = _mm512_mask_add_epi32((acc), (mask), (acc), _mm512_set1_epi32(1)))

/* Sixteen elements with one encode multiplier and one decode multiplier. */
AVX512 void encode16(const qp_plan *p, vfmt f, const float *x, int64_t n_left, float enc, float dec,
                     uint8_t *codes, int64_t c, float *y, vcounts *cnt, const __m512i *rnd)
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
                           _mm512_set1_ps(p->out_mul));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(
            nz, _mm512_and_si512(code, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_setzero_si512()));
    } else if (t->elem == QP_ELEM_BF16) {
        const __m512i b = _mm512_castps_si512(_mm512_mul_ps(xv, _mm512_set1_ps(enc)));
        if (rnd) { /* round the magnitude up with probability (low 16 bits) / 2^16 */
            const __m512i ab = _mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF));
            const __mmask16 up = _mm512_cmplt_epu32_mask(_mm512_srli_epi32(*rnd, 16),
                                                         _mm512_and_si512(ab, _mm512_set1_epi32(0xFFFF)));
            code = _mm512_mask_add_epi32(_mm512_srli_epi32(ab, 16), up, _mm512_srli_epi32(ab, 16), _mm512_set1_epi32(1));
            code = _mm512_or_si512(code, _mm512_slli_epi32(_mm512_srli_epi32(b, 31), 15));
        } else {
            const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
            code = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)), lsb), 16);
        }
        const __mmask16 isnan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF)),
                                                        _mm512_set1_epi32(0x7F800000));
        code = _mm512_mask_blend_epi32(isnan, code, _mm512_set1_epi32(0x7FFF));
        const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32(0x7FFF));
        COUNT(cnt->sat, _mm512_mask_cmpeq_epi32_mask(fin, mag, _mm512_set1_epi32(0x7F80)));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(nz, mag, _mm512_setzero_si512()));
        yv = _mm512_mul_ps(_mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(code, 16)), _mm512_set1_ps(dec)),
                           _mm512_set1_ps(p->out_mul));
    } else {
        const __m512 v = _mm512_mul_ps(xv, _mm512_set1_ps(enc));
        __mmask16 isnan;
        code = encode_minifloat(rnd ? sr_round(v, f, *rnd) : v, f, &isnan);
        const __m512 av = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)));
        COUNT(cnt->sat, _mm512_mask_cmp_ps_mask(fin, av, _mm512_set1_ps(f.elem_max), _CMP_GT_OQ));
        const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32((int)((1u << f.sign_shift) - 1)));
        COUNT(cnt->flushed, _mm512_mask_cmpeq_epi32_mask(nz, mag, _mm512_setzero_si512()));
        if (y) {
            yv = _mm512_mul_ps(_mm512_mul_ps(decode_minifloat(code, f), _mm512_set1_ps(dec)),
                               _mm512_set1_ps(p->out_mul));
            /* E4M3/E5M2 NaN codes decode to NaN; E2M1 has none (NaN encodes as 6). */
            if (f.nancode != f.maxcode) yv = _mm512_mask_blend_ps(isnan, yv, _mm512_set1_ps(NAN));
        } else {
            yv = _mm512_setzero_ps();
        }
    }
    if (codes) store_codes(t->elem, codes, c, code, k);
    if (y) _mm512_mask_storeu_ps(y + c, k, yv);
}

AVX512 void encode_blocks(const qp_plan *p, vfmt f, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                          uint8_t *codes, float *y, vcounts *cnt, rng_cache *rc, uint64_t gidx0)
{
    const int64_t nb = (cols + bc - 1) / bc;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t flag = bs->flag[b];
        const int64_t c0 = b * bc, c1 = c0 + bc < cols ? c0 + bc : cols;
        if (flag) {
            /* Codes stay 0 (the row was cleared); values are NaN or 0. */
            for (int64_t c = c0; c < c1; c += 16) {
                const __mmask16 k = tail_mask(c1 - c);
                const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + c), _mm512_set1_epi32(0x7FFFFFFF));
                const __mmask16 fin = _mm512_mask_cmplt_epu32_mask(k, a, _mm512_set1_epi32(0x7F800000));
                const __mmask16 nz = _mm512_mask_cmpneq_epi32_mask(fin, a, _mm512_setzero_si512());
                COUNT(cnt->nonfinite, k & ~fin);
                COUNT(cnt->nonzero, nz);
                if (flag & QP_BLOCK_ZERO) COUNT(cnt->flushed, nz);
                if (y) _mm512_mask_storeu_ps(y + c, k, _mm512_set1_ps(flag & QP_BLOCK_NAN ? NAN : 0.0f));
            }
            continue;
        }
        for (int64_t c = c0; c < c1; c += 16) {
            const __m512i r = rc ? rng16(rc, gidx0 + (uint64_t)c) : _mm512_setzero_si512();
            encode16(p, f, x + c, c1 - c, bs->enc[b], bs->dec[b], codes, c, y, cnt, rc ? &r : NULL);
        }
    }
}

AVX512 void encode_row_fmt(const qp_plan *p, vfmt f, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                           uint8_t *codes, float *y, qp_counts *total, uint64_t gidx0)
{
    vcounts acc = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    vcounts *cnt = &acc;
    rng_cache cache = {p->seed, p->stream, 0, 0, {_mm512_setzero_si512()}}, *rc = p->sr ? &cache : NULL;
    if (!bs) {
        for (int64_t c = 0; c < cols; c += 16) {
            const __m512i r = rc ? rng16(rc, gidx0 + (uint64_t)c) : _mm512_setzero_si512();
            encode16(p, f, x + c, cols - c, p->scale, 1.0f, codes, c, y, cnt, rc ? &r : NULL);
        }
    } else {
        encode_blocks(p, f, x, cols, bs, bc, codes, y, cnt, rc, gidx0);
    }
    total->n_nonfinite += _mm512_reduce_add_epi32(acc.nonfinite);
    total->n_nonzero += _mm512_reduce_add_epi32(acc.nonzero);
    total->n_sat += _mm512_reduce_add_epi32(acc.sat);
    total->n_flushed += _mm512_reduce_add_epi32(acc.flushed);
}
AVX512_FN void v_encode_row(const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                            uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt)
{
    QP_STATIC_ASSERT(QP_ELEM_COUNT == 7, "v_encode_row and store_codes name every element codec");
    switch (p->t->elem) {
    case QP_ELEM_E4M3: encode_row_fmt(p, V_E4M3, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    case QP_ELEM_E5M2: encode_row_fmt(p, V_E5M2, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    case QP_ELEM_E2M1: encode_row_fmt(p, V_E2M1, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    case QP_ELEM_E2M3: encode_row_fmt(p, V_E2M3, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    case QP_ELEM_E3M2: encode_row_fmt(p, V_E3M2, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    /* BF16 and F32 take their own branch of encode16; the minifloat is unused */
    case QP_ELEM_BF16:
    case QP_ELEM_F32: encode_row_fmt(p, V_E4M3, x, cols, bs, bc, codes, y, cnt, gidx0); break;
    case QP_ELEM_COUNT: break;
    }
}

static const qp_kernels avx512_kernels = {"avx512", v_amax, v_block_amax, v_block_scales, v_encode_row};

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
