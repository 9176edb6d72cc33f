// test_cuda_model_kernels.cu — the GPU model's layer kernels against the host
// formulas they compute (kernels/qp_cuda_model_math.h, which
// test_cuda_model_math checks against the CPU model without a GPU).
//
// Bit for bit wherever no transcendental function is involved: attention's
// scores (preatt: dot8 on eight lanes), the whole attention backward (query
// rows then key rows, given att), LayerNorm backward (rows, and the weight
// and bias gradients' two-level chunk sums), the embedding gradients. The
// forward's probabilities and outputs go through expf, which differs by an
// ulp or two between CUDA and glibc: 2e-6 relative. Head sizes 2 (dot8's
// tail only), 24 (a tail and idle lanes), 64 (GPT-2's) and 128 (the bound),
// sequences of odd lengths, inputs poisoned with NaN where the kernel must
// write. Every kernel runs twice: the second result must equal the first bit
// for bit (no atomics, fixed order). SKIP (77) without a device. Label gpu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "qp_cuda_model.h"
#include "qp_cuda_model_math.h"
#include "qp_test.h"

namespace {

unsigned long long g_rng = 0xA77E57;

#define CUDA_OK(x)                                                                                          \
    do {                                                                                                    \
        const cudaError_t e_ = (cudaError_t)(x);                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_),       \
                         cudaGetErrorString(e_));                                                           \
            std::exit(1);                                                                                   \
        }                                                                                                   \
    } while (0)

std::vector<float> randv(int64_t n, float s)
{
    std::vector<float> v((size_t)n);
    for (auto &x : v) x = s * qp_test_normal(&g_rng);
    return v;
}

template <typename T> T *up(const std::vector<T> &h)
{
    T *d = nullptr;
    CUDA_OK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
    CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

std::vector<float> down(const float *d, int64_t n)
{
    std::vector<float> h((size_t)n);
    CUDA_OK(cudaMemcpy(h.data(), d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

// Positions where a and b differ in bits; the first one reported.
int64_t diff_bits(const std::vector<float> &a, const std::vector<float> &b, const char *what, const char *shape)
{
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < a.size(); i++)
        if (!qp_same_float(a[i], b[i])) {
            if (first < 0) first = (int64_t)i;
            bad++;
        }
    CHECK(bad == 0, "%s %s: %lld of %zu differ, first at %lld (host %.9g, GPU %.9g)", shape, what, (long long)bad,
          a.size(), (long long)first, first >= 0 ? a[first] : 0.0, first >= 0 ? b[first] : 0.0);
    return bad;
}

void close_rel(const std::vector<float> &a, const std::vector<float> &b, double tol, const char *what,
               const char *shape)
{
    double worst = 0;
    int64_t at = 0;
    for (size_t i = 0; i < a.size(); i++) {
        const double d = (std::isnan(a[i]) || std::isnan(b[i])) ? INFINITY
                                                                 : std::fabs((double)a[i] - b[i]) / (1e-6 + std::fabs(a[i]));
        if (d > worst) worst = d, at = (int64_t)i;
    }
    CHECK(worst <= tol, "%s %s: relative difference %.3g at %lld (host %.9g, GPU %.9g)", shape, what, worst,
          (long long)at, a[at], b[at]);
}

void test_attention(int B, int T, int C, int NH)
{
    char shape[96];
    std::snprintf(shape, sizeof shape, "attention B%d T%d C%d NH%d (head %d)", B, T, C, NH, C / NH);
    const int hs = C / NH;
    const int64_t nq = (int64_t)B * T * 3 * C, na = (int64_t)B * NH * T * T, no = (int64_t)B * T * C;
    const std::vector<float> qkv = randv(nq, 1.0f), dout = randv(no, 1.0f), dqkv0 = randv(nq, 0.1f);
    // host: the row formulas (the masked part of preatt is never written: 0 on both sides)
    std::vector<float> out(no), pre(na, 0.0f), att(na);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const int64_t row = (((int64_t)b * NH + h) * T + t) * T;
                qpm_attention_fwd_row(out.data() + ((int64_t)b * T + t) * C + h * hs, pre.data() + row,
                                      att.data() + row, qkv.data(), b, t, h, T, C, NH);
            }
    float *d_qkv = up(qkv), *d_out = up(std::vector<float>(no, NAN)), *d_pre = up(std::vector<float>(na, 0.0f));
    float *d_att = up(std::vector<float>(na, NAN));
    CUDA_OK(qp_cuda_attention_forward(d_out, d_pre, d_att, d_qkv, B, T, C, NH, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<float> g_pre = down(d_pre, na), g_att = down(d_att, na), g_out = down(d_out, no);
    diff_bits(pre, g_pre, "forward preatt (bits)", shape);
    close_rel(att, g_att, 2e-6, "forward att", shape);
    close_rel(out, g_out, 2e-6, "forward out", shape);
    CUDA_OK(qp_cuda_attention_forward(d_out, d_pre, d_att, d_qkv, B, T, C, NH, nullptr));
    diff_bits(g_att, down(d_att, na), "forward att, second run", shape);
    diff_bits(g_out, down(d_out, no), "forward out, second run", shape);

    // backward from the host's att: every sum bit for bit
    std::vector<float> dqkv = dqkv0, dpre(na, 0.0f), datt(na, 0.0f);
    for (int64_t r = 0; r < (int64_t)B * T * NH; r++)
        qpm_attention_bwd_query(dqkv.data(), dpre.data(), datt.data(), dout.data(), qkv.data(), att.data(),
                                (int)(r / NH / T), (int)((r / NH) % T), (int)(r % NH), T, C, NH);
    for (int64_t r = 0; r < (int64_t)B * T * NH; r++)
        qpm_attention_bwd_key(dqkv.data(), dpre.data(), dout.data(), qkv.data(), att.data(), (int)(r / NH / T),
                              (int)((r / NH) % T), (int)(r % NH), T, C, NH);
    float *d_hatt = up(att), *d_dout = up(dout);
    std::vector<float> first_dqkv;
    for (int run = 0; run < 2; run++) {
        float *d_dqkv = up(dqkv0), *d_dpre = up(std::vector<float>(na, 0.0f)), *d_datt = up(std::vector<float>(na, 0.0f));
        CUDA_OK(qp_cuda_attention_backward(d_dqkv, d_dpre, d_datt, d_dout, d_qkv, d_hatt, B, T, C, NH, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        const std::vector<float> g = down(d_dqkv, nq);
        if (run == 0) {
            diff_bits(dqkv, g, "backward dqkv (bits)", shape);
            diff_bits(dpre, down(d_dpre, na), "backward dpreatt (bits)", shape);
            diff_bits(datt, down(d_datt, na), "backward datt (bits)", shape);
            first_dqkv = g;
        } else {
            diff_bits(first_dqkv, g, "backward dqkv, second run", shape);
        }
        cudaFree(d_dqkv), cudaFree(d_dpre), cudaFree(d_datt);
    }
    cudaFree(d_qkv), cudaFree(d_out), cudaFree(d_pre), cudaFree(d_att), cudaFree(d_hatt), cudaFree(d_dout);
    std::printf("%s: forward and backward checked\n", shape);
}

void test_layernorm_backward(int N, int C)
{
    char shape[64];
    std::snprintf(shape, sizeof shape, "layernorm backward N%d C%d (%d chunks)", N, C, qpm_sum_chunks(N));
    const std::vector<float> x = randv((int64_t)N * C, 2.0f), w = randv(C, 1.0f), b = randv(C, 0.2f);
    const std::vector<float> dout = randv((int64_t)N * C, 1.0f), dx0 = randv((int64_t)N * C, 0.1f);
    const std::vector<float> dw0 = randv(C, 0.1f), db0 = randv(C, 0.1f);
    std::vector<float> o((size_t)N * C), mean(N), rstd(N);
    for (int i = 0; i < N; i++)
        qpm_layernorm_fwd_row(o.data() + (int64_t)i * C, &mean[i], &rstd[i], x.data() + (int64_t)i * C, w.data(),
                              b.data(), C);
    std::vector<float> dx = dx0, dw = dw0, db = db0;
    for (int i = 0; i < N; i++)
        qpm_layernorm_bwd_row(dx.data() + (int64_t)i * C, dout.data() + (int64_t)i * C, x.data() + (int64_t)i * C,
                              w.data(), mean[i], rstd[i], C);
    for (int c = 0; c < C; c++)
        qpm_layernorm_bwd_channel(dw.data(), db.data(), dout.data(), x.data(), mean.data(), rstd.data(), N, C, c);
    float *d_x = up(x), *d_w = up(w), *d_dout = up(dout), *d_mean = up(mean), *d_rstd = up(rstd);
    float *d_part = up(std::vector<float>((size_t)2 * qpm_sum_chunks(N) * C, NAN));
    for (int run = 0; run < 2; run++) {
        float *d_dx = up(dx0), *d_dw = up(dw0), *d_db = up(db0);
        CUDA_OK(qp_cuda_layernorm_backward(d_dx, d_dw, d_db, d_dout, d_x, d_w, d_mean, d_rstd, N, C, d_part, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        diff_bits(dx, down(d_dx, (int64_t)N * C), run ? "dx (second run)" : "dx", shape);
        diff_bits(dw, down(d_dw, C), run ? "dw (second run)" : "dw", shape);
        diff_bits(db, down(d_db, C), run ? "db (second run)" : "db", shape);
        cudaFree(d_dx), cudaFree(d_dw), cudaFree(d_db);
    }
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_dout), cudaFree(d_mean), cudaFree(d_rstd), cudaFree(d_part);
    std::printf("%s: checked\n", shape);
}

void test_encoder_backward(int B, int T, int C, int V)
{
    char shape[64];
    std::snprintf(shape, sizeof shape, "encoder backward B%d T%d C%d V%d", B, T, C, V);
    std::vector<int32_t> inp((size_t)B * T);
    for (auto &v : inp) v = (int32_t)(qp_test_next(&g_rng) % (unsigned)V);
    inp[1] = inp[0]; // a repeated token
    const std::vector<float> dout = randv((int64_t)B * T * C, 1.0f), dwte0 = randv((int64_t)V * C, 0.1f),
                             dwpe0 = randv((int64_t)T * C, 0.1f);
    std::vector<float> dwte = dwte0, dwpe = dwpe0;
    // the CPU's loop (qp_model_kernels.c encoder_backward): channel by channel, (b,t) in order
    for (int c = 0; c < C; c++)
        for (int bt = 0; bt < B * T; bt++) {
            const float d = dout[(size_t)bt * C + c];
            dwte[(size_t)inp[bt] * C + c] += d;
            dwpe[(size_t)(bt % T) * C + c] += d;
        }
    float *d_dout = up(dout), *d_wte = up(dwte0), *d_wpe = up(dwpe0);
    int32_t *d_inp = up(inp);
    CUDA_OK(qp_cuda_encoder_backward(d_wte, d_wpe, d_dout, d_inp, B, T, C, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    diff_bits(dwte, down(d_wte, (int64_t)V * C), "dwte (the CPU loop's bits)", shape);
    diff_bits(dwpe, down(d_wpe, (int64_t)T * C), "dwpe (the CPU loop's bits)", shape);
    cudaFree(d_dout), cudaFree(d_wte), cudaFree(d_wpe), cudaFree(d_inp);
    std::printf("%s: checked\n", shape);
}

} // namespace

int main()
{
    char why[200];
    if (qp_cuda_gpt_device_count(why, sizeof why) < 1) {
        std::printf("test_cuda_model_kernels: no CUDA device (%s), SKIP\n", why);
        return 77;
    }
    test_attention(2, 67, 128, 2);  // head 64 (GPT-2), T not a multiple of 32
    test_attention(1, 33, 96, 4);   // head 24: dot8 tail, idle lanes
    test_attention(2, 40, 256, 2);  // head 128: the register bound
    test_attention(3, 5, 10, 5);    // head 2: only the tail
    test_attention(1, 300, 64, 1);  // long rows: several 32-key chunks
    test_layernorm_backward(13, 37);
    test_layernorm_backward(300, 768);   // five chunks, the last one short
    test_layernorm_backward(8192, 96);   // 128 chunks
    test_encoder_backward(4, 33, 70, 11);
    // the head-size bound is enforced
    CHECK(qp_cuda_attention_forward(nullptr, nullptr, nullptr, nullptr, 1, 4, 2 * (QP_CUDA_ATT_HS_MAX + 32), 2,
                                    nullptr) == (int)cudaErrorInvalidValue,
          "head size above QP_CUDA_ATT_HS_MAX accepted");
    return qp_test_finish("test_cuda_model_kernels");
}
