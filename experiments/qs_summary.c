/* qs_summary.c — per-run rows and per-group statistics (see qs_summary.h). */
#include "qs_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qs_marker.h"

static void run_status(const qs_run *run, double target, qs_row *row)
{
    struct stat sb;
    int code = 0;
    char mmsg[520] = "", err[600] = "";
    const int marked = qs_marker_read(run->exitfile, &code, mmsg, sizeof mmsg) == 0;
    const int exists = stat(run->h5, &sb) == 0;
    if (exists) row->has_stats = qs_runfile_read(run->h5, target, &row->st, err, sizeof err) == 0;
    const char *state = row->has_stats ? row->st.state : "";
    const char *status;
    const char *msg = "";
    if (!strcmp(state, "done") || !strcmp(state, "diverged")) {
        status = state;
        msg = row->st.message;
    } else if (marked) {
        status = "failed";
        msg = mmsg;
        snprintf(err, sizeof err, "exit %d: %s", code, mmsg);
        msg = err;
    } else if (!strcmp(state, "failed") || !strcmp(state, "stopped")) {
        status = state;
        msg = row->st.message;
    } else if (!exists) {
        status = "missing";
    } else if (!row->has_stats) {
        /* qtrain holds its lock from before HDF5 has written anything */
        status = row->st.writer_alive ? "running" : "unreadable";
        msg = row->st.writer_alive ? "" : err;
    } else {
        status = row->st.writer_alive ? "running" : "interrupted";
    }
    snprintf(row->status, sizeof row->status, "%.15s", status);
    snprintf(row->message, sizeof row->message, "%.519s", msg);
    row->diverged = !strcmp(status, "diverged") || (row->has_stats && row->st.divergences > 0);
}

static int is_done(const qs_row *r)
{
    return !strcmp(r->status, "done") && !isnan(r->st.final_val);
}

/* the run's own recipe when recipe is no axis: [base], else qtrain's default */
static const char *fixed_recipe(const qs_experiment *e)
{
    const char *r = qs_ini_base(e, "recipe");
    return r ? r : "bf16";
}

static int find_baseline(const qs_experiment *e, const qs_plan *p, int i)
{
    if (p->runs[i].twin_of >= 0) return p->runs[i].twin_of;
    const int ax = qs_ini_axis(e, "recipe");
    if (ax < 0) return strcmp(fixed_recipe(e), e->baseline) ? -1 : i;
    for (int j = 0; j < p->ngrid; j++) {
        if (strcmp(qs_grid_value(e, &p->runs[j], ax), e->baseline)) continue;
        int same = 1;
        for (int a = 0; a < e->naxes && same; a++)
            if (a != ax && p->runs[j].vi[a] != p->runs[i].vi[a]) same = 0;
        if (same) return j;
    }
    return -1;
}

static void mean_std(const double *v, int n, double *mean, double *std)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = n ? s / n : NAN;
    double q = 0;
    for (int i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
    *std = n > 1 ? sqrt(q / (n - 1)) : NAN;
}

static int same_group(const qs_summary *s, int i, int j)
{
    if ((s->p->runs[i].twin_of >= 0) != (s->p->runs[j].twin_of >= 0)) return 0;
    if (s->p->runs[i].block != s->p->runs[j].block) return 0;
    for (int a = 0; a < s->e->naxes; a++)
        if (a != s->seed_axis && s->p->runs[i].vi[a] != s->p->runs[j].vi[a]) return 0;
    return 1;
}

void qs_summary_name(const qs_summary *s, int i, int vs_axis, int vs_ref, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->e->naxes; a++) {
        if (a == s->seed_axis) continue;
        char safe[256], ref[256] = "";
        qs_grid_safe(qs_grid_value(s->e, &s->p->runs[i], a), safe, sizeof safe);
        if (a == vs_axis) qs_grid_safe(s->e->axes[a].values[vs_ref], ref, sizeof ref);
        const int w = snprintf(buf + n, len - n, "%s%s=%s%s%s", n ? "_" : "", s->e->axes[a].key, safe,
                               a == vs_axis ? "-vs-" : "", ref);
        if (w < 0 || (size_t)w >= len - n) break;
        n += (size_t)w;
    }
    if (!n) snprintf(buf, len, "all");
}

static void group_name(const qs_summary *s, int i, char *buf, size_t len)
{
    qs_summary_name(s, i, -1, 0, buf, len);
    size_t n;
    if (s->p->runs[i].twin_of >= 0) {
        n = strlen(buf);
        snprintf(buf + n, len - n, "_data_seed");
    }
    if (s->p->runs[i].block >= 0) {
        n = strlen(buf);
        snprintf(buf + n, len - n, "_block=%d", s->p->runs[i].block);
    }
}

static const qs_row *parent_row(const qs_summary *s, int j)
{
    return &s->rows[s->p->runs[j].attr_of];
}

/* The attribution table (qs_summary.h): per full-recipe group, a row per
 * block and the sum. */
static int build_attribution(qs_summary *s)
{
    const qs_plan *p = s->p;
    int cap = 0;
    for (int g = 0; g < s->ngroups; g++)
        if (!s->groups[g].noise && s->groups[g].block < 0) cap += p->runs[s->groups[g].first].layers + 1;
    s->attr = calloc((size_t)(cap ? cap : 1), sizeof *s->attr);
    double *a = malloc((size_t)(p->n ? p->n : 1) * sizeof *a), *b = malloc((size_t)(p->n ? p->n : 1) * sizeof *b);
    if (!s->attr || !a || !b) {
        free(a), free(b);
        return -1;
    }
    for (int g = 0; g < s->ngroups; g++) {
        const qs_group *G = &s->groups[g];
        const qs_run *first = &p->runs[G->first];
        if (G->noise || G->block >= 0 || !strcmp(qs_grid_recipe(s->e, first), s->e->baseline)) continue;
        const int L = first->layers;
        for (int blk = 0; blk <= L; blk++) {
            const int sum = blk == L;
            qs_attr_row *A = &s->attr[s->nattr++];
            A->group = g, A->block = sum ? -1 : blk, A->attr_group = -1, A->quantized = 1;
            for (int h = 0; h < s->ngroups && !sum; h++)
                if (s->groups[h].block == blk && p->runs[s->groups[h].first].attr_of >= 0 &&
                    s->rows[p->runs[s->groups[h].first].attr_of].group == g)
                    A->attr_group = h;
            int n = 0;
            if (sum) {
                /* per seed (a parent row of this group): the sum of its blocks' gaps */
                for (int i = 0; i < p->ngrid; i++) {
                    if (s->rows[i].group != g) continue;
                    double tot = 0;
                    for (int j = p->ngrid; j < p->n; j++)
                        if (p->runs[j].attr_of == i) tot += s->rows[j].gap_pct; /* NaN if one is not done */
                    a[n] = tot, b[n++] = s->rows[i].gap_pct;
                }
            } else if (A->attr_group >= 0) {
                for (int j = 0; j < p->n; j++)
                    if (s->rows[j].group == A->attr_group) a[n] = s->rows[j].gap_pct, b[n++] = parent_row(s, j)->gap_pct;
            } else {
                /* kept in the baseline's format by the recipe: no run, a gap of 0 */
                A->quantized = 0;
                for (int i = 0; i < p->ngrid; i++)
                    if (s->rows[i].group == g) a[n] = isnan(s->rows[i].gap_pct) ? NAN : 0.0, b[n++] = s->rows[i].gap_pct;
            }
            /* the block's own gap over the seeds paired with a full gap */
            int m = 0;
            for (int k = 0; k < n; k++)
                if (isfinite(a[k]) && isfinite(b[k])) {
                    a[m] = a[k], b[m] = b[k];
                    m++;
                }
            qs_mean_ci(a, m, 0.95, &A->gap_ci);
            qs_ratio_ci(a, b, m, 0.95, &A->share);
            if (!A->quantized) { /* exactly 0, whatever the full gap's spread */
                A->share.lo = A->share.hi = 0.0;
                A->share.ratio = m ? 0.0 : NAN;
                A->share.resolved = 0;
                A->share.method = "kept";
            }
        }
    }
    free(a), free(b);
    return 0;
}

int qs_summary_build(const qs_experiment *e, const qs_plan *p, qs_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->e = e, s->p = p;
    s->seed_axis = qs_ini_axis(e, "seed");
    s->contrast_axis = e->contrast[0] ? qs_ini_axis(e, e->contrast) : -1;
    s->rows = calloc((size_t)(p->n ? p->n : 1), sizeof *s->rows);
    s->groups = calloc((size_t)(p->n ? p->n : 1), sizeof *s->groups);
    double *vals = malloc((size_t)(p->n ? p->n : 1) * sizeof *vals), *gaps = malloc((size_t)(p->n ? p->n : 1) * sizeof *gaps);
    if (!s->rows || !s->groups || !vals || !gaps) {
        free(vals), free(gaps);
        qs_summary_free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < p->n; i++) {
        qs_row *r = &s->rows[i];
        r->st.final_train = r->st.final_val = r->st.tokps_median = r->st.wait_share = r->st.step_ms_median =
            r->st.threads_median = NAN;
        for (int k = 0; k < QP_PHASE_COUNT; k++) r->st.phase_share[k] = NAN;
        r->st.params_nonembedding = r->st.tokens_total = r->st.tokens_per_param = r->st.epochs = NAN;
        r->st.steps_to_target = -1;
        run_status(&p->runs[i], e->target_loss, r);
        if (r->st.nqerr > s->nlayers) s->nlayers = r->st.nqerr;
    }
    for (int i = 0; i < p->n; i++) {
        qs_row *r = &s->rows[i];
        r->baseline = find_baseline(e, p, i);
        r->gap_abs = r->gap_pct = NAN;
        if (r->baseline >= 0 && is_done(r) && is_done(&s->rows[r->baseline])) {
            const double b = s->rows[r->baseline].st.final_val;
            r->gap_abs = r->st.final_val - b;
            r->gap_pct = 100.0 * r->gap_abs / b;
        }
    }
    for (int i = 0; i < p->n; i++) {
        int g = 0;
        while (g < s->ngroups && !same_group(s, s->groups[g].first, i)) g++;
        if (g < s->ngroups) continue; /* counted with its group's first run */
        qs_group *G = &s->groups[s->ngroups++];
        G->first = i;
        G->noise = p->runs[i].twin_of >= 0;
        G->block = p->runs[i].block;
        G->params_nonembedding = G->tokens_per_param = G->epochs_max = NAN;
        group_name(s, i, G->name, sizeof G->name);
        for (int j = i; j < p->n; j++) {
            if (!same_group(s, i, j)) continue;
            s->rows[j].group = s->ngroups - 1;
            const qs_row *r = &s->rows[j];
            G->n_runs++;
            G->n_diverged += !strcmp(r->status, "diverged");
            G->n_failed += !strcmp(r->status, "failed");
            if (is_done(r)) {
                vals[G->n_seeds++] = r->st.final_val;
                G->params_nonembedding = r->st.params_nonembedding;
                G->tokens_per_param = r->st.tokens_per_param;
                if (isnan(G->epochs_max) || r->st.epochs > G->epochs_max) G->epochs_max = r->st.epochs;
            }
            if (!isnan(r->gap_pct)) gaps[G->n_gaps++] = r->gap_pct;
        }
        mean_std(vals, G->n_seeds, &G->val_mean, &G->val_std);
        mean_std(gaps, G->n_gaps, &G->gap_mean, &G->gap_std);
        qs_mean_ci(gaps, G->n_gaps, 0.95, &G->gap_ci);
        double sq = 0;
        for (int k = 0; k < G->n_gaps; k++) sq += gaps[k] * gaps[k];
        G->gap_rms = G->n_gaps ? sqrt(sq / G->n_gaps) : NAN;
    }
    free(vals), free(gaps);
    if ((e->attribute == QS_ATTRIBUTE_BLOCKS && build_attribution(s)) || qs_contrast_build(s)) {
        qs_summary_free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void qs_summary_free(qs_summary *s)
{
    if (s->rows && s->p)
        for (int i = 0; i < s->p->n; i++) qs_runstats_free(&s->rows[i].st);
    free(s->rows), free(s->groups), free(s->attr), free(s->contrast);
    s->rows = NULL, s->groups = NULL, s->attr = NULL, s->contrast = NULL, s->nattr = s->ncontrast = 0;
}
