/* qp_prof.h — where a training step's time goes: the phase profile.
 *
 * Owns: the step's phases and the timers that split its wall time among
 * them. Code that does a phase's work brackets it with qp_prof_push(phase)
 * ... qp_prof_pop(); time always goes to the innermost open phase, so a GEMM
 * inside the precision dispatch counts as GEMM and not as operand
 * quantization. Only the thread that runs the step (outside any OpenMP
 * region) pushes and pops; each push or pop reads the monotonic clock once
 * (~20 ns), a few hundred times per step. Data wait and communication are
 * measured where they happen (the loader, qp_dist) and only named here.
 * The run file logs every phase per step (qp_runschema.h: the /train columns NAME_ms). */
#ifndef QP_PROF_H
#define QP_PROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_PHASE_GEMM = 0, /* the matrix products (qp_gemm_run, operand conversion included) */
    QP_PHASE_QUANT,    /* the precision dispatch around them: operand quantization, transposes, RHT, metrics */
    QP_PHASE_ATTN,     /* attention's softmax(QK^T)V, forward and backward */
    QP_PHASE_ROWOPS,   /* embeddings, LayerNorm, residuals, GELU, biases, softmax/cross-entropy */
    QP_PHASE_OPTIM,    /* gradient norm and AdamW */
    QP_PHASE_DATA,     /* waiting for the batch (measured by the loader) */
    QP_PHASE_COMM,     /* cross-rank collectives (measured by qp_dist) */
    QP_PHASE_COUNT
} qp_phase;

/* The phase's short name, the stem of its run-file column (qp_runschema.h:
 * "gemm" -> /train/gemm_ms): "gemm", "quant", "attn", "rowops", "optim",
 * "data", "comm". The GPU's profile (kernels/qp_cuda_prof.h) uses the same
 * phases and names. */
const char *qp_phase_name(qp_phase p);

/* Profiling is on unless disabled (QP_PROFILE=0 in the environment, or
 * qp_prof_enable(0)); off, push and pop do nothing and every phase reads 0. */
void qp_prof_enable(int on);
int qp_prof_enabled(void);

/* Zero every phase (at the start of a step). */
void qp_prof_reset(void);
void qp_prof_push(qp_phase p);
void qp_prof_pop(void);
/* Milliseconds accumulated in each phase since the last reset (the phases
 * measured elsewhere, data and communication, read 0 here). */
void qp_prof_read(double ms[QP_PHASE_COUNT]);
/* Clock reads since the program started (what the profile costs: one per
 * push or pop). */
int64_t qp_prof_clock_reads(void);

#ifdef __cplusplus
}
#endif
#endif
