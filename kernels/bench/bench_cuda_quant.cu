// bench_cuda_quant.cu — throughput of every kernel of qp_cuda_quant.h next to a
// device-to-device cudaMemcpy of the same input, in the same run.
//
//   bench_cuda_quant [rows cols]     (default 8192 x 8192 float32, 256 MiB)
//
// Each row of the table: median of 20 timed runs (cudaEvent around one call)
// after 3 warm-up runs. GB/s counts the bytes a kernel must move: the input
// read once plus every output written (codes, block scales, FP32/BF16 values);
// current scaling reads the input a second time for the amax, which is not
// counted, so its row shows what that pass costs. The memcpy row counts read +
// write of the input size. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "qp_cuda_quant.h"
#include "qp_quant.h"

namespace {

int fail(int rc, const char *what)
{
    std::fprintf(stderr, "bench_cuda_quant: %s: %s\n", what, qp_cuda_error_string(rc));
    std::exit(1);
}

#define OK(call)                        \
    do {                                \
        const int rc_ = (int)(call);    \
        if (rc_) fail(rc_, #call);      \
    } while (0)

double median_ms(const std::function<int()> &fn)
{
    cudaEvent_t a, b;
    OK(cudaEventCreate(&a));
    OK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) OK(fn());
    OK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        OK(cudaEventRecord(a));
        OK(fn());
        OK(cudaEventRecord(b));
        OK(cudaEventSynchronize(b));
        float ms = 0;
        OK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return 0.5 * (t[9] + t[10]);
}

double memcpy_gbs = 0;

void row(const char *name, double bytes, const std::function<int()> &fn)
{
    const double ms = median_ms(fn), gbs = bytes / (ms * 1e-3) / 1e9;
    std::printf("%-32s %10.3f %10.1f %9.0f%%\n", name, ms, gbs, memcpy_gbs > 0 ? 100.0 * gbs / memcpy_gbs : 100.0);
}

}  // namespace

int main(int argc, char **argv)
{
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        std::printf("bench_cuda_quant: no CUDA device (%s), SKIP\n", de != cudaSuccess ? cudaGetErrorName(de) : "0 devices");
        return 77;
    }
    const int rows = argc > 2 ? std::atoi(argv[1]) : 8192, cols = argc > 2 ? std::atoi(argv[2]) : 8192;
    if (rows <= 0 || cols <= 0 || cols % 32) {
        std::fprintf(stderr, "usage: bench_cuda_quant [rows cols]  (cols a multiple of 32)\n");
        return 2;
    }
    const int64_t n = (int64_t)rows * cols;
    cudaDeviceProp prop;
    OK(cudaGetDeviceProperties(&prop, 0));
    std::vector<float> h(n);
    uint64_t s = 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = ((float)(s >> 40) / 16777216.0f - 0.5f) * (i % 97 == 0 ? 300.0f : 3.0f);
    }
    float *d_x, *d_y, *d_amax;
    uint16_t *d_yb;
    uint8_t *d_codes, *d_scales;
    qp_cuda_tstats *d_st;
    OK(cudaMalloc(&d_x, n * 4));
    OK(cudaMalloc(&d_y, n * 4));
    OK(cudaMalloc(&d_yb, n * 2));
    OK(cudaMalloc(&d_codes, n * 4));
    OK(cudaMalloc(&d_scales, n / 16 + 16));
    OK(cudaMalloc(&d_amax, 4));
    OK(cudaMalloc(&d_st, sizeof(qp_cuda_tstats)));
    OK(cudaMemcpy(d_x, h.data(), n * 4, cudaMemcpyHostToDevice));

    std::printf("bench_cuda_quant: %s, %d x %d float32 (%.0f MiB), median of 20 runs\n", prop.name, rows, cols,
                n * 4.0 / 1048576.0);
    std::printf("%-32s %10s %10s %10s\n", "kernel", "ms", "GB/s", "of memcpy");
    const double in = n * 4.0;
    memcpy_gbs = 0;
    {
        const double ms = median_ms([&] { return (int)cudaMemcpyAsync(d_y, d_x, n * 4, cudaMemcpyDeviceToDevice); });
        memcpy_gbs = 2.0 * in / (ms * 1e-3) / 1e9;
        std::printf("%-32s %10.3f %10.1f %9.0f%%\n", "cudaMemcpy D2D", ms, memcpy_gbs, 100.0);
    }
    row("amax", in, [&] { return qp_cuda_amax(d_x, n, d_amax, nullptr); });
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        const qp_fmt fmt = (qp_fmt)f;
        int64_t sr = 0, sc = 0;
        qp_scale_shape(fmt, rows, cols, &sr, &sc);
        const double out = (double)qp_row_bytes(fmt, cols) * rows + (double)(sr * sc);
        char name[64];
        qp_qopts o = {};
        const bool tensor = qp_formats[f].tensor_scale;
        std::snprintf(name, sizeof name, "quantize %s%s", qp_formats[f].name, tensor ? " (current)" : "");
        row(name, in + out, [&] { return qp_cuda_quantize(fmt, d_x, rows, cols, &o, nullptr, d_codes, d_scales, d_st, nullptr); });
        if (tensor) {
            qp_qopts og = {};
            og.scale = 0.5f;
            std::snprintf(name, sizeof name, "quantize %s (given)", qp_formats[f].name);
            row(name, in + out, [&] { return qp_cuda_quantize(fmt, d_x, rows, cols, &og, nullptr, d_codes, d_scales, d_st, nullptr); });
        }
        if (f == QP_FMT_NVFP4 || f == QP_FMT_MXFP4 || f == QP_FMT_FP8_E5M2) {
            qp_qopts osr = {};
            osr.stochastic = true;
            osr.seed = 42;
            std::snprintf(name, sizeof name, "quantize %s SR", qp_formats[f].name);
            row(name, in + out, [&] { return qp_cuda_quantize(fmt, d_x, rows, cols, &osr, nullptr, d_codes, d_scales, d_st, nullptr); });
        }
        std::snprintf(name, sizeof name, "qdq %s -> fp32", qp_formats[f].name);
        row(name, 2 * in, [&] { return qp_cuda_qdq(fmt, d_x, d_y, nullptr, rows, cols, &o, nullptr, d_st, nullptr); });
        qp_qopts ou = {};
        ou.unscaled = true;
        std::snprintf(name, sizeof name, "qdq %s -> bf16 unscaled", qp_formats[f].name);
        row(name, in + n * 2.0, [&] { return qp_cuda_qdq(fmt, d_x, nullptr, d_yb, rows, cols, &ou, nullptr, d_st, nullptr); });
    }
    row("rht16 (in place)", 2 * in, [&] { return qp_cuda_rht16(d_y, rows, cols, 7, nullptr); });
    row("transpose", 2 * in, [&] { return qp_cuda_transpose(d_x, d_y, rows, cols, nullptr); });
    OK(cudaDeviceSynchronize());
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_yb);
    cudaFree(d_codes);
    cudaFree(d_scales);
    cudaFree(d_amax);
    cudaFree(d_st);
    return 0;
}
