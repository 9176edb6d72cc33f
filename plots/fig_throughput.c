/* fig_throughput.c — training speed per run: tokens/s and data-wait share.
 *
 * Top panel: the median of /train/tokens_per_s with its interquartile range
 * as an error bar (this machine's step times vary by tens of percent, so
 * the spread belongs in the figure); bottom panel: the share of wall time
 * spent waiting for batches, 100 * sum(data_wait_ms) / sum(step_ms). The
 * key is the x axis: each bar is labelled with its run (qp_run_label) and
 * coloured by recipe.
 *
 * Data file, index 0, one row per run:
 *   i  "label"  rgb(int)  median_tok_s  q25  q75  wait_pct
 * Variables: n. */
#include <stdlib.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_stats.h"
#include "qp_style.h"

int qp_fig_throughput(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                      size_t errlen)
{
    (void)o, (void)err, (void)errlen;
    fputs("# i label rgb median_tokens_per_s q25 q75 data_wait_pct\n", data);
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
        fputc('\n', data);
    }
    fputs("\n\n", data);
    qp_gpv_int(v, "n", n);
    return 0;
}
