/* fig_recalib.c — recalibration events compared across recipes, with the
 * layer, GEMM and operand named.
 *
 * A panel per event kind that occurs (scale change, overflow, underflow,
 * non-finite, other names), side by side; in each, a cell per recipe
 * (columns, in the order recipes first appear) and site (rows: every
 * "block L gemm operand" with an event in any run, block 0 on top, GEMMs in
 * forward order, operands x, w, dy): the number of that kind's events at
 * that site per run of the recipe (the mean over its seeds), written in the
 * cell. A recipe without events keeps its column (zeros): the comparison is
 * the point. No event in any run: one panel saying so.
 *
 * Data file, per kind j: index j: recipe_i site_j per_run events runs
 *   "recipe" "site"   (one row per recipe x site: a full grid)
 * Variables: nkinds, kindtitles, nrecipes, recipes (with their run counts),
 * nsites, sites, cbmax, width, height. */
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"

static const char *const KINDS[] = {"scale_change", "overflow", "underflow", "nonfinite", "other"};
static const char *const SHOWN[] = {"scale change", "overflow", "underflow", "non-finite", "other"};
#define NKINDS 5 /* the four, and any other name */
static const char *const GEMMS[] = {"qkv", "attproj", "fc", "fcproj"};
static const char *const OPERANDS[] = {"x", "w", "dy"};

static int order_of(const char *s, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return i;
    return n;
}

static int cmp_site(const void *pa, const void *pb)
{
    const qp_event_rec *a = *(const qp_event_rec *const *)pa, *b = *(const qp_event_rec *const *)pb;
    if (a->layer != b->layer) return a->layer < b->layer ? -1 : 1;
    int c = order_of(a->gemm, GEMMS, 4) - order_of(b->gemm, GEMMS, 4);
    if (!c) c = strcmp(a->gemm, b->gemm);
    if (!c) c = order_of(a->operand, OPERANDS, 3) - order_of(b->operand, OPERANDS, 3);
    if (!c) c = strcmp(a->operand, b->operand);
    return c;
}

int qp_fig_recalib(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                   size_t errlen)
{
    (void)o;
    /* recipes, in order of appearance, and their run counts */
    const char **recipes = calloc((size_t)n, sizeof *recipes);
    int *nruns = calloc((size_t)n, sizeof *nruns), *rec_of = calloc((size_t)n, sizeof *rec_of);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += runs[i]->n_events;
    const qp_event_rec **ev = malloc((total ? total : 1) * sizeof *ev), **sites = malloc((total ? total : 1) * sizeof *sites);
    double *count = NULL;
    qp_words rw = {0}, sw = {0}, kw = {0};
    int nrec = 0, rc = -1;
    if (!recipes || !nruns || !rec_of || !ev || !sites) goto oom;
    for (int i = 0; i < n; i++) {
        int r = 0;
        while (r < nrec && strcmp(recipes[r], runs[i]->recipe)) r++;
        if (r == nrec) recipes[nrec++] = runs[i]->recipe;
        nruns[r]++;
        rec_of[i] = r;
    }
    /* the sites with an event, sorted */
    size_t m = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < runs[i]->n_events; k++) ev[m++] = &runs[i]->events[k];
    memcpy(sites, ev, m * sizeof *ev);
    qsort(sites, m, sizeof *sites, cmp_site);
    size_t nsites = 0;
    for (size_t i = 0; i < m; i++)
        if (!nsites || cmp_site(&sites[nsites - 1], &sites[i])) sites[nsites++] = sites[i];
    const size_t rows = nsites ? nsites : 1;
    count = calloc((size_t)NKINDS * rows * (size_t)nrec, sizeof *count);
    if (!count) goto oom;
    int present[NKINDS] = {0};
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < runs[i]->n_events; k++) {
            const qp_event_rec *e = &runs[i]->events[k];
            const int kind = order_of(e->kind, KINDS, NKINDS - 1); /* NKINDS-1: other */
            const qp_event_rec **hit = bsearch(&e, sites, nsites, sizeof *sites, cmp_site);
            present[kind] = 1;
            count[((size_t)kind * rows + (size_t)(hit - sites)) * (size_t)nrec + (size_t)rec_of[i]] += 1;
        }
    for (size_t s = 0; s < nsites; s++)
        qp_words_add(&sw, "block %lld %s %s", (long long)sites[s]->layer, sites[s]->gemm, sites[s]->operand);
    if (!nsites) qp_words_add(&sw, "(no events)");
    for (int r = 0; r < nrec; r++)
        qp_words_add(&rw, nruns[r] == 1 ? "%s" : "%s (%d runs)", recipes[r], nruns[r]);
    double cbmax = 0;
    int nk = 0;
    for (int kind = 0; kind < NKINDS; kind++) {
        if (!present[kind] && (kind || nsites)) continue; /* without events: one panel, of zeros */
        nk++;
        qp_words_add(&kw, "%s", nsites ? SHOWN[kind] : "no recalibration events");
        fprintf(data, "# %s: recipe_i site_j per_run events runs recipe site\n", nsites ? KINDS[kind] : "none");
        for (size_t s = 0; s < rows; s++)
            for (int r = 0; r < nrec; r++) {
                const double c = count[((size_t)kind * rows + s) * (size_t)nrec + (size_t)r];
                const double per = c / nruns[r];
                if (per > cbmax) cbmax = per;
                fprintf(data, "%d %zu %.9g %.0f %d \"%s\" \"%s\"\n", r, s, per, c, nruns[r], recipes[r], sw.w[s]);
            }
        fputs("\n\n", data);
    }
    if (rw.oom || sw.oom || kw.oom) goto oom;
    double width = 1.3 + 0.5 * nrec * nk + 0.15 * (nk - 1);
    width = width < 3.5 ? 3.5 : width > 7.2 ? 7.2 : width;
    double height = 1.25 + 0.13 * (double)rows;
    height = height < 2.0 ? 2.0 : height > 10 ? 10 : height;
    qp_gpv_int(v, "nkinds", nk);
    qp_gpv_words(v, "kindtitles", (const char *const *)kw.w, kw.n);
    qp_gpv_int(v, "nrecipes", nrec);
    qp_gpv_words(v, "recipes", (const char *const *)rw.w, rw.n);
    qp_gpv_int(v, "nsites", (long long)rows);
    qp_gpv_words(v, "sites", (const char *const *)sw.w, sw.n);
    qp_gpv_num(v, "cbmax", cbmax > 0 ? cbmax : 1);
    qp_gpv_num(v, "width", width);
    qp_gpv_num(v, "height", height);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    qp_words_free(&rw), qp_words_free(&sw), qp_words_free(&kw);
    free(recipes), free(nruns), free(rec_of), free(ev), free(sites), free(count);
    return rc;
}
