/* fig_qerr.c — heatmaps of runs' quantization error over steps: one run,
 * or several side by side (a panel per run, e.g. one per recipe), sharing
 * rows, steps and the colour scale.
 *
 * Rows are the (layer, GEMM, pass, operand) combinations the run logged,
 * block 0 on top, GEMMs in forward order (qkv, attproj, fc, fcproj; the
 * Llama's gate, up, down), passes
 * fprop, dgrad, wgrad, operands x, w, dy; columns are the logged steps, a
 * cell reaching halfway to its neighbours. Colour: log10(rel_l2). A cell
 * never logged (a step being written right now) or exactly 0 (nothing was
 * lost) is left blank; the figure says when the latter happens.
 *
 * Rows are labelled in three levels so the labels stay short: "pass
 * operand" at every row, the GEMM once per group of rows, the block once per
 * layer. Each row gets 0.09 in (6.5 pt labels), so the figure grows with the
 * model, up to 10 in; past that the per-row labels go, then the GEMM ones.
 *
 * Rows the run's recipe keeps in BF16 (its recipe_plan; NVIDIA's NVFP4
 * recipe leaves the last blocks in BF16) hold BF16's rounding error only,
 * far below the quantized rows: they are veiled and labelled "kept in BF16
 * by the recipe", and the colour scale spans the quantized rows.
 *
 * Data file, index i (run i): x_lo x_hi y_lo y_hi log10_rel_l2   (a row per cell);
 * index n + i: x_lo x_hi y_lo y_hi of each span of run i's BF16 rows ("NaN"
 * when it has none)
 * Variables: npanels, titles (the runs' recipes, for several panels), nrows, rowlabels, groups + gpos (GEMM labels and the row they
 * centre on), layers + lpos (block labels), gbreaks / lbreaks (y between
 * two GEMMs' / layers' rows), xmin, xmax, xtic, cbmin, cbmax, nexact,
 * title, height (inches), bf16n (per run, its BF16 spans). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"

#define ROW_IN 0.09
#define MAX_HEIGHT_IN 10.0

static int order_of(const char *s, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return i;
    return n;
}

static const char *const GEMMS[] = {"qkv", "attproj", "fc", "fcproj", "gate", "up", "down"}; /* GPT, then Llama MLP */
#define NGEMMS (int)(sizeof GEMMS / sizeof *GEMMS)
static const char *const PASSES[] = {"fprop", "dgrad", "wgrad"};
static const char *const OPERANDS[] = {"x", "w", "dy"};

static int cmp_row(const void *pa, const void *pb)
{
    const qp_qerr_rec *a = *(const qp_qerr_rec *const *)pa, *b = *(const qp_qerr_rec *const *)pb;
    if (a->layer != b->layer) return a->layer < b->layer ? -1 : 1;
    int c = order_of(a->gemm, GEMMS, NGEMMS) - order_of(b->gemm, GEMMS, NGEMMS);
    if (!c) c = strcmp(a->gemm, b->gemm);
    if (!c) c = order_of(a->pass, PASSES, 3) - order_of(b->pass, PASSES, 3);
    if (!c) c = strcmp(a->pass, b->pass);
    if (!c) c = order_of(a->operand, OPERANDS, 3) - order_of(b->operand, OPERANDS, 3);
    if (!c) c = strcmp(a->operand, b->operand);
    return c;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int same_row(const qp_qerr_rec *a, const qp_qerr_rec *b)
{
    return a->layer == b->layer && !strcmp(a->gemm, b->gemm) && !strcmp(a->pass, b->pass) &&
           !strcmp(a->operand, b->operand);
}

/* 1, 2 or 5 times a power of ten giving at most 5 tics over span */
static double tic_step(double span)
{
    if (!(span > 0)) return 1;
    double raw = span / 5, e = pow(10, floor(log10(raw)));
    double f = raw / e;
    double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
    return step < 1 ? 1 : step; /* steps are integers */
}

/* 1 if r's recipe plan (the root attribute recipe_plan: one rule per line,
 * "L0-2[.GEMM+GEMM].pass.operand=format[:options]", docs/recipes.md) keeps
 * q's operand in BF16: a block the recipe leaves unquantized, whose error is
 * BF16's rounding only. 0 when the plan says otherwise or the file has none. */
static int plan_bf16(const qp_run *r, const qp_qerr_rec *q)
{
    const char *plan = qp_run_attr(r, "recipe_plan");
    for (const char *line = plan; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        if (len < sizeof buf && line[0] == 'L') {
            memcpy(buf, line, len);
            buf[len] = 0;
            char *eq = strchr(buf, '=');
            if (eq) {
                *eq = 0;
                char *fmt = eq + 1, *colon = strchr(fmt, ':');
                if (colon) *colon = 0;
                char *tok[4], *save = NULL;
                int nt = 0;
                for (char *t = strtok_r(buf, ".", &save); t && nt < 4; t = strtok_r(NULL, ".", &save)) tok[nt++] = t;
                long a = -1, b = -1;
                if (nt >= 3) {
                    char *dash;
                    a = strtol(tok[0] + 1, &dash, 10);
                    b = *dash == '-' ? strtol(dash + 1, NULL, 10) : a;
                }
                int gemm_ok = nt == 3;
                if (nt == 4) /* "qkv+attproj+fc" */
                    for (char *g = strtok_r(tok[1], "+", &save); g && !gemm_ok; g = strtok_r(NULL, "+", &save))
                        gemm_ok = !strcmp(g, q->gemm);
                if ((nt == 3 || nt == 4) && gemm_ok && q->layer >= a && q->layer <= b &&
                    !strcmp(tok[nt - 2], q->pass) && !strcmp(tok[nt - 1], q->operand))
                    return !strcmp(fmt, "bf16");
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* Labels: rows, GEMM groups, layers, and the lines between groups. */
static int label_rows(const qp_qerr_rec *const *rows, size_t nrows, qp_gpvars *v, char *err, size_t errlen)
{
    qp_words rl = {0}, groups = {0}, gpos = {0}, layers = {0}, lpos = {0}, gb = {0}, lb = {0};
    int row_labels = nrows * ROW_IN <= MAX_HEIGHT_IN - 0.9;
    int group_labels = nrows <= 2 * (size_t)((MAX_HEIGHT_IN - 0.9) / ROW_IN);
    size_t gstart = 0, lstart = 0;
    for (size_t row = 0; row <= nrows; row++) {
        const qp_qerr_rec *q = row < nrows ? rows[row] : NULL, *p = row ? rows[row - 1] : NULL;
        int new_layer = !p || !q || q->layer != p->layer;
        int new_gemm = new_layer || strcmp(q->gemm, p->gemm);
        if (p && new_gemm) { /* close the group [gstart, row) */
            if (group_labels) {
                qp_words_add(&groups, "%s", p->gemm);
                qp_words_add(&gpos, "%.1f", (gstart + row - 1) / 2.0);
            }
            if (q && !new_layer) qp_words_add(&gb, "%.1f", row - 0.5);
            gstart = row;
        }
        if (p && new_layer) {
            qp_words_add(&layers, "block %lld", (long long)p->layer);
            qp_words_add(&lpos, "%.1f", (lstart + row - 1) / 2.0);
            if (q) qp_words_add(&lb, "%.1f", row - 0.5);
            lstart = row;
        }
        if (q) {
            if (row_labels)
                qp_words_add(&rl, "%s %s", q->pass, q->operand);
            else
                qp_words_add(&rl, "%s", "");
        }
    }
    int oom = rl.oom || groups.oom || gpos.oom || layers.oom || lpos.oom || gb.oom || lb.oom;
    if (oom) snprintf(err, errlen, "out of memory");
    qp_gpv_words(v, "rowlabels", (const char *const *)rl.w, rl.n);
    qp_gpv_words(v, "groups", (const char *const *)groups.w, groups.n);
    qp_gpv_words(v, "gpos", (const char *const *)gpos.w, gpos.n);
    qp_gpv_words(v, "layers", (const char *const *)layers.w, layers.n);
    qp_gpv_words(v, "lpos", (const char *const *)lpos.w, lpos.n);
    qp_gpv_words(v, "gbreaks", (const char *const *)gb.w, gb.n);
    qp_gpv_words(v, "lbreaks", (const char *const *)lb.w, lb.n);
    qp_words_free(&rl), qp_words_free(&groups), qp_words_free(&gpos), qp_words_free(&layers);
    qp_words_free(&lpos), qp_words_free(&gb), qp_words_free(&lb);
    return oom ? -1 : 0;
}

int qp_fig_qerr(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen)
{
    (void)o;
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        if (!runs[i]->n_qerr) {
            snprintf(err, errlen, "%s: no /quant/error rows (qtrain logs them with --qerr-every N)", runs[i]->path);
            return -1;
        }
        m += runs[i]->n_qerr;
    }
    const qp_qerr_rec **sorted = malloc(m * sizeof *sorted);
    const qp_qerr_rec **rows = malloc(m * sizeof *rows);
    int64_t *steps = malloc(m * sizeof *steps);
    double *z = NULL;
    char *bf = NULL;
    qp_words titles = {0}, bf16n = {0};
    int rc = -1;
    if (!sorted || !rows || !steps) goto oom;

    /* distinct rows and steps over every run: the panels share both axes */
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < runs[i]->n_qerr; j++) sorted[k] = &runs[i]->qerr[j], steps[k++] = runs[i]->qerr[j].step;
    qsort(sorted, m, sizeof *sorted, cmp_row);
    size_t nrows = 0;
    for (size_t i = 0; i < m; i++)
        if (!nrows || !same_row(rows[nrows - 1], sorted[i])) rows[nrows++] = sorted[i];
    qsort(steps, m, sizeof *steps, cmp_i64);
    size_t nsteps = 0;
    for (size_t i = 0; i < m; i++)
        if (!nsteps || steps[nsteps - 1] != steps[i]) steps[nsteps++] = steps[i];

    z = malloc(nrows * nsteps * sizeof *z);
    bf = calloc(nrows * (size_t)n, 1);
    if (!z || !bf) goto oom;
    /* the rows each run's recipe keeps in BF16; the colour scale is the
     * quantized rows' (BF16's rounding would stretch it, and those rows are
     * veiled and labelled) unless nothing else was logged */
    int anyq = 0;
    for (int i = 0; i < n; i++)
        for (size_t row = 0; row < nrows; row++) {
            bf[(size_t)i * nrows + row] = (char)plan_bf16(runs[i], rows[row]);
            anyq |= !bf[(size_t)i * nrows + row];
        }
    double lo = INFINITY, hi = -INFINITY;
    size_t nexact = 0;
    for (int i = 0; i < n; i++) {
        const qp_run *r = runs[i];
        /* the matrix of run i; a later row for the same cell wins */
        for (size_t c = 0; c < nrows * nsteps; c++) z[c] = NAN;
        for (size_t j = 0; j < r->n_qerr; j++) {
            const qp_qerr_rec *q = &r->qerr[j];
            const qp_qerr_rec **hit = bsearch(&q, rows, nrows, sizeof *rows, cmp_row);
            const int64_t *col = bsearch(&q->step, steps, nsteps, sizeof *steps, cmp_i64);
            double e = q->rel_l2;
            z[(size_t)(hit - rows) * nsteps + (size_t)(col - steps)] = e > 0 && isfinite(e) ? log10(e) : NAN;
            if (e == 0) nexact++;
        }
        int any = 0;
        for (size_t c = 0; c < nrows * nsteps; c++)
            if (isfinite(z[c])) {
                any = 1;
                if (anyq && bf[(size_t)i * nrows + c / nsteps]) continue;
                if (z[c] < lo) lo = z[c];
                if (z[c] > hi) hi = z[c];
            }
        if (!any) {
            snprintf(err, errlen, "%s: every logged quantization error is 0 (recipe %s quantizes nothing)", r->path,
                     r->recipe);
            goto out;
        }
        /* cells: each step's column reaches halfway to its neighbours */
        fprintf(data, "# %s: x_lo x_hi y_lo y_hi log10(rel_l2)\n", r->path);
        for (size_t c = 0; c < nsteps; c++) {
            double st = (double)steps[c];
            double left = c ? (st - (double)steps[c - 1]) / 2 : nsteps > 1 ? ((double)steps[1] - st) / 2 : 0.5;
            double right = c + 1 < nsteps ? ((double)steps[c + 1] - st) / 2 : left;
            for (size_t row = 0; row < nrows; row++) {
                double val = z[row * nsteps + c];
                if (!isfinite(val)) continue;
                fprintf(data, "%.9g %.9g %.1f %.1f %.6f\n", st - left, st + right, row - 0.5, row + 0.5, val);
            }
        }
        fputs("\n\n", data);
        if (n > 1) qp_words_add(&titles, "%s", r->recipe);
    }
    if (hi - lo < 0.02) lo -= 0.01, hi += 0.01; /* one colour: still a readable scale */
    double s0 = (double)steps[0], s1 = (double)steps[nsteps - 1];
    double x0 = s0 - (nsteps > 1 ? ((double)steps[1] - s0) / 2 : 0.5);
    double x1 = s1 + (nsteps > 1 ? (s1 - (double)steps[nsteps - 2]) / 2 : 0.5);
    /* per panel: the spans of consecutive BF16 rows (a "NaN" row when none,
     * so the block exists; bf16n says which panels have spans) */
    for (int i = 0; i < n; i++) {
        fprintf(data, "# %s BF16 rows: x_lo x_hi y_lo y_hi\n", runs[i]->path);
        int spans = 0;
        for (size_t row = 0; row < nrows; row++) {
            if (!bf[(size_t)i * nrows + row] || (row && bf[(size_t)i * nrows + row - 1])) continue;
            size_t last = row;
            while (last + 1 < nrows && bf[(size_t)i * nrows + last + 1]) last++;
            fprintf(data, "%.9g %.9g %.1f %.1f\n", x0, x1, row - 0.5, last + 0.5);
            spans++;
        }
        if (!spans) fputs("NaN NaN NaN NaN\n", data);
        fputs("\n\n", data);
        qp_words_add(&bf16n, "%d", spans);
    }

    if (label_rows(rows, nrows, v, err, errlen)) goto out;
    char title[2 * QP_LABEL_LEN];
    const char *base = strrchr(runs[0]->path, '/');
    if (n == 1) snprintf(title, sizeof title, "%s (%s)", runs[0]->recipe, base ? base + 1 : runs[0]->path);
    else snprintf(title, sizeof title, "%d runs", n);
    double height = 0.9 + ROW_IN * (double)nrows;
    height = height < 2.6 ? 2.6 : height > MAX_HEIGHT_IN ? MAX_HEIGHT_IN : height;
    if (titles.oom || bf16n.oom) goto oom;
    qp_gpv_words(v, "bf16n", (const char *const *)bf16n.w, bf16n.n);

    qp_gpv_int(v, "npanels", n);
    qp_gpv_words(v, "titles", (const char *const *)titles.w, titles.n);
    qp_gpv_int(v, "nrows", (long long)nrows);
    qp_gpv_num(v, "xmin", x0);
    qp_gpv_num(v, "xmax", x1);
    qp_gpv_num(v, "xtic", tic_step(x1 - x0));
    qp_gpv_num(v, "cbmin", lo);
    qp_gpv_num(v, "cbmax", hi);
    qp_gpv_int(v, "nexact", (long long)nexact);
    qp_gpv_str(v, "title", title);
    qp_gpv_num(v, "height", height);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", runs[0]->path);
out:
    qp_words_free(&titles);
    qp_words_free(&bf16n);
    free(bf);
    free(sorted);
    free(rows);
    free(steps);
    free(z);
    return rc;
}
