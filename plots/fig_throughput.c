/* fig_throughput.c — training speed: tokens/s per run, and where each
 * recipe's step time goes.
 *
 * Top panel: the median of /train/tokens_per_s per run with its
 * interquartile range as an error bar (this machine's step times vary by
 * tens of percent, so the spread belongs in the figure), coloured by recipe
 * and grouped by it: a recipe's runs stand side by side (in the order
 * given) under one label, the recipe, so a sweep of many seeds keeps
 * readable labels. The OpenMP threads the steps ran on (qtrain chooses them
 * at run time under --threads auto, and a run's speed depends on them) are
 * said once when every run used the same, else above each bar. Bottom
 * panel: one stacked bar per recipe, the mean step time split into the run
 * file's phases (qp_runschema.h qp_phases: GEMM, quantization, attention,
 * row ops, optimizer, data wait, communication) and what is left ("other"),
 * averaged over the recipe's runs and every step but each run's first
 * (where oneDNN builds its kernels); the key beside it lists the phases
 * that took any time. A run written before the profile (schema version 1)
 * or with it off (phases NaN) adds its steps to "other" only.
 *
 * Data file, index 0 (series "runs"), one row per run:
 *   x  "label"  rgb(int)  median_tok_s  q25  q75  wait_pct  threads_min  threads_max
 * x: the bar's position (recipe groups one slot apart); threads 0 for a
 * file written before the column.
 * index 1 (series "phases per recipe, mean ms per step"), one row per recipe:
 *   i  "recipe"  <phase>_ms for each phase in qp_phases order  other_ms
 * Variables: n (runs), nrec (recipes), xmax (the last bar's x), rpos and
 * rnames (each recipe group's centre and name: the top panel's labels),
 * phases (the phases' labels, words), shown (the 1-based phases with time,
 * words), threads (the threads every run used, "" when they differ). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_stats.h"
#include "qp_style.h"

/* Sum of each phase's ms and of step_ms over a run's rows but the first. */
static void run_phases(const qp_run *r, double ph[QP_PHASE_COUNT], double *total, double *steps)
{
    for (size_t k = r->n_train > 1 ? 1 : 0; k < r->n_train; k++) {
        *total += r->step_ms[k];
        *steps += 1;
        for (int p = 0; p < QP_PHASE_COUNT; p++) {
            const double v = r->phase_ms[p] ? r->phase_ms[p][k] : NAN;
            if (isfinite(v)) ph[p] += v;
        }
    }
}

int qp_fig_throughput(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                      size_t errlen)
{
    (void)o;
    /* the bars in recipe groups: group g = the g-th recipe to appear */
    int *order = malloc((size_t)n * sizeof *order);
    double *x = malloc((size_t)n * sizeof *x);
    qp_words rpos = {0}, rnames = {0}, shown = {0};
    if (!order || !x) {
        free(order), free(x);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int k = 0;
    double at = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(runs[j]->recipe, runs[i]->recipe);
        if (seen) continue;
        const double first = at;
        for (int j = i; j < n; j++)
            if (!strcmp(runs[j]->recipe, runs[i]->recipe)) order[k++] = j, x[j] = at, at += 1;
        qp_words_add(&rpos, "%g", (first + at - 1) / 2);
        qp_words_add(&rnames, "%s", runs[i]->recipe);
        at += 0.6; /* the gap between groups */
    }
    int same_threads = 1;
    int64_t thr0 = -1;
    fputs("# runs: x label rgb median_tokens_per_s q25 q75 data_wait_pct threads_min threads_max\n", data);
    for (int q = 0; q < n; q++) {
        const int i = order[q];
        const qp_run *r = runs[i];
        char label[QP_LABEL_LEN];
        qp_run_label(runs, n, i, label, sizeof label);
        double wait = 0, total = 0;
        for (size_t k2 = 0; k2 < r->n_train; k2++) {
            wait += r->data_wait_ms[k2];
            total += r->step_ms[k2];
        }
        long rgb = strtol(qp_recipe_color(r->recipe) + 1, NULL, 16);
        fprintf(data, "%g \"%s\" %ld ", x[i], label, rgb);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.5));
        fputc(' ', data);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.25));
        fputc(' ', data);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.75));
        fputc(' ', data);
        qp_fig_num(data, total > 0 ? 100 * wait / total : 0);
        int64_t tmin = 0, tmax = 0;
        for (size_t k2 = 0; r->threads && k2 < r->n_train; k2++) {
            if (!k2 || r->threads[k2] < tmin) tmin = r->threads[k2];
            if (!k2 || r->threads[k2] > tmax) tmax = r->threads[k2];
        }
        fprintf(data, " %lld %lld\n", (long long)tmin, (long long)tmax);
        if (tmin != tmax || (thr0 >= 0 && tmin != thr0) || tmin <= 0) same_threads = 0;
        thr0 = tmin;
    }
    fputs("\n\n# phases per recipe, mean ms per step: i recipe", data);
    for (int p = 0; p < QP_PHASE_COUNT; p++) fprintf(data, " %s", qp_phases[p].column);
    fputs(" other_ms\n", data);
    int nrec = 0, any[QP_PHASE_COUNT + 1] = {0};
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(runs[j]->recipe, runs[i]->recipe);
        if (seen) continue; /* drawn with the recipe's first run */
        double ph[QP_PHASE_COUNT] = {0}, total = 0, steps = 0;
        for (int j = i; j < n; j++)
            if (!strcmp(runs[j]->recipe, runs[i]->recipe)) run_phases(runs[j], ph, &total, &steps);
        char name[QP_LABEL_LEN];
        snprintf(name, sizeof name, "%s", runs[i]->recipe);
        for (char *c = name; *c; c++)
            if (*c == '"') *c = '_';
        fprintf(data, "%d \"%s\"", nrec++, name);
        double other = total;
        for (int p = 0; p < QP_PHASE_COUNT; p++) {
            fputc(' ', data);
            qp_fig_num(data, steps > 0 ? ph[p] / steps : 0);
            other -= ph[p];
        }
        fputc(' ', data);
        qp_fig_num(data, steps > 0 && other > 0 ? other / steps : 0);
        fputc('\n', data);
        for (int p = 0; p < QP_PHASE_COUNT; p++) any[p] |= steps > 0 && ph[p] / steps > 0;
        any[QP_PHASE_COUNT] |= steps > 0 && other / steps > 0;
    }
    fputs("\n\n", data);
    for (int p = 0; p <= QP_PHASE_COUNT; p++)
        if (any[p]) qp_words_add(&shown, "%d", p + 1);
    qp_gpv_int(v, "n", n);
    qp_gpv_int(v, "nrec", nrec);
    qp_gpv_num(v, "xmax", at - 1.6);
    qp_gpv_words(v, "rpos", (const char *const *)rpos.w, rpos.n);
    qp_gpv_words(v, "rnames", (const char *const *)rnames.w, rnames.n);
    qp_gpv_words(v, "shown", (const char *const *)shown.w, shown.n);
    char thr[48] = "";
    if (same_threads && thr0 > 0) snprintf(thr, sizeof thr, "%lld", (long long)thr0);
    qp_gpv_str(v, "threads", thr);
    const char *labels[QP_PHASE_COUNT + 1];
    for (int p = 0; p < QP_PHASE_COUNT; p++) labels[p] = qp_phases[p].label;
    labels[QP_PHASE_COUNT] = "other";
    qp_gpv_words(v, "phases", labels, QP_PHASE_COUNT + 1);
    const int oom = rpos.oom || rnames.oom || shown.oom;
    qp_words_free(&rpos), qp_words_free(&rnames), qp_words_free(&shown);
    free(order), free(x);
    if (oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
