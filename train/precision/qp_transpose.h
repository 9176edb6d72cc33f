/* qp_transpose.h — matrix transposes for the precision dispatch.
 *
 * Owns: dst (rows x cols) = src^T (src stored cols x rows), fast: 16x16 tiles
 * of AVX-512 shuffles where the CPU has them (QP_SIMD=scalar or avx2 says
 * no), 4x4 SSE tiles otherwise, the
 * tiles split among the OpenMP threads when the matrix is big enough to be
 * worth a parallel region. A transpose moves bits and nothing else, so every
 * path gives the same result. */
#ifndef QP_TRANSPOSE_H
#define QP_TRANSPOSE_H

#ifdef __cplusplus
extern "C" {
#endif

void qp_transpose(const float *src, float *dst, int rows, int cols);

#ifdef __cplusplus
}
#endif
#endif
