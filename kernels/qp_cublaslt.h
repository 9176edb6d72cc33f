/* qp_cublaslt.h — every GPU GEMM of qprec, through cuBLASLt.
 *
 * Owns: choosing and running the GEMM for a pair of quantized operands on the
 * GPU at hand, and saying which path ran:
 *   "bf16"           BF16 x BF16, FP32 accumulate (any GPU with cuBLASLt)
 *   "fp32"           FP32 (TF32 off) for the FP32 recipe and the LM head
 *   "fp8"            E4M3/E5M2 operands, per-tensor scale pointers, optional
 *                    amax of D; compute capability >= 8.9 (Hopper: native)
 *   "mxfp8", "nvfp4" block-scaled operands (CUBLASLT_MATMUL_MATRIX_SCALE_
 *                    VEC32_UE8M0 / VEC16_UE4M3), block scales in cuBLASLt's
 *                    tiled layout (qp_scale_layout.h), tensor scales folded
 *                    into alpha; compute capability >= 10.0 (Blackwell)
 *   "emulated-bf16"  block formats on GPUs without them: operands quantized and
 *                    dequantized unscaled to BF16 (exact), a BF16 GEMM, the
 *                    tensor scales folded into alpha — the products are those
 *                    of the hardware format.
 * Layout convention (the one train/precision/qp_linear.h uses): D[M,N] (row-major) =
 * alpha * A[M,K] . B[N,K]^T (+ beta * D), A and B row-major with K contiguous
 * — the "TN" form FP8 and the block formats require. Host-callable, C linkage;
 * functions return 0 or -1 with a one-line message in qp_cublt_error().
 * Reproducible: the algorithm of a product is the heuristic's first answer for
 * its key (types, shape, amax, pointer mode, alignments) — no timing, no
 * autotuning — so two runs on the same GPU and library pick the same kernels,
 * and every reduction scheme cuBLASLt has for split-K is sequential
 * (cublasLtReductionScheme_t): identical runs give identical bits. */
#ifndef QP_CUBLASLT_H
#define QP_CUBLASLT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_CUBLT_F32 = 0,  /* float */
    QP_CUBLT_BF16,     /* uint16_t bf16 bits */
    QP_CUBLT_E4M3,     /* one byte per element, per-tensor scale */
    QP_CUBLT_E5M2,
    QP_CUBLT_MXFP8,    /* E4M3 elements + E8M0 scale per 32 along K */
    QP_CUBLT_NVFP4,    /* E2M1 pairs (low nibble first) + UE4M3 scale per 16 along K */
} qp_cublt_type;

typedef struct {
    qp_cublt_type type;
    const void *d_data;          /* rows x K elements, row-major */
    const float *d_scale_inv;    /* per-tensor decode scale, device; NULL = 1 (see below) */
    const uint8_t *d_block_scales; /* MXFP8/NVFP4: tiled layout (qp_scale_layout.h:
                                      qp_scale_swizzle / qp_cuda_scale_swizzle of quant/'s
                                      plain scales, rows = this operand's rows) */
    int emulated;                /* BF16 operand holding a block format's values dequantized
                                    unscaled (qp_qopts.unscaled): the path is named
                                    "emulated-bf16" instead of "bf16" */
} qp_cublt_operand;
/* Tensor scales. d_scale_inv multiplies the operand's decoded values: for FP8
 * it becomes cuBLASLt's A/B scale pointer; for every other type (NVFP4's
 * tensor scale, an emulated operand's) it is folded into alpha on the device
 * (alpha * sA * sB, pointer mode DEVICE), so no host synchronisation. */

typedef struct qp_cublt qp_cublt;

/* One handle per device and stream; workspace allocated here. NULL + err. */
qp_cublt *qp_cublt_create(void *stream, char *err, size_t errlen);
void qp_cublt_destroy(qp_cublt *h);
const char *qp_cublt_error(const qp_cublt *h);
/* Compute capability of the handle's device, e.g. 90 or 100. */
int qp_cublt_cc(const qp_cublt *h);
/* 1 if the GPU runs type natively (FP8: cc >= 89; MXFP8/NVFP4: cc >= 100). */
int qp_cublt_native(const qp_cublt *h, qp_cublt_type t);

/* D[M,N] (FP32, row-major) = alpha * A . B^T + beta * D. A and B must have
 * the same type class (both FP8 — E4M3 x E4M3 or E4M3 x E5M2 in either
 * order —, both MXFP8, both NVFP4, or both BF16/F32). d_amax_d, if not NULL,
 * receives max |D| (FP8 path only; otherwise ignored): cuBLASLt's
 * AMAX_D_POINTER where it has it for FP32 output, else a reduction kernel
 * enqueued after the GEMM (either way a NaN in D gives a NaN amax; the
 * environment variable QP_CUBLT_AMAX=kernel, read at create, forces the
 * kernel). Enqueued on the handle's stream; nothing synchronises. *path_out,
 * if not NULL, gets the path's name above. The first call of a shape builds
 * its descriptor and algorithm (cached, 64 entries, least recently used
 * evicted); a handle is not thread-safe. */
int qp_cublt_gemm(qp_cublt *h, const qp_cublt_operand *A, const qp_cublt_operand *B, float *d_D, int M, int N,
                  int K, float alpha, float beta, float *d_amax_d, const char **path_out);

/* Whether cuBLASLt has an algorithm for this product on this GPU (types,
 * shape, amax wanted or not, 256-byte aligned buffers): 1 yes, 0 no (the
 * reason in qp_cublt_error: a rule of qp_cublt_check, or the heuristic
 * returning nothing), -1 on a CUDA/cuBLAS error. Builds and caches the
 * descriptor the GEMM will reuse. */
int qp_cublt_supported(qp_cublt *h, qp_cublt_type ta, qp_cublt_type tb, int M, int N, int K, int want_amax);

/* The rules checked before cuBLASLt is called, as a pure host function (no
 * GPU needed): operand classes, compute capability cc (e.g. 90), K alignment
 * (FP8: multiple of 16; MXFP8, NVFP4: multiple of 32), positive sizes.
 * Returns 0, or -1 with a one-line reason in err. */
int qp_cublt_check(int cc, qp_cublt_type ta, qp_cublt_type tb, int M, int N, int K, char *err, size_t errlen);

/* How the row-major product maps onto cuBLASLt's column-major one (the
 * derivation is at the top of qp_cublaslt.cu): cuBLASLt computes
 * D'(m x n, ld ldd) = op_a(A') . op_b(B') with A' = our B buffer (a_rows x
 * a_cols, ld lda) and B' = our A buffer. Pure host function; the GEMM builds
 * its layouts from it, and the CPU test checks it with a column-major
 * reference GEMM. */
typedef struct {
    int transa, transb;                 /* 1 = transposed (CUBLAS_OP_T) */
    int64_t m, n, k;
    int64_t a_rows, a_cols, lda;        /* cuBLASLt's A = our B */
    int64_t b_rows, b_cols, ldb;        /* cuBLASLt's B = our A */
    int64_t d_rows, d_cols, ldd;        /* C and D = our D */
} qp_cublt_plan;
void qp_cublt_make_plan(int M, int N, int K, qp_cublt_plan *p);

/* Name of a type ("f32", "bf16", "e4m3", "e5m2", "mxfp8", "nvfp4"). */
const char *qp_cublt_type_name(qp_cublt_type t);

/* Workspace bytes the handle gives cuBLASLt (32 MiB), and descriptors cached. */
size_t qp_cublt_workspace_bytes(const qp_cublt *h);
int qp_cublt_cached(const qp_cublt *h);

#ifdef __cplusplus
}
#endif
#endif
