// qp_cuda_linear.cu — the GPU's operations of the precision dispatch (see
// qp_cuda_linear.h): the device primitives (kernel launches, the quantizer,
// the GEMM) that qp_cuda_linear_ops.h builds the dispatch's operations from;
// the dispatch itself is train/precision/qp_linear.c, the code the CPU runs. Reductions
// have one owner per output and a fixed order (no float atomics); statistics
// stay on the device until the dispatch flushes.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "qp_cublaslt.h"
#include "qp_cuda_linear.h"
#include "qp_cuda_linear_ops.h"
#include "qp_model_math.h"
#include "qp_cuda_quant.h"
#include "qp_scale_layout.h"

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
    float amax; // data parallelism: this rank's amax of an operand
};

} // namespace

struct qp_cuda_linear {
    qpl_device dev;            // the dispatch's operations (qp_cuda_linear_ops.h) over the primitives below
    qp_cublt *blt;
    cudaStream_t stream;
    dev_scratch *d_scr;        // per side
    red_out *d_partial;        // RED_BLOCKS per side
    dev_scratch *d_kept;       // max_kept kept statistics (op_keep)
    dev_scratch *h_kept;       // pinned: where a fetch copies them
    int max_kept;
    void *mem;                 // the one allocation behind every buffer
    uint8_t *d_plain[2], *d_tiled[2]; // per side: block scales, plain and tiled (grown on demand)
    size_t plain_cap[2], tiled_cap[2];
    uint8_t *d_colsum;         // bias-gradient chunk sums (grown on demand)
    size_t colsum_cap;
    qp_cuda_prof *prof;        // phase marks, or NULL
    char err[256];             // the last primitive's failure
};

static int cuda_fail(qp_cuda_linear *l, int rc, const char *what)
{
    std::snprintf(l->err, sizeof l->err, "%s: %s (%s)", what, cudaGetErrorName((cudaError_t)rc),
                  cudaGetErrorString((cudaError_t)rc));
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
    // dst (cols x rows) = src (rows x cols)^T. Row tiles loop over gridDim.y
    // (at most 65535), so any row count works (src_rows > 2M, e.g. B*T tokens).
    __shared__ T tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x, c0 = blockIdx.x * 32;
    for (int64_t r0 = (int64_t)blockIdx.y * 32; r0 < rows; r0 += (int64_t)gridDim.y * 32) {
        for (int j = threadIdx.y; j < 32; j += blockDim.y)
            if (r0 + j < rows && c < cols) tile[j][threadIdx.x] = src[(r0 + j) * cols + c];
        __syncthreads();
        const int64_t r = r0 + threadIdx.x;
        for (int j = threadIdx.y; j < 32; j += blockDim.y)
            if (c0 + j < cols && r < rows) dst[(int64_t)(c0 + j) * rows + r] = tile[threadIdx.x][j];
        __syncthreads(); // the tile is reloaded by the next row tile
    }
}

__global__ void k_add_bias(float *Y, const float *b, int M, int N)
{
    const int64_t n = (int64_t)M * N;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        Y[i] += b[i % N];
}

// db[n] += column sum of dY (M x N) in qp_model_math.h's chunk order:
// chunk sums of QPM_SUM_ROWS rows over the whole GPU, then each column's in order.
__global__ void k_bias_grad_chunks(float *part, const float *dY, int M, int N)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    for (int k = blockIdx.y; k < qpm_sum_chunks(M); k += gridDim.y) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < M ? i0 + QPM_SUM_ROWS : M;
        part[(int64_t)k * N + n] = qpm_colsum_chunk(dY, i0, i1, N, n);
    }
}

__global__ void k_bias_grad_combine(float *db, const float *part, int nchunks, int N)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) qpm_colsum_combine(db, part, nchunks, N, n);
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

// ---- the device primitives of qp_cuda_linear_ops.h ---------------------------------

#define L_ ((qp_cuda_linear *)x)
#define PH_(ph) qp_cuda_prof_mark(L_->prof, ph)

static int launched(void *x, const char *what)
{
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : cuda_fail(L_, (int)e, what);
}

template <typename T> static int transpose_t(void *x, const T *src, T *dst, int src_rows, int src_cols)
{
    PH_(QP_PHASE_QUANT);
    // gridDim.y is limited to 65535: the kernel loops over further row tiles
    const int64_t ty = ((int64_t)src_rows + 31) / 32;
    const dim3 grid((unsigned)((src_cols + 31) / 32), (unsigned)(ty < 1 ? 1 : ty > 65535 ? 65535 : ty)), block(32, 8);
    k_transpose<T><<<grid, block, 0, L_->stream>>>(src, dst, src_rows, src_cols);
    return launched(x, "transpose");
}
static int op_transpose(void *x, const float *src, float *dst, int r, int c) { return transpose_t(x, src, dst, r, c); }
static int op_transpose_u8(void *x, const uint8_t *src, uint8_t *dst, int r, int c)
{
    return transpose_t(x, src, dst, r, c);
}

static int op_copy(void *x, float *dst, const float *src, int64_t n)
{
    PH_(QP_PHASE_QUANT);
    const cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, L_->stream);
    return e == cudaSuccess ? 0 : cuda_fail(L_, (int)e, "copy");
}

static const char *op_error(void *x) { return L_->err; }

static int op_rht(void *x, float *d, int rows, int cols, int n, uint64_t seed)
{
    PH_(QP_PHASE_QUANT);
    const int rc = qp_cuda_rht(d, rows, cols, n, seed, L_->stream);
    return rc ? cuda_fail(L_, rc, "RHT") : 0;
}

static int op_rht_te(void *x, float *d, int rows, int cols)
{
    PH_(QP_PHASE_QUANT);
    const int rc = qp_cuda_rht16_te(d, rows, cols, L_->stream);
    return rc ? cuda_fail(L_, rc, "Transformer Engine RHT") : 0;
}

static int op_qdq(void *x, qp_fmt fmt, const float *in, float *y, uint16_t *y_bf16, int rows, int cols,
                  const qp_qopts *o, int side)
{
    PH_(QP_PHASE_QUANT);
    const int rc = qp_cuda_qdq(fmt, in, y, y_bf16, rows, cols, o, nullptr, &L_->d_scr[side].tstats, L_->stream);
    return rc ? cuda_fail(L_, rc, "quantize") : 0;
}

// Device buffer *p of at least `need` bytes (the stream is drained before a
// buffer in use is replaced; shapes repeat, so this happens in the first step).
static int grow(qp_cuda_linear *l, uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    cudaError_t e = cudaStreamSynchronize(l->stream);
    if (e == cudaSuccess && *p) e = cudaFree(*p);
    *p = nullptr;
    *cap = 0;
    if (e == cudaSuccess) e = cudaMalloc((void **)p, need);
    if (e != cudaSuccess) return cuda_fail(l, (int)e, "block-scale buffer");
    *cap = need;
    return 0;
}

static int op_quantize(void *x, qp_fmt fmt, const float *in, int rows, int cols, const qp_qopts *o, uint8_t *codes,
                       int side)
{
    qp_cuda_linear *l = L_;
    PH_(QP_PHASE_QUANT);
    const qp_format_traits *t = &qp_formats[fmt];
    uint8_t *plain = nullptr;
    int64_t sr = 0, sc = 0;
    if (t->block_cols > 1) {
        qp_scale_shape(fmt, rows, cols, &sr, &sc);
        if (grow(l, &l->d_plain[side], &l->plain_cap[side], (size_t)(sr * sc) + 1) ||
            grow(l, &l->d_tiled[side], &l->tiled_cap[side], (size_t)qp_scale_tiled_size(rows, sc) + 1))
            return -1;
        plain = l->d_plain[side];
    }
    int rc = qp_cuda_quantize(fmt, in, rows, cols, o, nullptr, codes, plain, &l->d_scr[side].tstats, l->stream);
    // cuBLASLt's tiled layout, one scale row per operand row (16x16 tiles expanded)
    if (!rc && plain) rc = qp_cuda_scale_swizzle(plain, rows, sc, t->block_rows, l->d_tiled[side], l->stream);
    return rc ? cuda_fail(l, rc, "quantize") : 0;
}

static const uint8_t *op_block_scales_ptr(void *x, int side) { return L_->d_tiled[side]; }

static int op_amax(void *x, const float *in, int64_t n, float *out)
{
    qp_cuda_linear *l = L_;
    PH_(QP_PHASE_QUANT);
    int rc = qp_cuda_amax(in, n, &l->d_scr[0].amax, l->stream);
    cudaError_t e = cudaSuccess;
    if (!rc) e = cudaMemcpyAsync(out, &l->d_scr[0].amax, sizeof *out, cudaMemcpyDeviceToHost, l->stream);
    if (!rc && e == cudaSuccess) e = cudaStreamSynchronize(l->stream);
    if (!rc && e != cudaSuccess) rc = (int)e;
    return rc ? cuda_fail(l, rc, "amax") : 0;
}

static int op_to_bf16(void *x, const float *in, uint16_t *y, int64_t n)
{
    PH_(QP_PHASE_QUANT);
    k_f32_to_bf16<<<grid_for(n), 256, 0, L_->stream>>>(in, y, n);
    return launched(x, "BF16 conversion");
}

static int op_reduce(void *x, const float *in, const float *y, const uint8_t *codes, int e5m2, int64_t n, int side)
{
    qp_cuda_linear *l = L_;
    PH_(QP_PHASE_QUANT);
    red_out *part = l->d_partial + side * RED_BLOCKS;
    const qp_cuda_tstats *ts = &l->d_scr[side].tstats;
    if (codes)
        k_qstats_partial<<<RED_BLOCKS, RED_THREADS, 0, l->stream>>>(in, from_fp8{codes, e5m2}, n, ts, part);
    else
        k_qstats_partial<<<RED_BLOCKS, RED_THREADS, 0, l->stream>>>(in, from_f32{y}, n, ts, part);
    k_qstats_final<<<1, 1, 0, l->stream>>>(part, RED_BLOCKS, &l->d_scr[side].red);
    return launched(x, "quantization statistics");
}

static int op_keep(void *x, int side, int slot)
{
    qp_cuda_linear *l = L_;
    if (slot < 0 || slot >= l->max_kept) {
        std::snprintf(l->err, sizeof l->err, "kept statistics slot %d of %d", slot, l->max_kept);
        return -1;
    }
    const cudaError_t e = cudaMemcpyAsync(&l->d_kept[slot], &l->d_scr[side], sizeof(dev_scratch),
                                          cudaMemcpyDeviceToDevice, l->stream);
    return e == cudaSuccess ? 0 : cuda_fail(l, (int)e, "quantization statistics");
}

static int op_fetch_kept(void *x, int n, qpl_stats *out)
{
    qp_cuda_linear *l = L_;
    if (n > l->max_kept) {
        std::snprintf(l->err, sizeof l->err, "%d kept statistics of %d", n, l->max_kept);
        return -1;
    }
    cudaError_t e = cudaMemcpyAsync(l->h_kept, l->d_kept, (size_t)n * sizeof(dev_scratch), cudaMemcpyDeviceToHost,
                                    l->stream);
    PH_(QP_PH_HOST);
    if (e == cudaSuccess) e = cudaStreamSynchronize(l->stream);
    if (e != cudaSuccess) return cuda_fail(l, (int)e, "quantization statistics");
    for (int i = 0; i < n; i++) {
        const dev_scratch &h = l->h_kept[i];
        qpl_stats *o = &out[i];
        o->amax = h.tstats.amax, o->scale = h.tstats.scale, o->scale_inv = h.tstats.scale_inv;
        o->n_nonfinite = h.tstats.n_nonfinite, o->n_sat = h.tstats.n_sat;
        o->n_nonzero = h.red.n_nonzero, o->n_flushed = h.red.n_flushed;
        o->xx = h.red.xx, o->ee = h.red.ee;
    }
    return 0;
}

static const float *op_scale_inv_ptr(void *x, int side) { return &L_->d_scr[side].tstats.scale_inv; }

// The dispatch's operand as cuBLASLt's.
static int to_cublt(const qp_linear_operand *o, qp_cublt_operand *c)
{
    qp_cublt_type t = QP_CUBLT_F32;
    switch (o->type) {
    case QP_LOP_F32: t = QP_CUBLT_F32; break;
    case QP_LOP_BF16: t = QP_CUBLT_BF16; break;
    case QP_LOP_E4M3: t = QP_CUBLT_E4M3; break;
    case QP_LOP_E5M2: t = QP_CUBLT_E5M2; break;
    case QP_LOP_MXFP8: t = QP_CUBLT_MXFP8; break;
    case QP_LOP_NVFP4: t = QP_CUBLT_NVFP4; break;
    case QP_LOP_F32_BF16: // the CPU's form; the GPU's operands never are
    case QP_LOP_COUNT: return -1;
    }
    if (o->kscale) return -1; // the CPU's K-chunked form; the GPU runs those in FP32
    // emulated: only names cuBLASLt's path (not asked for here)
    *c = qp_cublt_operand{t, o->data, o->scale_inv_ptr, o->block_scales, 0};
    return 0;
}

static int op_gemm(void *x, const qp_linear_operand *A, const qp_linear_operand *B, float *D, int M, int N, int K,
                   float alpha, float beta)
{
    PH_(QP_PHASE_GEMM);
    qp_cublt_operand a, b;
    if (to_cublt(A, &a) || to_cublt(B, &b)) {
        std::snprintf(L_->err, sizeof L_->err, "GEMM operand of type %d x %d", (int)A->type, (int)B->type);
        return -1;
    }
    if (!qp_cublt_gemm(L_->blt, &a, &b, D, M, N, K, alpha, beta, nullptr, nullptr)) return 0;
    std::snprintf(L_->err, sizeof L_->err, "%s", qp_cublt_error(L_->blt));
    return -1;
}

static int op_bias_add(void *x, float *Y, const float *b, int M, int N)
{
    PH_(QP_PHASE_ROWOPS);
    k_add_bias<<<grid_for((int64_t)M * N), 256, 0, L_->stream>>>(Y, b, M, N);
    return launched(x, "bias");
}

static int op_bias_grad(void *x, float *db, const float *dY, int M, int N)
{
    qp_cuda_linear *l = L_;
    PH_(QP_PHASE_ROWOPS);
    const int nchunks = qpm_sum_chunks(M);
    if (grow(l, &l->d_colsum, &l->colsum_cap, (size_t)nchunks * N * sizeof(float))) return -1;
    float *part = (float *)l->d_colsum;
    const dim3 grid((unsigned)((N + 127) / 128), (unsigned)(nchunks < 65535 ? nchunks : 65535));
    k_bias_grad_chunks<<<grid, 128, 0, l->stream>>>(part, dY, M, N);
    k_bias_grad_combine<<<(unsigned)((N + 127) / 128), 128, 0, l->stream>>>(db, part, nchunks, N);
    return launched(x, "bias gradient");
}
#undef PH_
#undef L_

// ---- the dispatch's operations -------------------------------------------------------

extern "C" qp_cuda_linear *qp_cuda_linear_create(int64_t max_elems, int max_kept, const qp_linear_gemm_set *gemms,
                                                 void *stream, char *err, size_t errlen)
{
    qp_cuda_linear *l = (qp_cuda_linear *)std::calloc(1, sizeof *l);
    if (!l) {
        std::snprintf(err, errlen, "out of memory for the GPU GEMM dispatch");
        return nullptr;
    }
    l->stream = (cudaStream_t)stream;
    l->max_kept = max_kept > 0 ? max_kept : 1;
    const int64_t n = max_elems > 0 ? max_elems : 1;
    // every sub-buffer 256-byte aligned (cuBLASLt's default operand alignment; vector loads)
    const size_t f32 = ((size_t)n * sizeof(float) + 255) / 256 * 256, b16 = ((size_t)n * 2 + 255) / 256 * 256;
    const size_t kept = (size_t)l->max_kept * sizeof(dev_scratch);
    const size_t bytes = 2 * (2 * f32 + b16) + 2 * sizeof(dev_scratch) + 2 * RED_BLOCKS * sizeof(red_out) + kept + 1024;
    cudaError_t e = cudaMalloc(&l->mem, bytes);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&l->h_kept, kept);
    if (e != cudaSuccess) {
        std::snprintf(err, errlen, "GPU GEMM dispatch: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    float *tbuf[2], *ybuf[2];
    uint16_t *bbuf[2];
    char *p = (char *)l->mem;
    for (int s = 0; s < 2; s++) {
        tbuf[s] = (float *)p, p += f32;
        ybuf[s] = (float *)p, p += f32;
        bbuf[s] = (uint16_t *)p, p += b16;
    }
    p = (char *)(((uintptr_t)p + 255) / 256 * 256);
    l->d_scr = (dev_scratch *)p, p += 2 * sizeof(dev_scratch);
    p = (char *)(((uintptr_t)p + 255) / 256 * 256);
    l->d_partial = (red_out *)p, p += 2 * RED_BLOCKS * sizeof(red_out);
    p = (char *)(((uintptr_t)p + 255) / 256 * 256);
    l->d_kept = (dev_scratch *)p;
    l->blt = qp_cublt_create(stream, err, errlen);
    if (!l->blt) {
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    qpl_prims pr;
    std::memset(&pr, 0, sizeof pr);
    pr.ctx = l;
    pr.error = op_error;
    pr.transpose = op_transpose, pr.transpose_u8 = op_transpose_u8, pr.copy = op_copy, pr.rht = op_rht,
    pr.rht_te = op_rht_te;
    pr.qdq = op_qdq, pr.quantize = op_quantize, pr.to_bf16 = op_to_bf16, pr.reduce = op_reduce;
    pr.keep = op_keep, pr.fetch_kept = op_fetch_kept, pr.scale_inv_ptr = op_scale_inv_ptr;
    pr.block_scales_ptr = op_block_scales_ptr;
    pr.amax = op_amax, pr.gemm = op_gemm, pr.bias_add = op_bias_add, pr.bias_grad = op_bias_grad;
    if (qpl_device_init(&l->dev, &pr, tbuf, ybuf, bbuf, n, l->max_kept)) {
        std::snprintf(err, errlen, "out of memory for the GPU GEMM dispatch");
        qp_cuda_linear_destroy(l);
        return nullptr;
    }
    // QP_CUDA_EMULATE=1 keeps the emulated path on FP8/FP4 hardware (for comparisons)
    const char *emu = std::getenv("QP_CUDA_EMULATE");
    qpl_set_device(&l->dev, gemms, qp_cublt_cc(l->blt), emu && emu[0] == '1');
    return l;
}

extern "C" void qp_cuda_linear_destroy(qp_cuda_linear *l)
{
    if (!l) return;
    if (l->stream) cudaStreamSynchronize(l->stream);
    if (l->blt) qp_cublt_destroy(l->blt);
    if (l->mem) cudaFree(l->mem);
    if (l->h_kept) cudaFreeHost(l->h_kept);
    for (int s = 0; s < 2; s++) {
        if (l->d_plain[s]) cudaFree(l->d_plain[s]);
        if (l->d_tiled[s]) cudaFree(l->d_tiled[s]);
    }
    if (l->d_colsum) cudaFree(l->d_colsum);
    qpl_device_free(&l->dev);
    std::free(l);
}

extern "C" const qp_linear_ops *qp_cuda_linear_ops(qp_cuda_linear *l) { return &l->dev.ops; }
extern "C" const char *qp_cuda_linear_path(const qp_cuda_linear *l) { return l->dev.path; }
extern "C" void qp_cuda_linear_set_profiler(qp_cuda_linear *l, qp_cuda_prof *p) { l->prof = p; }
