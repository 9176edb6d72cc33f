/* qp_hadamard.c — random Hadamard transforms over tensors (see qp_hadamard.h):
 * qp_core.h's qp_rht_vec per n-vector, or the same butterflies sixteen (AVX-512)
 * or, for the fused transpose, eight (AVX2) lanes at a time. */
#include "qp_hadamard.h"
#include "qp_quant.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "qp_simd_registers.h"
#endif

void qp_rht_signs_n(uint64_t seed, int n, float *signs)
{
    uint32_t w[4];
    qp_rht_sign_words(seed, w);
    for (int j = 0; j < n; j++) signs[j] = qp_rht_sign_neg(w, j) ? -1.0f : 1.0f;
}

void qp_rht_signs(uint64_t seed, float signs[16]) { qp_rht_signs_n(seed, 16, signs); }

#if defined(__x86_64__) && defined(__GNUC__)
/* The same butterflies, one 16-lane register per 16 elements: for h < 16 lane
 * j pairs with j ^ h inside a register (the lower lane of a pair takes a + b,
 * the upper b - a... exactly the scalar loop's operations), for h >= 16
 * register i pairs with register i + h/16; then the same multiplications by
 * +-1 and +-1/sqrt(n). The results are qp_rht_vec's bits. */
__attribute__((target("avx512f"))) static void rht_avx512(float *x, int64_t len, int n, const uint32_t w[4],
                                                          int inverse)
{
    static const int32_t partner[4][16] = {
        {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
        {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
        {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
        {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};
    static const __mmask16 upper[4] = {0xAAAA, 0xCCCC, 0xF0F0, 0xFF00};
    const int m = n / 16;
    __m512 sign[QP_RHT_MAX / 16], post[QP_RHT_MAX / 16];
    const float norm = qp_rht_norm(n);
    for (int i = 0; i < m; i++) {
        float s[16], ps[16];
        for (int j = 0; j < 16; j++) {
            const int neg = qp_rht_sign_neg(w, 16 * i + j);
            s[j] = neg ? -1.0f : 1.0f;
            ps[j] = inverse ? norm : (neg ? -norm : norm);
        }
        sign[i] = _mm512_loadu_ps(s);
        post[i] = _mm512_loadu_ps(ps);
    }
    __m512i idx[4];
    for (int h = 0; h < 4; h++) idx[h] = _mm512_loadu_si512(partner[h]);
    for (int64_t i0 = 0; i0 < len; i0 += n) {
        __m512 v[QP_RHT_MAX / 16];
        for (int i = 0; i < m; i++) {
            v[i] = _mm512_loadu_ps(x + i0 + 16 * i);
            if (inverse) v[i] = _mm512_mul_ps(v[i], sign[i]);
            for (int h = 0; h < 4; h++) {
                const __m512 p = _mm512_permutexvar_ps(idx[h], v[i]);
                /* lower lane j: v[j] + v[j+h]; upper lane: v[j-h] - v[j] */
                v[i] = _mm512_mask_blend_ps(upper[h], _mm512_add_ps(v[i], p), _mm512_sub_ps(p, v[i]));
            }
        }
        qp_fwht_registers_avx512(v, m);
        for (int i = 0; i < m; i++) _mm512_storeu_ps(x + i0 + 16 * i, _mm512_mul_ps(v[i], post[i]));
    }
}

/* qp_transpose_rht's vector path for the n-row band starting at src row r0,
 * columns [c0, c0 + 16): the butterflies run between the band's rows (lane k
 * is column c0 + k, so each lane does qp_fwht's operations on its column),
 * then the same multiplications, then 16 x 16 register transposes put each
 * column's n values in a row of dst. */
__attribute__((target("avx512f"), always_inline)) static inline uint32_t transpose_rht_tile_n(
    const float *src, float *dst, int64_t rows, int64_t cols, int64_t r0, int64_t c0, const int n, const float *post)
{
    __m512 v[n];
    for (int i = 0; i < n; i++) v[i] = _mm512_loadu_ps(src + (r0 + i) * cols + c0);
    qp_fwht_registers_avx512(v, n);
    /* |x|'s bits, as unsigned integers, order like |x| (NaN above Inf) */
    __m512i m = _mm512_setzero_si512();
    for (int i = 0; i < n; i++) {
        v[i] = _mm512_mul_ps(v[i], _mm512_set1_ps(post[i]));
        m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(v[i]), _mm512_set1_epi32(0x7FFFFFFF)));
    }
    for (int i0 = 0; i0 < n; i0 += 16) {
        qp_transpose16_avx512(v + i0); /* v[i0 + k]: dst row c0 + k, columns r0 + i0 .. + 15 */
        for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (c0 + k) * rows + r0 + i0, v[i0 + k]);
    }
    return _mm512_reduce_max_epu32(m);
}

/* n a constant in each copy: the 16-point band's vectors then stay in
 * registers (with n a variable they lived on the stack, measured 1.4x
 * slower) */
__attribute__((target("avx512f"))) static uint32_t transpose_rht_tile(const float *src, float *dst, int64_t rows,
                                                                      int64_t cols, int64_t r0, int64_t c0, int n,
                                                                      const float *post)
{
    switch (n) {
    case 16: return transpose_rht_tile_n(src, dst, rows, cols, r0, c0, 16, post);
    case 32: return transpose_rht_tile_n(src, dst, rows, cols, r0, c0, 32, post);
    case 64: return transpose_rht_tile_n(src, dst, rows, cols, r0, c0, 64, post);
    default: return transpose_rht_tile_n(src, dst, rows, cols, r0, c0, 128, post); /* qp_rht_size_ok: 128 */
    }
}

/* The same for CPUs with AVX2 only: eight columns per tile, the butterflies
 * between the band's rows as qp_fwht orders them, then 8 x 8 transposes. */
__attribute__((target("avx2"), always_inline)) static inline void transpose8_avx2(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

__attribute__((target("avx2"), always_inline)) static inline uint32_t transpose_rht_tile8_n(
    const float *src, float *dst, int64_t rows, int64_t cols, int64_t r0, int64_t c0, const int n, const float *post)
{
    __m256 v[n];
    for (int i = 0; i < n; i++) v[i] = _mm256_loadu_ps(src + (r0 + i) * cols + c0);
    qp_fwht_registers_avx2(v, n);
    __m256i m = _mm256_setzero_si256();
    for (int i = 0; i < n; i++) {
        v[i] = _mm256_mul_ps(v[i], _mm256_set1_ps(post[i]));
        m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(v[i]), _mm256_set1_epi32(0x7FFFFFFF)));
    }
    for (int i0 = 0; i0 < n; i0 += 8) {
        transpose8_avx2(v + i0); /* v[i0 + k]: dst row c0 + k, columns r0 + i0 .. + 7 */
        for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (c0 + k) * rows + r0 + i0, v[i0 + k]);
    }
    uint32_t lanes[8], most = 0;
    _mm256_storeu_si256((__m256i *)(void *)lanes, m);
    for (int k = 0; k < 8; k++) most = lanes[k] > most ? lanes[k] : most;
    return most;
}

__attribute__((target("avx2"))) static uint32_t transpose_rht_tile8(const float *src, float *dst, int64_t rows,
                                                                    int64_t cols, int64_t r0, int64_t c0, int n,
                                                                    const float *post)
{
    switch (n) {
    case 16: return transpose_rht_tile8_n(src, dst, rows, cols, r0, c0, 16, post);
    case 32: return transpose_rht_tile8_n(src, dst, rows, cols, r0, c0, 32, post);
    case 64: return transpose_rht_tile8_n(src, dst, rows, cols, r0, c0, 64, post);
    default: return transpose_rht_tile8_n(src, dst, rows, cols, r0, c0, 128, post); /* qp_rht_size_ok: 128 */
    }
}
#endif

/* qp_transpose_rht for src column c of the band at r0: qp_rht_vec itself. */
static uint32_t transpose_rht_column(const float *src, float *dst, int64_t rows, int64_t cols, int64_t r0,
                                     int64_t c, int n, const uint32_t w[4])
{
    float *out = dst + c * rows + r0;
    for (int i = 0; i < n; i++) out[i] = src[(r0 + i) * cols + c];
    qp_rht_vec(out, n, w, 0);
    uint32_t m = 0;
    for (int i = 0; i < n; i++) {
        const uint32_t a = qp_f32_bits(out[i]) & 0x7FFFFFFFu;
        m = a > m ? a : m;
    }
    return m;
}

/* The widest vector path the CPU has that QP_SIMD allows (as quant/'s
 * kernels choose): 16 (AVX-512), 8 (AVX2) or 0 (scalar). */
static int vector_lanes(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const char *cap = getenv("QP_SIMD");
    __builtin_cpu_init();
    if (cap && strcmp(cap, "scalar") == 0) return 0;
    if (__builtin_cpu_supports("avx512f") && !(cap && strcmp(cap, "avx2") == 0)) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 0;
}

int qp_transpose_rht(const float *src, float *dst, int64_t rows, int64_t cols, int n, uint64_t seed)
{
    return qp_transpose_rht_amax(src, dst, rows, cols, n, seed, NULL);
}

int qp_transpose_rht_amax(const float *src, float *dst, int64_t rows, int64_t cols, int n, uint64_t seed,
                          float *amax)
{
    if (!qp_rht_size_ok(n) || rows % n) return -1;
    uint32_t w[4];
    qp_rht_sign_words(seed, w);
    float post[QP_RHT_MAX];
    const float norm = qp_rht_norm(n);
    for (int j = 0; j < n; j++) post[j] = qp_rht_sign_neg(w, j) ? -norm : norm;
    const int lanes = vector_lanes();
    const int64_t vcols = lanes ? cols / lanes * lanes : 0;
    /* bands of n rows in parallel: each writes its own n columns of dst */
    uint32_t most = 0; /* the largest |value|'s bits (max is order-free: any thread count) */
#pragma omp parallel for schedule(static) reduction(max : most) if (rows * cols >= qp_parallel_min())
    for (int64_t r0 = 0; r0 < rows; r0 += n) {
        uint32_t m = 0, a;
#if defined(__x86_64__) && defined(__GNUC__)
        if (lanes == 16)
            for (int64_t c0 = 0; c0 < vcols; c0 += 16)
                if ((a = transpose_rht_tile(src, dst, rows, cols, r0, c0, n, post)) > m) m = a;
        if (lanes == 8)
            for (int64_t c0 = 0; c0 < vcols; c0 += 8)
                if ((a = transpose_rht_tile8(src, dst, rows, cols, r0, c0, n, post)) > m) m = a;
#endif
        for (int64_t c = vcols; c < cols; c++)
            if ((a = transpose_rht_column(src, dst, rows, cols, r0, c, n, w)) > m) m = a;
        if (m > most) most = m;
    }
    (void)post;
    /* a NaN or Inf in the tensor: the finite amax takes a pass of its own */
    if (amax) *amax = most < 0x7F800000u ? qp_bits_f32(most) : qp_amax(dst, rows * cols);
    return 0;
}

static void rht_scalar(float *x, int64_t len, int n, const uint32_t w[4], int inverse)
{
    for (int64_t i = 0; i < len; i += n) qp_rht_vec(x + i, n, w, inverse);
}

static int rht(float *x, int64_t rows, int64_t cols, int n, uint64_t seed, int inverse)
{
    if (!qp_rht_size_ok(n) || cols % n) return -1;
    uint32_t w[4];
    qp_rht_sign_words(seed, w);
    const int64_t total = rows * cols;
    const int vec = vector_lanes() == 16; /* the in-place transform's vector path is AVX-512's */
    /* chunks of whole n-vectors in parallel: each vector is independent */
#pragma omp parallel for schedule(static) if (total >= qp_parallel_min())
    for (int64_t r0 = 0; r0 < total; r0 += 4096) {
        const int64_t len = total - r0 < 4096 ? total - r0 : 4096;
#if defined(__x86_64__) && defined(__GNUC__)
        if (vec) {
            rht_avx512(x + r0, len, n, w, inverse);
            continue;
        }
#endif
        rht_scalar(x + r0, len, n, w, inverse);
    }
    (void)vec;
    return 0;
}

int qp_rht(float *x, int64_t rows, int64_t cols, int n, uint64_t seed) { return rht(x, rows, cols, n, seed, 0); }
int qp_rht_inverse(float *x, int64_t rows, int64_t cols, int n, uint64_t seed) { return rht(x, rows, cols, n, seed, 1); }
int qp_rht16(float *x, int64_t rows, int64_t cols, uint64_t seed) { return rht(x, rows, cols, 16, seed, 0); }
int qp_rht16_inverse(float *x, int64_t rows, int64_t cols, uint64_t seed) { return rht(x, rows, cols, 16, seed, 1); }

int qp_rht16_te(float *x, int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0 || cols % QK_RHT) return -1;
    const int64_t n = rows * cols;
    for (int64_t i = 0; i < n; i += QK_RHT) qp_rht_te_vec(x + i);
    return 0;
}

int qp_rht16_kind(float *x, int64_t rows, int64_t cols, int kind, uint64_t seed)
{
    switch ((qp_rht_kind)kind) {
    case QP_RHT_OFF: return 0;
    case QP_RHT_SEEDED: return qp_rht16(x, rows, cols, seed);
    case QP_RHT_TE: return qp_rht16_te(x, rows, cols);
    }
    return -1;
}
