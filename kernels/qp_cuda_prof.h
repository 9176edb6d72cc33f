/* qp_cuda_prof.h — where a GPU training step's time goes (qtrain --device
 * cuda with QP_CUDA_PROFILE=1; kernels/bench/device_check.sh's phase split).
 *
 * Owns: timing events on the compute stream at phase changes, folded into
 * per-phase totals after the stream has been synchronised. The model's and
 * the dispatch's device operations mark the phase they begin; the time from
 * one mark to the next goes to the first mark's phase, so the phases add up
 * to the GPU's whole timeline, idle time included: QP_PH_HOST is marked just
 * before each synchronisation and ends at the next operation the host
 * enqueues (the GPU waiting for the host: loss and norm read-backs, the
 * data loader, logging, checkpoints). Events are only recorded when the
 * phase changes (a few hundred per GPT-2-small step), never waited on. With
 * a NULL profiler every function does nothing. */
#ifndef QP_CUDA_PROF_H
#define QP_CUDA_PROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_PH_GEMM = 0,    /* cuBLASLt GEMMs (and their alpha kernel) */
    QP_PH_QUANT,       /* quantization, transposes, RHT, error statistics, scale swizzles */
    QP_PH_ATTENTION,   /* attention forward and backward */
    QP_PH_LAYERNORM,   /* LayerNorm forward and backward */
    QP_PH_POINTWISE,   /* GELU, residuals, bias add, bias gradients */
    QP_PH_EMBED_LOSS,  /* embeddings, softmax / cross-entropy, the mean loss */
    QP_PH_OPTIMIZER,   /* gradient zeroing, gradient norm, AdamW */
    QP_PH_HOST,        /* the GPU idle until the host enqueues more */
    QP_PH_COUNT
} qp_cuda_phase;

/* "gemm", "quantize", "attention", "layernorm", "pointwise", "embed+loss", "optimizer", "host" */
const char *qp_cuda_phase_name(qp_cuda_phase ph);

typedef struct qp_cuda_prof qp_cuda_prof;

/* Events on `stream` (cudaStream_t). NULL when out of memory or events. */
qp_cuda_prof *qp_cuda_prof_create(void *stream);
void qp_cuda_prof_destroy(qp_cuda_prof *p);
/* The stream's next work belongs to phase ph (an event when it changes). */
void qp_cuda_prof_mark(qp_cuda_prof *p, qp_cuda_phase ph);
/* After the stream has been synchronised: add the time between the marks
 * so far to the totals (count = 0: drop it, e.g. warm-up steps) and count
 * one step when count. The last mark stays open into the next period.
 * Returns 0, or -1 (a CUDA error; the profile is then abandoned). */
int qp_cuda_prof_collect(qp_cuda_prof *p, int count);
/* One line: total ms per counted step and each phase's ms and share. */
void qp_cuda_prof_report(const qp_cuda_prof *p, char *buf, size_t n);
/* Milliseconds per counted step of phase ph (NaN before any). */
double qp_cuda_prof_ms(const qp_cuda_prof *p, qp_cuda_phase ph);

#ifdef __cplusplus
}
#endif
#endif
