/* qp_hadamard.c — 16-point random Hadamard transform (see qp_hadamard.h),
 * computed with the fast Walsh-Hadamard butterfly (H16 is symmetric). */
#include "qp_hadamard.h"

#include <stdlib.h>
#include <string.h>

#include "qp_rng.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

void qp_rht_signs(uint64_t seed, float signs[16])
{
    uint32_t r[4];
    qp_philox4x32(seed, 0, 0, r);
    for (int i = 0; i < 16; i++) signs[i] = (r[0] >> i) & 1u ? -1.0f : 1.0f;
}

static void fwht16(float *v)
{
    for (int h = 1; h < 16; h <<= 1)
        for (int i = 0; i < 16; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
}

/* Forward: v <- diag(s) H v / 4. Inverse: v <- H diag(s) v / 4. */
static void rht_scalar(float *x, int64_t n, const float s[16], int inverse)
{
    for (int64_t i = 0; i < n; i += 16) {
        float *v = x + i;
        if (inverse)
            for (int j = 0; j < 16; j++) v[j] *= s[j];
        fwht16(v);
        for (int j = 0; j < 16; j++) v[j] *= inverse ? 0.25f : 0.25f * s[j];
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same butterflies, one block per register: lane j pairs with j ^ h; the
 * lower lane of a pair takes a + b, the upper b - a... exactly the scalar
 * loop's operations, so the results are identical. */
__attribute__((target("avx512f"))) static void rht_avx512(float *x, int64_t n, const float s[16], int inverse)
{
    static const int32_t partner[4][16] = {
        {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
        {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
        {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
        {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}};
    static const __mmask16 upper[4] = {0xAAAA, 0xCCCC, 0xF0F0, 0xFF00};
    const __m512 sign = _mm512_loadu_ps(s), quarter = _mm512_set1_ps(0.25f);
    const __m512 post = inverse ? quarter : _mm512_mul_ps(quarter, sign);
    __m512i idx[4];
    for (int h = 0; h < 4; h++) idx[h] = _mm512_loadu_si512(partner[h]);
    for (int64_t i = 0; i < n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        if (inverse) v = _mm512_mul_ps(v, sign);
        for (int h = 0; h < 4; h++) {
            const __m512 p = _mm512_permutexvar_ps(idx[h], v);
            /* lower lane j: v[j] + v[j+h]; upper lane: v[j-h] - v[j] */
            v = _mm512_mask_blend_ps(upper[h], _mm512_add_ps(v, p), _mm512_sub_ps(p, v));
        }
        _mm512_storeu_ps(x + i, _mm512_mul_ps(v, post));
    }
}
#endif

static void rht(float *x, int64_t rows, int64_t cols, uint64_t seed, int inverse)
{
    float s[16];
    qp_rht_signs(seed, s);
    const int64_t n = rows * cols;
#if defined(__x86_64__) && defined(__GNUC__)
    const char *cap = getenv("QP_SIMD");
    __builtin_cpu_init();
    const int vec = __builtin_cpu_supports("avx512f") && !(cap && strcmp(cap, "scalar") == 0);
#else
    const int vec = 0;
#endif
    /* rows of 16-blocks in parallel: each block is independent */
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t r0 = 0; r0 < n; r0 += 4096) {
        const int64_t len = n - r0 < 4096 ? n - r0 : 4096;
#if defined(__x86_64__) && defined(__GNUC__)
        if (vec) {
            rht_avx512(x + r0, len, s, inverse);
            continue;
        }
#endif
        rht_scalar(x + r0, len, s, inverse);
    }
    (void)vec;
}

int qp_rht16(float *x, int64_t rows, int64_t cols, uint64_t seed)
{
    if (cols % 16) return -1;
    rht(x, rows, cols, seed, 0);
    return 0;
}

int qp_rht16_inverse(float *x, int64_t rows, int64_t cols, uint64_t seed)
{
    if (cols % 16) return -1;
    rht(x, rows, cols, seed, 1);
    return 0;
}
