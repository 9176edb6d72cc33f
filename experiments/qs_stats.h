/* qs_stats.h — confidence intervals of a mean over seeds.
 *
 * Owns: how a study turns per-seed paired gaps into an interval and a
 * verdict, so the summary, its tests and the paper use one definition (the
 * paper's paper/intervals.py calls it through libqpstats.so):
 *   n < 2         no interval (NaN), not resolved;
 *   n >= 2        Student t: mean +- t(1-(1-level)/2, n-1) * sd / sqrt(n),
 *                 sd the sample standard deviation (n-1);
 *   resolved      the interval excludes 0 (lo > 0 or hi < 0).
 * Why t for every n: a study has 2 to 10 seeds, where a percentile
 * bootstrap of the mean covers too little (about 85% for a nominal 95% at 5
 * seeds: it uses sd with n in the denominator and normal tails); the t
 * interval covers 95% on normal draws and at least 93% on skewed ones
 * (gamma, shape 4) from n = 3, which tests/sweep/test_coverage.c checks by
 * simulation.
 * The t quantile comes from the regularized incomplete beta function
 * (continued fraction) inverted by bisection and Newton steps, to about
 * 1e-12 relative. */
#ifndef QS_STATS_H
#define QS_STATS_H

typedef struct {
    int n;
    double mean, sd, lo, hi;
    int resolved;          /* 0/1 */
    const char *method;    /* "t" or "none" */
} qs_ci;

/* Interval of a ratio of paired means, mean(a) / mean(b), over pairs
 * (a[k], b[k]) with both finite (a block's gap and the full recipe's gap of
 * one seed), by Fieller's theorem for paired samples: the ratios rho whose
 * per-seed differences d_k = a_k - rho b_k have a mean the t-test at `level`
 * (df n-1) does not reject from 0 — the set where
 *   (mean(a) - rho mean(b))^2 <= t^2 (s_aa - 2 rho s_ab + rho^2 s_bb) / n.
 * Bounded (method "fieller") exactly when mean(b) is resolved from 0 by its
 * own t-interval; otherwise the set is unbounded (lo = -inf, hi = +inf,
 * method "unbounded"): a share of a gap that is not resolved has no finite
 * interval. n < 2: no interval ("none"). resolved: lo > 0 or hi < 0, which
 * for a bounded set is mean(a)'s own t-interval excluding 0. The t rule for
 * every n (no bootstrap): percentile resamples of a ratio fail where the
 * denominator's resamples near 0, which is the case this must report. */
typedef struct {
    int n;
    double ratio, mean_a, mean_b, lo, hi;
    int resolved;
    const char *method;    /* "fieller", "unbounded" or "none" */
} qs_ratio;

void qs_ratio_ci(const double *a, const double *b, int n, double level, qs_ratio *out);

/* Paired samples (a[k], b[k]), the pairs with both values finite (one
 * seed's gap at two values of a contrasted axis): each side's mean and the
 * mean of the differences b - a, each with its Student t interval at `level`
 * for every n >= 2 (mean +- t(1-(1-level)/2, n-1) * sd / sqrt(n); no
 * bootstrap: the difference's interval is the paired t-test's, and its two
 * sides beside it follow the same rule); method "t", or "none" below 2
 * pairs (NaN bounds, not resolved). resolved: the interval excludes 0. */
typedef struct {
    int n;                 /* pairs with both values finite */
    qs_ci a, b, diff;      /* diff: of b - a */
} qs_paired;

void qs_paired_ci(const double *a, const double *b, int n, double level, qs_paired *out);

/* Student t CDF and quantile with df >= 1 degrees of freedom (df may be
 * fractional); the quantile of p in (0, 1). The last quantile asked for is
 * kept per thread, so intervals at one level and n cost one inversion. */
double qs_t_cdf(double t, double df);
double qs_t_quantile(double p, double df);

/* Interval of the mean of the finite values of x[0..n) at `level` (0.95).
 * Non-finite values are skipped. */
void qs_mean_ci(const double *x, int n, double level, qs_ci *out);

#endif
