// test_cublaslt.cu — kernels/qp_cublaslt against a float64 host GEMM of
// quant/'s dequantized operands.
//
// Without a GPU: the host-side rules (qp_cublt_check) are tested, then exit 77
// (ctest SKIP). With one, for every path the GPU runs: random operands are
// quantized on the host with quant/ (qp_quantize: packed codes, plain block
// scales -> qp_scale_swizzle), copied to the device, multiplied by
// qp_cublt_gemm, and compared element by element with
//     ref[m][n] = alpha * sum_k deqA[m][k] * deqB[n][k] + beta * D0[m][n]
// in float64 (deq = qp_dequantize), to |D - ref| <= tol * |alpha| * sum_k
// |deqA * deqB| + 2^-22 |beta * D0|. Every product of two quantized values is
// exact in FP32 and the GEMM accumulates in FP32, so tol = 1e-5 for all paths
// but Hopper-class FP8 (cc 8.9/9.0), whose tensor cores add FP8 products with
// fewer mantissa bits between cuBLASLt's FP32 promotions: tol = 2^-12 there
// (the measured worst ratio is printed for every case). Also: amax_D equals
// max |D| bit for bit; the emulated-bf16 path (unscaled qp_qdq values in BF16,
// tensor scales folded into alpha on the device) gives the same products;
// descriptors are reused; the device swizzle equals the host one; illegal
// shapes fail with their one-line message.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "qp_cublaslt.h"
#include "qp_quant.h"
#include "qp_scale_layout.h"

static int passed, failed;
#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (cond) {                                                                 \
            passed++;                                                               \
        } else {                                                                    \
            failed++;                                                               \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                      \
            std::fputc('\n', stderr);                                               \
        }                                                                           \
    } while (0)

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double uniform()
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return ((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float normal()
{
    const double u = uniform() + 1e-300, v = uniform();
    return (float)(std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v));
}

static bool one_line(const char *s) { return s && *s && !std::strchr(s, '\n'); }

// ---------------------------------------------------------------- host rules
static void check_rules()
{
    char e[256];
    CHECK(qp_cublt_check(90, QP_CUBLT_E4M3, QP_CUBLT_E4M3, 37, 64, 64, e, sizeof e) == 0, "fp8 legal on 9.0: %s", e);
    CHECK(qp_cublt_check(89, QP_CUBLT_E5M2, QP_CUBLT_E4M3, 1, 16, 16, e, sizeof e) == 0, "e5m2 x e4m3 on 8.9: %s", e);
    CHECK(qp_cublt_check(90, QP_CUBLT_E4M3, QP_CUBLT_E5M2, 64, 64, 40, e, sizeof e) == -1 &&
              std::strstr(e, "multiple of 16") && one_line(e),
          "fp8 K=40: %s", e);
    CHECK(qp_cublt_check(80, QP_CUBLT_E4M3, QP_CUBLT_E4M3, 64, 64, 64, e, sizeof e) == -1 && std::strstr(e, "8.9") &&
              std::strstr(e, "8.0"),
          "fp8 on 8.0: %s", e);
    CHECK(qp_cublt_check(90, QP_CUBLT_E5M2, QP_CUBLT_E5M2, 64, 64, 64, e, sizeof e) == -1 &&
              std::strstr(e, "e5m2 x e5m2"),
          "e5m2 x e5m2: %s", e);
    CHECK(qp_cublt_check(90, QP_CUBLT_MXFP8, QP_CUBLT_MXFP8, 64, 64, 64, e, sizeof e) == -1 &&
              std::strstr(e, "10.0") && std::strstr(e, "emulated-bf16"),
          "mxfp8 on 9.0: %s", e);
    CHECK(qp_cublt_check(100, QP_CUBLT_MXFP8, QP_CUBLT_MXFP8, 64, 64, 48, e, sizeof e) == -1 &&
              std::strstr(e, "multiple of 32"),
          "mxfp8 K=48: %s", e);
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120800
    CHECK(qp_cublt_check(100, QP_CUBLT_NVFP4, QP_CUBLT_NVFP4, 33, 64, 96, e, sizeof e) == 0, "nvfp4 legal: %s", e);
#else
    CHECK(qp_cublt_check(100, QP_CUBLT_NVFP4, QP_CUBLT_NVFP4, 33, 64, 96, e, sizeof e) == -1 && std::strstr(e, "12.8"),
          "nvfp4 with cuBLAS < 12.8: %s", e);
#endif
    CHECK(qp_cublt_check(100, QP_CUBLT_NVFP4, QP_CUBLT_NVFP4, 33, 64, 80, e, sizeof e) == -1, "nvfp4 K=80: %s", e);
    CHECK(qp_cublt_check(90, QP_CUBLT_BF16, QP_CUBLT_E4M3, 8, 8, 16, e, sizeof e) == -1 &&
              std::strstr(e, "A is bf16 and B is e4m3"),
          "mixed classes: %s", e);
    CHECK(qp_cublt_check(90, QP_CUBLT_NVFP4, QP_CUBLT_MXFP8, 8, 8, 32, e, sizeof e) == -1, "nvfp4 x mxfp8: %s", e);
    CHECK(qp_cublt_check(75, QP_CUBLT_F32, QP_CUBLT_F32, 0, 5, 5, e, sizeof e) == -1 && std::strstr(e, "positive"),
          "M=0: %s", e);
    CHECK(qp_cublt_check(75, QP_CUBLT_BF16, QP_CUBLT_BF16, 3, 5, 7, e, sizeof e) == 0, "bf16 anywhere: %s", e);
    CHECK(qp_cublt_check(90, (qp_cublt_type)42, QP_CUBLT_BF16, 3, 5, 7, e, sizeof e) == -1 && std::strstr(e, "unknown"),
          "bad type: %s", e);
}

// The row-major -> column-major plan, run through a column-major GEMM written
// from cuBLAS's definitions (X(i,j) = X[i + j*ld]; op(X) = X or X^T), against
// the row-major product D[m][n] = sum_k A[m][k] B[n][k] computed directly.
static void check_plan()
{
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {16, 9, 32}, {37, 53, 29}};
    for (const auto &s : shapes) {
        const int M = s[0], N = s[1], K = s[2];
        qp_cublt_plan p;
        qp_cublt_make_plan(M, N, K, &p);
        std::vector<double> A((size_t)M * K), B((size_t)N * K), D((size_t)M * N, 0.0);
        for (auto &v : A) v = std::floor(uniform() * 17) - 8;
        for (auto &v : B) v = std::floor(uniform() * 17) - 8;
        const double *Ap = B.data(), *Bp = A.data();  // cuBLASLt's A is our B and vice versa
        // shapes of op(A') (m x k) and op(B') (k x n) must agree with the stored layouts
        bool ok = (p.transa ? p.a_cols : p.a_rows) == p.m && (p.transa ? p.a_rows : p.a_cols) == p.k &&
                  (p.transb ? p.b_cols : p.b_rows) == p.k && (p.transb ? p.b_rows : p.b_cols) == p.n &&
                  p.d_rows == p.m && p.d_cols == p.n && p.lda >= p.a_rows && p.ldb >= p.b_rows &&
                  p.ldd >= p.d_rows && p.a_rows * p.a_cols == (int64_t)B.size() &&
                  p.b_rows * p.b_cols == (int64_t)A.size();
        CHECK(ok, "plan shapes for M=%d N=%d K=%d", M, N, K);
        if (!ok) continue;
        for (int64_t i = 0; i < p.m; i++)
            for (int64_t j = 0; j < p.n; j++) {
                double acc = 0;
                for (int64_t l = 0; l < p.k; l++) {
                    const double a = p.transa ? Ap[l + i * p.lda] : Ap[i + l * p.lda];
                    const double b = p.transb ? Bp[j + l * p.ldb] : Bp[l + j * p.ldb];
                    acc += a * b;
                }
                D[(size_t)(i + j * p.ldd)] = acc;
            }
        int bad = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double want = 0;
                for (int k = 0; k < K; k++) want += A[(size_t)m * K + k] * B[(size_t)n * K + k];
                bad += D[(size_t)m * N + n] != want;
            }
        CHECK(bad == 0, "plan M=%d N=%d K=%d: %d elements differ from row-major A.B^T", M, N, K, bad);
        CHECK(p.transa == 1 && p.transb == 0, "the plan must be TN (FP8 and block formats need it)");
    }
}

// ------------------------------------------------------------- host operands
struct Op {
    qp_cublt_type type = QP_CUBLT_F32;
    int rows = 0, K = 0, emulated = 0;
    std::vector<uint8_t> data;     // what goes to the device
    std::vector<uint8_t> tiled;    // block scales, tiled
    float scale_inv = 1.0f;
    bool has_scale = false;        // pass scale_inv as d_scale_inv
    std::vector<double> deq;       // rows x K, the reference values
    // device
    void *d_data = nullptr;
    float *d_scale = nullptr;
    uint8_t *d_bs = nullptr;
};

static qp_fmt fmt_of(qp_cublt_type t)
{
    switch (t) {
    case QP_CUBLT_BF16: return QP_FMT_BF16;
    case QP_CUBLT_E4M3: return QP_FMT_FP8_E4M3;
    case QP_CUBLT_E5M2: return QP_FMT_FP8_E5M2;
    case QP_CUBLT_MXFP8: return QP_FMT_MXFP8;
    case QP_CUBLT_NVFP4: return QP_FMT_NVFP4;
    default: return QP_FMT_FP32;
    }
}

static std::vector<float> random_matrix(int rows, int K)
{
    std::vector<float> x((size_t)rows * K);
    for (int r = 0; r < rows; r++) {
        const float row_scale = 0.05f * (float)(1 + r % 7);
        for (int k = 0; k < K; k++) x[(size_t)r * K + k] = normal() * row_scale * ((k % 29 == 3) ? 8.0f : 1.0f);
    }
    return x;
}

// Native operand of type t (quantized with quant/ unless f32), or, when
// emulate_fmt is not QP_FMT_FP32, a BF16 operand holding qp_qdq's unscaled
// values of that format (the reference is still the packed quantization).
static Op make_op(qp_cublt_type t, int rows, int K, qp_fmt emulate_fmt = QP_FMT_FP32)
{
    Op op;
    op.type = t, op.rows = rows, op.K = K;
    const std::vector<float> x = random_matrix(rows, K);
    const size_t n = (size_t)rows * K;
    op.deq.resize(n);
    if (t == QP_CUBLT_F32 && emulate_fmt == QP_FMT_FP32) {
        op.data.resize(n * 4);
        std::memcpy(op.data.data(), x.data(), n * 4);
        for (size_t i = 0; i < n; i++) op.deq[i] = x[i];
        return op;
    }
    const qp_fmt f = emulate_fmt != QP_FMT_FP32 ? emulate_fmt : fmt_of(t);
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, f, rows, K)) {
        std::fprintf(stderr, "qp_qtensor_alloc failed\n");
        std::exit(1);
    }
    qp_quantize(x.data(), &q, nullptr, nullptr);
    std::vector<float> y(n);
    qp_dequantize(&q, y.data());
    for (size_t i = 0; i < n; i++) op.deq[i] = y[i];
    op.scale_inv = q.scale_inv;
    if (emulate_fmt != QP_FMT_FP32) {
        op.type = QP_CUBLT_BF16, op.emulated = 1;
        qp_qopts o;
        std::memset(&o, 0, sizeof o);
        o.unscaled = true;
        qp_qstats st;
        std::vector<float> u(n);
        qp_qdq(f, x.data(), u.data(), rows, K, &o, &st);
        op.data.resize(n * 2);
        int inexact = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t b;
            std::memcpy(&b, &u[i], 4);
            inexact += (b & 0xFFFFu) != 0;
            const uint16_t h = (uint16_t)(b >> 16);
            std::memcpy(&op.data[2 * i], &h, 2);
        }
        CHECK(inexact == 0, "emulated %s: %d unscaled values not exact in bf16", qp_formats[f].name, inexact);
        CHECK(st.scale_inv == q.scale_inv, "qdq and quantize tensor scales differ for %s", qp_formats[f].name);
        op.scale_inv = st.scale_inv;
        op.has_scale = qp_formats[f].tensor_scale;
    } else {
        op.data.assign(q.codes, q.codes + (size_t)rows * q.row_bytes);
        op.has_scale = qp_formats[f].tensor_scale;
        if (q.scales) {
            op.tiled.resize((size_t)qp_scale_tiled_size(rows, q.scale_cols));
            qp_scale_swizzle(q.scales, rows, q.scale_cols, qp_formats[f].block_rows, op.tiled.data());
        }
    }
    qp_qtensor_free(&q);
    return op;
}

static void upload(Op &op)
{
    cudaMalloc(&op.d_data, op.data.size());
    cudaMemcpy(op.d_data, op.data.data(), op.data.size(), cudaMemcpyHostToDevice);
    if (op.has_scale) {
        cudaMalloc((void **)&op.d_scale, sizeof(float));
        cudaMemcpy(op.d_scale, &op.scale_inv, sizeof(float), cudaMemcpyHostToDevice);
    }
    if (!op.tiled.empty()) {
        cudaMalloc((void **)&op.d_bs, op.tiled.size());
        cudaMemcpy(op.d_bs, op.tiled.data(), op.tiled.size(), cudaMemcpyHostToDevice);
    }
}

static void release(Op &op)
{
    cudaFree(op.d_data);
    cudaFree(op.d_scale);
    cudaFree(op.d_bs);
    op.d_data = nullptr, op.d_scale = nullptr, op.d_bs = nullptr;
}

static qp_cublt_operand operand(const Op &op)
{
    qp_cublt_operand o;
    std::memset(&o, 0, sizeof o);
    o.type = op.type;
    o.d_data = op.d_data;
    o.d_scale_inv = op.d_scale;
    o.d_block_scales = op.d_bs;
    o.emulated = op.emulated;
    return o;
}

// One product, checked. Returns 1 if it ran, 0 if cuBLASLt refused it (only
// allowed when may_refuse), -1 on failure.
static int run_case(qp_cublt *h, const char *name, Op &A, Op &B, int M, int N, int K, float alpha, float beta,
                    bool with_amax, double tol, const char *want_path, bool may_refuse = false)
{
    upload(A), upload(B);
    std::vector<float> D0((size_t)M * N, 0.0f);
    if (beta != 0.0f)
        for (auto &v : D0) v = normal();
    float *d_D = nullptr, *d_amax = nullptr;
    cudaMalloc((void **)&d_D, D0.size() * 4);
    cudaMemcpy(d_D, D0.data(), D0.size() * 4, cudaMemcpyHostToDevice);
    if (with_amax) {
        cudaMalloc((void **)&d_amax, 4);
        cudaMemset(d_amax, 0xFF, 4);  // NaN: must be overwritten
    }
    const qp_cublt_operand a = operand(A), b = operand(B);
    const char *path = nullptr;
    const int rc = qp_cublt_gemm(h, &a, &b, d_D, M, N, K, alpha, beta, d_amax, &path);
    const cudaError_t ce = cudaDeviceSynchronize();
    int result = 1;
    if (rc != 0 || ce != cudaSuccess) {
        const char *msg = rc ? qp_cublt_error(h) : cudaGetErrorName(ce);
        if (may_refuse && rc != 0 && one_line(msg) && std::strstr(msg, "CUBLAS_STATUS")) {
            std::printf("  %-34s M=%4d N=%4d K=%4d  refused (allowed): %s\n", name, M, N, K, msg);
            result = 0;
        } else {
            CHECK(false, "%s M=%d N=%d K=%d: %s", name, M, N, K, msg);
            result = -1;
        }
    } else {
        CHECK(path && std::strcmp(path, want_path) == 0, "%s: path %s, want %s", name, path ? path : "(null)",
              want_path);
        std::vector<float> D(D0.size());
        cudaMemcpy(D.data(), d_D, D.size() * 4, cudaMemcpyDeviceToHost);
        double worst = 0;
        int bad = 0;
        float dmax = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                const double *ra = &A.deq[(size_t)m * K], *rb = &B.deq[(size_t)n * K];
                double s = 0, sa = 0;
                for (int k = 0; k < K; k++) s += ra[k] * rb[k], sa += std::fabs(ra[k] * rb[k]);
                const double d0 = D0[(size_t)m * N + n];
                const double ref = (double)alpha * s + (double)beta * d0;
                const double bound = std::fabs((double)alpha) * sa, slack = std::fabs(beta * d0) * 0x1p-22 + 1e-30;
                const double err = std::fabs((double)D[(size_t)m * N + n] - ref);
                if (bound > 0) worst = std::fmax(worst, (err - slack) / bound);
                if (!(err <= tol * bound + slack)) {
                    if (bad < 3)
                        std::fprintf(stderr, "  %s [%d,%d] got %.9g want %.9g (bound %.3g)\n", name, m, n,
                                     D[(size_t)m * N + n], ref, tol * bound + slack);
                    bad++;
                }
                dmax = std::fmax(dmax, std::fabs(D[(size_t)m * N + n]));
            }
        CHECK(bad == 0, "%s M=%d N=%d K=%d: %d of %d outside the bound", name, M, N, K, bad, M * N);
        std::printf("  %-34s M=%4d N=%4d K=%4d  path %-13s worst |err|/sum|ab| %.2e (tol %.1e)\n", name, M, N, K,
                    path, worst, tol);
        if (with_amax) {
            float amax = 0;
            cudaMemcpy(&amax, d_amax, 4, cudaMemcpyDeviceToHost);
            CHECK(amax == dmax, "%s: amax_D %.9g, max|D| %.9g", name, amax, dmax);
        }
    }
    cudaFree(d_D);
    cudaFree(d_amax);
    release(A), release(B);
    return result;
}

static void check_device_swizzle()
{
    const int64_t shapes[][3] = {{300, 7, 1}, {1, 1, 1}, {128, 4, 1}, {150, 6, 16}, {513, 33, 1}};
    for (const auto &s : shapes) {
        const int64_t rows = s[0], cols = s[1], br = s[2], prow = (rows + br - 1) / br;
        std::vector<uint8_t> plain((size_t)(prow * cols));
        for (auto &v : plain) v = (uint8_t)(1 + (uint8_t)(uniform() * 255));
        const int64_t size = qp_scale_tiled_size(rows, cols);
        std::vector<uint8_t> want((size_t)size), got((size_t)size);
        qp_scale_swizzle(plain.data(), rows, cols, (int)br, want.data());
        uint8_t *d_p, *d_t;
        cudaMalloc((void **)&d_p, plain.size());
        cudaMalloc((void **)&d_t, (size_t)size);
        cudaMemcpy(d_p, plain.data(), plain.size(), cudaMemcpyHostToDevice);
        cudaMemset(d_t, 0xAB, (size_t)size);
        const int rc = qp_cuda_scale_swizzle(d_p, rows, cols, (int)br, d_t, nullptr);
        cudaMemcpy(got.data(), d_t, (size_t)size, cudaMemcpyDeviceToHost);
        CHECK(rc == 0 && got == want, "device swizzle %lldx%lld (block_rows %lld) != host", (long long)rows,
              (long long)cols, (long long)br);
        cudaFree(d_p);
        cudaFree(d_t);
    }
}

int main()
{
    check_rules();
    check_plan();
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        std::printf("test_cublaslt: host rules %d passed, %d failed; no CUDA device (%s), SKIP\n", passed, failed,
                    de != cudaSuccess ? cudaGetErrorName(de) : "0 devices");
        return failed ? 1 : 77;
    }
    char err[256];
    qp_cublt *h = qp_cublt_create(nullptr, err, sizeof err);
    if (!h) {
        std::printf("test_cublaslt: %s\n", err);
        return 1;
    }
    const int cc = qp_cublt_cc(h);
    std::printf("test_cublaslt: compute capability %d.%d, fp8 %s, mxfp8/nvfp4 %s\n", cc / 10, cc % 10,
                qp_cublt_native(h, QP_CUBLT_E4M3) ? "native" : "emulated",
                qp_cublt_native(h, QP_CUBLT_NVFP4) ? "native" : "emulated");
    check_device_swizzle();

    const double exact = 1e-5, fp8_tol = cc >= 100 ? 1e-5 : 0x1p-12;

    // fp32 and bf16: odd shapes, alpha, beta.
    {
        const int shapes[][3] = {{1, 1, 1}, {37, 53, 29}, {128, 256, 64}, {257, 129, 300}};
        for (const auto &s : shapes) {
            Op a = make_op(QP_CUBLT_F32, s[0], s[2]), b = make_op(QP_CUBLT_F32, s[1], s[2]);
            run_case(h, "fp32", a, b, s[0], s[1], s[2], 1.0f, 0.0f, false, exact, "fp32");
            Op c = make_op(QP_CUBLT_BF16, s[0], s[2]), d = make_op(QP_CUBLT_BF16, s[1], s[2]);
            run_case(h, "bf16", c, d, s[0], s[1], s[2], 1.0f, 0.0f, false, exact, "bf16");
        }
        Op a = make_op(QP_CUBLT_BF16, 65, 96), b = make_op(QP_CUBLT_BF16, 33, 96);
        run_case(h, "bf16 alpha 0.75 beta 0.5", a, b, 65, 33, 96, 0.75f, 0.5f, false, exact, "bf16");
    }

    // Emulated block formats (any GPU): unscaled BF16 operands, tensor scales on the device.
    {
        const qp_fmt fmts[] = {QP_FMT_MXFP8, QP_FMT_NVFP4, QP_FMT_FP8_E4M3, QP_FMT_MXFP4};
        const int shapes[][3] = {{37, 53, 96}, {256, 128, 512}};
        for (qp_fmt f : fmts)
            for (const auto &s : shapes) {
                Op a = make_op(QP_CUBLT_BF16, s[0], s[2], f), b = make_op(QP_CUBLT_BF16, s[1], s[2], f);
                char name[64];
                std::snprintf(name, sizeof name, "emulated %s", qp_formats[f].name);
                run_case(h, name, a, b, s[0], s[1], s[2], 1.0f, 0.0f, false, exact, "emulated-bf16");
            }
    }

    // FP8 with per-tensor scale pointers and amax_D.
    if (qp_cublt_native(h, QP_CUBLT_E4M3)) {
        const qp_cublt_type pairs[][2] = {
            {QP_CUBLT_E4M3, QP_CUBLT_E4M3}, {QP_CUBLT_E4M3, QP_CUBLT_E5M2}, {QP_CUBLT_E5M2, QP_CUBLT_E4M3}};
        const int shapes[][3] = {{16, 16, 16}, {37, 64, 48}, {128, 256, 256}, {257, 144, 528}};
        for (const auto &p : pairs)
            for (const auto &s : shapes) {
                Op a = make_op(p[0], s[0], s[2]), b = make_op(p[1], s[1], s[2]);
                char name[64];
                std::snprintf(name, sizeof name, "fp8 %s x %s", qp_cublt_type_name(p[0]), qp_cublt_type_name(p[1]));
                run_case(h, name, a, b, s[0], s[1], s[2], 1.0f, 0.0f, true, fp8_tol, "fp8");
            }
        // N not a multiple of 16: cuBLASLt may run it or refuse it, but a refusal must name its status.
        Op a = make_op(QP_CUBLT_E4M3, 33, 64), b = make_op(QP_CUBLT_E4M3, 53, 64);
        run_case(h, "fp8 odd N", a, b, 33, 53, 64, 1.0f, 0.0f, true, fp8_tol, "fp8", true);
        // Steady state: the same product again builds nothing new.
        Op c = make_op(QP_CUBLT_E4M3, 128, 256), d = make_op(QP_CUBLT_E4M3, 256, 256);
        const int before = qp_cublt_cached(h);
        run_case(h, "fp8 e4m3 x e4m3 again", c, d, 128, 256, 256, 1.0f, 0.0f, true, fp8_tol, "fp8");
        CHECK(qp_cublt_cached(h) == before, "descriptor cache grew on a repeated shape (%d -> %d)", before,
              qp_cublt_cached(h));
        // The amax_D reduction kernel (used where cuBLASLt has no amax for FP32 output), forced.
        setenv("QP_CUBLT_AMAX", "kernel", 1);
        qp_cublt *h2 = qp_cublt_create(nullptr, err, sizeof err);
        unsetenv("QP_CUBLT_AMAX");
        CHECK(h2 != nullptr, "second handle: %s", err);
        if (h2) {
            Op e = make_op(QP_CUBLT_E4M3, 257, 528), f = make_op(QP_CUBLT_E5M2, 144, 528);
            run_case(h2, "fp8 amax by kernel", e, f, 257, 144, 528, 1.0f, 0.0f, true, fp8_tol, "fp8");
            qp_cublt_destroy(h2);
        }
    }

    // Block-scaled MXFP8 / NVFP4 (Blackwell).
    if (qp_cublt_native(h, QP_CUBLT_MXFP8)) {
        const qp_cublt_type ts[] = {QP_CUBLT_MXFP8, QP_CUBLT_NVFP4};
        const int shapes[][3] = {{1, 16, 32}, {37, 64, 96}, {128, 256, 256}, {257, 144, 544}};
        for (qp_cublt_type t : ts)
            for (const auto &s : shapes) {
                Op a = make_op(t, s[0], s[2]), b = make_op(t, s[1], s[2]);
                run_case(h, qp_cublt_type_name(t), a, b, s[0], s[1], s[2], 1.0f, 0.0f, false, exact,
                         qp_cublt_type_name(t));
            }
        Op a = make_op(QP_CUBLT_NVFP4, 33, 64), b = make_op(QP_CUBLT_NVFP4, 53, 64);
        run_case(h, "nvfp4 odd N", a, b, 33, 53, 64, 1.0f, 0.0f, false, exact, "nvfp4", true);
    }

    // Illegal products fail with a one-line message; the heuristic query answers.
    {
        Op a = make_op(QP_CUBLT_E4M3, 32, 40), b = make_op(QP_CUBLT_E4M3, 32, 40);
        upload(a), upload(b);
        float *d_D;
        cudaMalloc((void **)&d_D, 32 * 32 * 4);
        const qp_cublt_operand oa = operand(a), ob = operand(b);
        const int rc = qp_cublt_gemm(h, &oa, &ob, d_D, 32, 32, 40, 1.0f, 0.0f, nullptr, nullptr);
        const char *msg = qp_cublt_error(h);
        CHECK(rc == -1 && one_line(msg) &&
                  std::strstr(msg, qp_cublt_native(h, QP_CUBLT_E4M3) ? "multiple of 16" : "8.9"),
              "fp8 K=40: rc %d, %s", rc, msg);
        std::printf("  illegal fp8 K=40: %s\n", msg);
        cudaFree(d_D);
        release(a), release(b);
        if (!qp_cublt_native(h, QP_CUBLT_MXFP8)) {
            CHECK(qp_cublt_supported(h, QP_CUBLT_MXFP8, QP_CUBLT_MXFP8, 128, 128, 128, 0) == 0 &&
                      std::strstr(qp_cublt_error(h), "10.0"),
                  "mxfp8 on cc %d: %s", cc, qp_cublt_error(h));
            std::printf("  mxfp8 here: %s\n", qp_cublt_error(h));
        }
        CHECK(qp_cublt_supported(h, QP_CUBLT_BF16, QP_CUBLT_BF16, 4096, 4096, 4096, 0) == 1, "bf16 4096^3: %s",
              qp_cublt_error(h));
        if (qp_cublt_native(h, QP_CUBLT_E4M3))
            CHECK(qp_cublt_supported(h, QP_CUBLT_E4M3, QP_CUBLT_E4M3, 4096, 4096, 4096, 1) == 1, "fp8 4096^3: %s",
                  qp_cublt_error(h));
    }

    qp_cublt_destroy(h);
    std::printf("test_cublaslt: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
