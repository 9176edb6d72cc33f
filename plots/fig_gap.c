/* fig_gap.c — loss gap of each recipe to the baseline recipe, over steps.
 *
 * For each run of a recipe R other than the baseline, its partner is the
 * baseline run with the same seed and otherwise the same configuration
 * (root attributes equal except the keys in IGNORED). Both training-loss
 * curves are smoothed (qp_ema, --smooth) and the relative gap
 *     gap(t) = 100 * (L_R(t) - L_base(t)) / L_base(t)   [%]
 * is taken at the steps both logged. Across R's seeds: the mean, and the
 * band of its 95% t-interval (qs_stats.h; mean +- t * sd / sqrt(n), none
 * with one seed), at the steps every pair has (runs still being written
 * stop at different steps): the same t rule as the summary's final-gap
 * interval. A run without a partner is left out with a
 * note on stderr; a figure with no pair at all is an error.
 *
 * Data file, per recipe j (in the order recipes first appear):
 *   index j: step  mean_gap  ci_lo  ci_hi  n_seeds
 * Variables: n, colors, titles ("fp8 (2 seeds)": the line is the seeds'
 * mean, as in the loss figure), baseline, basecolor, anyband (1 if some recipe has more
 * than one seed, so the band means something), xlo, xhi (and ylo, yhi for
 * a single value: qp_range); gaplo, gaphi (the y axis: the means and bands
 * after each series' first tenth of steps, and 0, with 8% margins) and
 * clipped (1 when an earlier point lies beyond them), absent when every
 * value is 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_note.h"
#include "qp_stats.h"
#include "qp_style.h"
#include "qs_stats.h"

typedef struct {
    size_t n;
    int64_t *step;
    double *gap;
} pair_gap;

/* gap of r against b at the steps both logged (both step lists increase) */
static int pair_gaps(const qp_run *r, const qp_run *b, double smooth, pair_gap *out)
{
    double *sr = malloc(r->n_train * sizeof *sr), *sb = malloc(b->n_train * sizeof *sb);
    size_t cap = r->n_train < b->n_train ? r->n_train : b->n_train;
    out->n = 0;
    out->step = malloc(cap * sizeof *out->step);
    out->gap = malloc(cap * sizeof *out->gap);
    if (!sr || !sb || !out->step || !out->gap) {
        free(sr), free(sb), free(out->step), free(out->gap);
        out->step = NULL, out->gap = NULL;
        return -1;
    }
    qp_ema(r->loss, r->n_train, smooth, sr);
    qp_ema(b->loss, b->n_train, smooth, sb);
    for (size_t i = 0, j = 0; i < r->n_train && j < b->n_train;) {
        if (r->step[i] < b->step[j])
            i++;
        else if (r->step[i] > b->step[j])
            j++;
        else {
            out->step[out->n] = r->step[i];
            out->gap[out->n] = 100.0 * (sr[i] - sb[j]) / sb[j];
            out->n++, i++, j++;
        }
    }
    free(sr);
    free(sb);
    return 0;
}

static long find_step(const pair_gap *p, int64_t s)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->step[mid] < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->step[lo] == s ? (long)lo : -1;
}

/* The y range the reader needs: the means and bands after the first tenth of
 * a series' steps. The first steps' relative gap is a ratio of two barely
 * trained, fast-falling losses and can swing by tens of percent; drawn to
 * scale it would squeeze the converged gaps, a few tenths of a percent, into
 * a line. Earlier points are still drawn (clipped at the axis, the figure
 * says so). */
typedef struct {
    double lo, hi;  /* the range shown */
    int clipped;    /* some point lies outside it */
    double all_lo, all_hi;
} gap_yrange;

/* One block: the seeds' mean, min and max at the steps every pair has.
 * Returns the rows written; none (the pairs share no step) writes nothing,
 * not even the block's separator, so block numbers stay dense. */
static size_t write_block(FILE *data, const char *recipe, const pair_gap *p, int np, qp_range *rg, gap_yrange *yr)
{
    const double settled = p[0].n ? (double)p[0].step[0] + 0.1 * (double)(p[0].step[p[0].n - 1] - p[0].step[0]) : 0;
    size_t rows = 0;
    const double tq = np > 1 ? qs_t_quantile(0.975, np - 1) : NAN;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (!rows) return 0;
            fprintf(data, "# %s - baseline: step mean ci95_lo ci95_hi n_seeds\n", recipe);
        }
        for (size_t k = 0; k < p[0].n; k++) {
            double sum = 0, sq = 0;
            int have = 1;
            for (int q = 0; q < np; q++) {
                long at = q ? find_step(&p[q], p[0].step[k]) : (long)k;
                if (at < 0) {
                    have = 0;
                    break;
                }
                double g = p[q].gap[at];
                sum += g, sq += g * g;
            }
            if (!have) continue;
            if (pass == 0) {
                rows++;
                continue;
            }
            const double mean = sum / np;
            double lo = NAN, hi = NAN;
            if (np > 1) {
                const double sd = sqrt(fmax(0.0, (sq - np * mean * mean) / (np - 1)));
                const double h = tq * sd / sqrt((double)np);
                lo = mean - h, hi = mean + h;
            }
            fprintf(data, "%lld ", (long long)p[0].step[k]);
            qp_fig_num(data, mean);
            fputc(' ', data);
            qp_fig_num(data, lo);
            fputc(' ', data);
            qp_fig_num(data, hi);
            fprintf(data, " %d\n", np);
            qp_range_add(rg, (double)p[0].step[k], np > 1 ? lo : mean);
            qp_range_add(rg, (double)p[0].step[k], np > 1 ? hi : mean);
            const double a = np > 1 ? lo : mean, b = np > 1 ? hi : mean;
            if (isfinite(a) && isfinite(b)) {
                yr->all_lo = fmin(yr->all_lo, a), yr->all_hi = fmax(yr->all_hi, b);
                if ((double)p[0].step[k] >= settled) yr->lo = fmin(yr->lo, a), yr->hi = fmax(yr->hi, b);
            }
        }
    }
    fputs("\n\n", data);
    return rows;
}

static const qp_run *partner(const qp_run *const *runs, int n, const qp_run *r, const char *base, const char **why)
{
    *why = NULL;
    for (int j = 0; j < n; j++) {
        if (strcmp(runs[j]->recipe, base) || runs[j]->seed != r->seed) continue;
        const char *d = qp_config_diff(r, runs[j], 0);
        if (!d) return runs[j];
        if (!*why) *why = d;
    }
    return NULL;
}

int qp_fig_gap(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
               size_t errlen)
{
    const char *base = o->baseline;
    int nbase = 0;
    for (int i = 0; i < n; i++) nbase += !strcmp(runs[i]->recipe, base);
    if (!nbase) {
        snprintf(err, errlen, "gap: no run with the baseline recipe '%s' among the %d given (--baseline)", base, n);
        return -1;
    }
    const char **colors = calloc((size_t)n, sizeof *colors);
    char (*titles)[QP_LABEL_LEN] = calloc((size_t)n, sizeof *titles);
    const char **tp = calloc((size_t)n, sizeof *tp);
    pair_gap *pairs = calloc((size_t)n, sizeof *pairs);
    int nseries = 0, anyband = 0, rc = -1;
    qp_range rg;
    qp_range_init(&rg);
    qp_range_add(&rg, NAN, 0); /* the baseline's line at 0 is part of the figure */
    gap_yrange yr = {0, 0, 0, 0, 0}; /* 0 included: the baseline's line */
    if (!colors || !titles || !tp || !pairs) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const char *rec = runs[i]->recipe;
        int first = 1;
        for (int j = 0; j < i; j++) first &= strcmp(runs[j]->recipe, rec) != 0;
        if (!strcmp(rec, base) || !first) continue;
        int np = 0;
        for (int j = i; j < n; j++) {
            if (strcmp(runs[j]->recipe, rec)) continue;
            const char *why;
            const qp_run *b = partner(runs, n, runs[j], base, &why);
            if (!b) {
                if (why)
                    qp_note("%s left out of the gap figure: its %s run with seed %lld differs in '%s'", runs[j]->path,
                            base, runs[j]->seed, why);
                else
                    qp_note("%s left out of the gap figure: no %s run with seed %lld", runs[j]->path, base,
                            runs[j]->seed);
                continue;
            }
            if (pair_gaps(runs[j], b, o->smooth, &pairs[np])) {
                snprintf(err, errlen, "%s: out of memory", runs[j]->path);
                goto out_pairs;
            }
            np++;
        }
        if (!np) continue;
        size_t rows = write_block(data, rec, pairs, np, &rg, &yr);
        for (int q = 0; q < np; q++) {
            free(pairs[q].step);
            free(pairs[q].gap);
            pairs[q].step = NULL, pairs[q].gap = NULL;
        }
        if (!rows) {
            qp_note("%s left out of the gap figure: its runs and their %s partners share no logged step", rec, base);
            continue;
        }
        colors[nseries] = qp_recipe_color(rec);
        if (np > 1)
            snprintf(titles[nseries], QP_LABEL_LEN, "%s (%d seeds)", rec, np);
        else
            snprintf(titles[nseries], QP_LABEL_LEN, "%s", rec);
        tp[nseries] = titles[nseries];
        if (np > 1) anyband = 1;
        nseries++;
    }
    if (!nseries && nbase == n) {
        snprintf(err, errlen, "gap: all %d runs are of the baseline recipe '%s': nothing to compare", n, base);
        goto out;
    }
    if (!nseries) {
        snprintf(err, errlen, "gap: no run has a %s run with the same seed and configuration to compare with", base);
        goto out;
    }
    qp_gpv_int(v, "n", nseries);
    qp_gpv_words(v, "colors", colors, nseries);
    qp_gpv_words(v, "titles", tp, nseries);
    qp_gpv_str(v, "baseline", base);
    qp_gpv_str(v, "basecolor", qp_recipe_color(base));
    qp_gpv_int(v, "anyband", anyband);
    qp_gpv_num(v, "height", 3.3); /* room for the key above the plot */
    qp_range_vars(&rg, v, 0, 0);
    if (yr.hi > yr.lo) { /* a margin of 8% of the span on each side */
        const double m = 0.08 * (yr.hi - yr.lo);
        yr.clipped = yr.all_lo < yr.lo - m || yr.all_hi > yr.hi + m;
        qp_gpv_num(v, "gaplo", yr.lo - m);
        qp_gpv_num(v, "gaphi", yr.hi + m);
        qp_gpv_int(v, "clipped", yr.clipped);
    }
    rc = 0;
    goto out;
out_pairs:
    for (int q = 0; q < n; q++) free(pairs[q].step), free(pairs[q].gap);
out:
    free(colors);
    free(titles);
    free(tp);
    free(pairs);
    return rc;
}
