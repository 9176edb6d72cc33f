/* qp_train_options.c — qtrain's options as one table (see qp_train_options.h). */
#include "qp_train_options.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_cli.h"
#include "qp_model.h"

const char *const qp_device_names[QP_DEVICE_COUNT] = {[QP_DEVICE_CPU] = "cpu", [QP_DEVICE_CUDA] = "cuda"};
const char *const qp_on_divergence_names[QP_ON_DIVERGENCE_COUNT] = {
    [QP_ON_DIVERGENCE_STOP] = "stop", [QP_ON_DIVERGENCE_SKIP_STEP] = "skip-step",
    [QP_ON_DIVERGENCE_ROLLBACK] = "rollback"};
const char *const qp_grad_comm_names[QP_GRAD_COMM_COUNT] = {
    [QP_GRAD_COMM_FP32] = "fp32", [QP_GRAD_COMM_BF16] = "bf16", [QP_GRAD_COMM_FP8] = "fp8"};

#define FIELD(f) .offset = offsetof(qp_train_opts, f), .size = sizeof(((qp_train_opts *)0)->f)
#define FLAG(n, f, why, ...) {.name = n, .kind = QP_OPT_FLAG, FIELD(f), .not_swept = why, __VA_ARGS__}
#define TEXT(n, f, t, why, ...) {.name = n, .kind = QP_OPT_TEXT, FIELD(f), .text = t, .not_swept = why, __VA_ARGS__}
#define CHOICE(n, f, tab, count, ...) \
    {.name = n, .kind = QP_OPT_CHOICE, FIELD(f), .names = tab, .n_names = count, __VA_ARGS__}
/* judged by qp_train_opts_check (!at_parse) */
#define INT(n, f, l, h, ...) {.name = n, .kind = QP_OPT_INT, FIELD(f), .lo = l, .hi = h, __VA_ARGS__}
#define GIVEN(f) .given = offsetof(qp_train_opts, f) + 1
#define NUM(n, f, l, lopen, h, hopen, ...) \
    {.name = n, .kind = QP_OPT_NUM, FIELD(f), .lo = l, .hi = h, .lo_open = lopen, .hi_open = hopen, __VA_ARGS__}
/* refused as they are parsed */
#define INT_P(n, f, l, h, why, ...) \
    {.name = n, .kind = QP_OPT_INT, FIELD(f), .lo = l, .hi = h, .at_parse = true, .not_swept = why, __VA_ARGS__}

#define P40 1099511627776.0       /* 2^40 */
#define I64 9223372036854775807.0 /* INT64_MAX, as a double: the whole range */
#define NOT_A_SWEEP_OPTION "a test hook of qtrain, not a sweep option"
#define EVAL_ONLY "a sweep trains; evaluate checkpoints with qtrain --eval-only"

/* In the order qtrain --help and --man list them; "%D" in a help text is
 * the option's default (qp_train_opts_default), written by
 * qp_train_option_show, and "%R" the recipe presets and modifiers
 * (qp_recipe_presets_help: the recipe parser's own table). */
const qp_train_option qp_train_options[] = {
    TEXT("data", data, QP_TEXT_PATH, NULL, .arg = "FILE",
         .help = "text (byte tokens, vocab 256) or llm.c .bin token shard (GPT-2, 50257)"),
    TEXT("recipe", recipe, QP_TEXT_RECIPE, NULL, .arg = "R",
         .help = "precision recipe (default %D; grammar and presets: docs/recipes.md):\n"
                 "%R"
                 "  rules after a comma, applied in order: TARGET=FORMAT[:OPT...] or TARGET:OPT[:OPT...], TARGET "
                 "from blocks (L3, L0-2, first2, last8, ~L3), GEMMs (qkv attproj fc fcproj; llama: qkv attproj gate "
                 "up down), passes (fprop dgrad wgrad), operands (x w dy) joined by '.' ('+' for a union), OPT: sr "
                 "rn current delayed hist=N amax=max|most-recent rht=N|te 1d 2d. E.g. bf16,fprop=nvfp4 "
                 "fp8-current,w=nvfp4 nvfp4,bf16-first=2,bf16-last=8.\n"
                 "  Only the blocks' linear layers are quantized: embeddings, LM head, attention's internal "
                 "products, norms and the optimizer stay FP32, as in the published recipes."),
    FLAG("explain", explain, "it prints the expanded recipe and exits: qtrain --explain",
         .help = "print --recipe expanded for --layers blocks of --arch (one rule per pass x operand x block "
                 "group, the form the run file records) and exit"),
    CHOICE("arch", arch, qp_arch_names, QP_ARCH_COUNT, .arg = "A",
           .help = "gpt (default: learned positions, LayerNorm, 4x GELU MLP, biases, tied head) or llama "
                   "(RMSNorm, rotary embeddings, SwiGLU MLP, no biases, untied head); the llama's linear layers "
                   "are qkv, attproj, gate, up, down"),
    INT("layers", layers, 1, 1024, .arg = "L", .help = "transformer blocks (default %D)"),
    INT("heads", heads, 1, 1 << 30, .arg = "H", .help = "attention heads (default %D)"),
    INT("dim", dim, 1, 65536, .arg = "C", .help = "model width (default %D)"),
    INT("seq", seq, 1, 1 << 20, .arg = "T", .help = "sequence length (default %D)"),
    INT_P("kv-heads", kv_heads, 1, 1 << 20, NULL, .arg = "N",
          .help = "llama: key/value heads, dividing --heads (grouped-query attention; default --heads)"),
    INT_P("mlp-hidden", mlp_hidden, 1, 1 << 20, NULL, .arg = "N",
          .help = "llama: SwiGLU's hidden width (default 8C/3 rounded up to a multiple of 64)"),
    INT("batch", batch, 1, 1 << 20, .arg = "B",
        .help = "sequences per micro-batch (default %D); under mpirun -np N the global batch: each rank takes B/N "
                "of the same sequences"),
    CHOICE("grad-comm", grad_comm, qp_grad_comm_names, QP_GRAD_COMM_COUNT, .arg = "P",
           .help = "gradient all-reduce across ranks: fp32 (default), bf16 or fp8 (E4M3, per-tensor scale from "
                   "the global amax); logs grad_comm_rel_err"),
    FLAG("grad-comm-ef", grad_comm_ef, NULL,
         .help = "error feedback for --grad-comm bf16|fp8 (residual not checkpointed)"),
    INT("grad-accum", grad_accum, 1, 65536, .arg = "N", .help = "micro-batches per optimizer step (default %D)"),
    {.name = "steps", .kind = QP_OPT_INT, FIELD(steps), .lo = 0, .hi = P40, GIVEN(steps_given), .arg = "N",
     .help = "optimizer steps (default %D)"},
    {.name = "tokens-per-param", .kind = QP_OPT_NUM, FIELD(tokens_per_param), .lo = 0, .hi = 1e9, .lo_open = true,
     .hi_open = true, .at_parse = true, .arg = "R",
     .help = "instead of --steps: train on R tokens per non-embedding parameter, steps = round(R x N / (batch x "
             "seq x grad-accum)); N = every parameter but the token/position embeddings (the tied LM head "
             "included). The run file records params_nonembedding, tokens_total, tokens_per_param and epochs; "
             "more than 4 epochs of the training split warns once"},
    NUM("lr", lr, 0, true, INFINITY, false, .arg = "X", .help = "AdamW learning rate (default %D)"),
    NUM("min-lr", min_lr, -INFINITY, false, INFINITY, false, .arg = "X",
        .help = "the cosine schedule's floor (default lr/10)"),
    INT("warmup", warmup, 0, P40, .arg = "N", .help = "warm-up steps (default %D)"),
    NUM("weight-decay", weight_decay, 0, false, INFINITY, false, .arg = "X", .help = "AdamW weight decay (default %D)"),
    NUM("grad-clip", grad_clip, 0, false, INFINITY, false, .arg = "X",
        .help = "gradient norm clip (default %D; 0 = off)"),
    INT_P("seed", seed, 0, I64, NULL, .arg = "S", .help = "weights, batches and stochastic rounding (default %D)"),
    INT_P("data-seed", data_seed, 0, I64, NULL, .arg = "S",
          .help = "batches, stochastic rounding and Hadamard signs from S instead of --seed (the initial weights "
                  "stay --seed's): runs differing only in it measure the noise floor"),
    INT("eval-every", eval_every, 0, P40, .arg = "N",
        .help = "validation loss cadence in steps (default %D). The validation set is fixed: consecutive windows "
                "from the start of the validation split, the same for every seed and recipe"),
    INT("eval-batches", eval_batches, 1, P40, .arg = "N", .help = "validation set size in batches (default %D)"),
    {.name = "val-tokens", .kind = QP_OPT_VALTOKENS, FIELD(val_tokens), .lo = 1, .hi = P40, .at_parse = true,
     .arg = "N|all",
     .help = "the validation set by size instead: at least N tokens (whole batches, at most the split), or the "
             "whole validation split"},
    INT("qerr-every", qerr_every, 0, P40, .arg = "N",
        .help = "log per-layer quantization error, and every block GEMM input's amax, kurtosis and top-channel "
                "energy share (/quant/outliers), every N steps (default %D, 0 = off)"),
    INT("ckpt-every", ckpt_every, 0, P40, .arg = "N", .help = "checkpoint cadence (default %D; also at the end)"),
    NUM("val-frac", val_frac, 0, true, 1, true, .arg = "X",
        .help = "last fraction of the data used for validation (default %D)"),
    INT("prefetch", prefetch, 0, 1024, .arg = "N",
        .help = "batches the loader thread prepares ahead (default %D; 0 = none)"),
    FLAG("requantize", requantize, NULL,
         .help = "the backward quantizes X and W again instead of keeping the forward's quantized copies: the same "
                 "results in less memory (a BF16 copy of every block GEMM's X and W), a little slower"),
    {.name = "threads", .kind = QP_OPT_THREADS, FIELD(threads), .lo = 1, .hi = 1024, .at_parse = true,
     .not_swept = "qsweep sets --threads itself: use threads_per_run in [sweep]", .arg = "N|auto",
     .help = "OpenMP threads (default auto: the CPUs of this process's affinity mask that nothing else is "
             "running on when it starts, at least 1). Results are the same bits on any number of threads"},
    CHOICE("device", device, qp_device_names, QP_DEVICE_COUNT, .arg = "D",
           .help = "cpu (default) or cuda: the whole step on the GPU (same model, recipes, run file and "
                   "checkpoints; GEMM path and board power in the run file); exits 2 without a CUDA device or in "
                   "a build without CUDA"),
    TEXT("out", out, QP_TEXT_PATH, "qsweep sets --out itself (DIR/runs/NAME.h5)", .arg = "RUN.h5",
         .help = "run file (default %D); checkpoints go to RUN.ckpt.h5"),
    FLAG("resume", resume, "qsweep always passes --resume",
         .help = "continue from RUN.ckpt.h5 (bit-identical), or start if there is none"),
    FLAG("eval-only", eval_only, EVAL_ONLY,
         .help = "evaluate the checkpoint --resume-from names under --recipe (post-training quantization) and log "
                 "its per-layer errors"),
    TEXT("resume-from", resume_from, QP_TEXT_PATH, EVAL_ONLY, .arg = "CKPT", .help = "the checkpoint --eval-only reads"),
    NUM("divergence-factor", divergence_factor, 1, true, INFINITY, false, .arg = "X",
        .help = "loss above X * running minimum counts as divergence (default %D)"),
    CHOICE("on-divergence", on_divergence, qp_on_divergence_names, QP_ON_DIVERGENCE_COUNT, .arg = "A",
           .help = "what a divergence (NaN/Inf loss or gradient, or a loss spike) does:\n"
                   "  stop (default): log it, keep the last checkpoint, exit 3;\n"
                   "  skip-step: drop that step's update (weights, Adam moments and scaling states stay as before "
                   "it), go on with the next batch; NaN/Inf weights cannot be skipped past: the run stops as with "
                   "stop;\n"
                   "  rollback: reload weights, Adam moments, scaling states and the loss minimum from the last "
                   "checkpoint file (RUN.ckpt.h5, else .prev; a fresh run writes one of its initial state first) "
                   "and go on with the next step and batch: the step counter, lr schedule and data are not "
                   "rewound, so the batches that led to it are skipped, not replayed (a replay is bit-identical "
                   "and would diverge again). The run stops as with stop after 5 skipped steps in a row, or 5 "
                   "rollbacks with no checkpoint of a good step between them."),
    TEXT("inject", inject, QP_TEXT_PLAIN, NOT_A_SWEEP_OPTION, .arg = "KIND:WHERE@STEP",
         .help = "debug: put one NaN/Inf in at optimizer step STEP. KIND: nan, inf, -inf; WHERE: loss (the step's "
                 "loss value), grad:TENSOR[IDX] (a gradient element after backward), param:TENSOR[IDX] (a weight "
                 "before forward); TENSOR: wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw "
                 "fcprojb lnfw lnfb (llama: wte ln1w qkvw attprojw ln2w gatew upw downw lnfw lmhead); IDX: flat "
                 "element index (default 0). E.g. nan:grad:wte@12, inf:param:fcw[5]@30, nan:loss@5. Fires once "
                 "per process (a rollback never reruns a step number, so it gets past it; a --resume from before "
                 "STEP fires it again)."),
    INT_P("stop-after", stop_after, 0, P40, NOT_A_SWEEP_OPTION, .arg = "N",
          .help = "test hook: stop as SIGTERM would after N optimizer steps (0: never)"),
    FLAG("quiet", quiet, "qsweep always passes --quiet", .help = "no progress line"),
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
    qp_cli_range(lo, hi, lo_open, hi_open, integer, buf, len);
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

void qp_train_option_show(const qp_train_option *t, const qp_train_opts *o, char *buf, size_t len)
{
    const char *f = (const char *)o + t->offset;
    long long v = 0;
    if (t->kind == QP_OPT_INT || t->kind == QP_OPT_THREADS || t->kind == QP_OPT_VALTOKENS || t->kind == QP_OPT_CHOICE) {
        if (t->size == sizeof(int64_t)) {
            int64_t w;
            memcpy(&w, f, sizeof w);
            v = w;
        } else {
            int w;
            memcpy(&w, f, sizeof w);
            v = w;
        }
    }
    switch (t->kind) {
    case QP_OPT_FLAG: {
        bool b;
        memcpy(&b, f, sizeof b);
        snprintf(buf, len, "%s", b ? "on" : "off");
        return;
    }
    case QP_OPT_TEXT: snprintf(buf, len, "%.*s", (int)t->size, f); return;
    case QP_OPT_INT: snprintf(buf, len, "%lld", v); return;
    case QP_OPT_NUM: {
        double d;
        memcpy(&d, f, sizeof d);
        snprintf(buf, len, "%g", d);
        return;
    }
    case QP_OPT_CHOICE: snprintf(buf, len, "%s", v >= 0 && v < t->n_names ? t->names[v] : "?"); return;
    case QP_OPT_THREADS:
        if (v == 0) snprintf(buf, len, "auto");
        else snprintf(buf, len, "%lld", v);
        return;
    case QP_OPT_VALTOKENS:
        if (v < 0) snprintf(buf, len, "all");
        else snprintf(buf, len, "%lld", v);
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
            /* the option's own range, also where the parser leaves the judgement to qp_train_opts_check */
            qp_train_option_values(t, want, sizeof want);
            qp_cli_expects(shown, want, text, err, errlen);
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
            /* the option's own range, also where the parser leaves the judgement to qp_train_opts_check */
            qp_train_option_values(t, want, sizeof want);
            qp_cli_expects(shown, want, text, err, errlen);
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

void qp_train_opts_default(qp_train_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->recipe, sizeof o->recipe, "bf16");
    snprintf(o->out, sizeof o->out, "run.h5");
    o->device = QP_DEVICE_CPU, o->on_divergence = QP_ON_DIVERGENCE_STOP, o->grad_comm = QP_GRAD_COMM_FP32;
    o->layers = QP_DEFAULT_LAYERS, o->heads = 4, o->dim = 128, o->seq = 64, o->batch = 12, o->grad_accum = 1;
    o->threads = 0 /* auto */, o->prefetch = 4;
    o->steps = 2000, o->warmup = 100, o->eval_every = 250, o->eval_batches = 20, o->qerr_every = 100;
    o->ckpt_every = 500;
    o->lr = 1e-3, o->min_lr = -1.0, o->weight_decay = 0.1, o->grad_clip = 1.0;
    o->beta1 = 0.9, o->beta2 = 0.99, o->eps = 1e-8, o->val_frac = 0.1, o->divergence_factor = 4.0;
    o->seed = QP_DEFAULT_SEED;
    o->data_seed = -1;
}

qp_gpt_config qp_train_model_config(const qp_train_opts *o, int vocab)
{
    return (qp_gpt_config){.vocab = vocab, .max_seq = o->seq, .layers = o->layers, .heads = o->heads, .dim = o->dim,
                           .arch = (qp_arch)o->arch, .kv_heads = o->kv_heads, .mlp_hidden = o->mlp_hidden};
}

/* how the options combine: what no single option's range says, and the
 * architecture's own rules (qp_model_check) */
static int check_combined(const qp_train_opts *o, char *err, size_t errlen)
{
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), -1
    if (o->dim % o->heads) BAD("--heads %d does not divide --dim %d", o->heads, o->dim);
    if (o->threads < 0 || o->threads > 1024) BAD("--threads must be auto (0) or in 1..1024, not %d", o->threads);
    if (o->eval_only && !o->resume_from[0]) BAD("--eval-only needs --resume-from CKPT");
    if (o->tokens_per_param != 0 && !(o->tokens_per_param > 0 && isfinite(o->tokens_per_param)))
        BAD("--tokens-per-param must be a positive number");
    if (o->tokens_per_param > 0 && o->steps_given) BAD("give --steps or --tokens-per-param, not both");
    if (o->val_tokens < -1) BAD("--val-tokens must be a token count or 'all'");
    if ((int64_t)o->batch * o->seq > (int64_t)1 << 28) BAD("--batch x --seq too large");
    if ((unsigned)o->device >= QP_DEVICE_COUNT || (unsigned)o->on_divergence >= QP_ON_DIVERGENCE_COUNT ||
        (unsigned)o->grad_comm >= QP_GRAD_COMM_COUNT)
        BAD("--device, --on-divergence or --grad-comm out of range");
    if ((unsigned)o->arch >= QP_ARCH_COUNT) BAD("--arch out of range");
    if (o->kv_heads < 0 || o->mlp_hidden < 0) BAD("--kv-heads and --mlp-hidden must be positive");
#undef BAD
    /* (the vocabulary is the data's: any will do here) */
    const qp_gpt_config mc = qp_train_model_config(o, 256);
    return qp_model_check(&mc, err, errlen);
}

int qp_train_options_check_ranges(const qp_train_opts *o, char *err, size_t errlen)
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

int qp_train_options_check(const qp_train_opts *o, char *err, size_t errlen)
{
    return qp_train_options_check_ranges(o, err, errlen) || check_combined(o, err, errlen) ? -1 : 0;
}
