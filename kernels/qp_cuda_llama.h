/* qp_cuda_llama.h — the Llama's layer kernels on the GPU (qp_cuda_llama.cu).
 *
 * Owns: the launches of the Llama's own layers — token embedding, RMSNorm,
 * rotary embeddings, the grouped-query widening around the GPT's attention
 * kernels, SwiGLU, Smooth-SwiGLU — and of the outlier statistics of a GEMM
 * input (qp_outliers.h's per-channel sums). Each kernel computes the shared
 * host/device formula of qp_model_math.h (qp_outliers.h) with one owner
 * per output element and sums in the formula's order: no atomics, the same
 * bits as the formula on the host (tests/kernels/test_cuda_model_math.c
 * checks the formulas against the CPU Llama). Shapes and semantics as
 * qpm_llama_ops (qp_cuda_llama_pass.h). Each returns 0 or a cudaError_t value. */
#ifndef QP_CUDA_LLAMA_H
#define QP_CUDA_LLAMA_H

#include <stdint.h>

#include "qp_outliers.h"

#ifdef __cplusplus
extern "C" {
#endif

int qp_cuda_embed_forward(float *out, const int32_t *inp, const float *wte, int BT, int C, void *stream);
int qp_cuda_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, void *stream);
/* d_part: ceil(N / QPM_SUM_ROWS) * C floats */
int qp_cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                             const float *rstd, int N, int C, float *d_part, void *stream);
int qp_cuda_rope(float *qkv, const float *tab, int N, int T, int maxT, int C, int NH, int KVH, int inverse,
                 void *stream);
int qp_cuda_gqa_expand(float *wide, const float *narrow, int N, int C, int NH, int KVH, void *stream);
int qp_cuda_gqa_reduce(float *narrow, const float *wide, int N, int C, int NH, int KVH, void *stream);
int qp_cuda_swiglu_forward(float *h, const float *a, const float *u, int64_t n, void *stream);
int qp_cuda_swiglu_backward(float *da, float *du, const float *a, const float *u, const float *dh, int64_t n,
                            void *stream);
/* s (H) = each channel's amax over the N rows of h; then, in place, its scale */
int qp_cuda_col_amax(float *s, const float *h, int N, int H, void *stream);
int qp_cuda_smooth_scale(float *s, int H, void *stream);
int qp_cuda_smooth_apply(float *xs, float *ws, const float *h, const float *w, const float *s, int N, int C, int H,
                         void *stream);
int qp_cuda_smooth_unfold(float *dh, float *dw, const float *dxs, const float *dws, const float *s, int N, int C,
                          int H, void *stream);
/* cols (C, device) = qp_outlier_column of every channel of X (M x C, device) */
int qp_cuda_outlier_columns(qp_outlier_col *cols, const float *X, int64_t M, int C, void *stream);

#ifdef __cplusplus
}
#endif
#endif
