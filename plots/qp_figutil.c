/* qp_figutil.c — shared figure helpers (see qp_figutil.h). */
#include "qp_figutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_style.h"

void qp_group_title(const qp_run *const *runs, int n, int i, char *out, size_t len)
{
    for (int j = 0; j < i; j++)
        if (!strcmp(runs[j]->recipe, runs[i]->recipe)) {
            out[0] = '\0';
            return;
        }
    int count = 0, distinct_seeds = 1;
    for (int j = i; j < n; j++) {
        if (strcmp(runs[j]->recipe, runs[i]->recipe)) continue;
        count++;
        for (int k = i; k < j; k++)
            if (!strcmp(runs[k]->recipe, runs[i]->recipe) && runs[k]->seed == runs[j]->seed) distinct_seeds = 0;
    }
    if (count == 1)
        snprintf(out, len, "%s", runs[i]->recipe);
    else
        snprintf(out, len, "%s (%d %s)", runs[i]->recipe, count, distinct_seeds ? "seeds" : "runs");
    for (char *p = out; *p; p++)
        if (*p == '\'' || *p == '"') *p = '_';
}

int qp_run_words(const qp_run *const *runs, int n, qp_gpvars *v, const char *colors_name, const char *labels_name,
                 int grouped)
{
    const char **colors = calloc((size_t)n + 1, sizeof *colors);
    char (*labels)[QP_LABEL_LEN] = calloc((size_t)n + 1, sizeof *labels);
    const char **lp = calloc((size_t)n + 1, sizeof *lp);
    int rc = -1;
    if (!colors || !labels || !lp) goto out;
    for (int i = 0; i < n; i++) {
        colors[i] = qp_recipe_color(runs[i]->recipe);
        if (grouped)
            qp_group_title(runs, n, i, labels[i], QP_LABEL_LEN);
        else
            qp_run_label(runs, n, i, labels[i], QP_LABEL_LEN);
        lp[i] = labels[i];
    }
    qp_gpv_words(v, colors_name, colors, n);
    if (labels_name) qp_gpv_words(v, labels_name, lp, n);
    rc = 0;
out:
    free(colors);
    free(labels);
    free(lp);
    return rc;
}

void qp_words_add(qp_words *l, const char *fmt, ...)
{
    if (l->oom) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **nw = realloc(l->w, (size_t)cap * sizeof *nw);
        if (!nw) {
            l->oom = 1;
            return;
        }
        l->w = nw, l->cap = cap;
    }
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!(l->w[l->n] = strdup(buf))) {
        l->oom = 1;
        return;
    }
    l->n++;
}

void qp_words_free(qp_words *l)
{
    for (int i = 0; i < l->n; i++) free(l->w[i]);
    free(l->w);
    memset(l, 0, sizeof *l);
}

void qp_range_init(qp_range *r)
{
    r->xlo = r->ylo = r->xpos = r->ypos = INFINITY;
    r->xhi = r->yhi = -INFINITY;
}

void qp_range_add(qp_range *r, double x, double y)
{
    if (isfinite(x)) {
        r->xlo = fmin(r->xlo, x), r->xhi = fmax(r->xhi, x);
        if (x > 0) r->xpos = fmin(r->xpos, x);
    }
    if (isfinite(y)) {
        r->ylo = fmin(r->ylo, y), r->yhi = fmax(r->yhi, y);
        if (y > 0) r->ypos = fmin(r->ypos, y);
    }
}

/* [lo, hi] with hi > lo: a single value gets room around it */
static void widen(double *lo, double *hi, int log)
{
    if (!isfinite(*lo) || !isfinite(*hi)) *lo = log ? 1 : 0, *hi = *lo;
    if (*hi > *lo) return;
    if (log)
        *lo /= 2, *hi *= 2;
    else
        *lo -= 0.5 * fmax(1, fabs(*lo) * 0.1), *hi += 0.5 * fmax(1, fabs(*hi) * 0.1);
}

void qp_range_vars(const qp_range *r, qp_gpvars *v, int logx, int logy)
{
    double xlo = logx ? r->xpos : r->xlo, xhi = r->xhi;
    widen(&xlo, &xhi, logx);
    qp_gpv_num(v, "xlo", xlo);
    qp_gpv_num(v, "xhi", xhi);
    double ylo = logy ? r->ypos : r->ylo, yhi = r->yhi;
    /* a log axis autoscales to whole decades, which flattens a loss curve
     * (2.5 .. 6 drawn on 0.1 .. 100): give it the data's range */
    if (isfinite(ylo) && isfinite(yhi) && yhi > ylo && !logy) return;
    if (logy && yhi > ylo) ylo /= 1.03, yhi *= 1.03;
    widen(&ylo, &yhi, logy);
    qp_gpv_num(v, "ylo", ylo);
    qp_gpv_num(v, "yhi", yhi);
}

/* Root attributes that say how or where a run was computed, or what was
 * logged besides the training loss: runs differing only in these are the
 * same experiment. Everything else (model, data, optimizer, steps, the
 * initial-weight hash) must match. */
static const char *const IGNORED[] = {
    "recipe",     "recipe_description", "recipe_plan", "seed",    "host",         "version",     "gemm_bf16",
    "gemm_impl_bf16", "gemm_impl_f32",  "model_kernels", "simd",      "threads",     "prefetch",
    "eval_every", "eval_batches",       "qerr_every", "ckpt_every", "data_seed",
};

static int ignored(const char *key, int across_seeds)
{
    if (across_seeds && !strcmp(key, "init_param_hash")) return 1;
    for (size_t i = 0; i < sizeof IGNORED / sizeof *IGNORED; i++)
        if (!strcmp(IGNORED[i], key)) return 1;
    return 0;
}

const char *qp_config_diff(const qp_run *a, const qp_run *b, int across_seeds)
{
    int i = 0, j = 0;
    while (i < a->nattrs || j < b->nattrs) {
        int c = i == a->nattrs ? 1 : j == b->nattrs ? -1 : strcmp(a->attrs[i].key, b->attrs[j].key);
        if (c < 0) {
            if (!ignored(a->attrs[i].key, across_seeds)) return a->attrs[i].key;
            i++;
        } else if (c > 0) {
            if (!ignored(b->attrs[j].key, across_seeds)) return b->attrs[j].key;
            j++;
        } else {
            if (!ignored(a->attrs[i].key, across_seeds) && strcmp(a->attrs[i].value, b->attrs[j].value)) return a->attrs[i].key;
            i++, j++;
        }
    }
    return NULL;
}


int qp_run_is_twin(const qp_run *r)
{
    const char *ds = qp_run_attr(r, "data_seed"), *sd = qp_run_attr(r, "seed");
    return ds && sd && strcmp(ds, sd) != 0;
}
