/* qp_outliers.c — outlier statistics of a GEMM input (see qp_outliers.h). */
#include "qp_outliers.h"

#include <stdlib.h>
#include <string.h>

static int cmp_desc(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

void qp_outlier_finish(const qp_outlier_col *cols, int64_t M, int C, double *scratch, qp_outlier_row *r)
{
    double n = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, amax = 0, best = -1;
    int64_t top = 0;
    for (int c = 0; c < C; c++) {
        const qp_outlier_col *o = &cols[c];
        n += o->n, s1 += o->s1, s2 += o->s2, s3 += o->s3, s4 += o->s4;
        amax = o->amax > amax ? o->amax : amax;
        if (o->s2 > best) best = o->s2, top = c;
    }
    r->tokens = M, r->channels = C, r->amax = amax, r->top_channel = top;
    const double mu = n > 0 ? s1 / n : 0.0;
    /* central moments from the raw ones (double: ample for these sizes) */
    const double m2 = n > 0 ? s2 / n - mu * mu : 0.0;
    const double m4 = n > 0 ? s4 / n - 4 * mu * s3 / n + 6 * mu * mu * s2 / n - 3 * mu * mu * mu * mu : 0.0;
    r->kurtosis = m2 > 0 ? m4 / (m2 * m2) : NAN;
    const int k = qp_outlier_topk(C);
    r->topk = k;
    for (int c = 0; c < C; c++) scratch[c] = cols[c].s2;
    qsort(scratch, (size_t)C, sizeof *scratch, cmp_desc);
    double top_e = 0;
    for (int c = 0; c < k && c < C; c++) top_e += scratch[c];
    r->topk_frac = s2 > 0 ? top_e / s2 : NAN;
    for (int c = 0; c < C; c++) scratch[c] = cols[c].amax;
    qsort(scratch, (size_t)C, sizeof *scratch, cmp_desc);
    const double med = C % 2 ? scratch[C / 2] : 0.5 * (scratch[C / 2 - 1] + scratch[C / 2]);
    r->chan_amax_ratio = med > 0 ? scratch[0] / med : NAN;
}

void qp_outlier_stats(const float *X, int64_t M, int C, qp_outlier_col *cols, double *scratch, qp_outlier_row *r)
{
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) qp_outlier_column(&cols[c], X, M, C, c);
    qp_outlier_finish(cols, M, C, scratch, r);
}
