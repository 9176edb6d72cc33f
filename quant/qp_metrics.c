/* qp_metrics.c — error metrics of a quantized tensor (see qp_metrics.h). */
#include "qp_metrics.h"

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
    if (st) {
        m->sat_frac = st->n ? (double)st->n_sat / (double)st->n : 0.0;
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
    qp_qdq(fmt, src, scratch, rows, cols, o, &st);
    qp_metrics_compute(src, scratch, n, &st, m);
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
