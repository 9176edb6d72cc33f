/* qp_backend.h — where the training step runs: the seam between the run loop
 * (qp_trainer.c) and the model's compute.
 *
 * Owns: one table of functions the loop calls for zero-grad, forward,
 * backward, gradient norm, AdamW and evaluation, so the loop, the run file
 * and the checkpoint code exist once. The CPU backend wraps qp_gpt_* and
 * qp_linear_* on the host model. The CUDA backend (built with CUDA) runs the
 * same model on the GPU (kernels/qp_cuda_model.h) through the same dispatch,
 * the trainer's qp_linear, switched to the GPU's operations
 * (kernels/qp_cuda_linear.h, qp_linear_set_ops), and keeps the host model's
 * parameters and the host Adam moments only as mirrors for checkpoints:
 * to_host before writing one, from_host after loading one. That qp_linear
 * keeps the scaling states and events in both backends, so checkpoints and
 * the run file's /events are the same code. */
#ifndef QP_BACKEND_H
#define QP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "qp_linear.h"
#include "qp_model.h"
#include "qp_optim.h"
#include "qp_prof.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_backend qp_backend;
struct qp_backend {
    const char *name;       /* "cpu" or "cuda" */
    const char *gemm_path;  /* run file attribute gemm_path */
    char device_name[128];  /* e.g. the GPU's name, "host CPU" */
    char pci_bus_id[32];    /* the GPU's, for NVML ("" on the CPU) */
    void *impl;
    void (*begin_step)(qp_backend *b, int64_t step, int log_qerr);
    void (*begin_micro)(qp_backend *b, int micro);
    void (*set_frozen)(qp_backend *b, int frozen);
    int (*zero_grad)(qp_backend *b);
    /* targets may be NULL (no loss); *mean_loss as qp_gpt's mean_loss */
    int (*forward)(qp_backend *b, const int32_t *inputs, const int32_t *targets, float *mean_loss);
    /* of the batch of the last forward */
    int (*backward)(qp_backend *b, const int32_t *inputs, const int32_t *targets, float loss_scale);
    int (*grad_norm)(qp_backend *b, double *norm);
    int (*adamw)(qp_backend *b, const qp_optim_cfg *c, int64_t t, double lr, float clip_scale);
    /* parameters and Adam moments: device -> host mirrors, host -> device */
    int (*to_host)(qp_backend *b);
    int (*from_host)(qp_backend *b);
    const char *(*error)(qp_backend *b);
    void (*destroy)(qp_backend *b);
    /* Data parallelism on the device (NULL where the trainer sums the host
     * gradients itself): every rank's gradients <- their sum over the ranks,
     * in place, finished when it returns; its time goes to qp_dist_comm_ms. */
    int (*allreduce_grads)(qp_backend *b);
    /* The device's buffers from the host (NULL on the CPU, whose buffers are
     * the host model's): the gradients to the host model's grads_memory and
     * back (a --grad-comm exchange runs on the host), and one float written
     * into the device parameters (grads 0) or gradients (grads 1) at a flat
     * offset (--inject). Each finishes before it returns. */
    int (*grads_to_host)(qp_backend *b);
    int (*grads_from_host)(qp_backend *b);
    int (*poke)(qp_backend *b, int grads, int64_t offset, float value);
    /* The last step's time by phase (qp_prof.h; the run file's phase
     * columns), read after adamw: the CPU's from the host's phase profile
     * (reset at each step's start), a device's from its own timing of the
     * step's work; NaN for a phase not measured. */
    void (*phases)(qp_backend *b, double ms[QP_PHASE_COUNT]);
};

/* The CPU: model, dispatch and moment buffers stay the caller's. 0, or -1 (no memory). */
int qp_backend_cpu(qp_backend *b, qp_gpt *model, qp_linear *lin, float *adam_m, float *adam_v);

/* The CUDA backend is a module (qp_backend_cuda.so beside the executable, or
 * the file QP_CUDA_MODULE names), loaded on the first call below: a CPU run
 * never maps the CUDA libraries (cuBLASLt, NCCL: about 200 MB of resident
 * memory and 0.2 s at every start). */
/* 1 if this build has the CUDA backend; the number of CUDA devices (0 without). */
int qp_backend_cuda_built(void);
int qp_backend_cuda_devices(void);
/* The same; when it is 0, why in `why` (the CUDA error's name, e.g.
 * "cudaGetDeviceCount: cudaErrorInsufficientDriver (...)", or "0 devices");
 * -1 when the module does not load (why: its path and the loader's error). */
int qp_backend_cuda_device_count(char *why, size_t whylen);
/* 1 if the CUDA backend was built with NCCL (data parallelism on GPUs). */
int qp_backend_cuda_nccl(void);
/* The GPU, for the host model (its parameters are copied up) with lc the
 * configuration host_lin was created with. Returns 0, or -1 with err
 * ("no CUDA device found", "built without CUDA", or a CUDA failure). With
 * lc->dp_size > 1 (an MPI job; needs NCCL) each rank takes device
 * local rank % devices (qp_dist_local_rank), rank 0 makes an NCCL unique id
 * that qp_dist_bcast hands to the others, and allreduce_grads sums the
 * device gradients with ncclAllReduce on the compute stream. */
int qp_backend_cuda(qp_backend *b, qp_gpt *model, qp_linear *host_lin, const qp_linear_cfg *lc, float *adam_m,
                    float *adam_v, char *err, size_t errlen);

/* What the module exports (qp_backend_cuda_module, a function returning it).
 * abi: QP_BACKEND_CUDA_ABI as the module was built, so a module of another
 * build is refused rather than called with other struct layouts. */
#define QP_BACKEND_CUDA_ABI                                                                                   \
    (0x51500001u ^ (unsigned)sizeof(qp_backend) << 8 ^ (unsigned)sizeof(qp_gpt) << 16 ^                       \
     (unsigned)sizeof(qp_linear_cfg) << 20 ^ (unsigned)sizeof(qp_optim_cfg) << 24)
typedef struct {
    unsigned abi;
    int nccl;
    int (*devices)(void);
    int (*device_count)(char *why, size_t whylen);
    int (*open)(qp_backend *b, qp_gpt *model, qp_linear *host_lin, const qp_linear_cfg *lc, float *adam_m,
                float *adam_v, char *err, size_t errlen);
} qp_backend_cuda_api;
const qp_backend_cuda_api *qp_backend_cuda_module(void);

#ifdef __cplusplus
}
#endif
#endif
