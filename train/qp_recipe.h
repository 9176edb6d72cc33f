/* qp_recipe.h — precision recipes: which format, rounding and transform each
 * operand of each linear-layer GEMM uses.
 *
 * Owns: the recipe names of the CLI contract and what they mean.
 *   fp32          no quantization
 *   bf16          every operand BF16
 *   fp8           E4M3 activations and weights, E5M2 gradients, delayed
 *                 scaling (amax history 1024, max) — Transformer Engine's default
 *   fp8-current   the same formats, per-tensor current scaling
 *   mxfp8         MXFP8 (E4M3 elements, E8M0 per 32) for every operand
 *   nvfp4         NVIDIA's NVFP4 training recipe: 1x16 blocks for activations
 *                 and gradients, 16x16 blocks for weights, 16-point random
 *                 Hadamard transform on the weight-gradient GEMM's operands,
 *                 stochastic rounding on gradients, the last bf16-last blocks
 *                 in BF16 (default about 15% of the blocks, at least 1)
 *   nvfp4-naive   1x16 blocks everywhere, round to nearest, no RHT, no BF16 blocks
 *   mxfp4         MXFP4 (E2M1 elements, E8M0 per 32) for every operand
 * Modifiers, comma-separated after the recipe (or alone, meaning nvfp4 with
 * that change): nvfp4-rht (no Hadamard), nvfp4-sr (no stochastic rounding),
 * nvfp4-2d (1x16 weight blocks), bf16-last=N, bf16-first=N (transformer blocks
 * kept in BF16). Only the transformer blocks' four linear layers are
 * quantized; embeddings, the LM head, attention's internal products, norms and
 * the optimizer stay in FP32, as in the published recipes. */
#ifndef QP_RECIPE_H
#define QP_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "qp_quant.h"
#include "qp_scaling.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_PASS_FPROP = 0, QP_PASS_DGRAD, QP_PASS_WGRAD, QP_PASS_COUNT } qp_pass;
typedef enum { QP_OPND_X = 0, QP_OPND_W, QP_OPND_DY, QP_OPND_COUNT } qp_operand;

const char *qp_pass_name(qp_pass p);        /* "fprop", "dgrad", "wgrad" */
const char *qp_operand_name(qp_operand o);  /* "x", "w", "dy" */

/* How the three tensors of one linear layer are quantized. */
typedef struct {
    qp_fmt fmt[QP_OPND_COUNT];
    bool sr[QP_OPND_COUNT];
    bool rht_wgrad;            /* RHT on both operands of the weight-gradient GEMM */
    int rht_n;                 /* ... of this size (16, 32, 64, 128; 0 with rht_wgrad: 16) */
    qp_scaling_mode scaling;   /* for formats with a per-tensor scale */
} qp_linear_plan;

typedef struct {
    char spec[160];            /* as given */
    char base[32];             /* the base recipe's name */
    qp_linear_plan plan;       /* quantized blocks */
    int bf16_first, bf16_last; /* -1: the recipe's default */
    int history_len;           /* delayed scaling */
    qp_amax_algo algo;
} qp_recipe;

/* Parse "nvfp4", "nvfp4,nvfp4-rht,bf16-last=2", "nvfp4-sr", ... Returns 0, or
 * -1 with a one-line message listing the valid names. */
int qp_recipe_parse(const char *spec, qp_recipe *r, char *err, size_t errlen);
/* The plan of transformer block `layer` (0-based) of n_layers. */
qp_linear_plan qp_recipe_plan(const qp_recipe *r, int layer, int n_layers);
/* Blocks kept in BF16 at each end, with defaults resolved. */
void qp_recipe_bf16_blocks(const qp_recipe *r, int n_layers, int *first, int *last);
/* One line saying what the recipe does, for --help-recipes and the run file. */
void qp_recipe_describe(const qp_recipe *r, int n_layers, char *buf, size_t len);
const char *qp_recipe_names(void);

#ifdef __cplusplus
}
#endif
#endif
