/* test_nvml.c — the power sampler (kernels/qp_nvml.h) against a fake NVML
 * library (fake_nvml.c: 150 W, 42%, 1980 MHz), with and without the energy
 * counter, and its one-line reason when NVML is missing.
 * usage: test_nvml FAKE_LIB */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qp_nvml.h"
#include "qp_test.h"

static void sleep_ms(int ms)
{
    const struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

static void windows(const char *lib, int counter)
{
    char why[256] = "";
    qp_nvml *n = qp_nvml_open(lib, NULL, 0, 5, why, sizeof why);
    CHECK(n != NULL, "open %s: %s", lib, why);
    if (!n) return;
    CHECK(qp_nvml_energy_counter(n) == counter, "energy counter %d, want %d", qp_nvml_energy_counter(n), counter);
    sleep_ms(200);
    qp_nvml_window w;
    qp_nvml_take(n, &w);
    CHECK(fabs(w.power_w - 150.0) < 1e-9, "mean power %g", w.power_w);
    CHECK(fabs(w.gpu_util - 42.0) < 1e-9, "mean utilization %g", w.gpu_util);
    CHECK(w.sm_mhz == 1980.0, "SM clock %g", w.sm_mhz);
    CHECK(w.samples >= 5, "only %lld samples in 200 ms at 5 ms", (long long)w.samples);
    CHECK(w.energy_counter == counter, "energy from the counter: %d, want %d", w.energy_counter, counter);
    /* 150 W over ~0.2 s since open: 30 J (the integral starts at the first sample) */
    CHECK(w.energy_j > 20.0 && w.energy_j < 60.0, "energy after 200 ms: %g J", w.energy_j);
    const double e1 = w.energy_j;
    sleep_ms(100);
    qp_nvml_take(n, &w);
    CHECK(w.energy_j > e1 + 10.0 && w.energy_j < e1 + 40.0, "energy is cumulative: %g then %g", e1, w.energy_j);
    qp_nvml_take(n, &w); /* an immediate take still has its closing sample */
    CHECK(w.samples >= 1 && fabs(w.power_w - 150.0) < 1e-9, "short window: %lld samples", (long long)w.samples);
    qp_nvml_close(n);
    n = qp_nvml_open(lib, NULL, 3, 5, why, sizeof why);
    CHECK(n == NULL && strstr(why, "NVML") && !strchr(why, '\n'), "device 3 of a one-GPU NVML: '%s'", why);
    qp_nvml_close(n);
    n = qp_nvml_open(lib, "00000000:07:00.0", 0, 5, why, sizeof why); /* by bus id */
    CHECK(n != NULL, "open by PCI bus id: %s", why);
    qp_nvml_close(n);
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: test_nvml FAKE_LIB\n"), 2;
    unsetenv("FAKE_NVML_NO_ENERGY");
    windows(argv[1], 1);
    setenv("FAKE_NVML_NO_ENERGY", "1", 1);
    windows(argv[1], 0);
    char why[256] = "";
    qp_nvml *n = qp_nvml_open("/nonexistent/libnvidia-ml.so.1", NULL, 0, 20, why, sizeof why);
    CHECK(n == NULL && why[0] && !strchr(why, '\n'), "missing library: '%s'", why);
    return qp_test_finish("test_nvml");
}
