/* qp_metrics.c — error metrics of a quantized tensor (see qp_metrics.h). */
#include "qp_metrics.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"

void qp_metrics_compute(const float *x, const float *y, int64_t n, const qp_qstats *st, qp_metrics *m)
{
    memset(m, 0, sizeof *m);
    double xx = 0.0, yy = 0.0, xy = 0.0, ee = 0.0, emax = 0.0, amax = 0.0;
    int64_t nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = x[i], b = y[i];
        if (!isfinite(a)) {
            nonfinite++;
            continue;
        }
        const double e = a - b; /* a NaN/Inf y (a NaN-scaled MX block) propagates on purpose */
        xx += a * a;
        yy += b * b;
        xy += a * b;
        ee += e * e;
        if (!(fabs(e) <= emax)) emax = fabs(e);
        if (fabs(a) > amax) amax = fabs(a);
    }
    m->n = n;
    m->n_nonfinite = nonfinite;
    m->rel_l2 = ee == 0.0 ? 0.0 : (xx == 0.0 ? INFINITY : sqrt(ee / xx));
    m->snr_db = ee == 0.0 ? INFINITY : (xx == 0.0 ? -INFINITY : 10.0 * log10(xx / ee));
    m->max_abs = emax;
    m->cosine = (xx == 0.0 && yy == 0.0) ? 1.0 : (xx == 0.0 || yy == 0.0 ? 0.0 : xy / sqrt(xx * yy));
    m->amax = amax;
    m->scale = 1.0;
    m->bsd.log2_std = m->bsd.saturated_frac = m->bsd.underflow_frac = NAN;
    if (st) {
        m->sat_frac = st->n ? (double)st->n_sat / (double)st->n : 0.0;
        m->elems_saturated_frac = m->sat_frac;
        m->elems_flushed_frac = st->n ? (double)st->n_flushed / (double)st->n : 0.0;
        m->zero_frac = st->n_nonzero ? (double)st->n_flushed / (double)st->n_nonzero : 0.0;
        m->amax = st->amax;
        m->scale = st->scale;
        m->n_blocks = st->n_blocks;
        m->block_scale_min = st->block_scale_min;
        m->block_scale_max = st->block_scale_max;
        m->block_scale_log2_mean = st->block_scale_log2_mean;
    }
}

int qp_metrics_for_format(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, const qp_qopts *o, int rht,
                          uint64_t rht_seed, float *scratch, qp_metrics *m)
{
    if (rht && cols % 16) return -1;
    const int64_t n = rows * cols;
    float *own = NULL, *ref = NULL;
    if (!scratch) scratch = own = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!scratch) return -1;
    const float *src = x;
    if (rht) {
        ref = malloc((size_t)(n ? n : 1) * sizeof(float));
        if (!ref) {
            free(own);
            return -1;
        }
        memcpy(ref, x, (size_t)n * sizeof(float));
        if (qp_rht16_kind(ref, rows, cols, rht, rht_seed)) {
            free(ref);
            free(own);
            return -1;
        }
        src = ref;
    }
    qp_qstats st;
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) {
        free(ref);
        free(own);
        return -1;
    }
    qp_quantize(src, &q, o, &st);
    qp_dequantize(&q, scratch);
    qp_metrics_compute(src, scratch, n, &st, m);
    qp_block_scale_dist(&q, src, &m->bsd);
    qp_qtensor_free(&q);
    free(ref);
    free(own);
    return 0;
}

uint64_t qp_metrics_name_stream(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = name; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void qp_block_scale_dist(const qp_qtensor *q, const float *x, qp_bscale_dist *d)
{
    memset(d, 0, sizeof *d);
    d->log2_std = d->saturated_frac = d->underflow_frac = NAN;
    if (!qp_fmt_valid(q->fmt) || !q->scales) return;
    const qp_format_traits *t = &qp_formats[q->fmt];
    const float f32_floor = 1.0f / FLT_MAX;
    double sum = 0.0, range = 0.0;
    int64_t live = 0, sat = 0, under = 0;
    /* first pass: the histogram, the counts, the mean of log2 s */
    for (int pass = 0; pass < 2; pass++) {
        const double mean = live ? sum / (double)live : 0.0;
        double var = 0.0;
        for (int64_t br = 0; br < q->scale_rows; br++)
            for (int64_t bc = 0; bc < q->scale_cols; bc++) {
                const uint8_t *stored = q->scales + (br * q->scale_cols + bc) * t->scale_bytes;
                const float s = qp_block_scale_decode(t->block_scale, stored);
                const int ok = s > 0.0f && isfinite(s);
                if (pass) {
                    if (ok) var += (log2((double)s) - mean) * (log2((double)s) - mean);
                    continue;
                }
                d->n_blocks++;
                d->hist[s == 0.0f ? 0 : !ok ? 1 : qp_floor_log2(s) + QP_BSHIST_OFFSET]++;
                if (ok) sum += log2((double)s), live++;
                float amax = 0.0f, amin = INFINITY;
                for (int64_t r = br * t->block_rows; r < (br + 1) * t->block_rows && r < q->rows; r++)
                    for (int64_t c = bc * t->block_cols; c < (bc + 1) * t->block_cols && c < q->cols; c++) {
                        const float a = fabsf(x[r * q->cols + c]);
                        if (!isfinite(a) || a == 0.0f) continue;
                        if (a > amax) amax = a;
                        if (a < amin) amin = a;
                    }
                if (amax > 0.0f && log2((double)amax / (double)amin) > range) range = log2((double)amax / (double)amin);
                switch (t->block_scale) {
                case QP_SCALE_UE4M3:
                    sat += (stored[0] & 0x7F) == 0x7E;
                    under += amax > 0.0f && (stored[0] & 0x7F) == 0;
                    break;
                case QP_SCALE_E8M0:
                    sat += stored[0] == 0xFE;
                    under += amax > 0.0f && stored[0] == 0;
                    break;
                case QP_SCALE_F32: under += amax > 0.0f && s == f32_floor; break;
                case QP_SCALE_NONE:
                case QP_SCALE_TENSOR:
                case QP_SCALE_COUNT: break;
                }
            }
        if (pass) d->log2_std = live ? sqrt(var / (double)live) : NAN;
    }
    d->saturated_frac = d->n_blocks ? (double)sat / (double)d->n_blocks : NAN;
    d->underflow_frac = d->n_blocks ? (double)under / (double)d->n_blocks : NAN;
    d->dynamic_range_max_log2 = range;
}
