// test_cuda_quant.cu — the GPU FP8 cast against quant/'s qp_quantize, bit for
// bit, on random and adversarial inputs. Exits 77 (ctest SKIP) without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "qp_cuda_quant.h"
#include "qp_quant.h"

int main()
{
    if (qp_cuda_device_count() == 0) {
        std::printf("test_cuda_quant: no CUDA device, SKIP\n");
        return 77;
    }
    const int64_t n = 1 << 20;
    std::vector<float> x(n);
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = ((float)(s >> 40) / 16777216.0f - 0.5f) * (i % 97 == 0 ? 300.0f : 3.0f);
    }
    x[7] = NAN, x[8] = INFINITY, x[9] = 1e-42f, x[10] = -0.0f;
    float *d_x;
    uint8_t *d_c;
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMalloc(&d_c, n);
    cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    int failed = 0, passed = 0;
    for (int e5 = 0; e5 < 2; e5++) {
        float sinv = 0;
        if (qp_cuda_quantize_fp8(d_x, n, e5, d_c, &sinv)) {
            std::printf("kernel failed\n");
            return 1;
        }
        std::vector<uint8_t> got(n);
        cudaMemcpy(got.data(), d_c, n, cudaMemcpyDeviceToHost);
        qp_qtensor q;
        qp_qtensor_alloc(&q, e5 ? QP_FMT_FP8_E5M2 : QP_FMT_FP8_E4M3, 1, n);
        qp_quantize(x.data(), &q, nullptr, nullptr);
        const bool ok = std::memcmp(q.codes, got.data(), n) == 0 && q.scale_inv == sinv;
        ok ? passed++ : failed++;
        std::printf("fp8-%s: GPU codes %s quant/\n", e5 ? "e5m2" : "e4m3", ok ? "==" : "!=");
        qp_qtensor_free(&q);
    }
    cudaFree(d_x);
    cudaFree(d_c);
    std::printf("test_cuda_quant: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
