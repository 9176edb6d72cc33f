/* qp_cuda_model.h — the GPT of train/qp_model.h on the GPU.
 *
 * Owns: the same model (token + position embeddings, pre-LayerNorm blocks
 * with causal multi-head attention and a 4x GELU MLP, final LayerNorm, LM
 * head tied to wte, softmax cross-entropy with mean loss), AdamW with the
 * same update expression, the global gradient norm. Parameters, gradients,
 * Adam moments, activations, their gradients and the batch are carved from
 * one device allocation, in the CPU model's tensor order, so parameters and
 * moments copy to and from the host model's buffers in one transfer each.
 * Every per-row / per-element formula is the shared host/device code of
 * qp_cuda_model_math.h (checked against the CPU kernels by
 * tests/kernels/test_cuda_model_math.c); every linear layer goes through the
 * precision dispatch (train/qp_linear.h) on the GPU's operations
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

#include "qp_model.h"
#include "qp_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    qp_gpt_config cfg;
    int B, T;
    qp_gpt_params params, grads;      /* device pointers */
    qp_gpt_acts acts, grads_acts;     /* device pointers */
    float *params_memory, *grads_memory, *adam_m, *adam_v, *acts_memory, *grads_acts_memory;
    int64_t num_params, num_acts;
    int64_t param_sizes[QP_GPT_NPARAMS];
    int32_t *d_inputs, *d_targets;    /* the current batch */
    int has_targets;
    double *d_red;                    /* reduction partials and results */
    void *mem;                        /* the one device allocation */
    int32_t *h_stage;                 /* pinned, two slots: inputs then targets */
    void *stream;                     /* cudaStream_t: the compute stream */
    void *io;                         /* batch copies: copy stream, events, two device slots */
    float mean_loss;
    char err[256];
} qp_cuda_gpt;

/* Number of CUDA devices (0 without a driver or GPU). */
int qp_cuda_gpt_devices(void);

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

#ifdef __cplusplus
}
#endif
#endif
