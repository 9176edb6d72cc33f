/* qp_train_ckpt.c — what a training checkpoint holds (see qp_train_state.h):
 * weights, Adam moments, every scaling state and its amax history, the step
 * and the running-minimum loss, written through qp_ckpt (atomic, checksummed)
 * and read back for --resume, --eval-only and rollbacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_train_state.h"

static qp_scaling_state *state_at(qp_train_state *r, int i)
{
    qp_gemm_id ids[QP_BLOCK_GEMMS];
    const int ng = qp_model_block_gemms(&r->model.cfg, ids);
    const int o = i % QP_OPND_COUNT, g = (i / QP_OPND_COUNT) % ng, layer = i / QP_OPND_COUNT / ng;
    return qp_linear_scaling(r->lin, layer, ids[g], (qp_operand)o);
}

/* Doubles travel as three floats whose sum restores them exactly. */
static void split3(double x, float f[3])
{
    f[0] = (float)x;
    const double r1 = x - f[0];
    f[1] = (float)r1;
    f[2] = (float)(r1 - f[1]);
}

void qp_train_pack_scaling(qp_train_state *r, float *hist, float *st)
{
    const int ns = QP_N_STATES(r), H = qp_linear_history_len(r->lin);
    for (int i = 0; i < ns; i++) {
        const qp_scaling_state *s = state_at(r, i);
        if (s->amax_history) memcpy(hist + (int64_t)i * H, s->amax_history, (size_t)s->cfg.history_len * sizeof(float));
        float *row = st + (int64_t)i * QP_STATE_COLS;
        row[0] = s->scale, row[1] = s->last_scale, row[2] = (float)s->hist_pos, row[3] = (float)s->hist_count;
        row[4] = (float)s->n_updates;
        for (int k = 0; k < QP_EV_COUNT; k++) row[5 + k] = (float)s->n_events[k];
        split3(s->underflow_ema, row + 9);
        split3(s->overflow_ema, row + 12);
    }
}

void qp_train_unpack_scaling(qp_train_state *r, const float *hist, const float *st)
{
    const int ns = QP_N_STATES(r), H = qp_linear_history_len(r->lin);
    for (int i = 0; i < ns; i++) {
        qp_scaling_state *s = state_at(r, i);
        if (s->amax_history) memcpy(s->amax_history, hist + (int64_t)i * H, (size_t)s->cfg.history_len * sizeof(float));
        const float *row = st + (int64_t)i * QP_STATE_COLS;
        s->scale = row[0], s->last_scale = row[1], s->hist_pos = (int)row[2], s->hist_count = (int)row[3];
        s->n_updates = (int64_t)row[4];
        for (int k = 0; k < QP_EV_COUNT; k++) s->n_events[k] = (int64_t)row[5 + k];
        s->underflow_ema = (double)row[9] + (double)row[10] + (double)row[11];
        s->overflow_ema = (double)row[12] + (double)row[13] + (double)row[14];
    }
}

int qp_train_write_checkpoint(qp_train_state *r, char *err, size_t errlen)
{
    if (r->rank != 0) return 0; /* rank 0 writes; every rank holds the same state */
    if (r->be.to_host && r->be.to_host(&r->be)) {
        snprintf(err, errlen, "checkpoint: %s", r->be.error(&r->be));
        return -1;
    }
    const int L = r->o.layers, ns = QP_N_STATES(r), H = qp_linear_history_len(r->lin), np = r->model.n_tensors;
    const char *const *pnames = qp_model_param_names(&r->model.cfg);
    int ndim[QP_MODEL_MAX_NPARAMS];
    int64_t sizes[QP_MODEL_MAX_NPARAMS], shape[QP_MODEL_MAX_NPARAMS][3];
    qp_gpt_param_shapes(&r->model.cfg, sizes, ndim, shape);
    float *hist = calloc((size_t)ns * H, sizeof(float)), *st = calloc((size_t)ns * QP_STATE_COLS, sizeof(float));
    char names[3][QP_MODEL_MAX_NPARAMS][64];
    qp_ckpt_tensor t[3 * QP_MODEL_MAX_NPARAMS + 2];
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
        for (int i = 0; i < np; i++) {
            snprintf(names[k][i], sizeof names[k][i], "%s/%s", groups[k], pnames[i]);
            t[nt] = (qp_ckpt_tensor){names[k][i], p, ndim[i], {shape[i][0], shape[i][1], shape[i][2], 0}};
            nt++;
            p += sizes[i];
        }
    }
    qp_train_pack_scaling(r, hist, st);
    t[nt++] = (qp_ckpt_tensor){"scaling/amax_history", hist, 2, {ns, H, 0, 0}};
    t[nt++] = (qp_ckpt_tensor){"scaling/state", st, 2, {ns, QP_STATE_COLS, 0, 0}};
    int64_t best_bits;
    memcpy(&best_bits, &r->best_loss, sizeof best_bits);
    const qp_ckpt_attr attrs[] = {
        {"format", 1, 0, "qprec-checkpoint-1"}, {"step", 0, r->step, NULL},
        {"seed", 0, (int64_t)r->o.seed, NULL},  {"layers", 0, L, NULL},
        {"heads", 0, r->o.heads, NULL},         {"dim", 0, r->o.dim, NULL},
        {"seq", 0, r->o.seq, NULL},             {"vocab", 0, r->model.cfg.vocab, NULL},
        {"batch", 0, r->o.batch, NULL},         {"grad_accum", 0, r->o.grad_accum, NULL},
        {"recipe", 1, 0, r->recipe.spec},       {"best_loss_bits", 0, best_bits, NULL},
        {"history_len", 0, H, NULL},
        /* the architecture (absent from checkpoints before --arch: the GPT) */
        {"arch", 1, 0, qp_arch_names[r->model.cfg.arch]},
        {"kv_heads", 0, r->model.cfg.kv_heads, NULL}, {"mlp_hidden", 0, r->model.cfg.mlp_hidden, NULL}};
    const int rc = qp_ckpt_write(r->ckpt_path, t, nt, attrs, (int)(sizeof attrs / sizeof attrs[0]), err, errlen);
    free(hist), free(st);
    return rc;
}

static int read_i64(qp_ckpt *c, const char *name, int64_t *v, char *err, size_t errlen)
{
    return qp_ckpt_attr_i64(c, name, v, err, errlen);
}

int qp_train_load_checkpoint(qp_train_state *r, qp_ckpt *c, int with_optimizer, char *err, size_t errlen)
{
    int64_t sizes[QP_MODEL_MAX_NPARAMS];
    qp_gpt_param_shapes(&r->model.cfg, sizes, NULL, NULL);
    const char *const *pnames = qp_model_param_names(&r->model.cfg);
    float *bases[3] = {r->model.params_memory, r->adam_m, r->adam_v};
    const char *groups[3] = {"params", "adam_m", "adam_v"};
    for (int k = 0; k < (with_optimizer ? 3 : 1); k++) {
        float *p = bases[k];
        for (int i = 0; i < r->model.n_tensors; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s/%s", groups[k], pnames[i]);
            if (qp_ckpt_read(c, name, p, sizes[i], err, errlen)) return -1;
            p += sizes[i];
        }
    }
    if (!with_optimizer) return 0;
    int64_t step, best_bits, H;
    if (read_i64(c, "step", &step, err, errlen) || read_i64(c, "best_loss_bits", &best_bits, err, errlen) ||
        read_i64(c, "history_len", &H, err, errlen))
        return -1;
    if (H != qp_linear_history_len(r->lin)) {
        snprintf(err, errlen, "checkpoint has an amax history of %lld, this run %d", (long long)H,
                 qp_linear_history_len(r->lin));
        return -1;
    }
    const int ns = QP_N_STATES(r);
    float *hist = malloc((size_t)ns * H * sizeof(float)), *st = malloc((size_t)ns * QP_STATE_COLS * sizeof(float));
    if (!hist || !st || qp_ckpt_read(c, "scaling/amax_history", hist, ns * H, err, errlen) ||
        qp_ckpt_read(c, "scaling/state", st, ns * QP_STATE_COLS, err, errlen)) {
        free(hist), free(st);
        return -1;
    }
    qp_train_unpack_scaling(r, hist, st);
    free(hist), free(st);
    r->step = step;
    memcpy(&r->best_loss, &best_bits, sizeof best_bits);
    return 0;
}

/* Back to the last checkpoint on disk (RUN.ckpt.h5, or .prev if that one does
 * not verify): weights, Adam moments, scaling states, running-minimum loss.
 * The step counter and the data are not rewound (see --help). *from gets the
 * checkpoint's step. */
int qp_train_rollback(qp_train_state *r, int64_t *from, char *err, size_t errlen)
{
    const char *used = NULL;
    char e[512];
    qp_ckpt *c = qp_ckpt_open_latest(r->ckpt_path, &used, e, sizeof e);
    if (!c) {
        snprintf(err, errlen, "rollback: no usable checkpoint: %s", e);
        return -1;
    }
    const int64_t now = r->step;
    int rc = qp_train_load_checkpoint(r, c, 1, e, sizeof e);
    if (!rc && r->be.from_host(&r->be)) rc = -1, snprintf(e, sizeof e, "%s", r->be.error(&r->be));
    *from = r->step;
    r->step = now;
    qp_ckpt_close(c);
    if (rc) snprintf(err, errlen, "rollback: %s", e);
    return rc;
}

