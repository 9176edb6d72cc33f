/* qp_backend.c — the CPU backend (see qp_backend.h): the existing calls. */
#include "qp_backend.h"
#include "qp_share.h"

#include <math.h>
#if QP_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    qp_gpt *model;
    qp_linear *lin;
    float *adam_m, *adam_v;
    char err[256];
} cpu;

static cpu *C(qp_backend *b) { return (cpu *)b->impl; }

static void cpu_begin_step(qp_backend *b, int64_t step, int log_qerr)
{
    qp_linear_begin_step(C(b)->lin, step, log_qerr);
    C(b)->model->observe = log_qerr; /* /quant/outliers with /quant/error */
}
static void cpu_begin_micro(qp_backend *b, int micro) { qp_linear_begin_micro(C(b)->lin, micro); }
static void cpu_set_frozen(qp_backend *b, int frozen) { qp_linear_set_frozen(C(b)->lin, frozen); }

static int cpu_zero_grad(qp_backend *b)
{
    qp_gpt_zero_grad(C(b)->model);
    return 0;
}

static int cpu_forward(qp_backend *b, const int32_t *in, const int32_t *tg, float *mean_loss)
{
    cpu *c = C(b);
    if (qp_gpt_forward(c->model, c->lin, in, tg, c->model->B, c->model->T)) {
        snprintf(c->err, sizeof c->err, "%s", qp_linear_error(c->lin)); /* the messages qtrain always gave */
        return -1;
    }
    *mean_loss = c->model->mean_loss;
    return 0;
}

static int cpu_backward(qp_backend *b, const int32_t *in, const int32_t *tg, float loss_scale)
{
    cpu *c = C(b);
    if (qp_gpt_backward(c->model, c->lin, in, tg, loss_scale)) {
        snprintf(c->err, sizeof c->err, "%s", qp_linear_error(c->lin));
        return -1;
    }
    return 0;
}

static int cpu_grad_norm(qp_backend *b, double *norm)
{
    *norm = qp_grad_norm(C(b)->model->grads_memory, C(b)->model->num_params);
    return 0;
}

static int cpu_adamw(qp_backend *b, const qp_optim_cfg *oc, int64_t t, double lr, float clip)
{
    cpu *c = C(b);
    int decays[QP_MODEL_MAX_NPARAMS];
    for (int i = 0; i < c->model->n_tensors; i++) decays[i] = qp_model_param_decays(&c->model->cfg, i);
    qp_adamw_step(oc, c->model->params_memory, c->model->grads_memory, c->adam_m, c->adam_v, c->model->param_sizes,
                  decays, c->model->n_tensors, t, lr, clip);
    return 0;
}

static int cpu_nothing(qp_backend *b)
{
    (void)b;
    return 0;
}

static void cpu_phases(qp_backend *b, double ms[QP_PHASE_COUNT])
{
    (void)b;
    qp_prof_read(ms);
    if (!qp_prof_enabled())
        for (int i = 0; i < QP_PHASE_COUNT; i++) ms[i] = NAN;
}

static const char *cpu_error(qp_backend *b) { return C(b)->err; }
static void cpu_destroy(qp_backend *b)
{
    free(b->impl);
    memset(b, 0, sizeof *b);
}

int qp_backend_cpu(qp_backend *b, qp_gpt *model, qp_linear *lin, float *adam_m, float *adam_v)
{
    memset(b, 0, sizeof *b);
    cpu *impl = calloc(1, sizeof *impl);
    if (!impl) return -1;
    *impl = (cpu){model, lin, adam_m, adam_v, ""};
    b->name = "cpu";
    b->gemm_path = "cpu";
    snprintf(b->device_name, sizeof b->device_name, "host CPU (%s kernels)", qp_gpt_kernel_isa());
    b->impl = impl;
    b->begin_step = cpu_begin_step;
    b->begin_micro = cpu_begin_micro;
    b->set_frozen = cpu_set_frozen;
    b->zero_grad = cpu_zero_grad;
    b->forward = cpu_forward;
    b->backward = cpu_backward;
    b->grad_norm = cpu_grad_norm;
    b->adamw = cpu_adamw;
    b->to_host = cpu_nothing;
    b->from_host = cpu_nothing;
    b->error = cpu_error;
    b->destroy = cpu_destroy;
    b->phases = cpu_phases;
    return 0;
}

#if QP_HAVE_CUDA
/* The module, loaded once; NULL with the reason in load_why. */
static const qp_backend_cuda_api *cuda_api;
static char load_why[400];
static int load_tried;

static const qp_backend_cuda_api *load_cuda(void)
{
    if (load_tried) return cuda_api;
    load_tried = 1;
    char path[4096];
    const char *env = getenv("QP_CUDA_MODULE");
    if (env && env[0]) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        char dir[sizeof path - 32];
        if (qp_exe_dir(dir, sizeof dir)) {
            snprintf(load_why, sizeof load_why, "cannot find this executable's folder (/proc/self/exe)");
            return NULL;
        }
        snprintf(path, sizeof path, "%s/qp_backend_cuda.so", dir);
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_why, sizeof load_why, "cannot load the CUDA backend: %s", dlerror());
        return NULL;
    }
    const qp_backend_cuda_api *(*get)(void) = (const qp_backend_cuda_api *(*)(void))dlsym(h, "qp_backend_cuda_module");
    const qp_backend_cuda_api *a = get ? get() : NULL;
    if (!a || a->abi != QP_BACKEND_CUDA_ABI) {
        snprintf(load_why, sizeof load_why, "%.300s is not this build's CUDA backend (%s)", path,
                 a ? "another build" : "no qp_backend_cuda_module");
        dlclose(h);
        return NULL;
    }
    return cuda_api = a;
}

int qp_backend_cuda_built(void) { return 1; }
int qp_backend_cuda_devices(void) { return load_cuda() ? cuda_api->devices() : 0; }
int qp_backend_cuda_device_count(char *why, size_t whylen)
{
    if (load_cuda()) return cuda_api->device_count(why, whylen);
    if (why && whylen) snprintf(why, whylen, "%s", load_why);
    return -1;
}
int qp_backend_cuda_nccl(void) { return load_cuda() ? cuda_api->nccl : 0; }

int qp_backend_cuda(qp_backend *b, qp_gpt *model, qp_linear *host_lin, const qp_linear_cfg *lc, float *adam_m,
                    float *adam_v, char *err, size_t errlen)
{
    if (load_cuda()) return cuda_api->open(b, model, host_lin, lc, adam_m, adam_v, err, errlen);
    snprintf(err, errlen, "%s", load_why);
    return -1;
}
#else
int qp_backend_cuda_built(void) { return 0; }
int qp_backend_cuda_devices(void) { return 0; }
int qp_backend_cuda_device_count(char *why, size_t whylen)
{
    if (why && whylen) snprintf(why, whylen, "built without CUDA");
    return 0;
}
int qp_backend_cuda_nccl(void) { return 0; }

int qp_backend_cuda(qp_backend *b, qp_gpt *model, qp_linear *host_lin, const qp_linear_cfg *lc, float *adam_m,
                    float *adam_v, char *err, size_t errlen)
{
    (void)b, (void)model, (void)host_lin, (void)lc, (void)adam_m, (void)adam_v;
    snprintf(err, errlen, "built without CUDA");
    return -1;
}
#endif
