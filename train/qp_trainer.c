/* qp_trainer.c — the run loop (see qp_trainer.h). */
#include "qp_trainer.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if QP_HAVE_OPENMP
#include <omp.h>
#endif

#include "qp_ckpt.h"
#include "qp_data.h"
#include "qp_gemm.h"
#include "qp_linear.h"
#include "qp_model.h"
#include "qp_optim.h"
#include "qp_recipe.h"
#include "qp_runlog.h"

#define QP_VERSION "0.2.0"
#define N_QGEMMS 4

volatile int qp_train_stop_requested;

void qp_train_opts_default(qp_train_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->recipe, sizeof o->recipe, "bf16");
    snprintf(o->out, sizeof o->out, "run.h5");
    snprintf(o->device, sizeof o->device, "cpu");
    snprintf(o->on_divergence, sizeof o->on_divergence, "stop");
    snprintf(o->grad_comm, sizeof o->grad_comm, "fp32");
    o->layers = 4, o->heads = 4, o->dim = 128, o->seq = 64, o->batch = 12, o->grad_accum = 1;
    o->threads = 2, o->prefetch = 4;
    o->steps = 2000, o->warmup = 100, o->eval_every = 250, o->eval_batches = 20, o->qerr_every = 100;
    o->ckpt_every = 500;
    o->lr = 1e-3, o->min_lr = -1.0, o->weight_decay = 0.1, o->grad_clip = 1.0;
    o->beta1 = 0.9, o->beta2 = 0.99, o->eps = 1e-8, o->val_frac = 0.1, o->divergence_factor = 4.0;
    o->seed = 1337;
}

int qp_train_opts_check(const qp_train_opts *o, char *err, size_t errlen)
{
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), -1
    if (!o->eval_only && !o->data[0]) BAD("--data is required");
    if (o->layers < 1 || o->layers > 1024) BAD("--layers must be in 1..1024, not %d", o->layers);
    if (o->heads < 1) BAD("--heads must be at least 1, not %d", o->heads);
    if (o->dim < 1 || o->dim > 65536) BAD("--dim must be in 1..65536, not %d", o->dim);
    if (o->dim % o->heads) BAD("--heads %d does not divide --dim %d", o->heads, o->dim);
    if (o->seq < 1 || o->seq > 1 << 20) BAD("--seq must be in 1..1048576, not %d", o->seq);
    if (o->batch < 1 || o->batch > 1 << 20) BAD("--batch must be in 1..1048576, not %d", o->batch);
    if (o->grad_accum < 1 || o->grad_accum > 1 << 16) BAD("--grad-accum must be in 1..65536, not %d", o->grad_accum);
    if (o->steps < 0) BAD("--steps must be >= 0, not %lld", (long long)o->steps);
    if (!(o->lr > 0) || !isfinite(o->lr)) BAD("--lr must be a positive number");
    if (o->warmup < 0) BAD("--warmup must be >= 0");
    if (o->eval_every < 0 || o->eval_batches < 1 || o->qerr_every < 0 || o->ckpt_every < 0)
        BAD("--eval-every, --qerr-every and --ckpt-every must be >= 0 and --eval-batches >= 1");
    if (o->threads < 1 || o->threads > 1024) BAD("--threads must be in 1..1024, not %d", o->threads);
    if (o->prefetch < 0 || o->prefetch > 1024) BAD("--prefetch must be in 0..1024, not %d", o->prefetch);
    if (!(o->val_frac > 0 && o->val_frac < 1)) BAD("--val-frac must be in (0, 1)");
    if (!isfinite(o->min_lr)) BAD("--min-lr must be a finite number");
    if (!(o->weight_decay >= 0) || !(o->grad_clip >= 0) || !isfinite(o->weight_decay) || !isfinite(o->grad_clip) ||
        !(o->divergence_factor > 1))
        BAD("--weight-decay and --grad-clip must be >= 0, --divergence-factor > 1");
    if (o->eval_only && !o->resume_from[0]) BAD("--eval-only needs --resume-from CKPT");
    if ((int64_t)o->batch * o->seq > (int64_t)1 << 28) BAD("--batch x --seq too large");
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda")) BAD("--device must be cpu or cuda, not '%s'", o->device);
    if (strcmp(o->on_divergence, "stop") && strcmp(o->on_divergence, "skip-step") && strcmp(o->on_divergence, "rollback"))
        BAD("--on-divergence must be stop, skip-step or rollback, not '%s'", o->on_divergence);
    if (strcmp(o->grad_comm, "fp32") && strcmp(o->grad_comm, "bf16") && strcmp(o->grad_comm, "fp8"))
        BAD("--grad-comm must be fp32, bf16 or fp8, not '%s'", o->grad_comm);
#undef BAD
    return 0;
}

void qp_ckpt_path_for(const char *run_path, char *dst, size_t len)
{
    const size_t n = strlen(run_path);
    if (n > 3 && strcmp(run_path + n - 3, ".h5") == 0)
        snprintf(dst, len, "%.*s.ckpt.h5", (int)(n - 3), run_path);
    else
        snprintf(dst, len, "%s.ckpt.h5", run_path);
}

typedef struct {
    qp_train_opts o;
    qp_dataset *data;
    qp_recipe recipe;
    qp_gemm *gemm;
    qp_linear *lin;
    qp_gpt model;
    int model_ok;
    float *adam_m, *adam_v;
    qp_runlog *log;
    char ckpt_path[1100];
    int64_t step;        /* the next optimizer step to run */
    double best_loss;    /* running minimum of the training loss */
    int32_t *eval_in, *eval_tg;
    char log_err[256];   /* first failure of a record callback */
    int64_t n_qerr_rows;
} run;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void on_event(const qp_event_row *row, void *user)
{
    run *r = user;
    char e[256];
    if (r->log && qp_runlog_event(r->log, row, e, sizeof e) && !r->log_err[0]) snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

static void on_qerr(const qp_qerr_row *row, void *user)
{
    run *r = user;
    char e[256];
    r->n_qerr_rows++;
    if (r->log && qp_runlog_qerr(r->log, row, e, sizeof e) && !r->log_err[0]) snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---- checkpoints ---------------------------------------------------------- */

#define N_STATES(L) ((L) * N_QGEMMS * QP_OPND_COUNT)
#define STATE_COLS 15 /* scale, last scale, ring position, count, updates, 4 event counts, 2 EMAs x 3 floats */

static qp_scaling_state *state_at(run *r, int i)
{
    const int o = i % QP_OPND_COUNT, g = (i / QP_OPND_COUNT) % N_QGEMMS, layer = i / QP_OPND_COUNT / N_QGEMMS;
    return qp_linear_scaling(r->lin, layer, (qp_gemm_id)g, (qp_operand)o);
}

/* Doubles travel as three floats whose sum restores them exactly. */
static void split3(double x, float f[3])
{
    f[0] = (float)x;
    const double r1 = x - f[0];
    f[1] = (float)r1;
    f[2] = (float)(r1 - f[1]);
}

static int write_checkpoint(run *r, char *err, size_t errlen)
{
    const int L = r->o.layers, ns = N_STATES(L), H = r->recipe.history_len;
    int ndim[QP_GPT_NPARAMS];
    int64_t sizes[QP_GPT_NPARAMS], shape[QP_GPT_NPARAMS][3];
    qp_gpt_param_shapes(&r->model.cfg, sizes, ndim, shape);
    float *hist = calloc((size_t)ns * H, sizeof(float)), *st = calloc((size_t)ns * STATE_COLS, sizeof(float));
    char names[3][QP_GPT_NPARAMS][64];
    qp_ckpt_tensor t[3 * QP_GPT_NPARAMS + 2];
    int nt = 0;
    if (!hist || !st) {
        free(hist), free(st);
        snprintf(err, errlen, "out of memory writing a checkpoint");
        return -1;
    }
    const float *bases[3] = {r->model.params_memory, r->adam_m, r->adam_v};
    const char *groups[3] = {"params", "adam_m", "adam_v"};
    for (int k = 0; k < 3; k++) {
        const float *p = bases[k];
        for (int i = 0; i < QP_GPT_NPARAMS; i++) {
            snprintf(names[k][i], sizeof names[k][i], "%s/%s", groups[k], qp_gpt_param_names[i]);
            t[nt] = (qp_ckpt_tensor){names[k][i], p, ndim[i], {shape[i][0], shape[i][1], shape[i][2], 0}};
            nt++;
            p += sizes[i];
        }
    }
    for (int i = 0; i < ns; i++) {
        const qp_scaling_state *s = state_at(r, i);
        if (s->amax_history) memcpy(hist + (int64_t)i * H, s->amax_history, (size_t)H * sizeof(float));
        float *row = st + (int64_t)i * STATE_COLS;
        row[0] = s->scale, row[1] = s->last_scale, row[2] = (float)s->hist_pos, row[3] = (float)s->hist_count;
        row[4] = (float)s->n_updates;
        for (int k = 0; k < QP_EV_COUNT; k++) row[5 + k] = (float)s->n_events[k];
        split3(s->underflow_ema, row + 9);
        split3(s->overflow_ema, row + 12);
    }
    t[nt++] = (qp_ckpt_tensor){"scaling/amax_history", hist, 2, {ns, H, 0, 0}};
    t[nt++] = (qp_ckpt_tensor){"scaling/state", st, 2, {ns, STATE_COLS, 0, 0}};
    int64_t best_bits;
    memcpy(&best_bits, &r->best_loss, sizeof best_bits);
    const qp_ckpt_attr attrs[] = {
        {"format", 1, 0, "qprec-checkpoint-1"}, {"step", 0, r->step, NULL},
        {"seed", 0, (int64_t)r->o.seed, NULL},  {"layers", 0, L, NULL},
        {"heads", 0, r->o.heads, NULL},         {"dim", 0, r->o.dim, NULL},
        {"seq", 0, r->o.seq, NULL},             {"vocab", 0, r->model.cfg.vocab, NULL},
        {"batch", 0, r->o.batch, NULL},         {"grad_accum", 0, r->o.grad_accum, NULL},
        {"recipe", 1, 0, r->recipe.spec},       {"best_loss_bits", 0, best_bits, NULL},
        {"history_len", 0, H, NULL}};
    const int rc = qp_ckpt_write(r->ckpt_path, t, nt, attrs, (int)(sizeof attrs / sizeof attrs[0]), err, errlen);
    free(hist), free(st);
    return rc;
}

static int read_i64(qp_ckpt *c, const char *name, int64_t *v, char *err, size_t errlen)
{
    return qp_ckpt_attr_i64(c, name, v, err, errlen);
}

/* Restore everything a bit-identical continuation needs. */
static int load_checkpoint(run *r, qp_ckpt *c, int with_optimizer, char *err, size_t errlen)
{
    int64_t sizes[QP_GPT_NPARAMS];
    qp_gpt_param_shapes(&r->model.cfg, sizes, NULL, NULL);
    float *bases[3] = {r->model.params_memory, r->adam_m, r->adam_v};
    const char *groups[3] = {"params", "adam_m", "adam_v"};
    for (int k = 0; k < (with_optimizer ? 3 : 1); k++) {
        float *p = bases[k];
        for (int i = 0; i < QP_GPT_NPARAMS; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s/%s", groups[k], qp_gpt_param_names[i]);
            if (qp_ckpt_read(c, name, p, sizes[i], err, errlen)) return -1;
            p += sizes[i];
        }
    }
    if (!with_optimizer) return 0;
    int64_t step, best_bits, H;
    if (read_i64(c, "step", &step, err, errlen) || read_i64(c, "best_loss_bits", &best_bits, err, errlen) ||
        read_i64(c, "history_len", &H, err, errlen))
        return -1;
    if (H != r->recipe.history_len) {
        snprintf(err, errlen, "checkpoint has an amax history of %lld, this run %d", (long long)H, r->recipe.history_len);
        return -1;
    }
    const int ns = N_STATES(r->o.layers);
    float *hist = malloc((size_t)ns * H * sizeof(float)), *st = malloc((size_t)ns * STATE_COLS * sizeof(float));
    if (!hist || !st || qp_ckpt_read(c, "scaling/amax_history", hist, ns * H, err, errlen) ||
        qp_ckpt_read(c, "scaling/state", st, ns * STATE_COLS, err, errlen)) {
        free(hist), free(st);
        return -1;
    }
    for (int i = 0; i < ns; i++) {
        qp_scaling_state *s = state_at(r, i);
        if (s->amax_history) memcpy(s->amax_history, hist + (int64_t)i * H, (size_t)H * sizeof(float));
        const float *row = st + (int64_t)i * STATE_COLS;
        s->scale = row[0], s->last_scale = row[1], s->hist_pos = (int)row[2], s->hist_count = (int)row[3];
        s->n_updates = (int64_t)row[4];
        for (int k = 0; k < QP_EV_COUNT; k++) s->n_events[k] = (int64_t)row[5 + k];
        s->underflow_ema = (double)row[9] + (double)row[10] + (double)row[11];
        s->overflow_ema = (double)row[12] + (double)row[13] + (double)row[14];
    }
    free(hist), free(st);
    r->step = step;
    memcpy(&r->best_loss, &best_bits, sizeof best_bits);
    return 0;
}

/* ---- set-up ------------------------------------------------------------------ */

static void free_run(run *r)
{
    char e[256];
    if (r->log) qp_runlog_close(r->log, e, sizeof e);
    qp_linear_destroy(r->lin);
    qp_gemm_destroy(r->gemm);
    if (r->model_ok) qp_gpt_free(&r->model);
    qp_dataset_close(r->data);
    free(r->adam_m), free(r->adam_v), free(r->eval_in), free(r->eval_tg);
}

static int create_runlog(run *r, const char *host, char *err, size_t errlen)
{
    char v[48][160];
    int n = 0;
    qp_kv kv[48];
#define KV(k, ...) (snprintf(v[n], sizeof v[n], __VA_ARGS__), kv[n] = (qp_kv){k, v[n]}, n++)
    char desc[320];
    qp_recipe_describe(&r->recipe, r->o.layers, desc, sizeof desc);
    uint64_t h = fnv1a(r->model.params_memory, (size_t)r->model.num_params * sizeof(float), 1469598103934665603ull);
    KV("version", "%s", QP_VERSION);
    KV("host", "%s", host);
    KV("recipe", "%s", r->recipe.spec);
    kv[n++] = (qp_kv){"data", r->o.data}; /* paths can be long: no copy */
    KV("data_kind", "%s", r->data ? qp_dataset_kind(r->data) : "none");
    KV("seed", "%llu", (unsigned long long)r->o.seed);
    KV("layers", "%d", r->o.layers);
    KV("heads", "%d", r->o.heads);
    KV("dim", "%d", r->o.dim);
    KV("seq", "%d", r->o.seq);
    KV("vocab", "%d", r->model.cfg.vocab);
    KV("batch", "%d", r->o.batch);
    KV("grad_accum", "%d", r->o.grad_accum);
    KV("steps", "%lld", (long long)r->o.steps);
    KV("lr", "%.9g", r->o.lr);
    KV("min_lr", "%.9g", r->o.min_lr);
    KV("warmup", "%lld", (long long)r->o.warmup);
    KV("weight_decay", "%.9g", r->o.weight_decay);
    KV("grad_clip", "%.9g", r->o.grad_clip);
    KV("eval_every", "%lld", (long long)r->o.eval_every);
    KV("eval_batches", "%lld", (long long)r->o.eval_batches);
    KV("qerr_every", "%lld", (long long)r->o.qerr_every);
    KV("threads", "%d", r->o.threads);
    KV("prefetch", "%d", r->o.prefetch);
    KV("num_params", "%lld", (long long)r->model.num_params);
    KV("init_param_hash", "%016llx", (unsigned long long)h);
    KV("gemm_bf16", "%s", qp_gemm_has_bf16(r->gemm) ? "onednn-bf16" : "fp32-fallback");
    KV("gemm_impl_f32", "%s", qp_gemm_impl_f32(r->gemm));
    KV("gemm_impl_bf16", "%s", qp_gemm_impl_bf16(r->gemm));
    KV("simd", "%s", qp_simd_name());
    KV("model_kernels", "%s", qp_gpt_kernel_isa());
    KV("mode", "%s", r->o.eval_only ? "eval-only" : "train");
    KV("recipe_description", "%.150s", desc);
#undef KV
    r->log = qp_runlog_create(r->o.out, kv, n, err, errlen);
    return r->log ? 0 : -1;
}

static int evaluate(run *r, double *val_loss, char *err, size_t errlen)
{
    const int B = r->o.batch, T = r->o.seq;
    double sum = 0.0;
    for (int64_t i = 0; i < r->o.eval_batches; i++) {
        if (qp_dataset_batch(r->data, QP_SPLIT_VAL, r->o.seed, i, B, T, r->eval_in, r->eval_tg)) {
            snprintf(err, errlen, "validation split too short for --seq %d", T);
            return -1;
        }
        if (qp_gpt_forward(&r->model, r->lin, r->eval_in, r->eval_tg, B, T)) {
            snprintf(err, errlen, "forward failed: %s", qp_linear_error(r->lin));
            return -1;
        }
        sum += r->model.mean_loss;
    }
    *val_loss = sum / (double)r->o.eval_batches;
    return 0;
}

static void fmt_eta(double ms, char *buf, size_t n)
{
    const long s = (long)(ms / 1000.0);
    if (s >= 3600) snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
}

int qp_train_run(const qp_train_opts *opts, char *err, size_t errlen)
{
    run R, *r = &R;
    memset(r, 0, sizeof R);
    r->o = *opts;
    if (r->o.min_lr < 0) r->o.min_lr = r->o.lr / 10.0;
    if (qp_train_opts_check(&r->o, err, errlen)) return QP_EXIT_BAD_INPUT;
    if (qp_recipe_parse(r->o.recipe, &r->recipe, err, errlen)) return QP_EXIT_BAD_INPUT;
#if QP_HAVE_OPENMP
    omp_set_num_threads(r->o.threads);
#endif
    int rc = QP_EXIT_BAD_INPUT;
    qp_ckpt *from = NULL;
    if (r->o.eval_only) {
        /* The model's shape comes from the checkpoint. */
        from = qp_ckpt_open(r->o.resume_from, err, errlen);
        if (!from) goto done;
        int64_t v[6];
        const char *keys[6] = {"layers", "heads", "dim", "seq", "vocab", "seed"};
        for (int i = 0; i < 6; i++)
            if (qp_ckpt_attr_i64(from, keys[i], &v[i], err, errlen)) goto done;
        for (int i = 0; i < 4; i++)
            if (v[i] < 1 || v[i] > 1 << 20) {
                snprintf(err, errlen, "%s: attribute '%s' is %lld, not a model size", r->o.resume_from, keys[i],
                         (long long)v[i]);
                goto done;
            }
        r->o.layers = (int)v[0], r->o.heads = (int)v[1], r->o.dim = (int)v[2], r->o.seq = (int)v[3];
        if (qp_train_opts_check(&r->o, err, errlen)) goto done; /* the checkpoint's shape, judged like options */
        if (!r->o.data[0]) {
            snprintf(err, errlen, "--eval-only needs --data for the validation split");
            goto done;
        }
    }
    r->data = qp_dataset_open(r->o.data, r->o.val_frac, err, errlen);
    if (!r->data) goto done;
    for (int split = 0; split < 2; split++)
        if (qp_dataset_tokens(r->data, split) < (int64_t)r->o.seq + 1) {
            snprintf(err, errlen, "--seq %d is longer than the %s split of %s (%lld tokens)", r->o.seq,
                     split ? "validation" : "training", r->o.data, (long long)qp_dataset_tokens(r->data, split));
            goto done;
        }
    const int B = r->o.batch, T = r->o.seq;
    int first, last;
    qp_recipe_bf16_blocks(&r->recipe, r->o.layers, &first, &last);
    if (r->recipe.plan.rht_wgrad && first + last < r->o.layers && ((int64_t)B * T) % 16) {
        snprintf(err, errlen, "recipe %s applies the 16-point Hadamard transform over batch x seq tokens: "
                 "--batch x --seq must be a multiple of 16", r->recipe.spec);
        goto done;
    }
    rc = QP_EXIT_RUNTIME;
    r->gemm = qp_gemm_create(err, errlen);
    if (!r->gemm) goto done;
    qp_gpt_config mc = {qp_dataset_vocab(r->data), T, r->o.layers, r->o.heads, r->o.dim};
    if (r->o.eval_only) {
        int64_t vocab;
        if (qp_ckpt_attr_i64(from, "vocab", &vocab, err, errlen)) goto done;
        if (vocab != mc.vocab) {
            snprintf(err, errlen, "checkpoint vocabulary %lld does not match the data's %d", (long long)vocab, mc.vocab);
            rc = QP_EXIT_BAD_INPUT;
            goto done;
        }
    }
    if (qp_gpt_init(&r->model, &mc, B, T, r->o.seed, err, errlen)) goto done;
    r->model_ok = 1;
    const qp_linear_cfg lc = {r->o.layers, qp_gpt_max_gemm_elems(&mc, B, T), r->o.seed, &r->recipe, r->gemm,
                              on_event, on_qerr, r};
    r->lin = qp_linear_create(&lc, err, errlen);
    r->adam_m = calloc((size_t)r->model.num_params, sizeof(float));
    r->adam_v = calloc((size_t)r->model.num_params, sizeof(float));
    r->eval_in = malloc((size_t)B * T * sizeof(int32_t));
    r->eval_tg = malloc((size_t)B * T * sizeof(int32_t));
    if (!r->lin || !r->adam_m || !r->adam_v || !r->eval_in || !r->eval_tg) {
        if (r->lin) snprintf(err, errlen, "out of memory");
        goto done;
    }
    r->best_loss = INFINITY;
    qp_ckpt_path_for(r->o.out, r->ckpt_path, sizeof r->ckpt_path);
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);

    if (r->o.eval_only) {
        if (load_checkpoint(r, from, 0, err, errlen)) goto done;
        if (create_runlog(r, host, err, errlen)) {
            rc = QP_EXIT_BAD_INPUT;
            goto done;
        }
        double val;
        /* Delayed scaling needs an amax history: one calibration pass first. */
        if (r->recipe.plan.scaling == QP_SCALING_DELAYED) {
            qp_linear_begin_step(r->lin, 0, 0);
            if (evaluate(r, &val, err, errlen)) goto done;
        }
        qp_linear_set_frozen(r->lin, 1);
        qp_linear_begin_step(r->lin, 0, 1);
        if (evaluate(r, &val, err, errlen)) goto done;
        if (qp_runlog_eval(r->log, 0, val, err, errlen) ||
            qp_runlog_status(r->log, 0, "done", "eval-only", err, errlen))
            goto done;
        printf("val_loss %.6f (recipe %s, checkpoint %s)\n", val, r->recipe.spec, r->o.resume_from);
        rc = QP_EXIT_OK;
        goto done;
    }

    /* Resume if a checkpoint exists; otherwise start from scratch. */
    const char *used = NULL;
    char cerr[512] = "";
    if (r->o.resume) from = qp_ckpt_open_latest(r->ckpt_path, &used, cerr, sizeof cerr);
    if (from) {
        const char *keys[] = {"layers", "heads", "dim", "seq", "vocab", "batch", "grad_accum", "seed"};
        const int64_t want[] = {r->o.layers, r->o.heads, r->o.dim, T, mc.vocab, B, r->o.grad_accum, (int64_t)r->o.seed};
        for (int i = 0; i < 8; i++) {
            int64_t v;
            if (qp_ckpt_attr_i64(from, keys[i], &v, err, errlen)) goto done;
            if (v != want[i]) {
                snprintf(err, errlen, "--resume: checkpoint %s has %s %lld, this run %lld", used, keys[i],
                         (long long)v, (long long)want[i]);
                rc = QP_EXIT_BAD_INPUT;
                goto done;
            }
        }
        char rec[160];
        if (qp_ckpt_attr_str(from, "recipe", rec, sizeof rec, err, errlen)) goto done;
        if (strcmp(rec, r->recipe.spec) != 0) {
            snprintf(err, errlen, "--resume: checkpoint %s was trained with recipe %s, not %s", used, rec,
                     r->recipe.spec);
            rc = QP_EXIT_BAD_INPUT;
            goto done;
        }
        if (load_checkpoint(r, from, 1, err, errlen)) goto done;
        r->log = qp_runlog_resume(r->o.out, r->step - 1, err, errlen);
        if (!r->log) goto done;
        if (!r->o.quiet) fprintf(stderr, "qtrain: resuming from %s at step %lld\n", used, (long long)r->step);
    } else {
        if (create_runlog(r, host, err, errlen)) {
            rc = QP_EXIT_BAD_INPUT;
            goto done;
        }
    }
    qp_ckpt_close(from);
    from = NULL;

    const int accum = r->o.grad_accum;
    qp_loader *loader = qp_loader_create(r->data, QP_SPLIT_TRAIN, r->o.seed, B, T, r->o.prefetch, r->step * accum,
                                         err, errlen);
    if (!loader) goto done;
    const qp_optim_cfg oc = {r->o.lr, r->o.min_lr, r->o.beta1, r->o.beta2, r->o.eps, r->o.weight_decay,
                             r->o.grad_clip, r->o.warmup, r->o.steps};
    int64_t sizes[QP_GPT_NPARAMS];
    int decays[QP_GPT_NPARAMS];
    qp_gpt_param_shapes(&mc, sizes, NULL, NULL);
    for (int i = 0; i < QP_GPT_NPARAMS; i++) decays[i] = qp_gpt_param_decays(i);
    if (qp_runlog_status(r->log, r->step, "running", "", err, errlen)) goto loop_done;
    const double t_start = now_ms();
    const int64_t first_step = r->step;
    rc = QP_EXIT_OK;
    for (; r->step < r->o.steps; r->step++) {
        const int64_t step = r->step;
        if (r->o.stop_after > 0 && step >= r->o.stop_after) {
            qp_runlog_flush(r->log, err, errlen);
            goto loop_done; /* as if killed here: no status, no checkpoint */
        }
        if (qp_train_stop_requested) {
            char e2[256];
            qp_runlog_status(r->log, step, "stopped", "signal", e2, sizeof e2);
            snprintf(err, errlen, "stopped by a signal before step %lld; --resume continues from %s", (long long)step,
                     r->ckpt_path);
            rc = QP_EXIT_STOPPED;
            goto loop_done;
        }
        const double t0 = now_ms();
        const int log_qerr = r->o.qerr_every > 0 && step % r->o.qerr_every == 0;
        qp_linear_begin_step(r->lin, step, log_qerr);
        qp_gpt_zero_grad(&r->model);
        double loss = 0.0, wait_ms = 0.0;
        uint64_t bh = 1469598103934665603ull;
        for (int micro = 0; micro < accum; micro++) {
            const int32_t *in, *tg;
            int64_t index;
            double w;
            if (qp_loader_next(loader, &in, &tg, &index, &w)) {
                snprintf(err, errlen, "data loader failed");
                rc = QP_EXIT_RUNTIME;
                goto loop_done;
            }
            wait_ms += w;
            qp_linear_begin_micro(r->lin, micro);
            bh = fnv1a(&(uint64_t){qp_batch_hash(in, (int64_t)B * T)}, 8, bh);
            if (qp_gpt_forward(&r->model, r->lin, in, tg, B, T) ||
                qp_gpt_backward(&r->model, r->lin, in, tg, 1.0f / (float)accum)) {
                snprintf(err, errlen, "step %lld: %s", (long long)step, qp_linear_error(r->lin));
                rc = QP_EXIT_RUNTIME;
                goto loop_done;
            }
            loss += r->model.mean_loss / accum;
        }
        const double norm = qp_grad_norm(r->model.grads_memory, r->model.num_params);
        const int finite = isfinite(loss) && isfinite(norm);
        const int blew_up = finite && step >= r->o.warmup && loss > r->best_loss * r->o.divergence_factor;
        if (!finite || blew_up) {
            const char *reason = !finite ? "nonfinite" : "loss_spike";
            qp_runlog_divergence(r->log, step, loss, reason, "stop", err, errlen);
            qp_runlog_status(r->log, step, "diverged", reason, err, errlen);
            qp_runlog_flush(r->log, err, errlen);
            if (access(r->ckpt_path, F_OK) == 0)
                snprintf(err, errlen, "diverged at step %lld (loss %g, %s); last good checkpoint kept: %s",
                         (long long)step, loss, reason, r->ckpt_path);
            else
                snprintf(err, errlen, "diverged at step %lld (loss %g, %s), before the first checkpoint",
                         (long long)step, loss, reason);
            rc = QP_EXIT_DIVERGED;
            goto loop_done;
        }
        if (loss < r->best_loss) r->best_loss = loss;
        const float clip = (r->o.grad_clip > 0 && norm > r->o.grad_clip) ? (float)(r->o.grad_clip / norm) : 1.0f;
        const double lr = qp_lr_at(&oc, step);
        qp_adamw_step(&oc, r->model.params_memory, r->model.grads_memory, r->adam_m, r->adam_v, sizes, decays,
                      QP_GPT_NPARAMS, step + 1, lr, clip);
        const double step_ms = now_ms() - t0;
        const qp_train_row row = {step, loss, lr, norm, step_ms, wait_ms, (double)B * T * accum / (step_ms / 1e3), bh,
                                  0.0, NAN, NAN, NAN};
        if (qp_runlog_train(r->log, &row, err, errlen)) {
            rc = QP_EXIT_RUNTIME;
            goto loop_done;
        }
        if (r->log_err[0]) {
            snprintf(err, errlen, "%s", r->log_err);
            rc = QP_EXIT_RUNTIME;
            goto loop_done;
        }
        const int last_step = step + 1 == r->o.steps;
        double val = NAN;
        if ((r->o.eval_every > 0 && (step + 1) % r->o.eval_every == 0) || last_step) {
            qp_linear_set_frozen(r->lin, 1);
            qp_linear_begin_step(r->lin, step, 0);
            const int erc = evaluate(r, &val, err, errlen);
            qp_linear_set_frozen(r->lin, 0);
            if (erc || qp_runlog_eval(r->log, step, val, err, errlen)) {
                rc = QP_EXIT_RUNTIME;
                goto loop_done;
            }
        }
        if (!isnan(val) || log_qerr || step % 50 == 0) {
            if (qp_runlog_flush(r->log, err, errlen)) {
                rc = QP_EXIT_RUNTIME;
                goto loop_done;
            }
        }
        if ((r->o.ckpt_every > 0 && (step + 1) % r->o.ckpt_every == 0) || last_step) {
            r->step = step + 1;
            const int crc = write_checkpoint(r, err, errlen);
            r->step = step;
            if (crc) {
                char e2[256];
                qp_runlog_status(r->log, step, "failed", err, e2, sizeof e2);
                rc = QP_EXIT_RUNTIME;
                goto loop_done;
            }
        }
        if (!r->o.quiet) {
            const double el = now_ms() - t_start, per = el / (double)(step + 1 - first_step);
            char eta[32];
            fmt_eta(per * (double)(r->o.steps - step - 1), eta, sizeof eta);
            fprintf(stderr, "\rstep %6lld/%lld | loss %.4f | %7.1f ms/step | %8.0f tok/s | ETA %s   ",
                    (long long)step + 1, (long long)r->o.steps, loss, step_ms, row.tokens_per_s, eta);
            if (!isnan(val)) fprintf(stderr, "\n  step %lld: val_loss %.4f\n", (long long)step + 1, val);
        }
    }
    if (qp_runlog_status(r->log, r->step, "done", "", err, errlen)) rc = QP_EXIT_RUNTIME;
loop_done:
    qp_loader_destroy(loader);
    if (!r->o.quiet) fprintf(stderr, "\n");
done:
    qp_ckpt_close(from);
    free_run(r);
    return rc;
}
