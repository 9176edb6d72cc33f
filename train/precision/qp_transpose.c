/* qp_transpose.c — see qp_transpose.h. */
#include "qp_transpose.h"

#include "qp_quant.h"
#include "qp_simd_registers.h"

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

/* The same tile with 16x16 AVX-512 register transposes. */
__attribute__((target("avx512f"))) static void tile_avx512(const float *src, float *dst, int rows, int cols, int r0,
                                                           int c0)
{
    for (int r = r0; r < r0 + TILE; r += 16)
        for (int c = c0; c < c0 + TILE; c += 16) {
            __m512 v[16]; /* v[i]: dst's column c + i, rows r .. r + 15 (src's row c + i) */
            for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_ps(src + (size_t)(c + i) * rows + r);
            qp_transpose16_avx512(v); /* v[i]: dst's row r + i, columns c .. c + 15 */
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + (size_t)(r + i) * cols + c, v[i]);
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
#pragma omp parallel for schedule(static) if ((int64_t)rows * cols >= qp_parallel_min())
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
