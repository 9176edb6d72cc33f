// qp_cuda_standins.cu — simple stand-ins for the device quantization
// (qp_cuda_quant.h) and cuBLASLt GEMM (qp_cublaslt.h) functions that other
// branches implement, so the GPU trainer links before they land. CMake builds
// this file only while those implementations are missing from the tree
// (QP_STANDIN_QUANT: no qp_cuda_qcore.h; QP_STANDIN_GEMM: no qp_cublaslt.cu),
// so it disappears at the merge. The quantization stand-ins are a host round
// trip through quant/ (synchronous, bit-identical by construction); the GEMM
// stand-in is cublasGemmEx for BF16 and FP32 operands only.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if QP_STANDIN_QUANT
#include "qp_cuda_quant.h"
#include "qp_hadamard.h"
#include "qp_quant.h"

static int host_copy_in(const float *d_x, int64_t n, std::vector<float> &h, cudaStream_t s)
{
    h.resize((size_t)n);
    cudaError_t e = cudaMemcpyAsync(h.data(), d_x, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return (int)e;
}

extern "C" const char *qp_cuda_error_string(int rc) { return cudaGetErrorString((cudaError_t)rc); }

extern "C" int qp_cuda_amax(const float *d_x, int64_t n, float *d_amax, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    std::vector<float> h;
    int rc = host_copy_in(d_x, n, h, s);
    if (rc) return rc;
    float m = 0.0f;
    for (float v : h)
        if (std::isfinite(v) && std::fabs(v) > m) m = std::fabs(v);
    cudaError_t e = cudaMemcpyAsync(d_amax, &m, sizeof m, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return (int)e;
}

static int tensor_opts(const qp_qopts *opts, const float *d_scale_in, qp_qopts *o, cudaStream_t s)
{
    *o = *opts;
    if (d_scale_in) {
        cudaError_t e = cudaMemcpyAsync(&o->scale, d_scale_in, sizeof(float), cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        return (int)e;
    }
    return 0;
}

static int put_stats(const qp_qstats *st, qp_cuda_tstats *d_stats, cudaStream_t s)
{
    if (!d_stats) return 0;
    qp_cuda_tstats t;
    std::memset(&t, 0, sizeof t);
    t.amax = st->amax, t.scale = st->scale, t.scale_inv = st->scale_inv;
    t.n_nonfinite = (unsigned long long)st->n_nonfinite, t.n_sat = (unsigned long long)st->n_sat;
    cudaError_t e = cudaMemcpyAsync(d_stats, &t, sizeof t, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return (int)e;
}

extern "C" int qp_cuda_qdq(qp_fmt fmt, const float *d_x, float *d_y, uint16_t *d_y_bf16, int rows, int cols,
                           const qp_qopts *opts, const float *d_tensor_scale_in, qp_cuda_tstats *d_stats,
                           void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = (int64_t)rows * cols;
    std::vector<float> h;
    qp_qopts o;
    int rc = host_copy_in(d_x, n, h, s);
    if (!rc) rc = tensor_opts(opts, d_tensor_scale_in, &o, s);
    if (rc) return rc;
    qp_qstats st;
    qp_qdq(fmt, h.data(), h.data(), rows, cols, &o, &st);
    cudaError_t e = cudaSuccess;
    if (d_y) e = cudaMemcpyAsync(d_y, h.data(), (size_t)n * sizeof(float), cudaMemcpyHostToDevice, s);
    std::vector<uint16_t> b;
    if (e == cudaSuccess && d_y_bf16) {
        b.resize((size_t)n);
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            std::memcpy(&u, &h[(size_t)i], 4);
            b[(size_t)i] = (uint16_t)(u >> 16); // exact: the values are BF16-representable (unscaled)
        }
        e = cudaMemcpyAsync(d_y_bf16, b.data(), (size_t)n * 2, cudaMemcpyHostToDevice, s);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return (int)e;
    return put_stats(&st, d_stats, s);
}

extern "C" int qp_cuda_quantize(qp_fmt fmt, const float *d_x, int rows, int cols, const qp_qopts *opts,
                                const float *d_tensor_scale_in, uint8_t *d_codes, uint8_t *d_scales,
                                qp_cuda_tstats *d_stats, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    std::vector<float> h;
    qp_qopts o;
    int rc = host_copy_in(d_x, (int64_t)rows * cols, h, s);
    if (!rc) rc = tensor_opts(opts, d_tensor_scale_in, &o, s);
    if (rc) return rc;
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) return (int)cudaErrorMemoryAllocation;
    qp_qstats st;
    qp_quantize(h.data(), &q, &o, &st);
    cudaError_t e = cudaMemcpyAsync(d_codes, q.codes, (size_t)(q.rows * q.row_bytes), cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess && d_scales && q.scales)
        e = cudaMemcpyAsync(d_scales, q.scales, (size_t)(q.scale_rows * q.scale_cols), cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    qp_qtensor_free(&q);
    if (e != cudaSuccess) return (int)e;
    return put_stats(&st, d_stats, s);
}

extern "C" int qp_cuda_rht16(float *d_x, int rows, int cols, uint64_t seed, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (cols % 16) return (int)cudaErrorInvalidValue;
    std::vector<float> h;
    int rc = host_copy_in(d_x, (int64_t)rows * cols, h, s);
    if (rc) return rc;
    if (qp_rht16(h.data(), rows, cols, seed)) return (int)cudaErrorInvalidValue;
    cudaError_t e = cudaMemcpyAsync(d_x, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return (int)e;
}

__global__ void standin_transpose(const float *src, float *dst, int rows, int cols)
{
    __shared__ float tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (r0 + j < rows && c < cols) tile[j][threadIdx.x] = src[(int64_t)(r0 + j) * cols + c];
    __syncthreads();
    const int r = r0 + threadIdx.x, c0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (c0 + j < cols && r < rows) dst[(int64_t)(c0 + j) * rows + r] = tile[threadIdx.x][j];
}

extern "C" int qp_cuda_transpose(const float *d_src, float *d_dst, int rows, int cols, void *stream)
{
    const dim3 grid((unsigned)((cols + 31) / 32), (unsigned)((rows + 31) / 32)), block(32, 8);
    standin_transpose<<<grid, block, 0, (cudaStream_t)stream>>>(d_src, d_dst, rows, cols);
    return (int)cudaGetLastError();
}
#endif // QP_STANDIN_QUANT

#if QP_STANDIN_GEMM
#include <cublas_v2.h>

#include "qp_cublaslt.h"

struct qp_cublt {
    cublasHandle_t h;
    cudaStream_t stream;
    int cc;
    char err[256];
};

extern "C" qp_cublt *qp_cublt_create(void *stream, char *err, size_t errlen)
{
    qp_cublt *b = (qp_cublt *)std::calloc(1, sizeof *b);
    int dev = 0;
    cudaDeviceProp p;
    if (!b || cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        std::snprintf(err, errlen, "no CUDA device for the GEMM handle");
        std::free(b);
        return nullptr;
    }
    if (cublasCreate(&b->h) != CUBLAS_STATUS_SUCCESS) {
        std::snprintf(err, errlen, "cublasCreate failed");
        std::free(b);
        return nullptr;
    }
    b->stream = (cudaStream_t)stream;
    cublasSetStream(b->h, b->stream);
    cublasSetMathMode(b->h, CUBLAS_DEFAULT_MATH); // FP32 stays FP32 (no TF32)
    b->cc = p.major * 10 + p.minor;
    return b;
}

extern "C" void qp_cublt_destroy(qp_cublt *b)
{
    if (!b) return;
    cublasDestroy(b->h);
    std::free(b);
}

extern "C" const char *qp_cublt_error(const qp_cublt *b) { return b ? b->err : "no GEMM handle"; }
extern "C" int qp_cublt_cc(const qp_cublt *b) { return b->cc; }
extern "C" int qp_cublt_native(const qp_cublt *b, qp_cublt_type t)
{
    (void)b;
    return t == QP_CUBLT_F32 || t == QP_CUBLT_BF16; // the stand-in runs nothing else
}

extern "C" int qp_cublt_gemm(qp_cublt *b, const qp_cublt_operand *A, const qp_cublt_operand *B, float *d_D, int M,
                             int N, int K, float alpha, float beta, float *d_amax_d, const char **path_out)
{
    (void)d_amax_d;
    if (A->type != B->type || (A->type != QP_CUBLT_F32 && A->type != QP_CUBLT_BF16)) {
        std::snprintf(b->err, sizeof b->err, "GEMM stand-in: only BF16 x BF16 and FP32 x FP32 (types %d, %d)",
                      (int)A->type, (int)B->type);
        return -1;
    }
    const cudaDataType t = A->type == QP_CUBLT_F32 ? CUDA_R_32F : CUDA_R_16BF;
    // Row-major D[M,N] = A[M,K] B[N,K]^T is column-major D^T[N,M] = B^T' A' with B, A stored K-major.
    const cublasStatus_t st = cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B->d_data, t, K,
                                           A->d_data, t, K, &beta, d_D, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        std::snprintf(b->err, sizeof b->err, "cublasGemmEx (%dx%dx%d) failed: status %d", M, N, K, (int)st);
        return -1;
    }
    if (path_out) *path_out = A->type == QP_CUBLT_F32 ? "fp32" : "bf16";
    return 0;
}
#endif // QP_STANDIN_GEMM
