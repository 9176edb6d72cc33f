/* qp_scaling.c — delayed and current per-tensor scaling with recalibration
 * events (see qp_scaling.h). */
#include "qp_scaling.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *qp_event_kind_name(qp_event_kind k)
{
    static const char *names[QP_EV_COUNT] = {"scale_change", "overflow", "underflow", "nonfinite"};
    return (unsigned)k < QP_EV_COUNT ? names[k] : "unknown";
}

void qp_scaling_cfg_default(qp_scaling_cfg *c, qp_scaling_mode mode)
{
    memset(c, 0, sizeof *c);
    c->mode = mode;
    c->history_len = 1024;
    c->algo = QP_AMAX_MAX;
    c->margin = 0;
    c->scale_change_threshold = 0.25;
    c->overflow_threshold = 1e-4;
    c->underflow_threshold = 0.01;
}

float qp_scale_from_amax(float elem_max, float amax, int margin)
{
    if (!(amax > 0.0f) || !isfinite(amax)) return 1.0f;
    float s = elem_max / amax;
    s = ldexpf(s, -margin);
    if (!(s <= FLT_MAX)) s = FLT_MAX; /* amax tiny: elem_max / amax overflowed */
    if (s == 0.0f) s = 1.0f;
    return s;
}

int qp_scaling_init(qp_scaling_state *s, const qp_scaling_cfg *cfg, qp_fmt fmt, int32_t tensor_id)
{
    memset(s, 0, sizeof *s);
    if (!cfg || cfg->history_len < 1 || (unsigned)fmt >= QP_FMT_COUNT) return -1;
    s->cfg = *cfg;
    s->fmt = fmt;
    s->tensor_id = tensor_id;
    s->scale = 1.0f;
    s->last_scale = 1.0f;
    s->underflow_ema = -1.0;
    s->overflow_ema = -1.0;
    if (cfg->mode == QP_SCALING_DELAYED) {
        s->amax_history = calloc((size_t)cfg->history_len, sizeof(float));
        if (!s->amax_history) return -1;
    }
    return 0;
}

void qp_scaling_free(qp_scaling_state *s)
{
    free(s->amax_history);
    s->amax_history = NULL;
}

void qp_scaling_prepare(const qp_scaling_state *s, qp_qopts *o)
{
    const int has_tensor_scale = qp_formats[s->fmt].tensor_scale;
    o->scale = (s->cfg.mode == QP_SCALING_DELAYED && has_tensor_scale) ? s->scale : 0.0f;
}

static float history_amax(const qp_scaling_state *s)
{
    if (s->cfg.algo == QP_AMAX_MOST_RECENT)
        return s->amax_history[(s->hist_pos + s->cfg.history_len - 1) % s->cfg.history_len];
    float m = 0.0f;
    for (int i = 0; i < s->hist_count; i++)
        if (s->amax_history[i] > m) m = s->amax_history[i];
    return m;
}

static void emit(qp_scaling_state *s, qp_event_kind kind, int64_t step, float old_scale, float new_scale,
                 const qp_qstats *st)
{
    s->n_events[kind]++;
    if (!s->cfg.on_event) return;
    qp_recalib_event ev = {step, s->tensor_id, kind, old_scale, new_scale, st->amax,
                           st->n, st->n_sat, st->n_flushed, st->n_nonzero, st->n_nonfinite};
    s->cfg.on_event(&ev, s->cfg.user);
}

void qp_scaling_update(qp_scaling_state *s, int64_t step, const qp_qstats *st)
{
    const qp_format_traits *t = &qp_formats[s->fmt];
    const float used = st->scale;
    float next = used;
    if (s->cfg.mode == QP_SCALING_DELAYED && t->tensor_scale) {
        s->amax_history[s->hist_pos] = st->amax;
        s->hist_pos = (s->hist_pos + 1) % s->cfg.history_len;
        if (s->hist_count < s->cfg.history_len) s->hist_count++;
        const float a = history_amax(s);
        if (a > 0.0f && isfinite(a)) next = qp_scale_from_amax(qp_tensor_scale_range(s->fmt), a, s->cfg.margin);
        s->scale = next;
    }
    /* Scale change: delayed compares the scale before and after the update;
     * current compares this step's scale with the previous step's. */
    if (t->tensor_scale) {
        const float before = s->cfg.mode == QP_SCALING_DELAYED ? used : s->last_scale;
        const float after = s->cfg.mode == QP_SCALING_DELAYED ? next : used;
        const int first_current = s->cfg.mode == QP_SCALING_CURRENT && s->n_updates == 0;
        if (!first_current && before > 0.0f &&
            fabs((double)after - (double)before) / (double)before > s->cfg.scale_change_threshold)
            emit(s, QP_EV_SCALE_CHANGE, step, before, after, st);
    }
    if (st->n > 0) {
        const double f = (double)st->n_sat / (double)st->n;
        if (f > s->cfg.overflow_threshold && s->overflow_ema >= 0.0 && f > 2.0 * s->overflow_ema)
            emit(s, QP_EV_OVERFLOW, step, used, next, st);
        s->overflow_ema = s->overflow_ema < 0.0 ? f : 0.9 * s->overflow_ema + 0.1 * f;
    }
    if (st->n_nonzero > 0) {
        const double f = (double)st->n_flushed / (double)st->n_nonzero;
        if (f > s->cfg.underflow_threshold && s->underflow_ema >= 0.0 && f > 2.0 * s->underflow_ema)
            emit(s, QP_EV_UNDERFLOW, step, used, next, st);
        s->underflow_ema = s->underflow_ema < 0.0 ? f : 0.9 * s->underflow_ema + 0.1 * f;
    }
    if (st->n_nonfinite > 0) emit(s, QP_EV_NONFINITE, step, used, next, st);
    s->last_scale = used;
    s->n_updates++;
}
