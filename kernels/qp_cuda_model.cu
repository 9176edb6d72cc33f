// qp_cuda_model.cu — the model on the GPU (see qp_cuda_model.h). The order of
// the passes is train/model/qp_model_pass.h's, the CPU's too; each step's GPU form
// is qp_cuda_model_pass.h's (the GPT) and qp_cuda_llama_pass.h's (the Llama,
// whose own kernels are qp_cuda_llama.cu), shared with a CPU test; each kernel
// computes the formulas of qp_model_math.h in the CPU's order of
// operations: elementwise and per-row kernels a thread per element / row,
// attention a warp per (b, h, t) row with its per-channel sums in registers,
// the column sums of LayerNorm's weight and bias gradients in the header's
// two-level chunk order over the whole GPU. No float atomics anywhere: every
// sum has one owner and a fixed order, so two runs are bit-identical.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "qp_cuda_llama.h"
#include "qp_cuda_llama_pass.h"
#include "qp_cuda_model.h"
#include "qp_model_math.h"
#include "qp_cuda_model_pass.h"

namespace {
constexpr int NT = 256;             // threads per block
// Kernels of a thread per row (B*T rows, a few thousand): small blocks, so the
// rows spread over every multiprocessor instead of a few dozen.
constexpr int ROW_NT = 32;
constexpr int RED_BLOCKS = 256;     // gradient-norm partials
}

static unsigned blocks_for(int64_t n, int64_t cap = 2147483647)
{
    const int64_t g = (n + NT - 1) / NT;
    return (unsigned)(g < 1 ? 1 : g > cap ? cap : g);
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// ---- kernels ------------------------------------------------------------------

__global__ void k_encoder_fwd(float *out, const int32_t *inp, const float *wte, const float *wpe, int BT, int T, int C)
{
    GRID_STRIDE(i, (int64_t)BT * C)
    {
        const int64_t bt = i / C, c = i % C;
        out[i] = wte[(int64_t)inp[bt] * C + c] + wpe[(bt % T) * C + c];
    }
}

// Token embedding gradients: a thread per channel, tokens in (b,t) order (the
// CPU's scatter-add order; a token may repeat, so a channel has one owner).
__global__ void k_encoder_bwd_token(float *dwte, const float *dout, const int32_t *inp, int BT, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) qpm_encoder_bwd_token(dwte, dout, inp, BT, C, c);
}

// Position embedding gradients: a thread per (t, c), the sequences in order.
__global__ void k_encoder_bwd_pos(float *dwpe, const float *dout, int B, int T, int C)
{
    GRID_STRIDE(i, (int64_t)T * C) qpm_encoder_bwd_pos(dwpe, dout, B, T, C, (int)(i / C), (int)(i % C));
}

__global__ void k_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                                int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    qpm_layernorm_fwd_row(out + (int64_t)i * C, mean + i, rstd + i, inp + (int64_t)i * C, w, b, C);
}

__global__ void k_layernorm_bwd_rows(float *dinp, const float *dout, const float *inp, const float *w,
                                     const float *mean, const float *rstd, int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    qpm_layernorm_bwd_row(dinp + (int64_t)i * C, dout + (int64_t)i * C, inp + (int64_t)i * C, w, mean[i], rstd[i], C);
}

// LayerNorm weight/bias gradients, first level: chunk k of QPM_SUM_ROWS rows
// (blockIdx.y, striding by gridDim.y), a thread per channel (coalesced).
__global__ void k_layernorm_bwd_chunks(float *part_w, float *part_b, const float *dout, const float *inp,
                                       const float *mean, const float *rstd, int N, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int k = blockIdx.y; k < qpm_sum_chunks(N); k += gridDim.y) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
        qpm_layernorm_bwd_chunk(part_w + (int64_t)k * C + c, part_b + (int64_t)k * C + c, dout, inp, mean, rstd, i0,
                                i1, C, c);
    }
}

// ... second level: each channel's chunk sums in chunk order.
__global__ void k_layernorm_bwd_combine(float *dw, float *db, const float *part_w, const float *part_b, int nchunks,
                                        int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) qpm_layernorm_bwd_combine(dw, db, part_w, part_b, nchunks, C, c);
}

// ---- attention: a warp per (b, h, t) row -------------------------------------
// Rows are numbered (b, h, t) with t fastest, ATT_WARPS consecutive rows per
// block: the warps of a block read the same key/value (or query/dout) rows at
// about the same time, from L1. Per-channel sums live in registers: channel
// lane + 32 m in register m (head size <= QP_CUDA_ATT_HS_MAX); every sum adds
// its terms in the host formula's order (qpm_attention_fwd_row,
// qpm_attention_bwd_query, qpm_attention_bwd_key), dot8's through eight lanes.
namespace {
constexpr unsigned kFull = 0xFFFFFFFFu;
constexpr int ATT_WARPS = 8;
constexpr int ATT_CH = QP_CUDA_ATT_HS_MAX / 32;
static_assert(QP_CUDA_ATT_HS_MAX % 32 == 0, "whole lanes per head");
} // namespace

// qpm_dot8(a, b, n) on a group of eight lanes (lane j of the group holds running
// sum j; the xor butterfly over 1, 2, 4 is dot8's tree). The whole warp calls it.
__device__ __forceinline__ float group_dot8(const float *a, const float *b, int n, int j)
{
    float s = qpm_dot8_part(a, b, n, j);
    s += __shfl_xor_sync(kFull, s, 1);
    s += __shfl_xor_sync(kFull, s, 2);
    s += __shfl_xor_sync(kFull, s, 4);
    return s + qpm_dot8_tail(a, b, n);
}

struct att_row {
    int b, h, t, hs;
    int64_t row; // (b, h, t): its preatt/att row starts at row * T
};

__device__ __forceinline__ bool att_row_of(att_row *r, int B, int T, int C, int NH)
{
    r->row = (int64_t)blockIdx.x * ATT_WARPS + (threadIdx.x >> 5);
    if (r->row >= (int64_t)B * NH * T) return false;
    r->t = (int)(r->row % T);
    r->h = (int)((r->row / T) % NH);
    r->b = (int)(r->row / T / NH);
    r->hs = C / NH;
    return true;
}

__global__ void __launch_bounds__(ATT_WARPS * 32)
    k_attention_fwd(float *out, float *preatt, float *att, const float *qkv, int B, int T, int C, int NH)
{
    att_row r;
    if (!att_row_of(&r, B, T, C, NH)) return; // the whole warp
    const int lane = threadIdx.x & 31, g = lane >> 3, j = lane & 7, t = r.t, hs = r.hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int64_t C3 = 3 * (int64_t)C, seq = (int64_t)r.b * T * C3;
    const float *q = qkv + seq + t * C3 + r.h * hs;
    const float *keys = qkv + seq + C + r.h * hs, *vals = qkv + seq + 2 * C + r.h * hs;
    float *pre = preatt + r.row * T, *a = att + r.row * T;
    // scores q . k_t2 * scale, four keys at a time, and their maximum
    float maxv = -INFINITY;
    for (int t0 = 0; t0 <= t; t0 += 4) {
        const int t2 = t0 + g;
        const float v = group_dot8(q, keys + (t2 <= t ? t2 : t) * C3, hs, j) * scale;
        if (t2 <= t) {
            if (j == 0) pre[t2] = v;
            if (v > maxv) maxv = v;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(kFull, maxv, off);
        if (o > maxv) maxv = o;
    }
    __syncwarp();
    // exponentials; their sum in t2 order on one lane (the host's running sum)
    for (int t2 = lane; t2 <= t; t2 += 32) a[t2] = expf(pre[t2] - maxv);
    __syncwarp();
    float sum = 0.0f;
    if (lane == 0)
        for (int t2 = 0; t2 <= t; t2++) sum += a[t2];
    const float inv = 1.0f / __shfl_sync(kFull, sum, 0);
    for (int t2 = lane; t2 < T; t2 += 32) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
    // out[i] = sum over t2 in order of a[t2] v_t2[i]; a[t0 + lane] is this lane's own write
    float acc[ATT_CH];
#pragma unroll
    for (int m = 0; m < ATT_CH; m++) acc[m] = 0.0f;
    for (int t0 = 0; t0 <= t; t0 += 32) {
        const float am = t0 + lane <= t ? a[t0 + lane] : 0.0f;
        const int n = t - t0 + 1 < 32 ? t - t0 + 1 : 32;
        for (int k = 0; k < n; k++) {
            const float at = __shfl_sync(kFull, am, k);
            const float *v = vals + (t0 + k) * C3;
#pragma unroll
            for (int m = 0; m < ATT_CH; m++)
                if (lane + 32 * m < hs) acc[m] += at * v[lane + 32 * m];
        }
    }
    float *o = out + ((int64_t)r.b * T + t) * C + r.h * hs;
#pragma unroll
    for (int m = 0; m < ATT_CH; m++)
        if (lane + 32 * m < hs) o[lane + 32 * m] = acc[m];
}

// Attention backward in two launches (qpm_attention_bwd_query, then
// qpm_attention_bwd_key, which reads every later query row's dpreatt).
__global__ void __launch_bounds__(ATT_WARPS * 32)
    k_attention_bwd_query(float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                          const float *att, int B, int T, int C, int NH)
{
    att_row r;
    if (!att_row_of(&r, B, T, C, NH)) return;
    const int lane = threadIdx.x & 31, g = lane >> 3, j = lane & 7, t = r.t, hs = r.hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int64_t C3 = 3 * (int64_t)C, seq = (int64_t)r.b * T * C3;
    const float *keys = qkv + seq + C + r.h * hs, *vals = qkv + seq + 2 * C + r.h * hs;
    const float *a = att + r.row * T, *d = dout + ((int64_t)r.b * T + t) * C + r.h * hs;
    float *da = datt + r.row * T, *dpre = dpreatt + r.row * T;
    float *dq = dqkv + seq + t * C3 + r.h * hs;
    // da[t2] += v_t2 . d, four keys at a time
    for (int t0 = 0; t0 <= t; t0 += 4) {
        const int t2 = t0 + g;
        const float v = group_dot8(vals + (t2 <= t ? t2 : t) * C3, d, hs, j);
        if (t2 <= t && j == 0) da[t2] += v;
    }
    __syncwarp();
    // dot = dot8(a, da, t + 1): its eight running sums on lanes 0..7
    float s = lane < 8 ? qpm_dot8_part(a, da, t + 1, lane) : 0.0f;
    s += __shfl_xor_sync(kFull, s, 1);
    s += __shfl_xor_sync(kFull, s, 2);
    s += __shfl_xor_sync(kFull, s, 4);
    const float dot = __shfl_sync(kFull, s, 0) + qpm_dot8_tail(a, da, t + 1);
    for (int t2 = lane; t2 <= t; t2 += 32) dpre[t2] += a[t2] * (da[t2] - dot);
    // dq[i] += k_t2[i] * (dpre[t2] * scale), t2 in order; dpre[t0 + lane] is this lane's own write
    float acc[ATT_CH];
#pragma unroll
    for (int m = 0; m < ATT_CH; m++) acc[m] = lane + 32 * m < hs ? dq[lane + 32 * m] : 0.0f;
    for (int t0 = 0; t0 <= t; t0 += 32) {
        const float gm = t0 + lane <= t ? dpre[t0 + lane] * scale : 0.0f;
        const int n = t - t0 + 1 < 32 ? t - t0 + 1 : 32;
        for (int k = 0; k < n; k++) {
            const float gk = __shfl_sync(kFull, gm, k);
            const float *kr = keys + (t0 + k) * C3;
#pragma unroll
            for (int m = 0; m < ATT_CH; m++)
                if (lane + 32 * m < hs) acc[m] += kr[lane + 32 * m] * gk;
        }
    }
#pragma unroll
    for (int m = 0; m < ATT_CH; m++)
        if (lane + 32 * m < hs) dq[lane + 32 * m] = acc[m];
}

// Key row t2 of (b, h): dv += att[t][t2] d_t and dk += q_t (dpreatt[t][t2] * scale)
// over the queries t >= t2 in increasing t.
__global__ void __launch_bounds__(ATT_WARPS * 32)
    k_attention_bwd_key(float *dqkv, const float *dpreatt, const float *dout, const float *qkv, const float *att,
                        int B, int T, int C, int NH)
{
    att_row r;
    if (!att_row_of(&r, B, T, C, NH)) return;
    const int lane = threadIdx.x & 31, t2 = r.t, hs = r.hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const int64_t C3 = 3 * (int64_t)C, seq = (int64_t)r.b * T * C3;
    const int64_t head = r.row - t2; // (b, h, 0): query t's att row is (head + t) * T
    const float *qs = qkv + seq + r.h * hs, *ds = dout + (int64_t)r.b * T * C + r.h * hs;
    float *dk = dqkv + seq + t2 * C3 + C + r.h * hs, *dv = dqkv + seq + t2 * C3 + 2 * C + r.h * hs;
    float accv[ATT_CH], acck[ATT_CH];
#pragma unroll
    for (int m = 0; m < ATT_CH; m++) {
        const bool in = lane + 32 * m < hs;
        accv[m] = in ? dv[lane + 32 * m] : 0.0f;
        acck[m] = in ? dk[lane + 32 * m] : 0.0f;
    }
    for (int t0 = t2; t0 < T; t0 += 32) {
        const int64_t mine = (head + t0 + lane) * T + t2;
        const float am = t0 + lane < T ? att[mine] : 0.0f;
        const float gm = t0 + lane < T ? dpreatt[mine] * scale : 0.0f;
        const int n = T - t0 < 32 ? T - t0 : 32;
        for (int k = 0; k < n; k++) {
            const float at = __shfl_sync(kFull, am, k), gk = __shfl_sync(kFull, gm, k);
            const float *dr = ds + (int64_t)(t0 + k) * C, *qr = qs + (t0 + k) * C3;
#pragma unroll
            for (int m = 0; m < ATT_CH; m++)
                if (lane + 32 * m < hs) {
                    accv[m] += at * dr[lane + 32 * m];
                    acck[m] += qr[lane + 32 * m] * gk;
                }
        }
    }
#pragma unroll
    for (int m = 0; m < ATT_CH; m++)
        if (lane + 32 * m < hs) {
            dv[lane + 32 * m] = accv[m];
            dk[lane + 32 * m] = acck[m];
        }
}

__global__ void k_gelu_fwd(float *out, const float *inp, int64_t n)
{
    GRID_STRIDE(i, n) out[i] = qpm_gelu_fwd(inp[i]);
}

__global__ void k_gelu_bwd(float *dinp, const float *inp, const float *dout, int64_t n)
{
    GRID_STRIDE(i, n) dinp[i] += qpm_gelu_grad(inp[i]) * dout[i];
}

__global__ void k_residual_fwd(float *out, const float *a, const float *b, int64_t n)
{
    GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

__global__ void k_residual_bwd(float *da, float *db, const float *dout, int64_t n)
{
    GRID_STRIDE(i, n)
    {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

__global__ void k_softmax_ce_fwd(float *probs, float *losses, const float *logits, const int32_t *targets, int N, int V)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float l = qpm_softmax_ce_row(probs + (int64_t)i * V, logits + (int64_t)i * V, targets ? targets[i] : -1, V);
    if (targets) losses[i] = l;
}

// The mean loss, summed in double in row order like the CPU.
__global__ void k_loss_mean(const float *losses, int N, double *out)
{
    double s = 0.0;
    for (int i = 0; i < N; i++) s += losses[i];
    *out = s / N;
}

__global__ void k_softmax_ce_bwd(float *dlogits, const float *probs, const int32_t *targets, float dloss, int N, int V)
{
    GRID_STRIDE(i, (int64_t)N * V)
    {
        const int64_t row = i / V;
        const int v = (int)(i % V);
        dlogits[i] += qpm_softmax_ce_grad(probs[i], v == targets[row], dloss);
    }
}

__global__ void k_sumsq_partial(const float *g, int64_t n, double *part)
{
    __shared__ double s[NT];
    double acc = 0.0;
    GRID_STRIDE(i, n) acc += (double)g[i] * g[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = NT / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}

__global__ void k_sum_final(const double *part, int n, double *out)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += part[i]; // fixed order: deterministic
    *out = s;
}

__global__ void k_adamw(float *p, const float *g, float *m, float *v, int64_t n, float clip, float b1, float b2,
                        float eps, float bc1, float bc2, float lr, float wd)
{
    GRID_STRIDE(i, n) qpm_adamw_elem(p + i, m + i, v + i, g[i], clip, b1, b2, eps, bc1, bc2, lr, wd);
}

// ---- memory -------------------------------------------------------------------

// The parameter carving and the GEMM sizes are the model's shape rules
// (train/model/qp_model.h), written once for the CPU and this GPU model; the
// activations are carved by qp_gpt_carve_acts and qp_llama_carve_acts in
// this model's own layouts (qpm_act_sizes, qpm_llama_act_sizes: the T x T
// attention matrices).

static int fail(qp_cuda_gpt *m, cudaError_t e, const char *what)
{
    std::snprintf(m->err, sizeof m->err, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
}

static int launched(qp_cuda_gpt *m, const char *what)
{
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : fail(m, e, what);
}

extern "C" int qp_cuda_gpt_device_count(char *why, size_t whylen)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (why && whylen)
            std::snprintf(why, whylen, "cudaGetDeviceCount: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        return 0;
    }
    if (n < 1 && why && whylen) std::snprintf(why, whylen, "0 devices");
    return n;
}

extern "C" int qp_cuda_gpt_devices(void) { return qp_cuda_gpt_device_count(nullptr, 0); }

// The batch has two slots: the copy of the next batch only waits for the
// compute that read the same slot two batches ago.
struct batch_io {
    cudaStream_t copy;
    cudaEvent_t copied[2], used[2];
    int32_t *d_tok[2]; // inputs then targets, 2 x BT
    int slot;
    bool own_stream;
};

extern "C" int qp_cuda_gpt_init(qp_cuda_gpt *m, const qp_gpt_config *c, int B, int T, const float *host_params,
                                void *stream, char *err, size_t errlen)
{
    std::memset(m, 0, sizeof *m);
    char why[200];
    if (qp_cuda_gpt_device_count(why, sizeof why) < 1) {
        std::snprintf(err, errlen, "no CUDA device found (%s)", why);
        return -1;
    }
    if (c->heads < 1 || c->dim % c->heads || c->dim / c->heads > QP_CUDA_ATT_HS_MAX) {
        std::snprintf(err, errlen, "the GPU attention takes head sizes up to %d (dim %d / %d heads)",
                      QP_CUDA_ATT_HS_MAX, c->dim, c->heads);
        return -1;
    }
    if (qp_model_check(c, err, errlen)) return -1;
    m->cfg = qp_model_resolve(c);
    c = &m->cfg;
    m->B = B, m->T = T;
    const int llama = c->arch == QP_ARCH_LLAMA;
    m->n_tensors = qp_model_nparams(c);
    qp_gpt_param_shapes(c, m->param_sizes, nullptr, nullptr);
    for (int i = 0; i < m->n_tensors; i++) m->num_params += m->param_sizes[i];
    int64_t as[QP_GPT_NACTS], las[QP_LLAMA_NACTS];
    if (llama) {
        qpm_llama_act_sizes(c, B, T, las);
        m->num_acts = qp_llama_carve_acts(&m->lacts, nullptr, las);
    } else {
        qpm_act_sizes(c, B, T, as);
        m->num_acts = qp_gpt_carve_acts(&m->acts, nullptr, as);
    }
    const int64_t BT = (int64_t)B * T, hs = c->dim / c->heads;
    const int64_t part_floats = 2 * (int64_t)qpm_sum_chunks((int)BT) * c->dim;
    const int64_t rope_floats = llama ? 2 * (int64_t)c->max_seq * (hs / 2) : 0;
    const int64_t lscratch_floats = llama ? qpm_llama_scratch_floats(c, B, T) : 0;
    const int max_ic = qp_model_max_input_channels(c);
    const size_t floats = (size_t)(4 * m->num_params + 2 * m->num_acts + part_floats + rope_floats + lscratch_floats);
    const size_t bytes = floats * sizeof(float) + 2 * 2 * BT * sizeof(int32_t) + (RED_BLOCKS + 8) * sizeof(double) +
                         256 + (size_t)max_ic * sizeof(qp_outlier_col) + 256;
    batch_io *io = (batch_io *)std::calloc(1, sizeof(batch_io));
    m->h_ocols = (qp_outlier_col *)std::malloc((size_t)max_ic * sizeof(qp_outlier_col));
    m->h_oscratch = (double *)std::malloc((size_t)max_ic * sizeof(double));
    m->h_smax = (float *)std::malloc((size_t)(c->mlp_hidden > 0 ? c->mlp_hidden : 1) * sizeof(float));
    float *rope_host = llama ? (float *)std::malloc((size_t)rope_floats * sizeof(float)) : nullptr;
    cudaError_t e = io && m->h_ocols && m->h_oscratch && m->h_smax && (!llama || rope_host) ? cudaSuccess
                                                                                          : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = cudaMalloc(&m->mem, bytes);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&m->h_stage, 2 * 2 * BT * sizeof(int32_t));
    if (e == cudaSuccess && !stream) {
        e = cudaStreamCreateWithFlags((cudaStream_t *)&m->stream, cudaStreamNonBlocking);
        io->own_stream = true;
    } else {
        m->stream = stream;
    }
    // zeroed on the compute stream (a non-blocking stream does not wait for the legacy default stream)
    if (e == cudaSuccess) e = cudaMemsetAsync(m->mem, 0, bytes, (cudaStream_t)m->stream);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&io->copy, cudaStreamNonBlocking);
    for (int s = 0; s < 2 && e == cudaSuccess; s++) {
        e = cudaEventCreateWithFlags(&io->copied[s], cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&io->used[s], cudaEventDisableTiming);
    }
    // Both slots' "compute that read it" events start after the memset above:
    // the first two batch copies (copy stream) wait on them, so they cannot
    // race the zeroing of the token slots (a never-recorded event is no wait).
    for (int s = 0; s < 2 && e == cudaSuccess; s++) e = cudaEventRecord(io->used[s], (cudaStream_t)m->stream);
    m->io = io;
    if (e != cudaSuccess) {
        std::snprintf(err, errlen, "GPU model of %lld parameters and %lld activations: %s (%s)",
                      (long long)m->num_params, (long long)m->num_acts, cudaGetErrorName(e), cudaGetErrorString(e));
        std::free(rope_host);
        qp_cuda_gpt_free(m);
        return -1;
    }
    float *f = (float *)m->mem;
    m->params_memory = f, f += m->num_params;
    m->grads_memory = f, f += m->num_params;
    m->adam_m = f, f += m->num_params;
    m->adam_v = f, f += m->num_params;
    m->acts_memory = f, f += m->num_acts;
    m->grads_acts_memory = f, f += m->num_acts;
    m->d_part = f, f += part_floats;
    m->rope = llama ? f : nullptr, f += rope_floats;
    m->lscratch = llama ? f : nullptr, f += lscratch_floats;
    int32_t *tok = (int32_t *)f;
    for (int s = 0; s < 2; s++) io->d_tok[s] = tok + s * 2 * BT;
    m->d_red = (double *)(((uintptr_t)(tok + 4 * BT) + 255) / 256 * 256);
    m->d_ocols = (qp_outlier_col *)(((uintptr_t)(m->d_red + RED_BLOCKS + 8) + 255) / 256 * 256);
    if (llama) {
        qp_llama_carve_params(&m->lparams, m->params_memory, m->param_sizes);
        qp_llama_carve_params(&m->lgrads, m->grads_memory, m->param_sizes);
        qp_llama_carve_acts(&m->lacts, m->acts_memory, las);
        qp_llama_carve_acts(&m->lgrads_acts, m->grads_acts_memory, las);
        qp_llama_rope_table(rope_host, c->max_seq, (int)hs);
        e = cudaMemcpyAsync(m->rope, rope_host, (size_t)rope_floats * sizeof(float), cudaMemcpyHostToDevice,
                            (cudaStream_t)m->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)m->stream);
        std::free(rope_host);
        if (e != cudaSuccess) {
            std::snprintf(err, errlen, "RoPE table: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
            qp_cuda_gpt_free(m);
            return -1;
        }
    } else {
        qp_gpt_carve_params(&m->params, m->params_memory, m->param_sizes);
        qp_gpt_carve_params(&m->grads, m->grads_memory, m->param_sizes);
        qp_gpt_carve_acts(&m->acts, m->acts_memory, as);
        qp_gpt_carve_acts(&m->grads_acts, m->grads_acts_memory, as);
    }
    m->d_inputs = io->d_tok[0], m->d_targets = io->d_tok[0] + BT;
    if (host_params && qp_cuda_gpt_upload(m, host_params, nullptr, nullptr)) {
        std::snprintf(err, errlen, "%s", m->err);
        qp_cuda_gpt_free(m);
        return -1;
    }
    return 0;
}

extern "C" void qp_cuda_gpt_free(qp_cuda_gpt *m)
{
    batch_io *io = (batch_io *)m->io;
    if (m->stream) cudaStreamSynchronize((cudaStream_t)m->stream);
    if (io) {
        if (io->copy) cudaStreamSynchronize(io->copy), cudaStreamDestroy(io->copy);
        for (int s = 0; s < 2; s++) {
            if (io->copied[s]) cudaEventDestroy(io->copied[s]);
            if (io->used[s]) cudaEventDestroy(io->used[s]);
        }
        if (io->own_stream && m->stream) cudaStreamDestroy((cudaStream_t)m->stream);
        std::free(io);
    }
    if (m->h_stage) cudaFreeHost(m->h_stage);
    if (m->mem) cudaFree(m->mem);
    std::free(m->h_ocols), std::free(m->h_oscratch), std::free(m->h_smax);
    std::memset(m, 0, sizeof *m);
}

static int copy_params(qp_cuda_gpt *m, float *h_params, float *h_m, float *h_v, const float *u_params,
                       const float *u_m, const float *u_v)
{
    cudaStream_t s = (cudaStream_t)m->stream;
    const size_t n = (size_t)m->num_params * sizeof(float);
    cudaError_t e = cudaSuccess;
    float *dev[3] = {m->params_memory, m->adam_m, m->adam_v};
    float *down[3] = {h_params, h_m, h_v};
    const float *up[3] = {u_params, u_m, u_v};
    for (int k = 0; k < 3 && e == cudaSuccess; k++) {
        if (down[k]) e = cudaMemcpyAsync(down[k], dev[k], n, cudaMemcpyDeviceToHost, s);
        if (up[k] && e == cudaSuccess) e = cudaMemcpyAsync(dev[k], up[k], n, cudaMemcpyHostToDevice, s);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return e == cudaSuccess ? 0 : fail(m, e, "parameter copy");
}

extern "C" int qp_cuda_gpt_download(qp_cuda_gpt *m, float *params, float *adam_m, float *adam_v)
{
    return copy_params(m, params, adam_m, adam_v, nullptr, nullptr, nullptr);
}

extern "C" int qp_cuda_gpt_upload(qp_cuda_gpt *m, const float *params, const float *adam_m, const float *adam_v)
{
    return copy_params(m, nullptr, nullptr, nullptr, params, adam_m, adam_v);
}

extern "C" int qp_cuda_gpt_set_batch(qp_cuda_gpt *m, const int32_t *inputs, const int32_t *targets)
{
    batch_io *io = (batch_io *)m->io;
    const int64_t BT = (int64_t)m->B * m->T;
    const int V = m->cfg.vocab;
    for (int64_t i = 0; i < BT; i++)
        if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V))) {
            std::snprintf(m->err, sizeof m->err, "token out of the vocabulary of %d", V);
            return -1;
        }
    cudaStream_t s = (cudaStream_t)m->stream;
    cudaError_t e = cudaEventRecord(io->used[io->slot], s); // the compute queued so far read the current slot
    const int k = io->slot ^ 1;
    int32_t *stage = m->h_stage + k * 2 * BT;
    if (e == cudaSuccess) e = cudaEventSynchronize(io->copied[k]); // its staging buffer is free again
    if (e != cudaSuccess) return fail(m, e, "batch copy");
    std::memcpy(stage, inputs, (size_t)BT * sizeof(int32_t));
    if (targets) std::memcpy(stage + BT, targets, (size_t)BT * sizeof(int32_t));
    e = cudaStreamWaitEvent(io->copy, io->used[k], 0);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(io->d_tok[k], stage, (size_t)(targets ? 2 : 1) * BT * sizeof(int32_t),
                            cudaMemcpyHostToDevice, io->copy);
    if (e == cudaSuccess) e = cudaEventRecord(io->copied[k], io->copy);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(s, io->copied[k], 0);
    if (e != cudaSuccess) return fail(m, e, "batch copy");
    io->slot = k;
    m->d_inputs = io->d_tok[k];
    m->d_targets = io->d_tok[k] + BT;
    m->has_targets = targets != nullptr;
    return 0;
}

// ---- layer launches (also the tests' entry points) -------------------------------

extern "C" int qp_cuda_attention_forward(float *out, float *preatt, float *att, const float *qkv, int B, int T, int C,
                                         int NH, void *stream)
{
    if (NH < 1 || C % NH || C / NH > QP_CUDA_ATT_HS_MAX) return (int)cudaErrorInvalidValue;
    const unsigned g = (unsigned)(((int64_t)B * NH * T + ATT_WARPS - 1) / ATT_WARPS);
    k_attention_fwd<<<g, ATT_WARPS * 32, 0, (cudaStream_t)stream>>>(out, preatt, att, qkv, B, T, C, NH);
    return (int)cudaGetLastError();
}

extern "C" int qp_cuda_attention_backward(float *dqkv, float *dpreatt, float *datt, const float *dout,
                                          const float *qkv, const float *att, int B, int T, int C, int NH,
                                          void *stream)
{
    if (NH < 1 || C % NH || C / NH > QP_CUDA_ATT_HS_MAX) return (int)cudaErrorInvalidValue;
    const unsigned g = (unsigned)(((int64_t)B * NH * T + ATT_WARPS - 1) / ATT_WARPS);
    k_attention_bwd_query<<<g, ATT_WARPS * 32, 0, (cudaStream_t)stream>>>(dqkv, dpreatt, datt, dout, qkv, att, B, T,
                                                                          C, NH);
    k_attention_bwd_key<<<g, ATT_WARPS * 32, 0, (cudaStream_t)stream>>>(dqkv, dpreatt, dout, qkv, att, B, T, C, NH);
    return (int)cudaGetLastError();
}

extern "C" int qp_cuda_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                          const float *w, const float *mean, const float *rstd, int N, int C,
                                          float *d_part, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const int nchunks = qpm_sum_chunks(N);
    float *pw = d_part, *pb = d_part + (int64_t)nchunks * C;
    k_layernorm_bwd_rows<<<(unsigned)((N + ROW_NT - 1) / ROW_NT), ROW_NT, 0, s>>>(dinp, dout, inp, w, mean, rstd, N, C);
    const dim3 grid((unsigned)((C + 127) / 128), (unsigned)(nchunks < 65535 ? nchunks : 65535));
    k_layernorm_bwd_chunks<<<grid, 128, 0, s>>>(pw, pb, dout, inp, mean, rstd, N, C);
    k_layernorm_bwd_combine<<<(unsigned)((C + 127) / 128), 128, 0, s>>>(dw, db, pw, pb, nchunks, C);
    return (int)cudaGetLastError();
}

extern "C" int qp_cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T,
                                        int C, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    k_encoder_bwd_token<<<(unsigned)((C + ROW_NT - 1) / ROW_NT), ROW_NT, 0, s>>>(dwte, dout, inp, B * T, C);
    k_encoder_bwd_pos<<<blocks_for((int64_t)T * C), NT, 0, s>>>(dwpe, dout, B, T, C);
    return (int)cudaGetLastError();
}

// ---- the layer operations of qp_cuda_model_pass.h, as kernel launches ------------

namespace {
struct dev_ctx {
    qp_cuda_gpt *m;
    qp_linear *lin;
    cudaStream_t s;
};
} // namespace

static int op_check(void *x, const char *what)
{
    dev_ctx *c = (dev_ctx *)x;
    return launched(c->m, what);
}
static int op_rc(void *x, int rc, const char *what)
{
    return rc ? fail(((dev_ctx *)x)->m, (cudaError_t)rc, what) : 0;
}
#define S_ (((dev_ctx *)x)->s)
#define PH_(ph) qp_cuda_prof_mark(((dev_ctx *)x)->m->prof, ph)

static int op_encoder_fwd(void *x, float *out, const int32_t *inp, const float *wte, const float *wpe, int B, int T,
                          int C)
{
    PH_(QP_PHASE_ROWOPS);
    k_encoder_fwd<<<blocks_for((int64_t)B * T * C), NT, 0, S_>>>(out, inp, wte, wpe, B * T, T, C);
    return op_check(x, "encoder forward");
}
static int op_encoder_bwd(void *x, float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T, int C)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_encoder_backward(dwte, dwpe, dout, inp, B, T, C, S_), "encoder backward");
}
static int op_layernorm_fwd(void *x, float *out, float *mean, float *rstd, const float *inp, const float *w,
                            const float *b, int N, int C)
{
    PH_(QP_PHASE_ROWOPS);
    k_layernorm_fwd<<<(unsigned)((N + ROW_NT - 1) / ROW_NT), ROW_NT, 0, S_>>>(out, mean, rstd, inp, w, b, N, C);
    return op_check(x, "layernorm forward");
}
static int op_layernorm_bwd(void *x, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, ((dev_ctx *)x)->m->d_part,
                                               S_),
                 "layernorm backward");
}
static int op_attention_fwd(void *x, float *out, float *preatt, float *att, const float *qkv, int B, int T, int C,
                            int NH)
{
    PH_(QP_PHASE_ATTN);
    return op_rc(x, qp_cuda_attention_forward(out, preatt, att, qkv, B, T, C, NH, S_), "attention forward");
}
static int op_attention_bwd(void *x, float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH)
{
    PH_(QP_PHASE_ATTN);
    return op_rc(x, qp_cuda_attention_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH, S_),
                 "attention backward");
}
static int op_gelu_fwd(void *x, float *out, const float *inp, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    k_gelu_fwd<<<blocks_for(n), NT, 0, S_>>>(out, inp, n);
    return op_check(x, "gelu forward");
}
static int op_gelu_bwd(void *x, float *dinp, const float *inp, const float *dout, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    k_gelu_bwd<<<blocks_for(n), NT, 0, S_>>>(dinp, inp, dout, n);
    return op_check(x, "gelu backward");
}
static int op_residual_fwd(void *x, float *out, const float *a, const float *b, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    k_residual_fwd<<<blocks_for(n), NT, 0, S_>>>(out, a, b, n);
    return op_check(x, "residual forward");
}
static int op_residual_bwd(void *x, float *da, float *db, const float *dout, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    k_residual_bwd<<<blocks_for(n), NT, 0, S_>>>(da, db, dout, n);
    return op_check(x, "residual backward");
}
static int op_softmax_ce_fwd(void *x, float *probs, float *losses, const float *logits, const int32_t *targets, int N,
                             int V)
{
    PH_(QP_PHASE_ROWOPS);
    k_softmax_ce_fwd<<<(unsigned)((N + ROW_NT - 1) / ROW_NT), ROW_NT, 0, S_>>>(probs, losses, logits, targets, N, V);
    return op_check(x, "softmax forward");
}
static int op_softmax_ce_bwd(void *x, float *dlogits, const float *probs, const int32_t *targets, float dloss, int N,
                             int V)
{
    PH_(QP_PHASE_ROWOPS);
    k_softmax_ce_bwd<<<blocks_for((int64_t)N * V), NT, 0, S_>>>(dlogits, probs, targets, dloss, N, V);
    return op_check(x, "softmax backward");
}
/* A block GEMM input's outlier statistics for the host model's observer:
 * the per-channel sums on the device, the rest on the host (waits). */
static int observe_input(dev_ctx *c, int layer, qp_gemm_id g, const float *X, int M, int IC)
{
    qp_cuda_gpt *m = c->m;
    cudaError_t e = (cudaError_t)qp_cuda_outlier_columns(m->d_ocols, X, M, IC, c->s);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(m->h_ocols, m->d_ocols, (size_t)IC * sizeof(qp_outlier_col), cudaMemcpyDeviceToHost, c->s);
    qp_cuda_prof_mark(m->prof, QP_PH_HOST);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->s);
    if (e != cudaSuccess) return fail(m, e, "outlier statistics");
    qp_outlier_row row;
    qp_outlier_finish(m->h_ocols, M, IC, m->h_oscratch, &row);
    row.step = -1, row.layer = layer, row.gemm = qp_gemm_name(g);
    m->on_input(&row, m->observer_user);
    return 0;
}

static int op_linear_fwd(void *x, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                         int M, int IC, int OC)
{
    dev_ctx *c = (dev_ctx *)x;
    if (c->m->observe && c->m->on_input && g != QP_GEMM_HEAD && observe_input(c, layer, g, X, M, IC)) return -1;
    if (!qp_linear_forward(c->lin, layer, g, Y, X, W, b, M, IC, OC)) return 0;
    std::snprintf(c->m->err, sizeof c->m->err, "%s", qp_linear_error(c->lin));
    return -1;
}
static int op_linear_bwd(void *x, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                         const float *X, const float *W, int M, int IC, int OC)
{
    dev_ctx *c = (dev_ctx *)x;
    if (!qp_linear_backward(c->lin, layer, g, dX, dW, db, dY, X, W, M, IC, OC, 1)) return 0; /* dX zeroed by op_zero */
    std::snprintf(c->m->err, sizeof c->m->err, "%s", qp_linear_error(c->lin));
    return -1;
}
static int op_zero(void *x, float *p, int64_t n)
{
    PH_(QP_PHASE_ROWOPS); /* the activation gradients (the CPU zeroes them in its row passes) */
    const cudaError_t e = cudaMemsetAsync(p, 0, (size_t)n * sizeof(float), S_);
    return e == cudaSuccess ? 0 : fail(((dev_ctx *)x)->m, e, "memset");
}
#undef S_
#undef PH_

static qpm_ops device_ops(dev_ctx *c)
{
    qpm_ops o;
    o.ctx = c;
    o.encoder_fwd = op_encoder_fwd, o.encoder_bwd = op_encoder_bwd;
    o.layernorm_fwd = op_layernorm_fwd, o.layernorm_bwd = op_layernorm_bwd;
    o.attention_fwd = op_attention_fwd, o.attention_bwd = op_attention_bwd;
    o.gelu_fwd = op_gelu_fwd, o.gelu_bwd = op_gelu_bwd;
    o.residual_fwd = op_residual_fwd, o.residual_bwd = op_residual_bwd;
    o.softmax_ce_fwd = op_softmax_ce_fwd, o.softmax_ce_bwd = op_softmax_ce_bwd;
    o.linear_fwd = op_linear_fwd, o.linear_bwd = op_linear_bwd;
    o.zero = op_zero;
    return o;
}

// ---- the Llama's own operations (qp_cuda_llama_pass.h), as kernel launches ---------

#define S_ (((dev_ctx *)x)->s)
#define PH_(ph) qp_cuda_prof_mark(((dev_ctx *)x)->m->prof, ph)
static int op_embed_fwd(void *x, float *out, const int32_t *inp, const float *wte, int B, int T, int C)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_embed_forward(out, inp, wte, B * T, C, S_), "embedding forward");
}
static int op_embed_bwd(void *x, float *dwte, const float *dout, const int32_t *inp, int B, int T, int C)
{
    PH_(QP_PHASE_ROWOPS);
    k_encoder_bwd_token<<<(unsigned)((C + ROW_NT - 1) / ROW_NT), ROW_NT, 0, S_>>>(dwte, dout, inp, B * T, C);
    return op_check(x, "embedding backward");
}
static int op_rmsnorm_fwd(void *x, float *out, float *rstd, const float *inp, const float *w, int N, int C)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_rmsnorm_forward(out, rstd, inp, w, N, C, S_), "rmsnorm forward");
}
static int op_rmsnorm_bwd(void *x, float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                          const float *rstd, int N, int C)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C, ((dev_ctx *)x)->m->d_part, S_),
                 "rmsnorm backward");
}
static int op_rope(void *x, float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_rope(qkv, tab, N, T, maxT, C, NH, KVH, inverse, S_), "rotary embedding");
}
static int op_gqa_expand(void *x, float *wide, const float *narrow, int N, int C, int NH, int KVH)
{
    PH_(QP_PHASE_ATTN);
    return op_rc(x, qp_cuda_gqa_expand(wide, narrow, N, C, NH, KVH, S_), "grouped-query widening");
}
static int op_gqa_reduce(void *x, float *narrow, const float *wide, int N, int C, int NH, int KVH)
{
    PH_(QP_PHASE_ATTN);
    return op_rc(x, qp_cuda_gqa_reduce(narrow, wide, N, C, NH, KVH, S_), "grouped-query narrowing");
}
static int op_swiglu_fwd(void *x, float *h, const float *a, const float *u, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_swiglu_forward(h, a, u, n, S_), "swiglu forward");
}
static int op_swiglu_bwd(void *x, float *da, float *du, const float *a, const float *u, const float *dh, int64_t n)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_swiglu_backward(da, du, a, u, dh, n, S_), "swiglu backward");
}
static int op_smooth_scales(void *x, float *s, const float *h, int N, int H)
{
    qp_cuda_gpt *m = ((dev_ctx *)x)->m;
    PH_(QP_PHASE_ROWOPS);
    int rc = qp_cuda_col_amax(s, h, N, H, S_);
    if (!rc && m->reduce_max) {
        /* data parallel: the global batch's channel maxima, as the CPU model's */
        cudaError_t e = cudaMemcpyAsync(m->h_smax, s, (size_t)H * sizeof(float), cudaMemcpyDeviceToHost, S_);
        if (e == cudaSuccess) e = cudaStreamSynchronize(S_);
        if (e == cudaSuccess) m->reduce_max(m->h_smax, H, m->reduce_user);
        if (e == cudaSuccess) e = cudaMemcpyAsync(s, m->h_smax, (size_t)H * sizeof(float), cudaMemcpyHostToDevice, S_);
        if (e == cudaSuccess) e = cudaStreamSynchronize(S_); /* h_smax is reused by the next layer */
        rc = (int)e;
    }
    if (!rc) rc = qp_cuda_smooth_scale(s, H, S_);
    return op_rc(x, rc, "smooth-swiglu scales");
}
static int op_smooth_apply(void *x, float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C,
                           int H)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_smooth_apply(xs, ws, h, w, s, N, C, H, S_), "smooth-swiglu scaling");
}
static int op_smooth_unfold(void *x, float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N,
                            int C, int H)
{
    PH_(QP_PHASE_ROWOPS);
    return op_rc(x, qp_cuda_smooth_unfold(dh, dw, dxs, dws, s, N, C, H, S_), "smooth-swiglu fold");
}
#undef S_
#undef PH_

static qpm_llama_ops device_llama_ops(const qpm_ops *base)
{
    qpm_llama_ops o;
    o.base = base;
    o.embed_fwd = op_embed_fwd, o.embed_bwd = op_embed_bwd;
    o.rmsnorm_fwd = op_rmsnorm_fwd, o.rmsnorm_bwd = op_rmsnorm_bwd;
    o.rope = op_rope, o.gqa_expand = op_gqa_expand, o.gqa_reduce = op_gqa_reduce;
    o.swiglu_fwd = op_swiglu_fwd, o.swiglu_bwd = op_swiglu_bwd;
    o.smooth_scales = op_smooth_scales, o.smooth_apply = op_smooth_apply, o.smooth_unfold = op_smooth_unfold;
    return o;
}

extern "C" int qp_cuda_gpt_forward(qp_cuda_gpt *m, qp_linear *lin)
{
    const int BT = m->B * m->T;
    cudaStream_t s = (cudaStream_t)m->stream;
    dev_ctx c = {m, lin, s};
    const qpm_ops ops = device_ops(&c);
    const int32_t *tg = m->has_targets ? m->d_targets : nullptr;
    const float *losses = m->acts.losses;
    if (m->cfg.arch == QP_ARCH_LLAMA) {
        const qpm_llama_ops lops = device_llama_ops(&ops);
        const qpm_llama_scratch sc = qpm_llama_scratch_carve(m->lscratch, &m->cfg, m->B, m->T);
        if (qpm_llama_forward(&lops, &m->cfg, m->B, m->T, &m->lparams, &m->lacts, &sc, m->rope, m->d_inputs, tg))
            return -1;
        losses = m->lacts.losses;
    } else if (qpm_forward(&ops, &m->cfg, m->B, m->T, &m->params, &m->acts, m->d_inputs, tg)) {
        return -1;
    }
    if (!tg) {
        m->mean_loss = -1.0f;
        return 0;
    }
    k_loss_mean<<<1, 1, 0, s>>>(losses, BT, m->d_red + RED_BLOCKS);
    double mean = 0.0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(&mean, m->d_red + RED_BLOCKS, sizeof mean, cudaMemcpyDeviceToHost, s);
    qp_cuda_prof_mark(m->prof, QP_PH_HOST);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return fail(m, e, "forward");
    m->mean_loss = (float)mean;
    return 0;
}

extern "C" int qp_cuda_gpt_zero_grad(qp_cuda_gpt *m)
{
    qp_cuda_prof_mark(m->prof, QP_PHASE_OPTIM);
    const cudaError_t e = cudaMemsetAsync(m->grads_memory, 0, (size_t)m->num_params * sizeof(float),
                                          (cudaStream_t)m->stream);
    return e == cudaSuccess ? 0 : fail(m, e, "zero grad");
}

extern "C" int qp_cuda_gpt_backward(qp_cuda_gpt *m, qp_linear *lin, float loss_scale)
{
    if (!m->has_targets) {
        std::snprintf(m->err, sizeof m->err, "backward without targets");
        return -1;
    }
    dev_ctx c = {m, lin, (cudaStream_t)m->stream};
    const qpm_ops ops = device_ops(&c);
    if (m->cfg.arch == QP_ARCH_LLAMA) {
        const qpm_llama_ops lops = device_llama_ops(&ops);
        const qpm_llama_scratch sc = qpm_llama_scratch_carve(m->lscratch, &m->cfg, m->B, m->T);
        return qpm_llama_backward(&lops, &m->cfg, m->B, m->T, &m->lparams, &m->lgrads, &m->lacts, &m->lgrads_acts,
                                  m->grads_acts_memory, m->num_acts, &sc, m->rope, m->d_inputs, m->d_targets,
                                  loss_scale);
    }
    return qpm_backward(&ops, &m->cfg, m->B, m->T, &m->params, &m->grads, &m->acts, &m->grads_acts,
                        m->grads_acts_memory, m->num_acts, m->d_inputs, m->d_targets, loss_scale);
}

extern "C" int qp_cuda_gpt_grad_norm(qp_cuda_gpt *m, double *norm)
{
    cudaStream_t s = (cudaStream_t)m->stream;
    qp_cuda_prof_mark(m->prof, QP_PHASE_OPTIM);
    k_sumsq_partial<<<RED_BLOCKS, NT, 0, s>>>(m->grads_memory, m->num_params, m->d_red);
    k_sum_final<<<1, 1, 0, s>>>(m->d_red, RED_BLOCKS, m->d_red + RED_BLOCKS + 1);
    double ss = 0.0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(&ss, m->d_red + RED_BLOCKS + 1, sizeof ss, cudaMemcpyDeviceToHost, s);
    qp_cuda_prof_mark(m->prof, QP_PH_HOST);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return fail(m, e, "gradient norm");
    *norm = std::sqrt(ss);
    return 0;
}

extern "C" int qp_cuda_gpt_adamw(qp_cuda_gpt *m, const qp_optim_cfg *c, int64_t t, double lr, float clip_scale)
{
    // the host-side constants exactly as qp_adamw_step computes them
    const float b1 = (float)c->beta1, b2 = (float)c->beta2, eps = (float)c->eps;
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    const float flr = (float)lr;
    cudaStream_t s = (cudaStream_t)m->stream;
    qp_cuda_prof_mark(m->prof, QP_PHASE_OPTIM);
    int64_t off = 0;
    for (int k = 0; k < m->n_tensors; k++) {
        const float wd = qp_model_param_decays(&m->cfg, k) ? (float)c->weight_decay : 0.0f;
        const int64_t n = m->param_sizes[k];
        k_adamw<<<blocks_for(n, 4096), NT, 0, s>>>(m->params_memory + off, m->grads_memory + off, m->adam_m + off,
                                                   m->adam_v + off, n, clip_scale, b1, b2, eps, bc1, bc2, flr, wd);
        off += n;
    }
    return launched(m, "AdamW");
}

extern "C" void qp_cuda_gpt_set_profiler(qp_cuda_gpt *m, qp_cuda_prof *p) { m->prof = p; }

extern "C" int qp_cuda_gpt_sync(qp_cuda_gpt *m)
{
    qp_cuda_prof_mark(m->prof, QP_PH_HOST);
    const cudaError_t e = cudaStreamSynchronize((cudaStream_t)m->stream);
    return e == cudaSuccess ? 0 : fail(m, e, "synchronize");
}
