/* qpl_report.c — the plan's line, tables and figure (see qpl_report.h). */
#define _GNU_SOURCE
#include "qpl_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A predictor's verdict needs 3 seeds: the bootstrap over 2 has 3 distinct
 * resamples, whose percentiles are no interval. 1: predicts, -1: ranks
 * backwards, 0: unresolved, -2: no verdict. */
#define MIN_VERDICT_SEEDS 3
static int pred_verdict(const qpl_report_in *r, int k)
{
    const qpl_predictors *p = r->pred;
    if (r->cfg->nseeds < MIN_VERDICT_SEEDS || !isfinite(p->lo[k]) || !isfinite(p->hi[k])) return -2;
    return p->lo[k] > 0 ? 1 : p->hi[k] < 0 ? -1 : 0;
}

static void fmt_ci(const qs_ci *c, char *buf, size_t len)
{
    if (c->n < 2 || !isfinite(c->mean)) snprintf(buf, len, "%s", c->n < 1 ? "n/a" : "no interval");
    else if (!isfinite(c->hi)) snprintf(buf, len, "%+.2f%% [%+.2f, unbounded: a seed diverged]", c->mean, c->lo);
    else snprintf(buf, len, "%+.2f%% [%+.2f, %+.2f]", c->mean, c->lo, c->hi);
}

/* the best candidate when none was verified within the budget: the fewest
 * parts whose search interval met it, else the lowest upper bound */
static int best_found(const qpl_report_in *r)
{
    int best = -1;
    for (int c = 0; c < r->ncands; c++) {
        const qpl_cand *C = &r->cands[c];
        if (c == r->idx_all || !C->searched || C->ci_search.n < 2) continue;
        if (best < 0) {
            best = c;
            continue;
        }
        const qpl_cand *B = &r->cands[best];
        if (C->meets_search != B->meets_search ? C->meets_search
                                                : C->meets_search ? C->k < B->k : C->ci_search.hi < B->ci_search.hi)
            best = c;
    }
    return best;
}

void qpl_report_line(const qpl_report_in *r, FILE *f)
{
    const qpl_outcome *o = r->outcome;
    char prefix[600];
    snprintf(prefix, sizeof prefix, "plan%s%s%s:", *r->label ? " (" : "", r->label, *r->label ? ")" : "");
    if (o->status == QPL_FOUND) {
        const qpl_cand *C = &r->cands[o->chosen];
        char g[128];
        fmt_ci(&C->ci_verify, g, sizeof g);
        fprintf(f, "%s %s  gap %s  budget %+g%%  fallback %d/%d parts  (%d runs, %.1f CPU-minutes)\n", prefix, C->recipe, g,
                r->cfg->budget, C->k, r->parts->n, o->runs, o->cpu_min);
        return;
    }
    const int b = best_found(r);
    fprintf(f, "%s no recipe with fewer than all %d parts in the fallback was verified within the budget %+g%%%s", prefix,
            r->parts->n, r->cfg->budget, o->status == QPL_STOPPED ? " before the search stopped" : "");
    if (b >= 0) {
        char g[128];
        fmt_ci(&r->cands[b].ci_search, g, sizeof g);
        fprintf(f, "; best found: %s  gap %s at the search seeds  fallback %d/%d parts", r->cands[b].recipe, g, r->cands[b].k,
                r->parts->n);
    }
    fprintf(f, "  (%d runs, %.1f CPU-minutes)\n", o->runs, o->cpu_min);
}

static void seeds_text(const long long *s, int n, char *buf, size_t len)
{
    size_t w = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && w < len; i++) w += (size_t)snprintf(buf + w, len - w, "%s%lld", i ? " " : "", s[i]);
}

static void csv_row(FILE *f, const qpl_report_in *r, const qpl_cand *C, int verify, int chosen)
{
    const qs_ci *ci = verify ? &C->ci_verify : &C->ci_search;
    char seeds[256];
    seeds_text(verify ? r->cfg->verify : r->cfg->seeds, verify ? r->cfg->nverify : r->cfg->nseeds, seeds, sizeof seeds);
    fprintf(f, "%s,%s,%d,\"%s\",\"%s\",%s,%d,%.10g,%.10g,%.10g,%d,%d\n", verify ? "verify" : C->stage, C->id, C->k, C->parts,
            C->recipe, seeds, ci->n, ci->mean, ci->lo, ci->hi, verify ? C->meets_verify : C->meets_search, chosen);
}

static int write_figure(const qpl_report_in *r, char *err, size_t errlen)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/plan_fig.dat", r->dir);
    FILE *d = fopen(path, "w");
    if (!d) return snprintf(err, errlen, "%s: cannot write", path), -1;
    fprintf(d, "# k gap lo hi   (index 0: search seeds, 1: verification seeds, 2: the chosen plan)\n");
    int points[3] = {0}; /* per index: a series without points is left out of the plot (gnuplot would warn) */
    for (int v = 0; v < 3; v++) {
        for (int c = 0; c < r->ncands; c++) {
            const qpl_cand *C = &r->cands[c];
            const int on = v == 0 ? C->searched && C->part < 0 : v == 1 ? C->verified : c == r->outcome->chosen;
            const qs_ci *ci = v == 0 ? &C->ci_search : &C->ci_verify;
            if (on && ci->n >= 2 && isfinite(ci->hi)) {
                fprintf(d, "%d %.6g %.6g %.6g\n", C->k, ci->mean, ci->lo, ci->hi);
                points[v]++;
            }
        }
        fprintf(d, "\n\n");
    }
    fclose(d);
    snprintf(path, sizeof path, "%s/plan.gp", r->dir);
    FILE *g = fopen(path, "w");
    if (!g) return snprintf(err, errlen, "%s: cannot write", path), -1;
    fprintf(g,
            "# the plan's figure: gnuplot plan.gp (in this folder) redraws plan.png\n"
            "set terminal pngcairo size 900,540 font ',11'\nset output 'plan.png'\n"
            "set title \"%s: gap to %s everywhere against parts in the fallback (95%% t intervals)\" noenhanced\n"
            "set xlabel 'parts in the fallback (of %d, %s, by %s)' noenhanced\n"
            "set ylabel 'paired gap to the fallback everywhere, %%'\n"
            "set xrange [-0.5:%d.5]\nset grid\nset key top right\n"
            "plot %g with lines dt 2 lc rgb '#cc0000' title 'budget %+g%%', \\\n"
            "  'plan_fig.dat' index 0 using 1:2:3:4 with yerrorbars pt 7 lc rgb '#1f77b4' title 'search seeds'%s%s\n",
            r->cfg->base, r->cfg->fallback, r->parts->n, qpl_gran_names[r->cfg->gran],
            r->pred->chosen >= 0 ? qpl_pred_names[r->pred->chosen] : "-", r->parts->n, r->cfg->budget, r->cfg->budget,
            points[1] ? ", \\\n  '' index 1 using ($1+0.12):2:3:4 with yerrorbars pt 5 lc rgb '#2ca02c' title 'verification seeds'"
                      : "",
            points[2] ? ", \\\n  '' index 2 using ($1+0.12):2 with points pt 6 ps 3 lw 2 lc rgb '#000000' title 'the plan'" : "");
    fclose(g);
    const pid_t pid = fork();
    if (pid == 0) {
        if (chdir(r->dir) == 0) {
            FILE *null = freopen("/dev/null", "w", stdout);
            (void)null;
            execlp("gnuplot", "gnuplot", "plan.gp", (char *)NULL);
        }
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        fprintf(stderr, "qsweep: note: gnuplot did not draw %s/plan.png (exit %d); plan.gp and plan_fig.dat are there\n",
                r->dir, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

int qpl_report_write(const qpl_report_in *r, char *err, size_t errlen)
{
    const qpl_cfg *cfg = r->cfg;
    const qpl_parts *ps = r->parts;
    const qpl_predictors *pr = r->pred;
    const int M = ps->n;
    char path[4400];
    /* plan.csv: every recipe at every set of seeds it ran */
    snprintf(path, sizeof path, "%s/plan.csv", r->dir);
    FILE *f = fopen(path, "w");
    if (!f) return snprintf(err, errlen, "%s: cannot write", path), -1;
    fprintf(f, "stage,id,k,parts,recipe,seeds,n_seeds,gap_pct_mean,gap_ci_lo,gap_ci_hi,meets_budget,chosen\n");
    for (int c = 0; c < r->ncands; c++) {
        if (r->cands[c].searched) csv_row(f, r, &r->cands[c], 0, 0);
        if (r->cands[c].verified) csv_row(f, r, &r->cands[c], 1, c == r->outcome->chosen);
    }
    fclose(f);
    /* plan_predictors.csv */
    snprintf(path, sizeof path, "%s/plan_predictors.csv", r->dir);
    if (!(f = fopen(path, "w"))) return snprintf(err, errlen, "%s: cannot write", path), -1;
    fprintf(f, "predictor,spearman,ci_lo,ci_hi,resolved,chosen\n");
    for (int k = 0; k < QPL_PRED_COUNT; k++)
        fprintf(f, "%s,%.10g,%.10g,%.10g,%d,%d\n", qpl_pred_names[k], pr->rho[k], pr->lo[k], pr->hi[k],
                pred_verdict(r, k) == 1 || pred_verdict(r, k) == -1, k == pr->chosen);
    fclose(f);
    /* plan_parts.csv: each part's rank, measured benefit and scores */
    int *rank = malloc((size_t)(M ? M : 1) * sizeof *rank);
    int *alone = malloc((size_t)(M ? M : 1) * sizeof *alone);
    if (!rank || !alone) return free(rank), free(alone), snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < M; i++) rank[r->order[i]] = i + 1, alone[i] = -1;
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].part >= 0) alone[r->cands[c].part] = c;
    snprintf(path, sizeof path, "%s/plan_parts.csv", r->dir);
    if (!(f = fopen(path, "w"))) return free(rank), free(alone), snprintf(err, errlen, "%s: cannot write", path), -1;
    fprintf(f, "part,rank,benefit_pct_mean,benefit_ci_lo,benefit_ci_hi,alone_gap_pct_mean");
    for (int k = 0; k < QPL_PRED_COUNT; k++) fprintf(f, ",%s", qpl_pred_names[k]);
    fprintf(f, "\n");
    qs_ci *bci = calloc((size_t)(M ? M : 1), sizeof *bci);
    for (int i = 0; i < M && bci; i++) {
        double b[QPL_MAX_SEEDS];
        for (int s = 0; s < cfg->nseeds; s++) b[s] = alone[i] >= 0 ? pr->benefit[s * M + i] : NAN;
        qs_mean_ci(b, cfg->nseeds, 0.95, &bci[i]);
        fprintf(f, "%s,%d,%.10g,%.10g,%.10g,%.10g", ps->p[i].name, rank[i], bci[i].mean, bci[i].lo, bci[i].hi,
                alone[i] >= 0 ? r->cands[alone[i]].ci_search.mean : NAN);
        for (int k = 0; k < QPL_PRED_COUNT; k++) fprintf(f, ",%.10g", pr->score[k * M + i]);
        fprintf(f, "\n");
    }
    fclose(f);
    /* plan.md */
    snprintf(path, sizeof path, "%s/plan.md", r->dir);
    if (!(f = fopen(path, "w"))) return free(rank), free(alone), free(bci), snprintf(err, errlen, "%s: cannot write", path), -1;
    char ss[256], vs[256], g[160];
    seeds_text(cfg->seeds, cfg->nseeds, ss, sizeof ss);
    seeds_text(cfg->verify, cfg->nverify, vs, sizeof vs);
    fprintf(f, "# Plan%s%s\n\n", *r->label ? ": " : "", r->label);
    fprintf(f, "From `%s`: the fewest parts of `%s` to send to `%s` so that the upper 95%% bound of the paired gap to "
               "`%s` everywhere is at most %+g%%. %d blocks, %d parts at granularity `%s`", r->file, cfg->base,
            cfg->fallback, cfg->fallback, cfg->budget, ps->layers, M, qpl_gran_names[cfg->gran]);
    if (ps->kept) fprintf(f, " (%d more the base recipe keeps in `%s` already)", ps->kept, cfg->fallback);
    fprintf(f, "; search seeds %s, verification seeds %s.\n\n", ss, vs);
    fprintf(f, "```text\n");
    qpl_report_line(r, f);
    fprintf(f, "```\n\n");
    const qpl_cand *B = &r->cands[r->idx_base];
    fmt_ci(&B->ci_search, g, sizeof g);
    fprintf(f, "The base recipe everywhere: gap %s (search seeds). ", g);
    if (r->outcome->status == QPL_FOUND) {
        const qpl_cand *C = &r->cands[r->outcome->chosen];
        fmt_ci(&C->ci_verify, g, sizeof g);
        fprintf(f, "The plan sends %d of %d parts to `%s` (%s): verified at its own seeds, gap %s, within the budget.\n\n",
                C->k, M, cfg->fallback, C->parts, g);
    } else
        fprintf(f, "No recipe with fewer than all %d parts in the fallback was verified within the budget%s.\n\n", M,
                r->outcome->status == QPL_STOPPED ? " before the search stopped (run cap or a failed run)" : "");
    /* predictors */
    fprintf(f, "## Which signal predicts the parts that matter\n\n");
    if (!cfg->attribution)
        fprintf(f, "attribution = off: no part was measured alone, so the predictors are not ranked; the search "
                   "followed `%s`.\n\n", qpl_pred_names[pr->chosen]);
    else {
        fprintf(f, "Each part's measured benefit is the base recipe's gap minus the gap with that part alone in the "
                   "fallback, per search seed. Spearman's rank correlation of each predictor (from the base run of seed "
                   "%lld) with the mean benefit, with a 95%% percentile bootstrap interval over the %d seeds (%d "
                   "resamples); *resolved* when the interval excludes 0 (a verdict needs %d seeds: the bootstrap over 2 has 3 "
                   "distinct resamples).\n\n",
                cfg->seeds[0], cfg->nseeds, QPL_BOOT_RESAMPLES, MIN_VERDICT_SEEDS);
        fprintf(f, "| predictor | Spearman rho | 95%% bootstrap CI | verdict |\n|---|---|---|---|\n");
        for (int k = 0; k < QPL_PRED_COUNT; k++) {
            const int v = pred_verdict(r, k);
            if (!isfinite(pr->rho[k]))
                fprintf(f, "| %s%s | n/a | n/a | constant over the parts: ranks nothing |\n", qpl_pred_names[k],
                        k == pr->chosen ? " (used)" : "");
            else
                fprintf(f, "| %s%s | %+.2f | [%+.2f, %+.2f] | %s |\n", qpl_pred_names[k], k == pr->chosen ? " (used)" : "",
                        pr->rho[k], pr->lo[k], pr->hi[k],
                        v == 1 ? "resolved: predicts" : v == -1 ? "resolved: ranks backwards" : v == 0 ? "unresolved" : "too few seeds for a verdict");
        }
        fprintf(f, "\n");
        const int wv = pred_verdict(r, QPL_PRED_WGRAD);
        fprintf(f, "NVIDIA's hypothesis (NVFP4 paper, appendix E.2: the layers of high weight-gradient quantization error "
                   "must stay in BF16) %s here: Spearman's rho of `wgrad_error` with the measured benefit is ",
                wv == -2 ? "cannot be judged" : wv == 1 ? "holds" : wv == -1 ? "is contradicted" : "is not resolved");
        if (!isfinite(pr->rho[QPL_PRED_WGRAD])) fprintf(f, "undefined (a constant side).\n\n");
        else
            fprintf(f, "%+.2f [%+.2f, %+.2f]%s.\n\n", pr->rho[QPL_PRED_WGRAD], pr->lo[QPL_PRED_WGRAD], pr->hi[QPL_PRED_WGRAD],
                    wv == -2 ? " (too few seeds for a verdict)" : wv == 1 ? ", resolved above 0"
                    : wv == -1 ? ", resolved below 0" : ", an interval that holds 0");
        fprintf(f, "The search followed `%s`%s.\n\n", qpl_pred_names[pr->chosen],
                cfg->predictor >= 0 ? " (set by the plan file)"
                : pr->defaulted     ? " (no predictor had a correlation: the default)"
                                    : ", the highest correlation");
    }
    fprintf(f, "## The parts\n\n| part | rank | benefit %% [95%% t CI] | %s |\n|---|---|---|---|\n",
            qpl_pred_names[pr->chosen]);
    for (int i = 0; i < M; i++) {
        int p = r->order[i];
        if (bci && bci[p].n >= 2) snprintf(g, sizeof g, "%+.2f [%+.2f, %+.2f]", bci[p].mean, bci[p].lo, bci[p].hi);
        else snprintf(g, sizeof g, "not measured");
        fprintf(f, "| %s | %d | %s | %.4g |\n", ps->p[p].name, i + 1, g, pr->score[pr->chosen * M + p]);
    }
    fprintf(f, "\n## The search\n\n| stage | parts in the fallback | seeds | gap %% [95%% t CI] | meets |\n|---|---|---|---|---|\n");
    for (int c = 0; c < r->ncands; c++) {
        const qpl_cand *C = &r->cands[c];
        if (C->part >= 0 && !C->probed && !C->verified) continue;
        if (C->searched) {
            fmt_ci(&C->ci_search, g, sizeof g);
            fprintf(f, "| %s | %d: %s | %s | %s | %s |\n", C->stage, C->k, C->parts, ss, g, C->meets_search ? "yes" : "no");
        }
        if (C->verified && c != r->idx_all) {
            fmt_ci(&C->ci_verify, g, sizeof g);
            fprintf(f, "| verify | %d: %s | %s | %s | %s |\n", C->k, C->parts, vs, g, C->meets_verify ? "yes" : "no");
        }
    }
    fprintf(f, "\n![gap against parts in the fallback](plan.png)\n\nTables: plan.csv (every recipe at every seed set), "
               "plan_parts.csv, plan_predictors.csv; runs in r/ID/runs/seed=S.h5.\n");
    fclose(f);
    free(rank), free(alone), free(bci);
    return write_figure(r, err, errlen);
}
