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

#include "qp_dist.h"
#include "qp_format.h"
#include "qp_omp.h"
#include "qp_optim.h"
#include "qp_prof.h"
#include "qp_scaling.h"
#include "qp_size.h"
#include "qp_train_options.h"
#include "qp_train_state.h"

_Static_assert(sizeof(((qp_train_opts *)0)->recipe) == QP_RECIPE_SPEC_MAX, "--recipe holds any recipe");

volatile int qp_train_stop_requested;

int qp_train_opts_check(const qp_train_opts *o, char *err, size_t errlen)
{
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), -1
    if (!o->eval_only && !o->data[0]) BAD("--data is required");
    /* each option's own range and how they combine (qp_train_options.c:
     * qsweep checks every run of a grid with it before any starts) */
    if (qp_train_options_check(o, err, errlen)) return -1;
    const qp_gpt_config mc = qp_train_model_config(o, 256);
    qp_inject inj;
    if (qp_inject_parse(o->inject, qp_model_param_names(&mc), qp_model_nparams(&mc), &inj, err, errlen)) return -1;
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

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void dist_max(float *v, int n, void *user) { (void)user, qp_dist_max_f32(v, n); }
static void dist_sum(double *v, int n, void *user) { (void)user, qp_dist_sum_f64(v, n); }

static void on_event(const qp_event_row *row, void *user)
{
    qp_train_state *r = user;
    char e[256];
    if (qp_runlog_event(r->log, row, e, sizeof e) && !r->log_err[0]) snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

/* A block GEMM's input at a --qerr-every step: its /quant/outliers row. */
static void on_input(const qp_outlier_row *stats, void *user)
{
    qp_train_state *r = user;
    qp_outlier_row row = *stats;
    row.step = r->step;
    char e[256];
    if (qp_runlog_outlier(r->log, &row, e, sizeof e) && !r->log_err[0]) snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

static void on_qerr(const qp_qerr_row *row, void *user)
{
    qp_train_state *r = user;
    char e[256];
    r->n_qerr_rows++;
    if (qp_runlog_qerr(r->log, row, e, sizeof e) && !r->log_err[0]) snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

static void on_bscale(const qp_bscale_row *row, const int64_t *hist, int nbins, void *user)
{
    qp_train_state *r = user;
    char e[256];
    if (qp_runlog_bscale(r->log, row, hist, nbins, e, sizeof e) && !r->log_err[0])
        snprintf(r->log_err, sizeof r->log_err, "%s", e);
}

/* ---- divergence ------------------------------------------------------------ */

/* Recoveries (skip-step or rollback) in a row, without one good step between
 * them, before the trainer gives up and stops as with --on-divergence stop. */
#define QP_MAX_RECOVERIES 5 /* skip-step: 5 skipped steps in a row; rollback: 5 rollbacks with no new
                               checkpoint after a good step between them */

static int is_mode(const qp_train_state *r, qp_on_divergence m) { return r->o.on_divergence == m; }

/* A divergence at `step`: log it and act on --on-divergence. QP_EXIT_OK means
 * the run goes on without this step's update; anything else ends it (err says
 * why). */
static int handle_divergence(qp_train_state *r, int64_t step, double loss, const char *reason, char *err, size_t errlen)
{
    char e2[256], msg[300];
    const int gave_up = !is_mode(r, QP_ON_DIVERGENCE_STOP) && r->recoveries >= QP_MAX_RECOVERIES;
    /* Skipping the update cannot mend a weight that is already NaN/Inf (and
     * would let the next checkpoint save it): stop instead. */
    int bad_weights = 0;
    if (!gave_up && is_mode(r, QP_ON_DIVERGENCE_SKIP_STEP) && r->be.to_host(&r->be) == 0)
        for (int64_t i = 0; i < r->model.num_params && !bad_weights; i++) bad_weights = !isfinite(r->model.params_memory[i]);
    if (bad_weights) reason = "nonfinite_weights";
    if (!gave_up && !bad_weights && is_mode(r, QP_ON_DIVERGENCE_SKIP_STEP)) {
        if (r->scaling_snap)
            qp_train_unpack_scaling(r, r->scaling_snap,
                                    r->scaling_snap + (int64_t)QP_N_STATES(r) * qp_linear_history_len(r->lin));
        if (qp_runlog_divergence(r->log, step, loss, reason, "skip_step", err, errlen)) return QP_EXIT_RUNTIME;
        r->recoveries++;
        if (!r->o.quiet) fprintf(stderr, "\nqtrain: step %lld diverged (loss %g, %s): update skipped\n", (long long)step, loss, reason);
        return QP_EXIT_OK;
    }
    if (!gave_up && is_mode(r, QP_ON_DIVERGENCE_ROLLBACK)) {
        int64_t from = 0;
        if (qp_train_rollback(r, &from, err, errlen)) {
            qp_runlog_divergence(r->log, step, loss, reason, "stop", e2, sizeof e2);
            qp_runlog_status(r->log, step, "failed", err, e2, sizeof e2);
            return QP_EXIT_RUNTIME;
        }
        snprintf(msg, sizeof msg, "rolled back to the checkpoint of step %lld after divergence at step %lld (%s)",
                 (long long)from, (long long)step, reason);
        if (qp_runlog_divergence(r->log, step, loss, reason, "rollback", err, errlen) ||
            qp_runlog_status(r->log, step, "running", msg, err, errlen))
            return QP_EXIT_RUNTIME;
        r->recoveries++;
        if (!r->o.quiet) fprintf(stderr, "\nqtrain: step %lld diverged (loss %g): %s\n", (long long)step, loss, msg);
        return QP_EXIT_OK;
    }
    qp_runlog_divergence(r->log, step, loss, reason, "stop", e2, sizeof e2);
    char tail[64] = "";
    if (gave_up) snprintf(tail, sizeof tail, " after %d consecutive recoveries", QP_MAX_RECOVERIES);
    if (bad_weights) snprintf(tail, sizeof tail, ": skip-step cannot mend the weights, rollback can");
    qp_runlog_status(r->log, step, "diverged", gave_up ? tail + 1 : reason, e2, sizeof e2);
    qp_runlog_flush(r->log, e2, sizeof e2);
    if (access(r->ckpt_path, F_OK) == 0)
        snprintf(err, errlen, "diverged at step %lld (loss %g, %s)%s; last good checkpoint kept: %s", (long long)step,
                 loss, reason, tail, r->ckpt_path);
    else
        snprintf(err, errlen, "diverged at step %lld (loss %g, %s)%s, before the first checkpoint", (long long)step,
                 loss, reason, tail);
    return QP_EXIT_DIVERGED;
}

/* ---- set-up ------------------------------------------------------------------ */

/* Sizing by compute (qp_size.h): steps from --tokens-per-param, the epochs
 * they make of the training split (a warning past QP_MAX_EPOCHS), the data
 * seed and the fixed validation set. */
static int size_run(qp_train_state *r, char *err, size_t errlen)
{
    const int B = r->o.batch, T = r->o.seq;
    const int64_t per_step = (int64_t)B * T * r->o.grad_accum;
    const qp_gpt_config mc = qp_train_model_config(&r->o, qp_dataset_vocab(r->data));
    r->nonembedding = qp_model_nonembedding(&mc);
    r->data_seed = r->o.data_seed >= 0 ? (uint64_t)r->o.data_seed : r->o.seed;
    if (r->o.tokens_per_param > 0) {
        r->o.steps = qp_size_steps(r->o.tokens_per_param, r->nonembedding, per_step);
        if (r->o.steps < 0) {
            snprintf(err, errlen, "--tokens-per-param %g gives more than 2^40 steps", r->o.tokens_per_param);
            return QP_EXIT_BAD_INPUT;
        }
    }
    r->epochs = (double)r->o.steps * (double)per_step / (double)qp_dataset_tokens(r->data, QP_SPLIT_TRAIN);
    const int64_t avail = qp_dataset_fixed_batches(r->data, QP_SPLIT_VAL, B, T);
    int64_t want = r->o.val_tokens == -1 ? avail
                 : r->o.val_tokens > 0 ? (r->o.val_tokens + (int64_t)B * T - 1) / ((int64_t)B * T)
                                       : r->o.eval_batches;
    if (want > avail) want = avail;
    if (want < 1) {
        snprintf(err, errlen, "the validation split of %s holds no whole batch of %d x %d tokens", r->o.data, B, T + 1);
        return QP_EXIT_BAD_INPUT;
    }
    r->val_batches = want;
    return QP_EXIT_OK;
}

/* Once the run file is open (so bad input stays one line): the size of the
 * run, and the warning past QP_MAX_EPOCHS (even with --quiet). */
static void announce_size(const qp_train_state *r)
{
    if (r->rank) return;
    const int64_t tokens = r->o.steps * r->o.batch * r->o.seq * r->o.grad_accum;
    if (r->epochs > QP_MAX_EPOCHS)
        fprintf(stderr, "qtrain: warning: %lld tokens are %.2f epochs of the training split of %s (> %g): the loss "
                "measures memorization as much as learning; use a larger corpus (scripts/corpus.py) or fewer "
                "tokens\n", (long long)tokens, r->epochs, r->o.data, QP_MAX_EPOCHS);
    if (!r->o.quiet)
        fprintf(stderr, "qtrain: %lld non-embedding parameters, %lld steps, %lld tokens = %.3g tokens/parameter, "
                "%.3g epochs; validation set %lld tokens\n", (long long)r->nonembedding, (long long)r->o.steps,
                (long long)tokens, (double)tokens / (double)r->nonembedding, r->epochs,
                (long long)r->val_batches * r->o.batch * r->o.seq);
}

/* RUN.ckpt.h5 or RUN.ckpt.h5.prev is there (whole or not). */
static int ckpt_exists(const char *path)
{
    char prev[1200];
    snprintf(prev, sizeof prev, "%.1100s.prev", path);
    return access(path, F_OK) == 0 || access(prev, F_OK) == 0;
}


static void free_run(qp_train_state *r)
{
    char e[256];
    if (r->log) qp_runlog_close(r->log, e, sizeof e);
    qp_nvml_close(r->nvml);
    if (r->be.destroy) r->be.destroy(&r->be);
    qp_linear_destroy(r->lin);
    qp_gemm_destroy(r->gemm);
    if (r->model_ok) qp_gpt_free(&r->model);
    qp_dataset_close(r->data);
    free(r->adam_m), free(r->adam_v), free(r->eval_in), free(r->eval_tg), free(r->scaling_snap);
    free(r->plans);
    qp_grad_exchange_destroy(r->gx);
}

static int evaluate(qp_train_state *r, double *val_loss, char *err, size_t errlen)
{
    const int B = r->o.batch, T = r->o.seq, Bl = r->Bl;
    double sum = 0.0;
    (void)B;
    double group[QP_VAL_GROUPS] = {0};
    int64_t count[QP_VAL_GROUPS] = {0};
    for (int64_t i = 0; i < r->val_batches; i++) {
        if (qp_dataset_fixed_batch(r->data, QP_SPLIT_VAL, i, r->val_batches, B, T, r->eval_in, r->eval_tg)) {
            snprintf(err, errlen, "validation split too short for --seq %d", T);
            return -1;
        }
        const int64_t off = (int64_t)r->rank * Bl * T;
        float loss;
        if (r->be.forward(&r->be, r->eval_in + off, r->eval_tg + off, &loss)) {
            snprintf(err, errlen, "forward failed: %s", r->be.error(&r->be));
            return -1;
        }
        double bl = loss;
        qp_dist_sum_f64(&bl, 1); /* the global batch's mean: equal slices */
        bl /= (double)r->world;
        sum += bl;
        group[i % QP_VAL_GROUPS] += bl, count[i % QP_VAL_GROUPS]++;
    }
    *val_loss = sum / (double)r->val_batches;
    /* The set's own sampling error, by random groups: batch i goes to group
     * i mod K, so each group is a systematic sample of the whole split like
     * the set itself; the spread of the K group means over sqrt(K) estimates
     * the standard error of the set's mean (a naive per-batch formula would
     * count the differences between the corpus's parts as noise). */
    double gm[QP_VAL_GROUPS], gs = 0;
    int k = 0;
    for (int g = 0; g < QP_VAL_GROUPS; g++)
        if (count[g]) gm[k] = group[g] / (double)count[g], gs += gm[k++];
    for (int g = 0; g < QP_VAL_GROUPS; g++) r->val_group[g] = count[g] ? group[g] / (double)count[g] : NAN;
    double q = 0;
    for (int g = 0; g < k; g++) q += (gm[g] - gs / k) * (gm[g] - gs / k);
    r->val_se = k > 1 ? sqrt(q / (k - 1) / k) : NAN;
    return 0;
}

/* --inject into the parameters or gradients: the host model's buffer (the
 * step's own on the CPU) and, when the step runs on the device, the device's
 * copy of the same element. */
static int inject_tensor(qp_train_state *r, qp_inject_where where, int64_t step, const int64_t *sizes, char *err, size_t errlen)
{
    float *base = where == QP_INJ_GRAD ? r->model.grads_memory : r->model.params_memory;
    if (!qp_inject_fire(&r->inject, where, step, base, sizes, NULL) || !r->be.poke) return 0;
    int64_t off = r->inject.index;
    for (int t = 0; t < r->inject.tensor; t++) off += sizes[t];
    if (r->be.poke(&r->be, where == QP_INJ_GRAD, off, r->inject.value)) {
        snprintf(err, errlen, "step %lld: %s", (long long)step, r->be.error(&r->be));
        return -1;
    }
    return 0;
}

static void fmt_eta(double ms, char *buf, size_t n)
{
    const long s = (long)(ms / 1000.0);
    if (s >= 3600) snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
}

/* What a recovery needs before the first step: skip-step a buffer for the
 * scaling states; rollback a checkpoint to go back to, so a fresh run writes
 * one of its initial state (a resumed run has the one it loaded). */
static int prepare_recovery(qp_train_state *r, int resumed, char *err, size_t errlen)
{
    if (is_mode(r, QP_ON_DIVERGENCE_SKIP_STEP)) {
        const int64_t ns = QP_N_STATES(r);
        r->scaling_snap = malloc((size_t)(ns * (qp_linear_history_len(r->lin) + QP_STATE_COLS)) * sizeof(float) + 1);
        if (!r->scaling_snap) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (is_mode(r, QP_ON_DIVERGENCE_ROLLBACK) && !resumed && qp_train_write_checkpoint(r, err, errlen)) {
        char e2[256];
        qp_runlog_status(r->log, r->step, "failed", err, e2, sizeof e2);
        return -1;
    }
    return 0;
}

/* The architecture a checkpoint holds into o (arch, kv_heads, mlp_hidden;
 * Smooth-SwiGLU is the recipe's): a checkpoint from before --arch has no
 * "arch" attribute and is a GPT. 0, or -1 with err. */
static int ckpt_arch(qp_ckpt *c, const char *path, qp_train_opts *o, char *err, size_t errlen)
{
    if (!qp_ckpt_has_attr(c, "arch")) {
        o->arch = QP_ARCH_GPT, o->kv_heads = 0, o->mlp_hidden = 0;
        return 0;
    }
    char name[32];
    int64_t kvh, hidden;
    if (qp_ckpt_attr_str(c, "arch", name, sizeof name, err, errlen) ||
        qp_ckpt_attr_i64(c, "kv_heads", &kvh, err, errlen) || qp_ckpt_attr_i64(c, "mlp_hidden", &hidden, err, errlen))
        return -1;
    int a = -1;
    for (int i = 0; i < QP_ARCH_COUNT; i++)
        if (!strcmp(name, qp_arch_names[i])) a = i;
    if (a < 0 || kvh < 0 || kvh > 1 << 20 || hidden < 0 || hidden > 1 << 20) {
        snprintf(err, errlen, "%s: architecture '%.20s' (kv heads %lld, MLP width %lld) is not one qtrain builds", path,
                 name, (long long)kvh, (long long)hidden);
        return -1;
    }
    o->arch = a, o->kv_heads = (int)kvh, o->mlp_hidden = (int)hidden;
    return 0;
}

/* Continue from RUN.ckpt.h5 (or .prev) with --resume when there is one, else
 * start: restore the state, and open (rank 0) the run file — truncated to the
 * checkpoint's step on a resume. *resumed_from says from where ("" if not). */
static int open_run(qp_train_state *r, const char *host, char *resumed_from, size_t rlen, char *err, size_t errlen)
{
    /* Resume if a checkpoint exists; otherwise start from scratch. */
    const char *used = NULL;
    char cerr[512] = "";
    qp_ckpt *from = NULL;
    int rc = QP_EXIT_RUNTIME;
    resumed_from[0] = 0;
    if (r->o.resume) from = qp_ckpt_open_latest(r->ckpt_path, &used, cerr, sizeof cerr);
    if (r->o.resume && !from && ckpt_exists(r->ckpt_path)) {
        /* Checkpoints that do not verify are not "none": starting over would
         * cut the run file back to nothing. */
        snprintf(err, errlen, "--resume: no checkpoint verifies: %s", cerr);
        goto out;
    }
    if (from) {
        const char *keys[] = {"layers", "heads", "dim", "seq", "vocab", "batch", "grad_accum", "seed"};
        const int64_t want[] = {r->o.layers, r->o.heads, r->o.dim, r->o.seq, r->model.cfg.vocab, r->o.batch,
                               r->o.grad_accum, (int64_t)r->o.seed};
        for (int i = 0; i < 8; i++) {
            int64_t v;
            if (qp_ckpt_attr_i64(from, keys[i], &v, err, errlen)) goto out;
            if (v != want[i]) {
                snprintf(err, errlen, "--resume: checkpoint %s has %s %lld, this run %lld", used, keys[i],
                         (long long)v, (long long)want[i]);
                rc = QP_EXIT_BAD_INPUT;
                goto out;
            }
        }
        qp_train_opts was = r->o;
        if (ckpt_arch(from, used, &was, err, errlen)) goto out;
        const qp_gpt_config wc = qp_model_resolve(&(qp_gpt_config){.vocab = 2, .max_seq = 1, .layers = 1, .heads = was.heads,
                                                                   .dim = was.dim, .arch = (qp_arch)was.arch,
                                                                   .kv_heads = was.kv_heads,
                                                                   .mlp_hidden = was.mlp_hidden});
        const qp_gpt_config *nc = &r->model.cfg;
        /* (Smooth-SwiGLU is the recipe's, compared below) */
        if (wc.arch != nc->arch || wc.kv_heads != nc->kv_heads || wc.mlp_hidden != nc->mlp_hidden) {
            snprintf(err, errlen, "--resume: checkpoint %s is of --arch %s (kv heads %d, MLP width %d), this run "
                     "--arch %s (%d, %d)", used, qp_arch_names[wc.arch], wc.kv_heads, wc.mlp_hidden,
                     qp_arch_names[nc->arch], nc->kv_heads, nc->mlp_hidden);
            rc = QP_EXIT_BAD_INPUT;
            goto out;
        }
        char rec[QP_RECIPE_SPEC_MAX];
        if (qp_ckpt_attr_str(from, "recipe", rec, sizeof rec, err, errlen)) goto out;
        if (strcmp(rec, r->recipe.spec) != 0) {
            snprintf(err, errlen, "--resume: checkpoint %s was trained with recipe %s, not %s", used, rec,
                     r->recipe.spec);
            rc = QP_EXIT_BAD_INPUT;
            goto out;
        }
        if (qp_train_load_checkpoint(r, from, 1, err, errlen)) goto out;
        if (r->be.from_host(&r->be)) {
            snprintf(err, errlen, "%s", r->be.error(&r->be));
            goto out;
        }
        snprintf(resumed_from, rlen, "resumed from %s", used);
    }
    /* Rank 0 alone writes the run file (and checkpoints). */
    int lrc = 0;
    if (r->rank == 0) {
        if (from) {
            r->log = qp_runlog_resume(r->o.out, r->step - 1, err, errlen);
            if (!r->log) lrc = QP_EXIT_RUNTIME;
            else if (!r->o.quiet) fprintf(stderr, "qtrain: resuming from %s at step %lld\n", used, (long long)r->step);
        } else if (qp_train_create_runlog(r, host, err, errlen)) {
            lrc = QP_EXIT_BAD_INPUT;
        }
    }
    qp_dist_bcast(&lrc, sizeof lrc, 0);
    if (lrc) {
        if (r->rank) snprintf(err, errlen, "rank 0 could not open the run file");
        rc = lrc;
        goto out;
    }
    rc = QP_EXIT_OK;
out:
    qp_ckpt_close(from);
    return rc;
}

/* --eval-only: the checkpoint's weights under this recipe (post-training
 * quantization), its validation loss and per-layer errors. */
static int eval_only(qp_train_state *r, qp_ckpt *from, const char *host, char *err, size_t errlen)
{
    if (qp_train_load_checkpoint(r, from, 0, err, errlen)) return QP_EXIT_RUNTIME;
    if (r->be.from_host(&r->be)) {
        snprintf(err, errlen, "%s", r->be.error(&r->be));
        return QP_EXIT_RUNTIME;
    }
    int lrc = r->rank == 0 && qp_train_create_runlog(r, host, err, errlen) ? QP_EXIT_BAD_INPUT : 0;
    qp_dist_bcast(&lrc, sizeof lrc, 0);
    if (lrc) {
        if (r->rank) snprintf(err, errlen, "rank 0 could not create the run file");
        return lrc;
    }
    double val;
    /* Delayed scaling needs an amax history: one calibration pass first. */
    if (qp_recipe_has_delayed(r->plans, r->o.layers)) {
        r->be.begin_step(&r->be, 0, 0);
        if (evaluate(r, &val, err, errlen)) return QP_EXIT_RUNTIME;
    }
    r->be.set_frozen(&r->be, 1);
    r->be.begin_step(&r->be, 0, 1);
    if (evaluate(r, &val, err, errlen) || qp_runlog_eval(r->log, 0, val, err, errlen) ||
        qp_runlog_status(r->log, 0, "done", "eval-only", err, errlen))
        return QP_EXIT_RUNTIME;
    if (r->rank == 0) {
        printf("val_loss %.6f (recipe %s, checkpoint %s; fixed validation set of %lld tokens, standard error %.6f "
               "from %d interleaved groups of its %lld batches)\n", val, r->recipe.spec, r->o.resume_from,
               (long long)r->val_batches * r->o.batch * r->o.seq, r->val_se, QP_VAL_GROUPS,
               (long long)r->val_batches);
        /* the group means: two checkpoints' differences per group give the
         * standard error of a paired gap on this set */
        printf("val_groups");
        for (int g = 0; g < QP_VAL_GROUPS; g++) printf(" %.9g", r->val_group[g]);
        printf("\n");
    }
    return QP_EXIT_OK;
}

/* ---- one optimizer step ------------------------------------------------------ */

/* A backend call failed during `step`: the message, and the exit code. */
static int step_failed(qp_train_state *r, int64_t step, char *err, size_t errlen)
{
    snprintf(err, errlen, "step %lld: %s", (long long)step, r->be.error(&r->be));
    return QP_EXIT_RUNTIME;
}

/* SIGINT/SIGTERM seen (by any rank: every rank stops at the same step). */
static int stop_requested(qp_train_state *r)
{
    int stop = qp_train_stop_requested;
    if (r->world > 1) {
        float f = (float)stop;
        qp_dist_max_f32(&f, 1);
        stop = f > 0.0f;
    }
    return stop;
}

/* Forward and backward over the step's micro-batches: gradients of this
 * rank's slice of every global batch. *loss is this rank's mean, *bh the hash
 * of the global batches (the same for any number of ranks). */
static int accumulate_gradients(qp_train_state *r, qp_loader *loader, int64_t step, double *loss, double *wait_ms, uint64_t *bh,
                                char *err, size_t errlen)
{
    const int B = r->o.batch, T = r->o.seq, accum = r->o.grad_accum;
    *loss = 0.0, *wait_ms = 0.0, *bh = 1469598103934665603ull;
    for (int micro = 0; micro < accum; micro++) {
        const int32_t *in, *tg;
        int64_t index;
        double w;
        if (qp_loader_next(loader, &in, &tg, &index, &w)) {
            snprintf(err, errlen, "data loader failed");
            return QP_EXIT_RUNTIME;
        }
        *wait_ms += w;
        r->be.begin_micro(&r->be, micro);
        *bh = qp_fnv1a(&(uint64_t){qp_batch_hash(in, (int64_t)B * T)}, 8, *bh);
        const int64_t off = (int64_t)r->rank * r->Bl * T;
        float micro_loss;
        if (r->be.forward(&r->be, in + off, tg + off, &micro_loss) ||
            r->be.backward(&r->be, in + off, tg + off, 1.0f / (float)(accum * r->world)))
            return step_failed(r, step, err, errlen);
        *loss += micro_loss / accum;
    }
    return QP_EXIT_OK;
}

/* Sum the ranks' gradients (and losses): NCCL on the device, else on the
 * host (qp_dist_grads.h) — a device's gradients go there and back for
 * --grad-comm. */
static int exchange_gradients(qp_train_state *r, int64_t step, double *loss, double *rel_err, double *meas_ms, char *err,
                              size_t errlen)
{
    const int low = r->o.grad_comm != QP_GRAD_COMM_FP32;
    *rel_err = NAN, *meas_ms = 0.0;
    if (r->world == 1 && !low) return QP_EXIT_OK;
    int failed;
    if (r->be.allreduce_grads && !low) {
        failed = r->be.allreduce_grads(&r->be);
    } else {
        failed = r->be.grads_to_host && r->be.grads_to_host(&r->be);
        if (!failed) qp_grad_exchange_run(r->gx, r->model.grads_memory, rel_err, meas_ms);
        failed = failed || (r->be.grads_from_host && r->be.grads_from_host(&r->be));
    }
    if (failed) return step_failed(r, step, err, errlen);
    qp_dist_sum_f64(loss, 1); /* the global batch's mean loss: equal slices */
    *loss /= r->world;
    return QP_EXIT_OK;
}

/* After the update: evaluation when due (*val, else NaN), flushing the run
 * file, and the checkpoint when due (the log first: a checkpoint of step s is
 * only ever on disk with every row up to s in the run file, so a resume
 * leaves no gap). */
static int finish_step(qp_train_state *r, int64_t step, int log_qerr, int skipped, double *val, char *err, size_t errlen)
{
    const int last_step = step + 1 == r->o.steps;
    *val = NAN;
    if ((r->o.eval_every > 0 && (step + 1) % r->o.eval_every == 0) || last_step) {
        r->be.set_frozen(&r->be, 1);
        r->be.begin_step(&r->be, step, 0);
        const int erc = evaluate(r, val, err, errlen);
        r->be.set_frozen(&r->be, 0);
        if (erc || qp_runlog_eval(r->log, step, *val, err, errlen)) return QP_EXIT_RUNTIME;
    }
    if ((!isnan(*val) || log_qerr || step % 50 == 0) && qp_runlog_flush(r->log, err, errlen)) return QP_EXIT_RUNTIME;
    if ((r->o.ckpt_every > 0 && (step + 1) % r->o.ckpt_every == 0) || last_step) {
        if (qp_runlog_flush(r->log, err, errlen)) return QP_EXIT_RUNTIME;
        r->step = step + 1;
        const int crc = qp_train_write_checkpoint(r, err, errlen);
        r->step = step;
        if (crc) {
            char e2[256];
            qp_runlog_status(r->log, step, "failed", err, e2, sizeof e2);
            return QP_EXIT_RUNTIME;
        }
        if (!skipped) r->recoveries = 0;
    }
    return QP_EXIT_OK;
}

/* Where a step's time went: its wall clock, the collectives' counter, the
 * phase profile (qp_prof.h). */
typedef struct {
    double t0, comm0;
} step_clock;

static step_clock clock_start(void)
{
    qp_prof_reset();
    return (step_clock){now_ms(), qp_dist_comm_ms()};
}

/* Before the micro-batches: the scaling states skip-step may restore, the
 * dispatch's step, zeroed gradients, --inject into the weights. */
static int begin_step(qp_train_state *r, int64_t step, int log_qerr, char *err, size_t errlen)
{
    if (r->scaling_snap)
        qp_train_pack_scaling(r, r->scaling_snap,
                              r->scaling_snap + (int64_t)QP_N_STATES(r) * qp_linear_history_len(r->lin));
    r->be.begin_step(&r->be, step, log_qerr);
    if (r->be.zero_grad(&r->be)) return step_failed(r, step, err, errlen);
    return inject_tensor(r, QP_INJ_PARAM, step, r->model.param_sizes, err, errlen) ? QP_EXIT_RUNTIME : QP_EXIT_OK;
}

/* --inject into the gradients or the loss, once they are whole. */
static int inject_late(qp_train_state *r, int64_t step, double *loss, char *err, size_t errlen)
{
    if (inject_tensor(r, QP_INJ_GRAD, step, r->model.param_sizes, err, errlen)) return QP_EXIT_RUNTIME;
    qp_inject_fire(&r->inject, QP_INJ_LOSS, step, NULL, r->model.param_sizes, loss);
    return QP_EXIT_OK;
}

static int gradient_norm(qp_train_state *r, int64_t step, double *norm, char *err, size_t errlen)
{
    qp_prof_push(QP_PHASE_OPTIM);
    const int failed = r->be.grad_norm(&r->be, norm);
    qp_prof_pop();
    return failed ? step_failed(r, step, err, errlen) : QP_EXIT_OK;
}

/* A NaN/Inf loss or gradient, or a loss above divergence_factor x its running
 * minimum, is a divergence: --on-divergence decides (*skipped: the run goes
 * on without this step's update or /train row; /events/divergence has it). */
static int check_divergence(qp_train_state *r, int64_t step, double loss, double norm, int *skipped, char *err,
                            size_t errlen)
{
    const int finite = isfinite(loss) && isfinite(norm);
    const int blew_up = finite && step >= r->o.warmup && loss > r->best_loss * r->o.divergence_factor;
    *skipped = !finite || blew_up;
    if (*skipped) return handle_divergence(r, step, loss, !finite ? "nonfinite" : "loss_spike", err, errlen);
    if (!is_mode(r, QP_ON_DIVERGENCE_ROLLBACK)) r->recoveries = 0; /* rollback: a checkpoint after a good step resets it */
    if (loss < r->best_loss) r->best_loss = loss;
    return QP_EXIT_OK;
}

/* AdamW with the gradient clipped to grad_clip. */
static int update(qp_train_state *r, const qp_optim_cfg *oc, int64_t step, double lr, double norm, char *err,
                  size_t errlen)
{
    const float clip = (r->o.grad_clip > 0 && norm > r->o.grad_clip) ? (float)(r->o.grad_clip / norm) : 1.0f;
    qp_prof_push(QP_PHASE_OPTIM);
    const int failed = r->be.adamw(&r->be, oc, step + 1, lr, clip);
    qp_prof_pop();
    return failed ? step_failed(r, step, err, errlen) : QP_EXIT_OK;
}

/* The step's /train row (qp_runschema.h). */
static qp_train_row step_row(qp_train_state *r, const step_clock *clk, int64_t step, double loss, double lr,
                             double norm, double wait_ms, uint64_t bh, double comm_err, double meas_ms)
{
    const double step_ms = now_ms() - clk->t0, tokens = (double)r->o.batch * r->o.seq * r->o.grad_accum;
    double ph[QP_PHASE_COUNT];
    r->be.phases(&r->be, ph);
    qp_nvml_window pw = {NAN, NAN, NAN, NAN, 0, 0};
    if (r->nvml) qp_nvml_take(r->nvml, &pw);
    return (qp_train_row){.step = step, .loss = loss, .lr = lr, .grad_norm = norm, .step_ms = step_ms,
                          .data_wait_ms = wait_ms, .tokens_per_s = tokens / (step_ms / 1e3), .batch_hash = bh,
                          .comm_ms = qp_dist_comm_ms() - clk->comm0 - meas_ms, .power_w = pw.power_w,
                          .energy_j = pw.energy_j, .gpu_util = pw.gpu_util, .grad_comm_rel_err = comm_err,
                          .gemm_ms = ph[QP_PHASE_GEMM], .quant_ms = ph[QP_PHASE_QUANT], .attn_ms = ph[QP_PHASE_ATTN],
                          .rowops_ms = ph[QP_PHASE_ROWOPS], .optim_ms = ph[QP_PHASE_OPTIM],
                          .threads = r->adapt.current};
}

/* --threads auto: the count for the next step (qp_omp.h); the same results on any */
static void adapt_threads(qp_train_state *r)
{
    if (!r->threads_auto) return;
    const int n = qp_omp_adapt_threads(&r->adapt);
#if QP_HAVE_OPENMP
    if (n != omp_get_max_threads()) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* Optimizer step r->step, start to finish. QP_EXIT_OK, or the code the run
 * ends with (err says why). *row: its /train row; *val: the validation loss
 * when one was due (else NaN). */
static int train_step(qp_train_state *r, qp_loader *loader, const qp_optim_cfg *oc, qp_train_row *row, double *val,
                      char *err, size_t errlen)
{
    const int64_t step = r->step;
    const int log_qerr = r->o.qerr_every > 0 && step % r->o.qerr_every == 0;
    adapt_threads(r);
    const step_clock clk = clock_start();
    double loss = NAN, wait_ms = 0, norm = NAN, comm_err = NAN, meas_ms = 0, lr = qp_lr_at(oc, step);
    uint64_t bh = 0;
    int skipped = 0;
    int rc = begin_step(r, step, log_qerr, err, errlen);                                        /* zero, inject */
    if (!rc) rc = accumulate_gradients(r, loader, step, &loss, &wait_ms, &bh, err, errlen);    /* fwd + bwd */
    if (!rc) rc = exchange_gradients(r, step, &loss, &comm_err, &meas_ms, err, errlen);        /* all ranks */
    if (!rc) rc = inject_late(r, step, &loss, err, errlen);
    if (!rc) rc = gradient_norm(r, step, &norm, err, errlen);
    if (!rc) rc = check_divergence(r, step, loss, norm, &skipped, err, errlen);                /* --on-divergence */
    if (!rc && !skipped) rc = update(r, oc, step, lr, norm, err, errlen);                      /* AdamW */
    if (rc) return rc;
    *row = step_row(r, &clk, step, loss, lr, norm, wait_ms, bh, comm_err, meas_ms);
    if (!skipped && qp_runlog_train(r->log, row, err, errlen)) return QP_EXIT_RUNTIME;
    if (r->log_err[0]) return snprintf(err, errlen, "%s", r->log_err), QP_EXIT_RUNTIME;
    return finish_step(r, step, log_qerr, skipped, val, err, errlen);                         /* eval, ckpt */
}

/* The recipe for this model (r->plans): its blocks and GEMMs exist, its
 * RHT sizes divide their contractions (wgrad's: this rank's tokens). */
static int resolve_recipe(qp_train_state *r, char *err, size_t errlen)
{
    r->plans = malloc((size_t)r->o.layers * QP_BLOCK_GEMMS * sizeof *r->plans);
    if (!r->plans) return snprintf(err, errlen, "out of memory"), -1;
    const qp_gpt_config shape = qp_train_model_config(&r->o, qp_dataset_vocab(r->data));
    if (qp_recipe_resolve(&r->recipe, r->o.layers, qp_model_gemm_mask(&shape), r->plans, err, errlen)) return -1;
    int64_t K[QP_PASS_COUNT][QP_BLOCK_GEMMS];
    for (int g = 0; g < QP_BLOCK_GEMMS; g++) {
        int ic, oc;
        qp_gpt_gemm_dims(&shape, (qp_gemm_id)g, &ic, &oc);
        K[QP_PASS_FPROP][g] = ic, K[QP_PASS_DGRAD][g] = oc, K[QP_PASS_WGRAD][g] = (int64_t)r->Bl * r->o.seq;
    }
    if (!qp_recipe_check_rht(&r->recipe, r->plans, r->o.layers, K, err, errlen)) return 0;
    if (r->world > 1) snprintf(err + strlen(err), errlen - strlen(err), " on every rank (--batch / ranks x --seq)");
    return -1;
}

/* ---- the run, phase by phase ---------------------------------------------- */

/* The options alone, before anything is opened: their ranges, the recipe,
 * --inject, and the split of the global batch among the ranks. */
static int check_options(qp_train_state *r, const qp_train_opts *opts, char *err, size_t errlen)
{
    r->o = *opts;
    if (r->o.min_lr < 0) r->o.min_lr = r->o.lr / 10.0;
    if (qp_train_opts_check(&r->o, err, errlen)) return QP_EXIT_BAD_INPUT;
    if (qp_recipe_parse(r->o.recipe, &r->recipe, err, errlen)) return QP_EXIT_BAD_INPUT;
    const qp_gpt_config opts_model = qp_train_model_config(&r->o, 256);
    if (qp_inject_parse(r->o.inject, qp_model_param_names(&opts_model), qp_model_nparams(&opts_model), &r->inject,
                        err, errlen))
        return QP_EXIT_BAD_INPUT;
    r->rank = qp_dist_rank(), r->world = qp_dist_size();
    if (r->o.batch % r->world) {
        snprintf(err, errlen, "--batch %d is not divisible by the %d ranks (--batch is the global batch)",
                 r->o.batch, r->world);
        return QP_EXIT_BAD_INPUT;
    }
    r->Bl = r->o.batch / r->world;
    return QP_EXIT_OK;
}

/* --device cuda: a CUDA build with a device (and NCCL for several ranks). */
static int check_device(const qp_train_state *r, char *err, size_t errlen)
{
    if (r->o.device != QP_DEVICE_CUDA) return QP_EXIT_OK;
    if (!qp_backend_cuda_built()) return snprintf(err, errlen, "--device cuda: built without CUDA"), QP_EXIT_BAD_INPUT;
    char why[200] = "";
    const int ndev = qp_backend_cuda_device_count(why, sizeof why);
    if (ndev < 0) return snprintf(err, errlen, "--device cuda: %s", why), QP_EXIT_BAD_INPUT;
    if (ndev < 1) return snprintf(err, errlen, "--device cuda: no CUDA device found (%s)", why), QP_EXIT_BAD_INPUT;
    if (r->world > 1 && !qp_backend_cuda_nccl())
        return snprintf(err, errlen, "--device cuda with %d ranks needs NCCL: this qtrain was built without it "
                        "(NCCL, CUDA and MPI must all be found by CMake)", r->world), QP_EXIT_BAD_INPUT;
    return QP_EXIT_OK;
}

/* OpenMP's thread count: --threads, or auto (qp_omp.h) adapted as the run goes. */
static void start_threads(qp_train_state *r)
{
#if QP_HAVE_OPENMP
    if (!r->o.threads) r->o.threads = qp_omp_auto_threads(), r->threads_auto = 1;
    omp_set_num_threads(r->o.threads);
    qp_omp_adapt_init(&r->adapt, r->o.threads);
#else
    r->o.threads = 1, r->threads_auto = 0;
    qp_omp_adapt_init(&r->adapt, 1);
#endif
}

/* --eval-only: open --resume-from (*from) and take the model's shape from it. */
static int shape_from_checkpoint(qp_train_state *r, qp_ckpt **from, char *err, size_t errlen)
{
    *from = qp_ckpt_open(r->o.resume_from, err, errlen);
    if (!*from) return QP_EXIT_BAD_INPUT;
    int64_t v[6];
    const char *keys[6] = {"layers", "heads", "dim", "seq", "vocab", "seed"};
    for (int i = 0; i < 6; i++)
        if (qp_ckpt_attr_i64(*from, keys[i], &v[i], err, errlen)) return QP_EXIT_BAD_INPUT;
    for (int i = 0; i < 4; i++)
        if (v[i] < 1 || v[i] > 1 << 20)
            return snprintf(err, errlen, "%s: attribute '%s' is %lld, not a model size", r->o.resume_from, keys[i],
                            (long long)v[i]), QP_EXIT_BAD_INPUT;
    r->o.layers = (int)v[0], r->o.heads = (int)v[1], r->o.dim = (int)v[2], r->o.seq = (int)v[3];
    if (ckpt_arch(*from, r->o.resume_from, &r->o, err, errlen)) return QP_EXIT_BAD_INPUT;
    if (qp_train_opts_check(&r->o, err, errlen)) return QP_EXIT_BAD_INPUT; /* the checkpoint's shape, judged like options */
    if (!r->o.data[0]) return snprintf(err, errlen, "--eval-only needs --data for the validation split"), QP_EXIT_BAD_INPUT;
    return QP_EXIT_OK;
}

/* The corpus, with room for a sequence in both splits. */
static int open_data(qp_train_state *r, char *err, size_t errlen)
{
    r->data = qp_dataset_open(r->o.data, r->o.val_frac, err, errlen);
    if (!r->data) return QP_EXIT_BAD_INPUT;
    for (int split = 0; split < 2; split++)
        if (qp_dataset_tokens(r->data, split) < (int64_t)r->o.seq + 1)
            return snprintf(err, errlen, "--seq %d is longer than the %s split of %s (%lld tokens)", r->o.seq,
                            split ? "validation" : "training", r->o.data,
                            (long long)qp_dataset_tokens(r->data, split)), QP_EXIT_BAD_INPUT;
    return QP_EXIT_OK;
}

/* The model (its vocabulary matched against --eval-only's checkpoint) and the
 * GEMM engine the precision dispatch multiplies with. */
static int build_model(qp_train_state *r, qp_ckpt *from, char *err, size_t errlen)
{
    r->gemm = qp_gemm_create(err, errlen);
    if (!r->gemm) return QP_EXIT_RUNTIME;
    qp_gpt_config mc = qp_train_model_config(&r->o, qp_dataset_vocab(r->data));
    mc.smooth_swiglu = r->recipe.smooth_swiglu; /* resolve_recipe refused it on a model without a down GEMM */
    if (from) {
        int64_t vocab;
        if (qp_ckpt_attr_i64(from, "vocab", &vocab, err, errlen)) return QP_EXIT_RUNTIME;
        if (vocab != mc.vocab)
            return snprintf(err, errlen, "checkpoint vocabulary %lld does not match the data's %d", (long long)vocab,
                            mc.vocab), QP_EXIT_BAD_INPUT;
    }
    if (qp_gpt_init(&r->model, &mc, r->Bl, r->o.seq, r->o.seed, err, errlen)) return QP_EXIT_RUNTIME;
    r->model_ok = 1;
    if (qp_inject_check(&r->inject, qp_model_param_names(&r->model.cfg), r->model.param_sizes, err, errlen))
        return QP_EXIT_BAD_INPUT;
    return QP_EXIT_OK;
}

/* The precision dispatch (qp_linear.h) for the model's GEMMs, the optimizer's
 * and evaluation's buffers, the gradient exchange, and the backend the step
 * runs on (--device). */
static int build_backend(qp_train_state *r, char *err, size_t errlen)
{
    const qp_gpt_config *mc = &r->model.cfg;
    const int B = r->o.batch, T = r->o.seq;
    qp_linear_cfg lc = {.n_layers = r->o.layers, .gemms = qp_model_gemm_mask(mc),
                        .max_elems = qp_gpt_max_gemm_elems(mc, r->Bl, T), .seed = r->data_seed,
                        .recipe = &r->recipe, .gemm = r->gemm, .requantize = r->o.requantize, .on_event = on_event,
                        .on_qerr = on_qerr, .on_bscale = on_bscale, .user = r};
    if (r->world > 1) {
        lc.dp_rank = r->rank, lc.dp_size = r->world;
        lc.reduce_max = dist_max, lc.reduce_sum = dist_sum;
    }
    r->lin = qp_linear_create(&lc, err, errlen);
    r->adam_m = calloc((size_t)r->model.num_params, sizeof(float));
    r->adam_v = calloc((size_t)r->model.num_params, sizeof(float));
    r->eval_in = malloc((size_t)B * T * sizeof(int32_t));
    r->eval_tg = malloc((size_t)B * T * sizeof(int32_t));
    r->gx = qp_grad_exchange_create(r->o.grad_comm, r->o.grad_comm_ef, r->model.param_sizes, r->model.n_tensors);
    /* the /quant/outliers observer and Smooth-SwiGLU's reduction (the GPU backend takes them over) */
    r->model.on_input = on_input, r->model.observer_user = r;
    if (r->world > 1) r->model.reduce_max = dist_max;
    if (!r->lin || !r->adam_m || !r->adam_v || !r->eval_in || !r->eval_tg || !r->gx) {
        if (r->lin) snprintf(err, errlen, "out of memory");
        return QP_EXIT_RUNTIME;
    }
    if (r->o.device == QP_DEVICE_CUDA) {
        char be_err[400];
        if (qp_backend_cuda(&r->be, &r->model, r->lin, &lc, r->adam_m, r->adam_v, be_err, sizeof be_err))
            return snprintf(err, errlen, "--device cuda: %s", be_err), QP_EXIT_RUNTIME;
        r->nvml = qp_nvml_open(NULL, r->be.pci_bus_id, 0, 20, r->power_why, sizeof r->power_why);
    } else {
        if (qp_backend_cpu(&r->be, &r->model, r->lin, r->adam_m, r->adam_v))
            return snprintf(err, errlen, "out of memory"), QP_EXIT_RUNTIME;
        snprintf(r->power_why, sizeof r->power_why, "CPU run");
    }
    r->best_loss = INFINITY;
    qp_ckpt_path_for(r->o.out, r->ckpt_path, sizeof r->ckpt_path);
    return QP_EXIT_OK;
}

/* Before step `step`: a signal's end (status "stopped", QP_EXIT_STOPPED), or
 * --stop-after's (*killed: as if killed here, the rows flushed, no status, no
 * checkpoint, exit 0). */
static int stop_before(qp_train_state *r, int64_t step, int *killed, char *err, size_t errlen)
{
    char e2[256];
    *killed = r->o.stop_after > 0 && step >= r->o.stop_after;
    if (*killed) return qp_runlog_flush(r->log, err, errlen), QP_EXIT_OK;
    if (!stop_requested(r)) return QP_EXIT_OK;
    qp_runlog_status(r->log, step, "stopped", "signal", e2, sizeof e2);
    snprintf(err, errlen, "stopped by a signal before step %lld; --resume continues from %s", (long long)step,
             r->ckpt_path);
    return QP_EXIT_STOPPED;
}

/* The progress line (rank 0, without --quiet), and the validation loss when one was taken. */
static void show_progress(const qp_train_state *r, int64_t first_step, double t_start, const qp_train_row *row,
                          double val)
{
    if (r->o.quiet || r->rank != 0) return;
    const int64_t step = r->step;
    const double el = now_ms() - t_start, per = el / (double)(step + 1 - first_step);
    char eta[32];
    fmt_eta(per * (double)(r->o.steps - step - 1), eta, sizeof eta);
    fprintf(stderr, "\rstep %6lld/%lld | loss %.4f | %7.1f ms/step | %8.0f tok/s | ETA %s   ", (long long)step + 1,
            (long long)r->o.steps, row->loss, row->step_ms, row->tokens_per_s, eta);
    if (!isnan(val)) fprintf(stderr, "\n  step %lld: val_loss %.4f\n", (long long)step + 1, val);
}

/* Training: the run file opened (or resumed), then the optimizer steps up to
 * --steps, each one train_step, and the status "done". */
static int train_loop(qp_train_state *r, const char *host, char *err, size_t errlen)
{
    char resumed_from[1200];
    int rc = open_run(r, host, resumed_from, sizeof resumed_from, err, errlen);
    if (rc != QP_EXIT_OK) return rc;
    announce_size(r);
    qp_loader *loader = qp_loader_create(r->data, QP_SPLIT_TRAIN, r->data_seed, r->o.batch, r->o.seq, r->o.prefetch,
                                         r->step * r->o.grad_accum, err, errlen);
    if (!loader) return QP_EXIT_RUNTIME;
    const qp_optim_cfg oc = {r->o.lr, r->o.min_lr, r->o.beta1, r->o.beta2, r->o.eps, r->o.weight_decay,
                             r->o.grad_clip, r->o.warmup, r->o.steps};
    rc = QP_EXIT_RUNTIME;
    if (!qp_runlog_status(r->log, r->step, "running", resumed_from, err, errlen) &&
        !prepare_recovery(r, resumed_from[0] != 0, err, errlen)) {
        const double t_start = now_ms();
        const int64_t first_step = r->step;
        int killed = 0;
        for (rc = QP_EXIT_OK; r->step < r->o.steps; r->step++) {
            qp_train_row row;
            double val = NAN;
            rc = stop_before(r, r->step, &killed, err, errlen);
            if (rc == QP_EXIT_OK && !killed) rc = train_step(r, loader, &oc, &row, &val, err, errlen);
            if (rc != QP_EXIT_OK || killed) break;
            show_progress(r, first_step, t_start, &row, val);
        }
        if (rc == QP_EXIT_OK && !killed && qp_runlog_status(r->log, r->step, "done", "", err, errlen))
            rc = QP_EXIT_RUNTIME;
    }
    qp_loader_destroy(loader);
    if (!r->o.quiet && r->rank == 0) fprintf(stderr, "\n");
    return rc;
}

int qp_train_run(const qp_train_opts *opts, char *err, size_t errlen)
{
    qp_train_state R, *r = &R;
    memset(r, 0, sizeof R);
    qp_ckpt *from = NULL;
    char host[256] = "unknown";
    /* checks: the options, then the device they ask for */
    int rc = check_options(r, opts, err, errlen);
    if (rc == QP_EXIT_OK) rc = check_device(r, err, errlen);
    if (rc != QP_EXIT_OK) return rc;
    start_threads(r);
    if (r->o.eval_only) rc = shape_from_checkpoint(r, &from, err, errlen);
    if (rc == QP_EXIT_OK) rc = open_data(r, err, errlen);
    if (rc == QP_EXIT_OK) rc = size_run(r, err, errlen);
    if (rc == QP_EXIT_OK && resolve_recipe(r, err, errlen)) rc = QP_EXIT_BAD_INPUT;
    /* model, and the backend the step runs on */
    if (rc == QP_EXIT_OK) rc = build_model(r, from, err, errlen);
    if (rc == QP_EXIT_OK) rc = build_backend(r, err, errlen);
    gethostname(host, sizeof host - 1);
    /* the loop (or --eval-only's one evaluation) */
    if (rc == QP_EXIT_OK) rc = r->o.eval_only ? eval_only(r, from, host, err, errlen) : train_loop(r, host, err, errlen);
    qp_ckpt_close(from);
    free_run(r);
    return rc;
}
