/* qs_report.c — summary files (see qs_report.h). */
#include "qs_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_csv.h"
#include "qp_h5table.h"

#define MSG_WIDTH 512

/* A table in memory: columns, then nrows x ncols cells in row order. */
typedef struct {
    qp_h5col cols[512];
    const char *md[512];   /* printf format of a number in Markdown, or a header note */
    char names[512][48];
    int ncols, nrows;
    qp_h5cell *cells;
    char *msgs;            /* nrows x MSG_WIDTH: messages cut to fit their column */
} table;

static void col(table *t, const char *name, qp_h5col_type type, const char *md)
{
    if (t->ncols >= 512) return;
    snprintf(t->names[t->ncols], sizeof t->names[0], "%s", name);
    t->cols[t->ncols] = (qp_h5col){t->names[t->ncols], type, 1};
    t->md[t->ncols++] = md;
}

static qp_h5cell *cell(table *t, int r, int c)
{
    return &t->cells[(size_t)r * t->ncols + c];
}

/* Cut s to fewer than width bytes, never inside a UTF-8 character. */
static void cut_utf8(const char *s, char *dst, size_t width)
{
    size_t n = strlen(s);
    if (n >= width) {
        n = width - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A phase's column name without its "_ms": the summary's "<stem>_share". */
static const char *phase_stem(int k)
{
    static char buf[QP_PHASE_COUNT][48];
    const char *c = qp_phases[k].column;
    const size_t n = strlen(c) > 3 && !strcmp(c + strlen(c) - 3, "_ms") ? strlen(c) - 3 : strlen(c);
    snprintf(buf[k], sizeof buf[k], "%.*s", (int)n, c);
    return buf[k];
}

static int axis_cols(table *t, const qs_summary *s, int skip_seed)
{
    for (int a = 0; a < s->e->naxes; a++)
        if (!(skip_seed && a == s->seed_axis)) col(t, s->e->axes[a].key, QP_H5COL_STR, NULL);
    return 0;
}

static int build_runs(table *t, const qs_summary *s)
{
    memset(t, 0, sizeof *t);
    col(t, "name", QP_H5COL_STR, NULL);
    axis_cols(t, s, 0);
    col(t, "status", QP_H5COL_STR, NULL);
    col(t, "steps", QP_H5COL_I64, NULL);
    col(t, "final_train_loss", QP_H5COL_F64, "%.4f");
    col(t, "final_val_loss", QP_H5COL_F64, "%.4f");
    col(t, "gap_abs", QP_H5COL_F64, "%+.4f");
    col(t, "gap_pct", QP_H5COL_F64, "%+.2f");
    col(t, "steps_to_target", QP_H5COL_I64, NULL);
    for (int k = 0; k < QS_NKINDS; k++) {
        char n[48];
        snprintf(n, sizeof n, "ev_%s", qs_event_kinds[k]);
        col(t, n, QP_H5COL_I64, NULL);
    }
    for (int l = 0; l < s->nlayers; l++) {
        char n[48];
        snprintf(n, sizeof n, "qerr_layer%d", l);
        col(t, n, QP_H5COL_F64, "%.4g");
    }
    col(t, "tokens_per_s_median", QP_H5COL_F64, "%.0f");
    col(t, "data_wait_share", QP_H5COL_F64, "%.4f");
    col(t, "step_ms_median", QP_H5COL_F64, "%.1f");
    col(t, "threads_median", QP_H5COL_F64, "%g");
    for (int k = 0; k < QP_PHASE_COUNT; k++) {
        if (k == QP_PHASE_DATA) continue; /* data_wait_share */
        char n[48];
        snprintf(n, sizeof n, "%.40s_share", phase_stem(k));
        col(t, n, QP_H5COL_F64, "%.3f");
    }
    col(t, "params_nonembedding", QP_H5COL_F64, "%.0f");
    col(t, "tokens_per_param_actual", QP_H5COL_F64, "%.1f"); /* the axis of that name is the asked value */
    col(t, "epochs", QP_H5COL_F64, "%.2f");
    col(t, "noise_twin", QP_H5COL_I64, NULL);
    /* the run's group's interval, so summary.csv (this table) carries it too */
    col(t, "gap_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "gap_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "resolved", QP_H5COL_I64, NULL);
    /* attribution runs: the block, and this seed's share of its parent's gap */
    col(t, "block", QP_H5COL_I64, NULL);
    col(t, "share_pct", QP_H5COL_F64, "%+.1f");
    col(t, "diverged", QP_H5COL_STR, NULL);
    col(t, "message", QP_H5COL_STR, NULL);
    t->nrows = s->p->n;
    t->cells = calloc((size_t)(t->nrows ? t->nrows : 1) * t->ncols, sizeof *t->cells);
    t->msgs = calloc((size_t)(t->nrows ? t->nrows : 1), MSG_WIDTH);
    if (!t->cells || !t->msgs) return -1;
    for (int i = 0; i < t->nrows; i++) {
        const qs_row *r = &s->rows[i];
        const qs_run *run = &s->p->runs[i];
        int c = 0;
        cell(t, i, c++)->str = run->name;
        for (int a = 0; a < s->e->naxes; a++) cell(t, i, c++)->str = qs_grid_value(s->e, run, a);
        cell(t, i, c++)->str = r->status;
        cell(t, i, c++)->i64 = r->st.steps;
        cell(t, i, c++)->f64 = r->st.final_train;
        cell(t, i, c++)->f64 = r->st.final_val;
        cell(t, i, c++)->f64 = r->gap_abs;
        cell(t, i, c++)->f64 = r->gap_pct;
        cell(t, i, c++)->i64 = r->st.steps_to_target;
        for (int k = 0; k < QS_NKINDS; k++) cell(t, i, c++)->i64 = r->st.events[k];
        for (int l = 0; l < s->nlayers; l++) cell(t, i, c++)->f64 = l < r->st.nqerr ? r->st.qerr[l] : NAN;
        cell(t, i, c++)->f64 = r->st.tokps_median;
        cell(t, i, c++)->f64 = r->st.wait_share;
        cell(t, i, c++)->f64 = r->st.step_ms_median;
        cell(t, i, c++)->f64 = r->st.threads_median;
        for (int k = 0; k < QP_PHASE_COUNT; k++)
            if (k != QP_PHASE_DATA) cell(t, i, c++)->f64 = r->st.phase_share[k];
        cell(t, i, c++)->f64 = r->st.params_nonembedding;
        cell(t, i, c++)->f64 = r->st.tokens_per_param;
        cell(t, i, c++)->f64 = r->st.epochs;
        cell(t, i, c++)->i64 = run->twin_of >= 0;
        const qs_ci *gc = &s->groups[r->group].gap_ci;
        cell(t, i, c++)->f64 = gc->lo;
        cell(t, i, c++)->f64 = gc->hi;
        cell(t, i, c++)->i64 = gc->resolved;
        cell(t, i, c++)->i64 = run->block;
        cell(t, i, c++)->f64 = run->attr_of >= 0 ? 100.0 * r->gap_pct / s->rows[run->attr_of].gap_pct : NAN;
        cell(t, i, c++)->str = r->diverged ? "yes" : "no";
        char *m = t->msgs + (size_t)i * MSG_WIDTH;
        cut_utf8(r->message, m, MSG_WIDTH);
        cell(t, i, c++)->str = m;
    }
    return 0;
}

/* The groups of one kind: noise = 0 the recipe groups (/recipes), 1 the
 * noise twins' (/noise). */
static int build_groups(table *t, const qs_summary *s, int noise)
{
    memset(t, 0, sizeof *t);
    col(t, "group", QP_H5COL_STR, NULL);
    axis_cols(t, s, 1);
    col(t, "n_runs", QP_H5COL_I64, NULL);
    col(t, "n_seeds", QP_H5COL_I64, NULL);
    col(t, "n_diverged", QP_H5COL_I64, NULL);
    col(t, "n_failed", QP_H5COL_I64, NULL);
    col(t, "val_loss_mean", QP_H5COL_F64, "%.4f");
    col(t, "val_loss_std", QP_H5COL_F64, "%.4f");
    col(t, "gap_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "gap_pct_std", QP_H5COL_F64, "%.2f");
    col(t, "gap_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "gap_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "resolved", QP_H5COL_I64, NULL);
    col(t, "ci_method", QP_H5COL_STR, NULL);
    col(t, "gap_pct_rms", QP_H5COL_F64, "%.2f");
    col(t, "params_nonembedding", QP_H5COL_F64, "%.0f");
    col(t, "tokens_per_param_actual", QP_H5COL_F64, "%.1f"); /* the axis of that name is the asked value */
    col(t, "epochs_max", QP_H5COL_F64, "%.2f");
    for (int g = 0; g < s->ngroups; g++) t->nrows += s->groups[g].noise == noise && s->groups[g].block < 0;
    t->cells = calloc((size_t)(t->nrows ? t->nrows : 1) * t->ncols, sizeof *t->cells);
    if (!t->cells) return -1;
    for (int g = 0, row = 0; g < s->ngroups; g++) {
        const qs_group *G = &s->groups[g];
        if (G->noise != noise || G->block >= 0) continue;
        const int gi = row++;
        int c = 0;
        cell(t, gi, c++)->str = G->name;
        for (int a = 0; a < s->e->naxes; a++)
            if (a != s->seed_axis) cell(t, gi, c++)->str = qs_grid_value(s->e, &s->p->runs[G->first], a);
        cell(t, gi, c++)->i64 = G->n_runs;
        cell(t, gi, c++)->i64 = G->n_seeds;
        cell(t, gi, c++)->i64 = G->n_diverged;
        cell(t, gi, c++)->i64 = G->n_failed;
        cell(t, gi, c++)->f64 = G->val_mean;
        cell(t, gi, c++)->f64 = G->val_std;
        cell(t, gi, c++)->f64 = G->gap_mean;
        cell(t, gi, c++)->f64 = G->gap_std;
        cell(t, gi, c++)->f64 = G->gap_ci.lo;
        cell(t, gi, c++)->f64 = G->gap_ci.hi;
        cell(t, gi, c++)->i64 = G->gap_ci.resolved;
        cell(t, gi, c++)->str = G->gap_ci.method;
        cell(t, gi, c++)->f64 = G->gap_rms;
        cell(t, gi, c++)->f64 = G->params_nonembedding;
        cell(t, gi, c++)->f64 = G->tokens_per_param;
        cell(t, gi, c++)->f64 = G->epochs_max;
    }
    return 0;
}

/* /attribution: a row per qs_attr_row. Names and numbers it points to live
 * in names[] (one per row). */
static int build_attr(table *t, const qs_summary *s, char (*names)[288], char (*blocks)[16])
{
    memset(t, 0, sizeof *t);
    col(t, "group", QP_H5COL_STR, NULL);
    axis_cols(t, s, 1);
    col(t, "block", QP_H5COL_STR, NULL);
    col(t, "quantized", QP_H5COL_I64, NULL);
    col(t, "n_seeds", QP_H5COL_I64, NULL);
    col(t, "gap_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "gap_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "gap_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "resolved", QP_H5COL_I64, NULL);
    col(t, "full_gap_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "share_pct", QP_H5COL_F64, "%+.1f");
    col(t, "share_ci_lo", QP_H5COL_F64, "%+.1f");
    col(t, "share_ci_hi", QP_H5COL_F64, "%+.1f");
    col(t, "share_resolved", QP_H5COL_I64, NULL);
    col(t, "share_method", QP_H5COL_STR, NULL);
    t->nrows = s->nattr;
    t->cells = calloc((size_t)(t->nrows ? t->nrows : 1) * t->ncols, sizeof *t->cells);
    if (!t->cells) return -1;
    for (int i = 0; i < s->nattr; i++) {
        const qs_attr_row *A = &s->attr[i];
        const qs_group *G = &s->groups[A->group];
        if (A->block < 0) snprintf(blocks[i], sizeof blocks[i], "sum");
        else snprintf(blocks[i], sizeof blocks[i], "%d", A->block);
        snprintf(names[i], sizeof names[i], "%s_block=%s", G->name, blocks[i]);
        int c = 0;
        cell(t, i, c++)->str = names[i];
        for (int a = 0; a < s->e->naxes; a++)
            if (a != s->seed_axis) cell(t, i, c++)->str = qs_grid_value(s->e, &s->p->runs[G->first], a);
        cell(t, i, c++)->str = blocks[i];
        cell(t, i, c++)->i64 = A->quantized;
        cell(t, i, c++)->i64 = A->share.n;
        cell(t, i, c++)->f64 = A->gap_ci.mean;
        cell(t, i, c++)->f64 = A->quantized ? A->gap_ci.lo : 0.0;
        cell(t, i, c++)->f64 = A->quantized ? A->gap_ci.hi : 0.0;
        cell(t, i, c++)->i64 = A->quantized ? A->gap_ci.resolved : 0;
        cell(t, i, c++)->f64 = A->share.mean_b;
        cell(t, i, c++)->f64 = 100.0 * A->share.ratio;
        cell(t, i, c++)->f64 = 100.0 * A->share.lo;
        cell(t, i, c++)->f64 = 100.0 * A->share.hi;
        cell(t, i, c++)->i64 = A->share.resolved;
        cell(t, i, c++)->str = A->share.method;
    }
    return 0;
}

/* A share as people read it: "+33.4% [+20.1, +46.0] resolved", "(unbounded:
 * the full gap is unresolved)", "0 (kept in the baseline's format)". */
void qs_report_share_text(const qs_attr_row *A, char *buf, size_t len)
{
    const qs_ratio *r = &A->share;
    if (!A->quantized) snprintf(buf, len, "0 (kept in the baseline's format)");
    else if (isnan(r->ratio)) snprintf(buf, len, "–");
    else if (!strcmp(r->method, "none")) snprintf(buf, len, "%+.1f%% (%d seed%s: no interval)", 100 * r->ratio, r->n,
                                                  r->n == 1 ? "" : "s");
    else if (!strcmp(r->method, "unbounded"))
        snprintf(buf, len, "%+.1f%% [unbounded: the full gap is unresolved]", 100 * r->ratio);
    else snprintf(buf, len, "%+.1f%% [%+.1f, %+.1f] %s", 100 * r->ratio, 100 * r->lo, 100 * r->hi,
                  r->resolved ? "resolved" : "unresolved");
}

/* /contrast: a row per qs_contrast_row (none, and every axis but seed as a
 * column, without contrast). */
static int build_contrast(table *t, const qs_summary *s)
{
    memset(t, 0, sizeof *t);
    const int ax = s->contrast_axis;
    col(t, "contrast", QP_H5COL_STR, NULL);
    for (int a = 0; a < s->e->naxes; a++)
        if (a != s->seed_axis && a != ax) col(t, s->e->axes[a].key, QP_H5COL_STR, NULL);
    col(t, "axis", QP_H5COL_STR, NULL);
    col(t, "value_a", QP_H5COL_STR, NULL);
    col(t, "value_b", QP_H5COL_STR, NULL);
    col(t, "n_seeds", QP_H5COL_I64, NULL);
    col(t, "n_unpaired", QP_H5COL_I64, NULL);
    col(t, "gap_a_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "gap_a_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "gap_a_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "gap_a_resolved", QP_H5COL_I64, NULL);
    col(t, "gap_b_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "gap_b_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "gap_b_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "gap_b_resolved", QP_H5COL_I64, NULL);
    col(t, "diff_pct_mean", QP_H5COL_F64, "%+.2f");
    col(t, "diff_pct_sd", QP_H5COL_F64, "%.2f");
    col(t, "diff_pct_ci_lo", QP_H5COL_F64, "%+.2f");
    col(t, "diff_pct_ci_hi", QP_H5COL_F64, "%+.2f");
    col(t, "resolved", QP_H5COL_I64, NULL);
    col(t, "gap_a_abs_mean", QP_H5COL_F64, "%+.4f");
    col(t, "gap_b_abs_mean", QP_H5COL_F64, "%+.4f");
    col(t, "diff_abs_mean", QP_H5COL_F64, "%+.4f");
    col(t, "diff_abs_ci_lo", QP_H5COL_F64, "%+.4f");
    col(t, "diff_abs_ci_hi", QP_H5COL_F64, "%+.4f");
    col(t, "diff_abs_resolved", QP_H5COL_I64, NULL);
    col(t, "ci_method", QP_H5COL_STR, NULL);
    col(t, "message", QP_H5COL_STR, NULL);
    t->nrows = s->ncontrast;
    t->cells = calloc((size_t)(t->nrows ? t->nrows : 1) * t->ncols, sizeof *t->cells);
    if (!t->cells) return -1;
    for (int i = 0; i < s->ncontrast; i++) {
        const qs_contrast_row *C = &s->contrast[i];
        const qs_run *rb = &s->p->runs[s->groups[C->group_b].first];
        int c = 0;
        cell(t, i, c++)->str = C->name;
        for (int a = 0; a < s->e->naxes; a++)
            if (a != s->seed_axis && a != ax) cell(t, i, c++)->str = qs_grid_value(s->e, rb, a);
        cell(t, i, c++)->str = s->e->axes[ax].key;
        cell(t, i, c++)->str = s->e->axes[ax].values[0];
        cell(t, i, c++)->str = s->e->axes[ax].values[C->value_b];
        cell(t, i, c++)->i64 = C->pct.n;
        cell(t, i, c++)->i64 = C->n_unpaired;
        const qs_ci *sides[] = {&C->pct.a, &C->pct.b};
        for (int k = 0; k < 2; k++) {
            cell(t, i, c++)->f64 = sides[k]->mean;
            cell(t, i, c++)->f64 = sides[k]->lo;
            cell(t, i, c++)->f64 = sides[k]->hi;
            cell(t, i, c++)->i64 = sides[k]->resolved;
        }
        cell(t, i, c++)->f64 = C->pct.diff.mean;
        cell(t, i, c++)->f64 = C->pct.diff.sd;
        cell(t, i, c++)->f64 = C->pct.diff.lo;
        cell(t, i, c++)->f64 = C->pct.diff.hi;
        cell(t, i, c++)->i64 = C->pct.diff.resolved;
        cell(t, i, c++)->f64 = C->nats.a.mean;
        cell(t, i, c++)->f64 = C->nats.b.mean;
        cell(t, i, c++)->f64 = C->nats.diff.mean;
        cell(t, i, c++)->f64 = C->nats.diff.lo;
        cell(t, i, c++)->f64 = C->nats.diff.hi;
        cell(t, i, c++)->i64 = C->nats.diff.resolved;
        cell(t, i, c++)->str = C->pct.diff.method;
        cell(t, i, c++)->str = C->message;
    }
    return 0;
}

static void table_free(table *t)
{
    free(t->cells), free(t->msgs);
}

static void write_csv(FILE *f, table *t)
{
    for (int c = 0; c < t->ncols; c++) fprintf(f, "%s%s", c ? "," : "", t->names[c]);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c) fputc(',', f);
            const qp_h5cell *v = cell(t, r, c);
            if (t->cols[c].type == QP_H5COL_STR) qp_csv_str(f, v->str);
            else if (t->cols[c].type == QP_H5COL_I64) fprintf(f, "%lld", (long long)v->i64);
            else if (isnan(v->f64)) fputs("nan", f);
            else fprintf(f, "%.10g", v->f64);
        }
        fputc('\n', f);
    }
}

static void md_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else fputc(*s == '\n' ? ' ' : *s, f);
    }
}

/* Markdown: every column but the message (listed under the tables). */
static void write_md_table(FILE *f, table *t, int ncols)
{
    for (int c = 0; c < ncols; c++) fprintf(f, "| %s ", t->names[c]);
    fputs("|\n", f);
    for (int c = 0; c < ncols; c++) fputs(t->cols[c].type == QP_H5COL_STR ? "|---" : "|---:", f);
    fputs("|\n", f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < ncols; c++) {
            const qp_h5cell *v = cell(t, r, c);
            fputs("| ", f);
            if (t->cols[c].type == QP_H5COL_STR) md_str(f, v->str);
            else if (t->cols[c].type == QP_H5COL_I64) fprintf(f, "%lld", (long long)v->i64);
            else if (isnan(v->f64)) fputs("–", f);
            else fprintf(f, t->md[c], v->f64);
            fputc(' ', f);
        }
        fputs("|\n", f);
    }
}

void qs_report_ci_text(const qs_ci *c, int decimals, const char *unit, int verdict, char *buf, size_t len)
{
    if (isnan(c->mean)) snprintf(buf, len, "–");
    else if (isnan(c->lo))
        snprintf(buf, len, "%+.*f%s (%d seed%s: no interval)", decimals, c->mean, unit, c->n, c->n == 1 ? "" : "s");
    else snprintf(buf, len, "%+.*f%s [%+.*f, %+.*f]%s", decimals, c->mean, unit, decimals, c->lo, decimals, c->hi,
                  !verdict ? "" : c->resolved ? " resolved" : " unresolved");
}

int qs_report_is_baseline(const qs_summary *s, const qs_group *G)
{
    return !G->noise && G->block < 0 && !strcmp(qs_grid_recipe(s->e, &s->p->runs[G->first]), s->e->baseline);
}

void qs_report_gap_text(const qs_summary *s, const qs_group *G, char *buf, size_t len)
{
    if (s && qs_report_is_baseline(s, G)) {
        snprintf(buf, len, "0 (the baseline)");
        return;
    }
    qs_ci c = G->gap_ci;
    c.mean = G->gap_mean;
    qs_report_ci_text(&c, 2, "%", 1, buf, len);
}

/* One Markdown row per group of this kind (noise 0: recipe groups). */
static void md_groups(FILE *f, const qs_summary *s, int noise)
{
    fputs("| group ", f);
    for (int a = 0; a < s->e->naxes; a++)
        if (a != s->seed_axis) fprintf(f, "| %s ", s->e->axes[a].key);
    fprintf(f, "| n_runs | n_seeds | n_diverged | n_failed | val_loss | gap %% [95%% CI] | %s | epochs |\n|---",
            noise ? "rms" : "gap sd");
    for (int a = 0; a < s->e->naxes; a++)
        if (a != s->seed_axis) fputs("|---", f);
    fputs("|---:|---:|---:|---:|---:|---:|---:|---:|\n", f);
    for (int g = 0; g < s->ngroups; g++) {
        const qs_group *G = &s->groups[g];
        if (G->noise != noise || G->block >= 0) continue;
        fputs("| ", f);
        md_str(f, G->name);
        fputc(' ', f);
        for (int a = 0; a < s->e->naxes; a++)
            if (a != s->seed_axis) {
                fputs("| ", f);
                md_str(f, qs_grid_value(s->e, &s->p->runs[G->first], a));
                fputc(' ', f);
            }
        fprintf(f, "| %d | %d | %d | %d | ", G->n_runs, G->n_seeds, G->n_diverged, G->n_failed);
        if (isnan(G->val_mean)) fputs("–", f);
        else if (isnan(G->val_std)) fprintf(f, "%.4f", G->val_mean);
        else fprintf(f, "%.4f ± %.4f", G->val_mean, G->val_std);
        char gap[96];
        qs_report_gap_text(s, G, gap, sizeof gap);
        const double spread = noise ? G->gap_rms : G->gap_std;
        fprintf(f, " | %s | ", gap);
        if (isnan(spread)) fputs("–", f);
        else fprintf(f, "%.2f%%", spread);
        if (isnan(G->epochs_max)) fputs(" | – |\n", f);
        else fprintf(f, " | %.2f |\n", G->epochs_max);
    }
}

/* The attribution table in Markdown: a row per block and the sum. */
static void md_attr(FILE *f, const qs_summary *s)
{
    fputs("\n## Per-layer attribution\n\nEach block alone in its recipe's plan (`R,~Li=bf16`: every other block "
          "in the baseline's format, same seeds): its gap to the baseline run of the same seed, and its share of "
          "the recipe's full gap, mean(block gap) / mean(full gap) over the seeds where both are done, with the "
          "paired Fieller 95% interval (the ratios whose per-seed differences block - ratio x full a t-test does "
          "not reject; unbounded when the full gap itself is unresolved). sum: the blocks' gaps added per seed "
          "(far from 100%: the blocks interact). A block the recipe keeps in the baseline's format has no run and "
          "a share of 0.\n\n| group | block | seeds | block gap % [95% CI] | full gap % | share of the gap % "
          "[95% CI] |\n|---|---|---:|---:|---:|---:|\n",
          f);
    for (int i = 0; i < s->nattr; i++) {
        const qs_attr_row *A = &s->attr[i];
        char gap[96] = "0 (kept)", share[128];
        if (A->quantized) {
            qs_group G = {0};
            G.gap_mean = A->gap_ci.mean, G.gap_ci = A->gap_ci;
            qs_report_gap_text(NULL, &G, gap, sizeof gap);
        }
        qs_report_share_text(A, share, sizeof share);
        fputs("| ", f);
        md_str(f, s->groups[A->group].name);
        if (A->block < 0) fputs(" | sum", f);
        else fprintf(f, " | %d", A->block);
        fprintf(f, " | %d | %s | ", A->share.n, gap);
        if (isnan(A->share.mean_b)) fputs("–", f);
        else fprintf(f, "%+.2f", A->share.mean_b);
        fprintf(f, " | %s |\n", share);
    }
}

void qs_report_contrast_text(const qs_contrast_row *C, qs_contrast_text *x)
{
    qs_report_ci_text(&C->pct.a, 2, "", 0, x->gap_a, sizeof x->gap_a);
    qs_report_ci_text(&C->pct.b, 2, "", 0, x->gap_b, sizeof x->gap_b);
    qs_report_ci_text(&C->pct.diff, 2, "", 1, x->diff_pct, sizeof x->diff_pct);
    qs_report_ci_text(&C->nats.diff, 4, "", 0, x->diff_nats, sizeof x->diff_nats);
}

/* The contrast table in Markdown, and the seeds it left out. */
static void md_contrast(FILE *f, const qs_summary *s)
{
    const qs_axis *A = &s->e->axes[s->contrast_axis];
    fprintf(f, "\n## Contrast across %s\n\nEach recipe's gap to the baseline at every value b of `%s` against its "
               "gap at the first value a = `%s`, every other axis equal (each value has its own baseline runs): per "
               "seed with a gap at both values (same seed: same initial-weight seed and batch order), d = gap at b "
               "- gap at a; the mean of d with its Student t 95%% interval (the paired t-test's); resolved: the "
               "interval excludes 0, i.e. the recipe's gap differs between the two values. Each side's gap is over "
               "the same seeds, with its t interval. A seed with a gap at one value only is left out (below).\n\n"
               "| contrast | seeds | gap at a %% [95%% CI] | gap at b %% [95%% CI] | b - a, %% [95%% CI] | b - a, "
               "nats [95%% CI] |\n|---|---:|---:|---:|---:|---:|\n",
            A->key, A->key, A->values[0]);
    for (int i = 0; i < s->ncontrast; i++) {
        const qs_contrast_row *C = &s->contrast[i];
        qs_contrast_text x;
        qs_report_contrast_text(C, &x);
        fputs("| ", f);
        md_str(f, C->name);
        fprintf(f, " | %d | %s | %s | %s | %s |\n", C->pct.n, x.gap_a, x.gap_b, x.diff_pct, x.diff_nats);
    }
    for (int i = 0; i < s->ncontrast; i++)
        if (s->contrast[i].message[0]) {
            fputs("\n- `", f);
            md_str(f, s->contrast[i].name);
            fputs("`: ", f);
            md_str(f, s->contrast[i].message);
        }
    fputc('\n', f);
}

static void write_md(FILE *f, const qs_summary *s, table *runs)
{
    fprintf(f, "# qsweep summary\n\nExperiment `%s`: %d runs, baseline recipe `%s`", s->e->path, s->p->n, s->e->baseline);
    if (!isnan(s->e->target_loss)) fprintf(f, ", target loss %g", s->e->target_loss);
    fputs(".\n\n", f);
    fputs("final_train_loss: mean of the last 10 steps' training loss; final_val_loss: the last validation loss; "
          "gap: final_val_loss minus the baseline run's (same seed and other axes), absolute and in %; "
          "steps_to_target: first step whose 10-step running mean of the training loss is <= the target (-1: "
          "never); tokens_per_param: training tokens / non-embedding parameters; epochs: passes over the training "
          "split; noise_twin: 1 for a noise-floor twin; ev_*: recalibration events by kind; qerr_layerN: mean rel_l2 "
          "of every /quant/error row of block N; data_wait_share: sum of data wait / sum of step time; "
          "step_ms_median: median step time; threads_median: median thread count of the steps (under --threads auto "
          "it follows the machine's load); *_share: each phase's time (GEMM, quantization, attention, other row "
          "ops, optimizer, communication) / step time, from the run file's phase profile. Definitions: "
          "docs/qsweep.md.\n\n",
          f);
    fputs("## Runs\n\n", f);
    write_md_table(f, runs, runs->ncols - 1);
    fputs("\n## Groups (every axis but seed)\n\nval_loss: mean ± sample standard deviation (n-1) over the group's done "
          "runs (n_seeds). gap: the mean over seeds of the paired gap to the baseline run of the same seed (same "
          "initial weights and batches), in % of the baseline's loss, with its 95% Student t interval over "
          "seeds; resolved: the interval excludes 0 (one comparison at 95%: across a table of them, some resolve "
          "by chance; the paper controls each table with Holm's correction, docs/qsweep.md).\n\n",
          f);
    md_groups(f, s, 0);
    int nn = 0;
    for (int g = 0; g < s->ngroups; g++) nn += s->groups[g].noise;
    if (nn) {
        fprintf(f, "\n## Noise floor\n\nThe same recipe with the same initial weights under another data seed "
                   "(batches, stochastic rounding, Hadamard signs: qtrain --data-seed = seed + %d), against the run "
                   "of its seed: a gap made of noise alone. rms = sqrt(mean(gap²)): the size of such a gap; a "
                   "recipe's gap within it is not a property of the format.\n\n", QS_NOISE_SEED_OFFSET);
        md_groups(f, s, 1);
    }
    if (s->e->attribute == QS_ATTRIBUTE_BLOCKS) md_attr(f, s);
    if (s->contrast_axis >= 0) md_contrast(f, s);
    int any = 0;
    for (int i = 0; i < s->p->n; i++) {
        const qs_row *r = &s->rows[i];
        if (!strcmp(r->status, "done")) continue;
        if (!any++) fputs("\n## Runs not done\n\n", f);
        fprintf(f, "- `%s`: %s%s", s->p->runs[i].name, r->status, r->message[0] ? ": " : "");
        md_str(f, r->message);
        fputc('\n', f);
    }
}

static void set_widths(table *t)
{
    for (int c = 0; c < t->ncols; c++)
        if (t->cols[c].type == QP_H5COL_STR) {
            size_t w = 1;
            for (int r = 0; r < t->nrows; r++) {
                const size_t n = strlen(cell(t, r, c)->str);
                if (n > w) w = n;
            }
            t->cols[c].width = w;
        }
}

static int write_table(hid_t file, const char *path, table *t, char *err, size_t errlen)
{
    set_widths(t);
    qp_h5table *h = qp_h5table_create(file, path, t->cols, t->ncols, 0, err, errlen);
    if (!h) return -1;
    for (int r = 0; r < t->nrows; r++)
        if (qp_h5table_append(h, cell(t, r, 0), err, errlen)) {
            qp_h5table_close(h, err, errlen);
            return -1;
        }
    return qp_h5table_close(h, err, errlen);
}

static int write_h5(const char *path, const qs_summary *s, table *runs, table *groups, table *noise, table *attr,
                    table *contrast, char *err, size_t errlen)
{
    const hid_t f = qp_h5file_create(path, err, errlen);
    if (f < 0) return -1;
    char num[64], e2[256];
    snprintf(num, sizeof num, "%.17g", s->e->target_loss);
    int rc = write_table(f, "runs", runs, err, errlen) || write_table(f, "recipes", groups, err, errlen) ||
             write_table(f, "noise", noise, err, errlen) || write_table(f, "attribution", attr, err, errlen) ||
             write_table(f, "contrast", contrast, err, errlen) ||
             qp_h5_set_attr_str(f, "attribute", qs_attribute_names[s->e->attribute], err, errlen) ||
             qp_h5_set_attr_str(f, "contrast", s->contrast_axis >= 0 ? s->e->contrast : "none", err, errlen) ||
             qp_h5_set_attr_str(f, "experiment", s->e->path, err, errlen) ||
             qp_h5_set_attr_str(f, "baseline", s->e->baseline, err, errlen) ||
             qp_h5_set_attr_str(f, "target_loss", num, err, errlen) ||
             qp_h5_set_attr_str(f, "definitions", "docs/qsweep.md", err, errlen);
    if (qp_h5file_close(f, rc ? e2 : err, rc ? sizeof e2 : errlen)) rc = -1;
    return rc ? -1 : 0;
}

/* Write to a temporary name beside the target, then rename. */
static int finish(const char *tmp, const char *final, int rc, char *err, size_t errlen)
{
    if (!rc && rename(tmp, final) != 0) {
        snprintf(err, errlen, "%s: cannot rename into place", final);
        rc = -1;
    }
    if (rc) unlink(tmp);
    return rc;
}

static int write_text(const char *dir, const char *name, const qs_summary *s, table *t, int md,
                      char *err, size_t errlen)
{
    char final[4400], tmp[4500];
    snprintf(final, sizeof final, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", final, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create", tmp);
        return -1;
    }
    if (md) write_md(f, s, t);
    else write_csv(f, t);
    int rc = ferror(f) ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
    if (rc) snprintf(err, errlen, "%s: write failed (disk full?)", tmp);
    return finish(tmp, final, rc, err, errlen);
}

int qs_report_write(const qs_summary *s, const char *dir, char *err, size_t errlen)
{
    table *runs = calloc(1, sizeof *runs), *groups = calloc(1, sizeof *groups), *noise = calloc(1, sizeof *noise),
          *attr = calloc(1, sizeof *attr), *contrast = calloc(1, sizeof *contrast);
    char(*anames)[288] = calloc((size_t)(s->nattr ? s->nattr : 1), sizeof *anames);
    char(*ablocks)[16] = calloc((size_t)(s->nattr ? s->nattr : 1), sizeof *ablocks);
    int rc = -1;
    if (!runs || !groups || !noise || !attr || !contrast || !anames || !ablocks || build_runs(runs, s) ||
        build_groups(groups, s, 0) || build_groups(noise, s, 1) || build_attr(attr, s, anames, ablocks) ||
        build_contrast(contrast, s)) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    char final[4400], tmp[4500];
    snprintf(final, sizeof final, "%s/summary.h5", dir);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", final, (long)getpid());
    rc = finish(tmp, final, write_h5(tmp, s, runs, groups, noise, attr, contrast, err, errlen), err, errlen);
    if (!rc) rc = write_text(dir, "summary.csv", s, runs, 0, err, errlen);
    if (!rc && s->e->attribute == QS_ATTRIBUTE_BLOCKS)
        rc = write_text(dir, "summary_attribution.csv", s, attr, 0, err, errlen);
    if (!rc && s->contrast_axis >= 0) rc = write_text(dir, "summary_contrast.csv", s, contrast, 0, err, errlen);
    if (!rc) rc = write_text(dir, "summary.md", s, runs, 1, err, errlen);
done:
    if (runs) table_free(runs);
    if (groups) table_free(groups);
    if (noise) table_free(noise);
    if (attr) table_free(attr);
    if (contrast) table_free(contrast);
    free(runs), free(groups), free(noise), free(attr), free(contrast), free(anames), free(ablocks);
    return rc;
}
