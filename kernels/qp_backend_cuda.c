/* qp_backend_cuda.c — the CUDA backend (see qp_backend.h): the GPU model and
 * dispatch of kernels/, with the host model's parameters and the host Adam
 * moments as checkpoint mirrors. Built only with CUDA.
 *
 * The dispatch keeps quantization statistics on the device; they are applied
 * to the host scaling states where the stream is drained anyway (after the
 * forward's loss, the gradient norm, AdamW) and before the host states are
 * read (checkpoints), so the trainer always sees them current.
 * The GPU's phases (kernels/qp_cuda_prof.h: qp_prof.h's, timed by events
 * on the compute stream) fill the run file's phase columns, step by step,
 * unless the phase profile is off (QP_PROFILE=0); QP_CUDA_PROFILE=1 also
 * prints the whole run's split on stderr at the end: "qtrain: GPU phases
 * (QP_CUDA_PROFILE): ...".
 *
 * Built as the module qp_backend_cuda.so (qp_backend.c loads it); its calls
 * into the trainer's modules (qp_linear, qp_dist, qp_prof, ...) bind to the
 * executable's own copies, which it exports, so there is one of each. */
#include "qp_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "qp_cuda_linear.h"
#include "qp_cuda_model.h"
#include "qp_cuda_prof.h"
#include "qp_dist.h"
#if QP_HAVE_NCCL
#include "qp_nccl.h"
#endif

typedef struct {
    qp_gpt *host;
    float *adam_m, *adam_v;
    qp_cuda_gpt m;
    qp_linear *lin;      /* the dispatch (the trainer's), on the device operations below */
    qp_cuda_linear *dev; /* the GPU's operations of the dispatch */
    qp_cuda_prof *prof;  /* the phase profile (NULL: off) */
    int prof_report;     /* QP_CUDA_PROFILE=1: the run's split on stderr at the end */
    int64_t prof_steps;  /* steps ended (the first two are warm-up, not in the report) */
    int m_ok;
    const int32_t *last_in, *last_tg;
#if QP_HAVE_NCCL
    qp_nccl *nccl; /* data parallelism: the ranks' communicator */
#endif
    char err[512];
} gpu;

static gpu *G(qp_backend *b) { return (gpu *)b->impl; }

static int gfail(gpu *g, const char *msg)
{
    snprintf(g->err, sizeof g->err, "%s", msg && msg[0] ? msg : "CUDA failure");
    return -1;
}

/* the dispatch's kept statistics into the host scaling states (waits) */
static int gflush(gpu *g) { return qp_linear_flush(g->lin) ? gfail(g, qp_linear_error(g->lin)) : 0; }

static void g_begin_step(qp_backend *b, int64_t step, int log_qerr)
{
    qp_linear_begin_step(G(b)->lin, step, log_qerr);
    G(b)->m.observe = log_qerr; /* /quant/outliers with /quant/error */
}
static void g_begin_micro(qp_backend *b, int micro) { qp_linear_begin_micro(G(b)->lin, micro); }
static void g_set_frozen(qp_backend *b, int frozen) { qp_linear_set_frozen(G(b)->lin, frozen); }

static int g_zero_grad(qp_backend *b)
{
    gpu *g = G(b);
    /* a step starts: what ran since the last step's end (evaluation,
     * checkpoint copies) is not the step's. The stream is idle here (every
     * step, evaluation and copy ends waiting for it), so the wait is free. */
    if (g->prof && (qp_cuda_gpt_sync(&g->m) || qp_cuda_prof_collect(g->prof, 0)))
        return gfail(g, g->m.err[0] ? g->m.err : "phase profile: CUDA error");
    return qp_cuda_gpt_zero_grad(&g->m) ? gfail(g, g->m.err) : 0;
}

static int g_forward(qp_backend *b, const int32_t *in, const int32_t *tg, float *mean_loss)
{
    gpu *g = G(b);
    if (qp_cuda_gpt_set_batch(&g->m, in, tg) || qp_cuda_gpt_forward(&g->m, g->lin)) return gfail(g, g->m.err);
    if (gflush(g)) return -1;
    g->last_in = in, g->last_tg = tg;
    *mean_loss = g->m.mean_loss;
    return 0;
}

static int g_backward(qp_backend *b, const int32_t *in, const int32_t *tg, float loss_scale)
{
    gpu *g = G(b);
    if (in != g->last_in || tg != g->last_tg || !tg) return gfail(g, "backward of a batch the last forward did not see");
    return qp_cuda_gpt_backward(&g->m, g->lin, loss_scale) ? gfail(g, g->m.err) : 0;
}

static int g_grad_norm(qp_backend *b, double *norm)
{
    gpu *g = G(b);
    return qp_cuda_gpt_grad_norm(&g->m, norm) ? gfail(g, g->m.err) : gflush(g);
}

static int g_adamw(qp_backend *b, const qp_optim_cfg *c, int64_t t, double lr, float clip)
{
    gpu *g = G(b);
    /* waits for the step to finish, so step_ms and the power window are the step's */
    if (qp_cuda_gpt_adamw(&g->m, c, t, lr, clip) || qp_cuda_gpt_sync(&g->m)) return gfail(g, g->m.err);
    if (g->prof && qp_cuda_prof_collect(g->prof, ++g->prof_steps > 2)) return gfail(g, "phase profile: CUDA error");
    return gflush(g);
}

static void g_phases(qp_backend *b, double ms[QP_PHASE_COUNT]) { qp_cuda_prof_last(G(b)->prof, ms); }

static int g_to_host(qp_backend *b)
{
    gpu *g = G(b);
    if (gflush(g)) return -1;
    return qp_cuda_gpt_download(&g->m, g->host->params_memory, g->adam_m, g->adam_v) ? gfail(g, g->m.err) : 0;
}

static int g_from_host(qp_backend *b)
{
    gpu *g = G(b);
    return qp_cuda_gpt_upload(&g->m, g->host->params_memory, g->adam_m, g->adam_v) ? gfail(g, g->m.err) : 0;
}

static const char *g_error(qp_backend *b) { return G(b)->err; }

/* n floats between device and host on the compute stream, waited for */
static int g_copy(gpu *g, void *dst, const void *src, int64_t n, enum cudaMemcpyKind kind)
{
    cudaStream_t s = (cudaStream_t)g->m.stream;
    cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)n * sizeof(float), kind, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        snprintf(g->err, sizeof g->err, "copy: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

static int g_grads_to_host(qp_backend *b)
{
    gpu *g = G(b);
    return g_copy(g, g->host->grads_memory, g->m.grads_memory, g->m.num_params, cudaMemcpyDeviceToHost);
}

static int g_grads_from_host(qp_backend *b)
{
    gpu *g = G(b);
    return g_copy(g, g->m.grads_memory, g->host->grads_memory, g->m.num_params, cudaMemcpyHostToDevice);
}

static int g_poke(qp_backend *b, int grads, int64_t offset, float value)
{
    gpu *g = G(b);
    if (offset < 0 || offset >= g->m.num_params) return gfail(g, "injection outside the parameters");
    float *dst = (grads ? g->m.grads_memory : g->m.params_memory) + offset;
    return g_copy(g, dst, &value, 1, cudaMemcpyHostToDevice);
}

#if QP_HAVE_NCCL
static int g_allreduce_grads(qp_backend *b)
{
    gpu *g = G(b);
    double ms = 0.0;
    qp_cuda_prof_mark(g->prof, QP_PHASE_COMM);
    const int rc = qp_nccl_sum_f32(g->nccl, g->m.grads_memory, g->m.num_params, &ms, g->err, sizeof g->err);
    qp_dist_add_comm_ms(ms);
    return rc;
}

/* This rank's device, and the communicator over the ranks. */
static int setup_nccl(gpu *g, const qp_linear_cfg *lc, char *err, size_t errlen)
{
    uint8_t id[QP_NCCL_ID_BYTES + 1];
    memset(id, 0, sizeof id);
    if (lc->dp_rank == 0 && qp_nccl_unique_id(id + 1, err, errlen) == 0) id[0] = 1;
    qp_dist_bcast(id, (int64_t)sizeof id, 0);
    if (!id[0]) {
        if (lc->dp_rank) snprintf(err, errlen, "rank 0 could not make an NCCL unique id");
        return -1;
    }
    g->nccl = qp_nccl_create(id + 1, lc->dp_rank, lc->dp_size, g->m.stream, err, errlen);
    return g->nccl ? 0 : -1;
}
#endif

static void g_destroy(qp_backend *b)
{
    gpu *g = G(b);
    if (g) {
        if (g->prof && g->prof_report) {
            char line[600];
            qp_cuda_prof_report(g->prof, line, sizeof line);
            fprintf(stderr, "qtrain: GPU phases (QP_CUDA_PROFILE): %s\n", line);
        }
        if (g->lin) qp_linear_set_ops(g->lin, NULL); /* back to the CPU's before the device's go */
        qp_cuda_linear_destroy(g->dev);
        qp_cuda_prof_destroy(g->prof);
#if QP_HAVE_NCCL
        qp_nccl_destroy(g->nccl);
#endif
        if (g->m_ok) qp_cuda_gpt_free(&g->m);
        free(g);
    }
    memset(b, 0, sizeof *b);
}

static int open_cuda(qp_backend *b, qp_gpt *model, qp_linear *host_lin, const qp_linear_cfg *lc, float *adam_m,
                    float *adam_v, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    char why[200];
    const int ndev = qp_cuda_gpt_device_count(why, sizeof why);
    if (ndev < 1) {
        snprintf(err, errlen, "no CUDA device found (%s)", why);
        return -1;
    }
    if (lc->dp_size > 1) {
#if QP_HAVE_NCCL
        /* one GPU per rank of a node */
        const int dev = qp_nccl_pick_device(qp_dist_local_rank(), ndev);
        const cudaError_t e = cudaSetDevice(dev);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "cudaSetDevice(%d): %s (%s)", dev, cudaGetErrorName(e), cudaGetErrorString(e));
            return -1;
        }
#else
        snprintf(err, errlen, "%d ranks need NCCL, and this build has none", lc->dp_size);
        return -1;
#endif
    }
    gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->host = model, g->adam_m = adam_m, g->adam_v = adam_v;
    b->impl = g;
    b->destroy = g_destroy;
    if (qp_cuda_gpt_init(&g->m, &model->cfg, model->B, model->T, model->params_memory, NULL, err, errlen)) {
        free(g);
        memset(b, 0, sizeof *b);
        return -1;
    }
    g->m_ok = 1;
    /* the host model's observer and data-parallel reduction, on the device model's inputs */
    g->m.on_input = model->on_input, g->m.observer_user = model->observer_user;
    g->m.reduce_max = model->reduce_max, g->m.reduce_user = model->reduce_user;
#if QP_HAVE_NCCL
    if (lc->dp_size > 1 && setup_nccl(g, lc, err, errlen)) {
        g_destroy(b);
        return -1;
    }
#endif
    qp_linear_gemm_set gemms;
    qp_linear_gemms(host_lin, &gemms);
    g->dev = qp_cuda_linear_create(qp_gpt_linear_elems(&model->cfg, model->B, model->T),
                                   qp_linear_max_kept(model->cfg.layers), &gemms, g->m.stream, err, errlen);
    if (!g->dev || qp_cuda_gpt_upload(&g->m, NULL, adam_m, adam_v)) {
        if (g->dev) snprintf(err, errlen, "%s", g->m.err);
        g_destroy(b);
        return -1;
    }
    g->lin = host_lin;
    qp_linear_set_ops(host_lin, qp_cuda_linear_ops(g->dev));
    const char *prof = getenv("QP_CUDA_PROFILE");
    g->prof_report = prof && prof[0] == '1';
    if (g->prof_report || qp_prof_enabled()) {
        if (!(g->prof = qp_cuda_prof_create(g->m.stream))) {
            snprintf(err, errlen, "the GPU phase profile: no CUDA events (QP_PROFILE=0 runs without it)");
            g_destroy(b);
            return -1;
        }
        qp_cuda_gpt_set_profiler(&g->m, g->prof);
        qp_cuda_linear_set_profiler(g->dev, g->prof);
    }
    struct cudaDeviceProp p;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess)
        snprintf(b->device_name, sizeof b->device_name, "%.100s (cc %d.%d)", p.name, p.major, p.minor);
    if (cudaDeviceGetPCIBusId(b->pci_bus_id, (int)sizeof b->pci_bus_id, dev) != cudaSuccess) b->pci_bus_id[0] = 0;
    b->name = "cuda";
    b->gemm_path = qp_cuda_linear_path(g->dev);
    b->begin_step = g_begin_step;
    b->begin_micro = g_begin_micro;
    b->set_frozen = g_set_frozen;
    b->zero_grad = g_zero_grad;
    b->forward = g_forward;
    b->backward = g_backward;
    b->grad_norm = g_grad_norm;
    b->adamw = g_adamw;
    b->to_host = g_to_host;
    b->from_host = g_from_host;
    b->error = g_error;
    b->destroy = g_destroy;
    b->grads_to_host = g_grads_to_host;
    b->grads_from_host = g_grads_from_host;
    b->poke = g_poke;
    b->phases = g_phases;
#if QP_HAVE_NCCL
    if (g->nccl) b->allreduce_grads = g_allreduce_grads;
#endif
    return 0;
}

#if QP_HAVE_NCCL
#define WITH_NCCL 1
#else
#define WITH_NCCL 0
#endif

static const qp_backend_cuda_api api = {
    .abi = QP_BACKEND_CUDA_ABI,
    .nccl = WITH_NCCL,
    .devices = qp_cuda_gpt_devices,
    .device_count = qp_cuda_gpt_device_count,
    .open = open_cuda,
};

const qp_backend_cuda_api *qp_backend_cuda_module(void) { return &api; }
