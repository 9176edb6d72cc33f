/* qpl_ini.c — the [plan] section (see qpl_ini.h). */
#include "qpl_ini.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"
#include "qs_keys.h"

const char *const qpl_gran_names[] = {
    [QPL_GRAN_BLOCK] = "block",
    [QPL_GRAN_GEMM] = "block.gemm",
    [QPL_GRAN_PASS] = "block.gemm.pass",
};
_Static_assert(sizeof qpl_gran_names / sizeof qpl_gran_names[0] == QPL_GRAN_COUNT, "a name per granularity");

enum { K_BASE, K_FALLBACK, K_GRAN, K_BUDGET, K_SEEDS, K_VERIFY, K_MAXRUNS, K_ATTR, K_PRED, K_COUNT };

/* [plan]'s setters (qs_keys.h): dst is the qpl_cfg */
static int set_base(const qs_where *w, int line, const qs_key *k, char *v, void *dst)
{
    (void)k;
    qpl_cfg *cfg = dst;
    char msg[768];
    for (char *t, *cur = v; (t = qs_field(&cur));) {
        if (!*t) return qs_fail(w, line, "base: an empty value");
        if (strlen(t) >= sizeof cfg->base) return qs_fail(w, line, "base: a recipe of at most %zu bytes", sizeof cfg->base - 1);
        if (cfg->nbases == QPL_MAX_BASES) return qs_fail(w, line, "base: at most %d recipes", QPL_MAX_BASES);
        qs_bars_to_commas(t);
        qp_recipe r;
        if (qp_recipe_parse(t, &r, msg, sizeof msg)) return qs_fail(w, line, "base: %s", msg);
        for (int i = 0; i < cfg->nbases; i++)
            if (!strcmp(cfg->bases[i], t)) return qs_fail(w, line, "base: recipe %s twice", t);
        snprintf(cfg->bases[cfg->nbases++], sizeof cfg->bases[0], "%s", t);
    }
    snprintf(cfg->base, sizeof cfg->base, "%s", cfg->bases[0]);
    return 0;
}

static int set_fallback(const qs_where *w, int line, const qs_key *k, char *v, void *dst)
{
    if (strlen(v) >= k->size || !qp_format_by_name(v))
        return qs_fail(w, line, "fallback: '%s' is not a format name (qerr --formats; e.g. bf16)", v);
    snprintf((char *)dst + k->offset, k->size, "%s", v);
    return 0;
}

/* seeds, verify_seeds: distinct integers >= 0, at least 2 */
static int set_seeds(const qs_where *w, int line, const qs_key *k, char *v, void *dst)
{
    qpl_cfg *cfg = dst;
    long long *out = (long long *)(void *)((char *)dst + k->offset);
    int *n = out == cfg->seeds ? &cfg->nseeds : &cfg->nverify;
    *n = 0;
    for (char *t, *end, *cur = v; (t = qs_field(&cur));) {
        if (!*t) return qs_fail(w, line, "%s: an empty value", k->name);
        const long long s = strtoll(t, &end, 10);
        if (*end || s < 0) return qs_fail(w, line, "%s: '%s' is not a seed (an integer >= 0)", k->name, t);
        for (int i = 0; i < *n; i++)
            if (out[i] == s) return qs_fail(w, line, "%s: seed %lld twice", k->name, s);
        if (*n == QPL_MAX_SEEDS) return qs_fail(w, line, "%s: at most %d seeds", k->name, QPL_MAX_SEEDS);
        out[(*n)++] = s;
    }
    if (*n < 2) return qs_fail(w, line, "%s: at least 2 seeds (a paired interval needs two)", k->name);
    return 0;
}

static int set_predictor(const qs_where *w, int line, const qs_key *k, char *v, void *dst)
{
    (void)k;
    qpl_cfg *cfg = dst;
    if (!strcmp(v, "auto")) {
        cfg->predictor = -1;
        return 0;
    }
    if ((cfg->predictor = qpl_pred_find(v)) < 0) {
        char names[512] = "auto";
        for (int p = 0; p < QPL_PRED_COUNT; p++)
            snprintf(names + strlen(names), sizeof names - strlen(names), ", %s", qpl_pred_names[p]);
        return qs_fail(w, line, "predictor: '%s' is not one of %s", v, names);
    }
    return 0;
}

static const char *const on_off[] = {"off", "on"};
static const qs_key KEYS[] = {
    [K_BASE] = {"base", QS_KEY_FN, .set = set_base},
    [K_FALLBACK] = {"fallback", QS_KEY_FN, offsetof(qpl_cfg, fallback), sizeof ((qpl_cfg *)0)->fallback, .set = set_fallback},
    [K_GRAN] = {"granularity", QS_KEY_ENUM, offsetof(qpl_cfg, gran), .names = qpl_gran_names, .count = QPL_GRAN_COUNT,
                .help = "block, block.gemm or block.gemm.pass"},
    [K_BUDGET] = {"budget", QS_KEY_NUM, offsetof(qpl_cfg, budget), .lo = 0, .hi = 100, .help = "a percentage"},
    [K_SEEDS] = {"seeds", QS_KEY_FN, offsetof(qpl_cfg, seeds), .set = set_seeds},
    [K_VERIFY] = {"verify_seeds", QS_KEY_FN, offsetof(qpl_cfg, verify), .set = set_seeds},
    [K_MAXRUNS] = {"max_runs", QS_KEY_INT, offsetof(qpl_cfg, max_runs), .lo = 1, .hi = 100000},
    [K_ATTR] = {"attribution", QS_KEY_ENUM, offsetof(qpl_cfg, attribution), .names = on_off, .count = 2, .help = "on or off"},
    [K_PRED] = {"predictor", QS_KEY_FN, .set = set_predictor},
};
_Static_assert(sizeof KEYS / sizeof *KEYS == K_COUNT, "a [plan] key per name");
_Static_assert(sizeof(qpl_gran) == sizeof(int), "QS_KEY_ENUM stores an int");
static const qs_section PLAN = {"plan", KEYS, K_COUNT};

/* a [grid] axis of a plan file: values added to [base], a plan each */
static int add_axis(const qs_where *c, qpl_cfg *cfg, int line, const char *key, char *v)
{
    char canon[64];
    snprintf(canon, sizeof canon, "%s", key);
    for (char *p = canon; *p; p++)
        if (*p == '-') *p = '_';
    if (!strcmp(canon, "recipe") || !strcmp(canon, "seed") || !strcmp(canon, "exclude"))
        return qs_fail(c, line, "[grid] %s: a plan sets it itself ([plan] base, seeds); a plan's grid gives other axes", key);
    if (cfg->naxes == QPL_MAX_AXES) return qs_fail(c, line, "[grid]: at most %d axes in a plan file", QPL_MAX_AXES);
    for (int a = 0; a < cfg->naxes; a++)
        if (!strcmp(cfg->axes[a].key, canon)) return qs_fail(c, line, "[grid] %s given twice", key);
    typeof(cfg->axes[0]) *A = &cfg->axes[cfg->naxes];
    snprintf(A->key, sizeof A->key, "%s", canon);
    A->line = line, A->nvalues = 0;
    for (char *t, *cur = v; (t = qs_field(&cur));) {
        if (!*t) return qs_fail(c, line, "[grid] %s: an empty value", key);
        if (A->nvalues == QPL_MAX_VALUES || strlen(t) >= sizeof A->values[0])
            return qs_fail(c, line, "[grid] %s: at most %d values of %zu bytes", key, QPL_MAX_VALUES, sizeof A->values[0] - 1);
        snprintf(A->values[A->nvalues++], sizeof A->values[0], "%s", t);
    }
    cfg->naxes++;
    return 0;
}

int qpl_ini_parse(const char *path, const char *text, size_t len, qpl_cfg *cfg, char **rest, char *err,
                  size_t errlen)
{
    const qs_where c = {path, err, errlen};
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->fallback, sizeof cfg->fallback, "bf16");
    cfg->gran = QPL_GRAN_COUNT;
    cfg->budget = NAN;
    cfg->attribution = 1;
    cfg->predictor = -1;
    *rest = malloc(len + 1);
    if (!*rest) return snprintf(err, errlen, "out of memory"), -1;
    memcpy(*rest, text, len);
    (*rest)[len] = '\0';
    int seen[K_COUNT] = {0}, line = 0, in_plan = 0, section = 0 /* 1 base, 2 grid, 3 sweep, 4 other */;
    char *p = *rest;
    while (*p) {
        char *nl = strchr(p, '\n');
        const size_t n = nl ? (size_t)(nl - p) : strlen(p);
        line++;
        char buf[8192];
        if (n >= sizeof buf) {
            free(*rest), *rest = NULL;
            return qs_fail(&c, line, "line longer than %zu bytes", sizeof buf - 1);
        }
        memcpy(buf, p, n);
        buf[n] = '\0';
        char *key = NULL, *v = NULL;
        const int kind = qs_line(&c, line, buf, &key, &v);
        int rc = kind < 0;
        if (kind == 1) {
            in_plan = !strcmp(key, "plan");
            section = !strcmp(key, "base") ? 1 : !strcmp(key, "grid") ? 2 : !strcmp(key, "sweep") ? 3 : 4;
            if (in_plan && cfg->line) rc = qs_fail(&c, line, "section [plan] appears twice (first at line %d)", cfg->line);
            else if (in_plan) cfg->line = line;
        } else if (kind == 2 && section == 2) {
            rc = add_axis(&c, cfg, line, key, v);
        } else if (kind == 2 && in_plan) {
            rc = qs_keys_set(&c, &PLAN, seen, cfg, line, key, v);
        } else if (kind == 2) {
            for (char *k = key; *k; k++) *k = *k == '-' ? '_' : (char)tolower((unsigned char)*k);
            if (section == 1 && (!strcmp(key, "recipe") || !strcmp(key, "seed")))
                rc = qs_fail(&c, line, "[base] %s: a plan sets each run's %s itself ([plan] base/seeds)", key, key);
            else if (section == 3 && strcmp(key, "threads_per_run"))
                rc = qs_fail(&c, line, "[sweep] %s has no place in a plan file (only threads_per_run)", key);
        }
        if (rc) {
            free(*rest), *rest = NULL;
            return -1;
        }
        if (in_plan || section == 2) memset(p, ' ', n); /* qs_ini sees a blank line */
        if ((in_plan || section == 2) && kind == 1) p[0] = '#';
        p += n + (nl ? 1 : 0);
    }
    int rc = 0;
    if (!cfg->line) {
        snprintf(err, errlen, "%s: no [plan] section (qsweep --plan needs one; docs/qsweep.md)", path);
        rc = -1;
    }
    else if (!seen[K_BASE]) rc = qs_fail(&c, cfg->line, "[plan] needs base = RECIPE");
    else if (!seen[K_GRAN]) rc = qs_fail(&c, cfg->line, "[plan] needs granularity = block, block.gemm or block.gemm.pass");
    else if (!seen[K_BUDGET]) rc = qs_fail(&c, cfg->line, "[plan] needs budget = PERCENT");
    else if (!seen[K_SEEDS]) rc = qs_fail(&c, cfg->line, "[plan] needs seeds = S1, S2, ...");
    else if (!seen[K_VERIFY]) rc = qs_fail(&c, cfg->line, "[plan] needs verify_seeds = V1, V2, ... (none of the search's seeds)");
    else if (!seen[K_MAXRUNS]) rc = qs_fail(&c, cfg->line, "[plan] needs max_runs = N");
    else if (cfg->predictor < 0 && !cfg->attribution)
        rc = qs_fail(&c, seen[K_ATTR], "attribution = off needs a predictor other than auto (auto picks by the attribution)");
    for (int i = 0; !rc && i < cfg->nverify; i++)
        for (int j = 0; j < cfg->nseeds; j++)
            if (cfg->verify[i] == cfg->seeds[j])
                rc = qs_fail(&c, seen[K_VERIFY], "verify_seeds: seed %lld is also a search seed (the verification needs its own)",
                          cfg->verify[i]);
    if (rc) free(*rest), *rest = NULL;
    return rc;
}
