/* qp_model.h — the GPT: parameters, activations, forward and backward.
 *
 * Owns: the model as in nanoGPT / llm.c — token + learned position
 * embeddings, L pre-LayerNorm blocks (causal multi-head self-attention, 4x
 * GELU MLP), final LayerNorm, LM head tied to the token embedding. Each layer
 * is a pair of free functions (x_forward / x_backward, backward accumulating
 * with +=); parameters and activations are structs of pointers carved from one
 * allocation each. Every linear layer, the LM head included, runs through the
 * precision dispatch (qp_linear.h); attention's internal products, norms,
 * GELU, softmax and the loss are FP32.
 *
 * The CPU kernels (qp_model_kernels.c) keep no T x T matrix: attention is
 * blocked with an online softmax (FlashAttention's forward and backward),
 * saving only each query row's log-sum-exp; the backward keeps one layer's
 * activation gradients at a time (qp_gpt.scratch), not a mirror of every
 * activation. qp_gpt_acts keeps the GPU's fields too (kernels/ allocate their
 * own layout): on the CPU preatt and att hold nothing. */
#ifndef QP_MODEL_H
#define QP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "qp_linear.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int vocab;    /* V */
    int max_seq;  /* maxT: rows of wpe */
    int layers;   /* L */
    int heads;    /* NH */
    int dim;      /* C */
} qp_gpt_config;

#define QP_GPT_NPARAMS 16
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
/* Element count and shape (ndim <= 3) of each parameter tensor. */
void qp_gpt_param_shapes(const qp_gpt_config *c, int64_t sizes[QP_GPT_NPARAMS], int ndim[QP_GPT_NPARAMS],
                         int64_t shape[QP_GPT_NPARAMS][3]);
/* Tensors that get weight decay (matrices; not norms, biases or... embeddings do). */
int qp_gpt_param_decays(int i);

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

typedef struct {
    qp_gpt_config cfg;
    int B, T;                       /* batch shape the activations hold */
    qp_gpt_params params, grads;
    float *params_memory, *grads_memory;
    int64_t num_params;
    int64_t param_sizes[QP_GPT_NPARAMS];
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
 * GPT-2 does (N(0, 0.02), residual projections / sqrt(2L), norms 1, biases 0).
 * Returns 0, or -1 with err. */
int qp_gpt_init(qp_gpt *m, const qp_gpt_config *c, int B, int T, uint64_t seed, char *err, size_t errlen);
void qp_gpt_free(qp_gpt *m);

/* Forward over inputs (B x T); with targets, also the per-position losses and
 * their mean (m->mean_loss). Returns 0, or -1 (dispatch error). */
int qp_gpt_forward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T);
void qp_gpt_zero_grad(qp_gpt *m);
/* Backward of mean loss * loss_scale (1/accumulation steps); parameter
 * gradients accumulate (+=) across calls until qp_gpt_zero_grad. */
int qp_gpt_backward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale);

/* Which compiled copy of the kernels runs: "x86-64-v4" or "baseline". */
const char *qp_gpt_kernel_isa(void);

/* The model's shape rules, written once for the CPU and the GPU model (the
 * activation layouts differ: qp_gpt_carve_acts above). */
/* Point each tensor of p at its slice of mem (host or device memory; tensor order). */
void qp_gpt_carve_params(qp_gpt_params *p, float *mem, const int64_t sizes[QP_GPT_NPARAMS]);
/* Input and output width of GEMM g: qkv C -> 3C, attproj C -> C, fc C -> 4C,
 * fcproj 4C -> C, head C -> V. */
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
