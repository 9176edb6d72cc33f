/* qp_runlog.h — the HDF5 run file every training run writes.
 *
 * Owns: the run file's schema (documented in docs/runfile.md) and keeping it
 * readable while it is written and after a kill: the file is opened for SWMR
 * writing (a reader may open it with h5py's swmr=True while the run goes on),
 * every dataset is created up front, rows are appended and flushed.
 *   /                     attributes: the full configuration (strings)
 *   /train/{step,loss,lr,grad_norm,step_ms,data_wait_ms,tokens_per_s,batch_hash,
 *           comm_ms,power_w,energy_j,gpu_util,grad_comm_rel_err}
 *                         1-D datasets, one entry per optimizer step (comm_ms: 0
 *                         in one process; power: NaN where no GPU is sampled;
 *                         grad_comm_rel_err: NaN for an FP32 gradient all-reduce)
 *   /eval/{step,val_loss}
 *   /quant/error          table: step, layer, gemm, operand, pass, rel_l2,
 *                         snr_db, sat_frac, zero_frac, amax, scale
 *   /events/recalib       table: step, layer, gemm, operand, kind, old_scale,
 *                         new_scale, amax
 *   /events/divergence    table: step, loss, reason, action
 *   /status               table: step, state ("running", "done", "diverged",
 *                         "stopped", "failed"), message — the last row is current
 */
#ifndef QP_RUNLOG_H
#define QP_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *key, *value;
} qp_kv;

typedef struct {
    int64_t step;
    double loss, lr, grad_norm, step_ms, data_wait_ms, tokens_per_s;
    uint64_t batch_hash;
    double comm_ms;    /* gradient/amax all-reduce time (0 in one process) */
    double power_w;    /* mean GPU board power over the step (NaN: not sampled) */
    double energy_j;   /* GPU energy since the run started (NaN: not sampled) */
    double gpu_util;   /* mean GPU utilization over the step, 0..100 (NaN: not sampled) */
    double grad_comm_rel_err; /* |g_comm - g_fp32| / |g_fp32| of a low-precision gradient all-reduce (NaN: fp32) */
} qp_train_row;

typedef struct {
    int64_t step;
    int32_t layer;
    const char *gemm, *operand, *pass;  /* e.g. "fc", "x"|"w"|"dy", "fprop"|"dgrad"|"wgrad" */
    double rel_l2, snr_db, sat_frac, zero_frac, amax, scale;
} qp_qerr_row;

typedef struct {
    int64_t step;
    int32_t layer;
    const char *gemm, *operand, *kind;
    double old_scale, new_scale, amax;
} qp_event_row;

typedef struct qp_runlog qp_runlog;

/* Create (truncate) a run file with these root attributes. NULL + err on failure. */
qp_runlog *qp_runlog_create(const char *path, const qp_kv *attrs, int nattrs, char *err, size_t errlen);
/* Reopen a run file to continue it after a checkpoint at last_step: rows with
 * step > last_step are dropped (they are about to be recomputed); attributes stay. */
qp_runlog *qp_runlog_resume(const char *path, int64_t last_step, char *err, size_t errlen);

/* The record functions and qp_runlog_flush do nothing (and succeed) when l is
 * NULL: a data-parallel rank other than 0 has no run file. */
int qp_runlog_train(qp_runlog *l, const qp_train_row *r, char *err, size_t errlen);
int qp_runlog_eval(qp_runlog *l, int64_t step, double val_loss, char *err, size_t errlen);
int qp_runlog_qerr(qp_runlog *l, const qp_qerr_row *r, char *err, size_t errlen);
int qp_runlog_event(qp_runlog *l, const qp_event_row *r, char *err, size_t errlen);
int qp_runlog_divergence(qp_runlog *l, int64_t step, double loss, const char *reason, const char *action, char *err,
                         size_t errlen);
int qp_runlog_status(qp_runlog *l, int64_t step, const char *state, const char *message, char *err, size_t errlen);
/* Write buffered rows and flush the file: after this a reader sees every row. */
int qp_runlog_flush(qp_runlog *l, char *err, size_t errlen);
/* Flush and close; l is freed even on failure. */
int qp_runlog_close(qp_runlog *l, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
