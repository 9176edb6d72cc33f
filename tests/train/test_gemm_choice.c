/* test_gemm_choice.c — which kernel runs BF16 products (train/precision/qp_gemm.h):
 * QP_GEMM=auto's rule on the CPU's features, case by case; the CPU facts it
 * reads, against what the kernel tells /proc/cpuinfo; QP_GEMM's accepted
 * values and the one-line error for any other; the name each choice records
 * in the run file; and that auto's products are, bit for bit, those of the
 * kernel it names, each kernel within FP32 rounding of a float64 product. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_gemm.h"

static int failures, checks;
#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        checks++;                                                                                                     \
        if (!(cond)) {                                                                                                \
            failures++;                                                                                               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                               \
            printf(__VA_ARGS__);                                                                                      \
            printf("\n");                                                                                             \
        }                                                                                                             \
    } while (0)

static qp_gemm *create_with(const char *value, char *err, size_t errlen)
{
    if (value) setenv("QP_GEMM", value, 1);
    else unsetenv("QP_GEMM");
    qp_gemm *g = qp_gemm_create(err, errlen);
    unsetenv("QP_GEMM");
    return g;
}

/* 1 when /proc/cpuinfo's first "flags" line has the flag, 0 when not, -1 when unreadable. */
static int cpuinfo_has(const char *key, const char *word)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key))) continue;
        found = 0;
        for (char *save = NULL, *t = strtok_r(strchr(line, ':') + 1, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
            if (!strcmp(t, word)) found = 1;
        break;
    }
    fclose(f);
    return found;
}

#define M 96
#define N 80
#define K 272

static void product(qp_gemm *g, const float *A, const float *B, float *C)
{
    if (qp_gemm_run(g, A, 0, B, 1, C, M, N, K, 0.5f, 0, 1)) {
        printf("FAIL qp_gemm_run: %s\n", qp_gemm_error(g));
        exit(1);
    }
}

int main(void)
{
    /* the rule, every case */
    for (int c = 0; c < 8; c++) {
        const qp_gemm_cpu cpu = {c & 1, c >> 1 & 1, c >> 2 & 1};
        const int want = cpu.amx_bf16 || (cpu.amd && cpu.avx512_bf16);
        CHECK(qp_gemm_auto_bf16(cpu) == want, "amd %d avx512_bf16 %d amx_bf16 %d: rule says %d", cpu.amd,
              cpu.avx512_bf16, cpu.amx_bf16, !want);
    }

    /* the facts, against the kernel's account of this CPU */
    const qp_gemm_cpu cpu = qp_gemm_cpu_read();
    const int amd = cpuinfo_has("vendor_id", "AuthenticAMD"), bf = cpuinfo_has("flags", "avx512_bf16"),
              amx = cpuinfo_has("flags", "amx_bf16");
    if (amd >= 0) CHECK(cpu.amd == amd, "vendor AMD: cpuid %d, /proc/cpuinfo %d", cpu.amd, amd);
    /* a kernel lists no flag the CPU lacks, but an older kernel may not know a flag the CPU has */
    if (bf > 0) CHECK(cpu.avx512_bf16, "avx512_bf16: /proc/cpuinfo lists it, cpuid (leaf 7.1 EAX bit 5) does not");
    if (amx >= 0) CHECK(cpu.amx_bf16 <= amx, "amx_bf16 read as usable but /proc/cpuinfo has no amx_bf16");

    /* QP_GEMM's values */
    char err[256];
    static const char *const bad[] = {"fp32", "F32", "bf16 ", "BF16", "amx", "0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        qp_gemm *g = create_with(bad[i], err, sizeof err);
        CHECK(!g && strstr(err, "QP_GEMM=") && !strchr(err, '\n'), "QP_GEMM='%s': %s", bad[i],
              g ? "accepted" : err);
        qp_gemm_destroy(g);
    }
    qp_gemm *f32 = create_with("f32", err, sizeof err), *bf16 = create_with("bf16", err, sizeof err),
            *autoc = create_with("auto", err, sizeof err), *unset = create_with(NULL, err, sizeof err),
            *empty = create_with("", err, sizeof err);
    if (!f32 || !bf16 || !autoc || !unset || !empty) {
        printf("FAIL qp_gemm_create: %s\n", err);
        return 1;
    }
    CHECK(!qp_gemm_has_bf16(f32) && !strcmp(qp_gemm_bf16_kernel(f32), "fp32-forced"), "f32: %s",
          qp_gemm_bf16_kernel(f32));
    const int probe = qp_gemm_has_bf16(bf16);
    CHECK(!strcmp(qp_gemm_bf16_kernel(bf16), probe ? "onednn-bf16" : "fp32-fallback"), "bf16: %s",
          qp_gemm_bf16_kernel(bf16));
    const int auto_bf16 = qp_gemm_auto_bf16(cpu) && probe;
    const char *auto_name = auto_bf16 ? "onednn-bf16" : qp_gemm_auto_bf16(cpu) ? "fp32-fallback" : "fp32-chosen";
    CHECK(qp_gemm_has_bf16(autoc) == auto_bf16 && !strcmp(qp_gemm_bf16_kernel(autoc), auto_name), "auto: %s, want %s",
          qp_gemm_bf16_kernel(autoc), auto_name);
    CHECK(!strcmp(qp_gemm_bf16_kernel(unset), auto_name) && !strcmp(qp_gemm_bf16_kernel(empty), auto_name),
          "unset/empty QP_GEMM: %s/%s, want auto's %s", qp_gemm_bf16_kernel(unset), qp_gemm_bf16_kernel(empty),
          auto_name);

    /* the products: auto's are its kernel's; each kernel is a real product of BF16 values */
    static float A[M * K], B[K * N], Cf[M * N], Cb[M * N], Ca[M * N];
    uint32_t s = 12345;
    for (int i = 0; i < M * K; i++) s = s * 1664525u + 1013904223u, A[i] = (float)((int)(s >> 24) - 128) / 64.0f;
    for (int i = 0; i < K * N; i++) s = s * 1664525u + 1013904223u, B[i] = (float)((int)(s >> 24) - 128) / 32.0f;
    product(f32, A, B, Cf), product(bf16, A, B, Cb), product(autoc, A, B, Ca);
    CHECK(!memcmp(Ca, auto_bf16 ? Cb : Cf, sizeof Ca), "auto's product differs from its kernel's (%s)", auto_name);
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) ref += (double)A[m * K + k] * B[k * N + n], mag += fabs((double)A[m * K + k] * B[k * N + n]);
            ref *= 0.5, mag *= 0.5;
            const double e = fmax(fabs(Cf[m * N + n] - ref), fabs(Cb[m * N + n] - ref)) / (mag * 0x1p-23 * K + 1e-30);
            worst = fmax(worst, e);
        }
    CHECK(worst <= 1.0, "a kernel's product is %.3g x K FP32 roundings away from float64", worst);
    qp_gemm_destroy(f32), qp_gemm_destroy(bf16), qp_gemm_destroy(autoc), qp_gemm_destroy(unset), qp_gemm_destroy(empty);
    printf("test_gemm_choice: %d of %d checks; this CPU: amd %d avx512_bf16 %d amx_bf16 %d, BF16 kernel %s, auto "
           "runs %s\n",
           checks - failures, checks, cpu.amd, cpu.avx512_bf16, cpu.amx_bf16, probe ? "built" : "absent", auto_name);
    return failures != 0;
}
