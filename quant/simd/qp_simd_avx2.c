/* qp_simd_avx2.c — AVX2 element loops (eight lanes) for CPUs without
 * AVX-512, bit-identical to qp_quant_ref.c.
 *
 * The same arithmetic as the AVX-512 path (qp_simd_avx512.c says why it is
 * exact): a magnitude clamped to the element maximum is rounded to the
 * element grid by one float addition of 2^(e + 23 - mbits) (round to
 * nearest even), or, stochastically, q = |v| / ulp is split into floor and
 * fraction and the fraction's 32 bits compared with the element's Philox
 * word (qp_core.h's qp_sr_magnitude); the rounded magnitude is the decoded
 * value. Philox-4x32-10 runs on eight counters at once (64-bit lanes: the
 * multiplies give whole products), 32 words per call, two runs cached.
 *
 * What it covers: max |x|, block maxima, NVFP4's block-scale rule, the
 * block errors of Four Over Six as Transformer Engine computes them, and the
 * rows of every minifloat codec (per-tensor or with blocks of a multiple of
 * eight) and of BF16, round-to-nearest and stochastic. A group of eight
 * that holds NaN or Inf, a block the rule flagged (NaN block, zero scale),
 * a row's last partial group, and what is not covered (the other
 * block-scale rules, FP32 elements, blocks of other sizes, the column
 * layout) take the scalar reference's rules. Compiled with target
 * attributes and chosen at run time, so the library runs anywhere. */
#include <float.h>
#include <string.h>

#include "qp_quant_internal.h"
#include "qp_rng.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define QP_AVX2_TARGET "avx2,popcnt"
#define AVX2 __attribute__((target(QP_AVX2_TARGET), always_inline)) static inline
#define AVX2_FN __attribute__((target(QP_AVX2_TARGET))) static

#define I32(v) _mm256_set1_epi32((int)(uint32_t)(v))
#define F32(v) _mm256_set1_ps(v)
#define ABS_BITS 0x7FFFFFFFu
#define INF_BITS 0x7F800000u
#define EXP_BITS 0x7F800000u

/* lane masks (all ones / zeros) as eight bits */
AVX2 unsigned bits8(__m256i m) { return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)); }

/* a > b, unsigned */
AVX2 __m256i cmpgt_u32(__m256i a, __m256i b)
{
    const __m256i s = I32(0x80000000u);
    return _mm256_cmpgt_epi32(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s));
}

/* (uint32_t)f for 0 <= f < 2^32, truncating, as C converts */
AVX2 __m256i cvtt_u32(__m256 f)
{
    const __m256 two31 = F32(2147483648.0f);
    const __m256i big = _mm256_castps_si256(_mm256_cmp_ps(f, two31, _CMP_GE_OQ));
    const __m256i lo = _mm256_cvttps_epi32(f);
    const __m256i hi = _mm256_xor_si256(_mm256_cvttps_epi32(_mm256_sub_ps(f, two31)), I32(0x80000000u));
    return _mm256_blendv_epi8(lo, hi, big);
}

/* Per-lane counts (a mask's -1 lanes subtracted), summed at the end of a row. */
AVX2 int64_t lanes_sum(__m256i v)
{
    int32_t l[8];
    _mm256_storeu_si256((__m256i *)(void *)l, v);
    int64_t t = 0;
    for (int i = 0; i < 8; i++) t += l[i];
    return t;
}

/* ---- amax ------------------------------------------------------------------------ */

/* max over lanes of |x| bits where finite (a bit pattern of |x| < INF orders like the value) */
AVX2 __m256i finite_abs(__m256 x)
{
    const __m256i a = _mm256_and_si256(_mm256_castps_si256(x), I32(ABS_BITS));
    return _mm256_and_si256(a, _mm256_cmpgt_epi32(I32(INF_BITS), a));
}

AVX2 uint32_t hmax_u32(__m256i v)
{
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(m);
}

/* The 32 floats QP_READ_AHEAD after x[i] (qp_quant_internal.h). */
AVX2 void read_ahead32(const float *x, int64_t i, int64_t n) { qp_read_ahead(x, i, n, 32); }

AVX2_FN float v_amax(const float *x, int64_t n)
{
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        read_ahead32(x, i, n);
        m0 = _mm256_max_epu32(m0, finite_abs(_mm256_loadu_ps(x + i)));
        m1 = _mm256_max_epu32(m1, finite_abs(_mm256_loadu_ps(x + i + 8)));
        m2 = _mm256_max_epu32(m2, finite_abs(_mm256_loadu_ps(x + i + 16)));
        m3 = _mm256_max_epu32(m3, finite_abs(_mm256_loadu_ps(x + i + 24)));
    }
    for (; i + 8 <= n; i += 8) m0 = _mm256_max_epu32(m0, finite_abs(_mm256_loadu_ps(x + i)));
    uint32_t m = hmax_u32(_mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
    for (; i < n; i++) {
        const uint32_t a = qp_f32_bits(x[i]) & ABS_BITS;
        if (a < INF_BITS && a > m) m = a;
    }
    return qp_bits_f32(m);
}

/* Strips of 128 columns, their maxima in registers, each row's part of a
 * strip read in order (as the AVX-512 path does). */
AVX2_FN void v_col_absmax(const float *x, int64_t rows, int64_t cols, float *colmax)
{
    int64_t c = 0;
    for (; c + 128 <= cols; c += 128) {
        __m256i m[16];
        for (int j = 0; j < 16; j++) m[j] = _mm256_setzero_si256();
        for (int64_t r = 0; r < rows; r++)
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++)
                m[j] = _mm256_max_epu32(m[j], _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + r * cols + c + 8 * j)),
                                                               I32(ABS_BITS)));
        for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i *)(void *)(colmax + c + 8 * j), m[j]);
    }
    for (; c + 8 <= cols; c += 8) {
        __m256i m = _mm256_setzero_si256();
        for (int64_t r = 0; r < rows; r++)
            m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + r * cols + c)), I32(ABS_BITS)));
        _mm256_storeu_si256((__m256i *)(void *)(colmax + c), m);
    }
    for (; c < cols; c++) {
        uint32_t m = 0;
        for (int64_t r = 0; r < rows; r++) {
            const uint32_t a = qp_f32_bits(x[r * cols + c]) & ABS_BITS;
            if (a > m) m = a;
        }
        colmax[c] = qp_bits_f32(m);
    }
}

AVX2_FN void v_block_amax(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite)
{
    const int64_t nb = (cols + bc - 1) / bc;
    for (int64_t b = 0; b < nb; b++) {
        const int64_t c0 = b * bc, c1 = c0 + bc < cols ? c0 + bc : cols;
        __m256i m = _mm256_setzero_si256(), nf = m;
        int64_t c = c0;
        for (; c + 8 <= c1; c += 8) {
            const __m256i a = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + c)), I32(ABS_BITS));
            const __m256i fin = _mm256_cmpgt_epi32(I32(INF_BITS), a);
            m = _mm256_max_epu32(m, _mm256_and_si256(a, fin));
            nf = _mm256_or_si256(nf, _mm256_andnot_si256(fin, I32(-1)));
        }
        uint32_t mb = hmax_u32(m);
        uint8_t f = bits8(nf) != 0;
        for (; c < c1; c++) {
            const uint32_t a = qp_f32_bits(x[c]) & ABS_BITS;
            if (a >= INF_BITS) f = 1;
            else if (a > mb) mb = a;
        }
        amax[b] = qp_bits_f32(mb);
        nonfinite[b] = f;
    }
}

/* ---- stochastic rounding words ------------------------------------------------------ */

/* The words of elements 32g .. 32g+31 (qp_rng_u32's: word i%4 of counter
 * i/4): counters 8g .. 8g+7, four per vector, each 32-bit word in the low
 * half of a 64-bit lane (vpmuludq reads only those; the high halves carry
 * junk). */
AVX2 void philox32(const uint32_t keys[20], uint64_t stream, uint64_t g, uint32_t out[32])
{
    __m256i c0[2], c1[2], c2[2], c3[2];
    for (int q = 0; q < 2; q++) {
        const uint64_t base = 8 * g + 4 * (uint64_t)q;
        const __m256i ctr = _mm256_add_epi64(_mm256_set1_epi64x((long long)base), _mm256_setr_epi64x(0, 1, 2, 3));
        c0[q] = ctr;
        c1[q] = _mm256_srli_epi64(ctr, 32);
        c2[q] = _mm256_set1_epi64x((long long)(stream & 0xFFFFFFFFu));
        c3[q] = _mm256_set1_epi64x((long long)(stream >> 32));
    }
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
    for (int round = 0; round < 10; round++) {
        const __m256i k0 = I32(keys[2 * round]), k1 = I32(keys[2 * round + 1]);
        for (int q = 0; q < 2; q++) {
            const __m256i p0 = _mm256_mul_epu32(c0[q], m0), p1 = _mm256_mul_epu32(c2[q], m1);
            c0[q] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), c1[q]), k0);
            c2[q] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), c3[q]), k1);
            c1[q] = p1, c3[q] = p0;
        }
    }
    const __m256i lo32 = _mm256_set1_epi64x(0xFFFFFFFFll);
    for (int q = 0; q < 2; q++) {
        /* qword j of w01: words 0, 1 of counter j; of w23: words 2, 3 */
        const __m256i w01 = _mm256_or_si256(_mm256_and_si256(c0[q], lo32), _mm256_slli_epi64(c1[q], 32));
        const __m256i w23 = _mm256_or_si256(_mm256_and_si256(c2[q], lo32), _mm256_slli_epi64(c3[q], 32));
        const __m256i a = _mm256_unpacklo_epi64(w01, w23), b = _mm256_unpackhi_epi64(w01, w23); /* counters 0,2 | 1,3 */
        _mm256_storeu_si256((__m256i *)(void *)(out + 16 * q), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(out + 16 * q + 8), _mm256_permute2x128_si256(a, b, 0x31));
    }
}

/* Runs of 32 words (eight Philox counters), two cached by parity. */
#define QP_RNG_UNIT uint32_t
#define QP_RNG_UNITS 32
#define QP_RNG_TARGET QP_AVX2_TARGET
#define QP_RNG_INLINE AVX2
#define QP_RNG_FILL philox32
#include "qp_rng_cache.h"

/* Raw words idx .. idx+7 of the stream. */
AVX2 __m256i rng8(rng_cache *c, uint64_t idx)
{
    const uint64_t g = idx / 32;
    const int o = (int)(idx % 32);
    const uint32_t *w = rng_run(c, g);
    if (o <= 24) return _mm256_loadu_si256((const __m256i *)(const void *)(w + o));
    uint32_t t[8];
    memcpy(t, w + o, (size_t)(32 - o) * sizeof *t);
    memcpy(t + (32 - o), rng_run(c, g + 1), (size_t)(o - 24) * sizeof *t);
    return _mm256_loadu_si256((const __m256i *)(const void *)t);
}

/* qp_sr_word of elements idx .. idx+7 at `bits` (8 or 16) bits each: their
 * raw words' fields moved to the lanes' top bits. */
AVX2 __m256i sr8(rng_cache *c, uint64_t idx, int bits)
{
    const int shift = qp_sr_shift(bits);
    if ((idx & 7) == 0) { /* the 2 (8 bits) or 4 (16 bits) raw words lie inside one run: no cross-run load */
        const uint64_t r = idx >> shift;
        const uint32_t *w = rng_run(c, r / 32) + r % 32;
        const __m128i words = bits == 16 ? _mm_loadu_si128((const __m128i *)(const void *)w)
                                         : _mm_loadl_epi64((const __m128i *)(const void *)w);
        const __m256i lane_word = bits == 16 ? _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3) : _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
        const __m256i field_shift = bits == 16 ? _mm256_setr_epi32(0, 16, 0, 16, 0, 16, 0, 16)
                                               : _mm256_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24);
        const __m256i raw = _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(words), lane_word);
        return _mm256_or_si256(_mm256_slli_epi32(_mm256_srlv_epi32(raw, field_shift), 32 - bits), I32(1u << (31 - bits)));
    }
    const uint32_t field_mask = (1u << shift) - 1;
    const __m256i pos = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), I32((uint32_t)idx & field_mask));
    const __m256i raw = _mm256_permutevar8x32_epi32(rng8(c, idx >> shift), _mm256_srli_epi32(pos, shift));
    /* the field times bits (5 - shift = log2(bits)) */
    const __m256i field_shift = _mm256_slli_epi32(_mm256_and_si256(pos, I32(field_mask)), 5 - shift);
    return _mm256_or_si256(_mm256_slli_epi32(_mm256_srlv_epi32(raw, field_shift), 32 - bits), I32(1u << (31 - bits)));
}

/* ---- element codecs ------------------------------------------------------------------ */

/* Round-to-nearest-even codes of clamped magnitudes a (0 <= a <= max): see
 * qp_simd_avx512.c's rn_code; *r gets the rounded magnitude. */
AVX2 __m256i rn_code(__m256i a, qp_minifloat f, __m256 *r)
{
    const __m256i emin = I32((uint32_t)(128 - f.bias) << 23);
    const __m256i e = _mm256_max_epu32(_mm256_and_si256(a, I32(EXP_BITS)), emin);
    const __m256i m0 = _mm256_add_epi32(e, I32((uint32_t)(23 - f.mbits) << 23));
    const __m256i m = _mm256_add_epi32(m0, _mm256_srli_epi32(_mm256_sub_epi32(e, emin), 23 - f.mbits));
    const __m256 t = _mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(m));
    *r = _mm256_sub_ps(t, _mm256_castsi256_ps(m));
    return _mm256_sub_epi32(_mm256_castps_si256(t), m0);
}

/* Stochastic rounding of clamped magnitudes a with words w: see
 * qp_simd_avx512.c's sr_code. */
AVX2 __m256i sr_code(__m256i a, qp_minifloat f, __m256i w, __m256 *r)
{
    const __m256i emin = I32((uint32_t)(128 - f.bias) << 23);
    const __m256i e = _mm256_max_epu32(_mm256_and_si256(a, I32(EXP_BITS)), emin);
    const __m256 inv_ulp = _mm256_castsi256_ps(_mm256_sub_epi32(I32((uint32_t)(254 + f.mbits) << 23), e));
    const __m256 q = _mm256_mul_ps(_mm256_castsi256_ps(a), inv_ulp);
    const __m256 lo = _mm256_round_ps(q, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256i thr = cvtt_u32(_mm256_mul_ps(_mm256_sub_ps(q, lo), F32(4294967296.0f)));
    const __m256i up = cmpgt_u32(thr, w);
    const __m256 n = _mm256_add_ps(lo, _mm256_and_ps(_mm256_castsi256_ps(up), F32(1.0f)));
    *r = _mm256_mul_ps(n, _mm256_castsi256_ps(_mm256_sub_epi32(e, I32((uint32_t)f.mbits << 23))));
    return _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_srli_epi32(_mm256_sub_epi32(e, emin), 23 - f.mbits));
}

/* ---- rows ------------------------------------------------------------------------------ */

/* Elements [c0, c1) of a row by the reference's rules, codes OR-ed into
 * zeroed bytes; bs NULL or the one block they lie in. */
static void scalar_elems(const qp_plan *p, const float *x, int64_t c0, int64_t c1, const qp_bscale *bs,
                         uint8_t *codes, float *y, uint64_t gidx0, qp_ecounts *ec)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    for (int64_t c = c0; c < c1; c++) {
        const uint32_t r = p->sr ? qp_sr_word(p->seed, p->stream, gidx0 + (uint64_t)c, qp_sr_bits(t->elem)) : 0;
        float yv;
        const uint32_t code = qp_quantize_elem(t, &tp, bs, x[c], r, &yv, ec);
        if (codes) qp_store_code(t->elem, codes, c, code);
        if (y && p->y_bits) ((uint16_t *)(void *)y)[c] = (uint16_t)(qp_f32_bits(yv) >> 16);
        else if (y) y[c] = yv;
    }
}

/* Eight codes (each below 2^bits) stored packed at dst: 4 bytes of nibbles or 8 bytes. */
AVX2 void store_codes8(uint8_t *dst, __m256i code, int nibbles)
{
    if (nibbles) {
        /* byte 0 of each qword: the even lane's code | the odd lane's << 4 */
        const __m256i t = _mm256_or_si256(code, _mm256_srli_epi64(code, 28));
        const __m256i b = _mm256_shuffle_epi8(t, _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                   -1, -1, 0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                   -1, -1, -1, -1, -1));
        const uint32_t lo = (uint32_t)_mm_extract_epi16(_mm256_castsi256_si128(b), 0);
        const uint32_t hi = (uint32_t)_mm_extract_epi16(_mm256_extracti128_si256(b, 1), 0);
        const uint32_t v = lo | hi << 16;
        memcpy(dst, &v, 4);
    } else {
        const __m256i b = _mm256_shuffle_epi8(code, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                      -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1,
                                                                      -1, -1, -1, -1, -1));
        const uint32_t lo = (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(b));
        const uint32_t hi = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(b, 1));
        const uint64_t v = (uint64_t)lo | (uint64_t)hi << 32;
        memcpy(dst, &v, 8);
    }
}

/* Eight 16-bit values (the low halves of v's lanes) at dst. */
AVX2 void store_u16x8(uint16_t *dst, __m256i v)
{
    const __m256i p = _mm256_packus_epi32(v, v); /* lanes 0-3 | 0-3, 4-7 | 4-7 */
    const __m128i q = _mm_unpacklo_epi64(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
    _mm_storeu_si128((__m128i *)(void *)dst, q);
}

/* The outputs of eight elements at column c: codes, and y = (magnitude with
 * x's sign) * dec * out_mul as the reference multiplies. */
AVX2 void store_values8(const qp_plan *p, float *y, int64_t c, __m256 val)
{
    if (p->y_bits) store_u16x8((uint16_t *)(void *)y + c, _mm256_srli_epi32(_mm256_castps_si256(val), 16));
    else _mm256_storeu_ps(y + c, val);
}

/* A minifloat row: groups of eight finite elements of a plain block (or
 * per-tensor) in vectors, the rest by the reference's rules. */
AVX2 void mf_row(const qp_plan *p, const qp_minifloat f, const int sr, const float *x, int64_t cols,
                 const qp_blockscales *bs, int bc, uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt)
{
    const qp_format_traits *t = p->t;
    const int nibbles = t->elem == QP_ELEM_E2M1;
    const int64_t full = cols / 8 * 8;
    const __m256i maxbits = I32(qp_f32_bits(f.max));
    const __m256 elem_max = F32(t->elem_max);
    const int out_mul = p->out_mul != 1.0f;
    qp_ecounts ec = {0, 0, 0, 0};
    __m256i n_nonzero = _mm256_setzero_si256(), n_sat = n_nonzero, n_flushed = n_nonzero; /* rows < 2^31 */
    rng_cache rng;
    if (sr) rng_init(&rng, p->seed, p->stream);
    if (codes) {
        /* the last partial group and any padding: zeros the scalar rules OR into */
        const int64_t from = nibbles ? full / 2 : full, total = qp_row_bytes(t->fmt, cols);
        if (total > from) memset(codes + from, 0, (size_t)(total - from));
    }
    for (int64_t c = 0; c < cols; c += 8) {
        if (!(c & 31)) read_ahead32(x, c, cols);
        const int64_t b = bs ? c / bc : 0;
        qp_bscale s = {p->scale, 1.0f, 0, 0, 0, 0};
        if (bs) s.enc = bs->enc[b], s.dec = bs->dec[b], s.flag = bs->flag[b];
        const __m256 xv = c < full ? _mm256_loadu_ps(x + c) : _mm256_setzero_ps();
        const __m256i ax = _mm256_and_si256(_mm256_castps_si256(xv), I32(ABS_BITS));
        if (c >= full || (s.flag & (QP_BLOCK_NAN | QP_BLOCK_ZERO)) || bits8(cmpgt_u32(ax, I32(INF_BITS - 1)))) {
            const int64_t c1 = c + 8 < cols ? c + 8 : cols;
            if (codes && c < full) memset(codes + (nibbles ? c / 2 : c), 0, nibbles ? 4 : 8);
            scalar_elems(p, x, c, c1, bs ? &s : NULL, codes, y, gidx0, &ec);
            continue;
        }
        const __m256 v = _mm256_mul_ps(xv, F32(s.enc));
        const __m256i vb = _mm256_castps_si256(v), av = _mm256_and_si256(vb, I32(ABS_BITS));
        const __m256i a = _mm256_min_epu32(av, maxbits);
        __m256 r;
        const __m256i mag = sr ? sr_code(a, f, sr8(&rng, gidx0 + (uint64_t)c, 8), &r) : rn_code(a, f, &r);
        const __m256i sign = _mm256_and_si256(vb, I32(0x80000000u));
        const __m256i nonzero = _mm256_castps_si256(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_NEQ_OQ));
        n_nonzero = _mm256_sub_epi32(n_nonzero, nonzero);
        n_sat = _mm256_sub_epi32(n_sat, _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(av), elem_max, _CMP_GT_OQ)));
        n_flushed = _mm256_sub_epi32(n_flushed, _mm256_and_si256(nonzero, _mm256_cmpeq_epi32(mag, _mm256_setzero_si256())));
        if (codes) {
            const __m256i code = _mm256_or_si256(mag, _mm256_srli_epi32(sign, 31 - f.sign_shift));
            store_codes8(codes + (nibbles ? c / 2 : c), code, nibbles);
        }
        if (y) {
            __m256 val = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(r), sign));
            if (bs) val = _mm256_mul_ps(val, F32(s.dec));
            if (out_mul) val = _mm256_mul_ps(val, F32(p->out_mul));
            store_values8(p, y, c, val);
        }
    }
    cnt->n_nonfinite += ec.n_nonfinite;
    cnt->n_nonzero += ec.n_nonzero + lanes_sum(n_nonzero);
    cnt->n_sat += ec.n_sat + lanes_sum(n_sat);
    cnt->n_flushed += ec.n_flushed + lanes_sum(n_flushed);
}

/* A BF16 row (no scale): qp_f32_to_bf16 or its stochastic form in vectors
 * for groups of eight finite values, the rest by the reference's rules. */
AVX2 void bf16_row(const qp_plan *p, const int sr, const float *x, int64_t cols, uint8_t *codes, float *y,
                   uint64_t gidx0, qp_counts *cnt)
{
    const int64_t full = cols / 8 * 8;
    const int out_mul = p->out_mul != 1.0f;
    qp_ecounts ec = {0, 0, 0, 0};
    __m256i n_nonzero = _mm256_setzero_si256(), n_sat = n_nonzero, n_flushed = n_nonzero; /* rows < 2^31 */
    rng_cache rng;
    if (sr) rng_init(&rng, p->seed, p->stream);
    __m256i amax = _mm256_setzero_si256();
    for (int64_t c = 0; c < full; c += 8) {
        const __m256 xv = _mm256_loadu_ps(x + c);
        const __m256i xb = _mm256_castps_si256(xv), ax = _mm256_and_si256(xb, I32(ABS_BITS));
        if (bits8(cmpgt_u32(ax, I32(INF_BITS - 1)))) {
            if (codes) memset(codes + 2 * c, 0, 16);
            scalar_elems(p, x, c, c + 8, NULL, codes, y, gidx0, &ec);
            amax = _mm256_max_epu32(amax, finite_abs(xv));
            continue;
        }
        amax = _mm256_max_epu32(amax, ax);
        /* scale 1: v = x * 1 = x */
        __m256i hi;
        if (sr) {
            const __m256i w = sr8(&rng, gidx0 + (uint64_t)c, 16);
            const __m256i up = cmpgt_u32(_mm256_and_si256(ax, I32(0xFFFFu)), _mm256_srli_epi32(w, 16));
            const __m256i mag = _mm256_sub_epi32(_mm256_srli_epi32(ax, 16), up); /* up is -1 where set */
            hi = _mm256_or_si256(mag, _mm256_slli_epi32(_mm256_srli_epi32(xb, 31), 15));
        } else {
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(xb, 16), I32(1));
            hi = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(xb, I32(0x7FFFu)), lsb), 16);
        }
        const __m256i mag = _mm256_and_si256(hi, I32(0x7FFFu));
        const __m256i nonzero = _mm256_castps_si256(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_NEQ_OQ));
        n_nonzero = _mm256_sub_epi32(n_nonzero, nonzero);
        n_sat = _mm256_sub_epi32(n_sat, _mm256_cmpeq_epi32(mag, I32(0x7F80u)));
        n_flushed = _mm256_sub_epi32(n_flushed, _mm256_and_si256(nonzero, _mm256_cmpeq_epi32(mag, _mm256_setzero_si256())));
        if (codes) store_u16x8((uint16_t *)(void *)(codes + 2 * c), hi);
        if (y) {
            __m256 val = _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16));
            if (out_mul) val = _mm256_mul_ps(val, F32(p->out_mul));
            store_values8(p, y, c, val);
        }
    }
    if (full < cols) {
        if (codes) memset(codes + 2 * full, 0, (size_t)(qp_row_bytes(p->t->fmt, cols) - 2 * full));
        scalar_elems(p, x, full, cols, NULL, codes, y, gidx0, &ec);
    }
    cnt->n_nonfinite += ec.n_nonfinite;
    cnt->n_nonzero += ec.n_nonzero + lanes_sum(n_nonzero);
    cnt->n_sat += ec.n_sat + lanes_sum(n_sat);
    cnt->n_flushed += ec.n_flushed + lanes_sum(n_flushed);
    if (p->row_amax) {
        uint32_t m = hmax_u32(amax);
        for (int64_t c = full; c < cols; c++) {
            const uint32_t a = qp_f32_bits(x[c]) & ABS_BITS;
            if (a < INF_BITS && a > m) m = a;
        }
        const float mf = qp_bits_f32(m);
        if (mf > cnt->amax) cnt->amax = mf;
    }
}

/* ---- block scales ---------------------------------------------------------------------- */

/* NVFP4's rule (qp_nvfp4_scale) eight blocks at a time: t = amax * (S / 6)
 * rounded to UE4M3 like an E4M3 element (saturating), enc = 1 / (d_b *
 * S_inv) at most FLT_MAX, a zero scale flagged; the statistics then lane
 * by lane as the reference counts them. Other rules, and the last nb % 8
 * blocks, by the reference. */
AVX2_FN void v_block_scales(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                            const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    int64_t b = 0;
    if (p->t->rule == QP_RULE_NVFP4) {
        const qp_minifloat f = QP_MF_E4M3;
        const float k = p->scale * (1.0f / p->t->elem_max);
        const __m256 kv = F32(k), sinv = F32(p->scale_inv);
        for (; b + 8 <= nb; b += 8) {
            const __m256 a = _mm256_loadu_ps(amax + b), t = _mm256_mul_ps(a, kv);
            __m256 d;
            const __m256i code = rn_code(_mm256_min_epu32(_mm256_castps_si256(t), I32(qp_f32_bits(f.max))), f, &d);
            const __m256 zero = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ);
            __m256 e = _mm256_div_ps(F32(1.0f), _mm256_mul_ps(d, sinv));
            e = _mm256_blendv_ps(F32(FLT_MAX), e, _mm256_cmp_ps(e, F32(FLT_MAX), _CMP_LE_OQ)); /* NaN too */
            _mm256_storeu_ps(bs->enc + b, _mm256_andnot_ps(zero, e));
            _mm256_storeu_ps(bs->dec + b, d);
            store_codes8(bs->code + b, code, 0);
            store_codes8(bs->flag + b, _mm256_and_si256(_mm256_castps_si256(zero), I32(QP_BLOCK_ZERO)), 0);
            for (int64_t j = b; j < b + 8; j++) {
                const float aj = amax[j], sc = bs->dec[j];
                st->n_blocks++;
                if (aj > st->amax) st->amax = aj;
                if (!(aj > 0.0f)) continue;
                st->n_zero += sc == 0.0f;
                st->n_sat += aj * k > QP_E4M3_MAX;
                if (sc > 0.0f) {
                    if (st->n_live == 0 || sc < st->min) st->min = sc;
                    if (st->n_live == 0 || sc > st->max) st->max = sc;
                    st->log2_fx += qp_block_scale_log2_fx(QP_SCALE_UE4M3, bs->code[j], sc);
                    st->n_live++;
                }
            }
        }
    }
    if (b < nb) {
        qp_blockscales rest = {bs->enc + b, bs->dec + b, bs->code + b, bs->flag + b};
        qp_block_scales_ref(p, x ? x + b * bc : NULL, cols - b * bc, bc, amax + b, nonfinite + b, nb - b, &rest, st);
    }
}

/* ---- Four Over Six as Transformer Engine computes it ------------------------------------ */

/* qp_4o6_te_row_error for eight rows at once, lane j the row at x + j *
 * stride: element i of every row gathered, then, in the scalar rule's
 * order, v = x * enc; q = TE's decoded code of v (its magnitude rounded to
 * the E2M1 grid as mf_row rounds it, saturating at 6, with v's sign: TE's
 * code 0 for v = 0 decodes +0 where this gives v's zero, and the error of
 * either is |x| or x^2 alike); diff = ((q * dec) * amax) / denom - x; the
 * lane's error adds |diff| or diff^2, or +0 for a non-finite x (the scalar
 * rule skips it: e + 0 is e, NaN and Inf included). No FMA: this target
 * has none, so no product is fused into a sum. */
void qp_te_errors8_avx2(const float *x, int64_t stride, const qp_bscale s[8], float amax, float denom, int mse,
                        float err[8]) __attribute__((target(QP_AVX2_TARGET)));
void qp_te_errors8_avx2(const float *x, int64_t stride, const qp_bscale s[8], float amax, float denom, int mse,
                        float err[8])
{
    const qp_minifloat f = QP_MF_E2M1;
    float enc[8], dec[8];
    for (int j = 0; j < 8; j++) {
        enc[j] = (s[j].flag & QP_BLOCK_ZERO) ? FLT_MAX : s[j].enc;
        dec[j] = s[j].dec;
    }
    const __m256 ev = _mm256_loadu_ps(enc), dv = _mm256_loadu_ps(dec), av = F32(amax), den = F32(denom);
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), I32((uint32_t)stride));
    const __m256i maxbits = I32(qp_f32_bits(f.max));
    __m256 e = _mm256_setzero_ps();
    for (int i = 0; i < 16; i++) {
        const __m256 xv = _mm256_i32gather_ps(x + i, idx, 4);
        const __m256i ax = _mm256_and_si256(_mm256_castps_si256(xv), I32(ABS_BITS));
        const __m256i finite = _mm256_cmpgt_epi32(I32(INF_BITS), ax); /* |x| bits below Inf's (signed: ax < 2^31) */
        const __m256 v = _mm256_mul_ps(xv, ev);
        const __m256i vb = _mm256_castps_si256(v);
        __m256 r;
        (void)rn_code(_mm256_min_epu32(_mm256_and_si256(vb, I32(ABS_BITS)), maxbits), f, &r);
        const __m256 q = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(r), _mm256_and_si256(vb, I32(0x80000000u))));
        const __m256 diff = _mm256_sub_ps(_mm256_div_ps(_mm256_mul_ps(_mm256_mul_ps(q, dv), av), den), xv);
        const __m256 d = mse ? _mm256_mul_ps(diff, diff) : _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(diff), I32(ABS_BITS)));
        e = _mm256_add_ps(e, _mm256_and_ps(d, _mm256_castsi256_ps(finite)));
    }
    _mm256_storeu_ps(err, e);
}

#define ENCODE_ROW_ARGS                                                                                               \
    const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc, uint8_t *codes, float *y,       \
        uint64_t gidx0, qp_counts *cnt

/* One function per codec and rounding, so each loop is compiled for its constants. */
#define MF_ROW(name, MF, SR)                                                                                         \
    AVX2_FN void name(ENCODE_ROW_ARGS)                                                                               \
    {                                                                                                                \
        const qp_minifloat f = MF;                                                                                   \
        mf_row(p, f, SR, x, cols, bs, bc, codes, y, gidx0, cnt);                                                     \
    }
MF_ROW(row_e4m3, QP_MF_E4M3, 0)
MF_ROW(row_e4m3_sr, QP_MF_E4M3, 1)
MF_ROW(row_e5m2, QP_MF_E5M2, 0)
MF_ROW(row_e5m2_sr, QP_MF_E5M2, 1)
MF_ROW(row_e2m1, QP_MF_E2M1, 0)
MF_ROW(row_e2m1_sr, QP_MF_E2M1, 1)
MF_ROW(row_e2m3, QP_MF_E2M3, 0)
MF_ROW(row_e2m3_sr, QP_MF_E2M3, 1)
MF_ROW(row_e3m2, QP_MF_E3M2, 0)
MF_ROW(row_e3m2_sr, QP_MF_E3M2, 1)

AVX2_FN void row_bf16(ENCODE_ROW_ARGS)
{
    (void)bs, (void)bc;
    bf16_row(p, 0, x, cols, codes, y, gidx0, cnt);
}

AVX2_FN void row_bf16_sr(ENCODE_ROW_ARGS)
{
    (void)bs, (void)bc;
    bf16_row(p, 1, x, cols, codes, y, gidx0, cnt);
}

AVX2_FN void v_encode_row(ENCODE_ROW_ARGS)
{
    QP_STATIC_ASSERT(QP_ELEM_COUNT == 7, "v_encode_row names every element codec");
    const int sr = p->sr, vec_blocks = !bs || bc % 8 == 0;
    void (*row)(ENCODE_ROW_ARGS) = NULL;
    switch (p->t->elem) {
    case QP_ELEM_E4M3: row = sr ? row_e4m3_sr : row_e4m3; break;
    case QP_ELEM_E5M2: row = sr ? row_e5m2_sr : row_e5m2; break;
    case QP_ELEM_E2M1: row = sr ? row_e2m1_sr : row_e2m1; break;
    case QP_ELEM_E2M3: row = sr ? row_e2m3_sr : row_e2m3; break;
    case QP_ELEM_E3M2: row = sr ? row_e3m2_sr : row_e3m2; break;
    case QP_ELEM_BF16: row = p->scale != 1.0f ? NULL : sr ? row_bf16_sr : row_bf16; break; /* v = x */
    case QP_ELEM_F32: row = NULL; break; /* a copy with counts: the reference's loop */
    case QP_ELEM_COUNT: break;
    }
    if (row && vec_blocks) row(p, x, cols, bs, bc, codes, y, gidx0, cnt);
    else qp_kernels_ref.encode_row(p, x, cols, bs, bc, codes, y, gidx0, cnt);
}

static const qp_kernels avx2_kernels = {.name = "avx2",
                                        .amax = v_amax,
                                        .block_amax = v_block_amax,
                                        .col_absmax = v_col_absmax,
                                        .block_scales = v_block_scales,
                                        .encode_row = v_encode_row,
                                        .band_amax = NULL,
                                        .encode_band = NULL,
                                        .te_errors8 = qp_te_errors8_avx2};

const qp_kernels *qp_kernels_avx2(void)
{
    const char *cap = getenv("QP_SIMD");
    if (cap && strcmp(cap, "avx2") != 0 && strcmp(cap, "native") != 0) return NULL;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") ? &avx2_kernels : NULL;
}

#else
const qp_kernels *qp_kernels_avx2(void) { return NULL; }
#endif
