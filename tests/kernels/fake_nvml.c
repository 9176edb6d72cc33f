/* fake_nvml.c — a stand-in libnvidia-ml for test_nvml: a device drawing a
 * steady 150 W at 42% utilization and 1980 MHz, with an energy counter that
 * runs with the clock (or none, with FAKE_NVML_NO_ENERGY set). */
#include <stdlib.h>
#include <time.h>

typedef struct {
    unsigned gpu, memory;
} nvml_util;

static double t0;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int nvmlInit_v2(void)
{
    t0 = now_s();
    return 0;
}
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int rc) { return rc ? "fake error" : "success"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev)
{
    if (index > 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = (void *)&t0;
    return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
    if (!bus || !bus[0]) return 2;
    *dev = (void *)&t0;
    return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    (void)dev;
    *mw = 150000;
    return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, nvml_util *u)
{
    (void)dev;
    u->gpu = 42, u->memory = 7;
    return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    (void)dev, (void)type;
    *mhz = 1980;
    return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
    (void)dev;
    if (getenv("FAKE_NVML_NO_ENERGY")) return 3; /* NVML_ERROR_NOT_SUPPORTED */
    *mj = 1000000ull + (unsigned long long)((now_s() - t0) * 150.0 * 1000.0);
    return 0;
}
