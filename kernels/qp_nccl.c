/* qp_nccl.c — NCCL all-reduce for data-parallel GPU runs (see qp_nccl.h). */
#include "qp_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

_Static_assert(QP_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "NCCL unique id size");

struct qp_nccl {
    ncclComm_t comm;
    cudaStream_t stream;
};

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int qp_nccl_pick_device(int local_rank, int devices)
{
    if (devices <= 0) return 0;
    if (local_rank < 0) local_rank = 0;
    return local_rank % devices;
}

int qp_nccl_unique_id(uint8_t id[QP_NCCL_ID_BYTES], char *err, size_t errlen)
{
    ncclUniqueId u;
    const ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) {
        snprintf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
        return -1;
    }
    memcpy(id, u.internal, QP_NCCL_ID_BYTES);
    return 0;
}

qp_nccl *qp_nccl_create(const uint8_t id[QP_NCCL_ID_BYTES], int rank, int size, void *stream, char *err,
                        size_t errlen)
{
    qp_nccl *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ncclUniqueId u;
    memcpy(u.internal, id, QP_NCCL_ID_BYTES);
    const ncclResult_t r = ncclCommInitRank(&c->comm, size, u, rank);
    if (r != ncclSuccess) {
        snprintf(err, errlen, "ncclCommInitRank (rank %d of %d): %s", rank, size, ncclGetErrorString(r));
        free(c);
        return NULL;
    }
    c->stream = (cudaStream_t)stream;
    return c;
}

void qp_nccl_destroy(qp_nccl *c)
{
    if (!c) return;
    if (c->comm) ncclCommDestroy(c->comm);
    free(c);
}

int qp_nccl_sum_f32(qp_nccl *c, float *d_buf, int64_t n, double *ms, char *err, size_t errlen)
{
    const double t0 = now_ms();
    const ncclResult_t r = ncclAllReduce(d_buf, d_buf, (size_t)n, ncclFloat32, ncclSum, c->comm, c->stream);
    if (r != ncclSuccess) {
        snprintf(err, errlen, "ncclAllReduce: %s", ncclGetErrorString(r));
        return -1;
    }
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "all-reduce: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        return -1;
    }
    if (ms) *ms = now_ms() - t0;
    return 0;
}

const char *qp_nccl_version(void)
{
    static char buf[32];
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "NCCL ?";
    snprintf(buf, sizeof buf, "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    return buf;
}
