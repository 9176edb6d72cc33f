/* qp_nccl.h — the GPU all-reduce of a data-parallel --device cuda run (NCCL).
 *
 * Owns: one NCCL communicator over the ranks of the MPI job (one GPU per
 * rank) and the FP32 sum of a device buffer over it. Rank 0 makes the unique
 * id (qp_nccl_unique_id), the caller broadcasts it (qp_dist_bcast) and every
 * rank calls qp_nccl_create with it. Plain C over nccl.h and the CUDA
 * runtime; built (libqpnccl) only when NCCL, CUDA and MPI are found, and then
 * QP_HAVE_NCCL is defined for the trainer. Nothing here has run on a GPU. */
#ifndef QP_NCCL_H
#define QP_NCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QP_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

typedef struct qp_nccl qp_nccl;

/* The device a rank uses: local_rank % devices (devices > 0). */
int qp_nccl_pick_device(int local_rank, int devices);

/* A new unique id into id[QP_NCCL_ID_BYTES] (rank 0 only). 0, or -1 + err. */
int qp_nccl_unique_id(uint8_t id[QP_NCCL_ID_BYTES], char *err, size_t errlen);

/* The communicator of rank `rank` of `size` on the current device; stream:
 * the compute stream (cudaStream_t) the all-reduce is enqueued on. NULL + err. */
qp_nccl *qp_nccl_create(const uint8_t id[QP_NCCL_ID_BYTES], int rank, int size, void *stream, char *err,
                        size_t errlen);
void qp_nccl_destroy(qp_nccl *c);

/* d_buf[0..n) <- its sum over the ranks (ncclAllReduce, ncclSum, FP32) on the
 * stream, then waits for the stream. *ms, if not NULL, gets the wall time. 0,
 * or -1 + err. */
int qp_nccl_sum_f32(qp_nccl *c, float *d_buf, int64_t n, double *ms, char *err, size_t errlen);

/* "NCCL 2.28.x" */
const char *qp_nccl_version(void);

#ifdef __cplusplus
}
#endif
#endif
