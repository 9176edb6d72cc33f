/* qp_stats.c — smoothing and quantiles (see qp_stats.h). */
#include "qp_stats.h"

#include <math.h>
#include <stdlib.h>

void qp_ema(const double *x, size_t n, double a, double *out)
{
    double m = 0, decay = 1, last = NAN; /* decay = a^(number of finite inputs) */
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (isfinite(v)) {
            m = a * m + (1 - a) * v;
            decay *= a;
            last = m / (1 - decay);
        }
        out[i] = last;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qp_quantile(const double *x, size_t n, double q)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return NAN;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) v[m++] = x[i];
    double r = NAN;
    if (m) {
        qsort(v, m, sizeof *v, cmp_double);
        double pos = q * (double)(m - 1);
        size_t lo = (size_t)floor(pos);
        size_t hi = lo + 1 < m ? lo + 1 : lo;
        r = v[lo] + (pos - (double)lo) * (v[hi] - v[lo]);
    }
    free(v);
    return r;
}
