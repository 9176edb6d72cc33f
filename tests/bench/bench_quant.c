/* bench_quant.c — quantize throughput of every format, single-threaded, on a
 * 64 MiB float32 tensor, side by side with memcpy of the same buffer and with
 * the CUDA host conversion functions (where cuda_fp8.h was found), in one run.
 * Throughput counts bytes read + written; each time is the median of --reps.
 * A benchmark, not a test: it prints a table and asserts nothing about speed
 * (it does check that the CUDA-host codes equal qprec's). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qp_quant.h"
#if QP_HAVE_OPENMP
#include <omp.h>
#endif

#if QP_BENCH_CUDA_HOST
int bench_cuda_host_quantize(int fmt, const float *x, int64_t rows, int64_t cols, uint8_t *codes, uint8_t *scales);
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int main(int argc, char **argv)
{
    int reps = 7, threads = 1;
    int64_t rows = 4096, cols = 4096; /* 64 MiB */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_quant [--reps N] [--threads N] [--rows N]  (cols 4096)\n");
            return 2;
        }
    }
    if (reps < 1 || threads < 1 || rows < 1 || reps > 1000) {
        fprintf(stderr, "bench_quant: --reps, --threads and --rows must be positive\n");
        return 2;
    }
#if QP_HAVE_OPENMP
    omp_set_num_threads(threads);
#endif
    const int64_t n = rows * cols;
    float *x = malloc((size_t)n * 4), *dst = malloc((size_t)n * 4);
    if (!x || !dst) {
        fprintf(stderr, "bench_quant: out of memory\n");
        return 1;
    }
    uint64_t s = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const float u = (float)((s >> 40) * (1.0 / 16777216.0)) - 0.5f;
        x[i] = u * (i % 61 == 0 ? 40.0f : 2.0f);
    }
    memcpy(dst, x, (size_t)n * 4); /* touch */
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        memcpy(dst, x, (size_t)n * 4);
        t[r] = now() - t0;
    }
    const double t_memcpy = median(t, reps), bw_memcpy = 2.0 * n * 4 / t_memcpy / 1e9;
    printf("bench_quant: %lld x %lld float32 (%.0f MiB), %d thread(s), vector path %s, median of %d\n",
           (long long)rows, (long long)cols, n * 4 / 1048576.0, threads, qp_simd_name(), reps);
    printf("%-16s %9s %9s %9s %12s %12s\n", "format", "ms", "GB/s", "%memcpy", "cuda-host ms", "vs cuda-host");
    printf("%-16s %9.2f %9.2f %9.0f %12s %12s\n", "memcpy", t_memcpy * 1e3, bw_memcpy, 100.0, "-", "-");

    static const qp_fmt fmts[] = {QP_FMT_BF16, QP_FMT_FP8_E4M3, QP_FMT_FP8_E5M2, QP_FMT_MXFP8, QP_FMT_MXFP8_E5M2,
                                  QP_FMT_MXFP4, QP_FMT_NVFP4, QP_FMT_NVFP4_2D};
    int mismatches = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            const qp_fmt fmt = fmts[f];
            qp_qopts o = {.stochastic = pass == 1, .seed = 1};
            if (pass == 1 && fmt != QP_FMT_NVFP4 && fmt != QP_FMT_FP8_E5M2 && fmt != QP_FMT_MXFP8_E5M2) continue;
            qp_qtensor q;
            if (qp_qtensor_alloc(&q, fmt, rows, cols)) return 1;
            for (int r = 0; r < reps; r++) {
                const double t0 = now();
                qp_quantize(x, &q, &o, NULL);
                t[r] = now() - t0;
            }
            const double tq = median(t, reps);
            const double bytes = n * 4.0 + (double)q.row_bytes * rows + (double)q.scale_rows * q.scale_cols;
            const double bw = bytes / tq / 1e9;
            char name[32], cms[32] = "-", ratio[32] = "-";
            snprintf(name, sizeof name, "%s%s", qp_formats[fmt].name, pass ? "+sr" : "");
#if QP_BENCH_CUDA_HOST
            if (!pass) {
                uint8_t *codes = calloc((size_t)(q.row_bytes * rows), 1);
                uint8_t *scales = calloc((size_t)(q.scale_rows * q.scale_cols) + 1, 1);
                int covered = 1;
                for (int r = 0; r < (reps < 3 ? reps : 3) && covered; r++) {
                    const double t0 = now();
                    covered = bench_cuda_host_quantize(fmt, x, rows, cols, codes, scales) == 0;
                    t[r] = now() - t0;
                }
                if (covered) {
                    const double tc = median(t, reps < 3 ? reps : 3);
                    snprintf(cms, sizeof cms, "%.1f", tc * 1e3);
                    snprintf(ratio, sizeof ratio, "%.1fx", tc / tq);
                    if (memcmp(codes, q.codes, (size_t)(q.row_bytes * rows)) ||
                        (q.scales && memcmp(scales, q.scales, (size_t)(q.scale_rows * q.scale_cols)))) {
                        mismatches++;
                        snprintf(ratio, sizeof ratio, "MISMATCH");
                    }
                }
                free(codes);
                free(scales);
            }
#endif
            printf("%-16s %9.2f %9.2f %9.0f %12s %12s\n", name, tq * 1e3, bw, 100.0 * bw / bw_memcpy, cms, ratio);
            qp_qtensor_free(&q);
        }
    }
    printf("(GB/s = (bytes read + bytes written) / median time; %%memcpy against memcpy's read+write rate)\n");
    free(x), free(dst), free(t);
    if (mismatches) fprintf(stderr, "bench_quant: %d formats differ from the CUDA host conversions\n", mismatches);
    return mismatches ? 1 : 0;
}
