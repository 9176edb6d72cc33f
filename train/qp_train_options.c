/* qp_train_options.c — qtrain's options as one table (see qp_train_options.h). */
#include "qp_train_options.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"

const char *const qp_arch_names[QP_ARCH_COUNT] = {[QP_ARCH_GPT] = "gpt", [QP_ARCH_LLAMA] = "llama"};
const char *const qp_device_names[QP_DEVICE_COUNT] = {[QP_DEVICE_CPU] = "cpu", [QP_DEVICE_CUDA] = "cuda"};
const char *const qp_on_divergence_names[QP_ON_DIVERGENCE_COUNT] = {
    [QP_ON_DIVERGENCE_STOP] = "stop", [QP_ON_DIVERGENCE_SKIP_STEP] = "skip-step",
    [QP_ON_DIVERGENCE_ROLLBACK] = "rollback"};
const char *const qp_grad_comm_names[QP_GRAD_COMM_COUNT] = {
    [QP_GRAD_COMM_FP32] = "fp32", [QP_GRAD_COMM_BF16] = "bf16", [QP_GRAD_COMM_FP8] = "fp8"};

#define FIELD(f) .offset = offsetof(qp_train_opts, f), .size = sizeof(((qp_train_opts *)0)->f)
#define FLAG(n, f, why) {.name = n, .kind = QP_OPT_FLAG, FIELD(f), .not_swept = why}
#define TEXT(n, f, t, why) {.name = n, .kind = QP_OPT_TEXT, FIELD(f), .text = t, .not_swept = why}
#define CHOICE(n, f, tab, count) {.name = n, .kind = QP_OPT_CHOICE, FIELD(f), .names = tab, .n_names = count}
/* judged by qp_train_opts_check (!at_parse) */
#define INT(n, f, l, h) {.name = n, .kind = QP_OPT_INT, FIELD(f), .lo = l, .hi = h}
#define GIVEN(f) .given = offsetof(qp_train_opts, f) + 1
#define NUM(n, f, l, lopen, h, hopen) \
    {.name = n, .kind = QP_OPT_NUM, FIELD(f), .lo = l, .hi = h, .lo_open = lopen, .hi_open = hopen}
/* refused as they are parsed */
#define INT_P(n, f, l, h, why) {.name = n, .kind = QP_OPT_INT, FIELD(f), .lo = l, .hi = h, .at_parse = true, .not_swept = why}

#define P40 1099511627776.0       /* 2^40 */
#define I64 9223372036854775807.0 /* INT64_MAX, as a double: the whole range */
#define NOT_A_SWEEP_OPTION "a test hook of qtrain, not a sweep option"
#define EVAL_ONLY "a sweep trains; evaluate checkpoints with qtrain --eval-only"

const qp_train_option qp_train_options[] = {
    TEXT("data", data, QP_TEXT_PATH, NULL),
    TEXT("recipe", recipe, QP_TEXT_RECIPE, NULL),
    TEXT("out", out, QP_TEXT_PATH, "qsweep sets --out itself (DIR/runs/NAME.h5)"),
    TEXT("resume-from", resume_from, QP_TEXT_PATH, EVAL_ONLY),
    TEXT("inject", inject, QP_TEXT_PLAIN, NOT_A_SWEEP_OPTION),
    CHOICE("arch", arch, qp_arch_names, QP_ARCH_COUNT),
    CHOICE("device", device, qp_device_names, QP_DEVICE_COUNT),
    CHOICE("on-divergence", on_divergence, qp_on_divergence_names, QP_ON_DIVERGENCE_COUNT),
    CHOICE("grad-comm", grad_comm, qp_grad_comm_names, QP_GRAD_COMM_COUNT),
    INT("layers", layers, 1, 1024),
    INT("heads", heads, 1, 1 << 30),
    INT("dim", dim, 1, 65536),
    INT("seq", seq, 1, 1 << 20),
    INT("batch", batch, 1, 1 << 20),
    INT("grad-accum", grad_accum, 1, 65536),
    INT_P("kv-heads", kv_heads, 1, 1 << 20, NULL),
    INT_P("mlp-hidden", mlp_hidden, 1, 1 << 20, NULL),
    {.name = "steps", .kind = QP_OPT_INT, FIELD(steps), .lo = 0, .hi = P40, GIVEN(steps_given)},
    {.name = "tokens-per-param", .kind = QP_OPT_NUM, FIELD(tokens_per_param), .lo = 0, .hi = 1e9, .lo_open = true,
     .hi_open = true, .at_parse = true},
    NUM("lr", lr, 0, true, INFINITY, false),
    NUM("min-lr", min_lr, -INFINITY, false, INFINITY, false),
    INT("warmup", warmup, 0, P40),
    NUM("weight-decay", weight_decay, 0, false, INFINITY, false),
    NUM("grad-clip", grad_clip, 0, false, INFINITY, false),
    INT_P("seed", seed, 0, I64, NULL),
    INT_P("data-seed", data_seed, 0, I64, NULL),
    INT("eval-every", eval_every, 0, P40),
    INT("eval-batches", eval_batches, 1, P40),
    {.name = "val-tokens", .kind = QP_OPT_VALTOKENS, FIELD(val_tokens), .lo = 1, .hi = P40, .at_parse = true},
    INT("qerr-every", qerr_every, 0, P40),
    INT("ckpt-every", ckpt_every, 0, P40),
    NUM("val-frac", val_frac, 0, true, 1, true),
    INT("prefetch", prefetch, 0, 1024),
    NUM("divergence-factor", divergence_factor, 1, true, INFINITY, false),
    {.name = "threads", .kind = QP_OPT_THREADS, FIELD(threads), .lo = 1, .hi = 1024, .at_parse = true,
     .not_swept = "qsweep sets --threads itself: use threads_per_run in [sweep]"},
    INT_P("stop-after", stop_after, 0, P40, NOT_A_SWEEP_OPTION),
    FLAG("grad-comm-ef", grad_comm_ef, NULL),
    FLAG("requantize", requantize, NULL),
    FLAG("resume", resume, "qsweep always passes --resume"),
    FLAG("quiet", quiet, "qsweep always passes --quiet"),
    FLAG("eval-only", eval_only, EVAL_ONLY),
    FLAG("explain", explain, "it prints the expanded recipe and exits: qtrain --explain"),
};
const int qp_n_train_options = (int)(sizeof qp_train_options / sizeof qp_train_options[0]);

_Static_assert(sizeof(qp_device) == sizeof(int) && sizeof(qp_on_divergence) == sizeof(int) &&
                   sizeof(qp_grad_comm) == sizeof(int),
               "CHOICE options store an int");

/* name with '_' read as '-' */
static int same_name(const char *canon, const char *name)
{
    for (; *canon && *name; canon++, name++)
        if (*canon != (*name == '_' ? '-' : *name)) return 0;
    return !*canon && !*name;
}

const qp_train_option *qp_train_option_find(const char *name)
{
    for (int i = 0; i < qp_n_train_options; i++)
        if (same_name(qp_train_options[i].name, name)) return &qp_train_options[i];
    return NULL;
}

/* what an integer field holds before qp_train_opts_check judges it */
#define INT_FIELD_SPAN (double)(1 << 30)
#define I64_FIELD_SPAN P40

static void range_text(double lo, double hi, bool lo_open, bool hi_open, int integer, char *buf, size_t len)
{
    const char *what = integer ? "an integer" : "a number";
    if (integer && hi >= I64) snprintf(buf, len, "%s >= %.0f", what, lo);
    else if (integer) snprintf(buf, len, "%s in %.0f..%.0f", what, lo, hi);
    else if (isinf(lo) && isinf(hi)) snprintf(buf, len, "a finite number");
    else if (isinf(hi)) snprintf(buf, len, "%s %s %g", what, lo_open ? ">" : ">=", lo);
    else snprintf(buf, len, "%s in %s%g, %g%s", what, lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
}

void qp_train_option_values(const qp_train_option *t, char *buf, size_t len)
{
    char r[96];
    switch (t->kind) {
    case QP_OPT_FLAG: snprintf(buf, len, "no value"); return;
    case QP_OPT_TEXT: snprintf(buf, len, "a value"); return;
    case QP_OPT_CHOICE: {
        int k = 0;
        buf[0] = 0;
        for (int i = 0; i < t->n_names && k >= 0 && (size_t)k < len; i++)
            k += snprintf(buf + k, len - (size_t)k, "%s%s", t->names[i],
                          i + 2 < t->n_names ? ", " : i + 1 < t->n_names ? " or " : "");
        return;
    }
    case QP_OPT_INT:
    case QP_OPT_NUM: range_text(t->lo, t->hi, t->lo_open, t->hi_open, t->kind == QP_OPT_INT, buf, len); return;
    case QP_OPT_THREADS:
        range_text(t->lo, t->hi, false, false, 1, r, sizeof r);
        snprintf(buf, len, "'auto' or %s", r);
        return;
    case QP_OPT_VALTOKENS:
        range_text(t->lo, t->hi, false, false, 1, r, sizeof r);
        snprintf(buf, len, "a token count (%s) or 'all'", r);
        return;
    case QP_OPT_KIND_COUNT: break;
    }
    snprintf(buf, len, "?");
}

static bool in_range(const qp_train_option *t, double v)
{
    return (t->lo_open ? v > t->lo : v >= t->lo) && (t->hi_open ? v < t->hi : v <= t->hi) && !isnan(v);
}

static void store_int(const qp_train_option *t, qp_train_opts *o, long long v)
{
    char *f = (char *)o + t->offset;
    if (t->size == sizeof(int64_t)) {
        const int64_t w = v;
        memcpy(f, &w, sizeof w);
    } else {
        const int w = (int)v;
        memcpy(f, &w, sizeof w);
    }
}

static int parse_value(const qp_train_option *t, const char *shown, const char *text, bool judge_range,
                       qp_train_opts *o, char *err, size_t errlen)
{
    const bool judge = judge_range || t->at_parse;
    char want[160];
    switch (t->kind) {
    case QP_OPT_FLAG:
        if (o) {
            const bool yes = true;
            memcpy((char *)o + t->offset, &yes, sizeof yes);
        }
        return 0;
    case QP_OPT_TEXT:
        if (strlen(text) >= t->size) {
            snprintf(err, errlen, "%s value too long (at most %zu bytes)", shown, t->size - 1);
            return -1;
        }
        if (o) memcpy((char *)o + t->offset, text, strlen(text) + 1);
        return 0;
    case QP_OPT_CHOICE:
        for (int i = 0; i < t->n_names; i++)
            if (!strcmp(text, t->names[i])) {
                if (o) store_int(t, o, i);
                return 0;
            }
        qp_train_option_values(t, want, sizeof want);
        snprintf(err, errlen, "%s must be %s, not '%.60s'", shown, want, text);
        return -1;
    case QP_OPT_NUM: {
        char *end;
        errno = 0;
        const double v = strtod(text, &end);
        if (!*text || *end || errno || (judge && !(isfinite(v) && in_range(t, v)))) {
            if (judge) qp_train_option_values(t, want, sizeof want);
            else snprintf(want, sizeof want, "a number");
            snprintf(err, errlen, "%s expects %s, not '%s'", shown, want, text);
            return -1;
        }
        if (o) memcpy((char *)o + t->offset, &v, sizeof v);
        return 0;
    }
    case QP_OPT_THREADS:
    case QP_OPT_VALTOKENS:
    case QP_OPT_INT: {
        /* --threads auto (0), --val-tokens all (-1); else an integer */
        const char *word = t->kind == QP_OPT_THREADS ? "auto" : t->kind == QP_OPT_VALTOKENS ? "all" : NULL;
        if (word && !strcmp(text, word)) {
            if (o) store_int(t, o, t->kind == QP_OPT_THREADS ? 0 : -1);
            return 0;
        }
        char *end;
        errno = 0;
        const long long v = strtoll(text, &end, 10);
        /* unjudged: whatever the field holds, for qp_train_opts_check */
        const double span = t->size == sizeof(int64_t) ? I64_FIELD_SPAN : INT_FIELD_SPAN;
        bool ok = *text && !*end && !errno;
        if (ok) ok = judge ? in_range(t, (double)v) : (double)v >= -span && (double)v <= span;
        if (!ok) {
            if (judge) qp_train_option_values(t, want, sizeof want);
            else range_text(-span, span, false, false, 1, want, sizeof want);
            snprintf(err, errlen, "%s expects %s, not '%s'", shown, want, text);
            return -1;
        }
        if (o) store_int(t, o, v);
        return 0;
    }
    case QP_OPT_KIND_COUNT: break;
    }
    snprintf(err, errlen, "%s: no such option kind", shown);
    return -1;
}

int qp_train_option_parse(const qp_train_option *t, const char *shown, const char *text, bool judge_range,
                          qp_train_opts *o, char *err, size_t errlen)
{
    if (parse_value(t, shown, text, judge_range, o, err, errlen)) return -1;
    if (o && t->given) {
        const bool yes = true;
        memcpy((char *)o + t->given - 1, &yes, sizeof yes);
    }
    return 0;
}

int qp_train_options_check(const qp_train_opts *o, char *err, size_t errlen)
{
    for (int i = 0; i < qp_n_train_options; i++) {
        const qp_train_option *t = &qp_train_options[i];
        if (t->at_parse || (t->kind != QP_OPT_INT && t->kind != QP_OPT_NUM)) continue;
        const char *f = (const char *)o + t->offset;
        double v;
        char shown[64];
        if (t->kind == QP_OPT_NUM) {
            memcpy(&v, f, sizeof v);
            snprintf(shown, sizeof shown, "%g", v);
        } else if (t->size == sizeof(int64_t)) {
            int64_t w;
            memcpy(&w, f, sizeof w);
            v = (double)w;
            snprintf(shown, sizeof shown, "%lld", (long long)w);
        } else {
            int w;
            memcpy(&w, f, sizeof w);
            v = w;
            snprintf(shown, sizeof shown, "%d", w);
        }
        if (!in_range(t, v) || (t->kind == QP_OPT_NUM && !isfinite(v))) {
            char want[96];
            qp_train_option_values(t, want, sizeof want);
            snprintf(err, errlen, "--%s must be %s, not %s", t->name, want, shown);
            return -1;
        }
    }
    return 0;
}
