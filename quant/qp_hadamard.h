/* qp_hadamard.h — random Hadamard transforms (RHT) of 16, 32, 64 and 128 points.
 *
 * Owns: applying R = H_n * diag(s) / sqrt(n) along rows, with H_n the
 * Sylvester Hadamard matrix and s a +-1 sign vector drawn from a seed (s_j =
 * -1 where bit j%32 of word j/32 of qp_philox4x32(seed, 0, 0) is set; the
 * 16-point transform reads the low 16 bits of word 0, as it always did). The
 * definition of one vector's transform is qp_core.h's qp_rht_vec, which the
 * GPU compiles too; this module runs it over tensors, with an AVX-512 path
 * bit-identical to it. R is orthogonal (up to the rounding of 1/sqrt(n) for
 * n = 32, 128), so applying it to the contraction dimension of both GEMM
 * operands leaves the exact product unchanged: (A R)(B R)^T = A B^T. NVIDIA's
 * NVFP4 recipe applies the 16-point one to the weight-gradient GEMM's operands
 * to spread outliers across a block before 4-bit quantization; Quartet II uses
 * 128 points. */
#ifndef QP_HADAMARD_H
#define QP_HADAMARD_H

#include <stdint.h>

#include "qp_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The n signs (+1/-1) for a seed (n = 16, 32, 64 or 128). */
void qp_rht_signs_n(uint64_t seed, int n, float *signs);
/* The 16 signs of the 16-point transform. */
void qp_rht_signs(uint64_t seed, float signs[16]);

/* In place, every consecutive n elements of each row: x <- x R (row vector
 * times R). Returns 0, or -1 (nothing changed) if n is not 16, 32, 64 or 128
 * or cols is not a multiple of n. */
int qp_rht(float *x, int64_t rows, int64_t cols, int n, uint64_t seed);
/* The inverse: x <- x R^T. */
int qp_rht_inverse(float *x, int64_t rows, int64_t cols, int n, uint64_t seed);

/* dst (cols x rows) = the transform of src^T: what qp_transpose of src
 * (rows x cols) then qp_rht of the result give, bit for bit, in one pass (the
 * butterflies run between src's rows). The weight-gradient GEMM's operands
 * are stored tokens x channels and rotated along tokens. Returns 0, or -1
 * (nothing written) if n is not 16, 32, 64 or 128 or rows is not a multiple
 * of n. */
int qp_transpose_rht(const float *src, float *dst, int64_t rows, int64_t cols, int n, uint64_t seed);
/* The same, and *amax = qp_amax(dst, rows * cols) from the values as they
 * are written (NVFP4's tensor scale needs the rotated tensor's amax: no
 * second pass over dst). */
int qp_transpose_rht_amax(const float *src, float *dst, int64_t rows, int64_t cols, int n, uint64_t seed,
                          float *amax);

/* Which 16-point transform a report applies (qerr --rht, the Python
 * package's rht=): none, qprec's seeded R, or Transformer Engine's
 * (qp_core.h's qp_rht_te_vec: fixed signs, on H's rows). */
typedef enum { QP_RHT_OFF = 0, QP_RHT_SEEDED = 1, QP_RHT_TE = 2 } qp_rht_kind;
/* In place, every consecutive 16 elements of each row by TE's transform.
 * Returns 0, or -1 (nothing changed) if cols is not a multiple of 16. */
int qp_rht16_te(float *x, int64_t rows, int64_t cols);
/* qp_rht16 (seeded) or qp_rht16_te by kind; QP_RHT_OFF changes nothing.
 * Returns 0, or -1 (nothing changed) for another kind or cols not a
 * multiple of 16 (with a transform). */
int qp_rht16_kind(float *x, int64_t rows, int64_t cols, int kind, uint64_t seed);

/* The 16-point transform (qp_rht with n = 16). */
int qp_rht16(float *x, int64_t rows, int64_t cols, uint64_t seed);
int qp_rht16_inverse(float *x, int64_t rows, int64_t cols, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
