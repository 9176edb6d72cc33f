/* qp_hadamard.h — the 16-point random Hadamard transform (RHT).
 *
 * Owns: R = H16 * diag(s) / 4, with H16 the Sylvester Hadamard matrix and s a
 * +-1 sign vector drawn from a seed (bit i of qp_philox4x32(seed, 0, 0)[0]).
 * R is orthogonal, so applying it to the contraction dimension of both GEMM
 * operands leaves the exact product unchanged: (A R)(B R)^T = A B^T. NVIDIA's
 * NVFP4 recipe applies it to the weight-gradient GEMM's operands to spread
 * outliers across a block before 4-bit quantization. */
#ifndef QP_HADAMARD_H
#define QP_HADAMARD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The 16 signs (+1/-1) for a seed. */
void qp_rht_signs(uint64_t seed, float signs[16]);

/* In place, every consecutive 16 elements of each row: x <- x R (row vector
 * times R). cols must be a multiple of 16; returns 0, or -1 if it is not. */
int qp_rht16(float *x, int64_t rows, int64_t cols, uint64_t seed);
/* The inverse: x <- x R^T. */
int qp_rht16_inverse(float *x, int64_t rows, int64_t cols, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
