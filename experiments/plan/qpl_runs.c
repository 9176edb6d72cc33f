/* qpl_runs.c — a plan's recipes, runs and gaps (see qpl_runs.h). */
#define _GNU_SOURCE
#include "qpl_runs.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qp_recipe.h"
#include "qs_dir.h"
#include "qs_marker.h"
#include "qs_pool.h"
#include "qs_runfile.h"
#include "qs_stats.h"

/* FNV-1a of a recipe: a short folder name for a long set of parts */
static uint32_t fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The candidate of the parts in[] (creating it), or -1 on a recipe too long. */
int qpl_cand_of(qpl_plan *P, const char *in, const char *stage)
{
    char recipe[QP_RECIPE_SPEC_MAX];
    int k = 0;
    for (int i = 0; i < P->parts.n; i++) k += in[i] != 0;
    if (qpl_parts_recipe(&P->cfg, &P->parts, in, recipe, sizeof recipe)) return -1;
    for (int c = 0; c < P->ncands; c++)
        if (!strcmp(P->cands[c].recipe, recipe)) return c;
    qpl_cand *nc = realloc(P->cands, (size_t)(P->ncands + 1) * sizeof *nc);
    if (!nc) return -1;
    P->cands = nc;
    qpl_cand *C = &P->cands[P->ncands];
    memset(C, 0, sizeof *C);
    snprintf(C->recipe, sizeof C->recipe, "%s", recipe);
    snprintf(C->stage, sizeof C->stage, "%s", stage);
    C->k = k, C->part = -1;
    char names[256] = "";
    size_t w = 0;
    for (int i = 0; i < P->parts.n && w < sizeof names; i++)
        if (in[i]) w += (size_t)snprintf(names + w, sizeof names - w, "%s%s", w ? "+" : "", P->parts.p[i].name);
    snprintf(C->parts, sizeof C->parts, "%s", k == 0 ? "-" : k == P->parts.n ? "all" : names);
    if (k == 0) snprintf(C->id, sizeof C->id, "base");
    else if (k == P->parts.n) snprintf(C->id, sizeof C->id, "all");
    else if (strlen(names) <= 40) snprintf(C->id, sizeof C->id, "fb=%s", names);
    else snprintf(C->id, sizeof C->id, "fb%d-%08x", k, fnv(recipe));
    for (int s = 0; s < QPL_MAX_SEEDS; s++) C->val_search[s] = C->val_verify[s] = NAN;
    return P->ncands++;
}

/* The text of a one-axis experiment: the plan file with the recipe and the
 * cell's values in [base], and seed as the only axis. */
char *qpl_candidate_ini(const qpl_plan *P, const char *recipe, const long long *seeds, int n)
{
    const size_t len = strlen(P->rest) + strlen(recipe) + strlen(P->extra) + 64 + (size_t)n * 24 + 32;
    char *t = malloc(len), bars[QP_RECIPE_SPEC_MAX];
    if (!t) return NULL;
    snprintf(bars, sizeof bars, "%s", recipe);
    for (char *c = bars; *c; c++)
        if (*c == ',') *c = '|';
    /* after the [base] header line, else a [base] of our own at the end */
    const char *b = P->rest;
    const char *hdr = NULL;
    for (const char *line = b; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        const char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (!strncmp(s, "[base]", 6)) {
            hdr = strchr(line, '\n');
            break;
        }
    }
    size_t w = 0;
    if (hdr) {
        w += (size_t)snprintf(t + w, len - w, "%.*s", (int)(hdr - b + 1), b);
        /* on the header's line count: qs_ini's line numbers stay the file's
         * for every line before; the lines we add read as the header's */
        w += (size_t)snprintf(t + w, len - w, "recipe = %s\n%s%s", bars, P->extra, hdr + 1);
    } else w += (size_t)snprintf(t + w, len - w, "%s\n[base]\nrecipe = %s\n%s", b, bars, P->extra);
    w += (size_t)snprintf(t + w, len - w, "\n[grid]\nseed = ");
    for (int i = 0; i < n; i++) w += (size_t)snprintf(t + w, len - w, "%s%lld", i ? ", " : "", seeds[i]);
    snprintf(t + w, len - w, "\n");
    return t;
}

/* Expand candidate c at seeds into a sweep plan in DIR/r/ID (qs_grid.h). */
int qpl_expand(qpl_plan *P, int c, const long long *seeds, int n, qs_experiment *e, qs_plan *g, char *err, size_t errlen)
{
    char *text = qpl_candidate_ini(P, P->cands[c].recipe, seeds, n), dir[4400];
    if (!text) return snprintf(err, errlen, "out of memory"), -1;
    snprintf(dir, sizeof dir, "%s/r/%s", P->dir, P->cands[c].id);
    int rc = qs_ini_parse(P->a->file, text, strlen(text), P->a->data, 1, e, err, errlen);
    free(text);
    if (rc) return -1;
    if (qs_grid_expand(e, P->a->qtrain, dir, P->threads, g, err, errlen)) {
        qs_ini_free(e);
        return -1;
    }
    return 0;
}

typedef struct {
    qs_run **runs; /* the jobs' runs */
} pool_ctx;

static void on_start(int job, void *user)
{
    const pool_ctx *c = user;
    qs_marker_remove(c->runs[job]->exitfile);
}

static void on_end(int job, qs_job_result *res, void *user)
{
    const pool_ctx *c = user;
    const qs_run *r = c->runs[job];
    char msg[1024];
    if (!qs_run_failure(r->h5, r->log, res, msg, sizeof msg)) return;
    snprintf(res->why, sizeof res->why, "%.255s", msg);
    qs_marker_write(r->exitfile, res->exit_code, msg);
}

/* Run candidates cs[0..nc) at seeds (search: verify = 0) and read their
 * final validation losses (a diverged run: +inf). Returns 1 done, 0 the run
 * cap would be passed (nothing run; P->stop_msg says so), -1 a run failed or
 * a signal stopped the pool, -2 bad input (err). */
int qpl_run_cands(qpl_plan *P, const int *cs, int nc, const long long *seeds, int n, int verify, char *err, size_t errlen)
{
    qs_experiment *E = calloc((size_t)nc, sizeof *E);
    qs_plan *G = calloc((size_t)nc, sizeof *G);
    qs_job *jobs = calloc((size_t)(nc * n), sizeof *jobs);
    qs_run **runs = calloc((size_t)(nc * n), sizeof *runs);
    qs_job_result *res = calloc((size_t)(nc * n), sizeof *res);
    int ok = E && G && jobs && runs && res ? 1 : -2, ne = 0, nj = 0, fresh = 0;
    if (ok < 0) snprintf(err, errlen, "out of memory");
    for (int i = 0; i < nc && ok > 0; i++, ne++) {
        if (qpl_expand(P, cs[i], seeds, n, &E[i], &G[i], err, errlen)) {
            ok = -2;
            break;
        }
        qpl_cand *C = &P->cands[cs[i]];
        if (!P->a->dry_run && qs_dir_make(G[i].dir)) {
            snprintf(err, errlen, "cannot create %.1000s/{runs,logs}: %s", G[i].dir, strerror(errno));
            ok = -2;
            break;
        }
        for (int s = 0; s < n; s++) {
            int *used = verify ? &C->used_verify[s] : &C->used_search[s];
            if (!*used) fresh++;
            if (!qs_runfile_finished(G[i].runs[s].h5)) {
                runs[nj] = &G[i].runs[s];
                jobs[nj] = (qs_job){G[i].runs[s].name, G[i].runs[s].argv, G[i].runs[s].log};
                nj++;
            }
        }
    }
    if (ok > 0 && P->runs_used + fresh > P->cfg.max_runs) {
        snprintf(P->stop_msg, sizeof P->stop_msg, "the run cap (max_runs = %d) is reached: %d runs used, %d more needed",
                 P->cfg.max_runs, P->runs_used, fresh);
        ok = 0;
    }
    if (ok > 0 && nj && !P->a->dry_run) {
        /* the pool names runs by their folder too, so the progress line and
         * failures say which recipe */
        char (*names)[300] = calloc((size_t)nj, sizeof *names);
        if (!names) ok = -2, snprintf(err, errlen, "out of memory");
        for (int j = 0; j < nj && names; j++) {
            const char *d = strrchr(runs[j]->h5, '/');
            const char *id = d ? d : runs[j]->h5;
            for (const char *q = id - 1; q > runs[j]->h5; q--)
                if (*q == '/' && q != d - 5) {
                    id = q + 1;
                    break;
                }
            snprintf(names[j], sizeof names[j], "%.*s", (int)(d - id), id);
            jobs[j].name = names[j];
        }
        if (names) {
            pool_ctx pc = {runs};
            const qs_pool_cb cb = {nj, 0, on_start, on_end, &pc};
            if (qs_pool_run(jobs, nj, P->a->jobs, &cb, res)) P->stopped = 1, ok = -1;
            for (int j = 0; j < nj; j++)
                if (res[j].outcome == QS_JOB_FAILED) {
                    fprintf(stderr, "qsweep: run %s failed: exit %d: %s (log: %s)\n", runs[j]->h5, res[j].exit_code, res[j].why,
                            runs[j]->log);
                    P->failed = 1, ok = -1;
                }
            free(names);
        }
    }
    for (int i = 0; i < ne && ok > 0; i++) {
        qpl_cand *C = &P->cands[cs[i]];
        for (int s = 0; s < n; s++) {
            int *used = verify ? &C->used_verify[s] : &C->used_search[s];
            double *val = verify ? &C->val_verify[s] : &C->val_search[s];
            if (P->a->dry_run) {
                if (!*used) P->runs_used++, *used = 1;
                continue;
            }
            qs_runstats st;
            char msg[600];
            if (qs_runfile_read(G[i].runs[s].h5, NAN, &st, msg, sizeof msg)) {
                snprintf(err, errlen, "%s", msg);
                ok = -1, P->failed = 1;
                break;
            }
            *val = !strcmp(st.state, "diverged") ? INFINITY : st.final_val;
            if (!*used) {
                P->runs_used++, *used = 1;
                const double th = isfinite(st.threads_median) && st.threads_median > 0 ? st.threads_median : P->threads;
                if (isfinite(st.step_ms_median)) P->cpu_min += (double)st.steps * st.step_ms_median * th / 60000.0;
            }
            qs_runstats_free(&st);
        }
        if (verify) C->verified = 1;
        else C->searched = 1;
    }
    for (int i = 0; i < ne; i++) qs_grid_free(&G[i]), qs_ini_free(&E[i]);
    free(E), free(G), free(jobs), free(runs), free(res);
    return ok;
}

/* the paired gap of candidate c to the fallback everywhere, per seed, and its t interval */
static void gap_of(const qpl_plan *P, int c, int verify, qs_ci *ci, double *gaps)
{
    const qpl_cand *C = &P->cands[c], *F = &P->cands[P->idx_all];
    const int n = verify ? P->cfg.nverify : P->cfg.nseeds;
    for (int s = 0; s < n; s++) {
        const double v = verify ? C->val_verify[s] : C->val_search[s], f = verify ? F->val_verify[s] : F->val_search[s];
        gaps[s] = c == P->idx_all ? 0.0 : isinf(v) ? INFINITY : 100.0 * (v - f) / f;
    }
    int m = 0;
    double fin[QPL_MAX_SEEDS] = {0};
    for (int s = 0; s < n; s++)
        if (isfinite(gaps[s])) fin[m++] = gaps[s];
    qs_mean_ci(fin, m, 0.95, ci);
    if (m < n) ci->hi = INFINITY, ci->resolved = 0; /* a diverged seed: no bound */
}

void qpl_set_gap(qpl_plan *P, int c, int verify)
{
    qpl_cand *C = &P->cands[c];
    qs_ci ci;
    gap_of(P, c, verify, &ci, verify ? C->gap_verify : C->gap_search);
    if (verify) C->ci_verify = ci, C->meets_verify = ci.n >= 2 && ci.hi <= P->cfg.budget;
    else C->ci_search = ci, C->meets_search = ci.n >= 2 && ci.hi <= P->cfg.budget;
}

