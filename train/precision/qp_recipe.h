/* qp_recipe.h — precision recipes: which format, rounding, scaling and
 * transform each use of each operand of each linear-layer GEMM gets.
 *
 * Owns: the recipe language of the CLI contract (--recipe, qsweep grids, the
 * run file; grammar, presets and examples in docs/recipes.md), the names of
 * passes, operands and GEMMs, and the resolved plan: per transformer block x
 * GEMM x pass x operand, a format with its options. A recipe is a
 * comma-separated list of clauses applied left to right:
 *   PRESET                 first only: fp32, bf16, fp8, fp8-current, mxfp8,
 *                          nvfp4, nvfp4-naive, mxfp4, and Transformer
 *                          Engine's recipe classes te-nvfp4, te-nvfp4-4o6,
 *                          te-fp8-block, te-mxfp8, te-fp8-current,
 *                          te-fp8-delayed (without one every operand starts
 *                          unquantized, FP32)
 *   MODIFIER               nvfp4-rht, nvfp4-sr, nvfp4-2d (drop that part of
 *                          the nvfp4 recipe; without a preset they mean nvfp4
 *                          first, then the clauses as written),
 *                          bf16-first=N, bf16-last=N (blocks at each end
 *                          kept in BF16, applied after every rule; alone:
 *                          nvfp4 with them),
 *                          smooth-swiglu (Fishman et al.'s Smooth-SwiGLU: a
 *                          SwiGLU block's down GEMM input scaled per channel
 *                          before it is quantized, the inverse folded into
 *                          its weight; models with a down GEMM only)
 *   TARGET=FORMAT[:OPT...] the matched uses get FORMAT and exactly these options
 *   TARGET:OPT[:OPT...]    the matched uses keep their format, options change
 * TARGET is selectors joined by '.', at most one of each kind, each a
 * '+'-union of one kind: blocks (Ln, Ln-m, firstN, lastN; a leading '~' takes
 * the complement), GEMMs (qkv, attproj, fc, fcproj: the GPT's; qkv,
 * attproj, gate, up, down: a Llama's), passes (fprop, dgrad, wgrad),
 * operands (x, w, dy). A recipe resolved for a model (qp_recipe_resolve's
 * gemms) may name only that model's GEMMs. FORMAT is any name of quant/'s format table
 * (qp_format_by_name). OPT: sr | rn, current | delayed, hist=N,
 * amax=max|most-recent, rht=N (0 = none) | rht=te (Transformer Engine's
 * fixed-sign 16-point transform), 1d | 2d.
 *
 * A tensor (block, GEMM, operand) has one scaling state; it follows the
 * tensor's owning use: its first use in a step (x, w: fprop; dy: dgrad)
 * unless that use is unquantized (FP32 or BF16) and the later one is
 * quantized, then the later one. Every use quantizes from the FP32 source
 * with its own format; a use other than the owner under delayed scaling
 * reuses the owner's scale, so it must have the owner's format and be
 * delayed like it (an error otherwise); under current scaling it takes its
 * own amax. Both operands of a pass carry the same RHT size (the transform
 * cancels only then). Only the blocks' linear layers are quantized;
 * embeddings, the LM head, attention's internal products, norms and the
 * optimizer stay in FP32, as in the published recipes. */
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
/* The linear layers, by what they compute. A block's GEMMs come first — the
 * GPT's qkv, attproj, fc, fcproj; the Llama's qkv, attproj, gate, up, down
 * (a model's own: qp_model_block_gemms) — each with its own scaling states;
 * the LM head, last, is never quantized. The names (qp_gemm_name) are the
 * run file's and the recipes'. */
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
#define QP_BLOCK_GEMMS QP_GEMM_HEAD /* the GEMM ids a recipe can quantize: every one before the head */
/* A model's block GEMMs as a mask: bit g for qp_gemm_id g (qp_model_gemm_mask);
 * 0 where no model is known stands for every one. */
#define QP_GEMMS_ALL ((1u << QP_BLOCK_GEMMS) - 1u)

const char *qp_pass_name(qp_pass p);        /* "fprop", "dgrad", "wgrad" */
const char *qp_operand_name(qp_operand o);  /* "x", "w", "dy" */
const char *qp_gemm_name(qp_gemm_id g);     /* "qkv", "attproj", "fc", "fcproj", "gate", "up", "down", "head" */
/* The block GEMMs of a mask, ", "-separated ("qkv, attproj, gate, up, down"). */
void qp_gemm_list(unsigned mask, char *buf, size_t len);
/* The operands of a pass: A (rows of the output) and B. fprop: x, w; dgrad:
 * dy, w; wgrad: dy, x. */
qp_operand qp_pass_operand(qp_pass p, int side);
/* 1 if pass p multiplies operand o. */
int qp_pass_uses(qp_pass p, qp_operand o);

#define QP_RECIPE_DEFAULT_HISTORY 1024 /* Transformer Engine's default amax history */

/* How one use (pass, operand) of one GEMM is quantized. Fields that do not
 * apply hold their defaults (scaling current, history 1024, algo max), and
 * the struct has no padding, so two uses are the same exactly when their
 * bytes are (memcmp). */
typedef struct {
    qp_fmt fmt;
    int sr;                   /* 1: stochastic rounding, 0: round to nearest */
    int rht;                  /* random Hadamard transform size on the contraction, 0 = none */
    qp_scaling_mode scaling;  /* formats with a per-tensor scale */
    int history_len;          /* delayed scaling's amax history */
    qp_amax_algo algo;        /* delayed scaling's amax of the history */
    int rht_te;               /* 1: the transform is Transformer Engine's fixed-sign 16-point one (rht 16,
                                 quant/qp_hadamard.h's qp_rht16_te); 0: signs from the run's seed */
} qp_use_plan;

/* One GEMM of one block: its three passes' operands (use[p][o] for
 * qp_pass_uses(p, o); the other three entries are FP32 and unused), and for
 * each operand the pass owning its scaling state. */
typedef struct {
    qp_use_plan use[QP_PASS_COUNT][QP_OPND_COUNT];
    qp_pass owner[QP_OPND_COUNT];
} qp_linear_plan;
#ifndef __cplusplus
_Static_assert(sizeof(qp_use_plan) == 7 * sizeof(int) && sizeof(qp_linear_plan) ==
                   QP_PASS_COUNT * QP_OPND_COUNT * sizeof(qp_use_plan) + QP_OPND_COUNT * sizeof(int),
               "plans without padding compare by their bytes");
#endif

#define QP_RECIPE_SPEC_MAX 1024
#define QP_RECIPE_MAX_RULES 64
#define QP_RECIPE_MAX_ITEMS 8 /* block items of one rule's selector */

typedef enum { QP_BLOCKS_RANGE = 0, QP_BLOCKS_FIRST, QP_BLOCKS_LAST, QP_BLOCKS_KIND_COUNT } qp_blocks_kind;

/* One TARGET=... or TARGET:... clause, as parsed. */
typedef struct {
    int n_items;                      /* 0: every block */
    struct {
        qp_blocks_kind kind;
        int a, b;                     /* RANGE: blocks a..b; FIRST/LAST: a blocks */
    } items[QP_RECIPE_MAX_ITEMS];
    bool complement;                  /* '~': the blocks not matched */
    unsigned gemms, passes, operands; /* bit masks, 0: all */
    bool set_fmt;                     /* TARGET=FORMAT (options reset to the defaults first) */
    qp_fmt fmt;
    int sr, scaling, algo, dims;      /* -1: not given; dims 1 or 2 */
    int hist, rht, rht_te;            /* -1: not given (rht_te: with rht, 1 for rht=te) */
    int at, len;                      /* the clause: in spec, or in origin_text */
    const char *origin, *origin_text; /* NULL, or the preset or modifier whose expansion it is (static) */
} qp_recipe_rule;

typedef struct {
    char spec[QP_RECIPE_SPEC_MAX];    /* as given */
    char base[32];                    /* the preset's name, "" for none */
    qp_recipe_rule rules[QP_RECIPE_MAX_RULES];
    int n_rules;
    int bf16_first, bf16_last;        /* -1: the preset's default (nvfp4: about 15%, at least 1; else 0) */
    bool smooth_swiglu;               /* the smooth-swiglu modifier (the model's qp_gpt_config.smooth_swiglu) */
} qp_recipe;

/* Parse a recipe. Returns 0, or -1 with a one-line message naming the
 * offending token and the valid choices. A parsed recipe can still fail to
 * resolve for a given number of blocks (a block index past the last one,
 * options that conflict only there): qp_recipe_resolve says so. */
int qp_recipe_parse(const char *spec, qp_recipe *r, char *err, size_t errlen);
/* The plan of every GEMM: plans[layer * QP_BLOCK_GEMMS + g] for n_layers
 * blocks whose GEMMs are the mask gemms (0: every id; a GEMM outside it
 * keeps FP32 and is never used). Returns 0, or -1 with a one-line message:
 * also when a rule names a GEMM outside gemms, or smooth-swiglu meets a
 * model without a down GEMM. */
int qp_recipe_resolve(const qp_recipe *r, int n_layers, unsigned gemms, qp_linear_plan *plans, char *err,
                      size_t errlen);
/* Blocks kept in BF16 at each end, with defaults resolved. */
void qp_recipe_bf16_blocks(const qp_recipe *r, int n_layers, int *first, int *last);
/* The longest amax history of any scaling state (the checkpoint's width);
 * QP_RECIPE_DEFAULT_HISTORY at least. plans: n_layers x QP_BLOCK_GEMMS. */
int qp_recipe_history_max(const qp_linear_plan *plans, int n_layers);
/* 1 if some scaling state is delayed. */
int qp_recipe_has_delayed(const qp_linear_plan *plans, int n_layers);
/* Every use's contraction length must be a multiple of its RHT size: K[p][g]
 * is pass p's contraction for GEMM g (fprop IC, dgrad OC, wgrad the tokens).
 * Returns 0, or -1 with a one-line message naming the use. */
int qp_recipe_check_rht(const qp_recipe *r, const qp_linear_plan *plans, int n_layers,
                        const int64_t K[QP_PASS_COUNT][QP_BLOCK_GEMMS], char *err, size_t errlen);

/* The canonical expanded recipe r resolved to plans: one rule per pass x
 * operand x block group (blocks, and GEMMs of gemms where they differ,
 * with the same plan), then the model-level modifiers (smooth-swiglu), each
 * line a clause of the grammar, so the lines joined by ',' are the recipe
 * spelled out: "L0-2.fprop.x=nvfp4:current\n...". Returns the length it
 * needs (excluding the NUL), writing at most len bytes; < 0 on bad input. */
int qp_recipe_explain(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms, char *buf,
                      size_t len);
/* The same, malloc'd (the caller frees it); NULL without memory or on bad input. */
char *qp_recipe_explain_text(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms);
/* One line saying what the recipe does (the run file's recipe_description). */
void qp_recipe_describe(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms, char *buf,
                        size_t len);
/* The presets and modifiers, for messages: "fp32, bf16, ...; modifiers:
 * ...; rules: ..." in buf (QP_RECIPE_NAMES_MAX bytes hold it), returned. */
#define QP_RECIPE_NAMES_MAX 640
char *qp_recipe_names(char *buf, size_t len);
/* The presets (with what each is, where --help says it), Transformer
 * Engine's recipe classes and the modifiers as the lines of qtrain --help's
 * --recipe text, each line "  ...;\n" (QP_RECIPE_HELP_MAX bytes hold them). */
#define QP_RECIPE_HELP_MAX 1024
void qp_recipe_presets_help(char *buf, size_t len);
/* When spec's first clause is a modifier that qualifies a recipe rather
 * than naming one (bf16-first=N, bf16-last=N, smooth-swiglu), that clause's
 * length, else 0: a list of recipes split at its commas (a qsweep grid)
 * holding such a value has most likely cut a recipe in two. */
size_t qp_recipe_bare_modifier(const char *spec);

#ifdef __cplusplus
}
#endif
#endif
