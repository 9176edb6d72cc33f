/* qs_stats.h — confidence intervals of a mean over seeds.
 *
 * Owns: how a study turns per-seed paired gaps into an interval and a
 * verdict, so the summary, its tests and the paper use one definition:
 *   n < 2         no interval (NaN), not resolved;
 *   2 <= n < 5    Student t: mean +- t(1-(1-level)/2, n-1) * sd / sqrt(n),
 *                 sd the sample standard deviation (n-1);
 *   n >= 5        percentile bootstrap of the mean: QS_BOOT_RESAMPLES
 *                 resamples of n values with replacement (a fixed-seed
 *                 SplitMix64 stream: the same numbers every time), the
 *                 (1-level)/2 and 1-(1-level)/2 quantiles of their means
 *                 (linear interpolation between order statistics, numpy's
 *                 default);
 *   resolved      the interval excludes 0 (lo > 0 or hi < 0).
 * The t quantile comes from the regularized incomplete beta function
 * (continued fraction) inverted by bisection and Newton steps, to about
 * 1e-12 relative. */
#ifndef QS_STATS_H
#define QS_STATS_H

#define QS_BOOT_MIN_N 5
#define QS_BOOT_RESAMPLES 20000

typedef struct {
    int n;
    double mean, sd, lo, hi;
    int resolved;          /* 0/1 */
    const char *method;    /* "t", "bootstrap" or "none" */
} qs_ci;

/* Student t CDF and quantile with df >= 1 degrees of freedom (df may be
 * fractional); the quantile of p in (0, 1). */
double qs_t_cdf(double t, double df);
double qs_t_quantile(double p, double df);

/* Interval of the mean of the finite values of x[0..n) at `level` (0.95).
 * Non-finite values are skipped. */
void qs_mean_ci(const double *x, int n, double level, qs_ci *out);

#endif
