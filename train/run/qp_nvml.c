/* qp_nvml.c — NVML through dlopen and a sampler thread (see qp_nvml.h). */
#include "qp_nvml.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The few NVML declarations used (the ABI of nvml.h; no header needed). */
typedef int nvml_ret;
typedef void *nvml_device;
typedef struct {
    unsigned gpu, memory;
} nvml_util;
#define NVML_OK 0
#define NVML_CLOCK_SM 1

struct qp_nvml {
    void *dl;
    nvml_device dev;
    nvml_ret (*shutdown)(void);
    nvml_ret (*power)(nvml_device, unsigned *);
    nvml_ret (*util)(nvml_device, nvml_util *);
    nvml_ret (*clock)(nvml_device, int, unsigned *);
    nvml_ret (*energy)(nvml_device, unsigned long long *);
    int period_ms, stop, have_energy;
    pthread_t thread;
    pthread_mutex_t mu;
    /* the window since the last take */
    double power_sum, util_sum;
    int64_t power_n, util_n;
    /* energy */
    unsigned long long energy0_mj;
    double integrated_j, last_power_w, last_t;
    double sm_mhz;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sample(qp_nvml *n)
{
    unsigned mw = 0, mhz = 0;
    nvml_util u = {0, 0};
    const int okp = n->power(n->dev, &mw) == NVML_OK;
    const int oku = n->util && n->util(n->dev, &u) == NVML_OK;
    const int okc = n->clock && n->clock(n->dev, NVML_CLOCK_SM, &mhz) == NVML_OK;
    /* the time is taken under the lock: the sampler thread and qp_nvml_take
     * both sample, and the trapezoid needs the samples in time order */
    pthread_mutex_lock(&n->mu);
    const double t = now_s();
    if (okp) {
        const double w = mw / 1000.0;
        if (n->last_t > 0) n->integrated_j += 0.5 * (w + n->last_power_w) * (t - n->last_t);
        n->last_power_w = w, n->last_t = t;
        n->power_sum += w, n->power_n++;
    }
    if (oku) n->util_sum += u.gpu, n->util_n++;
    if (okc) n->sm_mhz = mhz;
    pthread_mutex_unlock(&n->mu);
}

static void *sampler(void *arg)
{
    qp_nvml *n = arg;
    const struct timespec d = {n->period_ms / 1000, (long)(n->period_ms % 1000) * 1000000L};
    for (;;) {
        pthread_mutex_lock(&n->mu);
        const int stop = n->stop;
        pthread_mutex_unlock(&n->mu);
        if (stop) break;
        sample(n);
        nanosleep(&d, NULL);
    }
    return NULL;
}

qp_nvml *qp_nvml_open(const char *lib, const char *pci_bus_id, unsigned index, int period_ms, char *why,
                      size_t whylen)
{
    const char *name = lib ? lib : "libnvidia-ml.so.1";
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(why, whylen, "%s", e ? e : name);
        return NULL;
    }
    nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(dl, "nvmlInit_v2");
    nvml_ret (*handle)(unsigned, nvml_device *) = (nvml_ret(*)(unsigned, nvml_device *))dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
    nvml_ret (*by_pci)(const char *, nvml_device *) =
        (nvml_ret(*)(const char *, nvml_device *))dlsym(dl, "nvmlDeviceGetHandleByPciBusId_v2");
    const char *(*errstr)(nvml_ret) = (const char *(*)(nvml_ret))dlsym(dl, "nvmlErrorString");
    qp_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        dlclose(dl);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    n->dl = dl;
    n->shutdown = (nvml_ret(*)(void))dlsym(dl, "nvmlShutdown");
    n->power = (nvml_ret(*)(nvml_device, unsigned *))dlsym(dl, "nvmlDeviceGetPowerUsage");
    n->util = (nvml_ret(*)(nvml_device, nvml_util *))dlsym(dl, "nvmlDeviceGetUtilizationRates");
    n->clock = (nvml_ret(*)(nvml_device, int, unsigned *))dlsym(dl, "nvmlDeviceGetClockInfo");
    n->energy = (nvml_ret(*)(nvml_device, unsigned long long *))dlsym(dl, "nvmlDeviceGetTotalEnergyConsumption");
    if (!init || !handle || !n->shutdown || !n->power) {
        snprintf(why, whylen, "%s lacks nvmlInit_v2/nvmlDeviceGetPowerUsage", name);
        dlclose(dl);
        free(n);
        return NULL;
    }
    nvml_ret rc = init();
    const int inited = rc == NVML_OK;
    if (inited) rc = (pci_bus_id && pci_bus_id[0] && by_pci) ? by_pci(pci_bus_id, &n->dev) : handle(index, &n->dev);
    if (rc != NVML_OK) {
        snprintf(why, whylen, "NVML: %s%s", inited ? "no device: " : "", errstr ? errstr(rc) : "initialisation failed");
        if (inited) n->shutdown();
        dlclose(dl);
        free(n);
        return NULL;
    }
    unsigned mw;
    if (n->power(n->dev, &mw) != NVML_OK) {
        snprintf(why, whylen, "NVML: this GPU does not report board power");
        n->shutdown();
        dlclose(dl);
        free(n);
        return NULL;
    }
    n->have_energy = n->energy && n->energy(n->dev, &n->energy0_mj) == NVML_OK;
    n->period_ms = period_ms > 0 ? period_ms : 20;
    pthread_mutex_init(&n->mu, NULL);
    if (pthread_create(&n->thread, NULL, sampler, n)) {
        snprintf(why, whylen, "cannot start the power sampler thread");
        pthread_mutex_destroy(&n->mu);
        n->shutdown();
        dlclose(dl);
        free(n);
        return NULL;
    }
    return n;
}

int qp_nvml_energy_counter(const qp_nvml *n) { return n->have_energy; }

void qp_nvml_take(qp_nvml *n, qp_nvml_window *w)
{
    sample(n); /* the window's end, however short the step */
    unsigned long long mj = 0;
    const int have = n->have_energy && n->energy(n->dev, &mj) == NVML_OK;
    pthread_mutex_lock(&n->mu);
    w->power_w = n->power_n ? n->power_sum / (double)n->power_n : NAN;
    w->gpu_util = n->util_n ? n->util_sum / (double)n->util_n : NAN;
    w->samples = n->power_n;
    w->sm_mhz = n->sm_mhz;
    w->energy_counter = have;
    w->energy_j = have ? (double)(mj - n->energy0_mj) / 1000.0 : n->integrated_j;
    n->power_sum = n->util_sum = 0.0;
    n->power_n = n->util_n = 0;
    pthread_mutex_unlock(&n->mu);
}

void qp_nvml_close(qp_nvml *n)
{
    if (!n) return;
    pthread_mutex_lock(&n->mu);
    n->stop = 1;
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    pthread_mutex_destroy(&n->mu);
    n->shutdown();
    dlclose(n->dl);
    free(n);
}
