// qp_cuda_rht.cu — random Hadamard transforms of 16..128 points, Transformer
// Engine's fixed-sign 16-point one, and the transpose (see qp_cuda_quant.h).
// The RHT of one n-vector is quant/qp_core.h's qp_rht_vec (the butterflies and
// sign rule of quant/qp_hadamard.c, which test_qcore checks on the CPU); the
// sign words are drawn on the host once. TE's transform of one 16-vector is
// qp_core.h's qp_rht_te_vec, the function quant/'s qp_rht16_te runs on the
// host: each product x_j * (+-0.25) rounded once, then the 16 summed by the
// Sylvester butterflies (pairs at distance 1, 2, 4, 8). Built with
// --fmad=false (kernels/CMakeLists.txt), so no product is fused into the add
// that follows it and every rounding is the host's: bit for bit, subnormal
// products included.
#include <cuda_runtime.h>

#include "qp_cuda_internal.cuh"
#include "qp_cuda_quant.h"

using namespace qpc;

namespace {

// One thread per N-vector (n_vec of them), 16-byte loads and stores when
// aligned: the seeded R (TE false), or TE's fixed-sign transform (TE true,
// N = 16; words and inverse unused).
template <int N, bool TE>
__global__ void __launch_bounds__(kThreads) rht_kernel(float *x, int64_t n_vec, uint4 words, bool vec, int inverse)
{
    static_assert(!TE || N == 16, "Transformer Engine's transform has 16 points");
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n_vec) return;
    const uint32_t w[4] = {words.x, words.y, words.z, words.w};
    float v[N];
    float *p = x + i * N;
    // plain (coherent) loads, not load_block's __ldg: the kernel writes x, and
    // the read-only path is only defined for data no thread writes meanwhile
    if (vec) {
#pragma unroll
        for (int k = 0; k < N; k += 4) {
            const float4 q = *reinterpret_cast<const float4 *>(p + k);
            v[k] = q.x, v[k + 1] = q.y, v[k + 2] = q.z, v[k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < N; k++) v[k] = p[k];
    }
    if (TE)
        qp_rht_te_vec(v);
    else
        qp_rht_vec(v, N, w, inverse);
    store_floats<N>(p, N, vec, v);
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

static int launch_rht(float *d_x, int rows, int cols, int n, uint64_t seed, int inverse, void *stream)
{
    if (rows < 0 || cols < 0 || !qp_rht_size_ok(n) || cols % n) return (int)cudaErrorInvalidValue;
    const int64_t n_vec = (int64_t)rows * cols / n;
    if (n_vec == 0) return 0;
    uint32_t w[4];
    qp_rht_sign_words(seed, w);
    const uint4 words = make_uint4(w[0], w[1], w[2], w[3]);
    cudaStream_t s = (cudaStream_t)stream;
    const bool vec = aligned16(d_x);
    switch (n) {
    case 16: rht_kernel<16, false><<<grid_for(n_vec), kThreads, 0, s>>>(d_x, n_vec, words, vec, inverse); break;
    case 32: rht_kernel<32, false><<<grid_for(n_vec), kThreads, 0, s>>>(d_x, n_vec, words, vec, inverse); break;
    case 64: rht_kernel<64, false><<<grid_for(n_vec), kThreads, 0, s>>>(d_x, n_vec, words, vec, inverse); break;
    case 128: rht_kernel<128, false><<<grid_for(n_vec), kThreads, 0, s>>>(d_x, n_vec, words, vec, inverse); break;
    }
    return last_error();
}

extern "C" int qp_cuda_rht(float *d_x, int rows, int cols, int n, uint64_t seed, void *stream)
{
    return launch_rht(d_x, rows, cols, n, seed, 0, stream);
}

extern "C" int qp_cuda_rht_inverse(float *d_x, int rows, int cols, int n, uint64_t seed, void *stream)
{
    return launch_rht(d_x, rows, cols, n, seed, 1, stream);
}

extern "C" int qp_cuda_rht16(float *d_x, int rows, int cols, uint64_t seed, void *stream)
{
    return launch_rht(d_x, rows, cols, 16, seed, 0, stream);
}

extern "C" int qp_cuda_rht16_te(float *d_x, int rows, int cols, void *stream)
{
    if (rows < 0 || cols < 0 || cols % 16) return (int)cudaErrorInvalidValue;
    const int64_t n_vec = (int64_t)rows * cols / 16;
    if (n_vec == 0) return 0;
    rht_kernel<16, true><<<grid_for(n_vec), kThreads, 0, (cudaStream_t)stream>>>(d_x, n_vec, make_uint4(0, 0, 0, 0),
                                                                                 aligned16(d_x), 0);
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
