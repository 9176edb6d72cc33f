/* qerr_cols.c — qerr's column table, --sort and --summary. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"

static const char *c_file(const qerr_row *r) { return r->file; }
static const char *c_tensor(const qerr_row *r) { return r->tensor; }
static const char *c_format(const qerr_row *r) { return r->var->name; }
static int64_t c_rows(const qerr_row *r) { return r->rows; }
static int64_t c_cols(const qerr_row *r) { return r->cols; }
static int64_t c_n_blocks(const qerr_row *r) { return r->m.n_blocks; }
static int64_t c_nonfinite(const qerr_row *r) { return r->m.n_nonfinite; }
static double c_rel_l2(const qerr_row *r) { return r->m.rel_l2; }
static double c_snr_db(const qerr_row *r) { return r->m.snr_db; }
static double c_max_abs(const qerr_row *r) { return r->m.max_abs; }
static double c_cosine(const qerr_row *r) { return r->m.cosine; }
static double c_sat_frac(const qerr_row *r) { return r->m.sat_frac; }
static double c_zero_frac(const qerr_row *r) { return r->m.zero_frac; }
static double c_amax(const qerr_row *r) { return r->m.amax; }
static double c_scale(const qerr_row *r) { return r->m.scale; }
/* Block-scale statistics mean nothing for a format without block scales. */
static double c_bs_min(const qerr_row *r) { return r->m.n_blocks ? r->m.block_scale_min : NAN; }
static double c_bs_max(const qerr_row *r) { return r->m.n_blocks ? r->m.block_scale_max : NAN; }
static double c_bs_log2(const qerr_row *r) { return r->m.n_blocks ? r->m.block_scale_log2_mean : NAN; }

static double c_bs_std(const qerr_row *r) { return r->m.bsd.log2_std; }
static double c_bs_sat(const qerr_row *r) { return r->m.bsd.saturated_frac; }
static double c_bs_under(const qerr_row *r) { return r->m.bsd.underflow_frac; }
static double c_el_flushed(const qerr_row *r) { return r->m.elems_flushed_frac; }
static double c_el_sat(const qerr_row *r) { return r->m.elems_saturated_frac; }
static double c_dyn_range(const qerr_row *r) { return r->m.bsd.n_blocks ? r->m.bsd.dynamic_range_max_log2 : NAN; }
static const char *c_hist(const qerr_row *r) { return r->hist; }

char *qerr_hist_text(const qp_bscale_dist *d)
{
    size_t len = 1, o = 0;
    for (int k = 0; k < QP_BSHIST_BINS; k++) len += d->hist[k] ? 32 : 0;
    char *s = malloc(len);
    if (!s) return NULL;
    s[0] = '\0';
    for (int k = 0; k < QP_BSHIST_BINS; k++) {
        if (!d->hist[k]) continue;
        char bin[16];
        if (k == 0) snprintf(bin, sizeof bin, "zero");
        else if (k == 1) snprintf(bin, sizeof bin, "nan");
        else snprintf(bin, sizeof bin, "%d", k - QP_BSHIST_OFFSET);
        o += (size_t)snprintf(s + o, len - o, "%s%s:%lld", o ? " " : "", bin, (long long)d->hist[k]);
    }
    return s;
}

#define S(n, fn, text) {n, QERR_STR, 0, text, NULL, fn, NULL, NULL}
#define I(n, fn, text) {n, QERR_INT, 0, text, NULL, NULL, fn, NULL}
#define R(n, fn, low, text, fmt) {n, QERR_REAL, low, text, fmt, NULL, NULL, fn}

const qerr_col qerr_cols[] = {
    S("file", c_file, 0),
    S("tensor", c_tensor, 1),
    S("format", c_format, 1),
    I("rows", c_rows, 1),
    I("cols", c_cols, 1),
    R("rel_l2", c_rel_l2, 0, 1, "%.4g"),
    R("snr_db", c_snr_db, 1, 1, "%.2f"),
    R("max_abs", c_max_abs, 0, 1, "%.4g"),
    R("cosine", c_cosine, 1, 1, "%.6f"),
    R("sat_frac", c_sat_frac, 0, 1, "%.3g"),
    R("zero_frac", c_zero_frac, 0, 1, "%.3g"),
    R("amax", c_amax, 0, 1, "%.4g"),
    R("scale", c_scale, 0, 0, "%.4g"),
    I("n_blocks", c_n_blocks, 0),
    R("block_scale_min", c_bs_min, 0, 1, "%.4g"),
    R("block_scale_max", c_bs_max, 0, 1, "%.4g"),
    R("block_scale_log2_mean", c_bs_log2, 0, 0, "%.4g"),
    I("n_nonfinite", c_nonfinite, 0),
    R("block_scale_log2_std", c_bs_std, 0, 0, "%.4g"),
    R("block_scale_saturated_frac", c_bs_sat, 0, 0, "%.3g"),
    R("block_scale_underflow_frac", c_bs_under, 0, 0, "%.3g"),
    R("elems_flushed_frac", c_el_flushed, 0, 0, "%.3g"),
    R("elems_saturated_frac", c_el_sat, 0, 0, "%.3g"),
    R("block_dynamic_range_max_log2", c_dyn_range, 0, 0, "%.4g"),
    S("block_scale_hist", c_hist, 0),
};
const int qerr_ncols = (int)(sizeof qerr_cols / sizeof qerr_cols[0]);

const qerr_col *qerr_col_by_name(const char *name)
{
    for (int i = 0; i < qerr_ncols; i++)
        if (!strcmp(qerr_cols[i].name, name)) return &qerr_cols[i];
    return NULL;
}

const char *qerr_col_names(void)
{
    static char buf[1024];
    if (!buf[0]) {
        size_t o = 0;
        for (int i = 0; i < qerr_ncols; i++) {
            const size_t k = strlen(qerr_cols[i].name);
            if (o + k + 3 >= sizeof buf) break;
            if (i) {
                memcpy(buf + o, ", ", 2);
                o += 2;
            }
            memcpy(buf + o, qerr_cols[i].name, k);
            o += k;
        }
        buf[o] = '\0';
    }
    return buf;
}

/* Worst first: NaN (not applicable) always last, ties in input order. */
static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const qerr_col *c = arg;
    const qerr_row *a = pa, *b = pb;
    int r = 0;
    if (c->kind == QERR_STR) {
        r = strcmp(c->str(a), c->str(b));
    } else if (c->kind == QERR_INT) {
        const int64_t x = c->i64(a), y = c->i64(b);
        r = x > y ? -1 : x < y;
    } else {
        const double x = c->f64(a), y = c->f64(b);
        if (isnan(x) || isnan(y)) r = isnan(x) - isnan(y);
        else {
            r = x > y ? -1 : x < y;
            if (c->worst_low) r = -r;
        }
    }
    if (r) return r;
    return a->order < b->order ? -1 : a->order > b->order;
}

void qerr_sort(qerr_rows *rows, const qerr_col *key)
{
    qsort_r(rows->r, rows->n, sizeof *rows->r, cmp_rows, (void *)key);
}

void qerr_summarize(const qerr_rows *rows, const qerr_opts *o, qerr_summary *s)
{
    for (int v = 0; v < o->nvar; v++) {
        qerr_summary *x = &s[v];
        double sum_rel = 0, sum_snr = 0, sum_sat = 0, sum_zero = 0;
        int64_t n_rel = 0, n_snr = 0;
        memset(x, 0, sizeof *x);
        x->var = &o->var[v];
        x->worst_rel_l2 = NAN;
        for (size_t i = 0; i < rows->n; i++) {
            const qerr_row *r = &rows->r[i];
            if (r->var != x->var) continue;
            x->tensors++;
            sum_sat += r->m.sat_frac;
            sum_zero += r->m.zero_frac;
            if (isfinite(r->m.rel_l2)) {
                sum_rel += r->m.rel_l2;
                n_rel++;
            }
            if (isinf(r->m.snr_db) && r->m.snr_db > 0) x->exact++;
            else if (isfinite(r->m.snr_db)) {
                sum_snr += r->m.snr_db;
                n_snr++;
            }
            if (!isnan(r->m.rel_l2) && (!x->worst_tensor || r->m.rel_l2 > x->worst_rel_l2)) {
                x->worst_tensor = r->tensor;
                x->worst_file = r->file;
                x->worst_rel_l2 = r->m.rel_l2;
            }
        }
        x->mean_rel_l2 = n_rel ? sum_rel / (double)n_rel : NAN;
        x->mean_snr_db = n_snr ? sum_snr / (double)n_snr : NAN;
        x->mean_sat_frac = x->tensors ? sum_sat / (double)x->tensors : NAN;
        x->mean_zero_frac = x->tensors ? sum_zero / (double)x->tensors : NAN;
    }
}
