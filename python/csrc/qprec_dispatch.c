/* qprec_dispatch.c — recipes and the precision dispatch behind flat
 * functions for ctypes (python/qprec/torch.py).
 *
 * Owns: nothing of the recipe language or of the dispatch. A recipe is
 * parsed and resolved by train/qp_recipe.c (the parser qtrain runs; no
 * second one in Python), and every linear layer's operands go through
 * train/qp_linear.c, the dispatch qtrain runs, on the package's operations
 * (qprec_linear_ops.c), which hand the caller each GEMM's decoded operands
 * instead of multiplying them. A dispatch handle is one qp_linear with its
 * recipe, its capture and, when a run file is attached
 * (qprec_dispatch_set_runlog), the sink its quantization-error rows and
 * recalibration events go to. Return codes: 0, or -1 with the message in
 * err / qprec_dispatch_error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_linear.h"
#include "qp_recipe.h"
#include "qprec_dispatch.h"
#include "qp_linear_host.h"
#include "qprec_linear_ops.h"

#define QPREC_EXPORT __attribute__((visibility("default")))

struct qprec_dispatch {
    qp_recipe recipe;
    qp_linear *lin;
    qp_gemm *cap;
    int n_layers;
    unsigned gemms;
    qprec_row_sink sink; /* a run file's, or none */
    void *sink_user;
    int64_t n_qerr;      /* quantization-error rows made */
    char sink_err[256];  /* the first failure of the sink */
    char err[256];
};

#ifndef QPREC_HAVE_RUNFILE
/* built without HDF5: no run-file writer (qprec_runfile.c) */
QPREC_EXPORT int qprec_has_runfile(void) { return 0; }
#endif

QPREC_EXPORT int qprec_block_gemm_count(void) { return QP_BLOCK_GEMMS; }
QPREC_EXPORT int qprec_pass_count(void) { return QP_PASS_COUNT; }
QPREC_EXPORT int qprec_operand_count(void) { return QP_OPND_COUNT; }
QPREC_EXPORT const char *qprec_gemm_name(int g) { return (unsigned)g < QP_GEMM_COUNT ? qp_gemm_name(g) : NULL; }
QPREC_EXPORT const char *qprec_pass_name(int p) { return (unsigned)p < QP_PASS_COUNT ? qp_pass_name(p) : NULL; }
QPREC_EXPORT const char *qprec_operand_name(int o)
{
    return (unsigned)o < QP_OPND_COUNT ? qp_operand_name(o) : NULL;
}
QPREC_EXPORT int qprec_pass_operand(int p, int side)
{
    return (unsigned)p < QP_PASS_COUNT && (side == 0 || side == 1) ? (int)qp_pass_operand(p, side) : -1;
}
QPREC_EXPORT const char *qprec_recipe_names(void)
{
    static char names[QP_RECIPE_NAMES_MAX];
    return qp_recipe_names(names, sizeof names);
}

/* Parse spec and resolve it for n_layers blocks of the GEMMs gemms (a mask
 * of qp_gemm_id bits; 0: every one); plans may be NULL. */
static int resolve(const char *spec, int n_layers, unsigned gemms, qp_recipe *r, qp_linear_plan **plans, char *err,
                   size_t errlen)
{
    if (!spec || n_layers < 1) return snprintf(err, errlen, "a recipe and at least one block are needed"), -1;
    if (qp_recipe_parse(spec, r, err, errlen)) return -1;
    qp_linear_plan *p = calloc((size_t)n_layers * QP_BLOCK_GEMMS, sizeof *p);
    if (!p) return snprintf(err, errlen, "out of memory"), -1;
    if (qp_recipe_resolve(r, n_layers, gemms, p, err, errlen)) {
        free(p);
        return -1;
    }
    if (plans) *plans = p;
    else free(p);
    return 0;
}

/* 0 when spec parses and resolves for n_layers blocks of gemms; -1 with the
 * parser's one-line message otherwise. */
QPREC_EXPORT int qprec_recipe_check(const char *spec, int n_layers, unsigned gemms, char *err, size_t errlen)
{
    qp_recipe r;
    return resolve(spec, n_layers, gemms, &r, NULL, err, errlen);
}

/* The recipe spelled out (qp_recipe_explain) into buf; what = 0, or its one-line
 * description (qp_recipe_describe) for what = 1. The length needed, or -1
 * with err. */
QPREC_EXPORT int qprec_recipe_text(const char *spec, int n_layers, unsigned gemms, int what, char *buf, size_t len,
                                   char *err, size_t errlen)
{
    qp_recipe r;
    qp_linear_plan *plans;
    if (resolve(spec, n_layers, gemms, &r, &plans, err, errlen)) return -1;
    int n;
    if (what == 0) {
        n = qp_recipe_explain(&r, plans, n_layers, gemms, buf, len);
    } else {
        char line[2048];
        qp_recipe_describe(&r, plans, n_layers, gemms, line, sizeof line);
        n = (int)strlen(line);
        if (buf && len) snprintf(buf, len, "%s", line);
    }
    free(plans);
    if (n < 0) snprintf(err, errlen, "cannot spell out the recipe");
    return n;
}

static void on_qerr(const qp_qerr_row *row, void *user)
{
    qprec_dispatch *d = user;
    d->n_qerr++;
    if (d->sink.qerr && !d->sink_err[0] && !d->sink.qerr(d->sink_user, row, d->sink_err, sizeof d->sink_err))
        d->sink_err[0] = '\0';
}

static void on_event(const qp_event_row *row, void *user)
{
    qprec_dispatch *d = user;
    if (d->sink.event && !d->sink_err[0] && !d->sink.event(d->sink_user, row, d->sink_err, sizeof d->sink_err))
        d->sink_err[0] = '\0';
}

/* A dispatch for n_layers blocks of the GEMMs gemms, buffers for operands
 * of max_elems values to begin with (grown as calls need), SR and RHT seeded by seed (qtrain's --data-seed, else
 * --seed). NULL with err. */
QPREC_EXPORT qprec_dispatch *qprec_dispatch_create(const char *spec, int n_layers, unsigned gemms, uint64_t seed,
                                                   int64_t max_elems, char *err, size_t errlen)
{
    qprec_dispatch *d = calloc(1, sizeof *d);
    if (!d) return snprintf(err, errlen, "out of memory"), NULL;
    if (resolve(spec, n_layers, gemms, &d->recipe, NULL, err, errlen)) {
        free(d);
        return NULL;
    }
    d->n_layers = n_layers;
    d->gemms = gemms;
    if (!(d->cap = qprec_gemm_create())) {
        free(d);
        return snprintf(err, errlen, "out of memory"), NULL;
    }
    const qp_linear_cfg cfg = {.n_layers = n_layers, .gemms = gemms, .max_elems = max_elems, .seed = seed,
                               .recipe = &d->recipe, .gemm = d->cap, .on_event = on_event, .on_qerr = on_qerr,
                               .user = d};
    if (!(d->lin = qp_linear_create(&cfg, err, errlen))) {
        qprec_gemm_destroy(d->cap);
        free(d);
        return NULL;
    }
    /* qtrain's CPU operations, with the product handed to the caller */
    qp_linear_host_set_gemm(qp_linear_host_of(d->lin), qprec_gemm_product, d->cap);
    return d;
}

QPREC_EXPORT void qprec_dispatch_destroy(qprec_dispatch *d)
{
    if (!d) return;
    qp_linear_destroy(d->lin);
    qprec_gemm_destroy(d->cap);
    free(d);
}

QPREC_EXPORT const char *qprec_dispatch_error(const qprec_dispatch *d)
{
    return d->sink_err[0] ? d->sink_err : d->err[0] ? d->err : qp_linear_error(d->lin);
}

void qprec_dispatch_set_sink(qprec_dispatch *d, const qprec_row_sink *sink, void *user)
{
    qp_linear_flush(d->lin); /* rows kept so far go where they were going */
    d->sink = sink ? *sink : (qprec_row_sink){0};
    d->sink_user = user;
}

/* The plan of one use: out = format index, sr, rht size, scaling (0 current,
 * 1 delayed), history length, and whether this pass owns the operand's
 * scaling state. */
QPREC_EXPORT int qprec_dispatch_use(const qprec_dispatch *d, int layer, int g, int pass, int o, int64_t out[6])
{
    const qp_linear_plan *p = (unsigned)g < QP_BLOCK_GEMMS ? qp_linear_plan_of(d->lin, layer, g) : NULL;
    if (!p || (unsigned)pass >= QP_PASS_COUNT || (unsigned)o >= QP_OPND_COUNT) return -1;
    const qp_use_plan *u = &p->use[pass][o];
    out[0] = u->fmt, out[1] = u->sr, out[2] = u->rht, out[3] = u->scaling == QP_SCALING_DELAYED;
    out[4] = u->history_len, out[5] = p->owner[o] == (qp_pass)pass;
    return 0;
}

/* Blocks kept in BF16 at each end (the recipe's bf16-first/-last, defaults resolved). */
QPREC_EXPORT void qprec_dispatch_bf16_blocks(const qprec_dispatch *d, int out[2])
{
    qp_recipe_bf16_blocks(&d->recipe, d->n_layers, &out[0], &out[1]);
}

QPREC_EXPORT void qprec_dispatch_begin_step(qprec_dispatch *d, int64_t step, int log_qerr)
{
    qp_linear_begin_step(d->lin, step, log_qerr);
}

QPREC_EXPORT void qprec_dispatch_begin_micro(qprec_dispatch *d, int micro) { qp_linear_begin_micro(d->lin, micro); }
QPREC_EXPORT void qprec_dispatch_set_frozen(qprec_dispatch *d, int frozen) { qp_linear_set_frozen(d->lin, frozen); }
QPREC_EXPORT int qprec_dispatch_flush(qprec_dispatch *d)
{
    const int rc = qp_linear_flush(d->lin);
    return rc ? rc : d->sink_err[0] ? -1 : 0;
}

QPREC_EXPORT void qprec_dispatch_event_counts(const qprec_dispatch *d, int64_t counts[QP_EV_COUNT])
{
    qp_linear_event_counts(d->lin, counts);
}
QPREC_EXPORT int qprec_event_kind_count(void) { return QP_EV_COUNT; }
QPREC_EXPORT const char *qprec_event_kind_name(int k) { return (unsigned)k < QP_EV_COUNT ? qp_event_kind_name(k) : NULL; }
QPREC_EXPORT int64_t qprec_dispatch_qerr_rows(const qprec_dispatch *d) { return d->n_qerr; }

/* Buffers for the operands X (M x IC), W (OC x IC), dY (M x OC). */
static int reserve(qprec_dispatch *d, int M, int IC, int OC)
{
    const int64_t x = (int64_t)M * IC, w = (int64_t)OC * IC, dy = (int64_t)M * OC;
    const int64_t n = x > w ? (x > dy ? x : dy) : (w > dy ? w : dy);
    if (M < 1 || IC < 1 || OC < 1) return snprintf(d->err, sizeof d->err, "an empty GEMM (%dx%dx%d)", M, IC, OC), -1;
    if (qp_linear_host_reserve(qp_linear_host_of(d->lin), n)) return snprintf(d->err, sizeof d->err, "out of memory for %lld-value operands",
                                                        (long long)n), -1;
    return 0;
}

/* The forward of block GEMM g in `layer`: X (M x IC), W (OC x IC) in;
 * Xq (M x IC) and Wq (OC x IC) out, the decoded operands the dispatch
 * quantized for Y = X W^T (the caller multiplies and adds the bias). */
QPREC_EXPORT int qprec_dispatch_forward(qprec_dispatch *d, int layer, int g, const float *X, const float *W, int M,
                                        int IC, int OC, float *Xq, float *Wq)
{
    d->err[0] = '\0';
    if (reserve(d, M, IC, OC)) return -1;
    float *bufs[2] = {Xq, Wq};
    qprec_gemm_capture(d->cap, bufs, 1);
    int rc = qp_linear_forward(d->lin, layer, (qp_gemm_id)g, NULL, X, W, NULL, M, IC, OC);
    qprec_gemm_capture(d->cap, NULL, 0);
    return rc ? rc : d->sink_err[0] ? -1 : 0;
}

/* Its backward: dY (M x OC) in; the dgrad operands dYd (M x OC) and Wd
 * (IC x OC: W^T), dX = dYd Wd^T; the wgrad operands dYw (OC x M: dY^T) and
 * Xw (IC x M: X^T), dW = dYw Xw^T. */
QPREC_EXPORT int qprec_dispatch_backward(qprec_dispatch *d, int layer, int g, const float *dY, const float *X,
                                         const float *W, int M, int IC, int OC, float *dYd, float *Wd, float *dYw,
                                         float *Xw)
{
    d->err[0] = '\0';
    if (reserve(d, M, IC, OC)) return -1;
    float *bufs[4] = {dYd, Wd, dYw, Xw};
    qprec_gemm_capture(d->cap, bufs, 2);
    int rc = qp_linear_backward(d->lin, layer, (qp_gemm_id)g, NULL, NULL, NULL, dY, X, W, M, IC, OC, 0);
    qprec_gemm_capture(d->cap, NULL, 0);
    return rc ? rc : d->sink_err[0] ? -1 : 0;
}
