// qp_cuda_rht.cu — the 16-point random Hadamard transform and the transpose
// (see qp_cuda_quant.h). The RHT of one 16-vector is qp_cuda_qcore.h's
// qc_rht16_vec (the butterflies and sign rule of quant/qp_hadamard.c, checked
// on the CPU by test_qcore); the sign mask is drawn on the host once.
#include <cuda_runtime.h>

#include "qp_cuda_internal.cuh"
#include "qp_cuda_quant.h"

using namespace qpc;

namespace {

// One thread per 16-vector (n16 of them), 16-byte loads and stores when aligned.
__global__ void __launch_bounds__(kThreads) rht16_kernel(float *x, int64_t n16, uint32_t mask, bool vec)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n16) return;
    float v[16];
    float *p = x + i * 16;
    // plain (coherent) loads, not load_block's __ldg: the kernel writes x, and
    // the read-only path is only defined for data no thread writes meanwhile
    if (vec) {
#pragma unroll
        for (int k = 0; k < 16; k += 4) {
            const float4 q = *reinterpret_cast<const float4 *>(p + k);
            v[k] = q.x, v[k + 1] = q.y, v[k + 2] = q.z, v[k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < 16; k++) v[k] = p[k];
    }
    qc_rht16_vec(v, mask);
    store_floats<16>(p, 16, vec, v);
}

constexpr int kTile = 32, kRowsPerPass = 8;

// dst (cols x rows) = src^T, through a padded 32x32 shared-memory tile. The
// grid's y extent is capped at 65535 (the hardware limit), so blocks walk the
// row tiles with a stride of gridDim.y: any number of rows works.
__global__ void transpose_kernel(const float *src, float *dst, int rows, int cols)
{
    __shared__ float tile[kTile][kTile + 1];
    const int64_t bx = (int64_t)blockIdx.x * kTile;
    for (int64_t by = (int64_t)blockIdx.y * kTile; by < rows; by += (int64_t)gridDim.y * kTile) {
        for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
            const int64_t r = by + k, c = bx + threadIdx.x;
            if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * cols + c];
        }
        __syncthreads();
        for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
            const int64_t c = bx + k, r = by + threadIdx.x;  // dst row c, column r
            if (c < cols && r < rows) dst[c * rows + r] = tile[threadIdx.x][k];
        }
        __syncthreads();  // the tile is refilled by the next pass
    }
}

}  // namespace

extern "C" int qp_cuda_rht16(float *d_x, int rows, int cols, uint64_t seed, void *stream)
{
    if (rows < 0 || cols < 0 || cols % 16) return (int)cudaErrorInvalidValue;
    const int64_t n16 = (int64_t)rows * cols / 16;
    if (n16 == 0) return 0;
    rht16_kernel<<<grid_for(n16), kThreads, 0, (cudaStream_t)stream>>>(d_x, n16, qc_rht_sign_mask(seed),
                                                                         aligned16(d_x));
    return last_error();
}

extern "C" int qp_cuda_transpose(const float *d_src, float *d_dst, int rows, int cols, void *stream)
{
    if (rows < 0 || cols < 0) return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return 0;
    const int64_t ty = ((int64_t)rows + kTile - 1) / kTile;
    const dim3 grid((unsigned)((cols + kTile - 1) / kTile), (unsigned)(ty < 65535 ? ty : 65535));
    transpose_kernel<<<grid, dim3(kTile, kRowsPerPass), 0, (cudaStream_t)stream>>>(d_src, d_dst, rows, cols);
    return last_error();
}
