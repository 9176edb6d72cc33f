/* qprec_linear_ops.h — the package's qp_gemm: the capture the dispatch's
 * GEMMs write their decoded operands into (qprec_linear_ops.c). */
#ifndef QPREC_LINEAR_OPS_H
#define QPREC_LINEAR_OPS_H

#include <stdint.h>

#include "qp_gemm.h"
#include "qp_linear_ops.h"

#define QPREC_CAPTURES 4 /* operand pairs one dispatch call multiplies at most (the backward: dgrad, wgrad) */

qp_gemm *qprec_gemm_create(void);
void qprec_gemm_destroy(qp_gemm *g);
/* The next n_pairs GEMMs write A into bufs[2i] and B into bufs[2i+1]. */
void qprec_gemm_capture(qp_gemm *g, float *const *bufs, int n_pairs);
/* The CPU operations' product (qp_linear_host_set_gemm with user g): the
 * two operands, decoded, into the next capture pair. */
int qprec_gemm_product(void *user, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N,
                       int K, float alpha, int accumulate, char *err, size_t errlen);

#endif
