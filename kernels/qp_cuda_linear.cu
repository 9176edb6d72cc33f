// qp_cuda_linear.cu — the GPU precision dispatch (see qp_cuda_linear.h). Each
// step mirrors a step of train/qp_linear.c's prepare()/run(); read them side
// by side.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "qp_cublaslt.h"
#include "qp_cuda_linear.h"
#include "qp_cuda_quant.h"

#define N_QGEMMS 4 // the quantized GEMMs of a block; the head is FP32

namespace {

// What the reduction kernel gives the host about one quantization: the counts
// the device quantizer does not keep (non-zeros, flushed non-zeros) and the
// sums of the error metrics, in double.
struct red_out {
    double xx, ee;
    unsigned long long n_nonzero, n_flushed;
};

constexpr int RED_BLOCKS = 128, RED_THREADS = 256;

struct dev_scratch {
    qp_cuda_tstats tstats;
    red_out red;
};

} // namespace

struct qp_cuda_linear {
    qp_linear_cfg cfg;
    qp_linear *host;           // scaling states and events
    qp_linear_plan *plans;     // per layer
    qp_cublt *blt;
    cudaStream_t stream;
    float *tbuf[2], *ybuf[2];  // per side: transposed/rotated FP32 copy, quantize-dequantized FP32 copy
    uint16_t *bbuf[2];         // per side: the BF16 operand
    dev_scratch *d_scr;        // per side
    red_out *d_partial;        // RED_BLOCKS per side
    void *mem;                 // the one allocation behind every buffer above
    int64_t step;
    int micro, log_qerr, frozen;
    int fp8_native;            // per-tensor FP8 GEMMs on FP8 tensor cores (cc >= 8.9 and a GEMM that runs them)
    const char *path;
    char err[256];
};

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cuda_fail(qp_cuda_linear *l, int rc, const char *what)
{
    std::snprintf(l->err, sizeof l->err, "%s: %s", what, cudaGetErrorString((cudaError_t)rc));
    return -1;
}

// ---- kernels ------------------------------------------------------------------

__global__ void k_f32_to_bf16(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        // exact: unscaled quantized values are BF16 values (NaN kept a NaN)
        y[i] = isnan(x[i]) ? (uint16_t)0x7FC0u : (uint16_t)(__float_as_uint(x[i]) >> 16);
}

template <typename T> __global__ void k_transpose(const T *src, T *dst, int rows, int cols)
{
    // dst (cols x rows) = src (rows x cols)^T
    __shared__ T tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (r0 + j < rows && c < cols) tile[j][threadIdx.x] = src[(int64_t)(r0 + j) * cols + c];
    __syncthreads();
    const int r = r0 + threadIdx.x, c0 = blockIdx.x * 32;
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
        if (c0 + j < cols && r < rows) dst[(int64_t)(c0 + j) * rows + r] = tile[threadIdx.x][j];
}

__global__ void k_add_bias(float *Y, const float *b, int M, int N)
{
    const int64_t n = (int64_t)M * N;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        Y[i] += b[i % N];
}

// db[n] += sum over rows of dY[:, n], rows in order (as the CPU).
__global__ void k_bias_grad(float *db, const float *dY, int M, int N)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float s = 0.0f;
    for (int m = 0; m < M; m++) s += dY[(int64_t)m * N + n];
    db[n] += s;
}

// The unscaled value of element i of a quantized operand: the FP32 output of
// a quantize-dequantize, or the decoded FP8 code.
struct from_f32 {
    const float *y;
    __device__ float operator()(int64_t i) const { return y[i]; }
};
struct from_fp8 {
    const uint8_t *c;
    int e5m2;
    __device__ float operator()(int64_t i) const
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(c[i], e5m2 ? __NV_E5M2 : __NV_E4M3)));
    }
};

// Partial sums over x (input) and y (unscaled quantized values): ||x||^2,
// ||x - y*scale_inv||^2 over finite x, non-zeros and flushed non-zeros.
template <typename Y>
__global__ void k_qstats_partial(const float *x, Y y, int64_t n, const qp_cuda_tstats *ts, red_out *part)
{
    __shared__ double sxx[RED_THREADS], see[RED_THREADS];
    __shared__ unsigned long long snz[RED_THREADS], sfl[RED_THREADS];
    const float sinv = ts->scale_inv;
    double xx = 0.0, ee = 0.0;
    unsigned long long nz = 0, fl = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float a = x[i];
        if (!isfinite(a)) continue;
        const float q = y(i), m = q * sinv;
        const double e = (double)a - (double)m;
        xx += (double)a * a;
        ee += e * e;
        if (a != 0.0f) {
            nz++;
            if (q == 0.0f) fl++;
        }
    }
    sxx[threadIdx.x] = xx, see[threadIdx.x] = ee, snz[threadIdx.x] = nz, sfl[threadIdx.x] = fl;
    __syncthreads();
    for (int s = RED_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            sxx[threadIdx.x] += sxx[threadIdx.x + s];
            see[threadIdx.x] += see[threadIdx.x + s];
            snz[threadIdx.x] += snz[threadIdx.x + s];
            sfl[threadIdx.x] += sfl[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = {sxx[0], see[0], snz[0], sfl[0]};
}

__global__ void k_qstats_final(const red_out *part, int nparts, red_out *out)
{
    red_out r = {0.0, 0.0, 0, 0};
    for (int i = 0; i < nparts; i++) { // fixed order: deterministic
        r.xx += part[i].xx;
        r.ee += part[i].ee;
        r.n_nonzero += part[i].n_nonzero;
        r.n_flushed += part[i].n_flushed;
    }
    *out = r;
}

static unsigned grid_for(int64_t n)
{
    const int64_t g = (n + 255) / 256;
    return (unsigned)(g < 1 ? 1 : g > 4096 ? 4096 : g);
}

// ---- the dispatch -----------------------------------------------------------------

extern "C" qp_cuda_linear *qp_cuda_linear_create(const qp_linear_cfg *cfg, qp_linear *host, void *stream, char *err,
                                                 size_t errlen)
{
    qp_cuda_linear *l = (qp_cuda_linear *)std::calloc(1, sizeof *l);
    if (!l) {
        std::snprintf(err, errlen, "out of memory for the GPU GEMM dispatch");
        return nullptr;
    }
    l->cfg = *cfg;
    l->host = host;
    l->stream = (cudaStream_t)stream;
    const int L = cfg->n_layers;
    l->plans = (qp_linear_plan *)std::calloc((size_t)L, sizeof *l->plans);
    if (!l->plans) {
        std::snprintf(err, errlen, "out of memory for the GPU GEMM dispatch");
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    int any_bf16 = 0, any_emul = 0;
    for (int layer = 0; layer < L; layer++) {
        l->plans[layer] = qp_recipe_plan(cfg->recipe, layer, L);
        for (int o = 0; o < QP_OPND_COUNT; o++) {
            const qp_fmt f = l->plans[layer].fmt[o];
            if (f == QP_FMT_BF16) any_bf16 = 1;
            else if (f != QP_FMT_FP32) any_emul = 1;
        }
    }
    l->path = any_emul ? "emulated-bf16" : any_bf16 ? "bf16" : "fp32";
    int only_fp8 = any_emul;
    for (int layer = 0; layer < L; layer++)
        for (int o = 0; o < QP_OPND_COUNT; o++) {
            const qp_fmt f = l->plans[layer].fmt[o];
            if (f != QP_FMT_FP32 && f != QP_FMT_BF16 && f != QP_FMT_FP8_E4M3 && f != QP_FMT_FP8_E5M2) only_fp8 = 0;
            if (l->plans[layer].rht_wgrad) only_fp8 = 0;
        }
    const int64_t n = cfg->max_elems > 0 ? cfg->max_elems : 1;
    const size_t f32 = (size_t)n * sizeof(float), b16 = ((size_t)n * 2 + 255) / 256 * 256;
    const size_t bytes = 2 * (2 * f32 + b16) + 2 * sizeof(dev_scratch) + 2 * RED_BLOCKS * sizeof(red_out) + 1024;
    cudaError_t e = cudaMalloc(&l->mem, bytes);
    if (e != cudaSuccess) {
        std::snprintf(err, errlen, "GPU GEMM dispatch: %s", cudaGetErrorString(e));
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    char *p = (char *)l->mem;
    for (int s = 0; s < 2; s++) {
        l->tbuf[s] = (float *)p, p += f32;
        l->ybuf[s] = (float *)p, p += f32;
        l->bbuf[s] = (uint16_t *)p, p += b16;
    }
    p = (char *)(((uintptr_t)p + 255) / 256 * 256);
    l->d_scr = (dev_scratch *)p, p += 2 * sizeof(dev_scratch);
    p = (char *)(((uintptr_t)p + 255) / 256 * 256);
    l->d_partial = (red_out *)p;
    l->blt = qp_cublt_create(stream, err, errlen);
    if (!l->blt) {
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    // QP_CUDA_EMULATE=1 keeps the emulated path on FP8 hardware (for comparisons)
    const char *emu = std::getenv("QP_CUDA_EMULATE");
    l->fp8_native = only_fp8 && !(emu && emu[0] == '1') && qp_cublt_native(l->blt, QP_CUBLT_E4M3) &&
                    qp_cublt_native(l->blt, QP_CUBLT_E5M2);
    if (l->fp8_native) l->path = "fp8-native";
    return l;
}

extern "C" void qp_cuda_linear_destroy(qp_cuda_linear *l)
{
    if (!l) return;
    if (l->blt) qp_cublt_destroy(l->blt);
    if (l->mem) cudaFree(l->mem);
    std::free(l->plans);
    std::free(l);
}

extern "C" void qp_cuda_linear_begin_step(qp_cuda_linear *l, int64_t step, int log_qerr)
{
    l->step = step;
    l->micro = 0;
    l->log_qerr = log_qerr;
    qp_linear_begin_step(l->host, step, log_qerr);
}

extern "C" void qp_cuda_linear_begin_micro(qp_cuda_linear *l, int micro)
{
    l->micro = micro;
    qp_linear_begin_micro(l->host, micro);
}

extern "C" void qp_cuda_linear_set_frozen(qp_cuda_linear *l, int frozen)
{
    l->frozen = frozen;
    qp_linear_set_frozen(l->host, frozen);
}

extern "C" const char *qp_cuda_linear_error(const qp_cuda_linear *l) { return l->err; }
extern "C" const char *qp_cuda_linear_path(const qp_cuda_linear *l) { return l->path; }

namespace {
struct operand {
    qp_cublt_operand op;
    float scale_inv; // per-tensor decode scale, folded into alpha
};
} // namespace

template <typename T> static int transpose(qp_cuda_linear *l, const T *src, T *dst, int src_rows, int src_cols)
{
    const dim3 grid((unsigned)((src_cols + 31) / 32), (unsigned)((src_rows + 31) / 32)), block(32, 8);
    k_transpose<T><<<grid, block, 0, l->stream>>>(src, dst, src_rows, src_cols);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : cuda_fail(l, (int)e, "transpose");
}

// Bring one quantization's statistics to the host (one small copy): the
// scaling state's update, the qerr row, and the decode scale for alpha.
static int finish_stats(qp_cuda_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o,
                        qp_scaling_state *st, int update, int have_red, int64_t n, const dev_scratch *scr,
                        float *scale_inv)
{
    dev_scratch h;
    cudaError_t e = cudaMemcpyAsync(&h, scr, sizeof h, cudaMemcpyDeviceToHost, l->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(l->stream);
    if (e != cudaSuccess) return cuda_fail(l, (int)e, "quantization statistics");
    *scale_inv = h.tstats.scale_inv;
    if (!have_red) return 0;
    qp_qstats qs;
    std::memset(&qs, 0, sizeof qs);
    qs.n = n;
    qs.n_nonfinite = (int64_t)h.tstats.n_nonfinite;
    qs.n_nonzero = (int64_t)h.red.n_nonzero;
    qs.n_sat = (int64_t)h.tstats.n_sat;
    qs.n_flushed = (int64_t)h.red.n_flushed;
    qs.amax = h.tstats.amax;
    qs.scale = h.tstats.scale;
    qs.scale_inv = h.tstats.scale_inv;
    if (update) qp_scaling_update(st, l->step, &qs);
    if (l->log_qerr && l->cfg.on_qerr) {
        const double xx = h.red.xx, ee = h.red.ee;
        const double rel = ee == 0.0 ? 0.0 : (xx == 0.0 ? INFINITY : std::sqrt(ee / xx));
        const double snr = ee == 0.0 ? INFINITY : (xx == 0.0 ? -INFINITY : 10.0 * std::log10(xx / ee));
        const double sat = n ? (double)qs.n_sat / (double)n : 0.0;
        const double zero = qs.n_nonzero ? (double)qs.n_flushed / (double)qs.n_nonzero : 0.0;
        qp_qerr_row row = {l->step, layer, qp_gemm_name(g), qp_operand_name(o), qp_pass_name(pass),
                           rel, snr, sat, zero, qs.amax, qs.scale};
        l->cfg.on_qerr(&row, l->cfg.user);
    }
    return 0;
}

// Quantize one GEMM operand (rows x cols, contraction along cols; src stored
// cols x rows when src_trans) for `pass`: qp_linear.c's prepare() on the GPU.
// The operand handed to the GEMM is always rows x cols, K contiguous.
static int prepare(qp_cuda_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, int side,
                   const float *src, int src_trans, int rows, int cols, int native, operand *out)
{
    if (g == QP_GEMM_HEAD || l->plans[layer].fmt[o] == QP_FMT_FP32) {
        const float *d = src;
        if (src_trans) {
            if (transpose(l, src, l->tbuf[side], cols, rows)) return -1;
            d = l->tbuf[side];
        }
        out->op = {QP_CUBLT_F32, d, nullptr, nullptr};
        out->scale_inv = 1.0f;
        return 0;
    }
    const qp_linear_plan *plan = &l->plans[layer];
    const qp_fmt fmt = plan->fmt[o];
    const qp_format_traits *t = &qp_formats[fmt];
    const int rht = pass == QP_PASS_WGRAD && plan->rht_wgrad;
    const float *in = src;
    int trans = src_trans;
    if (trans && (t->block_cols > 1 || rht)) {
        if (transpose(l, src, l->tbuf[side], cols, rows)) return -1;
        in = l->tbuf[side];
        trans = 0;
    }
    if (rht) {
        if (cols % 16) {
            std::snprintf(l->err, sizeof l->err,
                          "the Hadamard transform needs a contraction of a multiple of 16, not %d (layer %d, %s)",
                          cols, layer, qp_gemm_name(g));
            return -1;
        }
        if (in != l->tbuf[side]) {
            const cudaError_t e = cudaMemcpyAsync(l->tbuf[side], in, (size_t)rows * cols * sizeof(float),
                                                  cudaMemcpyDeviceToDevice, l->stream);
            if (e != cudaSuccess) return cuda_fail(l, (int)e, "RHT copy");
        }
        const int rc = qp_cuda_rht16(l->tbuf[side], rows, cols, mix64(l->cfg.seed ^ 0x52485431ull), l->stream);
        if (rc) return cuda_fail(l, rc, "RHT");
        in = l->tbuf[side];
    }
    qp_qopts opts;
    std::memset(&opts, 0, sizeof opts);
    opts.unscaled = true;
    opts.stochastic = plan->sr[o];
    opts.seed = l->cfg.seed;
    opts.stream = mix64((uint64_t)l->step) ^ mix64(((uint64_t)l->micro << 32) | ((uint64_t)layer << 24) |
                                                   ((uint64_t)g << 16) | ((uint64_t)pass << 8) | (uint64_t)o);
    qp_scaling_state *st = qp_linear_scaling(l->host, layer, g, o);
    const int first_use = (pass == QP_PASS_FPROP && o != QP_OPND_DY) || (pass == QP_PASS_DGRAD && o == QP_OPND_DY);
    const int update = first_use && !l->frozen;
    if (t->tensor_scale) {
        if (first_use) qp_scaling_prepare(st, &opts);
        else if (plan->scaling == QP_SCALING_DELAYED) opts.scale = st->last_scale;
    }
    const int qrows = trans ? cols : rows, qcols = trans ? rows : cols;
    const int64_t n = (int64_t)rows * cols;
    dev_scratch *scr = &l->d_scr[side];
    const int want_stats = update || (l->log_qerr && l->cfg.on_qerr);
    if (native) {
        // FP8 codes in stored order (the CPU's SR words), transposed as bytes when stored transposed;
        // the decode scale stays on the device and reaches the GEMM as a pointer
        uint8_t *codes = trans ? (uint8_t *)l->ybuf[side] : (uint8_t *)l->bbuf[side];
        int rc = qp_cuda_quantize(fmt, in, qrows, qcols, &opts, nullptr, codes, nullptr, &scr->tstats, l->stream);
        if (rc) return cuda_fail(l, rc, "FP8 quantize");
        if (want_stats) {
            k_qstats_partial<<<RED_BLOCKS, RED_THREADS, 0, l->stream>>>(in, from_fp8{codes, fmt == QP_FMT_FP8_E5M2},
                                                                       n, &scr->tstats,
                                                                       l->d_partial + side * RED_BLOCKS);
            k_qstats_final<<<1, 1, 0, l->stream>>>(l->d_partial + side * RED_BLOCKS, RED_BLOCKS, &scr->red);
        }
        if (trans && transpose(l, (const uint8_t *)codes, (uint8_t *)l->bbuf[side], qrows, qcols)) return -1;
        out->op = {fmt == QP_FMT_FP8_E5M2 ? QP_CUBLT_E5M2 : QP_CUBLT_E4M3, l->bbuf[side], &scr->tstats.scale_inv,
                   nullptr};
        out->scale_inv = 1.0f;
        float unused;
        return want_stats ? finish_stats(l, layer, g, pass, o, st, update, 1, n, scr, &unused) : 0;
    }
    // FP32 copy always (statistics, transposition); BF16 straight from the quantizer when no transpose follows
    int rc = qp_cuda_qdq(fmt, in, l->ybuf[side], trans ? nullptr : l->bbuf[side], qrows, qcols, &opts, nullptr,
                         &scr->tstats, l->stream);
    if (rc) return cuda_fail(l, rc, "quantize");
    if (trans) {
        // a per-tensor format quantized in stored order (the SR words of the CPU), then transposed
        if (transpose(l, l->ybuf[side], l->tbuf[side], qrows, qcols)) return -1;
        k_f32_to_bf16<<<grid_for(n), 256, 0, l->stream>>>(l->tbuf[side], l->bbuf[side], n);
    }
    float scale_inv = 1.0f;
    if (t->tensor_scale || want_stats) {
        if (want_stats) {
            k_qstats_partial<<<RED_BLOCKS, RED_THREADS, 0, l->stream>>>(in, from_f32{l->ybuf[side]}, n, &scr->tstats,
                                                                       l->d_partial + side * RED_BLOCKS);
            k_qstats_final<<<1, 1, 0, l->stream>>>(l->d_partial + side * RED_BLOCKS, RED_BLOCKS, &scr->red);
        }
        if (finish_stats(l, layer, g, pass, o, st, update, want_stats, n, scr, &scale_inv)) return -1;
    }
    out->op = {QP_CUBLT_BF16, l->bbuf[side], nullptr, nullptr};
    out->scale_inv = scale_inv;
    return 0;
}

static int run(qp_cuda_linear *l, const operand *a, const operand *b, float *C, int M, int N, int K, int accumulate)
{
    if (qp_cublt_gemm(l->blt, &a->op, &b->op, C, M, N, K, a->scale_inv * b->scale_inv, accumulate ? 1.0f : 0.0f,
                      nullptr, nullptr)) {
        std::snprintf(l->err, sizeof l->err, "%s", qp_cublt_error(l->blt));
        return -1;
    }
    return 0;
}

// 1 when both operands of a GEMM are per-tensor FP8 and the GPU runs FP8 natively.
static int native_pair(const qp_cuda_linear *l, int layer, qp_gemm_id g, qp_operand a, qp_operand b)
{
    if (!l->fp8_native || g == QP_GEMM_HEAD || layer < 0 || layer >= l->cfg.n_layers) return 0;
    const qp_fmt fa = l->plans[layer].fmt[a], fb = l->plans[layer].fmt[b];
    return (fa == QP_FMT_FP8_E4M3 || fa == QP_FMT_FP8_E5M2) && (fb == QP_FMT_FP8_E4M3 || fb == QP_FMT_FP8_E5M2);
}

static int check(qp_cuda_linear *l, int layer, qp_gemm_id g, int M, int IC, int OC)
{
    const int64_t biggest = (int64_t)(M > OC ? M : OC) * (IC > OC ? IC : OC);
    if (g != QP_GEMM_HEAD && (layer < 0 || layer >= l->cfg.n_layers || biggest > l->cfg.max_elems)) {
        std::snprintf(l->err, sizeof l->err, "GEMM %s of layer %d (%dx%dx%d) outside the dispatch's sizes",
                      qp_gemm_name(g), layer, M, IC, OC);
        return -1;
    }
    const int64_t mo = (int64_t)M * OC, oi = (int64_t)OC * IC, mi = (int64_t)M * IC;
    if (g == QP_GEMM_HEAD && (mo > oi ? (mo > mi ? mo : mi) : (oi > mi ? oi : mi)) > l->cfg.max_elems) {
        // the head's transposed operands (wgrad) pass through tbuf too
        std::snprintf(l->err, sizeof l->err, "LM head GEMM (%dx%dx%d) larger than the dispatch's buffers", M, IC, OC);
        return -1;
    }
    return 0;
}

extern "C" int qp_cuda_linear_forward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_Y, const float *d_X,
                                      const float *d_W, const float *d_b, int M, int IC, int OC)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    operand a, w;
    const int nat = native_pair(l, layer, g, QP_OPND_X, QP_OPND_W);
    if (prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_X, 0, d_X, 0, M, IC, nat, &a) ||
        prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_W, 1, d_W, 0, OC, IC, nat, &w) || run(l, &a, &w, d_Y, M, OC, IC, 0))
        return -1;
    if (d_b) k_add_bias<<<grid_for((int64_t)M * OC), 256, 0, l->stream>>>(d_Y, d_b, M, OC);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : cuda_fail(l, (int)e, "linear forward");
}

extern "C" int qp_cuda_linear_backward(qp_cuda_linear *l, int layer, qp_gemm_id g, float *d_dX, float *d_dW,
                                       float *d_db, const float *d_dY, const float *d_X, const float *d_W, int M,
                                       int IC, int OC)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    operand a, b;
    // dgrad: dX[M,IC] += dY[M,OC] (W^T)[IC,OC]^T; W is stored OC x IC
    int nat = native_pair(l, layer, g, QP_OPND_DY, QP_OPND_W);
    if (prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_DY, 0, d_dY, 0, M, OC, nat, &a) ||
        prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_W, 1, d_W, 1, IC, OC, nat, &b) || run(l, &a, &b, d_dX, M, IC, OC, 1))
        return -1;
    // wgrad: dW[OC,IC] += (dY^T)[OC,M] (X^T)[IC,M]^T
    nat = native_pair(l, layer, g, QP_OPND_DY, QP_OPND_X);
    if (prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_DY, 0, d_dY, 1, OC, M, nat, &a) ||
        prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_X, 1, d_X, 1, IC, M, nat, &b) || run(l, &a, &b, d_dW, OC, IC, M, 1))
        return -1;
    if (d_db) k_bias_grad<<<(unsigned)((OC + 127) / 128), 128, 0, l->stream>>>(d_db, d_dY, M, OC);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : cuda_fail(l, (int)e, "linear backward");
}
