// qp_cuda_quant.cu — amax, quantization and fused quantize-dequantize kernels
// (see qp_cuda_quant.h). Every element and block rule is quant/qp_core.h's
// and the work split qp_cuda_qcore.h's, the code tests/kernels/test_qcore.c
// checks against quant/ on the CPU; the kernels only decide who does which
// block, by the format's row:
//   per-tensor formats (fp32, bf16, fp8): one thread per 16 consecutive
//     elements of a row (no row padding in their layout);
//   1D block formats (MX, NVFP4, FP8 1x128): one thread per block;
//   16x16 tiles (nvfp4-2d): sixteen threads per tile, one per tile row, the
//     tile amax reduced across them with warp shuffles;
//   128x128 blocks (fp8-block-2d): a CUDA block of 128 threads per tile.
// Current scaling runs an amax kernel first and each thread derives the tensor
// scale from that device amax itself (qc_make_plan): no host sync anywhere.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "qp_cuda_internal.cuh"
#include "qp_cuda_quant.h"

using namespace qpc;

namespace {

// Max of |x| over finite values, as unsigned bits (order-preserving for non-negative floats).
__global__ void amax_kernel(const float *x, int64_t n, bool vec, unsigned int *out)
{
    unsigned int m = 0;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t t0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t tail = 0;
    if (vec) {
        const int64_t n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (int64_t i = t0; i < n4; i += stride) {
            const float4 q = __ldg(x4 + i);
            const unsigned int a[4] = {__float_as_uint(q.x) & 0x7FFFFFFFu, __float_as_uint(q.y) & 0x7FFFFFFFu,
                                       __float_as_uint(q.z) & 0x7FFFFFFFu, __float_as_uint(q.w) & 0x7FFFFFFFu};
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (a[k] < 0x7F800000u && a[k] > m) m = a[k];
        }
        tail = n4 * 4;
    }
    for (int64_t i = tail + t0; i < n; i += stride) {
        const unsigned int a = __float_as_uint(x[i]) & 0x7FFFFFFFu;
        if (a < 0x7F800000u && a > m) m = a;
    }
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_down_sync(0xFFFFFFFFu, m, off));
    if ((threadIdx.x & 31) == 0 && m) atomicMax(out, m);
}

unsigned int amax_grid(int64_t n)
{
    const int64_t b = (n / 4 + kThreads - 1) / kThreads;
    return (unsigned int)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

// Compile-time rows of the format table (qp_core.h's QP_FORMAT_TABLE), for
// the per-thread array sizes: fmt_c<FMT>::row.
template <int FMT> struct fmt_c;
#define QP_FMT_CONST(id, ...)                                                                                          \
    template <> struct fmt_c<id> {                                                                                     \
        static constexpr qp_format_traits row = {.fmt = id, __VA_ARGS__};                                              \
    };
QP_FORMAT_TABLE(QP_FMT_CONST)
#undef QP_FMT_CONST

// What one quantization kernel needs.
struct QArgs {
    const float *x;
    int rows, cols;
    int64_t n;
    uint8_t *codes;  // NULL for qdq
    int64_t row_bytes;
    uint8_t *scales;
    int64_t scale_rows, scale_cols;
    float *y;        // qdq outputs, either may be NULL
    uint16_t *ybf;
    float given;               // > 0: the host's tensor scale
    const float *d_scale_in;   // not NULL: the device's tensor scale
    int unscaled, sr;
    uint64_t seed, stream;
    int64_t sr_offset, sr_stride;  // qp_qopts' SR index map
    qp_cuda_tstats *st;        // always set: holds the amax of current scaling
    bool amax_done;            // st->amax already holds the tensor amax (current scaling)
    bool vec;                  // all pointers 16-byte aligned
};

__device__ __forceinline__ qp_tplan device_plan(const QArgs &a, const qp_format_traits &f)
{
    float given = a.given;
    if (f.tensor_scale && a.d_scale_in) {
        given = *a.d_scale_in;
        if (!(given > 0.0f)) given = 1.0f;
    }
    const float amax = a.amax_done ? a.st->amax : 0.0f;
    qp_tplan p = qc_make_plan(&f, given, amax, a.unscaled, a.sr, a.seed, a.stream);
    qc_plan_sr_map(&p, a.sr_offset, a.sr_stride);
    return p;
}

// The per-thread arrays below are only indexed inside loops whose bound is a
// compile-time constant (qc_*_pad, npad = the block size; elements i >= m are
// skipped), so they stay in registers, ragged blocks included.

// Which elements, codes and scale a thread owns comes from qc_tensor_job /
// qc_block_job / qc_tile_job, the functions test_qcore's driver walks too.

// Per-tensor formats: one thread per 16 consecutive elements of a row.
template <int FMT>
__global__ void __launch_bounds__(kThreads) tensor_kernel(QArgs a)
{
    constexpr int E = QC_TENSOR_CHUNK, EB = fmt_c<FMT>::row.elem_bits / 8;
    const qp_format_traits f = qp_format(FMT);
    const qp_tplan p = device_plan(a, f);
    qp_ecounts cnt;
    qc_counts_zero(&cnt);
    float amax = 0.0f;
    qc_job j;
    // chunks are 16-aligned only when rows are
    const bool vx = a.vec && (a.cols % QC_TENSOR_CHUNK) == 0;
    if (qc_tensor_job(&f, a.rows, a.cols, blockIdx.x * (int64_t)blockDim.x + threadIdx.x, &j)) {
        const uint64_t g0 = qc_sr_gidx(&p, a.cols, j.row, j.col);
        float v[E], y[E];
        load_block<E>(a.x + j.x_off, j.m, vx, v);
        if (!a.amax_done) {
            int nf;
            qc_block_amax_pad(v, j.m, E, &amax, &nf);
        }
        if (a.codes) {
            uint8_t c[E * EB];
            qc_encode_block(&f, &p, v, j.m, E, nullptr, g0, c, y, &cnt);
            store_bytes<E * EB>(a.codes + j.code_off, j.m * EB, vx, c);
        } else {
            qc_encode_block(&f, &p, v, j.m, E, nullptr, g0, nullptr, y, &cnt);
        }
        if (a.y) store_floats<E>(a.y + j.x_off, j.m, vx, y);
        if (a.ybf) store_bf16<E>(a.ybf + j.x_off, j.m, vx, y);
    }
    add_stats(a.st, cnt, amax, !a.amax_done);
}

// Encode elements [k0, k0 + CH) of a block whose scale is known, from global
// memory, in register chunks of CH: the FP8 block formats' 128-element rows.
template <int CH>
__device__ __forceinline__ void encode_chunks(const QArgs &a, const qp_format_traits &f, const qp_tplan &p,
                                              const qc_job &j, const qp_bscale &bs, int bc, qp_ecounts *cnt)
{
    const bool vx = a.vec && (a.cols % 4) == 0;
    const uint64_t g0 = qc_sr_gidx(&p, a.cols, j.row, j.col);
    for (int k0 = 0; k0 < bc; k0 += CH) { // every chunk: those past j.m store the padding's zero codes
        const int m = j.m - k0 >= CH ? CH : j.m - k0 > 0 ? j.m - k0 : 0;
        float v[CH], y[CH];
        load_block<CH>(a.x + j.x_off + k0, m, vx, v);
        if (a.codes) {
            uint8_t c[CH]; // one byte per element: the FP8 block formats
            qc_encode_block(&f, &p, v, m, CH, &bs, g0 + (uint64_t)k0, c, y, cnt);
            store_bytes<CH>(a.codes + j.code_off + k0, CH, a.vec, c);
        } else {
            qc_encode_block(&f, &p, v, m, CH, &bs, g0 + (uint64_t)k0, nullptr, y, cnt);
        }
        if (a.y) store_floats<CH>(a.y + j.x_off + k0, m, vx, y);
        if (a.ybf) store_bf16<CH>(a.ybf + j.x_off + k0, m, vx && (a.cols % 8) == 0, y);
    }
}

// 1D block formats: one thread per block of a row; blocks of up to 32 in
// registers, the 128-element FP8 blocks read twice (amax, then encode).
template <int FMT>
__global__ void __launch_bounds__(kThreads) block_kernel(QArgs a)
{
    constexpr int BC = fmt_c<FMT>::row.block_cols;
    constexpr int NB = (BC * fmt_c<FMT>::row.elem_bits + 7) / 8;
    const qp_format_traits f = qp_format(FMT);
    const qp_tplan p = device_plan(a, f);
    qp_ecounts cnt;
    qc_counts_zero(&cnt);
    float amax = 0.0f;
    qc_job j;
    if (qc_block_job(&f, a.rows, a.cols, a.row_bytes, a.scale_cols, blockIdx.x * (int64_t)blockDim.x + threadIdx.x,
                     &j)) {
        if constexpr (BC > 32) {
            int nf;
            qc_block_amax_pad(a.x + j.x_off, j.m, BC, &amax, &nf);
            const qp_bscale bs = qc_block_scale(&f, &p, amax, nf, a.x + j.x_off, j.m);
            if (a.codes) qc_store_scale(&f, a.scales, j.scale_idx, &bs);
            encode_chunks<32>(a, f, p, j, bs, BC, &cnt);
        } else {
            const bool vx = a.vec && (a.cols % 4) == 0;
            float v[BC], y[BC];
            load_block<BC>(a.x + j.x_off, j.m, vx, v);
            qp_bscale bs;
            if (a.codes) {
                uint8_t c[NB];
                amax = qc_quantize_block(&f, &p, v, j.m, qc_sr_gidx(&p, a.cols, j.row, j.col), c, &bs, y, &cnt);
                store_bytes<NB>(a.codes + j.code_off, NB, a.vec, c);
                qc_store_scale(&f, a.scales, j.scale_idx, &bs);
            } else {
                amax = qc_quantize_block(&f, &p, v, j.m, qc_sr_gidx(&p, a.cols, j.row, j.col), nullptr, &bs, y,
                                         &cnt);
            }
            if (a.y) store_floats<BC>(a.y + j.x_off, j.m, vx, y);
            if (a.ybf) store_bf16<BC>(a.ybf + j.x_off, j.m, vx && (a.cols % 8) == 0, y);
        }
    }
    add_stats(a.st, cnt, amax, !a.amax_done);
}

// NVFP4-2D: sixteen lanes per 16x16 tile (a half warp), lane = tile row; the
// tile amax is reduced across the half warp with shuffles.
template <int FMT>
__global__ void __launch_bounds__(kThreads) tile16_kernel(QArgs a)
{
    static_assert(fmt_c<FMT>::row.block_rows == 16 && fmt_c<FMT>::row.block_cols == 16, "16x16 tiles");
    const qp_format_traits f = qp_format(FMT);
    const qp_tplan p = device_plan(a, f);
    qc_job j;
    const bool live = qc_tile_job(&f, a.rows, a.cols, a.row_bytes, a.scale_rows, a.scale_cols,
                                  blockIdx.x * (int64_t)blockDim.x + threadIdx.x, &j);
    const bool vx = a.vec && (a.cols % 4) == 0;
    float v[16], y[16];
    float amax = 0.0f;
    if (live) {
        load_block<16>(a.x + j.x_off, j.m, vx, v);
        int nf;
        qc_block_amax_pad(v, j.m, 16, &amax, &nf);
    }
    // the tile amax: max over the half warp (all 32 lanes take part)
    float ta = amax;
    for (int o = 8; o > 0; o >>= 1) ta = fmaxf(ta, __shfl_xor_sync(0xFFFFFFFFu, ta, o, 16));
    qp_ecounts cnt;
    qc_counts_zero(&cnt);
    if (live) {
        const qp_bscale bs = qc_block_scale(&f, &p, ta, 0, nullptr, 0);
        if (a.codes) {
            uint8_t c[8];
            qc_encode_block(&f, &p, v, j.m, 16, &bs, qc_sr_gidx(&p, a.cols, j.row, j.col), c, y, &cnt);
            store_bytes<8>(a.codes + j.code_off, 8, a.vec, c);
            if (j.lane == 0) qc_store_scale(&f, a.scales, j.scale_idx, &bs);
        } else {
            qc_encode_block(&f, &p, v, j.m, 16, &bs, qc_sr_gidx(&p, a.cols, j.row, j.col), nullptr, y, &cnt);
        }
        if (a.y) store_floats<16>(a.y + j.x_off, j.m, vx, y);
        if (a.ybf) store_bf16<16>(a.ybf + j.x_off, j.m, vx && (a.cols % 8) == 0, y);
    }
    add_stats(a.st, cnt, amax, !a.amax_done);
}

// FP8 128x128 blocks: one CUDA block of 128 threads per tile, thread = tile
// row (its 128 elements read twice: amax, then encode); the tile amax is
// reduced through shared memory.
template <int FMT>
__global__ void __launch_bounds__(128) tile128_kernel(QArgs a)
{
    static_assert(fmt_c<FMT>::row.block_rows == 128 && fmt_c<FMT>::row.block_cols == 128, "128x128 blocks");
    __shared__ float wmax[4];
    const qp_format_traits f = qp_format(FMT);
    const qp_tplan p = device_plan(a, f);
    qc_job j;
    const bool live = qc_tile_job(&f, a.rows, a.cols, a.row_bytes, a.scale_rows, a.scale_cols,
                                  blockIdx.x * (int64_t)128 + threadIdx.x, &j);
    float amax = 0.0f;
    if (live) {
        int nf;
        qc_block_amax_pad(a.x + j.x_off, j.m, 128, &amax, &nf);
    }
    const float w = warp_max(amax);
    if ((threadIdx.x & 31) == 0) wmax[threadIdx.x >> 5] = w;
    __syncthreads();
    const float ta = fmaxf(fmaxf(wmax[0], wmax[1]), fmaxf(wmax[2], wmax[3]));
    qp_ecounts cnt;
    qc_counts_zero(&cnt);
    if (live) {
        const qp_bscale bs = qc_block_scale(&f, &p, ta, 0, nullptr, 0);
        if (a.codes && j.lane == 0) qc_store_scale(&f, a.scales, j.scale_idx, &bs);
        encode_chunks<32>(a, f, p, j, bs, 128, &cnt);
    }
    add_stats(a.st, cnt, amax, !a.amax_done);
}

// The tensor scale used, into the stats (one thread).
template <int FMT>
__global__ void finish_kernel(QArgs a)
{
    const qp_format_traits f = qp_format(FMT);
    const qp_tplan p = device_plan(a, f);
    a.st->scale = p.scale;
    a.st->scale_inv = p.scale_inv;
}

template <int FMT>
int launch_fmt(QArgs a, bool want_stats, cudaStream_t s)
{
    constexpr qp_format_traits f = fmt_c<FMT>::row;
    if (a.n > 0) {
        if constexpr (f.block_cols == 1)
            tensor_kernel<FMT><<<grid_for(qc_tensor_jobs(a.rows, a.cols)), kThreads, 0, s>>>(a);
        else if constexpr (f.block_rows == 1)
            block_kernel<FMT><<<grid_for((int64_t)a.rows * a.scale_cols), kThreads, 0, s>>>(a);
        else if constexpr (f.block_rows == 16)
            tile16_kernel<FMT><<<grid_for(a.scale_rows * a.scale_cols * 16), kThreads, 0, s>>>(a);
        else
            tile128_kernel<FMT><<<(unsigned)(a.scale_rows * a.scale_cols), 128, 0, s>>>(a);
    }
    if (want_stats) finish_kernel<FMT><<<1, 1, 0, s>>>(a);
    return last_error();
}

int run(qp_fmt fmt, const float *d_x, int rows, int cols, const qp_qopts *opts, const float *d_scale_in,
        uint8_t *d_codes, uint8_t *d_scales, float *d_y, uint16_t *d_ybf, qp_cuda_tstats *d_stats, void *stream)
{
    if (!qp_fmt_valid(fmt) || rows < 0 || cols < 0) return (int)cudaErrorInvalidValue;
    const qp_format_traits f = qp_format(fmt);
    if (d_codes && f.scale_bytes && !d_scales) return (int)cudaErrorInvalidValue;
    // TE's Four Over Six on 16x16 tiles chooses from all sixteen rows' errors
    // (quant/'s te_tile_scales); the tile kernel's threads see one row each
    if (qp_rule_is_4o6_te(f.rule) && f.block_rows > 1) return (int)cudaErrorNotSupported;
    // a row-scaled format (nvfp4-row) needs each row's amax before its blocks;
    // the kernels take one tensor scale: quant/ on the host runs it
    if (f.row_scaled) return (int)cudaErrorNotSupported;
    static const qp_qopts defaults = {};
    if (!opts) opts = &defaults;
    cudaStream_t s = (cudaStream_t)stream;
    QArgs a = {};
    a.x = d_x;
    a.rows = rows;
    a.cols = cols;
    a.n = (int64_t)rows * cols;
    a.codes = d_codes;
    a.row_bytes = qp_row_bytes(fmt, cols);
    a.scales = d_scales;
    int64_t sr = 0, sc = 0;
    qp_scale_shape(fmt, rows, cols, &sr, &sc);
    a.scale_rows = sr;
    a.scale_cols = sc;
    a.y = d_y;
    a.ybf = d_ybf;
    a.given = opts->scale;
    a.d_scale_in = d_scale_in;
    a.unscaled = opts->unscaled;
    a.sr = opts->stochastic;
    a.seed = opts->seed;
    a.stream = opts->stream;
    a.sr_offset = opts->sr_offset;
    a.sr_stride = opts->sr_row_stride;
    a.vec = aligned16(d_x) && aligned16(d_codes) && aligned16(d_y) && aligned16(d_ybf);

    qp_cuda_tstats *st = d_stats;
    cudaError_t e;
    if (!st) {
        e = cudaMallocAsync(reinterpret_cast<void **>(&st), sizeof *st, s);
        if (e != cudaSuccess) return (int)e;
    }
    a.st = st;
    e = cudaMemsetAsync(st, 0, sizeof *st, s);
    if (e != cudaSuccess) {
        if (!d_stats) cudaFreeAsync(st, s);  // the temporary stats buffer is not leaked
        return (int)e;
    }
    const bool current = f.tensor_scale && !d_scale_in && !(opts->scale > 0.0f);
    if (current && a.n > 0) {
        amax_kernel<<<amax_grid(a.n), kThreads, 0, s>>>(d_x, a.n, aligned16(d_x),
                                                         reinterpret_cast<unsigned int *>(&st->amax));
        a.amax_done = true;
    }
    // one case per row of the format table, generated from it: a new format
    // gets its kernels without an edit here
    int rc = (int)cudaErrorInvalidValue;
#define QP_LAUNCH_CASE(id, ...)                                                                                        \
    case id: rc = launch_fmt<id>(a, d_stats != nullptr, s); break;
    switch (fmt) {
        QP_FORMAT_TABLE(QP_LAUNCH_CASE)
    case QP_FMT_COUNT: break;
    }
#undef QP_LAUNCH_CASE
    if (!d_stats) {
        e = cudaFreeAsync(st, s);
        if (!rc && e != cudaSuccess) rc = (int)e;
    }
    return rc;
}

// The first FP8 test's cast (kept as it was).
__global__ void cast_fp8_kernel(const float *x, int64_t n, float s, int e5m2, uint8_t *codes)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        codes[i] = __nv_cvt_float_to_fp8(x[i] * s, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
}

}  // namespace

extern "C" int qp_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

// "cudaErrorXxx (description)": the name says which error even when the
// description is generic (a driver/runtime mismatch, an illegal address).
extern "C" const char *qp_cuda_error_string(int rc)
{
    static thread_local char buf[256];
    if (!rc) return "no error";
    std::snprintf(buf, sizeof buf, "%s (%s)", cudaGetErrorName((cudaError_t)rc), cudaGetErrorString((cudaError_t)rc));
    return buf;
}

extern "C" int qp_cuda_amax(const float *d_x, int64_t n, float *d_amax, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    const cudaError_t e = cudaMemsetAsync(d_amax, 0, sizeof(float), s);
    if (e != cudaSuccess) return (int)e;
    if (n > 0)
        amax_kernel<<<amax_grid(n), kThreads, 0, s>>>(d_x, n, aligned16(d_x), reinterpret_cast<unsigned int *>(d_amax));
    return last_error();
}

extern "C" int qp_cuda_quantize(qp_fmt fmt, const float *d_x, int rows, int cols, const qp_qopts *opts,
                                const float *d_tensor_scale_in, uint8_t *d_codes, uint8_t *d_scales,
                                qp_cuda_tstats *d_stats, void *stream)
{
    if (!d_codes) return (int)cudaErrorInvalidValue;
    qp_qopts o = opts ? *opts : qp_qopts{};
    o.unscaled = false;
    return run(fmt, d_x, rows, cols, &o, d_tensor_scale_in, d_codes, d_scales, nullptr, nullptr, d_stats, stream);
}

extern "C" int qp_cuda_qdq(qp_fmt fmt, const float *d_x, float *d_y, uint16_t *d_y_bf16, int rows, int cols,
                           const qp_qopts *opts, const float *d_tensor_scale_in, qp_cuda_tstats *d_stats,
                           void *stream)
{
    return run(fmt, d_x, rows, cols, opts, d_tensor_scale_in, nullptr, nullptr, d_y, d_y_bf16, d_stats, stream);
}

extern "C" int qp_cuda_quantize_fp8(const float *d_x, int64_t n, int e5m2, uint8_t *d_codes, float *scale_inv)
{
    unsigned int *d_amax = nullptr;
    cudaError_t err = cudaMalloc(&d_amax, sizeof(unsigned int));
    if (err != cudaSuccess) return (int)err;
    cudaMemset(d_amax, 0, sizeof(unsigned int));
    const int threads = 256, blocks = 1024;
    amax_kernel<<<blocks, threads>>>(d_x, n, aligned16(d_x), d_amax);
    unsigned int bits = 0;
    err = cudaMemcpy(&bits, d_amax, sizeof bits, cudaMemcpyDeviceToHost);
    cudaFree(d_amax);
    if (err != cudaSuccess) return (int)err;
    float amax;
    std::memcpy(&amax, &bits, sizeof amax);
    const float s = qp_scale_rule_from_amax(e5m2 ? QP_E5M2_MAX : QP_E4M3_MAX, amax, 0);
    cast_fp8_kernel<<<blocks, threads>>>(d_x, n, s, e5m2, d_codes);
    err = cudaDeviceSynchronize();
    *scale_inv = 1.0f / s;
    return (int)err;
}
