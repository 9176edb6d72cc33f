/* qp_simd_registers.h — operations across sixteen AVX-512 registers (and
 * the butterflies across AVX2 ones).
 *
 * Owns: the one 16 x 16 register transpose the vector paths use (Four Over
 * Six's per-column errors in qp_simd_avx512.c, the transposed Hadamard pass
 * of qp_hadamard.c, the precision dispatch's operand transposes in
 * train/precision/qp_transpose.c) and the Walsh-Hadamard butterflies between
 * registers (qp_hadamard.c's transposed pass and qp_simd_avx512.c's column
 * encoder, which must rotate alike; qp_hadamard.c's AVX2 tiles too).
 * Header-only and always inlined, so each includer compiles it for its own
 * AVX-512 or AVX2 target; include only where __m512 is available (x86-64,
 * GCC or Clang). */
#ifndef QP_SIMD_REGISTERS_H
#define QP_SIMD_REGISTERS_H

#include <immintrin.h>

/* v[i] (row i) becomes column i: afterwards v[j][i] is the old v[i][j]. */
__attribute__((target("avx512f"), always_inline)) static inline void qp_transpose16_avx512(__m512 v[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        v[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        v[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        v[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        v[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* v[4g + j] holds, in 128-bit lane L, elements 4L..4L+3 of column j of rows 4g..4g+3 */
    for (int g = 0; g < 2; g++)
        for (int j = 0; j < 4; j++) {
            t[8 * g + j] = _mm512_shuffle_f32x4(v[8 * g + j], v[8 * g + 4 + j], 0x88);
            t[8 * g + 4 + j] = _mm512_shuffle_f32x4(v[8 * g + j], v[8 * g + 4 + j], 0xDD);
        }
    for (int j = 0; j < 8; j++) {
        v[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        v[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
    }
}

/* qp_fwht's butterflies between registers: register j and j + h as its
 * elements j and j + h, lane by lane (n: 16, 32, 64 or 128; a constant at
 * each call, so the vectors stay in registers). */
__attribute__((target("avx512f"), always_inline)) static inline void qp_fwht_registers_avx512(__m512 *v, int n)
{
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const __m512 a = v[j], b = v[j + h];
                v[j] = _mm512_add_ps(a, b);
                v[j + h] = _mm512_sub_ps(a, b);
            }
}

/* The same eight lanes at a time (the AVX2 tiles of qp_hadamard.c). */
__attribute__((target("avx2"), always_inline)) static inline void qp_fwht_registers_avx2(__m256 *v, int n)
{
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i < n; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const __m256 a = v[j], b = v[j + h];
                v[j] = _mm256_add_ps(a, b);
                v[j + h] = _mm256_sub_ps(a, b);
            }
}

/* The same for n = 16, the loops' trip counts constant so that the
 * compiler unrolls them whole inside a large function too (the general
 * form, left rolled there, kept v in memory: measured 2x slower). A stage's
 * butterflies are independent, so their order changes no bits. */
__attribute__((target("avx512f"), always_inline)) static inline void qp_fwht16_avx512(__m512 v[16])
{
#pragma GCC unroll 4
    for (int h = 1; h < 16; h <<= 1)
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const int j = k / h * 2 * h + k % h;
            const __m512 a = v[j], b = v[j + h];
            v[j] = _mm512_add_ps(a, b);
            v[j + h] = _mm512_sub_ps(a, b);
        }
}

#endif
