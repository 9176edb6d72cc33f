/* fig_loss.c — training-loss curves of several runs, validation as markers.
 *
 * Data file, per run i (0-based, in the order given):
 *   index 2i:   step  raw_loss  smoothed_loss      (one row per /train row)
 *   index 2i+1: step  val_loss                     (one row per /eval row;
 *               a single "NaN NaN" row when the run has none, so the block
 *               exists and gnuplot has nothing to warn about)
 * Variables: n, colors, titles (one key entry per recipe), smooth, logx,
 * logy, anyval (1 if some run has validation points), xlo, xhi and, for a
 * single loss value, ylo, yhi (qp_range). */
#include <stdlib.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_stats.h"

int qp_fig_loss(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen)
{
    int anyval = 0;
    qp_range rg;
    qp_range_init(&rg);
    for (int i = 0; i < n; i++) {
        const qp_run *r = runs[i];
        double *s = malloc(r->n_train * sizeof *s);
        if (!s) {
            snprintf(err, errlen, "%s: out of memory", r->path);
            return -1;
        }
        qp_ema(r->loss, r->n_train, o->smooth, s);
        fprintf(data, "# %s: step loss smoothed(EMA %g)\n", r->path, o->smooth);
        for (size_t k = 0; k < r->n_train; k++) {
            fprintf(data, "%lld ", (long long)r->step[k]);
            qp_fig_num(data, r->loss[k]);
            fputc(' ', data);
            qp_fig_num(data, s[k]);
            fputc('\n', data);
            qp_range_add(&rg, (double)r->step[k], r->loss[k]);
        }
        free(s);
        fprintf(data, "\n\n# %s: step val_loss\n", r->path);
        if (!r->n_eval) fputs("NaN NaN\n", data);
        for (size_t k = 0; k < r->n_eval; k++) {
            fprintf(data, "%lld ", (long long)r->eval_step[k]);
            qp_fig_num(data, r->val_loss[k]);
            fputc('\n', data);
            qp_range_add(&rg, (double)r->eval_step[k], r->val_loss[k]);
        }
        fputs("\n\n", data);
        if (r->n_eval) anyval = 1;
    }
    qp_gpv_int(v, "n", n);
    if (qp_run_words(runs, n, v, "colors", "titles", 1)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    qp_gpv_num(v, "smooth", o->smooth);
    qp_gpv_int(v, "logx", o->logx);
    qp_gpv_int(v, "logy", o->logy);
    qp_gpv_int(v, "anyval", anyval);
    qp_range_vars(&rg, v, o->logx, o->logy);
    return 0;
}
