// test_cuda_quant.cu — the CUDA kernels of qp_cuda_quant.h against quant/ on
// the host, bit for bit: for every format in qp_formats[], RN and SR, current
// scaling, a host-given and a device-given tensor scale, on the random and
// adversarial tensors of qc_testdata.h (ragged shapes, misaligned pointers):
// codes, block scales, the tensor scale and the device statistics of
// qp_cuda_quantize; FP32 values (scaled and unscaled) and BF16 bits of
// qp_cuda_qdq; qp_cuda_amax, qp_cuda_rht16, Transformer Engine's
// qp_cuda_rht16_te, qp_cuda_transpose and the old qp_cuda_quantize_fp8. NaN
// compares as NaN (the GPU does not keep payloads).
// Exits 77 (ctest SKIP) without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "qp_cuda_quant.h"
#include "qp_hadamard.h"
#include "qp_quant.h"
#include "qp_test.h"
#include "qc_testdata.h"

#define CUDA_OK(call)                                                                            \
    do {                                                                                         \
        const int rc_ = (int)(call);                                                             \
        if (rc_) {                                                                               \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, qp_cuda_error_string(rc_)); \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

namespace {

cudaStream_t g_stream;

struct Dev {
    void *p = nullptr;
    explicit Dev(size_t bytes) { CUDA_OK(cudaMalloc(&p, bytes + 64)); }
    ~Dev() { cudaFree(p); }
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;
    template <class T> T *as(size_t byte_off = 0) { return reinterpret_cast<T *>((char *)p + byte_off); }
};

/* Device buffers of one_case, allocated once (cudaMalloc/cudaFree per case
 * would dominate the run time). */
constexpr size_t kMaxElems = 1000 * 4096;
struct Pool {
    Dev x{kMaxElems * 4}, codes{kMaxElems * 4}, scales{kMaxElems / 16 + 64}, st{sizeof(qp_cuda_tstats)}, scale{4},
        y{kMaxElems * 4}, yb{kMaxElems * 2};
};
Pool *g_pool;

bool same_f(float a, float b) { return qp_same_float(a, b); }

int64_t first_diff_f(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!same_f(a[i], b[i])) return i;
    return -1;
}

// One input on the device (at a 4-byte offset when misaligned) against quant/.
// mode 0: opts->scale as is; 1: the given scale passed through d_tensor_scale_in.
void one_case(qp_fmt fmt, const std::vector<float> &x, int rows, int cols, const qp_qopts &o, int dev_scale,
              bool misalign, const char *what)
{
    const char *name = qp_formats[fmt].name;
    if (qp_formats[fmt].row_scaled) return; // quant/ only: qp_cuda_quant.cu refuses a scale per row
    const int64_t n = (int64_t)rows * cols;
    const size_t off = misalign ? 4 : 0;
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) std::abort();
    qp_qstats ref;
    qp_quantize(x.data(), &q, &o, &ref);
    const size_t cbytes = (size_t)(rows * q.row_bytes), sbytes = (size_t)(q.scale_rows * q.scale_cols);

    if ((size_t)n > kMaxElems) std::abort();
    Dev &dx = g_pool->x, &dcodes = g_pool->codes, &dscales = g_pool->scales, &dst = g_pool->st,
        &dscale = g_pool->scale, &dy = g_pool->y, &dyb = g_pool->yb;
    float *d_x = dx.as<float>(off);
    CUDA_OK(cudaMemcpy(d_x, x.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dcodes.p, 0xA5, cbytes + 64));
    CUDA_OK(cudaMemset(dscales.p, 0xA5, sbytes + 64));
    CUDA_OK(cudaMemset(dst.p, 0xA5, sizeof(qp_cuda_tstats)));
    qp_qopts od = o;
    const float *d_scale_in = nullptr;
    if (dev_scale) {
        CUDA_OK(cudaMemcpy(dscale.p, &o.scale, 4, cudaMemcpyHostToDevice));
        d_scale_in = dscale.as<float>();
        od.scale = 0.0f;
    }
    uint8_t *d_codes = dcodes.as<uint8_t>(off);
    CUDA_OK(qp_cuda_quantize(fmt, d_x, rows, cols, &od, d_scale_in, d_codes, dscales.as<uint8_t>(),
                             dst.as<qp_cuda_tstats>(), g_stream));
    std::vector<uint8_t> codes(cbytes + 1), scales(sbytes + 1);
    qp_cuda_tstats st;
    CUDA_OK(cudaStreamSynchronize(g_stream));
    CUDA_OK(cudaMemcpy(codes.data(), d_codes, cbytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(scales.data(), dscales.p, sbytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&st, dst.p, sizeof st, cudaMemcpyDeviceToHost));
    bool codes_ok;
    if (fmt == QP_FMT_FP32) { /* the codes are float bits: NaN as NaN */
        std::vector<float> a(n + 1), b(n + 1);
        std::memcpy(a.data(), codes.data(), cbytes);
        std::memcpy(b.data(), q.codes, cbytes);
        codes_ok = first_diff_f(a.data(), b.data(), n) < 0;
    } else {
        codes_ok = std::memcmp(codes.data(), q.codes, cbytes) == 0;
    }
    CHECK(codes_ok, "%s %s %dx%d: codes differ", name, what, rows, cols);
    CHECK(sbytes == 0 || std::memcmp(scales.data(), q.scales, sbytes) == 0, "%s %s %dx%d: block scales differ", name, what, rows,
          cols);
    CHECK(same_f(st.amax, ref.amax) && same_f(st.scale, ref.scale) && same_f(st.scale_inv, q.scale_inv),
          "%s %s: stats amax/scale/scale_inv %a/%a/%a vs %a/%a/%a", name, what, st.amax, st.scale, st.scale_inv,
          ref.amax, ref.scale, q.scale_inv);
    CHECK(st.n_nonfinite == (unsigned long long)ref.n_nonfinite && st.n_sat == (unsigned long long)ref.n_sat,
          "%s %s: counts nonfinite %llu/%lld sat %llu/%lld", name, what, st.n_nonfinite, (long long)ref.n_nonfinite,
          st.n_sat, (long long)ref.n_sat);

    std::vector<float> y(n + 1), yr(n + 1);
    std::vector<uint16_t> yb(n + 1);
    for (int unscaled = 0; unscaled < 2; unscaled++) {
        qp_qopts oo = o, ood = od;
        oo.unscaled = ood.unscaled = unscaled;
        qp_qdq(fmt, x.data(), yr.data(), rows, cols, &oo, nullptr);
        float *d_y = dy.as<float>(off);
        uint16_t *d_yb = unscaled ? dyb.as<uint16_t>(off / 2) : nullptr; /* FP32 and BF16 together */
        CUDA_OK(qp_cuda_qdq(fmt, d_x, d_y, d_yb, rows, cols, &ood, d_scale_in, nullptr, g_stream));
        CUDA_OK(cudaStreamSynchronize(g_stream));
        CUDA_OK(cudaMemcpy(y.data(), d_y, n * 4, cudaMemcpyDeviceToHost));
        const int64_t d = first_diff_f(y.data(), yr.data(), n);
        CHECK(d < 0, "%s %s unscaled=%d: qdq differs at %lld: %a vs %a (x=%a)", name, what, unscaled, (long long)d,
              d >= 0 ? y[d] : 0.0, d >= 0 ? yr[d] : 0.0, d >= 0 ? x[d] : 0.0);
        if (d_yb) {
            CUDA_OK(cudaMemcpy(yb.data(), d_yb, n * 2, cudaMemcpyDeviceToHost));
            int64_t bb = 0;
            for (int64_t i = 0; i < n; i++) bb += yb[i] != qp_f32_to_bf16(yr[i]);
            CHECK(bb == 0, "%s %s: %lld bf16 values differ", name, what, (long long)bb);
        }
    }
    /* BF16 alone (no FP32 copy) */
    CUDA_OK(qp_cuda_qdq(fmt, d_x, nullptr, dyb.as<uint16_t>(), rows, cols, &od, d_scale_in, nullptr, g_stream));
    CUDA_OK(cudaStreamSynchronize(g_stream));
    CUDA_OK(cudaMemcpy(yb.data(), dyb.p, n * 2, cudaMemcpyDeviceToHost));
    {
        qp_qopts oo = o;
        qp_qdq(fmt, x.data(), yr.data(), rows, cols, &oo, nullptr);
        int64_t bb = 0;
        for (int64_t i = 0; i < n; i++) bb += yb[i] != qp_f32_to_bf16(yr[i]);
        CHECK(bb == 0, "%s %s: %lld bf16-only values differ", name, what, (long long)bb);
    }
    qp_qtensor_free(&q);
}

void test_tensors()
{
    static const int shapes[][2] = {{1, 1}, {1, 7}, {3, 17}, {16, 16}, {17, 33}, {33, 50}, {20, 64}, {5, 200},
                                    {48, 96}, {31, 47}, {64, 512}};
    unsigned long long s = 7;
    for (int kind = 0; kind < NKINDS; kind++)
        for (const auto &sh : shapes) {
            const int rows = sh[0], cols = sh[1];
            std::vector<float> x((size_t)rows * cols);
            fill(x.data(), (int64_t)rows * cols, cols, kind, 1000 + 17ull * kind + (unsigned long long)rows);
            for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++)
                for (int sr = 0; sr < 2; sr++)
                    for (int gi = 0; gi < 4; gi++) {
                        static const float given[] = {0.0f, 1.0f, 0.3f, 0.3f};
                        qp_qopts o = {};
                        o.stochastic = sr;
                        o.seed = qp_test_next(&s);
                        o.stream = gi >= 2 ? qp_test_next(&s) : (uint64_t)cols;
                        o.scale = given[gi];
                        if (gi >= 2 && fmt >= QP_FMT_NVFP4) o.scale = 37.5f;
                        char what[128];
                        std::snprintf(what, sizeof what, "%s %s scale=%g%s", kind_names[kind], sr ? "SR" : "RN",
                                      o.scale, gi == 3 ? " (device)" : "");
                        one_case((qp_fmt)fmt, x, rows, cols, o, gi == 3, (kind + fmt + gi) % 5 == 4, what);
                    }
        }
}

void test_large()
{
    const int rows = 1000, cols = 4096;
    const int64_t n = (int64_t)rows * cols;
    std::vector<float> x(n);
    fill(x.data(), n, cols, RANDOM, 4242);
    x[5] = NAN, x[1234] = INFINITY, x[77777] = -0.0f, x[99999] = 1e-42f;
    for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++)
        for (int sr = 0; sr < 2; sr++) {
            qp_qopts o = {};
            o.stochastic = sr;
            o.seed = 0x1234567890ABCDEFull;
            o.stream = 0xFEDCBA0987654321ull;
            one_case((qp_fmt)fmt, x, rows, cols, o, 0, false, sr ? "large SR" : "large RN");
        }
}

/* SR index maps (qp_qopts.sr_offset / sr_row_stride): row and column slices
 * of a data-parallel rank, and arbitrary pairs, every format. */
void test_sr_map()
{
    static const int shapes[][2] = {{3, 17}, {33, 50}, {48, 96}, {64, 512}};
    static const int64_t maps[][2] = {{16 * 96, 0}, {48, 1024}, {7, 601}, {123457, 4096}};
    unsigned long long s = 77;
    for (const auto &sh : shapes) {
        const int rows = sh[0], cols = sh[1];
        std::vector<float> x((size_t)rows * cols);
        fill(x.data(), (int64_t)rows * cols, cols, RANDOM, 900ull + (unsigned long long)cols);
        for (const auto &m : maps)
            for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++) {
                qp_qopts o = {};
                o.stochastic = 1;
                o.seed = qp_test_next(&s);
                o.stream = qp_test_next(&s);
                o.sr_offset = m[0];
                o.sr_row_stride = m[1];
                char what[128];
                std::snprintf(what, sizeof what, "SR offset %lld stride %lld", (long long)m[0], (long long)m[1]);
                one_case((qp_fmt)fmt, x, rows, cols, o, 0, false, what);
            }
    }
}

void test_amax_rht_transpose()
{
    unsigned long long s = 3;
    for (int kind = 0; kind < NKINDS; kind++) {
        const int rows = 37, cols = 96;
        const int64_t n = (int64_t)rows * cols;
        std::vector<float> x(n), ref(n), got(n), t(n);
        fill(x.data(), n, cols, kind, 500 + (unsigned long long)kind);
        Dev dx(n * 4), dy(n * 4), da(4);
        for (int mis = 0; mis < 2; mis++) {
            const int64_t m = n - mis;
            float *d_x = dx.as<float>(mis * 4);
            CUDA_OK(cudaMemcpy(d_x, x.data() + mis, m * 4, cudaMemcpyHostToDevice));
            CUDA_OK(qp_cuda_amax(d_x, m, da.as<float>(), g_stream));
            CUDA_OK(cudaStreamSynchronize(g_stream));
            float a;
            CUDA_OK(cudaMemcpy(&a, da.p, 4, cudaMemcpyDeviceToHost));
            CHECK(same_f(a, qp_amax(x.data() + mis, m)), "amax %s mis=%d: %a vs %a", kind_names[kind], mis, a,
                  qp_amax(x.data() + mis, m));
        }
        const uint64_t seed = kind == 0 ? 0 : qp_test_next(&s);
        ref = x;
        qp_rht16(ref.data(), rows, cols, seed);
        CUDA_OK(cudaMemcpy(dx.p, x.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_OK(qp_cuda_rht16(dx.as<float>(), rows, cols, seed, g_stream));
        CUDA_OK(cudaStreamSynchronize(g_stream));
        CUDA_OK(cudaMemcpy(got.data(), dx.p, n * 4, cudaMemcpyDeviceToHost));
        CHECK(first_diff_f(got.data(), ref.data(), n) < 0, "rht16 %s differs", kind_names[kind]);
        CHECK(qp_cuda_rht16(dx.as<float>(), rows, 20, seed, g_stream) == (int)cudaErrorInvalidValue,
              "rht16 with cols %% 16 != 0 must fail");
    }
    /* 2200000 rows: more row tiles (68750) than grid.y may hold (65535) */
    static const int tshapes[][2] = {{1, 1}, {1, 100}, {100, 1}, {33, 65}, {64, 64}, {257, 130}, {2200000, 3}};
    for (const auto &sh : tshapes) {
        const int rows = sh[0], cols = sh[1];
        const int64_t n = (int64_t)rows * cols;
        std::vector<float> x(n), got(n);
        fill(x.data(), n, cols, SPECIAL, 77 + (unsigned long long)rows);
        Dev dx(n * 4), dy(n * 4);
        CUDA_OK(cudaMemcpy(dx.p, x.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA_OK(qp_cuda_transpose(dx.as<float>(), dy.as<float>(), rows, cols, g_stream));
        CUDA_OK(cudaStreamSynchronize(g_stream));
        CUDA_OK(cudaMemcpy(got.data(), dy.p, n * 4, cudaMemcpyDeviceToHost));
        int64_t bad = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) bad += std::memcmp(&got[(int64_t)c * rows + r], &x[(int64_t)r * cols + c], 4) != 0;
        CHECK(bad == 0, "transpose %dx%d: %lld differ", rows, cols, (long long)bad);
    }
}

/* Transformer Engine's fixed-sign 16-point RHT (qp_cuda_rht16_te) against
 * quant/'s qp_rht16_te, bit for bit, NaN as NaN: every input kind of
 * qc_testdata.h (subnormals: products x * 0.25 that round; huge values: sums
 * that overflow to Inf; NaN, Inf, -0), shapes from one 16-vector to
 * thousands of rows, at an aligned and a misaligned (4-byte offset)
 * address (the kernel's scalar loads); cols % 16 != 0 refused. */
void test_rht_te()
{
    static const int shapes[][2] = {{1, 16}, {3, 48}, {37, 96}, {64, 256}, {1000, 32}, {5, 4096}};
    Dev dx(kMaxElems * 4);
    for (const auto &sh : shapes)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int mis = 0; mis < 2; mis++) {
                const int rows = sh[0], cols = sh[1];
                const int64_t n = (int64_t)rows * cols;
                std::vector<float> x(n), ref(n), got(n);
                fill(x.data(), n, cols, kind, 700ull + (unsigned long long)(kind * 31 + cols + rows));
                ref = x;
                CHECK(qp_rht16_te(ref.data(), rows, cols) == 0, "qp_rht16_te %dx%d", rows, cols);
                float *d_x = dx.as<float>(mis * 4);
                CUDA_OK(cudaMemcpy(d_x, x.data(), n * 4, cudaMemcpyHostToDevice));
                CUDA_OK(qp_cuda_rht16_te(d_x, rows, cols, g_stream));
                CUDA_OK(cudaStreamSynchronize(g_stream));
                CUDA_OK(cudaMemcpy(got.data(), d_x, n * 4, cudaMemcpyDeviceToHost));
                const int64_t i = first_diff_f(got.data(), ref.data(), n);
                CHECK(i < 0, "rht16_te %s %dx%d mis=%d differs at %lld: %a (GPU) vs %a (qp_rht16_te)",
                      kind_names[kind], rows, cols, mis, (long long)i, i < 0 ? 0.0f : got[i], i < 0 ? 0.0f : ref[i]);
            }
    CHECK(qp_cuda_rht16_te(dx.as<float>(), 3, 40, g_stream) == (int)cudaErrorInvalidValue,
          "rht16_te with cols %% 16 != 0 must fail");
    CHECK(qp_cuda_rht16_te(dx.as<float>(), 0, 16, g_stream) == 0, "rht16_te of no rows");
}

void test_legacy_fp8()
{
    const int64_t n = 1 << 20;
    std::vector<float> x(n);
    fill(x.data(), n, 1024, RANDOM, 12345);
    x[7] = NAN, x[8] = INFINITY, x[9] = 1e-42f, x[10] = -0.0f;
    Dev dx(n * 4), dc(n);
    CUDA_OK(cudaMemcpy(dx.p, x.data(), n * 4, cudaMemcpyHostToDevice));
    for (int e5 = 0; e5 < 2; e5++) {
        float sinv = 0;
        CUDA_OK(qp_cuda_quantize_fp8(dx.as<float>(), n, e5, dc.as<uint8_t>(), &sinv));
        std::vector<uint8_t> got(n);
        CUDA_OK(cudaMemcpy(got.data(), dc.p, n, cudaMemcpyDeviceToHost));
        qp_qtensor q;
        qp_qtensor_alloc(&q, e5 ? QP_FMT_FP8_E5M2 : QP_FMT_FP8_E4M3, 1, n);
        qp_quantize(x.data(), &q, nullptr, nullptr);
        CHECK(std::memcmp(q.codes, got.data(), n) == 0 && q.scale_inv == sinv, "qp_cuda_quantize_fp8 e5m2=%d", e5);
        qp_qtensor_free(&q);
    }
}

}  // namespace

int main()
{
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        /* the reason matters on a GPU machine: a driver older than this CUDA
           (cudaErrorInsufficientDriver) must not pass for "no GPU" unnoticed */
        std::printf("test_cuda_quant: no CUDA device (%s), SKIP\n", de != cudaSuccess ? cudaGetErrorName(de) : "0 devices");
        return 77;
    }
    CUDA_OK(cudaStreamCreate(&g_stream));
    g_pool = new Pool;
    test_legacy_fp8();
    test_amax_rht_transpose();
    test_rht_te();
    test_tensors();
    test_large();
    test_sr_map();
    delete g_pool;
    CUDA_OK(cudaStreamDestroy(g_stream));
    return qp_test_finish("test_cuda_quant");
}
