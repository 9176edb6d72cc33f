/* qp_scaling.h — per-tensor scaling recipes and recalibration events.
 *
 * Owns: how a tensor's FP32 encode scale is chosen from step to step, and the
 * typed records of every recalibration. One qp_scaling_state per quantized
 * tensor (a layer's x, w or dy operand). Use per step:
 *     qp_scaling_prepare(&st, &opts);          // sets opts.scale
 *     qp_quantize(x, &q, &opts, &stats);       // or qp_qdq
 *     qp_scaling_update(&st, step, &stats);    // history, new scale, events
 *
 * Delayed scaling (Transformer Engine's DelayedScaling): the scale used at
 * step t comes from the amax history of steps before t:
 *     s = elem_max / amax_h / 2^margin,  amax_h = max(history) or most recent;
 * amax_h == 0 or non-finite keeps the previous scale; s starts at 1 (as in TE,
 * the first step quantizes with scale 1). History length default 1024, "max".
 * Current scaling: the quantizer's own s = elem_max / amax of this tensor
 * (for NVFP4 the per-tensor global scale S = 6*448/amax); the state only
 * watches it and reports events. Block formats without a tensor scale (MX)
 * report overflow, underflow and non-finite events only.
 *
 * Events (each a qp_recalib_event through the callback):
 *   scale_change: |s_new - s_old| / s_old > scale_change_threshold (default 0.25)
 *   overflow:     a surge of saturation: f = n_sat / n above overflow_threshold
 *                 (default 1e-4) and above twice the running mean (EMA, 0.1)
 *                 of earlier steps' f — block formats saturate a few percent
 *                 by design (the OCP MX rule, NVFP4's rounded block scales),
 *                 so only a change is an event; under delayed FP8 scaling the
 *                 running mean is 0 and any saturation fires
 *   underflow:    the same surge rule for flushed non-zeros: f = n_flushed /
 *                 n_nonzero above underflow_threshold (default 0.01)
 *   (a tensor's first quantization only seeds both running means: a surge
 *   needs something to surge from, and start-up is not a recalibration)
 *   nonfinite:    any NaN/Inf input
 */
#ifndef QP_SCALING_H
#define QP_SCALING_H

#include <stdint.h>

#include "qp_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_SCALING_CURRENT = 0, QP_SCALING_DELAYED } qp_scaling_mode;
typedef enum { QP_AMAX_MAX = 0, QP_AMAX_MOST_RECENT } qp_amax_algo;

typedef enum {
    QP_EV_SCALE_CHANGE = 0,
    QP_EV_OVERFLOW,
    QP_EV_UNDERFLOW,
    QP_EV_NONFINITE,
    QP_EV_COUNT
} qp_event_kind;

const char *qp_event_kind_name(qp_event_kind k);

typedef struct {
    int64_t step;
    int32_t tensor_id;
    qp_event_kind kind;
    float old_scale, new_scale;  /* encode scales before and after this step */
    float amax;                  /* this step's amax */
    int64_t n, n_sat, n_flushed, n_nonzero, n_nonfinite;
} qp_recalib_event;

typedef void (*qp_event_cb)(const qp_recalib_event *ev, void *user);

typedef struct {
    qp_scaling_mode mode;
    int history_len;             /* delayed: amax history length (default 1024) */
    qp_amax_algo algo;           /* delayed: max (default) or most_recent */
    int margin;                  /* delayed: s /= 2^margin (default 0) */
    double scale_change_threshold;
    double overflow_threshold;
    double underflow_threshold;
    qp_event_cb on_event;        /* may be NULL */
    void *user;
} qp_scaling_cfg;

void qp_scaling_cfg_default(qp_scaling_cfg *c, qp_scaling_mode mode);

typedef struct {
    qp_scaling_cfg cfg;
    qp_fmt fmt;
    int32_t tensor_id;
    float scale;            /* encode scale the next quantization uses (delayed) */
    float last_scale;       /* encode scale of the last quantization */
    float *amax_history;    /* ring of cfg.history_len */
    int hist_pos, hist_count;
    double underflow_ema, overflow_ema;
    int64_t n_updates;
    int64_t n_events[QP_EV_COUNT];
} qp_scaling_state;

/* Returns 0, or -1 on a bad config (history_len < 1) or no memory. */
int qp_scaling_init(qp_scaling_state *s, const qp_scaling_cfg *cfg, qp_fmt fmt, int32_t tensor_id);
void qp_scaling_free(qp_scaling_state *s);
/* Fill o->scale for the next quantization (0 = let the quantizer use the current amax). */
void qp_scaling_prepare(const qp_scaling_state *s, qp_qopts *o);
/* Record what a quantization saw; update history and scale; emit events. */
void qp_scaling_update(qp_scaling_state *s, int64_t step, const qp_qstats *st);

/* The amax-to-scale rule shared by current and delayed scaling:
 * elem_max / amax / 2^margin, 1 when amax is 0 or non-finite, at most FLT_MAX. */
float qp_scale_from_amax(float elem_max, float amax, int margin);

#ifdef __cplusplus
}
#endif
#endif
