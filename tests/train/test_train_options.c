/* test_train_options.c — qtrain's option table (train/run/qp_train_options.c)
 * through the two readers that take a value from it: qtrain's parser
 * (qp_train_parse_args) puts every option's values in its field, and
 * qp_train_opts_check judges every field at and past the ends of its
 * range. qsweep's side (the same values refused with the same ranges) is
 * tests/sweep/test_sweep.py's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qp_test.h"
#include "qp_train_args.h"
#include "qp_train_options.h"

static qp_train_opts parse1(const char *flag, const char *value, int *rc, char *err, size_t errlen)
{
    qp_train_opts o;
    qp_train_opts_default(&o);
    char name[80];
    snprintf(name, sizeof name, "--%s", flag);
    char *argv[] = {"qtrain", name, (char *)value, NULL};
    *rc = qp_train_parse_args(value ? 3 : 2, argv, &o, err, errlen);
    return o;
}

static double field(const qp_train_opts *o, const qp_train_option *t)
{
    const char *f = (const char *)o + t->offset;
    if (t->kind == QP_OPT_NUM) {
        double v;
        memcpy(&v, f, sizeof v);
        return v;
    }
    if (t->size == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, f, sizeof v);
        return (double)v;
    }
    int v;
    memcpy(&v, f, sizeof v);
    return v;
}

static void set_field(qp_train_opts *o, const qp_train_option *t, double v)
{
    char *f = (char *)o + t->offset;
    if (t->kind == QP_OPT_NUM) {
        memcpy(f, &v, sizeof v);
    } else if (t->size == sizeof(int64_t)) {
        const int64_t w = (int64_t)v;
        memcpy(f, &w, sizeof w);
    } else {
        const int w = (int)v;
        memcpy(f, &w, sizeof w);
    }
}

/* A valid configuration to vary one field of. */
static qp_train_opts valid(void)
{
    qp_train_opts o;
    qp_train_opts_default(&o);
    snprintf(o.data, sizeof o.data, "corpus.txt");
    return o;
}

static void test_names(void)
{
    for (int i = 0; i < qp_n_train_options; i++) {
        const qp_train_option *t = &qp_train_options[i];
        CHECK(t->name && !strchr(t->name, '_') && (unsigned)t->kind < QP_OPT_KIND_COUNT, "row %d: a '-' name", i);
        for (int j = i + 1; j < qp_n_train_options; j++)
            CHECK(strcmp(t->name, qp_train_options[j].name), "%s twice", t->name);
        char under[64];
        snprintf(under, sizeof under, "%s", t->name);
        for (char *c = under; *c; c++)
            if (*c == '-') *c = '_';
        CHECK(qp_train_option_find(t->name) == t && qp_train_option_find(under) == t, "%s found as %s", t->name, under);
        CHECK(t->size > 0 && t->offset + t->size <= sizeof(qp_train_opts), "%s: its field", t->name);
        if (t->kind == QP_OPT_CHOICE)
            for (int k = 0; k < t->n_names; k++) CHECK(t->names[k] != NULL, "%s: spelling %d", t->name, k);
    }
    CHECK(qp_train_option_find("no-such") == NULL && qp_train_option_find("") == NULL, "unknown names");
}

/* Each option's values reach its field through qtrain's command line. */
static void test_parse(void)
{
    char err[512];
    int rc;
    for (int i = 0; i < qp_n_train_options; i++) {
        const qp_train_option *t = &qp_train_options[i];
        switch (t->kind) {
        case QP_OPT_FLAG: {
            const qp_train_opts o = parse1(t->name, NULL, &rc, err, sizeof err);
            bool b;
            memcpy(&b, (const char *)&o + t->offset, sizeof b);
            CHECK(rc == QP_ARGS_OK && b, "--%s sets its flag: %d %s", t->name, rc, err);
            break;
        }
        case QP_OPT_TEXT: {
            const qp_train_opts o = parse1(t->name, "x,y|z", &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_OK && !strcmp((const char *)&o + t->offset, "x,y|z"), "--%s copies its text", t->name);
            char big[2100];
            memset(big, 'a', sizeof big - 1);
            big[sizeof big - 1] = 0;
            parse1(t->name, big, &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_BAD && strstr(err, "too long"), "--%s: too long: %s", t->name, err);
            break;
        }
        case QP_OPT_CHOICE:
            for (int k = 0; k < t->n_names; k++) {
                const qp_train_opts o = parse1(t->name, t->names[k], &rc, err, sizeof err);
                CHECK(rc == QP_ARGS_OK && field(&o, t) == k, "--%s %s is %d", t->name, t->names[k], k);
            }
            parse1(t->name, "nonsense", &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_BAD && strstr(err, "must be") && strstr(err, t->names[0]), "--%s nonsense: %s",
                  t->name, err);
            break;
        case QP_OPT_THREADS:
        case QP_OPT_VALTOKENS: {
            const qp_train_opts o = parse1(t->name, t->kind == QP_OPT_THREADS ? "auto" : "all", &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_OK && field(&o, t) == (t->kind == QP_OPT_THREADS ? 0 : -1), "--%s's word", t->name);
        }
            /* and its integers, as an integer option's */
            /* fall through */
        case QP_OPT_INT:
        case QP_OPT_NUM: {
            const double v = isinf(t->lo) ? 0.0 : t->lo_open ? (isinf(t->hi) ? t->lo + 1.5 : (t->lo + t->hi) / 2) : t->lo;
            const double in = t->kind == QP_OPT_NUM ? v : ceil(v);
            char text[64];
            snprintf(text, sizeof text, t->kind == QP_OPT_NUM ? "%.17g" : "%.0f", in);
            const qp_train_opts o = parse1(t->name, text, &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_OK && field(&o, t) == in, "--%s %s: %d %s", t->name, text, rc, err);
            parse1(t->name, "12abc", &rc, err, sizeof err);
            CHECK(rc == QP_ARGS_BAD && strstr(err, "expects"), "--%s 12abc: %s", t->name, err);
            if (t->at_parse) { /* refused as parsed, just below its range */
                snprintf(text, sizeof text, t->kind == QP_OPT_NUM ? "%.17g" : "%.0f", t->lo_open ? t->lo : t->lo - 1);
                parse1(t->name, text, &rc, err, sizeof err);
                CHECK(rc == QP_ARGS_BAD && strstr(err, "expects"), "--%s %s refused as parsed: %s", t->name, text, err);
            }
            break;
        }
        case QP_OPT_KIND_COUNT: CHECK(0, "--%s: no kind", t->name); break;
        }
    }
    parse1("grad_accum", "2", &rc, err, sizeof err);
    CHECK(rc == QP_ARGS_BAD && strstr(err, "unknown option"), "the command line spells names with '-': %s", err);
    parse1("steps", NULL, &rc, err, sizeof err);
    CHECK(rc == QP_ARGS_BAD && strstr(err, "needs a value"), "--steps alone: %s", err);
    const qp_train_opts s = parse1("steps", "7", &rc, err, sizeof err);
    CHECK(rc == QP_ARGS_OK && s.steps == 7 && s.steps_given, "--steps marks itself given");
}

/* Each option judged after parsing: its ends pass qp_train_opts_check, one
 * step past them is refused with a message naming it. */
static void test_check(void)
{
    char err[512];
    qp_train_opts o = valid();
    CHECK(qp_train_opts_check(&o, err, sizeof err) == 0, "the defaults with data pass: %s", err);
    for (int i = 0; i < qp_n_train_options; i++) {
        const qp_train_option *t = &qp_train_options[i];
        if (t->at_parse || (t->kind != QP_OPT_INT && t->kind != QP_OPT_NUM)) continue;
        char want[80];
        snprintf(want, sizeof want, "--%s must be", t->name);
        const double step = t->kind == QP_OPT_INT ? 1 : fmax(1e-6, fabs(t->lo) * 1e-6);
        if (!isinf(t->lo)) {
            o = valid();
            set_field(&o, t, t->lo_open ? t->lo : t->lo - step);
            CHECK(qp_train_opts_check(&o, err, sizeof err) && strstr(err, want), "%s below: %s", t->name, err);
            if (!t->lo_open) {
                o = valid();
                set_field(&o, t, t->lo);
                CHECK(!qp_train_options_check_ranges(&o, err, sizeof err), "%s at its low end: %s", t->name, err);
            }
        }
        if (!isinf(t->hi) && t->hi < 1e15) {
            o = valid();
            set_field(&o, t, t->hi_open ? t->hi : t->hi + step);
            CHECK(qp_train_opts_check(&o, err, sizeof err) && strstr(err, want), "%s above: %s", t->name, err);
            if (!t->hi_open) {
                o = valid();
                set_field(&o, t, t->hi);
                CHECK(!qp_train_options_check_ranges(&o, err, sizeof err), "%s at its high end: %s", t->name, err);
            }
        }
        if (t->kind == QP_OPT_NUM) {
            o = valid();
            set_field(&o, t, NAN);
            CHECK(qp_train_opts_check(&o, err, sizeof err) && strstr(err, want), "%s NaN: %s", t->name, err);
            o = valid();
            set_field(&o, t, INFINITY);
            CHECK(qp_train_opts_check(&o, err, sizeof err) && strstr(err, want), "%s Inf: %s", t->name, err);
        }
    }
}

int main(void)
{
    test_names();
    test_parse();
    test_check();
    return qp_test_finish("test_train_options");
}
