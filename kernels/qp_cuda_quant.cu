// qp_cuda_quant.cu — amax and per-tensor FP8 cast kernels (see qp_cuda_quant.h).
// The scale is computed on the host from the device amax with the same float
// expression as quant/qp_scaling.c's qp_scale_from_amax, so codes match bit for bit.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "qp_cuda_quant.h"

// Max of |x| over finite values, as unsigned bits (order-preserving for non-negative floats).
__global__ void amax_kernel(const float *x, int64_t n, unsigned int *out)
{
    unsigned int m = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const unsigned int a = __float_as_uint(x[i]) & 0x7FFFFFFFu;
        if (a < 0x7F800000u && a > m) m = a;
    }
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_down_sync(0xFFFFFFFFu, m, off));
    if ((threadIdx.x & 31) == 0) atomicMax(out, m);
}

__global__ void cast_fp8_kernel(const float *x, int64_t n, float s, int e5m2, uint8_t *codes)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        codes[i] = __nv_cvt_float_to_fp8(x[i] * s, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
}

extern "C" int qp_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int qp_cuda_quantize_fp8(const float *d_x, int64_t n, int e5m2, uint8_t *d_codes, float *scale_inv)
{
    unsigned int *d_amax = nullptr;
    cudaError_t err = cudaMalloc(&d_amax, sizeof(unsigned int));
    if (err != cudaSuccess) return (int)err;
    cudaMemset(d_amax, 0, sizeof(unsigned int));
    const int threads = 256, blocks = 1024;
    amax_kernel<<<blocks, threads>>>(d_x, n, d_amax);
    unsigned int bits = 0;
    err = cudaMemcpy(&bits, d_amax, sizeof bits, cudaMemcpyDeviceToHost);
    cudaFree(d_amax);
    if (err != cudaSuccess) return (int)err;
    float amax;
    std::memcpy(&amax, &bits, sizeof amax);
    const float fmax = e5m2 ? 57344.0f : 448.0f;
    float s = 1.0f;
    if (amax > 0.0f && std::isfinite(amax)) {
        s = fmax / amax;
        if (!(s <= FLT_MAX)) s = FLT_MAX;
        if (s == 0.0f) s = 1.0f;
    }
    cast_fp8_kernel<<<blocks, threads>>>(d_x, n, s, e5m2, d_codes);
    err = cudaDeviceSynchronize();
    *scale_inv = 1.0f / s;
    return (int)err;
}
