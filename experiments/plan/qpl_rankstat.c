/* qpl_rankstat.c — Spearman's rank correlation, its bootstrap over seeds
 * and the ranking of parts by a score (declared in qpl_predict.h): pure
 * arithmetic, no I/O, so the tests drive it against scipy. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "qpl_predict.h"

static const double *sort_key; /* qsort has no context argument */
static int by_key(const void *a, const void *b)
{
    const double x = sort_key[*(const int *)a], y = sort_key[*(const int *)b];
    return x < y ? -1 : x > y ? 1 : (*(const int *)a - *(const int *)b);
}

/* average ranks (1-based) of x[0..n) into r */
static void ranks(const double *x, int n, double *r, int *idx)
{
    for (int i = 0; i < n; i++) idx[i] = i;
    sort_key = x;
    qsort(idx, (size_t)n, sizeof *idx, by_key);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && x[idx[j + 1]] == x[idx[i]]) j++;
        for (int k = i; k <= j; k++) r[idx[k]] = 0.5 * (i + j) + 1.0;
        i = j + 1;
    }
}

double qpl_spearman(const double *x, const double *y, int n)
{
    double *fx = malloc((size_t)(n ? n : 1) * sizeof *fx), *fy = malloc((size_t)(n ? n : 1) * sizeof *fy);
    double *rx = malloc((size_t)(n ? n : 1) * sizeof *rx), *ry = malloc((size_t)(n ? n : 1) * sizeof *ry);
    int *idx = malloc((size_t)(n ? n : 1) * sizeof *idx), m = 0;
    double rho = NAN;
    if (fx && fy && rx && ry && idx) {
        for (int i = 0; i < n; i++)
            if (isfinite(x[i]) && isfinite(y[i])) fx[m] = x[i], fy[m] = y[i], m++;
        if (m >= 2) {
            ranks(fx, m, rx, idx);
            ranks(fy, m, ry, idx);
            double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
            for (int i = 0; i < m; i++) mx += rx[i], my += ry[i];
            mx /= m, my /= m;
            for (int i = 0; i < m; i++)
                sxy += (rx[i] - mx) * (ry[i] - my), sxx += (rx[i] - mx) * (rx[i] - mx), syy += (ry[i] - my) * (ry[i] - my);
            if (sxx > 0 && syy > 0) rho = sxy / sqrt(sxx * syy);
        }
    }
    free(fx), free(fy), free(rx), free(ry), free(idx);
    return rho;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* splitmix64: a fixed, portable generator (the interval is deterministic) */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void mean_benefit(const double *benefit, int nparts, const int *pick, int m, double *out)
{
    for (int p = 0; p < nparts; p++) {
        double s = 0;
        int n = 0;
        for (int k = 0; k < m; k++) {
            const double v = benefit[pick[k] * nparts + p];
            if (isfinite(v)) s += v, n++;
        }
        out[p] = n ? s / n : NAN;
    }
}

void qpl_spearman_boot(const double *score, const double *benefit, int nparts, int nseeds, int B, double *rho,
                       double *lo, double *hi)
{
    *rho = *lo = *hi = NAN;
    double *mb = calloc((size_t)(nparts ? nparts : 1), sizeof *mb), *rs = malloc((size_t)(B ? B : 1) * sizeof *rs);
    int *pick = malloc((size_t)(nseeds ? nseeds : 1) * sizeof *pick);
    if (!mb || !rs || !pick || nseeds < 1) goto out;
    for (int k = 0; k < nseeds; k++) pick[k] = k;
    mean_benefit(benefit, nparts, pick, nseeds, mb);
    *rho = qpl_spearman(score, mb, nparts);
    if (nseeds < 2 || !isfinite(*rho)) goto out;
    uint64_t st = 0x5EEDull;
    int m = 0;
    for (int b = 0; b < B; b++) {
        for (int k = 0; k < nseeds; k++) pick[k] = (int)(next(&st) % (uint64_t)nseeds);
        mean_benefit(benefit, nparts, pick, nseeds, mb);
        const double r = qpl_spearman(score, mb, nparts);
        if (isfinite(r)) rs[m++] = r;
    }
    if (m) {
        qsort(rs, (size_t)m, sizeof *rs, cmp_double);
        /* percentiles by linear interpolation (numpy's default) */
        const double q[2] = {0.025 * (m - 1), 0.975 * (m - 1)};
        double *o[2] = {lo, hi};
        for (int i = 0; i < 2; i++) {
            const int a = (int)floor(q[i]), c = a + 1 < m ? a + 1 : a;
            *o[i] = rs[a] + (q[i] - a) * (rs[c] - rs[a]);
        }
    }
out:
    free(mb), free(rs), free(pick);
}

void qpl_rank(const double *score, int nparts, int *order)
{
    /* falling score, ties in part order, NaN last: sort on -score with NaN as +inf */
    double *key = malloc((size_t)(nparts ? nparts : 1) * sizeof *key);
    if (!key) {
        for (int i = 0; i < nparts; i++) order[i] = i;
        return;
    }
    for (int i = 0; i < nparts; i++) key[i] = isfinite(score[i]) ? -score[i] : INFINITY;
    for (int i = 0; i < nparts; i++) order[i] = i;
    sort_key = key;
    qsort(order, (size_t)nparts, sizeof *order, by_key);
    free(key);
}
