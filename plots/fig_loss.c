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
 * logy, anyval, anyband, xlo, xhi and, for a single loss value, ylo, yhi. */
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

static int write_group(FILE *data, const qp_run *const *m, int k, double smooth, qp_range *rg)
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
        nval++;
    }
    if (!nval) fputs("NaN NaN\n", data);
    fputs("\n\n", data);
    for (int j = 0; j < k; j++) free(sm[j]);
    free(sm);
    return rc ? rc : nval > 0 ? 1 : 0;
}

int qp_fig_loss(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen)
{
    int anyval = 0, anyband = 0, ng = 0, rc = -1;
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
        const int w = write_group(data, members, k, o->smooth, &rg);
        if (w < 0) {
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
    rc = 0;
out:
    free(group), free(members), free(colors), free(titles), free(tp);
    return rc;
}
