/* qpl_main.c — qsweep --plan: a plan's stages in order, the search's
 * probes, and a plan per cell of the file (see qpl_main.h; the runs
 * themselves: qpl_runs.h). */
#define _GNU_SOURCE
#include "qpl_main.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_train_options.h"
#include "qpl_ini.h"
#include "qpl_parts.h"
#include "qpl_predict.h"
#include "qpl_report.h"
#include "qpl_runs.h"
#include "qpl_search.h"
#include "qs_dir.h"
#include "qs_grid.h"
#include "qs_ini.h"
#include "qs_lock.h"
#include "qs_pool.h" /* qs_fmt_duration */
#include "qs_shell.h"
#include "qs_stats.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n;
    char chunk[4096];
    *len = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *nb = realloc(buf, cap = *len + n + 1);
        if (!nb) break;
        buf = nb;
        memcpy(buf + *len, chunk, n);
        *len += n;
        buf[*len] = '\0';
    }
    fclose(f);
    return buf ? buf : calloc(1, 1);
}

typedef struct {
    qpl_plan *P;
    char err[1200];
    int bad;  /* -2: bad input in err */
} search_ctx;

static int set_of(qpl_plan *P, int k, char *in)
{
    memset(in, 0, (size_t)P->parts.n);
    for (int i = 0; i < k; i++) in[P->order[i]] = 1;
    return 0;
}

static int probe(int k, void *user)
{
    search_ctx *S = user;
    qpl_plan *P = S->P;
    char *in = calloc((size_t)P->parts.n, 1);
    if (!in) return -1;
    set_of(P, k, in);
    const int c = qpl_cand_of(P, in, k == 0 ? "base" : "search");
    free(in);
    if (c < 0) return snprintf(S->err, sizeof S->err, "the recipe of %d parts does not fit the recipe grammar's limits", k), S->bad = -2, -1;
    if (!P->cands[c].searched) {
        const int r = qpl_run_cands(P, &c, 1, P->cfg.seeds, P->cfg.nseeds, 0, S->err, sizeof S->err);
        if (r == -2) S->bad = -2;
        if (r <= 0) return -1;
        qpl_set_gap(P, c, 0);
    }
    P->cands[c].probed = 1;
    if (P->a->dry_run) return k >= (P->parts.n + 1) / 2; /* a dry run walks a path of the same length */
    fprintf(stderr, "qsweep: plan: %d/%d parts in the fallback: gap %+.2f%% [%+.2f, %+.2f] %s the budget +%g%%\n", k,
            P->parts.n, P->cands[c].ci_search.mean, P->cands[c].ci_search.lo, P->cands[c].ci_search.hi,
            P->cands[c].meets_search ? "meets" : "misses", P->cfg.budget);
    return P->cands[c].meets_search;
}

static int verify(int k, void *user)
{
    search_ctx *S = user;
    qpl_plan *P = S->P;
    char *in = calloc((size_t)P->parts.n, 1);
    if (!in) return -1;
    set_of(P, k, in);
    const int c = qpl_cand_of(P, in, "search");
    free(in);
    if (c < 0) return S->bad = -2, -1;
    const int cs[2] = {c, P->idx_all};
    const int r = qpl_run_cands(P, cs, 2, P->cfg.verify, P->cfg.nverify, 1, S->err, sizeof S->err);
    if (r == -2) S->bad = -2;
    if (r <= 0) return -1;
    qpl_set_gap(P, c, 1);
    qpl_set_gap(P, P->idx_all, 1);
    P->cands[c].verify_order = ++P->cands[P->idx_all].verify_order;
    if (P->a->dry_run) return 1;
    fprintf(stderr, "qsweep: plan: verified %d/%d parts at seeds %lld..: gap %+.2f%% [%+.2f, %+.2f] %s the budget\n", k,
            P->parts.n, P->cfg.verify[0], P->cands[c].ci_verify.mean, P->cands[c].ci_verify.lo, P->cands[c].ci_verify.hi,
            P->cands[c].meets_verify ? "meets" : "misses");
    return P->cands[c].meets_verify;
}

/* the model of the plan: blocks and GEMMs, from the base run's options as qtrain reads them */
static int model_of(qpl_plan *P, int *layers, unsigned *gemms, char *err, size_t errlen)
{
    qs_experiment e;
    qs_plan g;
    char *text = qpl_candidate_ini(P, P->cfg.base, P->cfg.seeds, 1);
    if (!text) return snprintf(err, errlen, "out of memory"), -1;
    int rc = qs_ini_parse(P->a->file, text, strlen(text), P->a->data, 1, &e, err, errlen);
    free(text);
    if (rc) return -1;
    if (qs_grid_expand(&e, P->a->qtrain, P->dir, P->threads, &g, err, errlen)) return qs_ini_free(&e), -1;
    qp_train_opts o;
    qp_train_opts_default(&o);
    const qs_run *r = &g.runs[0];
    char msg[768];
    for (int k = 1; k < r->argc; k++) {
        const qp_train_option *t = strncmp(r->argv[k], "--", 2) ? NULL : qp_train_option_find(r->argv[k] + 2);
        if (!t) continue;
        const char *v = t->kind == QP_OPT_FLAG ? "" : k + 1 < r->argc ? r->argv[++k] : "";
        if (qp_train_option_parse(t, r->argv[k], v, false, &o, msg, sizeof msg)) break;
    }
    const qp_gpt_config mc = qp_train_model_config(&o, 256);
    *layers = r->layers;
    *gemms = qp_model_gemm_mask(&mc);
    qs_grid_free(&g);
    qs_ini_free(&e);
    return 0;
}

/* One plan with its working arrays (M parts: none, all; score per
 * predictor; benefit per search seed; cs per part). Returns the exit code
 * (0, 1, 2, 3, 130). */
static int plan_stages(qpl_plan *P, const char *label, char *none, char *all, double *score, double *benefit, int *cs);

static int run_plan(qpl_plan *P, const char *label)
{
    char err[1200];
    int layers;
    unsigned gemms;
    if (model_of(P, &layers, &gemms, err, sizeof err) || qpl_parts_make(&P->cfg, layers, gemms, &P->parts, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        return 2;
    }
    const int M = P->parts.n > 0 ? P->parts.n : 1;
    P->order = malloc((size_t)M * sizeof *P->order);
    char *none = calloc((size_t)M, 1), *all = malloc((size_t)M);
    double *score = malloc((size_t)QPL_PRED_COUNT * M * sizeof *score);
    double *benefit = calloc((size_t)P->cfg.nseeds * M, sizeof *benefit);
    int *cs = malloc((size_t)M * sizeof *cs);
    const int rc = P->order && none && all && score && benefit && cs
                       ? plan_stages(P, label, none, all, score, benefit, cs)
                       : (fprintf(stderr, "qsweep: out of memory\n"), 1);
    free(none), free(all), free(score), free(benefit), free(cs);
    return rc;
}

static int plan_stages(qpl_plan *P, const char *label, char *none, char *all, double *score, double *benefit, int *cs)
{
    char err[1200];
    const int M = P->parts.n;
    if (M < 2) {
        fprintf(stderr, "qsweep: %s: %d part%s at granularity %s (%d kept in the fallback's format already): nothing to plan\n",
                P->a->file, M, M == 1 ? "" : "s", qpl_gran_names[P->cfg.gran], P->parts.kept);
        return 2;
    }
    memset(all, 1, (size_t)M);
    P->idx_base = qpl_cand_of(P, none, "base");
    P->idx_all = qpl_cand_of(P, all, "all");
    if (P->idx_base < 0 || P->idx_all < 0) {
        fprintf(stderr, "qsweep: %s: the recipe with every part in the fallback does not fit the recipe grammar's limits\n",
                P->a->file);
        return 2;
    }
    int exit_code = 0;
    /* stage 1: the base and the fallback everywhere at the search seeds */
    const int first[2] = {P->idx_base, P->idx_all};
    int r = qpl_run_cands(P, first, 2, P->cfg.seeds, P->cfg.nseeds, 0, err, sizeof err);
    if (r == -2) return fprintf(stderr, "qsweep: %s\n", err), 2;
    if (r < 0) return P->stopped ? 130 : (fprintf(stderr, "qsweep: %s\n", err), 1);
    if (r == 0) return fprintf(stderr, "qsweep: %s\n", P->stop_msg), 3;
    qpl_set_gap(P, P->idx_base, 0);
    qpl_set_gap(P, P->idx_all, 0);
    /* stage 2: the predictors from the base run of the first seed */
    qpl_predictors pr = {0};
    pr.score = score;
    if (!P->a->dry_run) {
        char h5[4500];
        snprintf(h5, sizeof h5, "%s/r/base/runs/seed=%lld.h5", P->dir, P->cfg.seeds[0]);
        if (qpl_predict(h5, &P->parts, score, err, sizeof err)) return fprintf(stderr, "qsweep: predictors: %s\n", err), 1;
    } else
        for (int i = 0; i < QPL_PRED_COUNT * M; i++) score[i] = NAN;
    /* stage 3: each part alone in the fallback */
    pr.chosen = P->cfg.predictor;
    if (P->cfg.attribution) {
        for (int i = 0; i < M; i++) {
            memset(none, 0, (size_t)M);
            none[i] = 1;
            cs[i] = qpl_cand_of(P, none, "attribution");
            none[i] = 0;
            if (cs[i] < 0) return fprintf(stderr, "qsweep: part %s: recipe too long\n", P->parts.p[i].name), 2;
        }
        r = qpl_run_cands(P, cs, M, P->cfg.seeds, P->cfg.nseeds, 0, err, sizeof err);
        if (r == -2) return fprintf(stderr, "qsweep: %s\n", err), 2;
        if (r < 0) return P->stopped ? 130 : (fprintf(stderr, "qsweep: %s\n", err), 1);
        if (r == 0) return fprintf(stderr, "qsweep: %s\n", P->stop_msg), 3;
        for (int i = 0; i < M; i++) {
            qpl_set_gap(P, cs[i], 0);
            P->cands[cs[i]].part = i;
            for (int s = 0; s < P->cfg.nseeds; s++)
                benefit[s * M + i] = P->cands[P->idx_base].gap_search[s] - P->cands[cs[i]].gap_search[s];
        }
        double best = -INFINITY;
        for (int k = 0; k < QPL_PRED_COUNT; k++) {
            qpl_spearman_boot(score + k * M, benefit, M, P->cfg.nseeds, QPL_BOOT_RESAMPLES, &pr.rho[k], &pr.lo[k], &pr.hi[k]);
            if (P->cfg.predictor < 0 && isfinite(pr.rho[k]) && pr.rho[k] > best) best = pr.rho[k], pr.chosen = k;
        }
        if (pr.chosen < 0) pr.chosen = QPL_PRED_WGRAD, pr.defaulted = 1;
    }
    pr.benefit = benefit;
    qpl_rank(score + pr.chosen * M, M, P->order);
    /* stage 4: the search, stage 5: the verification */
    search_ctx S = {.P = P};
    qpl_result res;
    qpl_search(M, probe, verify, &S, &res);
    if (S.bad == -2) return fprintf(stderr, "qsweep: %s\n", S.err), 2;
    if (P->failed) return fprintf(stderr, "qsweep: %s\n", S.err[0] ? S.err : "a run failed"), 1;
    if (P->stopped) return 130; /* the caller says so, once */
    if (P->a->dry_run) {
        printf("%s: base %s, fallback %s, %d parts (%s", P->dir, P->cfg.base,
               P->cfg.fallback, M, qpl_gran_names[P->cfg.gran]);
        if (P->parts.kept) printf("; %d kept in %s by the base already", P->parts.kept, P->cfg.fallback);
        printf("), at most %d runs: 2 x %d (base, fallback everywhere) + %d x %d (each part alone) + %d x %d "
               "(bisection) + 2 x %d (verification), more only if a verification misses; max_runs %d\n",
               2 * P->cfg.nseeds + (P->cfg.attribution ? M * P->cfg.nseeds : 0) + (res.probes - 1) * P->cfg.nseeds +
                   2 * P->cfg.nverify,
               P->cfg.nseeds, P->cfg.attribution ? M : 0, P->cfg.nseeds, res.probes - 1, P->cfg.nseeds, P->cfg.nverify,
               P->cfg.max_runs);
        qs_experiment e;
        qs_plan g;
        if (!qpl_expand(P, P->idx_base, P->cfg.seeds, 1, &e, &g, err, sizeof err)) {
            printf("  base run: ");
            qs_shell_cmd(stdout, g.runs[0].argv);
            printf("\n  fallback everywhere: --recipe %s\n", P->cands[P->idx_all].recipe);
            qs_grid_free(&g), qs_ini_free(&e);
        }
        return 0;
    }
    if (res.status == QPL_STOPPED && P->stop_msg[0]) fprintf(stderr, "qsweep: %s\n", P->stop_msg);
    qpl_outcome oc = {.status = res.status, .k = res.k, .searched = res.searched, .runs = P->runs_used, .cpu_min = P->cpu_min};
    oc.chosen = -1;
    if (res.status == QPL_FOUND) {
        char *in = calloc((size_t)M, 1);
        if (!in) return 1;
        set_of(P, res.k, in);
        oc.chosen = qpl_cand_of(P, in, "search");
        free(in);
    }
    qpl_report_in rep = {.cfg = &P->cfg, .parts = &P->parts, .order = P->order, .cands = P->cands, .ncands = P->ncands,
                         .idx_base = P->idx_base, .idx_all = P->idx_all, .pred = &pr, .outcome = &oc, .dir = P->dir,
                         .label = label, .file = P->a->file};
    if (qpl_report_write(&rep, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        exit_code = 1;
    }
    qpl_report_line(&rep, stdout);
    if (res.status != QPL_FOUND && !exit_code) exit_code = 3;
    return exit_code;
}

int qpl_main(const qpl_args *a)
{
    char err[1200];
    size_t len;
    char *text = slurp(a->file, &len);
    if (!text) {
        fprintf(stderr, "qsweep: %s: %s\n", a->file, strerror(errno));
        return 2;
    }
    qpl_cfg cfg;
    char *rest;
    if (qpl_ini_parse(a->file, text, len, &cfg, &rest, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        free(text);
        return 2;
    }
    free(text);
    /* the rest must be a good experiment on its own (errors at its lines) */
    qs_experiment e;
    if (qs_ini_parse(a->file, rest, strlen(rest), a->data, 1, &e, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        free(rest);
        return 2;
    }
    const int threads = e.threads_per_run ? e.threads_per_run : a->cores / a->jobs > 1 ? a->cores / a->jobs : 1;
    /* what the runs depend on: [base] (canonical, the data path absolute) and the plan's axes */
    size_t ident_len = 0;
    char *canon = qs_ini_canonical(&e, &ident_len);
    qs_ini_free(&e);
    char *ident = canon ? malloc(ident_len + 4096) : NULL;
    if (!ident) {
        fprintf(stderr, "qsweep: out of memory\n");
        free(canon), free(rest);
        return 1;
    }
    /* canon's first ident_len bytes: [base] and [grid] (its [sweep] part after them is not the identity) */
    memcpy(ident, canon, ident_len);
    size_t iw = ident_len;
    ident[iw] = '\0';
    for (int x = 0; x < cfg.naxes && iw < ident_len + 4000; x++) {
        iw += (size_t)snprintf(ident + iw, ident_len + 4096 - iw, "# plan axis %s =", cfg.axes[x].key);
        for (int v = 0; v < cfg.axes[x].nvalues; v++)
            iw += (size_t)snprintf(ident + iw, ident_len + 4096 - iw, " %s", cfg.axes[x].values[v]);
        iw += (size_t)snprintf(ident + iw, ident_len + 4096 - iw, "\n");
    }
    free(canon);
    /* the folder: --out, else sweeps/NAME */
    char out[4096];
    if (a->out) snprintf(out, sizeof out, "%s", a->out);
    else {
        const char *b = strrchr(a->file, '/');
        b = b ? b + 1 : a->file;
        const char *dot = strrchr(b, '.');
        snprintf(out, sizeof out, "sweeps/%.*s", (int)(dot && dot > b ? dot - b : (long)strlen(b)), b);
    }
    char dir[4096];
    if (qs_abspath(out, dir, sizeof dir)) {
        fprintf(stderr, "qsweep: %s: path too long\n", out);
        free(rest), free(ident);
        return 2;
    }
    int lock = -1;
    sigset_t stopsigs;
    sigemptyset(&stopsigs);
    sigaddset(&stopsigs, SIGINT);
    sigaddset(&stopsigs, SIGTERM);
    if (!a->dry_run) {
        if (access(a->qtrain, X_OK) != 0) {
            fprintf(stderr, "qsweep: cannot run qtrain at %s: %s (use --qtrain PATH)\n", a->qtrain, strerror(errno));
            free(rest), free(ident);
            return 2;
        }
        sigprocmask(SIG_BLOCK, &stopsigs, NULL);
        if (qs_mkdir_p(dir)) {
            fprintf(stderr, "qsweep: cannot create %s: %s\n", dir, strerror(errno));
            free(rest), free(ident);
            return 2;
        }
        if ((lock = qs_lock_take(dir, err, sizeof err)) < 0) {
            fprintf(stderr, "qsweep: %s\n", err);
            free(rest), free(ident);
            return 2;
        }
        /* DIR/plan_base.ini: a rerun must bring the same [base] (and axes), else
         * its recipes' folders would hold another experiment's runs */
        char ipath[4200];
        snprintf(ipath, sizeof ipath, "%s/plan_base.ini", dir);
        size_t olen;
        char *old = slurp(ipath, &olen);
        /* from [base] on: the comment lines above it are not the plan's identity */
        const char *ob = old ? qs_ini_identity(old, olen) : NULL, *nb = qs_ini_identity(ident, iw);
        if (old && (!ob || !nb || olen - (size_t)(ob - old) != iw - (size_t)(nb - ident) ||
                    memcmp(ob, nb, iw - (size_t)(nb - ident)))) {
            fprintf(stderr, "qsweep: %s holds the runs of another plan file's [base] or grid (%s); use another --out\n",
                    dir, ipath);
            free(old), free(rest), free(ident);
            close(lock);
            return 2;
        }
        free(old);
        FILE *idf = fopen(ipath, "w");
        if (!idf || fwrite(ident, 1, iw, idf) != iw || fclose(idf) != 0) {
            fprintf(stderr, "qsweep: %s: cannot write\n", ipath);
            free(rest), free(ident);
            close(lock);
            return 2;
        }
    }
    free(ident);
    ident = NULL;
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    /* a plan per base recipe and combination of the grid's axes */
    int ncells = cfg.nbases, worst = 0;
    for (int x = 0; x < cfg.naxes; x++) ncells *= cfg.axes[x].nvalues;
    for (int cell = 0; cell < ncells; cell++) {
        qpl_plan P;
        memset(&P, 0, sizeof P);
        P.a = a, P.cfg = cfg, P.rest = rest, P.threads = threads;
        int rem = cell; /* the base recipe varies fastest, then the axes in file order */
        char label[512] = "", safe[300];
        size_t lw = 0, ew = 0;
        const int bi = rem % cfg.nbases;
        rem /= cfg.nbases;
        snprintf(P.cfg.base, sizeof P.cfg.base, "%s", cfg.bases[bi]);
        for (int x = 0; x < cfg.naxes; x++) {
            const int vi = rem % cfg.axes[x].nvalues;
            rem /= cfg.axes[x].nvalues;
            ew += (size_t)snprintf(P.extra + ew, sizeof P.extra - ew, "%s = %s\n", cfg.axes[x].key, cfg.axes[x].values[vi]);
            qs_grid_safe(cfg.axes[x].values[vi], safe, sizeof safe);
            lw += (size_t)snprintf(label + lw, sizeof label - lw, "%s%s=%s", lw ? "_" : "", cfg.axes[x].key, safe);
        }
        if (ncells > 1) {
            qs_grid_safe(P.cfg.base, safe, sizeof safe);
            lw += (size_t)snprintf(label + lw, sizeof label - lw, "%sbase=%s", lw ? "_" : "", safe);
            snprintf(P.dir, sizeof P.dir, "%.3000s/%.1000s", dir, label);
        } else snprintf(P.dir, sizeof P.dir, "%s", dir);
        const int rc = run_plan(&P, label);
        qpl_parts_free(&P.parts);
        free(P.order), free(P.cands);
        if (rc == 130 || rc == 2) {
            worst = rc;
            break;
        }
        if (rc == 1 || (rc == 3 && worst != 1)) worst = rc;
    }
    gettimeofday(&t1, NULL);
    if (!a->dry_run) {
        char d[32];
        qs_fmt_duration((double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_usec - t0.tv_usec), d, sizeof d);
        if (worst == 130)
            fprintf(stderr, "qsweep: plan stopped after %s of wall time; the same command resumes it from %s\n", d, dir);
        else if (worst != 2) /* 2: the plan's file could not be planned, and the message said why */
            fprintf(stderr, "qsweep: plan finished in %s of wall time; plan.md, plan.csv and plan.png in %s%s\n", d,
                    dir, ncells > 1 ? "/CELL" : "");
        close(lock);
    }
    free(rest);
    return worst;
}
