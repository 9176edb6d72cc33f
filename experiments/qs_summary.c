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
    for (int a = 0; a < s->e->naxes; a++)
        if (a != s->seed_axis && s->p->runs[i].vi[a] != s->p->runs[j].vi[a]) return 0;
    return 1;
}

static void group_name(const qs_summary *s, int i, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->e->naxes; a++) {
        if (a == s->seed_axis) continue;
        char safe[256];
        qs_grid_safe(qs_grid_value(s->e, &s->p->runs[i], a), safe, sizeof safe);
        const int w = snprintf(buf + n, len - n, "%s%s=%s", n ? "_" : "", s->e->axes[a].key, safe);
        if (w < 0 || (size_t)w >= len - n) break;
        n += (size_t)w;
    }
    if (!n) snprintf(buf, len, "all");
    if (s->p->runs[i].twin_of >= 0) {
        n = strlen(buf);
        snprintf(buf + n, len - n, "_data_seed");
    }
}

int qs_summary_build(const qs_experiment *e, const qs_plan *p, qs_summary *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->e = e, s->p = p;
    s->seed_axis = qs_ini_axis(e, "seed");
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
        r->st.final_train = r->st.final_val = r->st.tokps_median = r->st.wait_share = r->st.step_ms_median = NAN;
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
    return 0;
}

void qs_summary_free(qs_summary *s)
{
    if (s->rows && s->p)
        for (int i = 0; i < s->p->n; i++) qs_runstats_free(&s->rows[i].st);
    free(s->rows), free(s->groups);
    s->rows = NULL, s->groups = NULL;
}
