/* qs_stats.c — intervals over seeds (see qs_stats.h). */
#include "qs_stats.h"

#include <math.h>
#include <stdlib.h>

/* Continued fraction of the incomplete beta function (modified Lentz). */
static double betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-16) break;
    }
    return h;
}

/* Regularized incomplete beta I_x(a, b). */
static double ibeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return exp(lbt) * betacf(a, b, x) / a;
    return 1.0 - exp(lbt) * betacf(b, a, 1.0 - x) / b;
}

double qs_t_cdf(double t, double df)
{
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    /* the tail through I_{df/(df+t^2)}(df/2, 1/2), which keeps its digits for large |t| */
    const double tail = 0.5 * ibeta(0.5 * df, 0.5, df / (df + t * t));
    return t > 0 ? 1.0 - tail : tail;
}

static double t_pdf(double t, double df)
{
    return exp(lgamma(0.5 * (df + 1)) - lgamma(0.5 * df) - 0.5 * log(df * M_PI) -
               0.5 * (df + 1) * log1p(t * t / df));
}

static double t_quantile(double p, double df)
{
    if (p == 0.5) return 0.0;
    if (p < 0.5) return -t_quantile(1.0 - p, df);
    double lo = 0, hi = 1;
    while (qs_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        const double mid = 0.5 * (lo + hi);
        if (qs_t_cdf(mid, df) < p) lo = mid;
        else hi = mid;
    }
    double t = 0.5 * (lo + hi);
    for (int i = 0; i < 3; i++) { /* Newton polish */
        const double f = t_pdf(t, df);
        if (!(f > 0)) break;
        const double nt = t - (qs_t_cdf(t, df) - p) / f;
        if (!(nt > lo && nt < hi)) break;
        t = nt;
    }
    return t;
}

double qs_t_quantile(double p, double df)
{
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    static _Thread_local double last_p = NAN, last_df = NAN, last_q = NAN;
    if (p != last_p || df != last_df) last_q = t_quantile(p, df), last_p = p, last_df = df;
    return last_q;
}

/* Student t bounds around c->mean from c->sd and c->n (>= 2). */
static void t_bounds(qs_ci *c, double level)
{
    const double h = qs_t_quantile(1.0 - (1.0 - level) / 2, c->n - 1) * c->sd / sqrt((double)c->n);
    c->lo = c->mean - h, c->hi = c->mean + h;
    c->method = "t";
}

/* mean, sd and the t interval of v[0..m), all finite */
static void t_ci(const double *v, int m, double level, qs_ci *out)
{
    *out = (qs_ci){m, NAN, NAN, NAN, NAN, 0, "none"};
    if (m == 0) return;
    double s = 0;
    for (int i = 0; i < m; i++) s += v[i];
    out->mean = s / m;
    if (m < 2) return;
    double q = 0;
    for (int i = 0; i < m; i++) q += (v[i] - out->mean) * (v[i] - out->mean);
    out->sd = sqrt(q / (m - 1));
    t_bounds(out, level);
    out->resolved = out->lo > 0 || out->hi < 0;
}

void qs_paired_ci(const double *a, const double *b, int n, double level, qs_paired *out)
{
    double *v = malloc((size_t)(n > 0 ? 3 * n : 1) * sizeof *v);
    int m = 0;
    for (int i = 0; v && i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            v[m] = a[i], v[n + m] = b[i], v[2 * n + m] = b[i] - a[i];
            m++;
        }
    if (!v) m = 0;
    out->n = m;
    t_ci(v, m, level, &out->a);
    t_ci(v ? v + n : v, m, level, &out->b);
    t_ci(v ? v + 2 * n : v, m, level, &out->diff);
    free(v);
}

void qs_mean_ci(const double *x, int n, double level, qs_ci *out)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    int m = 0;
    for (int i = 0; v && i < n; i++)
        if (isfinite(x[i])) v[m++] = x[i];
    t_ci(v, m, level, out);
    free(v);
}

void qs_ratio_ci(const double *a, const double *b, int n, double level, qs_ratio *out)
{
    *out = (qs_ratio){0, NAN, NAN, NAN, NAN, NAN, 0, "none"};
    double sa = 0, sb = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) sa += a[i], sb += b[i], m++;
    out->n = m;
    if (!m) return;
    const double ma = sa / m, mb = sb / m;
    out->mean_a = ma, out->mean_b = mb;
    out->ratio = mb != 0 ? ma / mb : NAN;
    if (m < 2) return;
    double saa = 0, sbb = 0, sab = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            saa += (a[i] - ma) * (a[i] - ma);
            sbb += (b[i] - mb) * (b[i] - mb);
            sab += (a[i] - ma) * (b[i] - mb);
        }
    saa /= m - 1, sbb /= m - 1, sab /= m - 1;
    const double t = qs_t_quantile(1.0 - (1.0 - level) / 2, m - 1), q = t * t / m;
    /* A rho^2 + B rho + C <= 0 */
    const double A = mb * mb - q * sbb, B = -2.0 * (ma * mb - q * sab), C = ma * ma - q * saa;
    if (!(A > 0)) {
        out->lo = -INFINITY, out->hi = INFINITY;
        out->method = "unbounded";
        return;
    }
    double disc = B * B - 4.0 * A * C;
    if (disc < 0) disc = 0; /* >= 0 in exact arithmetic: the estimate itself is inside */
    const double r = sqrt(disc);
    /* the root without cancellation, then the other from their product C / A */
    const double qq = -0.5 * (B + (B >= 0 ? r : -r));
    double r1 = qq / A, r2 = qq != 0 ? C / qq : r1;
    if (r1 > r2) {
        const double tmp = r1;
        r1 = r2, r2 = tmp;
    }
    out->lo = r1, out->hi = r2;
    out->method = "fieller";
    out->resolved = r1 > 0 || r2 < 0;
}
