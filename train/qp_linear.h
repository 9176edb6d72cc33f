/* qp_linear.h — the one precision dispatch every linear layer goes through.
 *
 * Owns: turning a recipe into quantized GEMM operands for the three products
 * of a linear layer, and the per-tensor scaling state, SR streams, RHT,
 * recalibration events and quantization-error records that come with them.
 *   fprop  Y  = X W^T + b     A = X (x),   B = W (w)     contraction over IC
 *   dgrad  dX += dY W         A = dY (dy), B = W^T (w)   over OC
 *   wgrad  dW += dY^T X       A = dY^T,    B = X^T (x)   over the B*T tokens
 * Both operands are quantized along the contraction dimension (transposed
 * first where a block format or the RHT needs it), emitted unscaled — element
 * times block scale, exact in BF16 — and multiplied in BF16 with FP32
 * accumulation, the per-tensor decode scales folded into alpha: the products
 * are exactly those of the hardware formats. Scaling state is updated at a
 * tensor's first use in a step (x, w: fprop; dy: dgrad); under delayed
 * scaling its other orientation reuses that scale, under current scaling it
 * takes its own amax (the same value unless the RHT rotated it), as
 * Transformer Engine does. Stochastic rounding streams are indexed by (step,
 * micro-batch, layer, GEMM, pass, operand). The LM head goes through the same
 * dispatch with an FP32 plan. */
#ifndef QP_LINEAR_H
#define QP_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "qp_gemm.h"
#include "qp_recipe.h"
#include "qp_runlog.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The linear layers, by what they compute. A block's GEMMs come first (the
 * GPT's qkv, attproj, fc, fcproj; the Llama's qkv, attproj, gate, up, down:
 * qp_model_block_gemms), each with its own scaling states; the LM head, last,
 * is FP32. The names (qp_gemm_name) are the run file's and the recipes'. */
typedef enum {
    QP_GEMM_QKV = 0,
    QP_GEMM_ATTPROJ,
    QP_GEMM_FC,
    QP_GEMM_FCPROJ,
    QP_GEMM_GATE, /* SwiGLU's W1: silu(W1 x) */
    QP_GEMM_UP,   /* SwiGLU's W3: the linear branch W3 x */
    QP_GEMM_DOWN, /* SwiGLU's W2: the down projection of silu(W1 x) * (W3 x) */
    QP_GEMM_HEAD,
    QP_GEMM_COUNT
} qp_gemm_id;
#define QP_GEMM_BLOCK_COUNT QP_GEMM_HEAD /* the quantized GEMM ids: every one before the head */
const char *qp_gemm_name(qp_gemm_id g);  /* "qkv", "attproj", "fc", "fcproj", "gate", "up", "down", "head" */

typedef struct {
    int n_layers;
    int64_t max_elems;        /* largest operand (rows x cols) of any quantized GEMM */
    uint64_t seed;            /* SR and RHT seed */
    const qp_recipe *recipe;
    qp_gemm *gemm;
    /* records, may be NULL */
    void (*on_event)(const qp_event_row *row, void *user);
    void (*on_qerr)(const qp_qerr_row *row, void *user);
    void *user;
    /* Data parallelism (all zero/NULL for one process). This process holds
     * token slice dp_rank of dp_size equal slices of every activation (x, dy):
     * rows [dp_rank*M, (dp_rank+1)*M) of the global dp_size*M tokens. Then
     *  - every per-tensor scale of an activation (FP8 current and delayed
     *    scaling, NVFP4's tensor scale, after the RHT too) comes from the max
     *    of the ranks' amaxes: reduce_max(v, n) must replace v[0..n) by the
     *    element-wise max over ranks (every rank calls it in the same order);
     *    reduce_sum does the same with sums, for the counts a scaling update
     *    records (saturated, flushed, ...), so every rank's scaling state, and
     *    its events, are the single process's;
     *  - stochastic rounding draws, for each element, the word the single
     *    process draws for the same element of the whole tensor (qp_qopts
     *    sr_offset/sr_row_stride: a row offset for x and dy, a column slice of
     *    dy^T and x^T in wgrad).
     * With block-aligned slices (tokens per rank a multiple of 32) each rank
     * then quantizes its rows exactly as the single process does. Quantization
     * error records (on_qerr) describe this rank's slice. */
    int dp_rank, dp_size;
    void (*reduce_max)(float *v, int n, void *user);
    void (*reduce_sum)(double *v, int n, void *user);
    void *reduce_user;
} qp_linear_cfg;

typedef struct qp_linear qp_linear;

qp_linear *qp_linear_create(const qp_linear_cfg *cfg, char *err, size_t errlen);
void qp_linear_destroy(qp_linear *l);
/* Start optimizer step `step`; log_qerr: record the quantization error of
 * every operand this step. */
void qp_linear_begin_step(qp_linear *l, int64_t step, int log_qerr);
/* Micro-batch `micro` of the step (gradient accumulation): new SR streams. */
void qp_linear_begin_micro(qp_linear *l, int micro);

/* Y[M,OC] = X[M,IC] W[OC,IC]^T + b (b may be NULL). Returns 0 or -1 (message
 * in qp_linear_error). */
int qp_linear_forward(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                      int M, int IC, int OC);
/* dX += dY W, dW += dY^T X, db += column sums of dY (db may be NULL). */
int qp_linear_backward(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                       const float *X, const float *W, int M, int IC, int OC);
const char *qp_linear_error(const qp_linear *l);
/* Frozen: scaling states are used but not updated and no events are reported
 * (evaluation must not change what training does next). */
void qp_linear_set_frozen(qp_linear *l, int frozen);

/* The rules of one operand use, shared by this dispatch and the GPU's
 * (kernels/qp_cuda_linear_pass.h) so the two cannot drift apart. */
typedef struct {
    qp_qopts opts;       /* unscaled, SR seed/stream/word map, and the scale the scaling state gives */
    int first_use;       /* the tensor's first use in the step (x, w: fprop; dy: dgrad) */
    int update;          /* ... and its scaling state is updated after (not when frozen) */
    int reduce_amax;     /* data parallel: reduce this slice's amax over the ranks before quantizing */
    int scale_from_amax; /* ... and take the tensor scale from that global amax (current scaling) */
} qp_linear_use;

/* Options of operand o of GEMM g in `pass`, quantized as rows x cols (after
 * any transpose; trans: the values are still stored transposed), at (step,
 * micro). Prepares st's scale at first use. */
void qp_linear_use_init(qp_linear_use *u, const qp_linear_cfg *cfg, const qp_linear_plan *plan, qp_scaling_state *st,
                        int64_t step, int micro, int frozen, int layer, qp_gemm_id g, qp_pass pass, qp_operand o,
                        int trans, int rows, int cols);
/* The global amax a reduce_amax use got from cfg->reduce_max: the tensor
 * scale where scale_from_amax. */
void qp_linear_use_global_amax(qp_linear_use *u, qp_fmt fmt, float global_amax);
/* Data parallel scaling update: the counts of qs summed over the ranks
 * (cfg->reduce_sum; nothing without it). */
void qp_linear_reduce_counts(const qp_linear_cfg *cfg, qp_qstats *qs);
/* The RHT's sign seed for the dispatch's seed. */
uint64_t qp_linear_rht_seed(uint64_t seed);
/* The size of the plan's RHT on the wgrad operands: 0 without one, else
 * rht_n (16 when a plan sets rht_wgrad without a size). */
int qp_linear_rht_n(const qp_linear_plan *plan);
/* 1 when the weight-gradient pass quantizes dY^T exactly as the data-gradient
 * pass quantized dY: dY's format has no blocks (no transpose), neither the
 * RHT nor stochastic rounding applies, and the scale is the same (delayed:
 * the step's; current: the same tensor's amax). The CPU dispatch then hands
 * the wgrad GEMM dgrad's quantized copy; the GPU's reuses dgrad's global
 * amax (data parallel: one all-reduce, not two, on both). */
int qp_linear_dy_reusable(const qp_linear_plan *plan);

/* Scaling state of (layer, gemm, operand), for checkpoints: delayed scaling's
 * history and scales must survive a resume. */
qp_scaling_state *qp_linear_scaling(qp_linear *l, int layer, qp_gemm_id g, qp_operand o);
/* Events counted so far, by kind. */
void qp_linear_event_counts(const qp_linear *l, int64_t counts[QP_EV_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
