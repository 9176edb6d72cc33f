/* qp_cuda_prof.h — where a GPU training step's time goes: the run file's
 * phase columns on --device cuda (/train/gemm_ms ... optim_ms, as the CPU's
 * qp_prof.h fills them), and with QP_CUDA_PROFILE=1 one summary line
 * (kernels/bench/device_check.sh's phase split).
 *
 * Owns: timing events on the compute stream at phase changes, folded into
 * per-phase times after the stream has been synchronised. The phases are
 * qp_prof.h's (gemm, quant, attn, rowops, optim, comm; the same work goes to
 * the same phase on both devices: LayerNorm, GELU, residuals, bias add and
 * bias gradients, embeddings and the loss are rowops) plus QP_PH_HOST, the
 * GPU idle waiting for the host. The model's and the dispatch's device
 * operations mark the phase they begin; the time from one mark to the next
 * goes to the first mark's phase, so the phases add up to the GPU's whole
 * timeline, idle time included: QP_PH_HOST is marked just before each
 * synchronisation and ends at the next operation the host enqueues (loss
 * and norm read-backs, the data loader, logging, checkpoints). Events are
 * only recorded when the phase changes (a few hundred per GPT-2-small step),
 * never waited on. With a NULL profiler every function does nothing. */
#ifndef QP_CUDA_PROF_H
#define QP_CUDA_PROF_H

#include <stddef.h>

#include "qp_prof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A phase: a qp_phase, or the GPU waiting for the host. */
enum { QP_PH_HOST = QP_PHASE_COUNT, QP_PH_COUNT };

/* qp_phase_name's, and "host" */
const char *qp_cuda_phase_name(int ph);

typedef struct qp_cuda_prof qp_cuda_prof;

/* Events on `stream` (cudaStream_t). NULL when out of memory or events. */
qp_cuda_prof *qp_cuda_prof_create(void *stream);
void qp_cuda_prof_destroy(qp_cuda_prof *p);
/* The stream's next work belongs to phase ph (an event when it changes). */
void qp_cuda_prof_mark(qp_cuda_prof *p, int ph);
/* After the stream has been synchronised: add the time between the marks
 * so far to the totals (count = 0: drop it, e.g. warm-up steps) and count
 * one step when count. The last mark stays open into the next period.
 * Returns 0, or -1 (a CUDA error; the profile is then abandoned). */
int qp_cuda_prof_collect(qp_cuda_prof *p, int count);
/* One line: total ms per counted step and each phase's ms and share. */
void qp_cuda_prof_report(const qp_cuda_prof *p, char *buf, size_t n);
/* Milliseconds per counted step of phase ph (NaN before any). */
double qp_cuda_prof_ms(const qp_cuda_prof *p, int ph);
/* The last collected period's milliseconds by qp_phase (counted or not);
 * every phase NaN when that period was not measured (no profiler, too many
 * marks, a CUDA error). */
void qp_cuda_prof_last(const qp_cuda_prof *p, double ms[QP_PHASE_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
