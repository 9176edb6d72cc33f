/* qs_opts.c — the keys of an experiment file: qtrain's options and model (see qs_opts.h). */
#include "qs_opts.h"

#include <stdio.h>
#include <string.h>

#include "qp_recipe.h"
#include "qp_size.h"

/* every option of qp_train_options[] an experiment file may set, and model */
static qs_opt opts[64];
static int nopts;

static void opts_init(void)
{
    if (nopts) return;
    for (int i = 0; i < qp_n_train_options; i++) {
        const qp_train_option *t = &qp_train_options[i];
        if (t->not_swept) continue;
        if (nopts + 2 > (int)(sizeof opts / sizeof opts[0])) break; /* (the table has far fewer) */
        qs_opt *o = &opts[nopts++];
        snprintf(o->key, sizeof o->key, "%s", t->name);
        for (char *c = o->key; *c; c++)
            if (*c == '-') *c = '_';
        o->opt = t;
        o->kind = t->kind == QP_OPT_FLAG                                   ? QS_OPT_FLAG
                  : t->kind == QP_OPT_TEXT && t->text == QP_TEXT_PATH      ? QS_OPT_PATH
                  : t->kind == QP_OPT_TEXT && t->text == QP_TEXT_RECIPE    ? QS_OPT_RECIPE
                                                                           : QS_OPT_VALUE;
        if (!strcmp(t->name, "recipe")) opts[nopts++] = (qs_opt){"model", QS_OPT_MODEL, NULL};
    }
}

const qs_opt *qs_opt_find(const char *key)
{
    opts_init();
    const qp_train_option *t = qp_train_option_find(key); /* '-' and '_' alike */
    for (int i = 0; i < nopts; i++)
        if (t ? opts[i].opt == t : opts[i].kind == QS_OPT_MODEL && !strcmp(key, opts[i].key)) return &opts[i];
    return NULL;
}

const char *qs_opt_reserved(const char *key)
{
    const qp_train_option *t = qp_train_option_find(key);
    return t ? t->not_swept : NULL;
}

int qs_opt_check(const qs_opt *o, const char *value, char *err, size_t errlen)
{
    if (!*value) {
        snprintf(err, errlen, "%s is empty", o->key);
        return -1;
    }
    switch (o->kind) {
    case QS_OPT_MODEL: {
        qp_model_preset m;
        return qp_size_model(value, 2, 4, &m, err, errlen);
    }
    case QS_OPT_FLAG:
        if (strcmp(value, "on") && strcmp(value, "off")) {
            snprintf(err, errlen, "%s expects on or off (qtrain --%s or not), not '%s'", o->key, o->opt->name, value);
            return -1;
        }
        return 0;
    case QS_OPT_RECIPE: {
        qp_recipe r;
        char e[512];
        if (qp_recipe_parse(value, &r, e, sizeof e)) {
            snprintf(err, errlen, "%s", e);
            return -1;
        }
        return qp_train_option_parse(o->opt, o->key, value, true, NULL, err, errlen);
    }
    case QS_OPT_PATH:
    case QS_OPT_VALUE: return qp_train_option_parse(o->opt, o->key, value, true, NULL, err, errlen);
    }
    snprintf(err, errlen, "%s: no such key kind", o->key);
    return -1;
}

int qs_opt_args(const qs_opt *o, const char *value, const char *args[2], char *flag, size_t flag_len)
{
    snprintf(flag, flag_len, "--%s", o->opt ? o->opt->name : o->key);
    args[0] = flag, args[1] = value;
    if (o->kind == QS_OPT_FLAG) return strcmp(value, "on") ? 0 : 1;
    return 2;
}

const char *qs_opt_names(void)
{
    static char names[1024];
    opts_init();
    if (!names[0])
        for (int i = 0; i < nopts && strlen(names) + strlen(opts[i].key) + 2 < sizeof names; i++) {
            strcat(names, i ? ", " : "");
            strcat(names, opts[i].key);
        }
    return names;
}
