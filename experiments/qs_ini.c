/* qs_ini.c — experiment file parser (see qs_ini.h). */
#define _GNU_SOURCE /* getline, realpath */
#include "qs_ini.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qp_cli.h"
#include "qp_recipe.h"
#include "qp_size.h"
#include "qs_keys.h"
#include "qs_opts.h"

#define MAX_LINE 8192

const char *const qs_attribute_names[] = {[QS_ATTRIBUTE_NONE] = "none", [QS_ATTRIBUTE_BLOCKS] = "blocks"};
_Static_assert(sizeof qs_attribute_names / sizeof qs_attribute_names[0] == QS_ATTRIBUTE_COUNT, "a name per mode");

enum { SEC_NONE, SEC_BASE, SEC_GRID, SEC_SWEEP, SEC_SLURM, SEC_COUNT };

/* the keys of [sweep] and [slurm], by name in the tables below */
enum { SW_BASELINE, SW_TARGET, SW_THREADS, SW_NOISE, SW_ATTRIBUTE, SW_CONTRAST, SW_COUNT };
enum { SL_PARTITION, SL_ACCOUNT, SL_TIME, SL_CPUS, SL_GPUS, SL_NTASKS, SL_MPI, SL_COUNT };

typedef struct {
    qs_where w;                       /* where errors go */
    qs_experiment *e;
    int sec_line[SEC_COUNT];          /* header line of each section seen */
    int sweep_line[SW_COUNT], slurm_line[SL_COUNT]; /* line of each key seen */
} parser;

static int base_index(const qs_experiment *e, const char *key)
{
    for (int i = 0; i < e->nbase; i++)
        if (!strcmp(e->base[i].key, key)) return i;
    return -1;
}

int qs_ini_axis(const qs_experiment *e, const char *key)
{
    for (int i = 0; i < e->naxes; i++)
        if (!strcmp(e->axes[i].key, key)) return i;
    return -1;
}

const char *qs_ini_base(const qs_experiment *e, const char *key)
{
    const int i = base_index(e, key);
    return i < 0 ? NULL : e->base[i].value;
}

/* key: the option for a [base] or [grid] key, or an error. */
static const qs_opt *lookup(parser *p, int line, const char *key, const char *section)
{
    const char *why = qs_opt_reserved(key);
    if (why) {
        qs_fail(&p->w, line, "'%s' cannot be set in [%s]: %s", key, section, why);
        return NULL;
    }
    const qs_opt *o = qs_opt_find(key);
    if (o) return o;
    /* the nearest accepted key, by qp_cli's edit distance ('-' read as '_') */
    char list[2048], word[64];
    snprintf(list, sizeof list, "%s", qs_opt_names());
    snprintf(word, sizeof word, "%s", key);
    for (char *c = word; *c; c++)
        if (*c == '-') *c = '_';
    const char *names[128];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(list, ", ", &save); t && n < 128; t = strtok_r(NULL, ", ", &save))
        names[n++] = t;
    const char *near = qp_cli_nearest(word, names, n);
    if (near) qs_fail(&p->w, line, "unknown qtrain option '%s' in [%s] (did you mean %s?)", key, section, near);
    else qs_fail(&p->w, line, "unknown qtrain option '%s' in [%s] (valid: %s)", key, section, qs_opt_names());
    return NULL;
}

static int add_base(parser *p, int line, const char *key, char *value)
{
    qs_experiment *e = p->e;
    const qs_opt *o = lookup(p, line, key, "base");
    if (!o) return -1;
    const int prev = base_index(e, o->key);
    if (prev >= 0) return qs_fail(&p->w, line, "'%s' set twice in [base] (first at line %d)", o->key, e->base[prev].line);
    const int ax = qs_ini_axis(e, o->key);
    if (ax >= 0) return qs_fail(&p->w, line, "'%s' is already a grid axis (line %d); set it in one place", o->key, e->axes[ax].line);
    if (!*value) return qs_fail(&p->w, line, "'%s' has no value", o->key);
    if (o->kind == QS_OPT_RECIPE) qs_bars_to_commas(value);
    char msg[768];
    if (o->kind != QS_OPT_PATH && qs_opt_check(o, value, msg, sizeof msg)) return qs_fail(&p->w, line, "%s", msg);
    qs_kv *nb = realloc(e->base, (size_t)(e->nbase + 1) * sizeof *nb);
    if (!nb) return qs_fail(&p->w, line, "out of memory");
    e->base = nb;
    nb[e->nbase] = (qs_kv){strdup(o->key), strdup(value), line};
    if (!nb[e->nbase].key || !nb[e->nbase].value) return qs_fail(&p->w, line, "out of memory");
    e->nbase++;
    return 0;
}

static int add_axis(parser *p, int line, const char *key, char *value)
{
    qs_experiment *e = p->e;
    const qs_opt *o = lookup(p, line, key, "grid");
    if (!o) return -1;
    if (o->kind == QS_OPT_PATH)
        return qs_fail(&p->w, line, "'%s' cannot be a grid axis: a sweep trains on one corpus (set it in [base])", o->key);
    const int prev = qs_ini_axis(e, o->key);
    if (prev >= 0) return qs_fail(&p->w, line, "grid axis '%s' given twice (first at line %d)", o->key, e->axes[prev].line);
    const int b = base_index(e, o->key);
    if (b >= 0) return qs_fail(&p->w, line, "'%s' is already set in [base] (line %d); set it in one place", o->key, e->base[b].line);
    if (!*value) return qs_fail(&p->w, line, "grid axis '%s' has no values", o->key);
    qs_axis *na = realloc(e->axes, (size_t)(e->naxes + 1) * sizeof *na);
    if (!na) return qs_fail(&p->w, line, "out of memory");
    e->axes = na;
    qs_axis *a = &na[e->naxes++];
    *a = (qs_axis){strdup(o->key), NULL, 0, line};
    if (!a->key) return qs_fail(&p->w, line, "out of memory");
    char *v, *cur = value;
    for (int k = 1; (v = qs_field(&cur)); k++) {
        if (!*v) return qs_fail(&p->w, line, "grid axis '%s': value %d is empty", o->key, k);
        if (o->kind == QS_OPT_RECIPE) {
            qs_bars_to_commas(v);
            const size_t m = qp_recipe_bare_modifier(v);
            if (m)
                return qs_fail(&p->w, line, "grid axis 'recipe': value %d, '%.*s', qualifies a recipe but is none; join it to "
                            "its recipe with '|' (e.g. %s|%.*s: '|' is qtrain's comma, ',' separates the values)",
                            k, (int)m, v, a->nvalues ? a->values[a->nvalues - 1] : "nvfp4", (int)m, v);
        }
        char msg[768];
        if (qs_opt_check(o, v, msg, sizeof msg)) return qs_fail(&p->w, line, "grid axis '%s': %s", o->key, msg);
        for (int i = 0; i < a->nvalues; i++)
            if (!strcmp(a->values[i], v)) return qs_fail(&p->w, line, "grid axis '%s': value '%s' given twice", o->key, v);
        char **nv = realloc(a->values, (size_t)(a->nvalues + 1) * sizeof *nv);
        if (!nv) return qs_fail(&p->w, line, "out of memory");
        a->values = nv;
        if (!(nv[a->nvalues] = strdup(v))) return qs_fail(&p->w, line, "out of memory");
        a->nvalues++;
    }
    return 0;
}

/* exclude = KEY=VALUE ...: values of axes given above */
static int add_exclude(parser *p, int line, char *value)
{
    qs_experiment *e = p->e;
    void *ne = realloc(e->excl, (size_t)(e->nexcl + 1) * sizeof *e->excl);
    if (!ne) return qs_fail(&p->w, line, "out of memory");
    e->excl = ne;
    memset(&e->excl[e->nexcl], 0, sizeof *e->excl);
    e->excl[e->nexcl].line = line;
    char *save = NULL;
    for (char *tok = strtok_r(value, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) return qs_fail(&p->w, line, "exclude: expected KEY=VALUE, not '%s'", tok);
        *eq = '\0';
        const qs_opt *o = qs_opt_find(tok);
        const int a = o ? qs_ini_axis(e, o->key) : -1;
        if (a < 0) return qs_fail(&p->w, line, "exclude: '%s' is not a grid axis given above this line", tok);
        char *v = eq + 1;
        if (o->kind == QS_OPT_RECIPE) qs_bars_to_commas(v);
        int vi = -1;
        for (int i = 0; i < e->axes[a].nvalues; i++)
            if (!strcmp(e->axes[a].values[i], v)) vi = i;
        if (vi < 0) return qs_fail(&p->w, line, "exclude: '%s' is not a value of axis '%s'", v, o->key);
        if (e->excl[e->nexcl].n == QS_MAX_EXCLUDE_CONDS)
            return qs_fail(&p->w, line, "exclude: at most %d conditions", QS_MAX_EXCLUDE_CONDS);
        const int k = e->excl[e->nexcl].n++;
        e->excl[e->nexcl].axis[k] = a, e->excl[e->nexcl].value[k] = vi;
    }
    if (!e->excl[e->nexcl].n) return qs_fail(&p->w, line, "exclude: no KEY=VALUE condition");
    e->nexcl++;
    return 0;
}

/* [sweep]'s setters (qs_keys.h): dst is the experiment */
static int set_baseline(const qs_where *w, int line, const qs_key *k, char *value, void *dst)
{
    (void)k;
    qs_bars_to_commas(value);
    char msg[768];
    if (qs_opt_check(qs_opt_find("recipe"), value, msg, sizeof msg)) return qs_fail(w, line, "baseline: %s", msg);
    qs_experiment *e = dst;
    snprintf(e->baseline, sizeof e->baseline, "%s", value);
    return 0;
}

static int set_noise(const qs_where *w, int line, const qs_key *key, char *value, void *dst)
{
    (void)key;
    qs_experiment *e = dst;
    char *v, *cur = value;
    for (int k = 1; (v = qs_field(&cur)); k++) {
        if (!*v) return qs_fail(w, line, "noise_floor: recipe %d is empty", k);
        qs_bars_to_commas(v);
        const size_t m = qp_recipe_bare_modifier(v);
        if (m)
            return qs_fail(w, line, "noise_floor: recipe %d, '%.*s', qualifies a recipe but is none; join it to its "
                           "recipe with '|' (e.g. nvfp4|%.*s)", k, (int)m, v, (int)m, v);
        char msg[768];
        if (qs_opt_check(qs_opt_find("recipe"), v, msg, sizeof msg)) return qs_fail(w, line, "noise_floor: %s", msg);
        if (e->nnoise == QS_MAX_NOISE) return qs_fail(w, line, "noise_floor: at most %d recipes", QS_MAX_NOISE);
        for (int i = 0; i < e->nnoise; i++)
            if (!strcmp(e->noise[i], v)) return qs_fail(w, line, "noise_floor: recipe '%s' given twice", v);
        if (strlen(v) >= sizeof e->noise[0]) return qs_fail(w, line, "noise_floor: recipe '%s' too long", v);
        snprintf(e->noise[e->nnoise++], sizeof e->noise[0], "%s", v);
    }
    return 0;
}

/* an axis key, spelled as in [grid] ('-' or '_'); checked against the axes at the end */
static int set_contrast(const qs_where *w, int line, const qs_key *k, char *value, void *dst)
{
    (void)k;
    qs_experiment *e = dst;
    const qs_opt *o = qs_opt_find(value);
    if (strlen(value) >= sizeof e->contrast) return qs_fail(w, line, "contrast expects a grid axis, not '%.80s...'", value);
    snprintf(e->contrast, sizeof e->contrast, "%s", o ? o->key : value);
    return 0;
}

static const qs_key SWEEP_KEYS[] = {
    [SW_BASELINE] = {"baseline", QS_KEY_FN, .set = set_baseline},
    [SW_TARGET] = {"target_loss", QS_KEY_NUM, offsetof(qs_experiment, target_loss), .lo = 0, .hi = INFINITY, .help = "nats"},
    [SW_THREADS] = {"threads_per_run", QS_KEY_INT, offsetof(qs_experiment, threads_per_run), .lo = 1, .hi = 1024},
    [SW_NOISE] = {"noise_floor", QS_KEY_FN, .set = set_noise},
    [SW_ATTRIBUTE] = {"attribute", QS_KEY_ENUM, offsetof(qs_experiment, attribute), .names = qs_attribute_names,
                      .first = QS_ATTRIBUTE_BLOCKS, .count = QS_ATTRIBUTE_COUNT,
                      .help = "'blocks' (one block at a time in each recipe)"},
    [SW_CONTRAST] = {"contrast", QS_KEY_FN, .set = set_contrast},
};
_Static_assert(sizeof SWEEP_KEYS / sizeof *SWEEP_KEYS == SW_COUNT, "a [sweep] key per name");
_Static_assert(sizeof(qs_attribute) == sizeof(int), "QS_KEY_ENUM stores an int");
static const qs_section SWEEP = {"sweep", SWEEP_KEYS, SW_COUNT};

/* [slurm]: words go into #SBATCH lines, which Slurm reads without a shell,
 * so they are plain names; the time is one of Slurm's formats. */
static int set_slurm_word(const qs_where *w, int line, const qs_key *k, char *value, void *dst)
{
    if (strlen(value) >= k->size ||
        strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,-") != strlen(value))
        return qs_fail(w, line, "%s expects a Slurm name (letters, digits, _ . , -; under %zu bytes), not '%s'", k->name,
                       k->size, value);
    snprintf((char *)dst + k->offset, k->size, "%s", value);
    return 0;
}

/* Slurm's --time: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S (digits only), or
 * UNLIMITED / INFINITE. */
static int slurm_time_ok(const char *v)
{
    if (!strcmp(v, "UNLIMITED") || !strcmp(v, "INFINITE")) return 1;
    const char *dash = strchr(v, '-');
    if (dash) {
        if (dash == v) return 0;
        for (const char *c = v; c < dash; c++)
            if (!isdigit((unsigned char)*c)) return 0;
        v = dash + 1;
    }
    int groups = 0;
    for (const char *c = v;;) {
        const char *start = c;
        while (isdigit((unsigned char)*c)) c++;
        if (c == start || c - start > 9) return 0;
        groups++;
        if (!*c) break;
        if (*c != ':') return 0;
        c++;
    }
    return groups >= 1 && groups <= 3;
}

static int set_slurm_time(const qs_where *w, int line, const qs_key *k, char *value, void *dst)
{
    if (strlen(value) >= k->size || !slurm_time_ok(value))
        return qs_fail(w, line, "time expects Slurm's format (minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S), not '%s'", value);
    snprintf((char *)dst + k->offset, k->size, "%s", value);
    return 0;
}

#define SLURM_TEXT(name, field, setter) \
    {name, QS_KEY_FN, offsetof(qs_slurm_opts, field), sizeof ((qs_slurm_opts *)0)->field, .set = setter}
/* an int key is set when at least lo (gpus_per_task: 0; unset is -1) */
static const qs_key SLURM_KEYS[] = {
    [SL_PARTITION] = SLURM_TEXT("partition", partition, set_slurm_word),
    [SL_ACCOUNT] = SLURM_TEXT("account", account, set_slurm_word),
    [SL_TIME] = SLURM_TEXT("time", time, set_slurm_time),
    [SL_CPUS] = {"cpus_per_task", QS_KEY_INT, offsetof(qs_slurm_opts, cpus_per_task), .lo = 1, .hi = 4096},
    [SL_GPUS] = {"gpus_per_task", QS_KEY_INT, offsetof(qs_slurm_opts, gpus_per_task), .lo = 0, .hi = 64},
    [SL_NTASKS] = {"ntasks", QS_KEY_INT, offsetof(qs_slurm_opts, ntasks), .lo = 1, .hi = 65536},
    [SL_MPI] = SLURM_TEXT("mpi", mpi, set_slurm_word),
};
_Static_assert(sizeof SLURM_KEYS / sizeof *SLURM_KEYS == SL_COUNT, "a [slurm] key per name");
static const qs_section SLURM = {"slurm", SLURM_KEYS, SL_COUNT};

static int parse_line(parser *p, int line, char *raw, int *section)
{
    char *key, *value;
    const int kind = qs_line(&p->w, line, raw, &key, &value);
    if (kind < 1) return kind;
    if (kind == 1) {
        const int sec = !strcmp(key, "base") ? SEC_BASE : !strcmp(key, "grid") ? SEC_GRID
                      : !strcmp(key, "sweep") ? SEC_SWEEP : !strcmp(key, "slurm") ? SEC_SLURM : SEC_NONE;
        if (sec == SEC_NONE) return qs_fail(&p->w, line, "unknown section [%s] (valid: [base], [grid], [sweep], [slurm])", key);
        if (p->sec_line[sec]) return qs_fail(&p->w, line, "section [%s] appears twice (first at line %d)", key, p->sec_line[sec]);
        p->sec_line[sec] = line;
        if (sec == SEC_BASE) p->e->base_line = line;
        *section = sec;
        return 0;
    }
    if (*section == SEC_NONE) return qs_fail(&p->w, line, "'%s' comes before any [section]", key);
    if (*section == SEC_BASE) return add_base(p, line, key, value);
    if (*section == SEC_GRID) return !strcmp(key, "exclude") ? add_exclude(p, line, value) : add_axis(p, line, key, value);
    if (*section == SEC_SLURM) return qs_keys_set(&p->w, &SLURM, p->slurm_line, &p->e->slurm, line, key, value);
    return qs_keys_set(&p->w, &SWEEP, p->sweep_line, p->e, line, key, value);
}

/* data: absolute, relative paths taken from the experiment's folder; an
 * override (the CLI's --data) is taken from the working directory. */
static int resolve_data(parser *p, const char *override, int check)
{
    qs_experiment *e = p->e;
    int i = base_index(e, "data");
    const int line = i >= 0 ? e->base[i].line : (e->base_line ? e->base_line : 1);
    char joined[PATH_MAX + 8], dir[PATH_MAX];
    const char *given;
    if (override) {
        given = override;
        if (!getcwd(dir, sizeof dir)) return qs_fail(&p->w, line, "cannot read the working directory: %s", strerror(errno));
    } else {
        if (i < 0) return qs_fail(&p->w, line, "no data = FILE in [base] (and no --data given)");
        given = e->base[i].value;
        char tmp[sizeof e->path];
        snprintf(tmp, sizeof tmp, "%s", e->path);
        if (!realpath(dirname(tmp), dir)) return qs_fail(&p->w, line, "cannot resolve the experiment's folder: %s", strerror(errno));
    }
    if (given[0] == '/') snprintf(joined, sizeof joined, "%s", given);
    else if ((size_t)snprintf(joined, sizeof joined, "%s/%s", dir, given) >= sizeof joined)
        return qs_fail(&p->w, line, "data path too long");
    char real[PATH_MAX];
    struct stat st;
    if (check) {
        if (stat(joined, &st) != 0) return qs_fail(&p->w, line, "data: cannot read '%s': %s", joined, strerror(errno));
        if (!S_ISREG(st.st_mode)) return qs_fail(&p->w, line, "data: '%s' is not a regular file", joined);
        if (access(joined, R_OK) != 0) return qs_fail(&p->w, line, "data: cannot read '%s': %s", joined, strerror(errno));
    }
    const char *abs = realpath(joined, real) ? real : joined;
    char *copy = strdup(abs);
    if (!copy) return qs_fail(&p->w, line, "out of memory");
    if (i < 0) {
        qs_kv *nb = realloc(e->base, (size_t)(e->nbase + 1) * sizeof *nb);
        char *key = strdup("data");
        if (!nb || !key) {
            free(copy), free(key);
            return qs_fail(&p->w, line, "out of memory");
        }
        e->base = nb;
        i = e->nbase++;
        nb[i] = (qs_kv){key, NULL, line};
    } else {
        free(e->base[i].value);
    }
    e->base[i].value = copy;
    return 0;
}

/* model sets the shape: a preset sets layers, heads and dim; a target
 * parameter count sets dim at [base]'s layers and heads */
static int check_model(parser *p)
{
    qs_experiment *e = p->e;
    const int ax = qs_ini_axis(e, "model"), bi = base_index(e, "model");
    if (ax < 0 && bi < 0) return 0;
    const int line = ax >= 0 ? e->axes[ax].line : e->base[bi].line;
    const int n = ax >= 0 ? e->axes[ax].nvalues : 1;
    int presets = 0, targets = 0;
    for (int i = 0; i < n; i++) {
        const char *v = ax >= 0 ? e->axes[ax].values[i] : e->base[bi].value;
        int preset = 0;
        for (int k = 0; k < QP_N_MODEL_PRESETS; k++) preset |= !strcmp(v, qp_model_presets[k].name);
        presets += preset, targets += !preset;
    }
    const char *keys[] = {"dim", "layers", "heads"};
    for (int k = 0; k < 3; k++) {
        const int set = qs_ini_axis(e, keys[k]) >= 0 || (base_index(e, keys[k]) >= 0 && (k == 0 || presets));
        if (set)
            return qs_fail(&p->w, line, "model sets %s: remove '%s' from [base]/[grid]%s", k ? "layers, heads and dim" : "dim",
                        keys[k], k ? " (a parameter count takes layers and heads from [base])" : "");
        if (k && targets && qs_ini_axis(e, keys[k]) < 0 && base_index(e, keys[k]) < 0)
            return qs_fail(&p->w, line, "model by parameter count needs '%s' in [base] (the depth and heads it is met at)",
                        keys[k]);
    }
    return 0;
}

/* noise_floor recipes are recipes the sweep runs */
static int check_noise(parser *p)
{
    qs_experiment *e = p->e;
    const int ax = qs_ini_axis(e, "recipe");
    const char *fixed = qs_ini_base(e, "recipe") ? qs_ini_base(e, "recipe") : "bf16";
    for (int k = 0; k < e->nnoise; k++) {
        int found = ax < 0 && !strcmp(fixed, e->noise[k]);
        for (int i = 0; ax >= 0 && i < e->axes[ax].nvalues; i++) found |= !strcmp(e->axes[ax].values[i], e->noise[k]);
        if (!found) return qs_fail(&p->w, p->sweep_line[SW_NOISE], "noise_floor: '%s' is not a recipe of this sweep", e->noise[k]);
    }
    return 0;
}

/* attribute = blocks: the other blocks take the baseline's format, so the
 * baseline is one format for every use (bf16 or fp32, a preset and a format
 * name alike), and some recipe differs from it */
static int check_attribute(parser *p)
{
    qs_experiment *e = p->e;
    if (e->attribute == QS_ATTRIBUTE_NONE) return 0;
    if (strcmp(e->baseline, "bf16") && strcmp(e->baseline, "fp32"))
        return qs_fail(&p->w, p->sweep_line[SW_ATTRIBUTE], "attribute = blocks keeps the other blocks in the baseline's format: the "
                    "baseline must be bf16 or fp32, not '%s'", e->baseline);
    const int ax = qs_ini_axis(e, "recipe");
    int other = 0;
    for (int i = 0; ax >= 0 && i < e->axes[ax].nvalues; i++) other |= strcmp(e->axes[ax].values[i], e->baseline) != 0;
    if (!other)
        return qs_fail(&p->w, p->sweep_line[SW_ATTRIBUTE], "attribute = blocks needs a recipe axis with the baseline '%s' and a recipe "
                    "to attribute", e->baseline);
    return 0;
}

/* contrast = AXIS: an axis of the grid along which a recipe's gap can
 * differ — its runs are paired by seed and every other axis, and each of its
 * values has its own baseline runs */
static int check_contrast(parser *p)
{
    qs_experiment *e = p->e;
    if (!e->contrast[0]) return 0;
    const int ax = qs_ini_axis(e, e->contrast);
    if (ax < 0) {
        char axes[512] = "";
        size_t n = 0;
        for (int a = 0; a < e->naxes && n < sizeof axes; a++) {
            const int w = snprintf(axes + n, sizeof axes - n, "%s%s", a ? ", " : "", e->axes[a].key);
            if (w < 0) break;
            n += (size_t)w;
        }
        return qs_fail(&p->w, p->sweep_line[SW_CONTRAST], "contrast: '%s' is not a grid axis (%s%s)", e->contrast,
                    e->naxes ? "axes: " : "the grid has no axes", axes);
    }
    if (!strcmp(e->contrast, "seed"))
        return qs_fail(&p->w, p->sweep_line[SW_CONTRAST], "contrast: 'seed' pairs the runs of a contrast; it cannot be contrasted");
    if (!strcmp(e->contrast, "recipe"))
        return qs_fail(&p->w, p->sweep_line[SW_CONTRAST], "contrast: 'recipe' holds the baseline: the gaps are taken along it (the "
                    "recipes' gaps are /recipes)");
    if (e->axes[ax].nvalues < 2)
        return qs_fail(&p->w, p->sweep_line[SW_CONTRAST], "contrast: axis '%s' (line %d) has one value: nothing to contrast",
                    e->contrast, e->axes[ax].line);
    return 0;
}

static int check_baseline(parser *p)
{
    qs_experiment *e = p->e;
    const int ax = qs_ini_axis(e, "recipe");
    if (ax < 0) return 0; /* no recipe axis: every run is its own baseline or has none */
    for (int i = 0; i < e->axes[ax].nvalues; i++)
        if (!strcmp(e->axes[ax].values[i], e->baseline)) return 0;
    if (p->sweep_line[SW_BASELINE]) return qs_fail(&p->w, p->sweep_line[SW_BASELINE], "baseline '%s' is not a value of the recipe axis (line %d)",
                                      e->baseline, e->axes[ax].line);
    return qs_fail(&p->w, e->axes[ax].line, "the recipe axis lacks the default baseline '%s': add it, or set baseline in [sweep]",
                e->baseline);
}

/* Parse a stream just opened (NULL: the open failed, errno says why) and
 * close it; path names it in messages and anchors relative data. */
static int load_stream(FILE *f, const char *path, const char *data_override, int check_data, qs_experiment *e,
                       char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    if (!f) return snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno)), -1;
    e->target_loss = NAN;
    e->slurm.gpus_per_task = -1;
    snprintf(e->baseline, sizeof e->baseline, "bf16");
    snprintf(e->path, sizeof e->path, "%s", path);
    parser P = {.w = {path, err, errlen}, .e = e}, *p = &P;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int line = 0, section = SEC_NONE, rc = 0;
    while (!rc && (n = getline(&buf, &cap, f)) >= 0) {
        line++;
        if (n > MAX_LINE) rc = qs_fail(&p->w, line, "line longer than %d bytes", MAX_LINE);
        else if (memchr(buf, '\0', (size_t)n)) rc = qs_fail(&p->w, line, "NUL byte: not a text file");
        else rc = parse_line(p, line, buf, &section);
    }
    if (!rc && ferror(f)) rc = qs_fail(&p->w, line, "read error: %s", strerror(errno));
    free(buf);
    fclose(f);
    if (!rc) rc = resolve_data(p, data_override, check_data);
    if (!rc) rc = check_baseline(p);
    if (!rc) rc = check_noise(p);
    if (!rc) rc = check_attribute(p);
    if (!rc) rc = check_contrast(p);
    if (!rc) rc = check_model(p);
    if (rc) qs_ini_free(e);
    return rc;
}

int qs_ini_load(const char *path, const char *data_override, int check_data, qs_experiment *e, char *err,
                size_t errlen)
{
    memset(e, 0, sizeof *e);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    return load_stream(fopen(path, "r"), path, data_override, check_data, e, err, errlen);
}

int qs_ini_parse(const char *path, const char *text, size_t len, const char *data_override, int check_data,
                 qs_experiment *e, char *err, size_t errlen)
{
    /* fmemopen refuses an empty buffer; a lone newline parses the same */
    FILE *f = len ? fmemopen((void *)text, len, "r") : fmemopen("\n", 1, "r");
    return load_stream(f, path, data_override, check_data, e, err, errlen);
}

void qs_ini_free(qs_experiment *e)
{
    for (int i = 0; i < e->nbase; i++) free(e->base[i].key), free(e->base[i].value);
    for (int i = 0; i < e->naxes; i++) {
        for (int j = 0; j < e->axes[i].nvalues; j++) free(e->axes[i].values[j]);
        free(e->axes[i].values);
        free(e->axes[i].key);
    }
    free(e->base);
    free(e->axes);
    free(e->excl);
    e->base = NULL, e->axes = NULL, e->excl = NULL, e->nbase = e->naxes = e->nexcl = 0;
}

/* Append to a growing string; -1 on OOM. */
static int put(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if (*len + (size_t)n + 1 > *cap) {
        const size_t nc = (*len + (size_t)n + 1) * 2;
        char *ns = realloc(*s, nc);
        if (!ns) return -1;
        *s = ns, *cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(*s + *len, *cap - *len, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    return 0;
}

/* A recipe as the experiment file writes it: ',' back to '|'. */
static int put_value(char **s, size_t *len, size_t *cap, const char *key, const char *v)
{
    const int recipe = !strcmp(key, "recipe");
    for (const char *c = v; *c; c++)
        if (put(s, len, cap, "%c", recipe && *c == ',' ? '|' : *c)) return -1;
    return 0;
}

/* [slurm], its keys that are set, in SLURM_KEYS order (nothing when none is) */
static int put_slurm(char **s, size_t *len, size_t *cap, const qs_slurm_opts *o)
{
    int header = 0;
    for (int k = 0; k < SL_COUNT; k++) {
        const qs_key *key = &SLURM_KEYS[k];
        const char *field = (const char *)o + key->offset;
        const int iv = key->kind == QS_KEY_INT ? *(const int *)(const void *)field : 0;
        if (key->kind == QS_KEY_INT ? iv < key->lo : !field[0]) continue;
        if (!header++ && put(s, len, cap, "[slurm]\n")) return -1;
        if (key->kind == QS_KEY_INT ? put(s, len, cap, "%s = %d\n", key->name, iv)
                                    : put(s, len, cap, "%s = %s\n", key->name, field))
            return -1;
    }
    return 0;
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const qs_kv *)a)->key, ((const qs_kv *)b)->key);
}

const char *qs_ini_identity(const char *text, size_t n)
{
    const char *b = memmem(text, n, "\n[base]\n", 8);
    return b ? b + 1 : NULL;
}

char *qs_ini_canonical(const qs_experiment *e, size_t *identity_len)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    qs_kv *sorted = malloc((size_t)(e->nbase ? e->nbase : 1) * sizeof *sorted);
    int bad = !sorted;
    if (!bad) {
        /* sorted, so reordering [base] in the source file changes nothing */
        memcpy(sorted, e->base, (size_t)e->nbase * sizeof *sorted);
        qsort(sorted, (size_t)e->nbase, sizeof *sorted, cmp_kv);
    }
    bad = bad || put(&s, &len, &cap, "# written by qsweep: the experiment this folder holds; a rerun into it keeps\n"
                                     "# [base] and keeps [grid] or adds values to it (a plan's: keeps both)\n[base]\n");
    for (int i = 0; !bad && i < e->nbase; i++)
        bad = put(&s, &len, &cap, "%s = ", sorted[i].key) || put_value(&s, &len, &cap, sorted[i].key, sorted[i].value) ||
              put(&s, &len, &cap, "\n");
    bad = bad || put(&s, &len, &cap, "[grid]\n");
    for (int i = 0; !bad && i < e->naxes; i++) {
        bad = put(&s, &len, &cap, "%s = ", e->axes[i].key);
        for (int j = 0; !bad && j < e->axes[i].nvalues; j++)
            bad = put(&s, &len, &cap, j ? ", " : "") || put_value(&s, &len, &cap, e->axes[i].key, e->axes[i].values[j]);
        bad = bad || put(&s, &len, &cap, "\n");
    }
    for (int i = 0; !bad && i < e->nexcl; i++) {
        bad = put(&s, &len, &cap, "exclude =");
        for (int k = 0; !bad && k < e->excl[i].n; k++) {
            const qs_axis *a = &e->axes[e->excl[i].axis[k]];
            bad = put(&s, &len, &cap, " %s=", a->key) || put_value(&s, &len, &cap, a->key, a->values[e->excl[i].value[k]]);
        }
        bad = bad || put(&s, &len, &cap, "\n");
    }
    const size_t ident = len;
    bad = bad || put(&s, &len, &cap, "[sweep]\nbaseline = ") || put_value(&s, &len, &cap, "recipe", e->baseline) ||
          put(&s, &len, &cap, "\n");
    if (!bad && !isnan(e->target_loss)) bad = put(&s, &len, &cap, "target_loss = %.17g\n", e->target_loss);
    if (!bad && e->threads_per_run) bad = put(&s, &len, &cap, "threads_per_run = %d\n", e->threads_per_run);
    for (int k = 0; !bad && k < e->nnoise; k++)
        bad = put(&s, &len, &cap, k ? ", " : "noise_floor = ") || put_value(&s, &len, &cap, "recipe", e->noise[k]) ||
              (k + 1 == e->nnoise && put(&s, &len, &cap, "\n"));
    if (!bad && e->attribute) bad = put(&s, &len, &cap, "attribute = %s\n", qs_attribute_names[e->attribute]);
    if (!bad && e->contrast[0]) bad = put(&s, &len, &cap, "contrast = %s\n", e->contrast);
    bad = bad || put_slurm(&s, &len, &cap, &e->slurm);
    free(sorted);
    if (bad) {
        free(s);
        return NULL;
    }
    if (identity_len) *identity_len = ident;
    return s;
}
