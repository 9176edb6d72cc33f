/* fig_throughput.c — training speed: tokens/s per run, and where each
 * recipe's step time goes.
 *
 * Top panel: the median of /train/tokens_per_s per run with its
 * interquartile range as an error bar (this machine's step times vary by
 * tens of percent, so the spread belongs in the figure), each bar labelled
 * with its run (qp_run_label) and coloured by recipe. Bottom panel: one
 * stacked bar per recipe, the mean step time split into the run file's
 * phases (qp_runschema.h qp_phases: GEMM, quantization, attention, row ops,
 * optimizer, data wait, communication) and what is left ("other"), averaged
 * over the recipe's runs and every step but each run's first (where oneDNN
 * builds its kernels). A run written before the profile (schema version 1)
 * or with it off (phases NaN) adds its steps to "other" only.
 *
 * Data file, index 0 (series "runs"), one row per run:
 *   i  "label"  rgb(int)  median_tok_s  q25  q75  wait_pct  threads_min  threads_max
 * the OpenMP threads its steps ran on (qtrain chooses them at run time
 * under --threads auto, and a run's speed depends on them; 0 for a file
 * written before the column), printed above its bar.
 * index 1 (series "phases per recipe, mean ms per step"), one row per recipe:
 *   i  "recipe"  <phase>_ms for each phase in qp_phases order  other_ms
 * Variables: n (runs), nrec (recipes), phases (the phases' labels, words). */
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
    (void)o, (void)err, (void)errlen;
    fputs("# runs: i label rgb median_tokens_per_s q25 q75 data_wait_pct threads_min threads_max\n", data);
    for (int i = 0; i < n; i++) {
        const qp_run *r = runs[i];
        char label[QP_LABEL_LEN];
        qp_run_label(runs, n, i, label, sizeof label);
        double wait = 0, total = 0;
        for (size_t k = 0; k < r->n_train; k++) {
            wait += r->data_wait_ms[k];
            total += r->step_ms[k];
        }
        long rgb = strtol(qp_recipe_color(r->recipe) + 1, NULL, 16);
        fprintf(data, "%d \"%s\" %ld ", i, label, rgb);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.5));
        fputc(' ', data);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.25));
        fputc(' ', data);
        qp_fig_num(data, qp_quantile(r->tokens_per_s, r->n_train, 0.75));
        fputc(' ', data);
        qp_fig_num(data, total > 0 ? 100 * wait / total : 0);
        int64_t tmin = 0, tmax = 0;
        for (size_t k = 0; r->threads && k < r->n_train; k++) {
            if (!k || r->threads[k] < tmin) tmin = r->threads[k];
            if (!k || r->threads[k] > tmax) tmax = r->threads[k];
        }
        fprintf(data, " %lld %lld\n", (long long)tmin, (long long)tmax);
    }
    fputs("\n\n# phases per recipe, mean ms per step: i recipe", data);
    for (int p = 0; p < QP_PHASE_COUNT; p++) fprintf(data, " %s", qp_phases[p].column);
    fputs(" other_ms\n", data);
    int nrec = 0;
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
    }
    fputs("\n\n", data);
    qp_gpv_int(v, "n", n);
    qp_gpv_int(v, "nrec", nrec);
    const char *labels[QP_PHASE_COUNT + 1];
    for (int p = 0; p < QP_PHASE_COUNT; p++) labels[p] = qp_phases[p].label;
    labels[QP_PHASE_COUNT] = "other";
    qp_gpv_words(v, "phases", labels, QP_PHASE_COUNT + 1);
    return 0;
}
