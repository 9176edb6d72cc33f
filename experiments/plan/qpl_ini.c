/* qpl_ini.c — the [plan] section (see qpl_ini.h). */
#include "qpl_ini.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"

const char *const qpl_gran_names[] = {
    [QPL_GRAN_BLOCK] = "block",
    [QPL_GRAN_GEMM] = "block.gemm",
    [QPL_GRAN_PASS] = "block.gemm.pass",
};
_Static_assert(sizeof qpl_gran_names / sizeof qpl_gran_names[0] == QPL_GRAN_COUNT, "a name per granularity");

enum { K_BASE, K_FALLBACK, K_GRAN, K_BUDGET, K_SEEDS, K_VERIFY, K_MAXRUNS, K_ATTR, K_PRED, K_COUNT };
static const char *const keys[] = {
    [K_BASE] = "base",         [K_FALLBACK] = "fallback",    [K_GRAN] = "granularity",
    [K_BUDGET] = "budget",     [K_SEEDS] = "seeds",          [K_VERIFY] = "verify_seeds",
    [K_MAXRUNS] = "max_runs",  [K_ATTR] = "attribution",     [K_PRED] = "predictor",
};
_Static_assert(sizeof keys / sizeof keys[0] == K_COUNT, "a name per key");

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} ctx;

static int fail(const ctx *c, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%d: %s", c->path, line, msg);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
    return s;
}

/* the comment rule of qs_ini.c: '#'/';' first or after a blank */
static void cut_comment(char *s)
{
    for (char *c = s; *c; c++)
        if ((*c == '#' || *c == ';') && (c == s || c[-1] == ' ' || c[-1] == '\t')) {
            *c = '\0';
            return;
        }
}

static int parse_seeds(const ctx *c, int line, const char *key, char *v, long long *out, int *n)
{
    *n = 0;
    for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
        char *t = trim(tok), *end;
        if (!*t) return fail(c, line, "%s: an empty value", key);
        const long long s = strtoll(t, &end, 10);
        if (*end || s < 0) return fail(c, line, "%s: '%s' is not a seed (an integer >= 0)", key, t);
        for (int i = 0; i < *n; i++)
            if (out[i] == s) return fail(c, line, "%s: seed %lld twice", key, s);
        if (*n == QPL_MAX_SEEDS) return fail(c, line, "%s: at most %d seeds", key, QPL_MAX_SEEDS);
        out[(*n)++] = s;
    }
    if (*n < 2) return fail(c, line, "%s: at least 2 seeds (a paired interval needs two)", key);
    return 0;
}

static int set_key(const ctx *c, qpl_cfg *cfg, int line, const char *key, char *v, int *seen)
{
    int k = 0;
    char canon[64];
    snprintf(canon, sizeof canon, "%s", key);
    for (char *p = canon; *p; p++)
        if (*p == '-') *p = '_';
    while (k < K_COUNT && strcmp(keys[k], canon)) k++;
    if (k == K_COUNT)
        return fail(c, line, "unknown [plan] key '%s' (valid: base, fallback, granularity, budget, seeds, "
                             "verify_seeds, max_runs, attribution, predictor)", key);
    if (seen[k]) return fail(c, line, "[plan] %s given twice (first at line %d)", keys[k], seen[k]);
    seen[k] = line;
    if (!*v) return fail(c, line, "[plan] %s: an empty value", keys[k]);
    char msg[768], *end;
    switch (k) {
    case K_BASE:
        for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
            char *t = trim(tok);
            if (!*t) return fail(c, line, "base: an empty value");
            if (strlen(t) >= sizeof cfg->base) return fail(c, line, "base: a recipe of at most %zu bytes", sizeof cfg->base - 1);
            if (cfg->nbases == QPL_MAX_BASES) return fail(c, line, "base: at most %d recipes", QPL_MAX_BASES);
            for (char *p = t; *p; p++)
                if (*p == '|') *p = ',';
            qp_recipe r;
            if (qp_recipe_parse(t, &r, msg, sizeof msg)) return fail(c, line, "base: %s", msg);
            for (int i = 0; i < cfg->nbases; i++)
                if (!strcmp(cfg->bases[i], t)) return fail(c, line, "base: recipe %s twice", t);
            snprintf(cfg->bases[cfg->nbases++], sizeof cfg->bases[0], "%s", t);
        }
        snprintf(cfg->base, sizeof cfg->base, "%s", cfg->bases[0]);
        return 0;
    case K_FALLBACK: {
        if (strlen(v) >= sizeof cfg->fallback || !qp_format_by_name(v))
            return fail(c, line, "fallback: '%s' is not a format name (qerr --formats; e.g. bf16)", v);
        snprintf(cfg->fallback, sizeof cfg->fallback, "%s", v);
        return 0;
    }
    case K_GRAN:
        for (int g = 0; g < QPL_GRAN_COUNT; g++)
            if (!strcmp(v, qpl_gran_names[g])) {
                cfg->gran = (qpl_gran)g;
                return 0;
            }
        return fail(c, line, "granularity: '%s' is not block, block.gemm or block.gemm.pass", v);
    case K_BUDGET: {
        const double b = strtod(v, &end);
        if (end == v || *trim(end) || !isfinite(b) || b <= 0 || b > 100)
            return fail(c, line, "budget: '%s' is not a percentage in (0, 100]", v);
        cfg->budget = b;
        return 0;
    }
    case K_SEEDS: return parse_seeds(c, line, "seeds", v, cfg->seeds, &cfg->nseeds);
    case K_VERIFY: return parse_seeds(c, line, "verify_seeds", v, cfg->verify, &cfg->nverify);
    case K_MAXRUNS: {
        const long n = strtol(v, &end, 10);
        if (end == v || *end || n < 1 || n > 100000) return fail(c, line, "max_runs: '%s' is not an integer in 1..100000", v);
        cfg->max_runs = (int)n;
        return 0;
    }
    case K_ATTR:
        if (strcmp(v, "on") && strcmp(v, "off")) return fail(c, line, "attribution: '%s' is not on or off", v);
        cfg->attribution = !strcmp(v, "on");
        return 0;
    case K_PRED:
        if (!strcmp(v, "auto")) {
            cfg->predictor = -1;
            return 0;
        }
        if ((cfg->predictor = qpl_pred_find(v)) < 0) {
            char names[512] = "auto";
            for (int p = 0; p < QPL_PRED_COUNT; p++)
                snprintf(names + strlen(names), sizeof names - strlen(names), ", %s", qpl_pred_names[p]);
            return fail(c, line, "predictor: '%s' is not one of %s", v, names);
        }
        return 0;
    case K_COUNT: break;
    }
    return fail(c, line, "internal: [plan] key");
}

/* a [grid] axis of a plan file: values added to [base], a plan each */
static int add_axis(const ctx *c, qpl_cfg *cfg, int line, const char *key, char *v)
{
    char canon[64];
    snprintf(canon, sizeof canon, "%s", key);
    for (char *p = canon; *p; p++)
        if (*p == '-') *p = '_';
    if (!strcmp(canon, "recipe") || !strcmp(canon, "seed") || !strcmp(canon, "exclude"))
        return fail(c, line, "[grid] %s: a plan sets it itself ([plan] base, seeds); a plan's grid gives other axes", key);
    if (cfg->naxes == QPL_MAX_AXES) return fail(c, line, "[grid]: at most %d axes in a plan file", QPL_MAX_AXES);
    for (int a = 0; a < cfg->naxes; a++)
        if (!strcmp(cfg->axes[a].key, canon)) return fail(c, line, "[grid] %s given twice", key);
    typeof(cfg->axes[0]) *A = &cfg->axes[cfg->naxes];
    snprintf(A->key, sizeof A->key, "%s", canon);
    A->line = line, A->nvalues = 0;
    for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
        char *t = trim(tok);
        if (!*t) return fail(c, line, "[grid] %s: an empty value", key);
        if (A->nvalues == QPL_MAX_VALUES || strlen(t) >= sizeof A->values[0])
            return fail(c, line, "[grid] %s: at most %d values of %zu bytes", key, QPL_MAX_VALUES, sizeof A->values[0] - 1);
        snprintf(A->values[A->nvalues++], sizeof A->values[0], "%s", t);
    }
    if (!A->nvalues) return fail(c, line, "[grid] %s: no value", key);
    cfg->naxes++;
    return 0;
}

/* the key of a 'key = value' line (lowercase, '-' as '_'), or "" */
static void line_key(const char *s, char *key, size_t len)
{
    const char *eq = strchr(s, '=');
    size_t n = 0;
    key[0] = '\0';
    if (!eq) return;
    while (s < eq && isspace((unsigned char)*s)) s++;
    while (s < eq && n + 1 < len) {
        const char ch = *s++;
        key[n++] = ch == '-' ? '_' : (char)tolower((unsigned char)ch);
    }
    while (n && isspace((unsigned char)key[n - 1])) n--;
    key[n] = '\0';
}

int qpl_ini_parse(const char *path, const char *text, size_t len, qpl_cfg *cfg, char **rest, char *err,
                  size_t errlen)
{
    const ctx c = {path, err, errlen};
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
            return fail(&c, line, "line longer than %zu bytes", sizeof buf - 1);
        }
        memcpy(buf, p, n);
        buf[n] = '\0';
        cut_comment(buf);
        char *s = trim(buf);
        int rc = 0;
        if (*s == '[') {
            char *close = strchr(s, ']');
            const char *name = close ? (*close = '\0', trim(s + 1)) : "";
            in_plan = !strcmp(name, "plan");
            section = !strcmp(name, "base") ? 1 : !strcmp(name, "grid") ? 2 : !strcmp(name, "sweep") ? 3 : 4;
            if (in_plan && cfg->line) rc = fail(&c, line, "section [plan] appears twice (first at line %d)", cfg->line);
            else if (in_plan) cfg->line = line;
        } else if (*s && section == 2) {
            char *eq = strchr(s, '=');
            if (!eq) rc = fail(&c, line, "expected 'key = value', '[section]' or a comment, not '%s'", s);
            else {
                *eq = '\0';
                rc = add_axis(&c, cfg, line, trim(s), trim(eq + 1));
            }
        } else if (*s && in_plan) {
            char *eq = strchr(s, '=');
            if (!eq) rc = fail(&c, line, "expected 'key = value', '[section]' or a comment, not '%s'", s);
            else {
                *eq = '\0';
                rc = set_key(&c, cfg, line, trim(s), trim(eq + 1), seen);
            }
        } else if (*s) {
            char key[64];
            line_key(s, key, sizeof key);
            if (section == 1 && (!strcmp(key, "recipe") || !strcmp(key, "seed")))
                rc = fail(&c, line, "[base] %s: a plan sets each run's %s itself ([plan] base/seeds)", key, key);
            else if (section == 3 && key[0] && strcmp(key, "threads_per_run"))
                rc = fail(&c, line, "[sweep] %s has no place in a plan file (only threads_per_run)", key);
        }
        if (rc) {
            free(*rest), *rest = NULL;
            return -1;
        }
        if (in_plan || section == 2) memset(p, ' ', n); /* qs_ini sees a blank line */
        if ((in_plan || section == 2) && *s == '[') p[0] = '#';
        p += n + (nl ? 1 : 0);
    }
    int rc = 0;
    if (!cfg->line) {
        snprintf(err, errlen, "%s: no [plan] section (qsweep --plan needs one; docs/qsweep.md)", path);
        rc = -1;
    }
    else if (!seen[K_BASE]) rc = fail(&c, cfg->line, "[plan] needs base = RECIPE");
    else if (!seen[K_GRAN]) rc = fail(&c, cfg->line, "[plan] needs granularity = block, block.gemm or block.gemm.pass");
    else if (!seen[K_BUDGET]) rc = fail(&c, cfg->line, "[plan] needs budget = PERCENT");
    else if (!seen[K_SEEDS]) rc = fail(&c, cfg->line, "[plan] needs seeds = S1, S2, ...");
    else if (!seen[K_VERIFY]) rc = fail(&c, cfg->line, "[plan] needs verify_seeds = V1, V2, ... (none of the search's seeds)");
    else if (!seen[K_MAXRUNS]) rc = fail(&c, cfg->line, "[plan] needs max_runs = N");
    else if (cfg->predictor < 0 && !cfg->attribution)
        rc = fail(&c, seen[K_ATTR], "attribution = off needs a predictor other than auto (auto picks by the attribution)");
    for (int i = 0; !rc && i < cfg->nverify; i++)
        for (int j = 0; j < cfg->nseeds; j++)
            if (cfg->verify[i] == cfg->seeds[j])
                rc = fail(&c, seen[K_VERIFY], "verify_seeds: seed %lld is also a search seed (the verification needs its own)",
                          cfg->verify[i]);
    if (rc) free(*rest), *rest = NULL;
    return rc;
}
