/* qp_model.h — the model: parameters, activations, forward and backward, of
 * one of two architectures (--arch).
 *
 * Owns: the GPT as in nanoGPT / llm.c — token + learned position
 * embeddings, L pre-LayerNorm blocks (causal multi-head self-attention, 4x
 * GELU MLP), final LayerNorm, LM head tied to the token embedding — and the
 * Llama (Touvron et al. 2023) — token embedding, L pre-RMSNorm blocks (RoPE
 * on q and k, causal attention with optional grouped-query key/value heads,
 * SwiGLU MLP W2 (silu(W1 x) * W3 x)), final RMSNorm, an untied LM head, no
 * biases. Each layer is a pair of free functions (x_forward / x_backward,
 * backward accumulating with +=); parameters and activations are structs of
 * pointers carved from one allocation each. Every linear layer, the LM head
 * included, runs through the precision dispatch (qp_linear.h); attention's
 * internal products, norms, GELU/SwiGLU, softmax and the loss are FP32.
 *
 * The CPU kernels (qp_model_kernels.c, the GPT; qp_llama_kernels.c, the
 * Llama) keep no T x T matrix: attention works on blocks of 16 query rows
 * (the forward's softmax over the O(T) scores of a block, the backward in
 * FlashAttention-2's loop order), saving only each query row's
 * log-sum-exp; the backward keeps one layer's activation gradients at a time
 * (qp_gpt.scratch), not a mirror of every activation. qp_gpt_acts keeps the
 * GPU's fields too (kernels/ allocate their own layout): on the CPU preatt
 * and att hold nothing. The model's name stays qp_gpt for either
 * architecture: cfg.arch says which, and params/acts (GPT) or
 * lparams/lacts (Llama) hold its tensors. */
#ifndef QP_MODEL_H
#define QP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "qp_linear.h"
#include "qp_outliers.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_ARCH_GPT = 0, QP_ARCH_LLAMA, QP_ARCH_COUNT } qp_arch;
extern const char *const qp_arch_names[QP_ARCH_COUNT]; /* "gpt", "llama" */

typedef struct {
    int vocab;    /* V */
    int max_seq;  /* maxT: rows of wpe (GPT), of the RoPE table (Llama) */
    int layers;   /* L */
    int heads;    /* NH */
    int dim;      /* C */
    qp_arch arch; /* QP_ARCH_GPT (0) unless set */
    /* the Llama's; 0 means the default (qp_model_resolve) */
    int kv_heads;   /* KVH: key/value heads, dividing NH (default NH) */
    int mlp_hidden; /* H: SwiGLU's hidden width (default 8C/3 rounded up to a multiple of 64) */
    /* Fishman et al. 2024's Smooth-SwiGLU (Llama): the down projection's
     * input scaled per channel before the dispatch quantizes it, the scale
     * folded back into its weight (see qp_llama_kernels.c) */
    int smooth_swiglu;
} qp_gpt_config;

/* The defaults of kv_heads and mlp_hidden filled in (a copy of c). */
qp_gpt_config qp_model_resolve(const qp_gpt_config *c);
/* Llama's MLP width for model width C: 8C/3 rounded up to a multiple of 64. */
int qp_llama_default_hidden(int C);
/* Whether c is a model this code can build; 0, or -1 with a one-line message. */
int qp_model_check(const qp_gpt_config *c, char *err, size_t errlen);

#define QP_GPT_NPARAMS 16
#define QP_LLAMA_NPARAMS 10
#define QP_MODEL_MAX_NPARAMS 16 /* the most of either architecture */
typedef struct {
    float *wte;      /* (V, C) */
    float *wpe;      /* (maxT, C) */
    float *ln1w;     /* (L, C) */
    float *ln1b;     /* (L, C) */
    float *qkvw;     /* (L, 3C, C) */
    float *qkvb;     /* (L, 3C) */
    float *attprojw; /* (L, C, C) */
    float *attprojb; /* (L, C) */
    float *ln2w;     /* (L, C) */
    float *ln2b;     /* (L, C) */
    float *fcw;      /* (L, 4C, C) */
    float *fcb;      /* (L, 4C) */
    float *fcprojw;  /* (L, C, 4C) */
    float *fcprojb;  /* (L, C) */
    float *lnfw;     /* (C) */
    float *lnfb;     /* (C) */
} qp_gpt_params;

extern const char *const qp_gpt_param_names[QP_GPT_NPARAMS];
/* Tensors that get weight decay (matrices; not norms, biases or... embeddings do). */
int qp_gpt_param_decays(int i);

/* The Llama's parameters (qp_gpt.lparams), in memory order. qkvw's rows are
 * q (C), then k and v (KVH hs each, hs = C / NH). */
typedef struct {
    float *wte;      /* (V, C) */
    float *ln1w;     /* (L, C) RMSNorm gains */
    float *qkvw;     /* (L, C + 2 KVH hs, C) */
    float *attprojw; /* (L, C, C) */
    float *ln2w;     /* (L, C) */
    float *gatew;    /* (L, H, C) W1 */
    float *upw;      /* (L, H, C) W3 */
    float *downw;    /* (L, C, H) W2 */
    float *lnfw;     /* (C) */
    float *lmhead;   /* (V, C) untied */
} qp_llama_params;
extern const char *const qp_llama_param_names[QP_LLAMA_NPARAMS];

/* Either architecture's tensors: their number, names, element counts and
 * shapes (ndim <= 3; arrays of QP_MODEL_MAX_NPARAMS), and weight decay
 * (matrices and embeddings; not norms or biases). */
int qp_model_nparams(const qp_gpt_config *c);
const char *const *qp_model_param_names(const qp_gpt_config *c);
void qp_gpt_param_shapes(const qp_gpt_config *c, int64_t sizes[QP_MODEL_MAX_NPARAMS], int ndim[QP_MODEL_MAX_NPARAMS],
                         int64_t shape[QP_MODEL_MAX_NPARAMS][3]);
int qp_model_param_decays(const qp_gpt_config *c, int i);
/* The quantized GEMMs of a block, in forward order (ids[QP_BLOCK_GEMMS]):
 * qkv, attproj, fc, fcproj (GPT); qkv, attproj, gate, up, down (Llama).
 * Returns their number. */
int qp_model_block_gemms(const qp_gpt_config *c, qp_gemm_id ids[QP_BLOCK_GEMMS]);
/* The same as a mask (bit g for qp_gemm_id g): what a recipe resolves for
 * (qp_recipe_resolve, qp_linear_cfg.gemms). */
unsigned qp_model_gemm_mask(const qp_gpt_config *c);
/* Every parameter but the token and position embeddings and the LM head
 * (qp_size.h's N for the GPT). */
int64_t qp_model_nonembedding(const qp_gpt_config *c);

/* The activations, by index in the order of qp_gpt_acts' fields: a layout
 * is a size per index (qp_model.c's for the CPU, qpm_act_sizes in
 * kernels/qp_cuda_model_pass.h for the GPU), carved through
 * qp_gpt_act_fields. */
enum {
    QP_ACT_ENCODED, QP_ACT_LN1, QP_ACT_LN1_MEAN, QP_ACT_LN1_RSTD, QP_ACT_QKV, QP_ACT_ATTY, QP_ACT_PREATT, QP_ACT_ATT,
    QP_ACT_ATTPROJ, QP_ACT_RESIDUAL2, QP_ACT_LN2, QP_ACT_LN2_MEAN, QP_ACT_LN2_RSTD, QP_ACT_FCH, QP_ACT_FCH_GELU,
    QP_ACT_FCPROJ, QP_ACT_RESIDUAL3, QP_ACT_LNF, QP_ACT_LNF_MEAN, QP_ACT_LNF_RSTD, QP_ACT_LOGITS, QP_ACT_PROBS,
    QP_ACT_LOSSES, QP_ACT_ATT_LSE,
    QP_GPT_NACTS
};
typedef struct {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean;  /* (L, B, T) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C), bias included */
    float *atty;      /* (L, B, T, C) */
    float *preatt;    /* GPU: (L, B, NH, T, T); CPU: nothing */
    float *att;       /* GPU: (L, B, NH, T, T); CPU: nothing */
    float *attproj;   /* GPU: (L, B, T, C); CPU: (B, T, C), the latest layer's, without bias */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean;  /* (L, B, T) */
    float *ln2_rstd;  /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C); CPU: without the bias */
    float *fch_gelu;  /* (L, B, T, 4C) */
    float *fcproj;    /* GPU: (L, B, T, C); CPU: (B, T, C), the latest layer's, without bias */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean;  /* (B, T) */
    float *lnf_rstd;  /* (B, T) */
    float *logits;    /* (B, T, V) */
    float *probs;     /* (B, T, V) after a forward; the CPU backward turns them into the logits' gradient */
    float *losses;    /* (B, T) */
    float *att_lse;   /* CPU: (L, B, NH, T) log-sum-exp of each query row's scaled scores; GPU: nothing */
} qp_gpt_acts;

/* f[QP_ACT_X] = &a->x for every activation. */
void qp_gpt_act_fields(qp_gpt_acts *a, float **f[QP_GPT_NACTS]);
/* Point a's fields into mem, sizes[i] floats each (a field of size 0 is
 * NULL), each tensor on a 64-byte boundary; returns the floats used. With
 * mem NULL only counts. */
int64_t qp_gpt_carve_acts(qp_gpt_acts *a, float *mem, const int64_t sizes[QP_GPT_NACTS]);

/* The Llama's activations, by index in the order of qp_llama_acts' fields
 * (the CPU's layout in qp_llama.c, the GPU's in kernels/). */
enum {
    QP_LACT_ENCODED, QP_LACT_LN1, QP_LACT_LN1_RSTD, QP_LACT_QKV, QP_LACT_ATTY, QP_LACT_ATT_LSE, QP_LACT_PREATT,
    QP_LACT_ATT, QP_LACT_ATTPROJ, QP_LACT_RESIDUAL2, QP_LACT_LN2, QP_LACT_LN2_RSTD, QP_LACT_GATE, QP_LACT_UP,
    QP_LACT_SWIGLU, QP_LACT_DOWN, QP_LACT_RESIDUAL3, QP_LACT_LNF, QP_LACT_LNF_RSTD, QP_LACT_LOGITS, QP_LACT_PROBS,
    QP_LACT_LOSSES,
    QP_LLAMA_NACTS
};
typedef struct {
    float *encoded;   /* (B, T, C) wte[inp] */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* CPU: (L, B, T, C + 2 KVH hs), q and k rotated (RoPE); GPU: (L, B, T, 3C), widened to a
                         key/value head per query head (kernels/qp_cuda_llama_pass.h) */
    float *atty;      /* (L, B, T, C) */
    float *att_lse;   /* CPU: (L, B, NH, T); GPU: nothing */
    float *preatt;    /* GPU: (L, B, NH, T, T); CPU: nothing */
    float *att;       /* GPU: (L, B, NH, T, T); CPU: nothing */
    float *attproj;   /* GPU: (L, B, T, C); CPU: (B, T, C), the latest layer's */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_rstd;  /* (L, B, T) */
    float *gate;      /* (L, B, T, H) W1 x */
    float *up;        /* (L, B, T, H) W3 x */
    float *swiglu;    /* (L, B, T, H) silu(W1 x) * W3 x, the down projection's input */
    float *down;      /* GPU: (L, B, T, C); CPU: (B, T, C), the latest layer's */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_rstd;  /* (B, T) */
    float *logits;    /* (B, T, V) */
    float *probs;     /* (B, T, V); the CPU backward turns them into the logits' gradient */
    float *losses;    /* (B, T) */
} qp_llama_acts;
void qp_llama_act_fields(qp_llama_acts *a, float **f[QP_LLAMA_NACTS]);
/* qp_gpt_carve_acts for the Llama's activations. */
int64_t qp_llama_carve_acts(qp_llama_acts *a, float *mem, const int64_t sizes[QP_LLAMA_NACTS]);
/* RoPE's table for positions 0..maxT-1 and head size hs (even): cos then
 * sin of t * 10000^(-2i/hs), i < hs/2, each maxT x hs/2 (rounded from double;
 * both devices read this one table). */
void qp_llama_rope_table(float *tab, int maxT, int hs);

/* The outlier statistics of a block GEMM's input before the dispatch
 * quantizes it (qp_gpt.observe; qp_outliers.h): layer, gemm and the
 * statistics filled, the step left to the observer. */
typedef void (*qp_model_observer)(const qp_outlier_row *row, void *user);

typedef struct {
    qp_gpt_config cfg;              /* resolved (qp_model_resolve) */
    int B, T;                       /* batch shape the activations hold */
    int n_tensors;                  /* parameter tensors: qp_model_nparams */
    qp_gpt_params params, grads;    /* the GPT's (NULL pointers for the Llama) */
    qp_llama_params lparams, lgrads; /* the Llama's (NULL pointers for the GPT) */
    qp_llama_acts lacts;
    float *rope;                    /* Llama: qp_llama_rope_table (2 x maxT x hs/2) */
    /* Smooth-SwiGLU's working set (Llama, cfg.smooth_swiglu): the scales of
     * every layer (L x H, kept for the backward), the scaled input (B T x
     * H), the folded weight and its gradient (C x H) */
    float *smooth_s, *smooth_x, *smooth_w, *smooth_dw;
    /* data parallelism: the element-wise max over the ranks (Smooth-SwiGLU's
     * channel maxima must be the global batch's); NULL in one process */
    void (*reduce_max)(float *v, int n, void *user);
    void *reduce_user;
    /* when observe is set, every block GEMM's input's statistics go to
     * on_input first (ocols, oscratch: their working set, the widest input's
     * channels) */
    int observe;
    qp_model_observer on_input;
    void *observer_user;
    qp_outlier_col *ocols;
    double *oscratch;
    float *params_memory, *grads_memory;
    int64_t num_params;
    int64_t param_sizes[QP_MODEL_MAX_NPARAMS];
    qp_gpt_acts acts;
    float *acts_memory;
    int64_t num_acts;
    /* the backward's working set: one layer's activation gradients (residual
     * stream, LayerNorm output, attention output, MLP hidden, qkv) and the
     * partial sums of bias and norm gradients; num_scratch floats */
    float *scratch;
    int64_t num_scratch;
    float mean_loss;                /* of the last forward with targets */
} qp_gpt;

/* Allocate for batches of B x T and initialise the weights from seed as
 * GPT-2 does (N(0, 0.02), residual projections / sqrt(2L), norms 1, biases 0;
 * the Llama alike: its residual projections are attproj and down). Returns
 * 0, or -1 with err. */
int qp_gpt_init(qp_gpt *m, const qp_gpt_config *c, int B, int T, uint64_t seed, char *err, size_t errlen);
void qp_gpt_free(qp_gpt *m);

/* Forward over inputs (B x T); with targets, also the per-position losses and
 * their mean (m->mean_loss). Returns 0, or -1 (dispatch error). */
int qp_gpt_forward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
void qp_gpt_zero_grad(qp_gpt *m);
/* Backward of mean loss * loss_scale (1/accumulation steps); parameter
 * gradients accumulate (+=) across calls until qp_gpt_zero_grad. */
int qp_gpt_backward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

/* The last forward's logits (B, T, V) and per-position losses (B, T), of
 * either architecture. */
const float *qp_model_logits(const qp_gpt *m);
const float *qp_model_losses(const qp_gpt *m);

/* Which compiled copy of the kernels runs: "x86-64-v4", "x86-64-v3" or
 * "baseline" — the best the CPU runs, at most the level the environment's
 * QP_MODEL_ISA names. All copies give the same bits. */
const char *qp_gpt_kernel_isa(void);
/* The copy qp_gpt_kernel_isa would choose under cap (NULL or "": none), or
 * NULL when cap names no level. */
const char *qp_gpt_kernel_isa_capped(const char *cap);

/* 1 when the kernels write a GEMM operand the dispatch takes rounded
 * (qp_linear_takes_rounded) rounded in its producer — the default; 0 when
 * the environment's QP_PRODUCER_ROUNDING is "off" (the dispatch then rounds
 * it in a pass of its own: the same bits, slower; for comparing the two). Any
 * other value is a one-line error and exit 2. */
int qp_model_producer_rounding(void);

/* The most channels (contraction width) of a block GEMM's input: 4C (the
 * GPT's fcproj), max(C, H) (the Llama's). */
int qp_model_max_input_channels(const qp_gpt_config *c);

/* The model's shape rules, written once for the CPU and the GPU model (the
 * activation layouts differ: qp_gpt_carve_acts above). */
/* Point each tensor of p at its slice of mem (host or device memory; tensor order). */
void qp_gpt_carve_params(qp_gpt_params *p, float *mem, const int64_t sizes[QP_GPT_NPARAMS]);
void qp_llama_carve_params(qp_llama_params *p, float *mem, const int64_t sizes[QP_MODEL_MAX_NPARAMS]);
/* Input and output width of GEMM g: the GPT's qkv C -> 3C, attproj C -> C,
 * fc C -> 4C, fcproj 4C -> C; the Llama's qkv C -> C + 2 KVH hs, attproj
 * C -> C, gate and up C -> H, down H -> C; the head C -> V. 0 x 0 for a GEMM
 * the architecture does not have. */
void qp_gpt_gemm_dims(const qp_gpt_config *c, qp_gemm_id g, int *in, int *out);
/* Largest quantized-GEMM operand (for qp_linear_cfg.max_elems). */
int64_t qp_gpt_max_gemm_elems(const qp_gpt_config *c, int B, int T);
/* Largest operand of any GEMM, the LM head's included (a dispatch whose
 * backend also transposes the head's operands). */
int64_t qp_gpt_linear_elems(const qp_gpt_config *c, int B, int T);

#ifdef __cplusplus
}
#endif
#endif
