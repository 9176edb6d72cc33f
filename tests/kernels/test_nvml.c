/* test_nvml.c — the power sampler (train/run/qp_nvml.h) against a fake NVML
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

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The energy of a steady 150 W over a window whose ends are known only to lie
 * between the clock readings around them: [lo, hi] seconds long. The sampler
 * integrates from its first sample, which a loaded machine may delay, so the
 * integrated energy may fall short by up to half the window; the energy
 * counter runs with the clock and is exact. Sleeps set the window's length
 * but are never trusted to last as long as asked. */
static void check_energy(double e, double lo, double hi, int counter, const char *what)
{
    /* the counter reports whole millijoules: each of its readings is up to 1 mJ short */
    const double min = 150.0 * lo * (counter ? 1.0 : 0.5) - 0.002, max = 150.0 * hi + 0.002;
    CHECK(e >= min && e <= max, "%s: %g J, want [%g, %g] (150 W over %.3f-%.3f s)", what, e, min, max, lo, hi);
}

static void windows(const char *lib, int counter)
{
    char why[256] = "";
    const double t_open0 = now_s();
    qp_nvml *n = qp_nvml_open(lib, NULL, 0, 5, why, sizeof why);
    const double t_open1 = now_s();
    CHECK(n != NULL, "open %s: %s", lib, why);
    if (!n) return;
    CHECK(qp_nvml_energy_counter(n) == counter, "energy counter %d, want %d", qp_nvml_energy_counter(n), counter);
    sleep_ms(200);
    qp_nvml_window w;
    const double t_take0 = now_s();
    qp_nvml_take(n, &w);
    const double t_take1 = now_s();
    CHECK(fabs(w.power_w - 150.0) < 1e-9, "mean power %g", w.power_w);
    CHECK(fabs(w.gpu_util - 42.0) < 1e-9, "mean utilization %g", w.gpu_util);
    CHECK(w.sm_mhz == 1980.0, "SM clock %g", w.sm_mhz);
    /* the sampler thread ran at least once beside take's closing sample */
    CHECK(w.samples >= 2, "only %lld samples in a window of %.3f s at 5 ms", (long long)w.samples, t_take1 - t_open0);
    CHECK(w.energy_counter == counter, "energy from the counter: %d, want %d", w.energy_counter, counter);
    check_energy(w.energy_j, t_take0 - t_open1, t_take1 - t_open0, counter, "energy since open");
    const double e1 = w.energy_j;
    sleep_ms(100);
    const double t_take2 = now_s();
    qp_nvml_take(n, &w);
    const double t_take3 = now_s();
    /* cumulative, and over the second window alone the sampler is already running */
    check_energy(w.energy_j - e1, t_take2 - t_take1, t_take3 - t_take0, 1, "energy of the second window");
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
