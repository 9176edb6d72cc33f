/* qp_cuda_model.h — the model of train/model/qp_model.h on the GPU, of either
 * architecture.
 *
 * Owns: the same model (the GPT: token + position embeddings, pre-LayerNorm
 * blocks with causal multi-head attention and a 4x GELU MLP, final LayerNorm,
 * LM head tied to wte; the Llama: token embedding, pre-RMSNorm blocks with
 * rotary embeddings, grouped-query attention and a SwiGLU MLP, Smooth-SwiGLU
 * when asked, final RMSNorm, untied LM head — qp_cuda_llama_pass.h;
 * softmax cross-entropy with mean loss), AdamW with the same update
 * expression, the global gradient norm, and a block GEMM input's outlier
 * statistics for the host model's observer. Parameters, gradients,
 * Adam moments, activations, their gradients and the batch are carved from
 * one device allocation, in the CPU model's tensor order, so parameters and
 * moments copy to and from the host model's buffers in one transfer each.
 * Every per-row / per-element formula is the shared host/device code of
 * qp_model_math.h (checked against the CPU kernels by
 * tests/kernels/test_cuda_model_math.c); every linear layer goes through the
 * precision dispatch (train/precision/qp_linear.h) on the GPU's operations
 * (qp_cuda_linear.h).
 *
 * Batches: qp_cuda_gpt_set_batch stages host tokens in pinned memory and
 * copies them on a separate copy stream; the compute stream waits on an event,
 * so the copy overlaps whatever compute is still queued. Functions return 0,
 * or -1 with a message in m->err. */
#ifndef QP_CUDA_MODEL_H
#define QP_CUDA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "qp_cuda_prof.h"
#include "qp_model.h"
#include "qp_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest head size (dim / heads) the attention kernels take: a warp per
 * row keeps the row's per-channel sums in registers, dim/heads / 32 each. */
#define QP_CUDA_ATT_HS_MAX 128

typedef struct {
    qp_gpt_config cfg;                /* resolved (qp_model_resolve) */
    int B, T;
    int n_tensors;                    /* parameter tensors of the architecture */
    qp_gpt_params params, grads;      /* device pointers: the GPT's */
    qp_gpt_acts acts, grads_acts;
    qp_llama_params lparams, lgrads;  /* device pointers: the Llama's */
    qp_llama_acts lacts, lgrads_acts;
    float *rope;                      /* the Llama's RoPE table (qp_llama_rope_table), on the device */
    float *lscratch;                  /* the Llama's working set (qpm_llama_scratch_floats) */
    float *params_memory, *grads_memory, *adam_m, *adam_v, *acts_memory, *grads_acts_memory;
    int64_t num_params, num_acts;
    int64_t param_sizes[QP_MODEL_MAX_NPARAMS];
    /* observe: every block GEMM input's outlier statistics (per-channel sums
     * on the device, finished on the host) go to on_input, as the CPU model's
     * (qp_gpt.observe); reduce_max: data parallelism's element-wise max over
     * the ranks (Smooth-SwiGLU's channel maxima), NULL in one process */
    int observe;
    qp_model_observer on_input;
    void *observer_user;
    void (*reduce_max)(float *v, int n, void *user);
    void *reduce_user;
    qp_outlier_col *d_ocols, *h_ocols; /* the widest input's channels */
    double *h_oscratch;
    float *h_smax;                    /* Smooth-SwiGLU's channel maxima on the host (data parallel) */
    int32_t *d_inputs, *d_targets;    /* the current batch */
    int has_targets;
    double *d_red;                    /* reduction partials and results */
    float *d_part;                    /* LayerNorm weight/bias gradient chunk sums (2 x chunks x C) */
    void *mem;                        /* the one device allocation */
    int32_t *h_stage;                 /* pinned, two slots: inputs then targets */
    void *stream;                     /* cudaStream_t: the compute stream */
    void *io;                         /* batch copies: copy stream, events, two device slots */
    qp_cuda_prof *prof;               /* phase timing, or NULL (qp_cuda_gpt_set_profiler) */
    float mean_loss;
    char err[256];
} qp_cuda_gpt;

/* Number of CUDA devices (0 without a driver or GPU). */
int qp_cuda_gpt_devices(void);
/* The same, and when it is 0, why in `why` ("cudaGetDeviceCount:
 * cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)" or
 * "0 devices"): a driver/runtime mismatch must not read as "no GPU". */
int qp_cuda_gpt_device_count(char *why, size_t whylen);

/* Allocate on the current device for batches of B x T, parameters from
 * host_params (num_params floats: the CPU model's initialisation), moments 0.
 * stream: the compute stream (cudaStream_t; NULL = create one). */
int qp_cuda_gpt_init(qp_cuda_gpt *m, const qp_gpt_config *c, int B, int T, const float *host_params, void *stream,
                     char *err, size_t errlen);
void qp_cuda_gpt_free(qp_cuda_gpt *m);
/* Parameters and moments to / from the host (either moment pointer may be NULL). */
int qp_cuda_gpt_download(qp_cuda_gpt *m, float *params, float *adam_m, float *adam_v);
int qp_cuda_gpt_upload(qp_cuda_gpt *m, const float *params, const float *adam_m, const float *adam_v);

/* Stage a batch (targets may be NULL); tokens are checked against the vocabulary. */
int qp_cuda_gpt_set_batch(qp_cuda_gpt *m, const int32_t *inputs, const int32_t *targets);
/* Forward over the staged batch; with targets, m->mean_loss (waits for it). */
int qp_cuda_gpt_forward(qp_cuda_gpt *m, qp_linear *lin);
int qp_cuda_gpt_zero_grad(qp_cuda_gpt *m);
/* Backward of mean loss * loss_scale, accumulating parameter gradients. */
int qp_cuda_gpt_backward(qp_cuda_gpt *m, qp_linear *lin, float loss_scale);
/* Global L2 norm of the gradients (double, fixed order). */
int qp_cuda_gpt_grad_norm(qp_cuda_gpt *m, double *norm);
/* qp_adamw_step on the device. */
int qp_cuda_gpt_adamw(qp_cuda_gpt *m, const qp_optim_cfg *c, int64_t t, double lr, float clip_scale);
/* Wait for everything queued. */
int qp_cuda_gpt_sync(qp_cuda_gpt *m);
/* Mark the model's operations' phases on p (NULL: none); p's stream must be m->stream. */
void qp_cuda_gpt_set_profiler(qp_cuda_gpt *m, qp_cuda_prof *p);

/* The layer kernels alone, on `stream`, for tests (test_cuda_model_kernels
 * checks them against qp_model_math.h's host formulas). Shapes and
 * semantics as qpm_ops (qp_cuda_model_pass.h); d_part: 2 * ceil(N /
 * QPM_SUM_ROWS) * C floats. Return 0 or a cudaError_t value. */
int qp_cuda_attention_forward(float *out, float *preatt, float *att, const float *qkv, int B, int T, int C, int NH,
                              void *stream);
int qp_cuda_attention_backward(float *dqkv, float *dpreatt, float *datt, const float *dout, const float *qkv,
                               const float *att, int B, int T, int C, int NH, void *stream);
int qp_cuda_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C, float *d_part, void *stream);
int qp_cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int32_t *inp, int B, int T, int C,
                             void *stream);

#ifdef __cplusplus
}
#endif
#endif
