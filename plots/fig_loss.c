/* fig_loss.c — training-loss curves, one per recipe (and configuration),
 * the mean over its seeds with a 95% confidence band; validation as markers.
 *
 * Runs are grouped by recipe and configuration (qp_config_diff across
 * seeds: the same model, data and schedule, any seed). Per group, at the
 * steps every member logged: each run's training loss is smoothed (qp_ema,
 * --smooth), and the curve is the seeds' mean with the band of its 95%
 * t-interval (mean +- t(0.975, n-1) sd / sqrt(n); none with one run); the
 * faint line is the mean of the raw losses. Validation: the mean over the
 * group's runs at the evaluation steps they all have. Noise-floor twins
 * given with other runs are grouped like any run of their recipe (qplot all
 * leaves them out: qp_sweep.h).
 *
 * Data file, per group g (0-based, in the order groups first appear):
 *   index 2g:   step  raw_mean  smoothed_mean  ci_lo  ci_hi   (ci: NaN for one run)
 *   index 2g+1: step  val_mean                  (a single "NaN NaN" row when
 *               there is none, so the block exists)
 * Variables: n (groups), colors, titles ("nvfp4 (3 seeds)"), smooth, logx,
 * logy, anyval, anyband, xlo, xhi and, for a single loss value, ylo, yhi;
 * the zoomed panel beside the full view (the last quarter of the steps,
 * where curves a few hundredths of a nat apart overlap at full scale):
 * zxlo, zxhi, zylo, zyhi, fitted to the smoothed means, bands and
 * validation points there (absent when that window holds one value); then
 * width and height make room for two panels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_stats.h"
#include "qp_style.h"
#include "qs_stats.h"

static int same_group(const qp_run *a, const qp_run *b)
{
    return !strcmp(a->recipe, b->recipe) && !qp_config_diff(a, b, 1);
}

/* index of step s in r's /train (or /eval) steps, -1 if absent */
static long at_step(const int64_t *steps, size_t n, int64_t s)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (steps[mid] < s) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && steps[lo] == s ? (long)lo : -1;
}

/* What the zoomed panel must show: every curve's smoothed mean and band
 * (not the noisy raw mean, which would set the scale) and the validation
 * points, with their steps, to pick those in the window afterwards. */
typedef struct {
    double *x, *lo, *hi;
    size_t n, cap;
    int oom;
} zoom_pts;

static void zoom_add(zoom_pts *z, double x, double lo, double hi)
{
    if (!isfinite(x) || !isfinite(lo) || !isfinite(hi)) return;
    if (z->n == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 1024;
        double *a = realloc(z->x, cap * sizeof *a);
        if (a) z->x = a;
        double *b = a ? realloc(z->lo, cap * sizeof *b) : NULL;
        if (b) z->lo = b;
        double *c = b ? realloc(z->hi, cap * sizeof *c) : NULL;
        if (c) z->hi = c;
        if (!c) {
            z->oom = 1;
            return;
        }
        z->cap = cap;
    }
    z->x[z->n] = x, z->lo[z->n] = lo, z->hi[z->n] = hi, z->n++;
}

static int write_group(FILE *data, const qp_run *const *m, int k, double smooth, qp_range *rg, zoom_pts *z)
{
    double **sm = calloc((size_t)k, sizeof *sm);
    if (!sm) return -1;
    int rc = 0;
    for (int j = 0; j < k && !rc; j++) {
        sm[j] = malloc((m[j]->n_train ? m[j]->n_train : 1) * sizeof **sm);
        if (!sm[j]) rc = -1;
        else qp_ema(m[j]->loss, m[j]->n_train, smooth, sm[j]);
    }
    const double tq = k > 1 ? qs_t_quantile(0.975, k - 1) : NAN;
    /* the column names become the CSV twin's header (qp_figcsv): one word each */
    fprintf(data, "# %s (%d run%s): step loss_mean smoothed(EMA %g) ci95_lo ci95_hi\n", m[0]->recipe, k,
            k == 1 ? "" : "s", smooth);
    for (size_t i = 0; !rc && i < m[0]->n_train; i++) {
        const int64_t s = m[0]->step[i];
        double raw = 0, sum = 0, sq = 0;
        int have = 1;
        for (int j = 0; j < k && have; j++) {
            const long at = j ? at_step(m[j]->step, m[j]->n_train, s) : (long)i;
            if (at < 0) have = 0;
            else raw += m[j]->loss[at], sum += sm[j][at], sq += sm[j][at] * sm[j][at];
        }
        if (!have) continue;
        const double mean = sum / k;
        double lo = NAN, hi = NAN;
        if (k > 1) {
            const double h = tq * sqrt(fmax(0.0, (sq - k * mean * mean) / (k - 1))) / sqrt((double)k);
            lo = mean - h, hi = mean + h;
        }
        fprintf(data, "%lld ", (long long)s);
        qp_fig_num(data, raw / k);
        fputc(' ', data);
        qp_fig_num(data, mean);
        fputc(' ', data);
        qp_fig_num(data, lo);
        fputc(' ', data);
        qp_fig_num(data, hi);
        fputc('\n', data);
        qp_range_add(rg, (double)s, raw / k);
        qp_range_add(rg, (double)s, mean);
        zoom_add(z, (double)s, k > 1 ? lo : mean, k > 1 ? hi : mean);
    }
    fprintf(data, "\n\n# %s: step val_loss_mean\n", m[0]->recipe);
    int nval = 0;
    for (size_t i = 0; i < m[0]->n_eval; i++) {
        const int64_t s = m[0]->eval_step[i];
        double sum = 0;
        int have = 1;
        for (int j = 0; j < k && have; j++) {
            const long at = j ? at_step(m[j]->eval_step, m[j]->n_eval, s) : (long)i;
            if (at < 0) have = 0;
            else sum += m[j]->val_loss[at];
        }
        if (!have) continue;
        fprintf(data, "%lld ", (long long)s);
        qp_fig_num(data, sum / k);
        fputc('\n', data);
        qp_range_add(rg, (double)s, sum / k);
        zoom_add(z, (double)s, sum / k, sum / k);
        nval++;
    }
    if (!nval) fputs("NaN NaN\n", data);
    fputs("\n\n", data);
    for (int j = 0; j < k; j++) free(sm[j]);
    free(sm);
    return rc ? rc : nval > 0 ? 1 : 0;
}

/* The zoomed panel: the last quarter of the steps, its y axis fitted to the
 * curves and bands there (with 6% margins), so recipes a few hundredths of a
 * nat apart stand apart. None when the window holds no point or one value. */
#define ZOOM_FROM 0.75
static void zoom_vars(const zoom_pts *z, const qp_range *rg, qp_gpvars *v)
{
    if (!(rg->xhi > rg->xlo)) return;
    const double x0 = rg->xlo + ZOOM_FROM * (rg->xhi - rg->xlo);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < z->n; i++)
        if (z->x[i] >= x0) lo = fmin(lo, z->lo[i]), hi = fmax(hi, z->hi[i]);
    if (!(hi > lo)) return;
    const double m = 0.06 * (hi - lo);
    qp_gpv_num(v, "zxlo", x0);
    qp_gpv_num(v, "zxhi", rg->xhi);
    qp_gpv_num(v, "zylo", lo - m);
    qp_gpv_num(v, "zyhi", hi + m);
    qp_gpv_num(v, "width", 6.6); /* two panels side by side: a page-wide figure */
    qp_gpv_num(v, "height", 3.2);
}

int qp_fig_loss(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen)
{
    int anyval = 0, anyband = 0, ng = 0, rc = -1;
    zoom_pts z = {0};
    qp_range rg;
    qp_range_init(&rg);
    int *group = malloc((size_t)n * sizeof *group);
    const qp_run **members = malloc((size_t)n * sizeof *members);
    const char **colors = calloc((size_t)n, sizeof *colors);
    char (*titles)[QP_LABEL_LEN] = calloc((size_t)n, sizeof *titles);
    const char **tp = calloc((size_t)n, sizeof *tp);
    if (!group || !members || !colors || !titles || !tp) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) group[i] = -1;
    for (int i = 0; i < n; i++) {
        if (group[i] >= 0) continue;
        int k = 0;
        for (int j = i; j < n; j++)
            if (group[j] < 0 && same_group(runs[i], runs[j])) group[j] = ng, members[k++] = runs[j];
        const int w = write_group(data, members, k, o->smooth, &rg, &z);
        if (w < 0 || z.oom) {
            snprintf(err, errlen, "%s: out of memory", runs[i]->path);
            goto out;
        }
        anyval |= w, anyband |= k > 1;
        colors[ng] = qp_recipe_color(runs[i]->recipe);
        if (k > 1) snprintf(titles[ng], QP_LABEL_LEN, "%s (%d seeds)", runs[i]->recipe, k);
        else snprintf(titles[ng], QP_LABEL_LEN, "%s", runs[i]->recipe);
        tp[ng] = titles[ng];
        ng++;
    }
    qp_gpv_int(v, "n", ng);
    qp_gpv_words(v, "colors", colors, ng);
    qp_gpv_words(v, "titles", tp, ng);
    qp_gpv_num(v, "smooth", o->smooth);
    qp_gpv_int(v, "logx", o->logx);
    qp_gpv_int(v, "logy", o->logy);
    qp_gpv_int(v, "anyval", anyval);
    qp_gpv_int(v, "anyband", anyband);
    qp_gpv_num(v, "height", 3.3); /* room for the key above the plot */
    qp_range_vars(&rg, v, o->logx, o->logy);
    zoom_vars(&z, &rg, v);
    rc = 0;
out:
    free(group), free(members), free(colors), free(titles), free(tp);
    free(z.x), free(z.lo), free(z.hi);
    return rc;
}
