/* qp_gemm.h — the trainer's matrix products, on oneDNN.
 *
 * Owns: every GEMM call of the CPU trainer and the choice of kernel. One
 * operation, C[M,N] (+)= alpha * A[M,K] * B[N,K]^T, where either operand may
 * be stored transposed. Operands are float arrays; when the caller says their
 * values are exactly representable in BF16 (every emulated low-precision
 * operand is, with its per-tensor scale factored out into alpha) and the CPU
 * has a BF16 matmul that outruns its FP32 one (qp_gemm_auto_bf16), the
 * product runs in BF16 with FP32 accumulation — exact products, as on a
 * tensor core; otherwise in FP32, whose products of BF16 values are exact
 * too. QP_GEMM=bf16 or f32 overrides the choice (auto, the default).
 * Primitives are created once per shape and reused: no allocation per call
 * after the first call of a shape. A product is the same bits on any number
 * of OpenMP threads: it runs as blocks fixed by its shape and the machine's
 * CPU count, each on one thread (qp_gemm.c). */
#ifndef QP_GEMM_H
#define QP_GEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_gemm qp_gemm;

qp_gemm *qp_gemm_create(char *err, size_t errlen);
/* 0 when QP_GEMM is unset, empty, auto, bf16 or f32; else -1 and the one-line
 * error qp_gemm_create would give. */
int qp_gemm_choice_check(char *err, size_t errlen);
void qp_gemm_destroy(qp_gemm *g);

/* a_t: A is stored K x M (else M x K); b_t: B is stored K x N (else N x K).
 * bf16_exact: every value of A and B is a BF16 value. Returns 0, or -1 with
 * a message in the engine (qp_gemm_error). */
int qp_gemm_run(qp_gemm *g, const float *A, int a_t, const float *B, int b_t, float *C, int M, int N, int K,
                float alpha, int accumulate, int bf16_exact);
const char *qp_gemm_error(const qp_gemm *g);

/* The FP8 block-scaled GEMM as DeepSeek-V3's kernels and Hopper's
 * block-scaled cuBLASLt GEMMs compute it, whose FP32 block scales along K
 * cannot be folded into alpha: for each chunk c of kc columns of K, in order,
 * the partial product P_c = A_c B_c^T of the operands' element codes (exact
 * BF16 values: bf16_exact) is accumulated on its own (FP32, oneDNN), then
 * promoted: acc += (sa[m*nk + c] * sb[n*nk + c]) * P_c in FP32, nk =
 * ceil(K / kc) (sa, sb NULL meaning 1); finally C = alpha * acc (+ C when
 * accumulate). Operands as qp_gemm_run's. Returns 0, or -1 with a message. */
int qp_gemm_run_kscaled(qp_gemm *g, const float *A, int a_t, const float *B, int b_t, float *C, int M, int N, int K,
                        int kc, const float *sa, const float *sb, float alpha, int accumulate, int bf16_exact);

/* Either product of operands of either kind: A (B) holds BF16 bits when a16
 * (b16), as they are for a BF16 kernel (widened, exactly, for FP32 or a
 * K-chunk), else floats as above; kc > 0: K-chunked as qp_gemm_run_kscaled,
 * else as qp_gemm_run. */
int qp_gemm_run_typed(qp_gemm *g, const void *A, int a16, int a_t, const void *B, int b16, int b_t, float *C, int M,
                      int N, int K, int kc, const float *sa, const float *sb, float alpha, int accumulate,
                      int bf16_exact);

/* oneDNN's implementation names, for the run file: e.g. "brg:avx512_core_bf16"
 * ("none" before the first product of that type). */
const char *qp_gemm_impl_bf16(const qp_gemm *g);
const char *qp_gemm_impl_f32(const qp_gemm *g);
/* Time spent in qp_gemm_run (seconds, operand conversion included) and the
 * floating-point operations done (2*M*N*K per product), since creation. */
void qp_gemm_counters(const qp_gemm *g, double *seconds, double *flops);

/* 1 when BF16 products run on a BF16 kernel, 0 when they run in FP32. */
int qp_gemm_has_bf16(const qp_gemm *g);
/* Why they run where they do, for the run file: "onednn-bf16",
 * "fp32-chosen" (QP_GEMM=auto on a CPU whose BF16 dot products are no
 * faster than its FP32 FMAs), "fp32-forced" (QP_GEMM=f32) or
 * "fp32-fallback" (oneDNN has no BF16 matmul on this CPU). */
const char *qp_gemm_bf16_kernel(const qp_gemm *g);

/* The CPU facts QP_GEMM=auto decides by. */
typedef struct {
    int amd;         /* vendor AuthenticAMD */
    int avx512_bf16; /* VDPBF16PS */
    int amx_bf16;    /* AMX tiles with BF16, enabled by the OS */
} qp_gemm_cpu;
qp_gemm_cpu qp_gemm_cpu_read(void);
/* 1 when a BF16 kernel should run BF16 products. The choice is a rule on
 * the CPU's features, never a timing, so every run on a machine makes the
 * same one (qsweep's runs stay matched bit for bit). AMX's tiles, and AMD's
 * AVX512-BF16 (Zen 4 and later: VDPBF16PS retires twice FP32 FMA's flops),
 * outrun FP32; Intel's AVX512-BF16 without AMX does not (one port against
 * FMA's two: on a 2-core Xeon (model 207, AMX not exposed), oneDNN 2.6's
 * BF16 matmul ran 1024^3 at 142 GFLOP/s, its FP32 one at 273). */
int qp_gemm_auto_bf16(qp_gemm_cpu c);

#ifdef __cplusplus
}
#endif
#endif
