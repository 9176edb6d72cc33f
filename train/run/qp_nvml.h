/* qp_nvml.h — GPU board power, energy and utilization while a run trains.
 *
 * Owns: NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (no link
 * dependency: a build or a machine without the driver just reports why), and
 * a sampler thread that every period_ms (~20 ms) reads board power
 * (nvmlDeviceGetPowerUsage), GPU utilization and the SM clock. Per step the
 * trainer takes the window since its last take: mean power, mean utilization,
 * and the energy since qp_nvml_open — from nvmlDeviceGetTotalEnergyConsumption
 * deltas where the GPU has the counter (Volta and later), else the integral
 * of the sampled power. */
#ifndef QP_NVML_H
#define QP_NVML_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_nvml qp_nvml;

typedef struct {
    double power_w;    /* mean board power over the window (NaN: no sample) */
    double energy_j;   /* since qp_nvml_open */
    double gpu_util;   /* mean utilization over the window, 0..100 (NaN: no sample) */
    double sm_mhz;     /* last SM clock */
    int64_t samples;   /* samples in the window */
    int energy_counter; /* 1: energy from the driver's counter; 0: integrated power */
} qp_nvml_window;

/* Start sampling the GPU with PCI bus id pci_bus_id (as cudaDeviceGetPCIBusId
 * gives it: CUDA and NVML number devices differently under
 * CUDA_VISIBLE_DEVICES), or NVML's device `index` when pci_bus_id is NULL or
 * "" (lib: NULL = "libnvidia-ml.so.1"). NULL with a one-line reason in why
 * when NVML or the device is not available. */
qp_nvml *qp_nvml_open(const char *lib, const char *pci_bus_id, unsigned index, int period_ms, char *why,
                      size_t whylen);
/* 1 when energy comes from the driver's counter, 0 when integrated from samples. */
int qp_nvml_energy_counter(const qp_nvml *n);
/* The window since the previous take (or since open). */
void qp_nvml_take(qp_nvml *n, qp_nvml_window *w);
/* Stop the thread, shut NVML down, free. */
void qp_nvml_close(qp_nvml *n);

#ifdef __cplusplus
}
#endif
#endif
