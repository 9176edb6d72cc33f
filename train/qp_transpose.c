/* qp_transpose.c — see qp_transpose.h. */
#include "qp_transpose.h"

#include <immintrin.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Tiles of TILE x TILE: each thread's tiles are contiguous rows of dst. */
#define TILE 64

/* dst[r][c] = src[c][r] for r in [r0, r1), c in [c0, c1): the plain loop,
 * for edges. */
static void edge(const float *src, float *dst, int rows, int cols, int r0, int r1, int c0, int c1)
{
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) dst[(size_t)r * cols + c] = src[(size_t)c * rows + r];
}

/* One TILE x TILE tile (whole) with 4x4 SSE transposes. */
static void tile_sse(const float *src, float *dst, int rows, int cols, int r0, int c0)
{
    for (int r = r0; r < r0 + TILE; r += 4)
        for (int c = c0; c < c0 + TILE; c += 4) {
            __m128 a = _mm_loadu_ps(src + (size_t)c * rows + r), b = _mm_loadu_ps(src + (size_t)(c + 1) * rows + r);
            __m128 e = _mm_loadu_ps(src + (size_t)(c + 2) * rows + r), d = _mm_loadu_ps(src + (size_t)(c + 3) * rows + r);
            _MM_TRANSPOSE4_PS(a, b, e, d);
            _mm_storeu_ps(dst + (size_t)r * cols + c, a);
            _mm_storeu_ps(dst + (size_t)(r + 1) * cols + c, b);
            _mm_storeu_ps(dst + (size_t)(r + 2) * cols + c, e);
            _mm_storeu_ps(dst + (size_t)(r + 3) * cols + c, d);
        }
}

/* The same tile with 16x16 AVX-512 transposes (unpack, then 128-bit lane shuffles). */
__attribute__((target("avx512f"))) static void tile_avx512(const float *src, float *dst, int rows, int cols, int r0,
                                                           int c0)
{
    for (int r = r0; r < r0 + TILE; r += 16)
        for (int c = c0; c < c0 + TILE; c += 16) {
            __m512 v[16], t[16];
            for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_ps(src + (size_t)(c + i) * rows + r);
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
            /* v[4k + j] holds, in 128-bit lane q, column j of the 4x4 block (rows 4q.., cols 4k..) */
            for (int i = 0; i < 4; i++) {
                /* gather lane q of v[i], v[4+i], v[8+i], v[12+i]: output rows 4q + i */
                const __m512 a = _mm512_shuffle_f32x4(v[i], v[4 + i], 0x44), b = _mm512_shuffle_f32x4(v[i], v[4 + i], 0xEE);
                const __m512 e = _mm512_shuffle_f32x4(v[8 + i], v[12 + i], 0x44), d = _mm512_shuffle_f32x4(v[8 + i], v[12 + i], 0xEE);
                t[i] = _mm512_shuffle_f32x4(a, e, 0x88);      /* lane 0 of each: row i */
                t[4 + i] = _mm512_shuffle_f32x4(a, e, 0xDD);  /* lane 1: row 4 + i */
                t[8 + i] = _mm512_shuffle_f32x4(b, d, 0x88);  /* lane 2: row 8 + i */
                t[12 + i] = _mm512_shuffle_f32x4(b, d, 0xDD); /* lane 3: row 12 + i */
            }
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + (size_t)(r + i) * cols + c, t[i]);
        }
}

/* QP_SIMD=scalar|avx2 caps the vector path, as for quant/ (qp_quant.h). */
static int have_avx512(void)
{
    static int v = -1;
    if (v < 0) {
        const char *cap = getenv("QP_SIMD");
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512f") && !(cap && (!strcmp(cap, "scalar") || !strcmp(cap, "avx2")));
    }
    return v;
}

void qp_transpose(const float *src, float *dst, int rows, int cols)
{
    const int fr = rows / TILE * TILE, fc = cols / TILE * TILE, avx = have_avx512();
    const int ntr = fr / TILE;
#pragma omp parallel for schedule(static) if ((long long)rows * cols >= (1 << 18))
    for (int tr = 0; tr <= ntr; tr++) {
        const int r0 = tr * TILE, r1 = tr < ntr ? r0 + TILE : rows;
        if (tr < ntr)
            for (int c0 = 0; c0 < fc; c0 += TILE) {
                if (avx) tile_avx512(src, dst, rows, cols, r0, c0);
                else tile_sse(src, dst, rows, cols, r0, c0);
            }
        edge(src, dst, rows, cols, r0, r1, tr < ntr ? fc : 0, cols); /* right edge; the last strip whole */
    }
}
