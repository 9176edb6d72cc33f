// test_cuda_model_kernels.cu — the GPU model's layer kernels against the host
// formulas they compute (train/model/qp_model_math.h, which
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
// for bit (no atomics, fixed order). The Llama's kernels (qp_cuda_llama.h) —
// RMSNorm forward and backward with the gain's chunk sums, rotary
// embeddings both ways, the grouped-query widening and narrowing, SwiGLU
// (its sigmoid is the CPU's exp polynomial, no libm), Smooth-SwiGLU's scales
// and fold, the outlier column sums — bit for bit against the host formulas.
// SKIP (77) without a device. Label gpu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "qp_cuda_llama.h"
#include "qp_cuda_model.h"
#include "qp_model_math.h"
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

// The Llama's kernels against the host formulas: the same bits.
void test_llama(int N, int T, int C, int NH, int KVH, int H)
{
    char shape[96];
    std::snprintf(shape, sizeof shape, "llama N%d T%d C%d NH%d KVH%d H%d", N, T, C, NH, KVH, H);
    const int hs = C / NH, half = hs / 2;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    // RMSNorm
    const std::vector<float> x = randv((int64_t)N * C, 2.0f), w = randv(C, 1.0f), dout = randv((int64_t)N * C, 1.0f);
    std::vector<float> o((size_t)N * C), r(N), dx = randv((int64_t)N * C, 0.1f), dw = randv(C, 0.1f);
    const std::vector<float> dx0 = dx, dw0 = dw;
    for (int i = 0; i < N; i++) qpm_rmsnorm_fwd_row(&o[(size_t)i * C], &r[i], &x[(size_t)i * C], w.data(), C);
    for (int i = 0; i < N; i++) qpm_rmsnorm_bwd_row(&dx[(size_t)i * C], &dout[(size_t)i * C], &x[(size_t)i * C], w.data(), r[i], C);
    for (int c = 0; c < C; c++) qpm_rmsnorm_bwd_channel(dw.data(), dout.data(), x.data(), r.data(), N, C, c);
    float *d_x = up(x), *d_w = up(w), *d_dout = up(dout), *d_dx = up(dx0), *d_dw = up(dw0);
    float *d_o = up(std::vector<float>((size_t)N * C, NAN)), *d_r = up(std::vector<float>(N, NAN));
    float *d_part = up(std::vector<float>((size_t)qpm_sum_chunks(N) * C, NAN));
    CUDA_OK(qp_cuda_rmsnorm_forward(d_o, d_r, d_x, d_w, N, C, nullptr));
    CUDA_OK(qp_cuda_rmsnorm_backward(d_dx, d_dw, d_dout, d_x, d_w, d_r, N, C, d_part, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    diff_bits(o, down(d_o, (int64_t)N * C), "rmsnorm out", shape);
    diff_bits(r, down(d_r, N), "rmsnorm rstd", shape);
    diff_bits(dx, down(d_dx, (int64_t)N * C), "rmsnorm dx", shape);
    diff_bits(dw, down(d_dw, C), "rmsnorm gain gradient", shape);
    // RoPE both ways, on a narrow qkv
    const int maxT = T + 2;
    std::vector<float> tab((size_t)2 * maxT * half);
    qp_llama_rope_table(tab.data(), maxT, hs);
    const std::vector<float> q0 = randv((int64_t)N * rs, 1.0f);
    float *d_tab = up(tab);
    for (int inverse = 0; inverse < 2; inverse++) {
        std::vector<float> q = q0;
        for (int i = 0; i < N; i++)
            for (int p = 0; p < (NH + KVH) * half; p++) {
                int64_t i1, i2;
                int f;
                qpm_rope_pair_at(p, NH, hs, C, &i1, &i2, &f);
                const int t = i % T;
                qpm_rope_pair(&q[(size_t)i * rs + i1], &q[(size_t)i * rs + i2], tab[(size_t)t * half + f],
                              tab[(size_t)maxT * half + (size_t)t * half + f], inverse);
            }
        float *d_q = up(q0);
        CUDA_OK(qp_cuda_rope(d_q, d_tab, N, T, maxT, C, NH, KVH, inverse, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        diff_bits(q, down(d_q, (int64_t)N * rs), inverse ? "rope inverse" : "rope", shape);
        cudaFree(d_q);
    }
    // the grouped-query widening and narrowing
    std::vector<float> wide((size_t)N * 3 * C), narrow((size_t)N * rs);
    const std::vector<float> dwide = randv((int64_t)N * 3 * C, 1.0f);
    for (int64_t i = 0; i < N; i++) {
        for (int64_t j = 0; j < 3 * C; j++) wide[(size_t)(i * 3 * C + j)] = qpm_gqa_expand(&q0[(size_t)(i * rs)], j, C, NH, KVH, hs);
        for (int64_t j = 0; j < rs; j++) narrow[(size_t)(i * rs + j)] = qpm_gqa_reduce(&dwide[(size_t)(i * 3 * C)], j, C, NH, KVH, hs);
    }
    float *d_n = up(q0), *d_wide = up(std::vector<float>((size_t)N * 3 * C, NAN)), *d_dw3 = up(dwide);
    float *d_nar = up(std::vector<float>((size_t)N * rs, NAN));
    CUDA_OK(qp_cuda_gqa_expand(d_wide, d_n, N, C, NH, KVH, nullptr));
    CUDA_OK(qp_cuda_gqa_reduce(d_nar, d_dw3, N, C, NH, KVH, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    diff_bits(wide, down(d_wide, (int64_t)N * 3 * C), "gqa widening", shape);
    diff_bits(narrow, down(d_nar, (int64_t)N * rs), "gqa narrowing", shape);
    // SwiGLU
    const int64_t nh = (int64_t)N * H;
    std::vector<float> a = randv(nh, 4.0f);
    a[0] = 0.0f, a[1] = -90.0f, a[2] = 90.0f;
    const std::vector<float> u = randv(nh, 1.0f), dh = randv(nh, 1.0f);
    std::vector<float> h(nh), da = randv(nh, 0.1f), du = randv(nh, 0.1f);
    const std::vector<float> da0 = da, du0 = du;
    for (int64_t i = 0; i < nh; i++) h[i] = qpm_swiglu_fwd(a[i], u[i]), qpm_swiglu_bwd(&da[i], &du[i], a[i], u[i], dh[i]);
    float *d_a = up(a), *d_u = up(u), *d_dh = up(dh), *d_h = up(std::vector<float>(nh, NAN)), *d_da = up(da0),
          *d_du = up(du0);
    CUDA_OK(qp_cuda_swiglu_forward(d_h, d_a, d_u, nh, nullptr));
    CUDA_OK(qp_cuda_swiglu_backward(d_da, d_du, d_a, d_u, d_dh, nh, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    diff_bits(h, down(d_h, nh), "swiglu forward", shape);
    diff_bits(da, down(d_da, nh), "swiglu da", shape);
    diff_bits(du, down(d_du, nh), "swiglu du", shape);
    // Smooth-SwiGLU: scales, the scaling and the fold
    std::vector<float> s(H), xs(nh), ws((size_t)C * H), dhs = da, dws = randv((int64_t)C * H, 0.1f);
    const std::vector<float> wd = randv((int64_t)C * H, 0.1f), dxs = randv(nh, 1.0f), dwsin = randv((int64_t)C * H, 1.0f);
    const std::vector<float> dhs0 = dhs, dws0 = dws;
    for (int j = 0; j < H; j++) s[j] = qpm_smooth_scale(qpm_col_amax(h.data(), N, H, j));
    for (int64_t i = 0; i < nh; i++) xs[i] = h[i] * s[i % H], dhs[i] += dxs[i] * s[i % H];
    for (int64_t i = 0; i < (int64_t)C * H; i++) ws[i] = wd[i] / s[i % H], dws[i] += dwsin[i] / s[i % H];
    float *d_s = up(std::vector<float>(H, NAN)), *d_xs = up(std::vector<float>(nh, NAN)),
          *d_ws = up(std::vector<float>((size_t)C * H, NAN)), *d_wd = up(wd), *d_dxs = up(dxs), *d_dwsin = up(dwsin),
          *d_dhs = up(dhs0), *d_dws = up(dws0);
    CUDA_OK(qp_cuda_col_amax(d_s, d_h, N, H, nullptr));
    CUDA_OK(qp_cuda_smooth_scale(d_s, H, nullptr));
    CUDA_OK(qp_cuda_smooth_apply(d_xs, d_ws, d_h, d_wd, d_s, N, C, H, nullptr));
    CUDA_OK(qp_cuda_smooth_unfold(d_dhs, d_dws, d_dxs, d_dwsin, d_s, N, C, H, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    diff_bits(s, down(d_s, H), "smooth-swiglu scales", shape);
    diff_bits(xs, down(d_xs, nh), "smooth-swiglu scaled input", shape);
    diff_bits(ws, down(d_ws, (int64_t)C * H), "smooth-swiglu folded weight", shape);
    diff_bits(dhs, down(d_dhs, nh), "smooth-swiglu input gradient", shape);
    diff_bits(dws, down(d_dws, (int64_t)C * H), "smooth-swiglu weight gradient", shape);
    // the outlier column sums (doubles, compared as such)
    std::vector<qp_outlier_col> hc(H), gc(H);
    for (int j = 0; j < H; j++) qp_outlier_column(&hc[j], h.data(), N, H, j);
    qp_outlier_col *d_cols = nullptr;
    CUDA_OK(cudaMalloc(&d_cols, sizeof(qp_outlier_col) * H));
    CUDA_OK(qp_cuda_outlier_columns(d_cols, d_h, N, H, nullptr));
    CUDA_OK(cudaMemcpy(gc.data(), d_cols, sizeof(qp_outlier_col) * H, cudaMemcpyDeviceToHost));
    CHECK(!std::memcmp(hc.data(), gc.data(), sizeof(qp_outlier_col) * H), "%s: outlier column sums differ", shape);
    for (float *p : {d_x, d_w, d_dout, d_dx, d_dw, d_o, d_r, d_part, d_tab, d_n, d_wide, d_dw3, d_nar, d_a, d_u, d_dh,
                     d_h, d_da, d_du, d_s, d_xs, d_ws, d_wd, d_dxs, d_dwsin, d_dhs, d_dws})
        cudaFree(p);
    cudaFree(d_cols);
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
    test_llama(300, 37, 64, 4, 2, 192);  // grouped-query, ten chunks of RMSNorm rows
    test_llama(13, 13, 128, 4, 1, 344);  // multi-query, head 32, a short last chunk
    // the head-size bound is enforced
    CHECK(qp_cuda_attention_forward(nullptr, nullptr, nullptr, nullptr, 1, 4, 2 * (QP_CUDA_ATT_HS_MAX + 32), 2,
                                    nullptr) == (int)cudaErrorInvalidValue,
          "head size above QP_CUDA_ATT_HS_MAX accepted");
    return qp_test_finish("test_cuda_model_kernels");
}
