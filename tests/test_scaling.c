/* test_scaling.c — delayed scaling as Transformer Engine does it (scale from
 * the history before the step, first step at scale 1, max vs most_recent,
 * margin, window expiry), current scaling, and every recalibration event kind
 * with its record contents. */
#include <float.h>
#include <stdlib.h>

#include "qp_quant.h"
#include "qp_scaling.h"
#include "qp_test.h"

typedef struct {
    qp_recalib_event ev[64];
    int n;
} event_log;

static void collect(const qp_recalib_event *ev, void *user)
{
    event_log *l = user;
    if (l->n < 64) l->ev[l->n++] = *ev;
}

static int count(const event_log *l, qp_event_kind k, int64_t step)
{
    int c = 0;
    for (int i = 0; i < l->n; i++) c += l->ev[i].kind == k && (step < 0 || l->ev[i].step == step);
    return c;
}

/* One step: quantize x (n values, all = v except one = peak) with the state. */
static void step(qp_scaling_state *s, int64_t t, float peak, float v)
{
    float x[64], y[64];
    for (int i = 0; i < 64; i++) x[i] = v;
    x[5] = peak;
    qp_qopts o = {0};
    qp_scaling_prepare(s, &o);
    qp_qstats st;
    qp_qdq(s->fmt, x, y, 1, 64, &o, &st);
    qp_scaling_update(s, t, &st);
}

int main(void)
{
    event_log log = {0};
    qp_scaling_cfg cfg;
    qp_scaling_cfg_default(&cfg, QP_SCALING_DELAYED);
    CHECK(cfg.history_len == 1024 && cfg.algo == QP_AMAX_MAX, "TE defaults");
    cfg.history_len = 4;
    cfg.on_event = collect;
    cfg.user = &log;
    qp_scaling_state s;
    CHECK(qp_scaling_init(&s, &cfg, QP_FMT_FP8_E4M3, 3) == 0, "init");

    /* Step 0 quantizes with scale 1 (no history yet), then learns amax 2. */
    qp_qopts o = {0};
    qp_scaling_prepare(&s, &o);
    CHECK(o.scale == 1.0f, "first step at scale 1");
    step(&s, 0, 2.0f, 0.1f);
    CHECK(s.scale == 224.0f, "scale from history: %g", s.scale);
    CHECK(count(&log, QP_EV_SCALE_CHANGE, 0) == 1, "scale change event at step 0");
    CHECK(log.ev[0].old_scale == 1.0f && log.ev[0].new_scale == 224.0f && log.ev[0].amax == 2.0f &&
              log.ev[0].tensor_id == 3,
          "event record");
    /* A spike saturates under the stale scale: overflow event, then the scale drops. */
    step(&s, 1, 8.0f, 0.1f);
    CHECK(count(&log, QP_EV_OVERFLOW, 1) == 1, "overflow event");
    CHECK(s.scale == 56.0f, "max of history: %g", s.scale);
    /* Quiet steps: the spike stays in the window for history_len steps, then expires. */
    step(&s, 2, 2.0f, 0.1f);
    step(&s, 3, 2.0f, 0.1f);
    step(&s, 4, 2.0f, 0.1f);
    CHECK(s.scale == 56.0f, "spike still in window");
    step(&s, 5, 2.0f, 0.1f);
    CHECK(s.scale == 224.0f, "spike expired: %g", s.scale);
    CHECK(count(&log, QP_EV_SCALE_CHANGE, 5) == 1, "scale change when the spike leaves");
    /* Zero amax keeps the scale. */
    step(&s, 6, 0.0f, 0.0f);
    step(&s, 7, 0.0f, 0.0f);
    step(&s, 8, 0.0f, 0.0f);
    step(&s, 9, 0.0f, 0.0f);
    CHECK(s.scale == 224.0f, "all-zero history keeps scale: %g", s.scale);
    /* NaN input: nonfinite event. */
    step(&s, 10, NAN, 0.1f);
    CHECK(count(&log, QP_EV_NONFINITE, 10) == 1, "nonfinite event");
    qp_scaling_free(&s);

    /* most_recent and margin. */
    cfg.algo = QP_AMAX_MOST_RECENT;
    cfg.margin = 1;
    qp_scaling_init(&s, &cfg, QP_FMT_FP8_E5M2, 0);
    step(&s, 0, 8.0f, 0.1f);
    step(&s, 1, 2.0f, 0.1f);
    CHECK(s.scale == 57344.0f / 2.0f / 2.0f, "most_recent with margin 1: %g", s.scale);
    qp_scaling_free(&s);

    /* Current scaling: the quantizer's own scale; events on large changes only. */
    log.n = 0;
    qp_scaling_cfg cur;
    qp_scaling_cfg_default(&cur, QP_SCALING_CURRENT);
    cur.on_event = collect;
    cur.user = &log;
    qp_scaling_init(&s, &cur, QP_FMT_NVFP4, 1);
    qp_scaling_prepare(&s, &o);
    CHECK(o.scale == 0.0f, "current scaling leaves the scale to the quantizer");
    step(&s, 0, 2.0f, 0.1f);
    step(&s, 1, 2.1f, 0.1f);
    CHECK(count(&log, QP_EV_SCALE_CHANGE, -1) == 0, "small change: no event");
    step(&s, 2, 4.0f, 0.1f);
    CHECK(count(&log, QP_EV_SCALE_CHANGE, 2) == 1, "halved global scale: event");
    /* Underflow surge: tiny values next to a big one flush to zero in FP4. */
    step(&s, 3, 1000.0f, 1e-4f);
    CHECK(count(&log, QP_EV_UNDERFLOW, 3) == 1, "underflow surge event");
    /* Sustained underflow stops being a surge once the running mean catches up
     * (EMA 0.1: about 7 steps at a constant fraction). */
    for (int t = 4; t < 20; t++) step(&s, t, 1000.0f, 1e-4f);
    int late = 0;
    for (int t = 12; t < 20; t++) late += count(&log, QP_EV_UNDERFLOW, t);
    CHECK(late == 0 && count(&log, QP_EV_UNDERFLOW, -1) < 10, "sustained underflow is not a new surge");
    qp_scaling_free(&s);

    /* MX: no tensor scale, still overflow events (the OCP rule saturates);
     * a steady saturation rate stops firing, a jump fires again. */
    log.n = 0;
    qp_scaling_init(&s, &cur, QP_FMT_MXFP4, 2);
    step(&s, 0, 1.0f, 1.0f);
    step(&s, 1, 7.9f, 1.0f);
    CHECK(count(&log, QP_EV_OVERFLOW, 0) == 0, "the first quantization only seeds the running mean");
    CHECK(count(&log, QP_EV_OVERFLOW, 1) == 1 && count(&log, QP_EV_SCALE_CHANGE, -1) == 0, "mx events");
    for (int t = 1; t < 30; t++) step(&s, t, 7.9f, 1.0f);
    CHECK(count(&log, QP_EV_OVERFLOW, -1) < 10 && count(&log, QP_EV_OVERFLOW, 29) == 0, "steady saturation quiets");
    {
        float x[64], y[64];
        for (int i = 0; i < 64; i++) x[i] = (i % 4 == 0) ? 7.9f : 1.0f; /* 16 saturating instead of 2 */
        qp_qopts o = {0};
        qp_qstats st;
        qp_qdq(QP_FMT_MXFP4, x, y, 1, 64, &o, &st);
        qp_scaling_update(&s, 30, &st);
        CHECK(count(&log, QP_EV_OVERFLOW, 30) == 1, "saturation surge fires");
    }
    qp_scaling_free(&s);

    CHECK(qp_scale_from_amax(448.0f, 0.0f, 0) == 1.0f && qp_scale_from_amax(448.0f, INFINITY, 0) == 1.0f,
          "degenerate amax -> 1");
    CHECK(qp_scale_from_amax(448.0f, 1e-45f, 0) == FLT_MAX, "tiny amax clamps to FLT_MAX");
    qp_scaling_cfg bad = cfg;
    bad.history_len = 0;
    CHECK(qp_scaling_init(&s, &bad, QP_FMT_FP8_E4M3, 0) == -1, "history_len 0 rejected");
    CHECK(strcmp(qp_event_kind_name(QP_EV_UNDERFLOW), "underflow") == 0, "kind names");
    return qp_test_finish("test_scaling");
}
