/* fig_bscales.c — the block-scale histogram over training (the run file's
 * block_scale_hist table, qp_runread.h's qp_bshist_rec): a column per run
 * (recipes side by side), a row per (GEMM, pass) any run quantized with
 * block scales; in each panel, per logged step, the share of the blocks
 * whose decoded scale s falls in each fixed bin floor(log2 s), the blocks of
 * every block, operand and micro-batch of that GEMM and pass together.
 * Blocks whose scale is 0 or NaN (bins 0 and 1) get rows of their own below
 * the log2 axis, so the shares of a step sum to 1 as the counts sum to the
 * blocks. The axis starts at the lowest bin holding at least 0.1% of a
 * step's blocks in some panel, at most 40 octaves below the largest bin;
 * bins below it (an E8M0 scale of 2^-127 for an all-zero MX block, say) are
 * drawn at its bottom row, which the axis labels "≤ y".
 *
 * Data file: index i*nr + r (run i, row r): step y share half_width count
 *   y = floor(log2 s), or yzero / ynan for those bins; one row per
 *   non-empty cell; one "NaN NaN NaN NaN NaN" row when run i has no block
 *   of row r
 * Variables: n, nr, titles (the runs' labels), rtitles ("GEMM pass"),
 * ymin, ymax (the log2 range drawn), yzero, ynan (NaN's row; both below
 * ymin), haszero, hasnan, clipped (some bin is drawn at ymin's row), xmin,
 * xmax, width, height. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_style.h"

#define BIN_ZERO 0   /* quant/qp_metrics.h: bin 0 s = 0, 1 s NaN, */
#define BIN_NAN 1    /* k >= 2 floor(log2 s) = k - BIN_OFFSET */
#define BIN_OFFSET 151

/* forward order of either architecture's GEMMs, then the passes */
static const char *const GEMMS[] = {"qkv", "attproj", "fc", "fcproj", "gate", "up", "down"};
static const char *const PASSES[] = {"fprop", "dgrad", "wgrad"};
#define NGEMMS 7
#define NPASSES 3
_Static_assert(sizeof GEMMS / sizeof *GEMMS == NGEMMS && sizeof PASSES / sizeof *PASSES == NPASSES, "orders");

static int order_of(const char *s, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return i;
    return n;
}

typedef struct {
    char gemm[QP_GEMM_LEN], pass[QP_NAME_LEN];
} row_key;

static int cmp_row(const void *pa, const void *pb)
{
    const row_key *a = pa, *b = pb;
    int c = order_of(a->gemm, GEMMS, NGEMMS) - order_of(b->gemm, GEMMS, NGEMMS);
    if (!c) c = strcmp(a->gemm, b->gemm);
    if (!c) c = order_of(a->pass, PASSES, NPASSES) - order_of(b->pass, PASSES, NPASSES);
    return c ? c : strcmp(a->pass, b->pass);
}

/* cells: (step, bin) with their summed count */
typedef struct {
    int64_t step, bin, count;
} cell;

static int cmp_cell(const void *pa, const void *pb)
{
    const cell *a = pa, *b = pb;
    if (a->step != b->step) return (a->step > b->step) - (a->step < b->step);
    return (a->bin > b->bin) - (a->bin < b->bin);
}

/* The cells of run's (GEMM, pass) row, sorted by step and bin. */
static size_t collect(const qp_run *run, const row_key *row, cell *cells)
{
    size_t c = 0;
    for (size_t j = 0; j < run->n_bshist; j++) {
        const qp_bshist_rec *h = &run->bshist[j];
        if (strcmp(h->gemm, row->gemm) || strcmp(h->pass, row->pass)) continue;
        cells[c++] = (cell){h->step, h->bin, h->count};
    }
    qsort(cells, c, sizeof *cells, cmp_cell);
    return c;
}

#define SHOWN_SHARE 1e-3 /* a bin that holds this share of a step's blocks somewhere is on the axis */
#define AXIS_OCTAVES 40  /* and at most this far below the largest bin */

int qp_fig_bscales(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                   size_t errlen)
{
    (void)o;
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        if (!runs[i]->n_bshist) {
            snprintf(err, errlen, "%s: no block-scale histogram rows (qtrain logs them with --qerr-every N for "
                     "formats with block scales; run files of schema version %d and later)", runs[i]->path, 5);
            return -1;
        }
        m += runs[i]->n_bshist;
    }
    row_key *rows = malloc(m * sizeof *rows);
    cell *cells = malloc(m * sizeof *cells);
    qp_words titles = {0}, rtitles = {0};
    int rc = -1;
    if (!rows || !cells) goto oom;
    size_t nr = 0;
    int64_t bmin = INT64_MAX, bmax = INT64_MIN, xmin = INT64_MAX, xmax = INT64_MIN;
    int haszero = 0, hasnan = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->n_bshist; j++) {
            const qp_bshist_rec *h = &runs[i]->bshist[j];
            snprintf(rows[nr].gemm, sizeof rows[nr].gemm, "%s", h->gemm);
            snprintf(rows[nr].pass, sizeof rows[nr].pass, "%s", h->pass);
            nr++;
            if (h->bin == BIN_ZERO) haszero = 1;
            else if (h->bin == BIN_NAN) hasnan = 1;
            else {
                if (h->bin < bmin) bmin = h->bin;
                if (h->bin > bmax) bmax = h->bin;
            }
            if (h->step < xmin) xmin = h->step;
            if (h->step > xmax) xmax = h->step;
        }
    qsort(rows, nr, sizeof *rows, cmp_row);
    size_t k = 0;
    for (size_t j = 0; j < nr; j++)
        if (!k || cmp_row(&rows[k - 1], &rows[j])) rows[k++] = rows[j];
    nr = k;
    if (bmin > bmax) bmin = bmax = BIN_OFFSET; /* only zero or NaN scales: an axis around 2^0 */
    /* the lowest bin holding a visible share somewhere */
    int64_t shown = bmax;
    for (int i = 0; i < n; i++)
        for (size_t r = 0; r < nr; r++) {
            const size_t c = collect(runs[i], &rows[r], cells);
            for (size_t a = 0; a < c;) {
                size_t b = a;
                int64_t total = 0;
                for (; b < c && cells[b].step == cells[a].step; b++) total += cells[b].count;
                for (size_t e = a; e < b; e++)
                    if (cells[e].bin > BIN_NAN && cells[e].bin < shown &&
                        (double)cells[e].count >= SHOWN_SHARE * (double)total)
                        shown = cells[e].bin;
                a = b;
            }
        }
    if (shown < bmax - AXIS_OCTAVES) shown = bmax - AXIS_OCTAVES;
    const int clipped = shown > bmin;
    bmin = shown;
    const double ymin = (double)(bmin - BIN_OFFSET), ymax = (double)(bmax - BIN_OFFSET);
    const double yzero = ymin - 3, ynan = ymin - 3 - 2.5 * haszero;
    for (size_t r = 0; r < nr; r++) qp_words_add(&rtitles, "%s %s", rows[r].gemm, rows[r].pass);
    for (int i = 0; i < n; i++) {
        const qp_run *run = runs[i];
        char label[QP_LABEL_LEN];
        qp_run_label(runs, n, i, label, sizeof label);
        qp_words_add(&titles, "%s", label);
        /* half the run's smallest step spacing: each step's cells as wide */
        int64_t gap = INT64_MAX;
        for (size_t j = 0; j < run->n_bshist; j++)
            for (size_t l = j + 1; l < run->n_bshist && l < j + 64; l++) {
                const int64_t d = llabs(run->bshist[l].step - run->bshist[j].step);
                if (d > 0 && d < gap) gap = d;
            }
        const double half = gap == INT64_MAX ? 0.5 : 0.4 * (double)gap;
        for (size_t r = 0; r < nr; r++) {
            const size_t c = collect(run, &rows[r], cells);
            fprintf(data, "# %s %s (%s): step log2_scale share half_width count\n", rows[r].gemm, rows[r].pass, label);
            if (!c) fputs("NaN NaN NaN NaN NaN\n", data);
            for (size_t a = 0; a < c;) {
                /* one step: its blocks (every block, operand and micro-batch) */
                size_t b = a;
                int64_t total = 0;
                for (; b < c && cells[b].step == cells[a].step; b++) total += cells[b].count;
                for (size_t e = a; e < b;) {
                    /* the bins below the axis go to its bottom row */
                    const int below = cells[e].bin > BIN_NAN && cells[e].bin < bmin;
                    size_t f = e;
                    int64_t cnt = 0;
                    for (; f < b && (below ? cells[f].bin < bmin : cells[f].bin == cells[e].bin); f++)
                        cnt += cells[f].count;
                    const double y = cells[e].bin == BIN_ZERO  ? yzero
                                     : cells[e].bin == BIN_NAN ? ynan
                                     : below                   ? ymin
                                                               : (double)(cells[e].bin - BIN_OFFSET);
                    fprintf(data, "%lld ", (long long)cells[e].step);
                    qp_fig_num(data, y);
                    fputc(' ', data);
                    qp_fig_num(data, (double)cnt / (double)total);
                    fputc(' ', data);
                    qp_fig_num(data, half);
                    fprintf(data, " %lld\n", (long long)cnt);
                    e = f;
                }
                a = b;
            }
            fputs("\n\n", data);
        }
    }
    if (titles.oom || rtitles.oom) goto oom;
    const double pad = xmax > xmin ? 0.03 * (double)(xmax - xmin) : 1.0;
    qp_gpv_int(v, "n", n);
    qp_gpv_int(v, "nr", (long long)nr);
    qp_gpv_words(v, "titles", (const char *const *)titles.w, titles.n);
    qp_gpv_words(v, "rtitles", (const char *const *)rtitles.w, rtitles.n);
    qp_gpv_num(v, "ymin", ymin);
    qp_gpv_num(v, "ymax", ymax);
    qp_gpv_num(v, "yzero", yzero);
    qp_gpv_num(v, "ynan", ynan);
    qp_gpv_int(v, "haszero", haszero);
    qp_gpv_int(v, "hasnan", hasnan);
    qp_gpv_int(v, "clipped", clipped);
    qp_gpv_num(v, "xmin", (double)xmin - pad);
    qp_gpv_num(v, "xmax", (double)xmax + pad);
    const double width = 1.4 + 2.2 * n, height = 0.8 + 1.1 * (double)nr;
    qp_gpv_num(v, "width", width > 10 ? 10 : width);
    qp_gpv_num(v, "height", height > 13 ? 13 : height);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", runs[0]->path);
out:
    qp_words_free(&titles), qp_words_free(&rtitles);
    free(rows);
    free(cells);
    return rc;
}
