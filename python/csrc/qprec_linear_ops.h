/* qprec_linear_ops.h — the package's qp_gemm: the capture the dispatch's
 * GEMMs write their decoded operands into (qprec_linear_ops.c). */
#ifndef QPREC_LINEAR_OPS_H
#define QPREC_LINEAR_OPS_H

#include <stdint.h>

#include "qp_gemm.h"

#define QPREC_CAPTURES 4 /* operand pairs one dispatch call multiplies at most (the backward: dgrad, wgrad) */

qp_gemm *qprec_gemm_create(void);
void qprec_gemm_destroy(qp_gemm *g);
/* The next n_pairs GEMMs write A into bufs[2i] and B into bufs[2i+1]. */
void qprec_gemm_capture(qp_gemm *g, float *const *bufs, int n_pairs);
/* Grow the buffers of the operations made with g to operands of n values
 * (the dispatch is created for the smallest; calls grow it): 0, or -1
 * without memory. */
int qprec_gemm_reserve(qp_gemm *g, int64_t n);

#endif
