/* qs_contrast.c — the contrast table: each recipe's gap at every value of
 * one grid axis against its first value, paired by seed (see qs_summary.h,
 * "contrast"; docs/qsweep.md). Reads the summary's rows and groups; the
 * intervals are qs_stats.h's qs_paired_ci. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qs_summary.h"

/* Position of a combination of value indices among all combinations (the
 * grid's mixed radix); excluded combinations map to no run. */
static long long combo(const qs_experiment *e, const int *vi)
{
    long long k = 0;
    for (int a = 0; a < e->naxes; a++) k = k * e->axes[a].nvalues + vi[a];
    return k;
}

/* append prefix and text to msg, cut to fit */
static void append(char *msg, size_t len, const char *prefix, const char *text)
{
    const size_t n = strlen(msg);
    if (n + 1 < len) snprintf(msg + n, len - n, "%s%s", prefix, text);
}

int qs_contrast_build(qs_summary *s)
{
    const qs_experiment *e = s->e;
    const qs_plan *p = s->p;
    const int ax = s->contrast_axis, sa = s->seed_axis;
    if (ax < 0) return 0;
    long long total = 1;
    for (int a = 0; a < e->naxes; a++) total *= e->axes[a].nvalues; /* <= 100000: qs_grid_expand */
    const int nseed = sa >= 0 ? e->axes[sa].nvalues : 1;
    int *run_of = malloc((size_t)total * sizeof *run_of), *vi = malloc((size_t)e->naxes * sizeof *vi);
    double *buf = malloc((size_t)4 * nseed * sizeof *buf);
    s->contrast = calloc((size_t)(s->ngroups ? s->ngroups : 1) * (size_t)(e->axes[ax].nvalues - 1), sizeof *s->contrast);
    if (!run_of || !vi || !buf || !s->contrast) {
        free(run_of), free(vi), free(buf);
        return -1;
    }
    for (long long k = 0; k < total; k++) run_of[k] = -1;
    for (int i = 0; i < p->ngrid; i++) run_of[combo(e, p->runs[i].vi)] = i;
    double *ga = buf, *gb = buf + nseed, *na = buf + 2 * nseed, *nb = buf + 3 * nseed;
    for (int g = 0; g < s->ngroups; g++) {
        const qs_group *G = &s->groups[g];
        const qs_run *first = &p->runs[G->first];
        if (G->noise || G->block >= 0 || first->vi[ax] != 0 || !strcmp(qs_grid_recipe(e, first), e->baseline))
            continue;
        for (int vb = 1; vb < e->axes[ax].nvalues; vb++) {
            qs_contrast_row *C = &s->contrast[s->ncontrast];
            memset(C, 0, sizeof *C);
            C->group_a = g, C->group_b = -1, C->value_b = vb;
            int n = 0;
            for (int sd = 0; sd < nseed; sd++) {
                memcpy(vi, first->vi, (size_t)e->naxes * sizeof *vi);
                if (sa >= 0) vi[sa] = sd;
                const int ia = run_of[combo(e, vi)];
                vi[ax] = vb;
                const int ib = run_of[combo(e, vi)];
                if (ib >= 0) C->group_b = s->rows[ib].group;
                const qs_row *ra = ia >= 0 ? &s->rows[ia] : NULL, *rb = ib >= 0 ? &s->rows[ib] : NULL;
                const int has_a = ra && isfinite(ra->gap_pct) && isfinite(ra->gap_abs),
                          has_b = rb && isfinite(rb->gap_pct) && isfinite(rb->gap_abs);
                if (has_a && has_b) {
                    ga[n] = ra->gap_pct, gb[n] = rb->gap_pct, na[n] = ra->gap_abs, nb[n] = rb->gap_abs;
                    n++;
                } else if (has_a || has_b) {
                    /* left out: name the seed and the value without a gap */
                    char one[320];
                    const char *missing = e->axes[ax].values[has_a ? vb : 0];
                    if (sa >= 0)
                        snprintf(one, sizeof one, "%.40s=%.100s (no gap at %.40s=%.100s)", e->axes[sa].key,
                                 e->axes[sa].values[sd], e->axes[ax].key, missing);
                    else snprintf(one, sizeof one, "the run (no gap at %.40s=%.100s)", e->axes[ax].key, missing);
                    append(C->message, sizeof C->message, C->n_unpaired ? ", " : "left out, a gap at one value only: ",
                           one);
                    C->n_unpaired++;
                }
            }
            if (C->group_b < 0) continue; /* the grid excludes every run of this combination at b */
            qs_summary_name(s, s->groups[C->group_b].first, ax, 0, C->name, sizeof C->name);
            qs_paired_ci(ga, gb, n, 0.95, &C->pct);
            qs_paired_ci(na, nb, n, 0.95, &C->nats);
            s->ncontrast++;
        }
    }
    free(run_of), free(vi), free(buf);
    return 0;
}
