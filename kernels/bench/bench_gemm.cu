// bench_gemm.cu — GEMM throughput of each qp_cublaslt path on this GPU.
//
// D[n,n] (FP32) = A[n,n] . B[n,n]^T for n = 4096 and 8192: BF16, FP8
// (E4M3 x E4M3, with and without amax_D) and, on compute capability >= 10.0,
// MXFP8 and NVFP4. Random operands (and random valid block scales) generated
// on the device; 5 warm-up runs, then 20 timed runs, each between two CUDA
// events; the median is reported as ms and TFLOP/s (2 n^3 / t), with the ratio
// to BF16 at the same size. Exits 77 without a GPU. Usage: bench_gemm [runs].
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "qp_cublaslt.h"
#include "qp_scale_layout.h"

__device__ static inline uint32_t hash32(uint64_t i, uint32_t seed)
{
    uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
    return (uint32_t)(x >> 16);
}

// kind 0: bf16 bits of U(-1,1); 1: e4m3 of U(-1,1)*448; 2: random byte in [lo, lo+span).
__global__ void fill_kernel(uint8_t *p, int64_t n_elems, int kind, uint32_t seed, int lo, int span)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_elems; i += (int64_t)gridDim.x * blockDim.x) {
        const uint32_t h = hash32((uint64_t)i, seed);
        const float u = (float)(h & 0xFFFFFF) * (2.0f / 16777216.0f) - 1.0f;
        if (kind == 0) {
            const uint32_t b = __float_as_uint(u);
            ((uint16_t *)p)[i] = (uint16_t)(b >> 16);
        } else if (kind == 1) {
            p[i] = (uint8_t)__nv_cvt_float_to_fp8(u * 448.0f, __NV_SATFINITE, __NV_E4M3);
        } else {
            p[i] = (uint8_t)(lo + (int)(h % (uint32_t)span));
        }
    }
}

static void fill(void *p, int64_t n, int kind, uint32_t seed, int lo = 0, int span = 256)
{
    fill_kernel<<<1024, 256>>>((uint8_t *)p, n, kind, seed, lo, span);
}

struct Result {
    const char *name;
    int n;
    double ms, tflops;
};

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        std::printf("bench_gemm: no CUDA device (%s), SKIP\n", de != cudaSuccess ? cudaGetErrorName(de) : "0 devices");
        return 77;
    }
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20, warmup = 5;
    char err[256];
    qp_cublt *h = qp_cublt_create(nullptr, err, sizeof err);
    if (!h) {
        std::fprintf(stderr, "bench_gemm: %s\n", err);
        return 1;
    }
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    const int cc = qp_cublt_cc(h);
    std::printf("bench_gemm: %s, compute capability %d.%d, cuBLASLt workspace %zu MiB, median of %d runs\n", prop.name,
                cc / 10, cc % 10, qp_cublt_workspace_bytes(h) >> 20, runs);

    const int sizes[] = {4096, 8192};
    const int64_t nmax = 8192;
    uint8_t *d_A, *d_B, *d_sa, *d_sb;
    float *d_D, *d_scale, *d_amax;
    const int64_t scale_bytes = qp_scale_tiled_size(nmax, nmax / 16);
    cudaError_t me = cudaMalloc((void **)&d_A, nmax * nmax * 2);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_B, nmax * nmax * 2);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_D, nmax * nmax * 4);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_sa, scale_bytes);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_sb, scale_bytes);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_scale, 4);
    if (me == cudaSuccess) me = cudaMalloc((void **)&d_amax, 4);
    if (me != cudaSuccess) {
        std::fprintf(stderr, "bench_gemm: cudaMalloc: %s (%s)\n", cudaGetErrorName(me), cudaGetErrorString(me));
        return 1;
    }
    const float one = 1.0f / 448.0f;
    cudaMemcpy(d_scale, &one, 4, cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);

    std::vector<Result> results;
    int failures = 0;
    for (int n : sizes) {
        struct Path {
            const char *name;
            qp_cublt_type type;
            bool amax;
        } paths[] = {{"bf16", QP_CUBLT_BF16, false},
                     {"fp8 e4m3", QP_CUBLT_E4M3, false},
                     {"fp8 e4m3 +amax_D", QP_CUBLT_E4M3, true},
                     {"mxfp8", QP_CUBLT_MXFP8, false},
                     {"nvfp4", QP_CUBLT_NVFP4, false}};
        for (const Path &p : paths) {
            if (!qp_cublt_native(h, p.type)) continue;
            const int64_t elems = (int64_t)n * n;
            qp_cublt_operand a = {}, b = {};
            a.type = b.type = p.type;
            a.d_data = d_A, b.d_data = d_B;
            switch (p.type) {
            case QP_CUBLT_BF16: fill(d_A, elems, 0, 1), fill(d_B, elems, 0, 2); break;
            case QP_CUBLT_E4M3:
                fill(d_A, elems, 1, 3), fill(d_B, elems, 1, 4);
                a.d_scale_inv = b.d_scale_inv = d_scale;
                break;
            case QP_CUBLT_MXFP8: {
                fill(d_A, elems, 1, 5), fill(d_B, elems, 1, 6);
                const int64_t sb = qp_scale_tiled_size(n, n / 32);
                fill(d_sa, sb, 2, 7, 120, 8), fill(d_sb, sb, 2, 8, 120, 8);  // E8M0 2^-7 .. 2^0
                a.d_block_scales = d_sa, b.d_block_scales = d_sb;
                break;
            }
            default: {  // NVFP4: any byte is two valid E2M1 codes
                fill(d_A, elems / 2, 2, 9), fill(d_B, elems / 2, 2, 10);
                const int64_t sb = qp_scale_tiled_size(n, n / 16);
                fill(d_sa, sb, 2, 11, 0x30, 16), fill(d_sb, sb, 2, 12, 0x30, 16);  // UE4M3 0.5 .. 1.875
                a.d_block_scales = d_sa, b.d_block_scales = d_sb;
                a.d_scale_inv = b.d_scale_inv = d_scale;
            }
            }
            float *amax = p.amax ? d_amax : nullptr;
            const char *path = nullptr;
            std::vector<float> ms;
            bool ok = true;
            for (int i = 0; i < warmup + runs && ok; i++) {
                cudaEventRecord(e0);
                ok = qp_cublt_gemm(h, &a, &b, d_D, n, n, n, 1.0f, 0.0f, amax, &path) == 0;
                cudaEventRecord(e1);
                if (!ok) break;
                const cudaError_t se = cudaEventSynchronize(e1);
                if (se != cudaSuccess) {
                    std::printf("  %-18s n=%d: %s (%s)\n", p.name, n, cudaGetErrorName(se), cudaGetErrorString(se));
                    failures++;
                    ok = false;
                    break;
                }
                float t = 0;
                cudaEventElapsedTime(&t, e0, e1);
                if (i >= warmup) ms.push_back(t);
            }
            if (!ok) {
                if (qp_cublt_error(h)[0]) {
                    std::printf("  %-18s n=%d: %s\n", p.name, n, qp_cublt_error(h));
                    failures++;
                }
                continue;
            }
            std::qsort(ms.data(), ms.size(), sizeof(float), cmp_float);
            const double med = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
            results.push_back({p.name, n, med, 2.0 * n * (double)n * n / (med * 1e-3) / 1e12});
        }
    }

    std::printf("\n%-18s %6s %10s %10s %9s\n", "path", "n", "ms", "TFLOP/s", "vs bf16");
    for (const Result &r : results) {
        double bf16 = 0;
        for (const Result &q : results)
            if (q.n == r.n && q.name[0] == 'b') bf16 = q.tflops;
        std::printf("%-18s %6d %10.3f %10.1f %8.2fx\n", r.name, r.n, r.ms, r.tflops, bf16 > 0 ? r.tflops / bf16 : 0.0);
    }
    for (int n : sizes) {
        double bf16 = 0, fp8 = 0;
        for (const Result &r : results)
            if (r.n == n) {
                if (r.name[0] == 'b') bf16 = r.tflops;
                if (std::string_view(r.name) == "fp8 e4m3") fp8 = r.tflops;
            }
        if (bf16 > 0 && fp8 > 0) std::printf("FP8/BF16 at %d^3: %.2f\n", n, fp8 / bf16);
    }
    cudaFree(d_A), cudaFree(d_B), cudaFree(d_D), cudaFree(d_sa), cudaFree(d_sb), cudaFree(d_scale), cudaFree(d_amax);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    qp_cublt_destroy(h);
    return failures ? 1 : 0;
}
