/* qs_grid.c — grid expansion (see qs_grid.h). */
#include "qs_grid.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_size.h"
#include "qp_train_options.h"
#include "qp_trainer.h" /* QP_DEFAULT_SEED, QP_DEFAULT_LAYERS */
#include "qs_attr.h"
#include "qs_opts.h"

int qs_abspath(const char *path, char *buf, size_t len)
{
    if (path[0] == '/') return (size_t)snprintf(buf, len, "%s", path) < len ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    /* "./x" and "x" give the same folder name in commands and scripts */
    while (path[0] == '.' && path[1] == '/') path += 2;
    if (!strcmp(path, ".") || !*path) return (size_t)snprintf(buf, len, "%s", cwd) < len ? 0 : -1;
    return (size_t)snprintf(buf, len, "%s/%s", cwd, path) < len ? 0 : -1;
}

void qs_grid_safe(const char *value, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *c = value; *c && n + 1 < len; c++) {
        const char ch = *c == ',' ? '+' : *c;
        buf[n++] = (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.+=-", ch) && ch) ? ch : '-';
    }
    buf[n] = '\0';
}

static int push(qs_run *r, const char *s);

const char *qs_grid_value(const qs_experiment *e, const qs_run *r, int a)
{
    return e->axes[a].values[r->vi[a]];
}

const char *qs_grid_get(const qs_experiment *e, const qs_run *r, const char *key)
{
    const int a = qs_ini_axis(e, key);
    return a >= 0 ? qs_grid_value(e, r, a) : qs_ini_base(e, key);
}

const char *qs_grid_recipe(const qs_experiment *e, const qs_run *r)
{
    const char *v = qs_grid_get(e, r, "recipe");
    return v ? v : "bf16";
}

/* The twin of run `of` in slot t: same values, another data seed. */
static int make_twin(const qs_experiment *e, qs_plan *p, const char *qtrain, int of, qs_run *t, char *err,
                     size_t errlen)
{
    const qs_run *r = &p->runs[of];
    const char *ds = qs_grid_get(e, r, "data_seed"), *sd = qs_grid_get(e, r, "seed");
    const unsigned long long base = ds ? strtoull(ds, NULL, 10) : sd ? strtoull(sd, NULL, 10) : QP_DEFAULT_SEED;
    char num[32];
    snprintf(num, sizeof num, "%llu", base + QS_NOISE_SEED_OFFSET);
    t->twin_of = of;
    t->attr_of = -1, t->block = -1, t->layers = r->layers;
    t->vi = calloc((size_t)(e->naxes ? e->naxes : 1), sizeof *t->vi);
    if (!t->vi) return -1;
    memcpy(t->vi, r->vi, (size_t)e->naxes * sizeof *t->vi);
    if (strlen(r->name) + strlen(num) + 11 > 200) {
        snprintf(err, errlen, "%s: run name of the noise twin of %s longer than 200 bytes", e->path, r->name);
        return -2;
    }
    char parent[sizeof r->name];
    memcpy(parent, r->name, sizeof parent);
    snprintf(t->name, sizeof t->name, "%.200s_data_seed=%.20s", parent, num);
    if ((size_t)snprintf(t->h5, sizeof t->h5, "%s/runs/%s.h5", p->dir, t->name) >= sizeof t->h5 ||
        (size_t)snprintf(t->log, sizeof t->log, "%s/logs/%s.log", p->dir, t->name) >= sizeof t->log ||
        (size_t)snprintf(t->exitfile, sizeof t->exitfile, "%s/runs/%s.exit", p->dir, t->name) >= sizeof t->exitfile) {
        snprintf(err, errlen, "%s: path too long", p->dir);
        return -2;
    }
    /* the run's command with --data-seed D before --out (a data_seed key's
     * own --data-seed comes earlier: qtrain takes the last) */
    for (int i = 0; i < r->argc; i++) {
        if (!strcmp(r->argv[i], "--out")) {
            if (push(t, "--data-seed") || push(t, num) || push(t, "--out") || push(t, t->h5)) return -1;
            i++;
            continue;
        }
        if (push(t, r->argv[i])) return -1;
    }
    (void)qtrain;
    return 0;
}

/* The run's blocks: its model's, its --layers, or qtrain's default (qs_ini
 * checked that a model value resolves). */
/* Finding which blocks of a recipe get attribution runs resolves a whole
 * plan per block (quantized_blocks): a bound on that work, which three
 * recipes on 96 blocks stay under, so an experiment file cannot make the
 * expansion take minutes (fuzz_experiment found 286 blocks x 3 recipes
 * taking over 10 s under ASan: each plan is resolved twice, by the parse
 * and by plans_of). */
#define QS_ATTR_MAX_PLANS 30000

static int run_layers(const qs_experiment *e, const qs_run *r)
{
    const char *m = qs_grid_get(e, r, "model"), *l = qs_grid_get(e, r, "layers"), *h = qs_grid_get(e, r, "heads");
    qp_model_preset mp;
    char err[256];
    if (m && !qp_size_model(m, l ? atoi(l) : 1, h ? atoi(h) : 1, &mp, err, sizeof err)) return mp.layers;
    return l ? atoi(l) : QP_DEFAULT_LAYERS;
}

/* The plans of a recipe for L blocks (malloc'd), or NULL with a message. */
static qp_linear_plan *plans_of(const char *spec, int L, char *err, size_t errlen)
{
    qp_recipe rec;
    qp_linear_plan *pl = malloc((size_t)L * QP_BLOCK_GEMMS * sizeof *pl);
    if (!pl) return snprintf(err, errlen, "out of memory"), NULL;
    if (qp_recipe_parse(spec, &rec, err, errlen) || qp_recipe_resolve(&rec, L, 0 /* every GEMM id: a block differs if any of its GEMMs does; qtrain refuses a rule naming another architecture's GEMM */, pl, err, errlen)) {
        free(pl);
        return NULL;
    }
    return pl;
}

/* Which blocks of recipe R on L blocks differ from the baseline's plan when
 * alone in R's plan (mask[b] = 1: block b gets a run). Returns 0, -1 out of
 * memory, -2 with a message. */
static int quantized_blocks(const qs_experiment *e, const char *recipe, int L, char *mask, char *err, size_t errlen)
{
    char spec[QP_RECIPE_SPEC_MAX], msg[768];
    qp_linear_plan *base = plans_of(e->baseline, L, msg, sizeof msg), *one = NULL;
    if (!base) {
        snprintf(err, errlen, "%s: attribute: baseline %s: %s", e->path, e->baseline, msg);
        return -2;
    }
    int rc = 0;
    for (int b = 0; b < L && !rc; b++) {
        if (qs_attr_recipe(recipe, e->baseline, b, spec, sizeof spec)) {
            snprintf(err, errlen, "%s: attribute: recipe '%.200s' with ',~L%d=%s' is longer than %d bytes", e->path,
                     recipe, b, e->baseline, QP_RECIPE_SPEC_MAX - 1);
            rc = -2;
            break;
        }
        free(one);
        if (!(one = plans_of(spec, L, msg, sizeof msg))) {
            snprintf(err, errlen, "%s: attribute: %s", e->path, msg);
            rc = -2;
            break;
        }
        mask[b] = memcmp(one, base, (size_t)L * QP_BLOCK_GEMMS * sizeof *one) != 0;
    }
    free(one);
    free(base);
    return rc;
}

/* The attribution runs of grid run `of` (qs_grid.h) into p->runs[p->n...]:
 * one per block of mask. */
static int make_blocks(const qs_experiment *e, qs_plan *p, int of, const char *mask, char *err, size_t errlen)
{
    const qs_run *r = &p->runs[of];
    const char *recipe = qs_grid_recipe(e, r);
    const int L = r->layers;
    char spec[QP_RECIPE_SPEC_MAX];
    int rc = 0;
    for (int b = 0; b < L && !rc; b++) {
        if (!mask[b]) continue; /* kept in the baseline's format: the baseline run itself */
        qs_attr_recipe(recipe, e->baseline, b, spec, sizeof spec); /* fits: quantized_blocks checked */
        qs_run *t = &p->runs[p->n++];
        t->twin_of = -1, t->attr_of = of, t->block = b, t->layers = L;
        t->vi = calloc((size_t)(e->naxes ? e->naxes : 1), sizeof *t->vi);
        if (!t->vi) {
            rc = -1;
            break;
        }
        memcpy(t->vi, r->vi, (size_t)e->naxes * sizeof *t->vi);
        if (strlen(r->name) + 12 > 200) {
            snprintf(err, errlen, "%s: run name of block %d of %s longer than 200 bytes", e->path, b, r->name);
            rc = -2;
            break;
        }
        snprintf(t->name, sizeof t->name, "%.200s_block=%d", r->name, b);
        if ((size_t)snprintf(t->h5, sizeof t->h5, "%s/runs/%s.h5", p->dir, t->name) >= sizeof t->h5 ||
            (size_t)snprintf(t->log, sizeof t->log, "%s/logs/%s.log", p->dir, t->name) >= sizeof t->log ||
            (size_t)snprintf(t->exitfile, sizeof t->exitfile, "%s/runs/%s.exit", p->dir, t->name) >=
                sizeof t->exitfile) {
            snprintf(err, errlen, "%s: path too long", p->dir);
            rc = -2;
            break;
        }
        /* the parent's command with this recipe and run file */
        int has_recipe = 0;
        for (int i = 0; i < r->argc && !rc; i++) {
            if (!strcmp(r->argv[i], "--recipe") && i + 1 < r->argc) {
                rc = push(t, "--recipe") || push(t, spec) ? -1 : 0;
                has_recipe = 1;
                i++;
            } else if (!strcmp(r->argv[i], "--out") && i + 1 < r->argc) {
                rc = (!has_recipe && (push(t, "--recipe") || push(t, spec))) || push(t, "--out") || push(t, t->h5)
                         ? -1 : 0;
                has_recipe = 1;
                i++;
            } else {
                rc = push(t, r->argv[i]) ? -1 : 0;
            }
        }
    }
    return rc;
}

static int make_name(const qs_experiment *e, qs_run *r, char *err, size_t errlen)
{
    if (e->naxes == 0) {
        snprintf(r->name, sizeof r->name, "base");
        return 0;
    }
    /* 200 bytes at most: qtrain adds up to 16 (".ckpt.h5.prev", ".ckpt.h5.tmp") to a
     * 255-byte file name limit */
    char buf[1024];
    size_t n = 0;
    for (int a = 0; a < e->naxes; a++) {
        char safe[256];
        qs_grid_safe(qs_grid_value(e, r, a), safe, sizeof safe);
        const int w = snprintf(buf + n, sizeof buf - n, "%s%s=%s", a ? "_" : "", e->axes[a].key, safe);
        if (w < 0 || n + (size_t)w > 200) {
            snprintf(err, errlen, "%s:%d: run name longer than 200 bytes: use fewer or shorter grid values", e->path,
                     e->axes[a].line);
            return -1;
        }
        n += (size_t)w;
    }
    snprintf(r->name, sizeof r->name, "%.200s", buf);
    return 0;
}

static int push(qs_run *r, const char *s)
{
    char **na = realloc(r->argv, (size_t)(r->argc + 2) * sizeof *na);
    if (!na) return -1;
    r->argv = na;
    if (!(na[r->argc] = strdup(s))) return -1;
    na[++r->argc] = NULL;
    return 0;
}

/* One key's options: model becomes --layers L --heads H --dim C (qs_ini
 * checked that its values resolve and that [base] has what a count needs). */
static int push_option(const qs_experiment *e, qs_run *r, const char *key, const char *value)
{
    char flag[64];
    const qs_opt *o = qs_opt_find(key);
    if (o->kind != QS_OPT_MODEL) {
        const char *args[2];
        const int n = qs_opt_args(o, value, args, flag, sizeof flag);
        for (int i = 0; i < n; i++)
            if (push(r, args[i])) return -1;
        return 0;
    }
    const char *l = qs_ini_base(e, "layers"), *h = qs_ini_base(e, "heads");
    qp_model_preset m;
    char err[256], num[3][16];
    if (qp_size_model(value, l ? atoi(l) : 1, h ? atoi(h) : 1, &m, err, sizeof err)) return -1;
    snprintf(num[0], sizeof num[0], "%d", m.layers);
    snprintf(num[1], sizeof num[1], "%d", m.heads);
    snprintf(num[2], sizeof num[2], "%d", m.dim);
    /* a count's layers and heads are [base]'s and already on the line */
    int preset = 0;
    for (int k = 0; k < QP_N_MODEL_PRESETS; k++) preset |= !strcmp(value, qp_model_presets[k].name);
    return (preset && (push(r, "--layers") || push(r, num[0]) || push(r, "--heads") || push(r, num[1]))) ||
           push(r, "--dim") || push(r, num[2]);
}

static int make_argv(const qs_experiment *e, const qs_plan *p, const char *qtrain, qs_run *r)
{
    char num[32];
    int bad = push(r, qtrain);
    for (int i = 0; !bad && i < e->nbase; i++) bad = push_option(e, r, e->base[i].key, e->base[i].value);
    for (int a = 0; !bad && a < e->naxes; a++) bad = push_option(e, r, e->axes[a].key, qs_grid_value(e, r, a));
    snprintf(num, sizeof num, "%d", p->threads);
    return bad || push(r, "--out") || push(r, r->h5) || push(r, "--resume") || push(r, "--quiet") ||
           push(r, "--threads") || push(r, num);
}

static const qs_plan *sort_plan; /* qsort has no context argument */

static int cmp_by_name(const void *a, const void *b)
{
    const int i = *(const int *)a, j = *(const int *)b;
    const int c = strcmp(sort_plan->runs[i].name, sort_plan->runs[j].name);
    return c ? c : (i > j) - (i < j);
}

/* Two runs with one name: an error naming the values that collide. Sorted,
 * not pairwise (a 100000-run grid took minutes); reports the same pair the
 * pairwise scan in run order would: the earliest run whose name an earlier
 * run already has, and the first run with that name. */
static int check_names(const qs_experiment *e, const qs_plan *p, char *err, size_t errlen)
{
    int *idx = malloc((size_t)(p->n ? p->n : 1) * sizeof *idx);
    if (!idx) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < p->n; i++) idx[i] = i;
    sort_plan = p;
    qsort(idx, (size_t)p->n, sizeof *idx, cmp_by_name);
    int bj = -1, bk = -1;
    for (int i = 1; i < p->n; i++)
        if (!strcmp(p->runs[idx[i - 1]].name, p->runs[idx[i]].name) &&
            (i < 2 || strcmp(p->runs[idx[i - 2]].name, p->runs[idx[i]].name)) && (bk < 0 || idx[i] < bk))
            bj = idx[i - 1], bk = idx[i]; /* the first two of a group, in run order */
    free(idx);
    if (bk < 0) return 0;
    const qs_run *rj = &p->runs[bj], *rk = &p->runs[bk];
    /* the first axis whose values differ made the same safe text */
    int a = 0;
    while (a < e->naxes && rj->vi[a] == rk->vi[a]) a++;
    if (a >= e->naxes) {
        snprintf(err, errlen, "%s: two runs are named '%s'", e->path, rk->name);
        return -1;
    }
    snprintf(err, errlen, "%s:%d: values '%s' and '%s' give the same run name '%s'", e->path, e->axes[a].line,
             qs_grid_value(e, rj, a), qs_grid_value(e, rk, a), rk->name);
    return -1;
}

/* A run's qtrain arguments judged as qtrain judges them before it starts
 * (qp_train_options_check: every option's range, how they combine, e.g.
 * steps with tokens_per_param, and the model's shape; then the recipe
 * resolved for that model), so a combination no run could start with is
 * refused before any run starts, --dry-run included. What needs the data
 * (its size, a recipe's RHT against the batch) is still each run's. */
static int check_run(const qs_experiment *e, const qs_run *r, char *err, size_t errlen)
{
    qp_train_opts o;
    qp_train_opts_default(&o);
    char msg[768];
    for (int k = 1; k < r->argc; k++) {
        const char *a = r->argv[k];
        const qp_train_option *t = strncmp(a, "--", 2) ? NULL : qp_train_option_find(a + 2);
        if (!t) {
            snprintf(err, errlen, "%s: run %s: '%.100s' is not a qtrain option", e->path, r->name, a);
            return -1;
        }
        const char *v = t->kind == QP_OPT_FLAG ? "" : k + 1 < r->argc ? r->argv[++k] : "";
        if (qp_train_option_parse(t, a, v, false, &o, msg, sizeof msg)) {
            snprintf(err, errlen, "%s: run %s: %s", e->path, r->name, msg);
            return -1;
        }
    }
    if (qp_train_options_check(&o, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: run %s: %s", e->path, r->name, msg);
        return -1;
    }
    /* the recipe for this model, as qtrain resolves it: its blocks exist and
     * it names only this architecture's GEMMs (Smooth-SwiGLU: a down GEMM) */
    qp_recipe rec;
    qp_linear_plan *pl = malloc((size_t)o.layers * QP_BLOCK_GEMMS * sizeof *pl);
    if (!pl) return snprintf(err, errlen, "out of memory"), -1;
    const qp_gpt_config mc = qp_train_model_config(&o, 256);
    const int bad = qp_recipe_parse(o.recipe, &rec, msg, sizeof msg) ||
                    qp_recipe_resolve(&rec, o.layers, qp_model_gemm_mask(&mc), pl, msg, sizeof msg);
    free(pl);
    if (bad) {
        snprintf(err, errlen, "%s: run %s: %s", e->path, r->name, msg);
        return -1;
    }
    return 0;
}

int qs_grid_expand(const qs_experiment *e, const char *qtrain, const char *dir, int threads, qs_plan *p, char *err,
                   size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->threads = threads;
    if (qs_abspath(dir, p->dir, sizeof p->dir)) {
        snprintf(err, errlen, "%s: path too long or working directory unreadable", dir);
        return -1;
    }
    long long total = 1;
    for (int a = 0; a < e->naxes; a++) {
        total *= e->axes[a].nvalues;
        if (total > 100000) {
            snprintf(err, errlen, "%s:%d: the grid has over 100000 runs", e->path, e->axes[a].line);
            return -1;
        }
    }
    /* room for a twin of every run; attribution runs are added to it below */
    p->runs = calloc((size_t)total * (e->nnoise ? 2 : 1), sizeof *p->runs);
    if (!p->runs) goto oom;
    for (long long k = 0; k < total; k++) {
        qs_run *r = &p->runs[p->n++];
        r->twin_of = r->attr_of = r->block = -1;
        r->vi = calloc((size_t)(e->naxes ? e->naxes : 1), sizeof *r->vi);
        if (!r->vi) goto oom;
        /* mixed radix, last axis fastest: the order of nested loops */
        long long rest = k;
        for (int a = e->naxes - 1; a >= 0; a--) {
            r->vi[a] = (int)(rest % e->axes[a].nvalues);
            rest /= e->axes[a].nvalues;
        }
        int excluded = 0;
        for (int x = 0; x < e->nexcl && !excluded; x++) {
            int all = 1;
            for (int c = 0; c < e->excl[x].n; c++) all &= r->vi[e->excl[x].axis[c]] == e->excl[x].value[c];
            excluded = all;
        }
        if (excluded) {
            free(r->vi);
            r->vi = NULL;
            p->n--;
            continue;
        }
        r->layers = run_layers(e, r);
        if (make_name(e, r, err, errlen)) goto fail;
        if ((size_t)snprintf(r->h5, sizeof r->h5, "%s/runs/%s.h5", p->dir, r->name) >= sizeof r->h5 ||
            (size_t)snprintf(r->log, sizeof r->log, "%s/logs/%s.log", p->dir, r->name) >= sizeof r->log ||
            (size_t)snprintf(r->exitfile, sizeof r->exitfile, "%s/runs/%s.exit", p->dir, r->name) >= sizeof r->exitfile) {
            snprintf(err, errlen, "%s: path too long", p->dir);
            goto fail;
        }
        if (make_argv(e, p, qtrain, r)) goto oom;
    }
    p->ngrid = p->n;
    for (int i = 0; i < p->ngrid; i++)
        if (check_run(e, &p->runs[i], err, errlen)) goto fail;
    for (int i = 0; i < p->ngrid; i++) {
        int noisy = 0;
        for (int k = 0; k < e->nnoise; k++) noisy |= !strcmp(qs_grid_recipe(e, &p->runs[i]), e->noise[k]);
        if (!noisy) continue;
        const int rc = make_twin(e, p, qtrain, i, &p->runs[p->n++], err, errlen);
        if (rc == -1) goto oom;
        if (rc) goto fail;
    }
    if (e->attribute == QS_ATTRIBUTE_BLOCKS) {
        /* room for a run per block of every grid run */
        long long need = p->n;
        for (int i = 0; i < p->ngrid; i++) need += p->runs[i].layers;
        if (need > 200000) {
            snprintf(err, errlen, "%s: attribute = blocks makes over 200000 runs", e->path);
            goto fail;
        }
        qs_run *nr = realloc(p->runs, (size_t)need * sizeof *nr);
        if (!nr) goto oom;
        p->runs = nr;
        memset(p->runs + p->n, 0, (size_t)(need - p->n) * sizeof *nr);
        /* the blocks to run depend on the recipe and depth only: found once per pair */
        char **masks = calloc((size_t)(p->ngrid ? p->ngrid : 1), sizeof *masks);
        int *owners = calloc((size_t)(p->ngrid ? p->ngrid : 1), sizeof *owners), nowners = 0;
        if (!masks || !owners) {
            free(masks), free(owners);
            goto oom;
        }
        int rc = 0;
        long long plans_compared = 0;
        for (int i = 0; i < p->ngrid && !rc; i++) {
            const char *recipe = qs_grid_recipe(e, &p->runs[i]);
            if (!strcmp(recipe, e->baseline)) continue;
            for (int k = 0; k < nowners && !masks[i]; k++) {
                const int j = owners[k];
                if (p->runs[j].layers == p->runs[i].layers && !strcmp(qs_grid_recipe(e, &p->runs[j]), recipe))
                    masks[i] = masks[j];
            }
            if (!masks[i]) {
                /* each of a pair's L blocks resolves a whole L-block plan: L^2 block plans */
                const long long L = p->runs[i].layers;
                if ((plans_compared += L * L) > QS_ATTR_MAX_PLANS) {
                    snprintf(err, errlen,
                             "%s: attribute = blocks compares %lld or more block plans (L^2 for each recipe and "
                             "depth), over %d: fewer blocks or recipes",
                             e->path, plans_compared, QS_ATTR_MAX_PLANS);
                    rc = -2;
                    break;
                }
                owners[nowners++] = i;
                if (!(masks[i] = malloc((size_t)p->runs[i].layers))) rc = -1;
                else rc = quantized_blocks(e, recipe, p->runs[i].layers, masks[i], err, errlen);
                if (rc) {
                    free(masks[i]);
                    masks[i] = NULL;
                }
            }
            if (!rc) rc = make_blocks(e, p, i, masks[i], err, errlen);
        }
        for (int k = 0; k < nowners; k++) free(masks[owners[k]]);
        free(masks), free(owners);
        if (rc == -1) goto oom;
        if (rc) goto fail;
    }
    if (check_names(e, p, err, errlen)) goto fail;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    qs_grid_free(p);
    return -1;
}

void qs_grid_free(qs_plan *p)
{
    for (int i = 0; i < p->n; i++) {
        for (int j = 0; j < p->runs[i].argc; j++) free(p->runs[i].argv[j]);
        free(p->runs[i].argv);
        free(p->runs[i].vi);
    }
    free(p->runs);
    p->runs = NULL, p->n = 0;
}
