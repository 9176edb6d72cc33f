/* bench_quant.c — quantize and fused quantize-dequantize (qp_qdq, the
 * trainer's path) throughput of every format, round to nearest and stochastic
 * rounding, on a 64 MiB float32 tensor, side by side with memcpy of the same
 * buffer in the same run: every repetition times memcpy, then the format's
 * quantize, then its qdq, so each format is compared with a memcpy measured
 * moments before it (the machine may be shared). Where the CUDA toolkit's
 * host conversion functions were found it also times the same quantization
 * written with them (bench_cuda_host.cpp) and checks the codes are identical.
 *
 * Throughput counts bytes read + written: quantize reads 4 bytes per element
 * and writes the codes and block scales, qdq reads and writes 4 bytes per
 * element, memcpy reads and writes 4. %memcpy is the median over repetitions
 * of (format's bytes/s) / (the adjacent memcpy's bytes/s); times are medians.
 * Statistics (qp_qstats) are requested, as the trainer does. --cpu-time
 * times everything (memcpy too) by the thread's CPU time instead of the wall
 * clock: on a machine shared with other busy processes a 64 MiB pass is often
 * descheduled for whole time slices, which the wall clock counts.
 * A benchmark, not a test: it prints a table and asserts nothing about speed
 * (it exits 1 if the CUDA-host codes differ from qprec's). */
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

static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec t;
    clock_gettime(bench_clock, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of t[0..n) (t is reordered). */
static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void loadavg(char *buf, size_t len)
{
    snprintf(buf, len, "?");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    float a, b, c;
    if (fscanf(f, "%f %f %f", &a, &b, &c) == 3) snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}

typedef struct {
    qp_fmt fmt;
    int sr;
} bench_row;

/* A packed tensor of fmt over the shared code/scale buffers (allocated once
 * at the largest size, so no repetition pays for first-touch page faults). */
static qp_qtensor view(qp_fmt fmt, int64_t rows, int64_t cols, uint8_t *codes, uint8_t *scales)
{
    qp_qtensor q = {.fmt = fmt, .rows = rows, .cols = cols, .row_bytes = qp_row_bytes(fmt, cols), .scale_inv = 1.0f};
    qp_scale_shape(fmt, rows, cols, &q.scale_rows, &q.scale_cols);
    q.codes = codes;
    q.scales = q.scale_rows ? scales : NULL;
    return q;
}

static int64_t scale_bytes(const qp_qtensor *q) { return q->scale_rows * q->scale_cols * qp_formats[q->fmt].scale_bytes; }

/* Parse --formats: names, each optionally with "+sr". */
static int parse_formats(const char *list, bench_row *rows, int *n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const size_t len = strlen(tok);
        const int sr = len > 3 && strcmp(tok + len - 3, "+sr") == 0;
        if (sr) tok[len - 3] = 0;
        const qp_format_traits *t = qp_format_by_name(tok);
        if (!t || *n >= 2 * QP_FMT_COUNT) {
            fprintf(stderr, "bench_quant: unknown format '%s' (one of %s, each optionally +sr)\n", tok,
                    qp_format_names());
            return -1;
        }
        rows[(*n)++] = (bench_row){t->fmt, sr};
    }
    return *n ? 0 : -1;
}

int main(int argc, char **argv)
{
    int reps = 9, threads = 1;
    int64_t rows = 4096, cols = 4096; /* 64 MiB */
    bench_row list[2 * QP_FMT_COUNT];
    int nlist = 0;
    for (int f = QP_FMT_BF16; f < QP_FMT_COUNT; f++) list[nlist++] = (bench_row){(qp_fmt)f, 0};
    for (int f = QP_FMT_BF16; f < QP_FMT_COUNT; f++) list[nlist++] = (bench_row){(qp_fmt)f, 1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--cpu-time")) bench_clock = CLOCK_THREAD_CPUTIME_ID;
        else if (!strcmp(argv[i], "--formats") && i + 1 < argc) {
            if (parse_formats(argv[++i], list, &nlist)) return 2;
        } else {
            fprintf(stderr, "bench_quant: usage: bench_quant [--reps N] [--threads N] [--rows N] "
                            "[--formats NAME[+sr],...] [--cpu-time]  (cols 4096)\n");
            return 2;
        }
    }
    if (reps < 1 || threads < 1 || rows < 1 || reps > 1000) {
        fprintf(stderr, "bench_quant: --reps (1..1000), --threads and --rows must be positive\n");
        return 2;
    }
    if (bench_clock != CLOCK_MONOTONIC && threads > 1) {
        fprintf(stderr, "bench_quant: --cpu-time counts the calling thread only; use it with --threads 1\n");
        return 2;
    }
#if QP_HAVE_OPENMP
    omp_set_num_threads(threads);
#endif
    const int64_t n = rows * cols;
    const size_t fbytes = ((size_t)n * 4 + 63) / 64 * 64, cbytes = ((size_t)qp_row_bytes(QP_FMT_FP32, cols) * rows + 63) / 64 * 64;
    float *x = aligned_alloc(64, fbytes), *dst = aligned_alloc(64, fbytes);
    uint8_t *codes = aligned_alloc(64, cbytes), *scales = aligned_alloc(64, cbytes);
    double *tm = malloc(sizeof(double) * (size_t)(reps * nlist)), *tq = malloc(sizeof(double) * (size_t)(reps * nlist));
    double *td = malloc(sizeof(double) * (size_t)(reps * nlist)), *rq = malloc(sizeof(double) * (size_t)(reps * nlist));
    double *rd = malloc(sizeof(double) * (size_t)(reps * nlist));
    if (!x || !dst || !codes || !scales || !tm || !tq || !td || !rq || !rd) {
        fprintf(stderr, "bench_quant: out of memory\n");
        return 1;
    }
    uint64_t s = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const float u = (float)((s >> 40) * (1.0 / 16777216.0)) - 0.5f;
        x[i] = u * (i % 61 == 0 ? 40.0f : 2.0f);
    }
    memset(codes, 0, cbytes), memset(scales, 0, cbytes), memcpy(dst, x, (size_t)n * 4); /* touch */
    char load0[64], load1[64];
    loadavg(load0, sizeof load0);

    /* one untimed round, then reps rounds: memcpy, quantize, qdq per format */
    for (int r = -1; r < reps; r++)
        for (int i = 0; i < nlist; i++) {
            qp_qtensor q = view(list[i].fmt, rows, cols, codes, scales);
            const qp_qopts o = {.stochastic = list[i].sr, .seed = 1, .stream = 7};
            qp_qstats st;
            double t0 = now();
            memcpy(dst, x, (size_t)n * 4);
            const double t_m = now() - t0;
            t0 = now();
            qp_quantize(x, &q, &o, &st);
            const double t_q = now() - t0;
            t0 = now();
            qp_qdq(list[i].fmt, x, dst, rows, cols, &o, &st);
            const double t_d = now() - t0;
            if (r < 0) continue;
            const double bw_m = 8.0 * n / t_m, bq = 4.0 * n + (double)q.row_bytes * rows + (double)scale_bytes(&q);
            tm[i * reps + r] = t_m, tq[i * reps + r] = t_q, td[i * reps + r] = t_d;
            rq[i * reps + r] = bq / t_q / bw_m, rd[i * reps + r] = 8.0 * n / t_d / bw_m;
        }
    loadavg(load1, sizeof load1);

    double t_memcpy;
    {
        double *all = malloc(sizeof(double) * (size_t)(reps * nlist));
        memcpy(all, tm, sizeof(double) * (size_t)(reps * nlist));
        t_memcpy = median(all, reps * nlist);
        free(all);
    }
    printf("bench_quant: %lld x %lld float32 (%.0f MiB), %d thread(s), vector path %s, %d rounds "
           "(memcpy, quantize, qdq per format), medians of %s\n",
           (long long)rows, (long long)cols, n * 4 / 1048576.0, threads, qp_simd_name(), reps,
           bench_clock == CLOCK_MONOTONIC ? "wall-clock time" : "thread CPU time");
    printf("load average (1/5/15 min): %s at start, %s at end\n", load0, load1);
    printf("%-20s %8s %7s %7s %9s %9s %8s %7s %7s\n", "format", "ms", "GB/s", "%memcpy", "cuda ms", "vs cuda",
           "qdq ms", "GB/s", "%memcpy");
    printf("%-20s %8.2f %7.2f %7.0f %9s %9s %8s %7s %7s\n", "memcpy", t_memcpy * 1e3, 8.0 * n / t_memcpy / 1e9, 100.0,
           "-", "-", "-", "-", "-");
    int mismatches = 0;
    for (int i = 0; i < nlist; i++) {
        const qp_fmt fmt = list[i].fmt;
        qp_qtensor q = view(fmt, rows, cols, codes, scales);
        const double bq = 4.0 * n + (double)q.row_bytes * rows + (double)scale_bytes(&q);
        const double mq = median(tq + i * reps, reps), md = median(td + i * reps, reps);
        const double pq = 100.0 * median(rq + i * reps, reps), pd = 100.0 * median(rd + i * reps, reps);
        char name[40], cms[32] = "-", ratio[32] = "-";
        snprintf(name, sizeof name, "%s%s", qp_formats[fmt].name, list[i].sr ? "+sr" : "");
#if QP_BENCH_CUDA_HOST
        if (!list[i].sr) {
            const qp_qopts o = {.seed = 1};
            qp_quantize(x, &q, &o, NULL);
            const size_t nc = (size_t)(q.row_bytes * rows), ns = (size_t)scale_bytes(&q);
            uint8_t *hc = calloc(nc + 1, 1), *hs = calloc(ns + 1, 1);
            double th[3];
            int covered = 1, k = 0;
            for (; k < (reps < 3 ? reps : 3) && covered; k++) {
                const double t0 = now();
                covered = bench_cuda_host_quantize(fmt, x, rows, cols, hc, hs) == 0;
                th[k] = now() - t0;
            }
            if (covered) {
                const double tc = median(th, k);
                snprintf(cms, sizeof cms, "%.1f", tc * 1e3);
                snprintf(ratio, sizeof ratio, "%.1fx", tc / mq);
                if (memcmp(hc, q.codes, nc) || (ns && memcmp(hs, q.scales, ns))) {
                    mismatches++;
                    snprintf(ratio, sizeof ratio, "MISMATCH");
                }
            }
            free(hc), free(hs);
        }
#endif
        printf("%-20s %8.2f %7.2f %7.0f %9s %9s %8.2f %7.2f %7.0f\n", name, mq * 1e3, bq / mq / 1e9, pq, cms, ratio,
               md * 1e3, 8.0 * n / md / 1e9, pd);
    }
    printf("(GB/s = (bytes read + written) / median time; %%memcpy = median over rounds of the ratio to the "
           "memcpy timed just before)\n");
    free(x), free(dst), free(codes), free(scales), free(tm), free(tq), free(td), free(rq), free(rd);
    if (mismatches) fprintf(stderr, "bench_quant: %d formats differ from the CUDA host conversions\n", mismatches);
    return mismatches ? 1 : 0;
}
