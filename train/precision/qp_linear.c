/* qp_linear.c — the precision dispatch, written once over qp_linear_ops (see
 * qp_linear.h): the CPU and the GPU run this code. */
#include "qp_linear.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_linear_host.h"
#include "qp_scaling.h"

/* A use whose statistics wait in the backend's kept list for the flush. */
typedef struct {
    int64_t step;
    int layer;
    qp_gemm_id g;
    qp_pass pass;
    qp_operand o;
    int update;   /* the scaling state is updated with them */
    int want_row; /* a qerr row is made of them */
    int reduce;   /* data parallel: the update sees gamax and the counts summed over the ranks */
    float gamax;  /* the ranks' amax */
} pending_use;

/* What the forward's quantization of X or W left for the backward's use of
 * the same tensor (qp_linear_reusable): of which tensor, in which step and
 * micro-batch, with the ranks' amax (data parallel); on operations that keep
 * quantized copies, the copy itself (qp_linear_qjob.keep, same index). */
typedef struct {
    const float *src;
    int64_t step;
    int micro;
    int gamax_ok;
    float gamax;
} kept_copy;

struct qp_linear {
    qp_linear_cfg cfg;
    qp_linear_plan *plans;      /* [layer][gemm] */
    qp_scaling_state *states;   /* [layer][gemm][operand] */
    qp_linear_host *host;       /* the CPU's operations */
    const qp_linear_ops *ops;   /* the ones in use */
    pending_use *pending;       /* max_pending records, n_pending waiting */
    qp_linear_stats *kept;      /* where a flush fetches their statistics */
    int n_pending, max_pending;
    int failed;                 /* a flush failed: every later call reports err */
    int64_t step;
    int micro;
    int log_qerr;
    int frozen;
    /* the dgrad pass's global amax of dY (data parallel), for the wgrad pass
     * when qp_linear_reusable: the same tensor, so no second all-reduce */
    float dy_gamax;
    int dy_gamax_ok;
    kept_copy *copies;          /* [layer][gemm][x, w] */
    int64_t n_events[QP_EV_COUNT];
    char err[256];
};

static int state_index(int layer, int g, int o) { return (layer * QP_BLOCK_GEMMS + g) * QP_OPND_COUNT + o; }
static int copy_index(int layer, int g, qp_operand o) { return (layer * QP_BLOCK_GEMMS + g) * 2 + (o == QP_OPND_W); }

static void on_scaling_event(const qp_recalib_event *ev, void *user)
{
    qp_linear *l = user;
    l->n_events[ev->kind]++;
    if (!l->cfg.on_event) return;
    const int id = ev->tensor_id, o = id % QP_OPND_COUNT, g = (id / QP_OPND_COUNT) % QP_BLOCK_GEMMS,
              layer = id / QP_OPND_COUNT / QP_BLOCK_GEMMS;
    qp_event_row row = {ev->step, layer, qp_gemm_name((qp_gemm_id)g), qp_operand_name((qp_operand)o),
                        qp_event_kind_name(ev->kind), ev->old_scale, ev->new_scale, ev->amax};
    l->cfg.on_event(&row, l->cfg.user);
}

qp_linear *qp_linear_create(const qp_linear_cfg *cfg, char *err, size_t errlen)
{
    qp_linear *l = calloc(1, sizeof *l);
    if (!l) goto oom;
    l->cfg = *cfg;
    if (!l->cfg.gemms) l->cfg.gemms = QP_GEMMS_ALL;
    const int L = cfg->n_layers;
    l->plans = calloc((size_t)(L > 0 ? L : 1) * QP_BLOCK_GEMMS, sizeof *l->plans);
    l->states = calloc((size_t)(L > 0 ? L : 1) * QP_BLOCK_GEMMS * QP_OPND_COUNT, sizeof *l->states);
    l->max_pending = qp_linear_max_kept(L);
    l->pending = calloc((size_t)l->max_pending, sizeof *l->pending);
    l->kept = calloc((size_t)l->max_pending, sizeof *l->kept);
    const int n_copies = (L > 0 ? L : 1) * QP_BLOCK_GEMMS * 2; /* X and W of every block GEMM */
    l->copies = calloc((size_t)n_copies, sizeof *l->copies); /* the records (small) even when requantizing */
    if (!l->plans || !l->states || !l->pending || !l->kept || !l->copies) goto oom;
    if (qp_recipe_resolve(cfg->recipe, L, cfg->gemms, l->plans, err, errlen)) {
        qp_linear_destroy(l);
        return NULL;
    }
    for (int layer = 0; layer < L; layer++)
        for (int g = 0; g < QP_BLOCK_GEMMS; g++) {
            const qp_linear_plan *p = &l->plans[layer * QP_BLOCK_GEMMS + g];
            for (int o = 0; o < QP_OPND_COUNT; o++) {
                /* the tensor's scaling state follows its owning use */
                const qp_use_plan *u = &p->use[p->owner[o]][o];
                qp_scaling_cfg sc;
                qp_scaling_cfg_default(&sc, u->scaling);
                sc.history_len = u->history_len;
                sc.algo = u->algo;
                sc.on_event = on_scaling_event;
                sc.user = l;
                const int i = state_index(layer, g, o);
                if (qp_scaling_init(&l->states[i], &sc, u->fmt, i)) goto oom;
            }
        }
    l->host = qp_linear_host_create(cfg->gemm, cfg->max_elems, cfg->requantize ? 0 : n_copies);
    if (!l->host) goto oom;
    l->ops = qp_linear_host_ops(l->host);
    return l;
oom:
    snprintf(err, errlen, "out of memory for the GEMM dispatch");
    qp_linear_destroy(l);
    return NULL;
}

void qp_linear_destroy(qp_linear *l)
{
    if (!l) return;
    if (l->states)
        for (int i = 0; i < l->cfg.n_layers * QP_BLOCK_GEMMS * QP_OPND_COUNT; i++) qp_scaling_free(&l->states[i]);
    free(l->states);
    free(l->plans);
    free(l->pending);
    free(l->kept);
    free(l->copies);
    qp_linear_host_destroy(l->host);
    free(l);
}

void qp_linear_set_ops(qp_linear *l, const qp_linear_ops *ops)
{
    qp_linear_flush(l); /* the kept statistics live in the old operations' memory */
    l->ops = ops ? ops : qp_linear_host_ops(l->host);
}

struct qp_linear_host *qp_linear_host_of(qp_linear *l) { return l->host; }

int qp_linear_max_kept(int n_layers)
{
    /* fprop x, w; dgrad dy, w; wgrad dy, x of every block GEMM */
    return 2 * QP_PASS_COUNT * QP_BLOCK_GEMMS * (n_layers > 0 ? n_layers : 1);
}

const qp_linear_plan *qp_linear_plan_of(const qp_linear *l, int layer, qp_gemm_id g)
{
    if (layer < 0 || layer >= l->cfg.n_layers || (unsigned)g >= QP_BLOCK_GEMMS) return NULL;
    return &l->plans[layer * QP_BLOCK_GEMMS + g];
}

void qp_linear_gemms(const qp_linear *l, qp_linear_gemm_set *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < l->cfg.n_layers * QP_BLOCK_GEMMS; i++)
        for (int p = 0; p < QP_PASS_COUNT && l->cfg.gemms >> i % QP_BLOCK_GEMMS & 1u; p++) {
            const qp_use_plan *a = &l->plans[i].use[p][qp_pass_operand((qp_pass)p, 0)],
                              *b = &l->plans[i].use[p][qp_pass_operand((qp_pass)p, 1)];
            s->pair[a->fmt][b->fmt] = 1;
            s->any_rht |= a->rht > 0;
        }
}

int qp_linear_history_len(const qp_linear *l) { return qp_recipe_history_max(l->plans, l->cfg.n_layers); }

/* The scaling states must be current before a step or micro-batch quantizes
 * with them and before evaluation freezes them: each of these flushes first
 * (a failure is reported by the next forward or backward). */
void qp_linear_begin_step(qp_linear *l, int64_t step, int log_qerr)
{
    qp_linear_flush(l);
    l->step = step;
    l->micro = 0;
    l->log_qerr = log_qerr;
}

void qp_linear_begin_micro(qp_linear *l, int micro)
{
    qp_linear_flush(l);
    l->micro = micro;
}

const char *qp_linear_error(const qp_linear *l) { return l->err; }

void qp_linear_set_frozen(qp_linear *l, int frozen)
{
    qp_linear_flush(l);
    l->frozen = frozen;
}

qp_scaling_state *qp_linear_scaling(qp_linear *l, int layer, qp_gemm_id g, qp_operand o)
{
    if (layer < 0 || layer >= l->cfg.n_layers || (unsigned)g >= QP_BLOCK_GEMMS || (unsigned)o >= QP_OPND_COUNT)
        return NULL;
    return &l->states[state_index(layer, g, o)];
}

void qp_linear_event_counts(const qp_linear *l, int64_t counts[QP_EV_COUNT])
{
    memcpy(counts, l->n_events, sizeof l->n_events);
}

/* ---- one operand use ------------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t qp_linear_rht_seed(uint64_t seed) { return mix64(seed ^ 0x52485431ull); }

/* A failed operation: its message becomes the dispatch's. */
static int op_failed(qp_linear *l)
{
    snprintf(l->err, sizeof l->err, "%s", l->ops->error ? l->ops->error(l->ops->ctx) : "operation failed");
    return -1;
}

/* The rules of one use: quantization options (unscaled, SR seed/stream/word
 * map, the scale the scaling state gives), and what the scaling state and
 * data parallelism do with it. */
typedef struct {
    qp_qopts opts;
    int owner;           /* the tensor's owning use (qp_linear_plan.owner) */
    int update;          /* ... and its scaling state is updated after (not when frozen) */
    int reduce_amax;     /* data parallel: reduce this slice's amax over the ranks before quantizing */
    int scale_from_amax; /* ... and take the tensor scale from that global amax (current scaling) */
} use_rules;

/* Operand o of GEMM g in `pass`, quantized as rows x cols (after any
 * transpose; trans: still stored transposed). Prepares st's scale at the
 * owning use. */
static void use_init(use_rules *u, const qp_linear *l, const qp_linear_plan *plan, qp_scaling_state *st, int layer,
                     qp_gemm_id g, qp_pass pass, qp_operand o, int trans, int rows, int cols)
{
    const qp_use_plan *use = &plan->use[pass][o];
    const qp_format_traits *t = &qp_formats[use->fmt];
    memset(u, 0, sizeof *u);
    u->opts.unscaled = true;
    u->opts.stochastic = use->sr;
    u->opts.seed = l->cfg.seed;
    u->opts.stream = mix64((uint64_t)l->step) ^ mix64(((uint64_t)l->micro << 32) | ((uint64_t)layer << 24) |
                                                      ((uint64_t)g << 16) | ((uint64_t)pass << 8) | (uint64_t)o);
    u->owner = plan->owner[o] == pass;
    u->update = u->owner && !l->frozen;
    if (t->tensor_scale) {
        if (u->owner) qp_scaling_prepare(st, &u->opts);
        else if (use->scaling == QP_SCALING_DELAYED) u->opts.scale = st->last_scale; /* the owner's format: qp_recipe */
    }
    /* Data parallel: this rank holds a token slice of an activation. */
    if (o == QP_OPND_W || l->cfg.dp_size <= 1) return;
    const int qcols = trans ? rows : cols;
    /* tokens run along the quantized rows, except in wgrad once transposed */
    const int tokens_are_cols = pass == QP_PASS_WGRAD && !trans;
    const int64_t m = pass == QP_PASS_WGRAD ? cols : rows; /* this rank's tokens */
    if (tokens_are_cols) {
        u->opts.sr_offset = (int64_t)l->cfg.dp_rank * m;
        u->opts.sr_row_stride = (int64_t)l->cfg.dp_size * m;
    } else {
        u->opts.sr_offset = (int64_t)l->cfg.dp_rank * m * qcols;
    }
    u->scale_from_amax = t->tensor_scale && use->scaling != QP_SCALING_DELAYED;
    u->reduce_amax = l->cfg.reduce_max && (u->update || u->scale_from_amax);
    if (!u->reduce_amax) u->scale_from_amax = 0;
}

/* Data parallel scaling update: the counts summed over the ranks. */
static void reduce_counts(const qp_linear_cfg *cfg, qp_qstats *qs)
{
    if (!cfg->reduce_sum) return;
    double c[5] = {(double)qs->n, (double)qs->n_nonfinite, (double)qs->n_nonzero, (double)qs->n_sat,
                   (double)qs->n_flushed};
    cfg->reduce_sum(c, 5, cfg->reduce_user);
    qs->n = (int64_t)c[0], qs->n_nonfinite = (int64_t)c[1], qs->n_nonzero = (int64_t)c[2];
    qs->n_sat = (int64_t)c[3], qs->n_flushed = (int64_t)c[4];
}

/* One kept use's statistics: the scaling update and the qerr row. */
static void apply_stats(qp_linear *l, const pending_use *p, const qp_linear_stats *s)
{
    if (p->update) {
        qp_qstats qs = s->qs;
        if (p->reduce) {
            qs.amax = p->gamax;
            reduce_counts(&l->cfg, &qs);
        }
        qp_scaling_update(&l->states[state_index(p->layer, p->g, p->o)], p->step, &qs);
    }
    if (p->want_row) {
        qp_qerr_row row = {p->step, p->layer, qp_gemm_name(p->g), qp_operand_name(p->o), qp_pass_name(p->pass),
                           s->rel_l2, s->snr_db, s->sat_frac, s->zero_frac, s->amax, s->qs.scale};
        l->cfg.on_qerr(&row, l->cfg.user);
        const qp_fmt fmt = l->plans[p->layer * QP_BLOCK_GEMMS + p->g].use[p->pass][p->o].fmt;
        if (l->cfg.on_bscale && s->bsd.n_blocks > 0) {
            const qp_bscale_row b = {p->step, p->layer, row.gemm, row.operand, row.pass, qp_formats[fmt].name,
                                     s->bsd.n_blocks, s->bsd.log2_std, s->bsd.saturated_frac, s->bsd.underflow_frac,
                                     s->elems_flushed_frac, s->elems_saturated_frac, s->bsd.dynamic_range_max_log2};
            l->cfg.on_bscale(&b, s->bsd.hist, QP_BSHIST_BINS, l->cfg.user);
        }
    }
}

int qp_linear_flush(qp_linear *l)
{
    if (l->failed) return -1;
    if (l->n_pending == 0) return 0;
    const int n = l->n_pending;
    l->n_pending = 0;
    if (l->ops->fetch_kept(l->ops->ctx, n, l->kept)) {
        l->failed = 1;
        return op_failed(l);
    }
    for (int i = 0; i < n; i++) apply_stats(l, &l->pending[i], &l->kept[i]);
    return 0;
}

/* The statistics of the use just quantized on `side` wait for the flush; a
 * full kept list is flushed at once (the CPU's list has one slot). Under
 * delayed scaling the step's other uses of the tensor take the scale this
 * use took (qp_scaling_update's last_scale), noted now. */
static int keep_stats(qp_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, const use_rules *u,
                      int side, int want_row, float gamax)
{
    const qp_linear_ops *op = l->ops;
    if (op->keep(op->ctx, side, l->n_pending)) return op_failed(l);
    l->pending[l->n_pending++] = (pending_use){l->step, layer, g, pass, o, u->update, want_row,
                                               u->update && u->reduce_amax, gamax};
    qp_scaling_state *st = &l->states[state_index(layer, g, o)];
    if (u->update && st->cfg.mode == QP_SCALING_DELAYED && qp_formats[st->fmt].tensor_scale)
        st->last_scale = u->opts.scale;
    const int cap = op->max_kept < l->max_pending ? op->max_kept : l->max_pending;
    return l->n_pending >= cap ? qp_linear_flush(l) : 0;
}

/* Square 2D blocks (NVFP4-2D's 16x16 tiles) cover the same elements whether
 * the tensor is read as stored or transposed, so, without the RHT or SR
 * (whose words follow the layout), quantizing the stored layout gives the
 * transposed quantization's values, transposed: no transpose needed. Not for
 * formats handed to the GEMM as codes with per-(row, K-chunk) scales (FP8
 * 128x128 blocks: qp_format_traits.unscaled_exact false), whose scales
 * follow the layout. */
static int stored_layout_quantizes_alike(const qp_format_traits *t, const qp_use_plan *use)
{
    return t->block_rows > 1 && t->block_rows == t->block_cols && t->unscaled_exact && !use->rht && !use->sr;
}

void qp_linear_operand_uses(qp_operand o, qp_pass *first, qp_pass *later)
{
    switch (o) {
    case QP_OPND_X: *first = QP_PASS_FPROP, *later = QP_PASS_WGRAD; return;
    case QP_OPND_W: *first = QP_PASS_FPROP, *later = QP_PASS_DGRAD; return;
    case QP_OPND_DY: *first = QP_PASS_DGRAD, *later = QP_PASS_WGRAD; return;
    case QP_OPND_COUNT: break;
    }
    *first = *later = QP_PASS_FPROP;
}

int qp_linear_reusable(const qp_linear_plan *plan, qp_operand o)
{
    if ((unsigned)o >= QP_OPND_COUNT) return 0;
    qp_pass first, later;
    qp_linear_operand_uses(o, &first, &later);
    const qp_use_plan *a = &plan->use[first][o], *b = &plan->use[later][o];
    const qp_format_traits *t = &qp_formats[a->fmt];
    const int no_blocks = t->block_rows == 1 && t->block_cols == 1;
    return a->fmt != QP_FMT_FP32 && t->unscaled_exact && !a->rht && !a->sr && memcmp(a, b, sizeof *a) == 0 &&
           (no_blocks || stored_layout_quantizes_alike(t, a));
}

/* The format of operand `side` of pass p of GEMM g (FP32 for the head). */
static qp_fmt use_fmt(const qp_linear *l, int layer, qp_gemm_id g, qp_pass p, int side)
{
    if (g == QP_GEMM_HEAD) return QP_FMT_FP32;
    return l->plans[layer * QP_BLOCK_GEMMS + g].use[p][qp_pass_operand(p, side)].fmt;
}

/* The forward's record of X or W for the backward (kept_copy), or -1 (none:
 * dY, an operand the backward quantizes differently, or --requantize). */
static int kept_index(const qp_linear *l, int layer, qp_gemm_id g, qp_operand o)
{
    return o == QP_OPND_DY || l->cfg.requantize || !qp_linear_reusable(&l->plans[layer * QP_BLOCK_GEMMS + g], o)
               ? -1
               : copy_index(layer, g, o);
}

/* The forward's record of X or W for the backward, made as it quantizes
 * them (or takes them quantized): the slot the operations keep their
 * quantized copy in (qp_linear_qjob.keep), or -1. */
static int keep_for_backward(qp_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, const float *src,
                             int gamax_ok, float gamax)
{
    const int kept = pass == QP_PASS_FPROP ? kept_index(l, layer, g, o) : -1;
    if (kept >= 0) l->copies[kept] = (kept_copy){src, l->step, l->micro, gamax_ok, gamax};
    return l->ops->reuse && kept < l->ops->max_copies ? kept : -1;
}

/* Where a later use finds its operand already quantized
 * (qp_linear_reusable): -2 nowhere, -1 the side's last quantization (dY:
 * dgrad's, just before), or the forward's record of the same tensor in this
 * step and micro-batch (X, W). */
static int reuse_source(const qp_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, const float *src)
{
    qp_pass first, later;
    qp_linear_operand_uses(o, &first, &later);
    if (pass != later || !qp_linear_reusable(&l->plans[layer * QP_BLOCK_GEMMS + g], o)) return -2;
    if (o == QP_OPND_DY) return -1;
    if (l->cfg.requantize) return -2;
    const int i = copy_index(layer, g, o);
    const kept_copy *c = &l->copies[i];
    return c->src == src && c->step == l->step && c->micro == l->micro ? i : -2;
}

/* Quantize one GEMM operand (rows x cols, contraction along cols; src stored
 * cols x rows when src_trans) for `pass`, for a GEMM of `kind`, or hand the
 * GEMM the earlier use's quantization when it is the same. */
static int prepare(qp_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, int side, const float *src,
                   const qp_linear_rounded *rounded, int src_trans, int rows, int cols, int kind, qp_linear_operand *out)
{
    const qp_linear_ops *op = l->ops;
    void *x = op->ctx;
    qp_pass first, later;
    qp_linear_operand_uses(o, &first, &later);
    qp_linear_rounded want;
    if (rounded && (pass != first || !qp_linear_takes_rounded(l, layer, g, o, &want) || want.fmt != rounded->fmt ||
                    memcmp(&want.scale, &rounded->scale, sizeof want.scale) != 0)) {
        snprintf(l->err, sizeof l->err, "%s of %s in layer %d handed over quantized where the dispatch quantizes it",
                 qp_operand_name(o), qp_gemm_name(g), layer);
        return -1;
    }
    if (g == QP_GEMM_HEAD || l->plans[layer * QP_BLOCK_GEMMS + g].use[pass][o].fmt == QP_FMT_FP32)
        return op->plain(x, src, src_trans, rows, cols, side, out) ? op_failed(l) : 0;
    const qp_linear_plan *plan = &l->plans[layer * QP_BLOCK_GEMMS + g];
    const qp_use_plan *use = &plan->use[pass][o];
    const qp_format_traits *t = &qp_formats[use->fmt];
    qp_scaling_state *st = &l->states[state_index(layer, g, o)];
    const int want_row = l->log_qerr && l->cfg.on_qerr;
    use_rules u;
    if (rounded) {
        /* its producer rounded it (qp_linear_takes_rounded): what quantize()
         * would have left, without the pass */
        use_init(&u, l, plan, st, layer, g, pass, o, src_trans, rows, cols);
        const qp_linear_qjob job = {use->fmt, src, rows, cols, src_trans, &u.opts, side, kind, u.update, 0,
                                    keep_for_backward(l, layer, g, pass, o, src, 0, 0.0f), -1};
        qp_qstats counts;
        qp_round_tally_stats(&rounded->tally, (int64_t)rows * cols, rounded->scale, &counts);
        if (op->take_rounded(x, &job, &counts, out)) return op_failed(l);
        return job.want_stats ? keep_stats(l, layer, g, pass, o, &u, side, 0, 0.0f) : 0;
    }
    const int from = reuse_source(l, layer, g, pass, o, src);
    if (from >= -1 && op->reuse) {
        /* the same values and statistics as the earlier use: a later use is
         * never the owner, so nothing here needs this use's amax */
        use_init(&u, l, plan, st, layer, g, pass, o, src_trans, rows, cols);
        const qp_linear_qjob job = {use->fmt, src, rows, cols, src_trans, &u.opts, side, kind, u.update || want_row,
                                    want_row, -1, from};
        if (op->reuse(x, &job, out)) return op_failed(l);
        return job.want_stats ? keep_stats(l, layer, g, pass, o, &u, side, want_row, 0.0f) : 0;
    }
    if (use->rht && cols % use->rht) {
        snprintf(l->err, sizeof l->err,
                 "the %d-point Hadamard transform needs a contraction of a multiple of %d, not %d (layer %d, %s)",
                 use->rht, use->rht, cols, layer, qp_gemm_name(g));
        return -1;
    }
    if (use->rht_te && !op->rht_te) {
        snprintf(l->err, sizeof l->err, "rht=te: this backend has no Transformer Engine transform (layer %d, %s)",
                 layer, qp_gemm_name(g));
        return -1;
    }
    const float *in = src;
    int trans = src_trans;
    const uint64_t rht_seed = qp_linear_rht_seed(l->cfg.seed);
    const int retile = trans && (t->block_cols > 1 || use->rht) && !stored_layout_quantizes_alike(t, use);
    if (retile && op->quantize_stored && l->cfg.dp_size <= 1 && !use->rht_te) {
        /* the operations may quantize it where it lies, as the transposed copy
         * would be (data parallel runs take the copy: their amax is reduced
         * between the passes) */
        use_init(&u, l, plan, st, layer, g, pass, o, 0, rows, cols);
        const qp_linear_qjob job = {use->fmt, src, rows, cols, 1, &u.opts, side, kind, u.update || want_row,
                                    want_row, -1, -1};
        int done = 0;
        if (op->quantize_stored(x, &job, use->rht, rht_seed, out, &done)) return op_failed(l);
        if (done) return job.want_stats ? keep_stats(l, layer, g, pass, o, &u, side, want_row, 0.0f) : 0;
    }
    float fused_amax = 0.0f; /* the rotated tensor's amax, from the pass that wrote it */
    int fused = 0;
    if (retile && use->rht && !use->rht_te && op->transpose_rht) {
        if (op->transpose_rht(x, src, op->tbuf[side], cols, rows, use->rht, rht_seed, &fused_amax)) return op_failed(l);
        fused = 1;
        in = op->tbuf[side];
        trans = 0;
    } else {
        if (retile) {
            if (op->transpose(x, src, op->tbuf[side], cols, rows)) return op_failed(l);
            in = op->tbuf[side];
            trans = 0;
        }
        if (use->rht) {
            if (in != op->tbuf[side] && op->copy(x, op->tbuf[side], in, (int64_t)rows * cols)) return op_failed(l);
            if (use->rht_te ? op->rht_te(x, op->tbuf[side], rows, cols)
                            : op->rht(x, op->tbuf[side], rows, cols, use->rht, rht_seed))
                return op_failed(l);
            in = op->tbuf[side];
        }
    }
    use_init(&u, l, plan, st, layer, g, pass, o, trans, rows, cols);
    const int64_t n = (int64_t)rows * cols;
    /* a later use the operations could not hand the earlier quantization:
     * the same tensor, so the earlier use's global amax */
    const int known = from == -1 ? l->dy_gamax_ok : from >= 0 && l->copies[from].gamax_ok;
    float gamax = 0.0f;
    if (u.reduce_amax) {
        /* data parallel (qp_linear.h): the tensor scale of current scaling
         * and the scaling update see every rank's amax */
        if (known) {
            gamax = from == -1 ? l->dy_gamax : l->copies[from].gamax;
        } else {
            /* this rank's amax: from the pass that wrote the tensor, or a pass of its own */
            if (fused) {
                gamax = fused_amax;
            } else if (!op->amax) {
                snprintf(l->err, sizeof l->err, "data parallelism needs the backend's amax operation");
                return -1;
            } else if (op->amax(x, in, n, &gamax)) {
                return op_failed(l);
            }
            l->cfg.reduce_max(&gamax, 1, l->cfg.reduce_user);
        }
        if (pass == QP_PASS_DGRAD && o == QP_OPND_DY) l->dy_gamax = gamax, l->dy_gamax_ok = 1;
        if (u.scale_from_amax) u.opts.scale = qp_scale_from_amax(qp_tensor_scale_range(use->fmt), gamax, 0);
    }
    const qp_linear_qjob job = {use->fmt, in, rows, cols, trans, &u.opts, side, kind, u.update || want_row,
                                want_row, keep_for_backward(l, layer, g, pass, o, src, u.reduce_amax, gamax), -1};
    if (op->quantize(x, &job, out)) return op_failed(l);
    return job.want_stats ? keep_stats(l, layer, g, pass, o, &u, side, want_row, gamax) : 0;
}

static int run(qp_linear *l, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N, int K,
               int accumulate)
{
    const qp_linear_ops *op = l->ops;
    return op->gemm(op->ctx, a, b, C, M, N, K, a->scale_inv * b->scale_inv, accumulate) ? op_failed(l) : 0;
}

static int kind_of(qp_linear *l, int layer, qp_gemm_id g, qp_pass p, int M, int N, int K)
{
    const qp_linear_ops *op = l->ops;
    if (!op->gemm_kind) return QP_LINEAR_EMULATED;
    return op->gemm_kind(op->ctx, use_fmt(l, layer, g, p, 0), use_fmt(l, layer, g, p, 1), M, N, K);
}

static int check(qp_linear *l, int layer, qp_gemm_id g, int M, int IC, int OC)
{
    if (l->failed) return -1; /* err holds the failed flush's message */
    /* the operands: X (M x IC), W (OC x IC), dY (M x OC) */
    const int64_t x = (int64_t)M * IC, w = (int64_t)OC * IC, dy = (int64_t)M * OC;
    const int64_t biggest = x > w ? (x > dy ? x : dy) : (w > dy ? w : dy);
    if ((unsigned)g >= QP_GEMM_COUNT || (g != QP_GEMM_HEAD && (layer < 0 || layer >= l->cfg.n_layers ||
                                                               !(l->cfg.gemms >> g & 1u) ||
                                                               biggest > l->ops->max_elems))) {
        snprintf(l->err, sizeof l->err, "GEMM %s of layer %d (%dx%dx%d) outside the dispatch's blocks, GEMMs or sizes",
                 qp_gemm_name(g), layer, M, IC, OC);
        return -1;
    }
    return 0;
}

int qp_linear_takes_rounded(const qp_linear *l, int layer, qp_gemm_id g, qp_operand o, qp_linear_rounded *how)
{
    memset(how, 0, sizeof *how);
    if (layer < 0 || layer >= l->cfg.n_layers || (unsigned)g >= QP_BLOCK_GEMMS || !(l->cfg.gemms >> g & 1u) ||
        (o != QP_OPND_X && o != QP_OPND_DY) || !l->ops->take_rounded || (l->log_qerr && l->cfg.on_qerr) ||
        l->cfg.dp_size > 1)
        return 0;
    const qp_linear_plan *plan = &l->plans[layer * QP_BLOCK_GEMMS + g];
    qp_pass first, later;
    qp_linear_operand_uses(o, &first, &later);
    const qp_use_plan *use = &plan->use[first][o];
    /* the later use reads it as it is: the reused quantization (X: from the
     * forward's record, which --requantize does without) */
    if (!qp_linear_reusable(plan, o) || !l->ops->reuse || (o == QP_OPND_X && l->cfg.requantize)) return 0;
    how->fmt = use->fmt;
    how->scale = 1.0f;
    switch (use->fmt) {
    case QP_FMT_BF16: return 1;
    case QP_FMT_FP8_E4M3:
    case QP_FMT_FP8_E5M2: {
        /* the scale the owning use will take (use_init's); known now only under delayed scaling */
        const qp_scaling_state *st = &l->states[state_index(layer, g, o)];
        qp_qopts opts = {0};
        qp_scaling_prepare(st, &opts);
        how->scale = opts.scale;
        return use->scaling == QP_SCALING_DELAYED && opts.scale > 0.0f && isfinite(opts.scale);
    }
    case QP_FMT_FP32:
    case QP_FMT_MXFP8:
    case QP_FMT_MXFP8_E5M2:
    case QP_FMT_MXFP4:
    case QP_FMT_NVFP4:
    case QP_FMT_NVFP4_2D:
    case QP_FMT_MXFP8_RCEIL:
    case QP_FMT_MXFP4_RCEIL:
    case QP_FMT_FP8_BLOCK:
    case QP_FMT_FP8_BLOCK_2D:
    case QP_FMT_FP8_BLOCK_POW2:
    case QP_FMT_FP8_BLOCK_2D_POW2:
    case QP_FMT_NVFP4_4O6:
    case QP_FMT_MXFP6_E2M3:
    case QP_FMT_MXFP6_E3M2:
    case QP_FMT_NVFP4_4O6_TE:
    case QP_FMT_NVFP4_4O6_TE_MSE:
    case QP_FMT_NVFP4_4O6_TE_2D:
    case QP_FMT_NVFP4_4O6_TE_MSE_2D:
    case QP_FMT_NVFP4_ROW:
    case QP_FMT_COUNT: return 0; /* block scales: the amax of each block first */
    }
    return 0;
}

int qp_linear_forward_rounded(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X,
                              const qp_linear_rounded *x_rounded, const float *W, const float *b, int M, int IC,
                              int OC)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    qp_linear_operand a, w;
    const int kind = kind_of(l, layer, g, QP_PASS_FPROP, M, OC, IC);
    if (prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_X, 0, X, x_rounded, 0, M, IC, kind, &a) ||
        prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_W, 1, W, NULL, 0, OC, IC, kind, &w) ||
        run(l, &a, &w, Y, M, OC, IC, 0))
        return -1;
    return b && l->ops->bias_add(l->ops->ctx, Y, b, M, OC) ? op_failed(l) : 0;
}

int qp_linear_forward(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                      int M, int IC, int OC)
{
    return qp_linear_forward_rounded(l, layer, g, Y, X, NULL, W, b, M, IC, OC);
}

int qp_linear_backward(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                       const float *X, const float *W, int M, int IC, int OC, int dx_accumulate)
{
    return qp_linear_backward_rounded(l, layer, g, dX, dW, db, dY, NULL, X, W, M, IC, OC, dx_accumulate);
}

int qp_linear_backward_rounded(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db,
                               const float *dY, const qp_linear_rounded *dy_rounded, const float *X, const float *W,
                               int M, int IC, int OC, int dx_accumulate)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    if (dy_rounded && db) {
        snprintf(l->err, sizeof l->err, "a bias gradient needs dY before quantization (%s of layer %d)",
                 qp_gemm_name(g), layer);
        return -1;
    }
    qp_linear_operand a, b;
    l->dy_gamax_ok = 0;
    /* dgrad: dX[M,IC] (+)= dY[M,OC] (W^T)[IC,OC]^T; W is stored OC x IC = K x N */
    int kind = kind_of(l, layer, g, QP_PASS_DGRAD, M, IC, OC);
    if (prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_DY, 0, dY, dy_rounded, 0, M, OC, kind, &a) ||
        prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_W, 1, W, NULL, 1, IC, OC, kind, &b) ||
        run(l, &a, &b, dX, M, IC, OC, dx_accumulate != 0))
        return -1;
    /* wgrad: dW[OC,IC] += (dY^T)[OC,M] (X^T)[IC,M]^T; dY and X are stored M x rows = K x . */
    kind = kind_of(l, layer, g, QP_PASS_WGRAD, OC, IC, M);
    if (prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_DY, 0, dY, NULL, 1, OC, M, kind, &a) ||
        prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_X, 1, X, NULL, 1, IC, M, kind, &b) ||
        run(l, &a, &b, dW, OC, IC, M, 1))
        return -1;
    return db && l->ops->bias_grad(l->ops->ctx, db, dY, M, OC) ? op_failed(l) : 0;
}
