// qp_cuda_llama.cu — the Llama's layer kernels (see qp_cuda_llama.h). Row
// kernels take a thread per row, element-wise ones a thread per element, the
// column sums a thread per (chunk, channel) then one per channel, as the
// GPT's (qp_cuda_model.cu); every one computes a qp_model_math.h formula.
#include <cuda_runtime.h>

#include "qp_cuda_llama.h"
#include "qp_model_math.h"

namespace {
constexpr int NT = 256;    // threads per block
constexpr int ROW_NT = 32; // a thread per row: small blocks over every multiprocessor
} // namespace

static unsigned blocks_for(int64_t n)
{
    const int64_t g = (n + NT - 1) / NT;
    return (unsigned)(g < 1 ? 1 : g > 2147483647 ? 2147483647 : g);
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void k_embed_fwd(float *out, const int32_t *inp, const float *wte, int BT, int C)
{
    GRID_STRIDE(i, (int64_t)BT * C) out[i] = wte[(int64_t)inp[i / C] * C + i % C];
}

__global__ void k_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) qpm_rmsnorm_fwd_row(out + (int64_t)i * C, rstd + i, inp + (int64_t)i * C, w, C);
}

__global__ void k_rmsnorm_bwd_rows(float *dinp, const float *dout, const float *inp, const float *w, const float *rstd,
                                   int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) qpm_rmsnorm_bwd_row(dinp + (int64_t)i * C, dout + (int64_t)i * C, inp + (int64_t)i * C, w, rstd[i], C);
}

// the gain gradient, first level: chunk k (blockIdx.y, striding by gridDim.y), a thread per channel
__global__ void k_rmsnorm_bwd_chunks(float *part, const float *dout, const float *inp, const float *rstd, int N, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int k = blockIdx.y; k < qpm_sum_chunks(N); k += gridDim.y) {
        const int i0 = k * QPM_SUM_ROWS, i1 = i0 + QPM_SUM_ROWS < N ? i0 + QPM_SUM_ROWS : N;
        part[(int64_t)k * C + c] = qpm_rmsnorm_bwd_chunk(dout, inp, rstd, i0, i1, C, c);
    }
}

__global__ void k_rmsnorm_bwd_combine(float *dw, const float *part, int nchunks, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) qpm_rmsnorm_bwd_combine(dw, part, nchunks, C, c);
}

__global__ void k_rope(float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse)
{
    const int hs = C / NH, half = hs / 2, pairs = (NH + KVH) * half;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    GRID_STRIDE(e, (int64_t)N * pairs)
    {
        const int64_t i = e / pairs, t = i % T;
        int64_t i1, i2;
        int f;
        qpm_rope_pair_at((int)(e % pairs), NH, hs, C, &i1, &i2, &f);
        qpm_rope_pair(qkv + i * rs + i1, qkv + i * rs + i2, tab[t * half + f], tab[(int64_t)maxT * half + t * half + f],
                      inverse);
    }
}

__global__ void k_gqa_expand(float *wide, const float *narrow, int N, int C, int NH, int KVH)
{
    const int hs = C / NH;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    GRID_STRIDE(e, (int64_t)N * 3 * C)
    {
        const int64_t i = e / (3 * (int64_t)C), j = e % (3 * (int64_t)C);
        wide[e] = qpm_gqa_expand(narrow + i * rs, j, C, NH, KVH, hs);
    }
}

__global__ void k_gqa_reduce(float *narrow, const float *wide, int N, int C, int NH, int KVH)
{
    const int hs = C / NH;
    const int64_t rs = C + 2 * (int64_t)KVH * hs;
    GRID_STRIDE(e, (int64_t)N * rs)
    {
        const int64_t i = e / rs, j = e % rs;
        narrow[e] = qpm_gqa_reduce(wide + i * 3 * C, j, C, NH, KVH, hs);
    }
}

__global__ void k_swiglu_fwd(float *h, const float *a, const float *u, int64_t n)
{
    GRID_STRIDE(i, n) h[i] = qpm_swiglu_fwd(a[i], u[i]);
}

__global__ void k_swiglu_bwd(float *da, float *du, const float *a, const float *u, const float *dh, int64_t n)
{
    GRID_STRIDE(i, n) qpm_swiglu_bwd(da + i, du + i, a[i], u[i], dh[i]);
}

__global__ void k_col_amax(float *s, const float *h, int N, int H)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < H) s[j] = qpm_col_amax(h, N, H, j);
}

__global__ void k_smooth_scale(float *s, int H)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < H) s[j] = qpm_smooth_scale(s[j]);
}

__global__ void k_smooth_apply(float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C, int H)
{
    const int64_t nx = (int64_t)N * H;
    GRID_STRIDE(e, nx + (int64_t)C * H)
    {
        if (e < nx) xs[e] = h[e] * s[e % H];
        else ws[e - nx] = w[e - nx] / s[(e - nx) % H];
    }
}

__global__ void k_smooth_unfold(float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N, int C,
                                int H)
{
    const int64_t nx = (int64_t)N * H;
    GRID_STRIDE(e, nx + (int64_t)C * H)
    {
        if (e < nx) dh[e] += dxs[e] * s[e % H];
        else dw[e - nx] += dws[e - nx] / s[(e - nx) % H];
    }
}

__global__ void k_outlier_columns(qp_outlier_col *cols, const float *X, int64_t M, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < C) qp_outlier_column(&cols[c], X, M, C, c);
}

// ---- launches ------------------------------------------------------------------

#define S_ ((cudaStream_t)stream)
#define DONE return (int)cudaGetLastError()

extern "C" int qp_cuda_embed_forward(float *out, const int32_t *inp, const float *wte, int BT, int C, void *stream)
{
    k_embed_fwd<<<blocks_for((int64_t)BT * C), NT, 0, S_>>>(out, inp, wte, BT, C);
    DONE;
}

extern "C" int qp_cuda_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                                       void *stream)
{
    k_rmsnorm_fwd<<<(unsigned)((N + ROW_NT - 1) / ROW_NT), ROW_NT, 0, S_>>>(out, rstd, inp, w, N, C);
    DONE;
}

extern "C" int qp_cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                                        const float *rstd, int N, int C, float *d_part, void *stream)
{
    const int nchunks = qpm_sum_chunks(N);
    k_rmsnorm_bwd_rows<<<(unsigned)((N + ROW_NT - 1) / ROW_NT), ROW_NT, 0, S_>>>(dinp, dout, inp, w, rstd, N, C);
    const dim3 grid((unsigned)((C + 127) / 128), (unsigned)(nchunks < 65535 ? nchunks : 65535));
    k_rmsnorm_bwd_chunks<<<grid, 128, 0, S_>>>(d_part, dout, inp, rstd, N, C);
    k_rmsnorm_bwd_combine<<<(unsigned)((C + 127) / 128), 128, 0, S_>>>(dw, d_part, nchunks, C);
    DONE;
}

extern "C" int qp_cuda_rope(float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse,
                            void *stream)
{
    const int64_t pairs = (int64_t)N * (NH + KVH) * (C / NH / 2);
    k_rope<<<blocks_for(pairs), NT, 0, S_>>>(qkv, tab, N, T, maxT, C, NH, KVH, inverse);
    DONE;
}

extern "C" int qp_cuda_gqa_expand(float *wide, const float *narrow, int N, int C, int NH, int KVH, void *stream)
{
    k_gqa_expand<<<blocks_for((int64_t)N * 3 * C), NT, 0, S_>>>(wide, narrow, N, C, NH, KVH);
    DONE;
}

extern "C" int qp_cuda_gqa_reduce(float *narrow, const float *wide, int N, int C, int NH, int KVH, void *stream)
{
    const int64_t rs = C + 2 * (int64_t)KVH * (C / NH);
    k_gqa_reduce<<<blocks_for((int64_t)N * rs), NT, 0, S_>>>(narrow, wide, N, C, NH, KVH);
    DONE;
}

extern "C" int qp_cuda_swiglu_forward(float *h, const float *a, const float *u, int64_t n, void *stream)
{
    k_swiglu_fwd<<<blocks_for(n), NT, 0, S_>>>(h, a, u, n);
    DONE;
}

extern "C" int qp_cuda_swiglu_backward(float *da, float *du, const float *a, const float *u, const float *dh, int64_t n,
                                       void *stream)
{
    k_swiglu_bwd<<<blocks_for(n), NT, 0, S_>>>(da, du, a, u, dh, n);
    DONE;
}

extern "C" int qp_cuda_col_amax(float *s, const float *h, int N, int H, void *stream)
{
    k_col_amax<<<(unsigned)((H + 127) / 128), 128, 0, S_>>>(s, h, N, H);
    DONE;
}

extern "C" int qp_cuda_smooth_scale(float *s, int H, void *stream)
{
    k_smooth_scale<<<(unsigned)((H + 127) / 128), 128, 0, S_>>>(s, H);
    DONE;
}

extern "C" int qp_cuda_smooth_apply(float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C,
                                    int H, void *stream)
{
    k_smooth_apply<<<blocks_for((int64_t)(N + C) * H), NT, 0, S_>>>(xs, ws, h, w, s, N, C, H);
    DONE;
}

extern "C" int qp_cuda_smooth_unfold(float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N,
                                     int C, int H, void *stream)
{
    k_smooth_unfold<<<blocks_for((int64_t)(N + C) * H), NT, 0, S_>>>(dh, dw, dxs, dws, s, N, C, H);
    DONE;
}

extern "C" int qp_cuda_outlier_columns(qp_outlier_col *cols, const float *X, int64_t M, int C, void *stream)
{
    k_outlier_columns<<<(unsigned)((C + 127) / 128), 128, 0, S_>>>(cols, X, M, C);
    DONE;
}
