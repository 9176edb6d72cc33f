// qp_cuda_internal.cuh — what the .cu files of kernels/ share: launch sizes,
// alignment checks, warp reductions and the stats accumulation. Not public.
#ifndef QP_CUDA_INTERNAL_CUH
#define QP_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>

#include <cstdint>

#include "qp_cuda_qcore.h"
#include "qp_cuda_quant.h"

namespace qpc {

constexpr int kThreads = 256;
// Every kernel runs whole warps: the full-mask shuffles of add_stats, amax_kernel
// and tile_kernel's half-warp tile reduction (16 lanes = one tile, tiles never
// straddle a block) are only defined when all 32 lanes exist.
static_assert(kThreads % 32 == 0, "kThreads must be a whole number of warps");

inline unsigned int grid_for(int64_t nthreads)
{
    const int64_t b = (nthreads + kThreads - 1) / kThreads;
    return (unsigned int)(b < 1 ? 1 : b);
}

inline bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

inline int last_error()
{
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : (int)e;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
    return v;
}

__device__ __forceinline__ uint32_t warp_sum(uint32_t v)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
    return v;
}

// Every lane of the warp must call this (inactive lanes with zero counts and
// amax 0). amax is a finite non-negative float: its bits order as unsigned.
__device__ __forceinline__ void add_stats(qp_cuda_tstats *st, const qp_ecounts &c, float amax, bool track_amax)
{
    if (!st) return;
    const uint32_t nf = warp_sum(c.n_nonfinite), sat = warp_sum(c.n_sat);
    const float m = track_amax ? warp_max(amax) : 0.0f;
    if ((threadIdx.x & 31) == 0) {
        if (nf) atomicAdd(&st->n_nonfinite, (unsigned long long)nf);
        if (sat) atomicAdd(&st->n_sat, (unsigned long long)sat);
        if (track_amax && m > 0.0f) atomicMax(reinterpret_cast<unsigned int *>(&st->amax), __float_as_uint(m));
    }
}

// Loads of n <= 32 floats into a register array; 16-byte loads when allowed.
template <int N>
__device__ __forceinline__ void load_block(const float *src, int n, bool vec, float (&v)[N])
{
    if (vec && n == N) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            const float4 q = __ldg(reinterpret_cast<const float4 *>(src + i));
            v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = i < n ? src[i] : 0.0f;
    }
}

template <int N>
__device__ __forceinline__ void store_floats(float *dst, int n, bool vec, const float (&v)[N])
{
    if (vec && n == N) {
#pragma unroll
        for (int i = 0; i < N; i += 4) *reinterpret_cast<float4 *>(dst + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < N; i++)
            if (i < n) dst[i] = v[i];
    }
}

// BF16 bits of n values (RNE, as qp_f32_to_bf16); 16-byte stores when allowed.
template <int N>
__device__ __forceinline__ void store_bf16(uint16_t *dst, int n, bool vec, const float (&v)[N])
{
    if (vec && n == N && N % 8 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 8) {
            uint4 q;
            q.x = qp_f32_to_bf16(v[i]) | (uint32_t)qp_f32_to_bf16(v[i + 1]) << 16;
            q.y = qp_f32_to_bf16(v[i + 2]) | (uint32_t)qp_f32_to_bf16(v[i + 3]) << 16;
            q.z = qp_f32_to_bf16(v[i + 4]) | (uint32_t)qp_f32_to_bf16(v[i + 5]) << 16;
            q.w = qp_f32_to_bf16(v[i + 6]) | (uint32_t)qp_f32_to_bf16(v[i + 7]) << 16;
            *reinterpret_cast<uint4 *>(dst + i) = q;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; i++)
            if (i < n) dst[i] = qp_f32_to_bf16(v[i]);
    }
}

// nbytes bytes (a multiple of 8 when vec) from a local array to global memory.
template <int NB>
__device__ __forceinline__ void store_bytes(uint8_t *dst, int nbytes, bool vec, const uint8_t (&b)[NB])
{
    if (vec && nbytes == NB && NB % 16 == 0) {
#pragma unroll
        for (int i = 0; i < NB; i += 16) {
            uint4 q;
            memcpy(&q, b + i, 16);
            *reinterpret_cast<uint4 *>(dst + i) = q;
        }
    } else if (vec && nbytes == NB && NB % 8 == 0) {
#pragma unroll
        for (int i = 0; i < NB; i += 8) {
            uint2 q;
            memcpy(&q, b + i, 8);
            *reinterpret_cast<uint2 *>(dst + i) = q;
        }
    } else {
#pragma unroll
        for (int i = 0; i < NB; i++)
            if (i < nbytes) dst[i] = b[i];
    }
}

}  // namespace qpc

#endif
