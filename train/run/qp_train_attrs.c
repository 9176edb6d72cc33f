/* qp_train_attrs.c — the run file's root attributes: the whole configuration
 * of a run (docs/runfile.md), as one table. A row is a key and where its
 * value comes from: an option of qp_train_opts (by type and offset), or a
 * function of the run (the recipe, the model, the machine, the backend). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_format.h"
#include "qp_omp.h"
#include "qp_quant.h"
#include "qp_train_state.h"
#include "qp_version.h"

typedef enum { A_INT, A_I64, A_U64, A_F64, A_STR, A_BOOL, A_FN, A_TEXT } attr_kind;

typedef void (*attr_fn)(const qp_train_state *r, const char *host, char *buf, size_t len);
/* a value of any length, malloc'd (NULL: out of memory) */
typedef char *(*attr_text_fn)(const qp_train_state *r);

typedef struct {
    const char *key;
    attr_kind kind;
    size_t off;       /* in qp_train_opts, for the option kinds */
    attr_fn fn;       /* A_FN */
    attr_text_fn text; /* A_TEXT */
} attr;

#define OPT(key, kind, field) {key, kind, offsetof(qp_train_opts, field), NULL, NULL}
#define FN(key, fn) {key, A_FN, 0, fn, NULL}
#define TEXT(key, fn) {key, A_TEXT, 0, NULL, fn}

static void a_version(const qp_train_state *r, const char *h, char *b, size_t n) { (void)r, (void)h, snprintf(b, n, "%s", qp_version()); }
static void a_host(const qp_train_state *r, const char *h, char *b, size_t n) { (void)r, snprintf(b, n, "%s", h); }
static void a_recipe(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%s", r->recipe.spec); }
static void a_data_kind(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", r->data ? qp_dataset_kind(r->data) : "none");
}
static void a_vocab(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%d", r->model.cfg.vocab); }
static void a_num_params(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%lld", (long long)r->model.num_params);
}
static void a_init_hash(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h;
    const uint64_t x = qp_fnv1a(r->model.params_memory, (size_t)r->model.num_params * sizeof(float), 1469598103934665603ull);
    snprintf(b, n, "%016llx", (unsigned long long)x);
}
/* sizing by compute (qp_size.h; the trainer's size_run) */
static int64_t tokens_total(const qp_train_state *r) { return r->o.steps * r->o.batch * r->o.seq * r->o.grad_accum; }
static void a_nonembedding(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%lld", (long long)r->nonembedding);
}
static void a_tokens_total(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%lld", (long long)tokens_total(r));
}
static void a_tokens_per_param(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%.6g", (double)tokens_total(r) / (double)r->nonembedding);
}
static void a_epochs(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%.6g", r->epochs); }
static void a_data_seed(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%llu", (unsigned long long)r->data_seed);
}
static void a_val_tokens(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%lld", (long long)r->val_batches * r->o.batch * r->o.seq);
}
static void a_gemm_bf16(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", qp_gemm_bf16_kernel(r->gemm));
}
static void a_gemm_f32(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%s", qp_gemm_impl_f32(r->gemm)); }
static void a_gemm_bf16_impl(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", qp_gemm_impl_bf16(r->gemm));
}
static void a_simd(const qp_train_state *r, const char *h, char *b, size_t n) { (void)r, (void)h, snprintf(b, n, "%s", qp_simd_name()); }
static void a_kernels(const qp_train_state *r, const char *h, char *b, size_t n) { (void)r, (void)h, snprintf(b, n, "%s", qp_gpt_kernel_isa()); }
static void a_threads_choice(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", r->threads_auto ? "auto (CPUs idle at start)" : "--threads");
}
static void a_omp_wait(const qp_train_state *r, const char *h, char *b, size_t n) { (void)r, (void)h, qp_omp_describe(b, n); }
static void a_parallel_min(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)r, (void)h, snprintf(b, n, "%lld", (long long)qp_parallel_min());
}
static void a_arch(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", qp_arch_names[r->model.cfg.arch]);
}
/* the Llama's resolved shape (0 for the GPT, which has neither) */
static void a_kv_heads(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%d", r->model.cfg.kv_heads); }
static void a_mlp_hidden(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%d", r->model.cfg.mlp_hidden);
}
static void a_mode(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", r->o.eval_only ? "eval-only" : "train");
}
static void a_on_divergence(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", qp_on_divergence_names[r->o.on_divergence]);
}
static void a_recipe_description(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h;
    char desc[400];
    qp_recipe_describe(&r->recipe, r->plans, r->o.layers, qp_model_gemm_mask(&r->model.cfg), desc, sizeof desc);
    snprintf(b, n, "%.150s", desc);
}
/* the canonical expanded recipe (docs/recipes.md): one rule per pass x operand x block group */
static char *a_recipe_plan(const qp_train_state *r)
{
    return qp_recipe_explain_text(&r->recipe, r->plans, r->o.layers, qp_model_gemm_mask(&r->model.cfg));
}
static void a_world(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%d", r->world); }
static void a_grad_comm(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", qp_grad_comm_names[r->o.grad_comm]);
}
static void a_grad_comm_bytes(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%lld", (long long)(r->gx ? qp_grad_exchange_bytes(r->gx) : 0));
}
static void a_device(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", r->be.name ? r->be.name : qp_device_names[r->o.device]);
}
static void a_device_name(const qp_train_state *r, const char *h, char *b, size_t n) { (void)h, snprintf(b, n, "%s", r->be.device_name); }
static void a_gemm_path(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h, snprintf(b, n, "%s", r->be.gemm_path ? r->be.gemm_path : "cpu");
}
static void a_power(const qp_train_state *r, const char *h, char *b, size_t n)
{
    (void)h;
    if (!r->nvml) snprintf(b, n, "unavailable: %.130s", r->power_why);
    else snprintf(b, n, "nvml, energy %s", qp_nvml_energy_counter(r->nvml) ? "from the driver's counter"
                                                                             : "integrated from 20 ms power samples");
}

#define N_ATTRS 60
static const attr ATTRS[] = {
    FN("version", a_version),
    FN("host", a_host),
    FN("recipe", a_recipe),
    FN("arch", a_arch),
    FN("kv_heads", a_kv_heads),
    FN("mlp_hidden", a_mlp_hidden),
    OPT("data", A_STR, data),
    FN("data_kind", a_data_kind),
    OPT("seed", A_U64, seed),
    OPT("layers", A_INT, layers),
    OPT("heads", A_INT, heads),
    OPT("dim", A_INT, dim),
    OPT("seq", A_INT, seq),
    FN("vocab", a_vocab),
    OPT("batch", A_INT, batch),
    OPT("grad_accum", A_INT, grad_accum),
    OPT("steps", A_I64, steps),
    OPT("lr", A_F64, lr),
    OPT("min_lr", A_F64, min_lr),
    OPT("warmup", A_I64, warmup),
    OPT("weight_decay", A_F64, weight_decay),
    OPT("grad_clip", A_F64, grad_clip),
    OPT("eval_every", A_I64, eval_every),
    OPT("eval_batches", A_I64, eval_batches),
    OPT("qerr_every", A_I64, qerr_every),
    OPT("threads", A_INT, threads),
    FN("threads_choice", a_threads_choice),
    FN("omp_wait", a_omp_wait),
    FN("parallel_min", a_parallel_min),
    OPT("prefetch", A_INT, prefetch),
    OPT("requantize", A_BOOL, requantize),
    FN("num_params", a_num_params),
    FN("params_nonembedding", a_nonembedding),
    FN("tokens_total", a_tokens_total),
    FN("tokens_per_param", a_tokens_per_param),
    OPT("tokens_per_param_asked", A_F64, tokens_per_param), /* 0: sized by --steps */
    FN("epochs", a_epochs),
    FN("data_seed", a_data_seed),
    FN("val_tokens", a_val_tokens),
    FN("init_param_hash", a_init_hash),
    FN("gemm_bf16", a_gemm_bf16),
    FN("gemm_impl_f32", a_gemm_f32),
    FN("gemm_impl_bf16", a_gemm_bf16_impl),
    FN("simd", a_simd),
    FN("model_kernels", a_kernels),
    FN("mode", a_mode),
    FN("on_divergence", a_on_divergence),
    OPT("inject", A_STR, inject),
    FN("recipe_description", a_recipe_description),
    TEXT("recipe_plan", a_recipe_plan),
    FN("world_size", a_world),
    FN("grad_comm", a_grad_comm),
    OPT("grad_comm_ef", A_BOOL, grad_comm_ef),
    FN("grad_comm_bytes", a_grad_comm_bytes),
    FN("device", a_device),
    FN("device_name", a_device_name),
    FN("gemm_path", a_gemm_path),
    FN("power", a_power),
    OPT("ckpt_every", A_I64, ckpt_every),
    OPT("val_frac", A_F64, val_frac),
};
_Static_assert(sizeof ATTRS / sizeof ATTRS[0] == N_ATTRS, "N_ATTRS counts the table");

static void attr_value(const attr *a, const qp_train_state *r, const char *host, char *b, size_t n)
{
    const char *o = (const char *)&r->o + a->off;
    switch (a->kind) {
    case A_INT: snprintf(b, n, "%d", *(const int *)o); break;
    case A_I64: snprintf(b, n, "%lld", (long long)*(const int64_t *)o); break;
    case A_U64: snprintf(b, n, "%llu", (unsigned long long)*(const uint64_t *)o); break;
    case A_F64: snprintf(b, n, "%.9g", *(const double *)o); break;
    case A_STR: snprintf(b, n, "%s", o); break;
    case A_BOOL: snprintf(b, n, "%d", *(const bool *)o ? 1 : 0); break;
    case A_FN: a->fn(r, host, b, n); break;
    case A_TEXT: break; /* qp_train_create_runlog: no fixed buffer */
    }
}

int qp_train_create_runlog(qp_train_state *r, const char *host, char *err, size_t errlen)
{
    static char v[N_ATTRS][1100]; /* paths (data) and --recipe are the longest fixed values */
    qp_kv kv[N_ATTRS];
    char *text[N_ATTRS] = {0};
    int oom = 0;
    for (int i = 0; i < N_ATTRS; i++) {
        if (ATTRS[i].kind == A_TEXT) oom |= !(text[i] = ATTRS[i].text(r));
        else attr_value(&ATTRS[i], r, host, v[i], sizeof v[i]);
        kv[i] = (qp_kv){ATTRS[i].key, text[i] ? text[i] : v[i]};
    }
    if (oom) snprintf(err, errlen, "out of memory for the run file's attributes");
    else r->log = qp_runlog_create(r->o.out, kv, N_ATTRS, err, errlen);
    for (int i = 0; i < N_ATTRS; i++) free(text[i]);
    return r->log ? 0 : -1;
}
