/* qp_linear.h — the one precision dispatch every linear layer goes through,
 * on the CPU and on the GPU.
 *
 * Owns: turning a recipe's plan (qp_recipe.h: per block x GEMM x pass x
 * operand) into quantized GEMM operands for the three products of a linear
 * layer, and the per-tensor scaling state, SR streams, RHT, recalibration
 * events and quantization-error records that come with them — written once,
 * over a table of operations (qp_linear_ops.h): the CPU's by default, a
 * GPU's after qp_linear_set_ops.
 *   fprop  Y  = X W^T + b     A = X (x),   B = W (w)     contraction over IC
 *   dgrad  dX += dY W         A = dY (dy), B = W^T (w)   over OC
 *   wgrad  dW += dY^T X       A = dY^T,    B = X^T (x)   over the B*T tokens
 * Both operands are quantized along the contraction dimension (transposed
 * first where a block format or the RHT needs it), emitted unscaled — element
 * times block scale, exact in BF16 — and multiplied in BF16 with FP32
 * accumulation, the per-tensor decode scales folded into alpha: the products
 * are exactly those of the hardware formats. Each use quantizes from the FP32
 * source in its own format. A tensor's scaling state is prepared and updated
 * at its owning use (qp_linear_plan.owner: its first use in a step — x, w:
 * fprop; dy: dgrad — unless only the later one is quantized); another use
 * under delayed scaling reuses that scale (the recipe guarantees the same
 * format), under current scaling it takes its own amax (the same value
 * unless the RHT rotated it), as Transformer Engine does. Stochastic rounding
 * streams are indexed by (step, micro-batch, layer, GEMM, pass, operand). The
 * LM head goes through the same dispatch unquantized.
 * Formats whose block scales cannot go into alpha (FP32 scales along K: the
 * FP8 block formats, qp_format_traits.unscaled_exact false) are multiplied as
 * DeepSeek-V3 does: element codes per K-chunk of QK_FP8_BLOCK, each partial
 * product scaled by s_a * s_b in FP32 (the CPU: qp_gemm_run_kscaled; a GPU:
 * an FP32 GEMM of the scaled values, which agrees to FP32 rounding).
 * Statistics (scaling updates, events, qerr rows) are applied when the
 * backend's kept list is flushed (qp_linear_ops.h): at once on the CPU, at
 * the backend's flush points on a GPU; nothing the passes compute depends on
 * when (a delayed scale's other uses take the scale the owner took). */
#ifndef QP_LINEAR_H
#define QP_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "qp_gemm.h"
#include "qp_linear_ops.h"
#include "qp_recipe.h"
#include "qp_runlog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int n_layers;
    unsigned gemms;           /* the model's block GEMMs (qp_model_gemm_mask; 0: every id), what the recipe resolves for */
    int64_t max_elems;        /* largest operand (rows x cols) of any quantized GEMM */
    uint64_t seed;            /* SR and RHT seed */
    const qp_recipe *recipe;
    qp_gemm *gemm;            /* the CPU's GEMM (unused once a device's operations are set) */
    int requantize;           /* the backward quantizes X and W again instead of reusing the forward's quantized
                                 copies (qp_linear_reusable): the same values, less memory, more time */
    /* records, may be NULL */
    void (*on_event)(const qp_event_row *row, void *user);
    void (*on_qerr)(const qp_qerr_row *row, void *user);
    /* with a qerr row of a format with block scales, where the operations
     * give them: its per-block scale statistics and their histogram
     * (QP_BSHIST_BINS bins, quant/qp_metrics.h) */
    void (*on_bscale)(const qp_bscale_row *row, const int64_t *hist, int nbins, void *user);
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

/* With the CPU's operations. NULL + err (no memory, or a recipe that does not
 * resolve for cfg->n_layers blocks of cfg->gemms). */
qp_linear *qp_linear_create(const qp_linear_cfg *cfg, char *err, size_t errlen);
void qp_linear_destroy(qp_linear *l);
/* Run on other operations from now on (a GPU's; ops must outlive l, NULL:
 * back to the CPU's), after flushing the old ones. Scaling states, events
 * and records stay l's. */
void qp_linear_set_ops(qp_linear *l, const qp_linear_ops *ops);
/* The CPU operations l made (qp_linear_host.h), for a caller that adjusts
 * them (their buffers, where their products go). */
struct qp_linear_host *qp_linear_host_of(qp_linear *l);
/* Apply every kept statistic in the order of the uses (scaling updates,
 * events, qerr rows); a device waits for its work. Before anything reads the
 * scaling states or counts (checkpoints, the end of a run); begin_step,
 * begin_micro, set_frozen and set_ops flush. 0, or -1 with the error (then
 * every later pass fails with it too). */
int qp_linear_flush(qp_linear *l);
/* The most statistics one micro-batch keeps for n_layers blocks (every use
 * of every block GEMM): a kept list this long is flushed only at the
 * backend's flush points. */
int qp_linear_max_kept(int n_layers);
/* The plan of GEMM g (< QP_BLOCK_GEMMS) of block layer (FP32 for a GEMM outside cfg.gemms). */
const qp_linear_plan *qp_linear_plan_of(const qp_linear *l, int layer, qp_gemm_id g);
/* The block GEMMs' format pairs and RHT (qp_linear_ops.h), of the GEMMs in cfg.gemms. */
void qp_linear_gemms(const qp_linear *l, qp_linear_gemm_set *s);
/* The longest amax history of the scaling states (checkpoints store that many per state). */
int qp_linear_history_len(const qp_linear *l);
/* Start optimizer step `step` (after a flush); log_qerr: record the
 * quantization error of every operand this step. */
void qp_linear_begin_step(qp_linear *l, int64_t step, int log_qerr);
/* Micro-batch `micro` of the step (gradient accumulation): new SR streams. */
void qp_linear_begin_micro(qp_linear *l, int micro);

/* Y[M,OC] = X[M,IC] W[OC,IC]^T + b (b may be NULL). Returns 0 or -1 (message
 * in qp_linear_error). */
int qp_linear_forward(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X, const float *W, const float *b,
                      int M, int IC, int OC);
/* dX = dY W (dx_accumulate 0: dX's old contents are never read) or dX +=
 * dY W (1); dW += dY^T X, db += column sums of dY (db may be NULL). */
int qp_linear_backward(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db, const float *dY,
                       const float *X, const float *W, int M, int IC, int OC, int dx_accumulate);
/* A GEMM input its producer quantized itself: the format and tensor scale
 * the dispatch gave it (qp_linear_takes_rounded) and the counts it kept
 * over the whole tensor (qp_round_elem_tally's, merged over threads). */
typedef struct {
    qp_fmt fmt;   /* BF16, or per-tensor FP8 (E4M3, E5M2) under delayed scaling */
    float scale;  /* the tensor scale to multiply by before rounding (1 for BF16) */
    qp_round_tally tally;
} qp_linear_rounded;

/* A producer that writes GEMM g's operand o quantized itself, with the counts
 * a quantization keeps, saves the dispatch its pass over the tensor: 1 when
 * operand o (X or dY) of block GEMM g in `layer` may be handed over so this
 * step, with *how's format and scale set and its tally zeroed — both uses
 * quantize it alike by round-to-nearest (qp_linear_reusable: no stochastic
 * rounding, no rotation), the later one reusing the earlier's (X: not
 * under cfg.requantize), to BF16, or to per-tensor FP8 at a scale known
 * before the tensor is (delayed scaling: the owning use's); no quantization
 * error is recorded this step (a qerr row compares the values before
 * quantization); one process (data parallelism reduces an amax of the
 * unquantized tensor); and the operations read quantized values as floats
 * (qp_linear_ops.take_rounded). The producer writes qp_round_elem_tally's
 * values (x * scale rounded, unscaled). The values, statistics, scaling
 * updates and events are then those of the dispatch quantizing the tensor
 * itself. */
int qp_linear_takes_rounded(const qp_linear *l, int layer, qp_gemm_id g, qp_operand o, qp_linear_rounded *how);
/* qp_linear_forward with X quantized by its producer (x_rounded: what
 * qp_linear_takes_rounded gave for X, its tally filled in); the backward's
 * weight-gradient GEMM then reads X as it is too. -1 when the dispatch does
 * not take X so (or at another format or scale). */
int qp_linear_forward_rounded(qp_linear *l, int layer, qp_gemm_id g, float *Y, const float *X,
                              const qp_linear_rounded *x_rounded, const float *W, const float *b, int M, int IC,
                              int OC);
/* qp_linear_backward with dY quantized by its producer (dy_rounded, as
 * above); db must be NULL (the producer sums the bias gradient from the
 * values before quantization). */
int qp_linear_backward_rounded(qp_linear *l, int layer, qp_gemm_id g, float *dX, float *dW, float *db,
                               const float *dY, const qp_linear_rounded *dy_rounded, const float *X, const float *W,
                               int M, int IC, int OC, int dx_accumulate);
const char *qp_linear_error(const qp_linear *l);
/* Frozen: scaling states are used but not updated and no events are reported
 * (evaluation must not change what training does next). */
void qp_linear_set_frozen(qp_linear *l, int frozen);

/* The RHT's sign seed for the dispatch's seed (every RHT of a run uses it). */
uint64_t qp_linear_rht_seed(uint64_t seed);
/* The two uses of operand o, the earlier and the later: X fprop then
 * wgrad, W fprop then dgrad, dY dgrad then wgrad. */
void qp_linear_operand_uses(qp_operand o, qp_pass *first, qp_pass *later);
/* 1 when the later use of operand o (qp_linear_operand_uses) quantizes it
 * exactly as the earlier one did, read transposed: both uses have the same
 * plan (format, options, scaling), neither the RHT nor stochastic rounding
 * applies (their words follow the pass), and the format's blocks cover the
 * same elements either way (no blocks, or square 2D blocks whose scales go
 * into the operand: NVFP4-2D's weights); the scale is then the same
 * (delayed: the owner's; current: the same tensor's amax). The later use
 * then takes the earlier one's global amax (data parallel: one all-reduce
 * per tensor, not two) and, on operations that keep quantized copies (qp_linear_ops.reuse: the
 * CPU's), hands the later GEMM the earlier use's quantized operand instead
 * of quantizing it again: dY from dgrad, and X and W kept from the forward
 * (the same tensors in the same step and micro-batch). */
int qp_linear_reusable(const qp_linear_plan *plan, qp_operand o);

/* Scaling state of (layer, gemm, operand), for checkpoints: delayed scaling's
 * history and scales must survive a resume. */
qp_scaling_state *qp_linear_scaling(qp_linear *l, int layer, qp_gemm_id g, qp_operand o);
/* Events counted so far, by kind. */
void qp_linear_event_counts(const qp_linear *l, int64_t counts[QP_EV_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
