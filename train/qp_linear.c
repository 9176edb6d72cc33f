/* qp_linear.c — the precision dispatch (see qp_linear.h). */
#include "qp_linear.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_metrics.h"
#include "qp_scaling.h"
#include "qp_transpose.h"

static const char *const gemm_names[] = {
    [QP_GEMM_QKV] = "qkv",   [QP_GEMM_ATTPROJ] = "attproj", [QP_GEMM_FC] = "fc",     [QP_GEMM_FCPROJ] = "fcproj",
    [QP_GEMM_GATE] = "gate", [QP_GEMM_UP] = "up",           [QP_GEMM_DOWN] = "down", [QP_GEMM_HEAD] = "head"};
_Static_assert(sizeof gemm_names / sizeof gemm_names[0] == QP_GEMM_COUNT, "a name per GEMM id");
const char *qp_gemm_name(qp_gemm_id g) { return (unsigned)g < QP_GEMM_COUNT ? gemm_names[g] : "?"; }

#define N_QGEMMS QP_GEMM_BLOCK_COUNT /* the quantized GEMMs of a block; the head is FP32 */

struct qp_linear {
    qp_linear_cfg cfg;
    qp_linear_plan *plans;      /* per layer */
    qp_scaling_state *states;   /* [layer][gemm][operand] */
    float *tbuf[2], *qbuf[2];   /* per GEMM side: transposed/rotated copy, quantized copy */
    float *mbuf;                /* dequantized values for error metrics */
    /* per side, grown on first use by a format whose block scales cannot go
     * into alpha (FP32-scaled FP8 blocks): packed codes and scales, and the
     * scale of every (row, K-chunk) for qp_gemm_run_kscaled */
    uint8_t *kcodes[2], *kscales[2];
    float *kscale[2];
    size_t kcodes_n[2], kscales_n[2], kscale_n[2];
    int64_t step;
    int micro;
    int log_qerr;
    int frozen;
    int64_t n_events[QP_EV_COUNT];
    char err[256];
};

static int state_index(const qp_linear *l, int layer, int g, int o)
{
    (void)l;
    return (layer * N_QGEMMS + g) * QP_OPND_COUNT + o;
}

static void on_scaling_event(const qp_recalib_event *ev, void *user)
{
    qp_linear *l = user;
    l->n_events[ev->kind]++;
    if (!l->cfg.on_event) return;
    const int id = ev->tensor_id, o = id % QP_OPND_COUNT, g = (id / QP_OPND_COUNT) % N_QGEMMS,
              layer = id / QP_OPND_COUNT / N_QGEMMS;
    qp_event_row row = {ev->step, layer, qp_gemm_name((qp_gemm_id)g), qp_operand_name((qp_operand)o),
                        qp_event_kind_name(ev->kind), ev->old_scale, ev->new_scale, ev->amax};
    l->cfg.on_event(&row, l->cfg.user);
}

qp_linear *qp_linear_create(const qp_linear_cfg *cfg, char *err, size_t errlen)
{
    qp_linear *l = calloc(1, sizeof *l);
    if (!l) goto oom;
    l->cfg = *cfg;
    const int L = cfg->n_layers;
    l->plans = calloc((size_t)L, sizeof *l->plans);
    l->states = calloc((size_t)L * N_QGEMMS * QP_OPND_COUNT, sizeof *l->states);
    if (!l->plans || !l->states) goto oom;
    for (int layer = 0; layer < L; layer++) {
        l->plans[layer] = qp_recipe_plan(cfg->recipe, layer, L);
        qp_scaling_cfg sc;
        qp_scaling_cfg_default(&sc, l->plans[layer].scaling);
        sc.history_len = cfg->recipe->history_len;
        sc.algo = cfg->recipe->algo;
        sc.on_event = on_scaling_event;
        sc.user = l;
        for (int g = 0; g < N_QGEMMS; g++)
            for (int o = 0; o < QP_OPND_COUNT; o++) {
                const int i = state_index(l, layer, g, o);
                if (qp_scaling_init(&l->states[i], &sc, l->plans[layer].fmt[o], i)) goto oom;
            }
    }
    const size_t bytes = (size_t)(cfg->max_elems > 0 ? cfg->max_elems : 1) * sizeof(float);
    for (int s = 0; s < 2; s++) {
        l->tbuf[s] = malloc(bytes);
        l->qbuf[s] = malloc(bytes);
        if (!l->tbuf[s] || !l->qbuf[s]) goto oom;
    }
    l->mbuf = malloc(bytes);
    if (!l->mbuf) goto oom;
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
        for (int i = 0; i < l->cfg.n_layers * N_QGEMMS * QP_OPND_COUNT; i++) qp_scaling_free(&l->states[i]);
    free(l->states);
    free(l->plans);
    for (int s = 0; s < 2; s++) free(l->tbuf[s]), free(l->qbuf[s]), free(l->kcodes[s]), free(l->kscales[s]), free(l->kscale[s]);
    free(l->mbuf);
    free(l);
}

void qp_linear_begin_step(qp_linear *l, int64_t step, int log_qerr)
{
    l->step = step;
    l->micro = 0;
    l->log_qerr = log_qerr;
}

void qp_linear_begin_micro(qp_linear *l, int micro) { l->micro = micro; }

const char *qp_linear_error(const qp_linear *l) { return l->err; }
void qp_linear_set_frozen(qp_linear *l, int frozen) { l->frozen = frozen; }

qp_scaling_state *qp_linear_scaling(qp_linear *l, int layer, qp_gemm_id g, qp_operand o)
{
    if (layer < 0 || layer >= l->cfg.n_layers || (unsigned)g >= N_QGEMMS) return NULL;
    return &l->states[state_index(l, layer, g, o)];
}

void qp_linear_event_counts(const qp_linear *l, int64_t counts[QP_EV_COUNT])
{
    memcpy(counts, l->n_events, sizeof l->n_events);
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t qp_linear_rht_seed(uint64_t seed) { return mix64(seed ^ 0x52485431ull); }

int qp_linear_rht_n(const qp_linear_plan *plan)
{
    if (!plan->rht_wgrad) return 0;
    return plan->rht_n > 0 ? plan->rht_n : QK_RHT;
}

void qp_linear_use_init(qp_linear_use *u, const qp_linear_cfg *cfg, const qp_linear_plan *plan, qp_scaling_state *st,
                        int64_t step, int micro, int frozen, int layer, qp_gemm_id g, qp_pass pass, qp_operand o,
                        int trans, int rows, int cols)
{
    const qp_fmt fmt = plan->fmt[o];
    const qp_format_traits *t = &qp_formats[fmt];
    memset(u, 0, sizeof *u);
    u->opts.unscaled = true;
    u->opts.stochastic = plan->sr[o];
    u->opts.seed = cfg->seed;
    u->opts.stream = mix64((uint64_t)step) ^ mix64(((uint64_t)micro << 32) | ((uint64_t)layer << 24) |
                                                   ((uint64_t)g << 16) | ((uint64_t)pass << 8) | (uint64_t)o);
    u->first_use = (pass == QP_PASS_FPROP && o != QP_OPND_DY) || (pass == QP_PASS_DGRAD && o == QP_OPND_DY);
    u->update = u->first_use && !frozen;
    if (t->tensor_scale) {
        if (u->first_use) qp_scaling_prepare(st, &u->opts);
        else if (plan->scaling == QP_SCALING_DELAYED) u->opts.scale = st->last_scale;
    }
    /* Data parallel: this rank holds a token slice of an activation. */
    if (o == QP_OPND_W || cfg->dp_size <= 1) return;
    const int qcols = trans ? rows : cols;
    /* tokens run along the quantized rows, except in wgrad once transposed */
    const int tokens_are_cols = pass == QP_PASS_WGRAD && !trans;
    const int64_t m = pass == QP_PASS_WGRAD ? cols : rows; /* this rank's tokens */
    if (tokens_are_cols) {
        u->opts.sr_offset = (int64_t)cfg->dp_rank * m;
        u->opts.sr_row_stride = (int64_t)cfg->dp_size * m;
    } else {
        u->opts.sr_offset = (int64_t)cfg->dp_rank * m * qcols;
    }
    const int current = plan->scaling != QP_SCALING_DELAYED;
    u->scale_from_amax = t->tensor_scale && current;
    u->reduce_amax = cfg->reduce_max && (u->update || u->scale_from_amax);
    if (!u->reduce_amax) u->scale_from_amax = 0;
}

void qp_linear_use_global_amax(qp_linear_use *u, qp_fmt fmt, float global_amax)
{
    if (u->scale_from_amax) u->opts.scale = qp_scale_from_amax(qp_tensor_scale_range(fmt), global_amax, 0);
}

void qp_linear_reduce_counts(const qp_linear_cfg *cfg, qp_qstats *qs)
{
    if (!cfg->reduce_sum) return;
    double c[5] = {(double)qs->n, (double)qs->n_nonfinite, (double)qs->n_nonzero, (double)qs->n_sat,
                   (double)qs->n_flushed};
    cfg->reduce_sum(c, 5, cfg->reduce_user);
    qs->n = (int64_t)c[0], qs->n_nonfinite = (int64_t)c[1], qs->n_nonzero = (int64_t)c[2];
    qs->n_sat = (int64_t)c[3], qs->n_flushed = (int64_t)c[4];
}

/* src is rows x cols, or cols x rows when stored transposed; dst is rows x cols. */
static void transpose(const float *src, float *dst, int rows, int cols) { qp_transpose(src, dst, rows, cols); }

typedef struct {
    const float *data;
    int trans;       /* stored cols x rows */
    float scale_inv; /* per-tensor decode scale, folded into alpha */
    int bf16_exact;
    const float *kscale; /* not NULL: data holds element codes, this the scale of (row, K-chunk of QK_FP8_BLOCK) */
} operand;

static int grow(void **buf, size_t *cap, size_t bytes)
{
    if (*cap >= bytes) return 0;
    void *nb = realloc(*buf, bytes);
    if (!nb) return -1;
    *buf = nb;
    *cap = bytes;
    return 0;
}

/* A format whose block scales must stay out of the GEMM's operands (FP32
 * scales per 128 along K): quantize into packed storage, hand the GEMM the
 * element codes (exact in BF16) and each row's scale per K-chunk. The values
 * for error metrics (mbuf) are code * block scale, qp_qdq's. */
static int prepare_kchunked(qp_linear *l, int side, qp_fmt fmt, const float *in, int rows, int cols,
                            const qp_qopts *o, qp_qstats *qs)
{
    const qp_format_traits *t = &qp_formats[fmt];
    qp_qtensor q = {.fmt = fmt, .rows = rows, .cols = cols, .row_bytes = qp_row_bytes(fmt, cols), .scale_inv = 1.0f};
    qp_scale_shape(fmt, rows, cols, &q.scale_rows, &q.scale_cols);
    const int nk = (int)q.scale_cols;
    if (grow((void **)&l->kcodes[side], &l->kcodes_n[side], (size_t)rows * (size_t)q.row_bytes + 1) ||
        grow((void **)&l->kscales[side], &l->kscales_n[side],
             (size_t)(q.scale_rows * q.scale_cols * t->scale_bytes) + 1) ||
        grow((void **)&l->kscale[side], &l->kscale_n[side], (size_t)rows * nk * sizeof(float) + 1)) {
        snprintf(l->err, sizeof l->err, "out of memory for a block-scaled GEMM operand");
        return -1;
    }
    q.codes = l->kcodes[side];
    q.scales = l->kscales[side];
    if (qp_quantize(in, &q, o, qs)) {
        snprintf(l->err, sizeof l->err, "cannot quantize to %s", t->name);
        return -1;
    }
    qp_decode_codes(&q, l->qbuf[side]);
    float *ks = l->kscale[side];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nk; c++) ks[(size_t)r * nk + c] = qp_block_scale_at(&q, r, (int64_t)c * t->block_cols);
    return 0;
}

/* Square 2D blocks (NVFP4-2D's 16x16 tiles) cover the same elements whether
 * the tensor is read as stored or transposed, so, without the RHT or SR
 * (whose words follow the layout), quantizing the stored layout gives the
 * transposed quantization's values, transposed: no transpose needed. Not for
 * formats handed to the GEMM as codes with per-(row, K-chunk) scales
 * (prepare_kchunked: FP8 128x128 blocks), whose scales follow the layout. */
static int stored_layout_quantizes_alike(const qp_format_traits *t, int rht, int sr)
{
    return t->block_rows > 1 && t->block_rows == t->block_cols && t->unscaled_exact && !rht && !sr;
}

int qp_linear_dy_reusable(const qp_linear_plan *plan)
{
    const qp_format_traits *t = &qp_formats[plan->fmt[QP_OPND_DY]];
    return plan->fmt[QP_OPND_DY] != QP_FMT_FP32 && t->block_rows == 1 && t->block_cols == 1 && !plan->rht_wgrad &&
           !plan->sr[QP_OPND_DY];
}

/* The /quant/error row of an operand use (when logged): the source `in`
 * (rows x cols as the GEMM reads it) against this side's quantized copy
 * (qcols per stored row; prepare_kchunked's codes times their block scales). */
static void record_qerr(qp_linear *l, int layer, qp_gemm_id g, qp_operand o, qp_pass pass, int side, const float *in,
                        int rows, int cols, int qcols, const qp_qstats *qs)
{
    if (!l->log_qerr || !l->cfg.on_qerr) return;
    const qp_format_traits *t = &qp_formats[l->plans[layer].fmt[o]];
    const int64_t n = (int64_t)rows * cols;
    if (!t->unscaled_exact) {
        const int nk = (qcols + t->block_cols - 1) / t->block_cols;
        for (int64_t i = 0; i < n; i++)
            l->mbuf[i] = l->qbuf[side][i] * l->kscale[side][(i / qcols) * nk + (i % qcols) / t->block_cols];
    } else {
        for (int64_t i = 0; i < n; i++) l->mbuf[i] = l->qbuf[side][i] * qs->scale_inv;
    }
    qp_metrics m;
    qp_metrics_compute(in, l->mbuf, n, qs, &m);
    qp_qerr_row row = {l->step, layer, qp_gemm_name(g), qp_operand_name(o), qp_pass_name(pass),
                       m.rel_l2, m.snr_db, m.sat_frac, m.zero_frac, m.amax, qs->scale};
    l->cfg.on_qerr(&row, l->cfg.user);
}

/* Quantize one GEMM operand (rows x cols, contraction along cols) for `pass`.
 * *qs_out (may be NULL): what the quantization saw (before any data-parallel
 * reduction). reuse: this side's buffer already holds the operand quantized
 * exactly so (qp_linear_dy_reusable), with these stats; only its error is
 * recorded (record_qerr). Returns 0, or -1 with l->err set. */
static int prepare(qp_linear *l, int layer, qp_gemm_id g, qp_pass pass, qp_operand o, int side, const float *src,
                   int src_trans, int rows, int cols, operand *out, qp_qstats *qs_out, const qp_qstats *reuse)
{
    if (g == QP_GEMM_HEAD || l->plans[layer].fmt[o] == QP_FMT_FP32) {
        *out = (operand){src, src_trans, 1.0f, 0, NULL};
        return 0;
    }
    const qp_linear_plan *plan = &l->plans[layer];
    const qp_fmt fmt = plan->fmt[o];
    const qp_format_traits *t = &qp_formats[fmt];
    const int rht = pass == QP_PASS_WGRAD ? qp_linear_rht_n(plan) : 0;
    const int kchunked = !t->unscaled_exact;
    const float *in = src;
    int trans = src_trans;
    qp_qstats qs;
    if (reuse) {
        qs = *reuse;
        record_qerr(l, layer, g, o, pass, side, in, rows, cols, trans ? rows : cols, &qs);
        *out = (operand){l->qbuf[side], trans, qs.scale_inv, 1, NULL};
        return 0;
    }
    if (trans && (t->block_cols > 1 || rht) && !stored_layout_quantizes_alike(t, rht, plan->sr[o])) {
        transpose(src, l->tbuf[side], rows, cols);
        in = l->tbuf[side];
        trans = 0;
    }
    if (rht) {
        if (in != l->tbuf[side]) memcpy(l->tbuf[side], in, (size_t)rows * cols * sizeof(float));
        if (qp_rht(l->tbuf[side], rows, cols, rht, qp_linear_rht_seed(l->cfg.seed))) {
            snprintf(l->err, sizeof l->err,
                     "the %d-point Hadamard transform needs a contraction of a multiple of %d, not %d (layer %d, %s)",
                     rht, rht, cols, layer, qp_gemm_name(g));
            return -1;
        }
        in = l->tbuf[side];
    }
    qp_scaling_state *st = &l->states[state_index(l, layer, g, o)];
    qp_linear_use u;
    qp_linear_use_init(&u, &l->cfg, plan, st, l->step, l->micro, l->frozen, layer, g, pass, o, trans, rows, cols);
    const int qrows = trans ? cols : rows, qcols = trans ? rows : cols;
    float gamax = 0.0f;
    if (u.reduce_amax) {
        gamax = qp_amax(in, (int64_t)qrows * qcols);
        l->cfg.reduce_max(&gamax, 1, l->cfg.reduce_user);
        qp_linear_use_global_amax(&u, fmt, gamax);
    }
    if (kchunked) {
        if (prepare_kchunked(l, side, fmt, in, qrows, qcols, &u.opts, &qs)) return -1;
    } else if (qp_qdq(fmt, in, l->qbuf[side], qrows, qcols, &u.opts, &qs)) {
        snprintf(l->err, sizeof l->err, "cannot quantize to format %d", (int)fmt);
        return -1;
    }
    if (qs_out) *qs_out = qs;
    if (u.update && u.reduce_amax) {
        qs.amax = gamax;
        qp_linear_reduce_counts(&l->cfg, &qs);
    }
    if (u.update) qp_scaling_update(st, l->step, &qs);
    record_qerr(l, layer, g, o, pass, side, in, rows, cols, qcols, &qs);
    *out = (operand){l->qbuf[side], trans, qs.scale_inv, 1, kchunked ? l->kscale[side] : NULL};
    return 0;
}

static int run(qp_linear *l, const operand *a, const operand *b, float *C, int M, int N, int K, int accumulate)
{
    const float alpha = a->scale_inv * b->scale_inv;
    const int exact = a->bf16_exact && b->bf16_exact;
    const int rc = a->kscale || b->kscale
                       ? qp_gemm_run_kscaled(l->cfg.gemm, a->data, a->trans, b->data, b->trans, C, M, N, K,
                                             QK_FP8_BLOCK, a->kscale, b->kscale, alpha, accumulate, exact)
                       : qp_gemm_run(l->cfg.gemm, a->data, a->trans, b->data, b->trans, C, M, N, K, alpha,
                                     accumulate, exact);
    if (rc) {
        snprintf(l->err, sizeof l->err, "%s", qp_gemm_error(l->cfg.gemm));
        return -1;
    }
    return 0;
}

static int check(qp_linear *l, int layer, qp_gemm_id g, int M, int IC, int OC)
{
    /* the operands: X (M x IC), W (OC x IC), dY (M x OC) */
    const int64_t x = (int64_t)M * IC, w = (int64_t)OC * IC, dy = (int64_t)M * OC;
    const int64_t biggest = x > w ? (x > dy ? x : dy) : (w > dy ? w : dy);
    if (g != QP_GEMM_HEAD && (layer < 0 || layer >= l->cfg.n_layers || biggest > l->cfg.max_elems)) {
        snprintf(l->err, sizeof l->err, "GEMM %s of layer %d (%dx%dx%d) outside the dispatch's sizes",
                 qp_gemm_name(g), layer, M, IC, OC);
        return -1;
    }
    return 0;
}

int qp_linear_forward(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                      int M, int IC, int OC)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    operand a, w;
    if (prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_X, 0, X, 0, M, IC, &a, NULL, NULL) ||
        prepare(l, layer, g, QP_PASS_FPROP, QP_OPND_W, 1, W, 0, OC, IC, &w, NULL, NULL) ||
        run(l, &a, &w, Y, M, OC, IC, 0))
        return -1;
    if (b) {
#pragma omp parallel for schedule(static)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < OC; n++) Y[(size_t)m * OC + n] += b[n];
    }
    return 0;
}

int qp_linear_backward(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                       const float *X, const float *W, int M, int IC, int OC)
{
    if (check(l, layer, g, M, IC, OC)) return -1;
    operand a, b;
    /* dgrad: dX[M,IC] += dY[M,OC] (W^T)[IC,OC]^T; W is stored OC x IC = K x N */
    qp_qstats dy_qs;
    if (prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_DY, 0, dY, 0, M, OC, &a, &dy_qs, NULL) ||
        prepare(l, layer, g, QP_PASS_DGRAD, QP_OPND_W, 1, W, 1, IC, OC, &b, NULL, NULL) ||
        run(l, &a, &b, dX, M, IC, OC, 1))
        return -1;
    /* wgrad: dW[OC,IC] += (dY^T)[OC,M] (X^T)[IC,M]^T; dY and X are stored M x rows = K x . */
    const int reuse = g != QP_GEMM_HEAD && qp_linear_dy_reusable(&l->plans[layer]);
    if (prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_DY, 0, dY, 1, OC, M, &a, NULL, reuse ? &dy_qs : NULL) ||
        prepare(l, layer, g, QP_PASS_WGRAD, QP_OPND_X, 1, X, 1, IC, M, &b, NULL, NULL) ||
        run(l, &a, &b, dW, OC, IC, M, 1))
        return -1;
    if (db) {
        /* column sums, rows in order; threads own disjoint column ranges */
#pragma omp parallel for schedule(static)
        for (int n0 = 0; n0 < OC; n0 += 64) {
            const int n1 = n0 + 64 < OC ? n0 + 64 : OC;
            float sum[64] = {0};
            for (int m = 0; m < M; m++)
                for (int n = n0; n < n1; n++) sum[n - n0] += dY[(size_t)m * OC + n];
            for (int n = n0; n < n1; n++) db[n] += sum[n - n0];
        }
    }
    return 0;
}
