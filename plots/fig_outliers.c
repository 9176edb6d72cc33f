/* fig_outliers.c — the outlier statistics of the block GEMMs' inputs over
 * steps (/quant/outliers, train/precision/qp_outliers.h): a column per run, three
 * rows sharing the step axis — amax, kurtosis and the top-k channels' share
 * of the energy (log scales) — a line per (block, GEMM): colour by GEMM
 * (the MLP's down projection, where the Llama's SwiGLU outliers live, in
 * vermillion like the GPT's fcproj), dash by block. A step's micro-batch
 * rows are combined: the largest amax, the mean kurtosis and share.
 *
 * Data file: index i*ns + s (run i, series s): step amax kurtosis topk_frac
 *   (one "NaN NaN NaN NaN" row when run i has no row of series s)
 * Variables: n, ns, titles (the runs' labels), stitles ("block L GEMM"),
 * scolor, sdash (per series), gnames + gcolors (the GEMMs present, for the
 * key), nblocks, xmin, xmax, width, height. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_style.h"

/* forward order of either architecture's GEMMs; their colours (Okabe & Ito) */
static const char *const GEMMS[] = {"qkv", "attproj", "fc", "fcproj", "gate", "up", "down"};
static const char *const COLORS[] = {"#0072B2", "#999999", "#E69F00", "#D55E00", "#56B4E9", "#CC79A7", "#D55E00"};
#define NGEMMS 7
_Static_assert(sizeof GEMMS / sizeof *GEMMS == NGEMMS && sizeof COLORS / sizeof *COLORS == NGEMMS, "a colour per GEMM");

static int gemm_order(const char *g)
{
    for (int i = 0; i < NGEMMS; i++)
        if (!strcmp(g, GEMMS[i])) return i;
    return NGEMMS;
}

typedef struct {
    int64_t layer;
    char gemm[QP_GEMM_LEN];
} series;

static int cmp_series(const void *pa, const void *pb)
{
    const series *a = pa, *b = pb;
    if (a->layer != b->layer) return a->layer < b->layer ? -1 : 1;
    const int c = gemm_order(a->gemm) - gemm_order(b->gemm);
    return c ? c : strcmp(a->gemm, b->gemm);
}

static int cmp_step(const void *pa, const void *pb)
{
    const qp_outlier_rec *a = *(const qp_outlier_rec *const *)pa, *b = *(const qp_outlier_rec *const *)pb;
    return (a->step > b->step) - (a->step < b->step);
}

int qp_fig_outliers(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                    size_t errlen)
{
    (void)o;
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        if (!runs[i]->n_outliers) {
            snprintf(err, errlen, "%s: no /quant/outliers rows (qtrain logs them with --qerr-every N; run files of "
                     "schema version %d and later)", runs[i]->path, 3);
            return -1;
        }
        m += runs[i]->n_outliers;
    }
    series *ser = malloc(m * sizeof *ser);
    const qp_outlier_rec **rows = malloc(m * sizeof *rows);
    qp_words titles = {0}, stitles = {0}, scolor = {0}, sdash = {0}, gnames = {0}, gcolors = {0};
    int rc = -1;
    if (!ser || !rows) goto oom;
    /* the distinct series over every run: the columns share the key */
    size_t ns = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->n_outliers; j++) {
            const qp_outlier_rec *r = &runs[i]->outliers[j];
            ser[ns].layer = r->layer;
            snprintf(ser[ns].gemm, sizeof ser[ns].gemm, "%s", r->gemm);
            ns++;
        }
    qsort(ser, ns, sizeof *ser, cmp_series);
    size_t k = 0;
    for (size_t j = 0; j < ns; j++)
        if (!k || cmp_series(&ser[k - 1], &ser[j])) ser[k++] = ser[j];
    ns = k;
    int present[NGEMMS + 1] = {0};
    int64_t maxlayer = 0, xmin = INT64_MAX, xmax = INT64_MIN;
    for (size_t s = 0; s < ns; s++) {
        const int g = gemm_order(ser[s].gemm);
        present[g] = 1;
        if (ser[s].layer > maxlayer) maxlayer = ser[s].layer;
        qp_words_add(&stitles, "block %lld %s", (long long)ser[s].layer, ser[s].gemm);
        qp_words_add(&scolor, "%s", g < NGEMMS ? COLORS[g] : "#000000");
        qp_words_add(&sdash, "%d", (int)(ser[s].layer % 5) + 1);
    }
    for (int g = 0; g < NGEMMS; g++)
        if (present[g] && !(g == NGEMMS - 1 && present[3])) { /* down and fcproj share a colour, not a key entry */
            qp_words_add(&gnames, "%s", g == 3 && present[NGEMMS - 1] ? "fcproj/down" : GEMMS[g]);
            qp_words_add(&gcolors, "%s", COLORS[g]);
        }
    for (int i = 0; i < n; i++) {
        const qp_run *r = runs[i];
        char label[QP_LABEL_LEN];
        qp_run_label(runs, n, i, label, sizeof label);
        qp_words_add(&titles, "%s", label);
        for (size_t s = 0; s < ns; s++) {
            size_t c = 0;
            for (size_t j = 0; j < r->n_outliers; j++)
                if (r->outliers[j].layer == ser[s].layer && !strcmp(r->outliers[j].gemm, ser[s].gemm))
                    rows[c++] = &r->outliers[j];
            qsort(rows, c, sizeof *rows, cmp_step); /* a stable order of steps; the rows of one step are combined */
            fprintf(data, "# block %lld %s (%s): step amax kurtosis topk_frac\n", (long long)ser[s].layer,
                    ser[s].gemm, label);
            if (!c) fputs("NaN NaN NaN NaN\n", data);
            for (size_t a = 0; a < c;) {
                size_t b = a;
                double amax = 0, kurt = 0, share = 0;
                for (; b < c && rows[b]->step == rows[a]->step; b++) {
                    amax = fmax(amax, rows[b]->amax);
                    kurt += rows[b]->kurtosis, share += rows[b]->topk_frac;
                }
                fprintf(data, "%lld ", (long long)rows[a]->step);
                qp_fig_num(data, amax);
                fputc(' ', data);
                qp_fig_num(data, kurt / (double)(b - a));
                fputc(' ', data);
                qp_fig_num(data, share / (double)(b - a));
                fputc('\n', data);
                if (rows[a]->step < xmin) xmin = rows[a]->step;
                if (rows[a]->step > xmax) xmax = rows[a]->step;
                a = b;
            }
            fputs("\n\n", data);
        }
    }
    if (titles.oom || stitles.oom || scolor.oom || sdash.oom || gnames.oom || gcolors.oom) goto oom;
    const double pad = xmax > xmin ? 0.03 * (double)(xmax - xmin) : 0.5;
    qp_gpv_int(v, "n", n);
    qp_gpv_int(v, "ns", (long long)ns);
    qp_gpv_words(v, "titles", (const char *const *)titles.w, titles.n);
    qp_gpv_words(v, "stitles", (const char *const *)stitles.w, stitles.n);
    qp_gpv_words(v, "scolor", (const char *const *)scolor.w, scolor.n);
    qp_gpv_words(v, "sdash", (const char *const *)sdash.w, sdash.n);
    qp_gpv_words(v, "gnames", (const char *const *)gnames.w, gnames.n);
    qp_gpv_words(v, "gcolors", (const char *const *)gcolors.w, gcolors.n);
    qp_gpv_int(v, "nblocks", (long long)(maxlayer + 1 < 5 ? maxlayer + 1 : 5));
    qp_gpv_num(v, "xmin", (double)xmin - pad);
    qp_gpv_num(v, "xmax", (double)xmax + pad);
    const double width = 1.0 + 2.6 * n;
    qp_gpv_num(v, "width", width > 10 ? 10 : width);
    qp_gpv_num(v, "height", 5.2);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", runs[0]->path);
out:
    qp_words_free(&titles), qp_words_free(&stitles), qp_words_free(&scolor), qp_words_free(&sdash);
    qp_words_free(&gnames), qp_words_free(&gcolors);
    free(ser);
    free(rows);
    return rc;
}
