/* qs_opts.c — qtrain's value options (see qs_opts.h). */
#include "qs_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"
#include "qp_size.h"

/* Ranges mirror qp_train_opts_check (train/qp_trainer.c) where a value alone
 * decides; combinations (heads dividing dim, ...) are qtrain's to judge. */
static const qs_opt OPTS[] = {
    {"data", QS_OPT_PATH, 0, 0, 0},
    {"recipe", QS_OPT_RECIPE, 0, 0, 0},
    {"model", QS_OPT_MODEL, 0, 0, 0},
    {"layers", QS_OPT_INT, 1, 1024, 0},
    {"heads", QS_OPT_INT, 1, 1 << 30, 0},
    {"dim", QS_OPT_INT, 1, 65536, 0},
    {"seq", QS_OPT_INT, 1, 1 << 20, 0},
    {"batch", QS_OPT_INT, 1, 1 << 20, 0},
    {"grad_accum", QS_OPT_INT, 1, 65536, 0},
    {"steps", QS_OPT_INT, 0, 1e12, 0},
    {"lr", QS_OPT_NUM, 0, INFINITY, 1},
    {"min_lr", QS_OPT_NUM, -INFINITY, INFINITY, 0},
    {"warmup", QS_OPT_INT, 0, 1e12, 0},
    {"weight_decay", QS_OPT_NUM, 0, INFINITY, 0},
    {"grad_clip", QS_OPT_NUM, 0, INFINITY, 0},
    {"seed", QS_OPT_INT, 0, 9223372036854775807.0, 0},
    {"data_seed", QS_OPT_INT, 0, 9223372036854775807.0, 0},
    {"tokens_per_param", QS_OPT_NUM, 0, 1e9, 1},
    {"val_tokens", QS_OPT_VALTOKENS, 1, 1099511627776.0, 0},
    {"eval_every", QS_OPT_INT, 0, 1e12, 0},
    {"eval_batches", QS_OPT_INT, 1, 1e12, 0},
    {"qerr_every", QS_OPT_INT, 0, 1e12, 0},
    {"ckpt_every", QS_OPT_INT, 0, 1e12, 0},
    {"val_frac", QS_OPT_NUM, 0, 1, 1},
    {"prefetch", QS_OPT_INT, 0, 1024, 0},
    {"divergence_factor", QS_OPT_NUM, 1, INFINITY, 1},
    {"device", QS_OPT_CHOICE, 0, 0, 0},
    /* the architecture (qtrain --arch; an axis compares the two) and the Llama's shape (Smooth-SwiGLU is
     * a recipe modifier) */
    {"arch", QS_OPT_CHOICE, 0, 0, 0},
    {"kv_heads", QS_OPT_INT, 1, 1 << 20, 0},
    {"mlp_hidden", QS_OPT_INT, 1, 1 << 20, 0},
};
#define NOPTS (int)(sizeof OPTS / sizeof OPTS[0])

/* the values of each QS_OPT_CHOICE option, '|' between them */
static const struct {
    const char *key, *choices;
} CHOICES[] = {
    {"device", "cpu|cuda"},
    {"arch", "gpt|llama"},
};

static const char *choices_of(const qs_opt *o)
{
    for (size_t i = 0; i < sizeof CHOICES / sizeof *CHOICES; i++)
        if (!strcmp(CHOICES[i].key, o->key)) return CHOICES[i].choices;
    return "";
}

static const struct {
    const char *key, *why;
} RESERVED[] = {
    {"out", "qsweep sets --out itself (DIR/runs/NAME.h5)"},
    {"resume", "qsweep always passes --resume"},
    {"quiet", "qsweep always passes --quiet"},
    {"threads", "qsweep sets --threads itself: use threads_per_run in [sweep]"},
    {"eval_only", "a sweep trains; evaluate checkpoints with qtrain --eval-only"},
    {"resume_from", "a sweep trains; evaluate checkpoints with qtrain --eval-only"},
    {"stop_after", "a test hook of qtrain, not a sweep option"},
};

/* key with '-' read as '_' */
static int same_key(const char *canon, const char *key)
{
    for (; *canon && *key; canon++, key++)
        if (*canon != (*key == '-' ? '_' : *key)) return 0;
    return !*canon && !*key;
}

const qs_opt *qs_opt_find(const char *key)
{
    for (int i = 0; i < NOPTS; i++)
        if (same_key(OPTS[i].key, key)) return &OPTS[i];
    return NULL;
}

const char *qs_opt_reserved(const char *key)
{
    for (size_t i = 0; i < sizeof RESERVED / sizeof RESERVED[0]; i++)
        if (same_key(RESERVED[i].key, key)) return RESERVED[i].why;
    return NULL;
}

static void range_text(const qs_opt *o, char *buf, size_t len)
{
    if (o->kind == QS_OPT_VALTOKENS) snprintf(buf, len, "a token count >= 1 or 'all'");
    else if (isinf(o->lo) && isinf(o->hi)) snprintf(buf, len, "a finite number");
    else if (isinf(o->hi)) snprintf(buf, len, "%s %s %g", o->kind == QS_OPT_INT ? "an integer" : "a number",
                                    o->lo_open ? ">" : ">=", o->lo);
    else snprintf(buf, len, "%s in %s%g, %g]", o->kind == QS_OPT_INT ? "an integer" : "a number",
                  o->lo_open ? "(" : "[", o->lo, o->hi);
}

int qs_opt_check(const qs_opt *o, const char *value, char *err, size_t errlen)
{
    char want[96];
    range_text(o, want, sizeof want);
    if (o->kind == QS_OPT_VALTOKENS && !strcmp(value, "all")) return 0;
    if (o->kind == QS_OPT_INT || o->kind == QS_OPT_NUM || o->kind == QS_OPT_VALTOKENS) {
        char *end;
        errno = 0;
        double v;
        if (o->kind != QS_OPT_NUM) {
            const long long n = strtoll(value, &end, 10);
            v = (double)n;
        } else {
            v = strtod(value, &end);
        }
        const int ok = *value && !*end && !errno && isfinite(v) && (o->lo_open ? v > o->lo : v >= o->lo) && v <= o->hi;
        if (!ok) {
            snprintf(err, errlen, "%s expects %s, not '%s'", o->key, want, value);
            return -1;
        }
        return 0;
    }
    if (!*value) {
        snprintf(err, errlen, "%s is empty", o->key);
        return -1;
    }
    if (o->kind == QS_OPT_CHOICE) {
        const size_t n = strlen(value);
        for (const char *c = choices_of(o); c;) {
            const char *bar = strchr(c, '|');
            const size_t k = bar ? (size_t)(bar - c) : strlen(c);
            if (k == n && !strncmp(c, value, n)) return 0;
            c = bar ? bar + 1 : NULL;
        }
        char list[128];
        snprintf(list, sizeof list, "%s", choices_of(o));
        for (char *c = list; *c; c++)
            if (*c == '|') *c = ',';
        snprintf(err, errlen, "%s expects one of %s, not '%s'", o->key, list, value);
        return -1;
    }
    if (o->kind == QS_OPT_MODEL) {
        qp_model_preset m;
        return qp_size_model(value, 2, 4, &m, err, errlen);
    }
    if (o->kind == QS_OPT_RECIPE) {
        qp_recipe r;
        char e[512];
        if (qp_recipe_parse(value, &r, e, sizeof e)) {
            snprintf(err, errlen, "%s", e);
            return -1;
        }
    }
    return 0;
}

void qs_opt_flag(const qs_opt *o, char *buf, size_t len)
{
    snprintf(buf, len, "--%s", o->key);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = '-';
}

const char *qs_opt_names(void)
{
    static char names[512];
    if (!names[0])
        for (int i = 0; i < NOPTS; i++) {
            const size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", OPTS[i].key);
        }
    return names;
}
