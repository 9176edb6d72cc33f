/* bench_train.c — training-step speed per recipe, side by side in one run.
 *
 * For nanoGPT's baby Shakespeare configuration and llm.c's small CPU
 * configuration, every recipe gets its own model, dispatch and loader, and
 * the recipes take turns step by step (bf16, fp8, nvfp4, bf16, ...), so a
 * busy machine slows them alike; the table gives each recipe's median step
 * time and its ratio to bf16's, the model FLOP/s of the whole step (6 N
 * tokens + causal attention 6 L C (T+1) per token, N the matrices'
 * parameters with the LM head) against the GEMM ceiling (the faster of the BF16 and FP32 kernels) measured in the
 * same run (a 1024^3 product timed once per round of steps), and the phase profile (train/runfile/qp_prof.h) as shares of the step.
 * Then the profile's own cost: bf16 steps with the profile on and off in
 * turns, and the bound from its clock reads. A benchmark: it prints tables
 * and asserts nothing about speed. With --archs gpt,llama every recipe runs
 * on each architecture (qp_model.h), all in turn step by step, "x bf16" then
 * the ratio to the first architecture's bf16 row.
 *
 *   bench_train [--data FILE] [--steps N] [--threads N] [--recipes a,b,...] [--archs gpt,llama]
 *               [--configs baby,small]
 *   bench_train --ceiling [--threads N]      the GEMM ceiling line only
 * OpenMP waits as in qtrain (passive unless OMP_WAIT_POLICY/GOMP_SPINCOUNT is set). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if QP_HAVE_OPENMP
#include <omp.h>
#endif

#include "qp_data.h"
#include "qp_gemm.h"
#include "qp_linear.h"
#include "qp_model.h"
#include "qp_omp.h"
#include "qp_optim.h"
#include "qp_prof.h"

#define WARMUP 3

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    const char *name;
    int L, NH, C, T, B;
} config;

/* One recipe's training state. */
typedef struct {
    char name[64];
    qp_recipe recipe;
    qp_gpt m;
    qp_linear *lin;
    qp_loader *ld;
    float *am, *av;
    int64_t sizes[QP_MODEL_MAX_NPARAMS];
    int decays[QP_MODEL_MAX_NPARAMS];
    double *ms, phase[QP_PHASE_COUNT], total, gemm_s, gemm_f;
    int n;
} runner;

static int runner_init(runner *r, const char *name, qp_arch arch, int named, const config *c, qp_dataset *d,
                       qp_gemm *g, int steps, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s%s%s", named ? qp_arch_names[arch] : "", named ? " " : "", name);
    if (qp_recipe_parse(name, &r->recipe, err, errlen)) return -1;
    const qp_gpt_config mc = {.vocab = qp_dataset_vocab(d), .max_seq = c->T, .layers = c->L, .heads = c->NH,
                              .dim = c->C, .arch = arch};
    if (qp_gpt_init(&r->m, &mc, c->B, c->T, 1337, err, errlen)) return -1;
    const qp_linear_cfg lc = {.n_layers = c->L, .max_elems = qp_gpt_max_gemm_elems(&mc, c->B, c->T), .seed = 1337,
                              .recipe = &r->recipe, .gemm = g};
    r->lin = qp_linear_create(&lc, err, errlen);
    r->ld = qp_loader_create(d, QP_SPLIT_TRAIN, 1337, c->B, c->T, 4, 0, err, errlen);
    r->am = calloc((size_t)r->m.num_params, 4), r->av = calloc((size_t)r->m.num_params, 4);
    r->ms = calloc((size_t)steps, sizeof(double));
    if (!r->lin || !r->ld || !r->am || !r->av || !r->ms) return -1;
    qp_gpt_param_shapes(&mc, r->sizes, NULL, NULL);
    for (int i = 0; i < r->m.n_tensors; i++) r->decays[i] = qp_model_param_decays(&mc, i);
    return 0;
}

static void runner_free(runner *r)
{
    free(r->ms), free(r->am), free(r->av);
    qp_loader_destroy(r->ld);
    qp_linear_destroy(r->lin);
    qp_gpt_free(&r->m);
}

/* One optimizer step as qtrain takes it (without logging); its wall time. */
static double step(runner *r, qp_gemm *g, int s, int timed)
{
    static const qp_optim_cfg oc = {1e-3, 1e-4, 0.9, 0.99, 1e-8, 0.1, 1.0, 100, 2000};
    double gs0, gf0, gs1, gf1, ph[QP_PHASE_COUNT];
    qp_gemm_counters(g, &gs0, &gf0);
    qp_prof_reset();
    const double t0 = now_ms();
    const int32_t *in, *tg;
    int64_t idx;
    double w;
    qp_loader_next(r->ld, &in, &tg, &idx, &w);
    qp_linear_begin_step(r->lin, s, 0);
    qp_gpt_zero_grad(&r->m);
    if (qp_gpt_forward(&r->m, r->lin, in, tg, r->m.B, r->m.T) || qp_gpt_backward(&r->m, r->lin, in, tg, 1.0f)) {
        fprintf(stderr, "bench_train: %s\n", qp_linear_error(r->lin));
        exit(1);
    }
    qp_prof_push(QP_PHASE_OPTIM);
    const double n = qp_grad_norm(r->m.grads_memory, r->m.num_params);
    qp_adamw_step(&oc, r->m.params_memory, r->m.grads_memory, r->am, r->av, r->sizes, r->decays, r->m.n_tensors,
                  s + 1, qp_lr_at(&oc, s), n > 1.0 ? (float)(1.0 / n) : 1.0f);
    qp_prof_pop();
    const double dt = now_ms() - t0;
    qp_prof_read(ph);
    qp_gemm_counters(g, &gs1, &gf1);
    if (timed) {
        r->ms[r->n++] = dt;
        r->total += dt, r->gemm_s += gs1 - gs0, r->gemm_f += gf1 - gf0;
        for (int k = 0; k < QP_PHASE_COUNT; k++) r->phase[k] += ph[k];
    }
    return dt;
}

/* The ceiling a step's FLOP/s is measured against: the faster of the
 * machine's BF16 and FP32 GEMM kernels on a 1024^3 product of BF16 values
 * (bigger than any of these models' GEMMs; whichever kernel the trainer
 * chose, qp_gemm.h), each timed once per round of steps so that it sees the
 * same machine as the steps do. */
typedef struct {
    float *a, *b, *c;
    qp_gemm *g[2]; /* BF16, FP32 kernels (NULL: this CPU has no BF16 kernel) */
    double t[2][512];
    int n;
} ceiling;

static qp_gemm *gemm_forced(const char *kernel, char *err, size_t errlen)
{
    const char *was = getenv("QP_GEMM");
    char saved[64];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    setenv("QP_GEMM", kernel, 1);
    qp_gemm *g = qp_gemm_create(err, errlen);
    if (was) setenv("QP_GEMM", saved, 1);
    else unsetenv("QP_GEMM");
    return g;
}

static int ceiling_init(ceiling *c, char *err, size_t errlen)
{
    const int n = 1024;
    c->a = malloc(sizeof(float) * n * n), c->b = malloc(sizeof(float) * n * n), c->c = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; i++) c->a[i] = c->b[i] = (float)((i % 17) - 8) * 0.125f; /* BF16 values */
    c->n = 0;
    if (!(c->g[0] = gemm_forced("bf16", err, errlen)) || !(c->g[1] = gemm_forced("f32", err, errlen))) return -1;
    if (!qp_gemm_has_bf16(c->g[0])) qp_gemm_destroy(c->g[0]), c->g[0] = NULL;
    return 0;
}

static void ceiling_once(ceiling *c)
{
    const int n = 1024;
    for (int k = 0; k < 2; k++) {
        if (!c->g[k]) continue;
        const double t0 = now_ms();
        if (qp_gemm_run(c->g[k], c->a, 0, c->b, 0, c->c, n, n, n, 1.0f, 0, 1)) {
            fprintf(stderr, "bench_train: %s\n", qp_gemm_error(c->g[k]));
            exit(1);
        }
        if (c->n < 512) c->t[k][c->n] = now_ms() - t0;
    }
    if (c->n < 512) c->n++;
}

/* GFLOP/s of kernel k's median product so far (NAN: no such kernel). */
static double kernel_gflops(ceiling *c, int k)
{
    return c->g[k] ? 2.0 * 1024 * 1024 * 1024 / (median(c->t[k], c->n) * 1e6) : NAN;
}
static double ceiling_gflops(ceiling *c)
{
    const double b = kernel_gflops(c, 0), f = kernel_gflops(c, 1);
    return isnan(b) || f > b ? f : b;
}

static void ceiling_free(ceiling *c)
{
    free(c->a), free(c->b), free(c->c);
    qp_gemm_destroy(c->g[0]), qp_gemm_destroy(c->g[1]);
}

/* N: the matrices' parameters with the LM head (GPT: 12 L C^2 + V C; the
 * Llama: L (qkv + attproj + 3 H C) + V C). */
static double model_gflop(const config *c, const qp_gpt *m)
{
    const double C = c->C, V = m->cfg.vocab, H = m->cfg.mlp_hidden, tokens = (double)c->B * c->T;
    const double qkv = C + 2.0 * m->cfg.kv_heads * (C / c->NH);
    const double n = m->cfg.arch == QP_ARCH_LLAMA ? c->L * (qkv * C + C * C + 3 * H * C) + V * C
                                                   : 12.0 * c->L * C * C + V * C;
    return (6.0 * n * tokens + 6.0 * c->L * C * (c->T + 1.0) * tokens) / 1e9;
}

int main(int argc, char **argv)
{
    const char *data = "../shared/data/tinyshakespeare.txt";
    int steps = 20, threads = 2, ceiling_only = 0;
    const char *recipes = "bf16,fp32,fp8,fp8-current,mxfp8,nvfp4,nvfp4-naive,mxfp4", *archs = "gpt",
               *only = "baby,small";
    qp_omp_apply(argv); /* OpenMP waits as qtrain's does (train/run/qp_omp.h) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--recipes") && i + 1 < argc) recipes = argv[++i];
        else if (!strcmp(argv[i], "--archs") && i + 1 < argc) archs = argv[++i];
        else if (!strcmp(argv[i], "--configs") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--ceiling")) ceiling_only = 1;
        else {
            fprintf(stderr, "usage: bench_train [--data FILE] [--steps N] [--threads N] [--recipes a,b,...] "
                            "[--archs gpt,llama] [--configs baby,small] [--ceiling]\n");
            return 2;
        }
    }
    if (steps < 3 || threads < 1) {
        fprintf(stderr, "bench_train: --steps >= 3 and --threads >= 1\n");
        return 2;
    }
#if QP_HAVE_OPENMP
    omp_set_num_threads(threads);
#endif
    char err[512];
    qp_gemm *g = qp_gemm_create(err, sizeof err);
    if (!g) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    ceiling ce;
    if (ceiling_init(&ce, err, sizeof err)) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    ceiling_once(&ce), ce.n = 0; /* builds the kernels */
    if (ceiling_only) {
        for (int r = 0; r < 7; r++) ceiling_once(&ce);
        printf("GEMM ceiling (1024x1024x1024 BF16 values, %d threads, median of %d): %.1f GFLOP/s (BF16 kernel %.1f, "
               "FP32 kernel %.1f; the trainer's: %s)\n",
               threads, ce.n, ceiling_gflops(&ce), kernel_gflops(&ce, 0), kernel_gflops(&ce, 1),
               qp_gemm_bf16_kernel(g));
        ceiling_free(&ce);
        qp_gemm_destroy(g);
        return 0;
    }
    qp_dataset *d = qp_dataset_open(data, 0.1, err, sizeof err);
    if (!d) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 2;
    }
    const config configs[] = {{"nanoGPT baby (4L 4H 128C, T64 B12)", 4, 4, 128, 64, 12},
                              {"llm.c small (4L 4H 256C, T128 B8)", 4, 4, 256, 128, 8}};
    const char *const config_keys[] = {"baby", "small"};
    int arch_ids[QP_ARCH_COUNT], narch = 0;
    {
        char al[128];
        snprintf(al, sizeof al, "%s", archs);
        for (char *save = NULL, *an = strtok_r(al, ",", &save); an; an = strtok_r(NULL, ",", &save)) {
            int a = -1;
            for (int k = 0; k < QP_ARCH_COUNT; k++)
                if (!strcmp(an, qp_arch_names[k])) a = k;
            if (a < 0 || narch == QP_ARCH_COUNT) {
                fprintf(stderr, "bench_train: --archs takes gpt and/or llama, not '%s'\n", an);
                return 2;
            }
            arch_ids[narch++] = a;
        }
    }
    printf("bench_train: %d threads, %d timed steps after %d warm-up, recipes in turn step by step, medians; GEMM: "
           "BF16 products on %s, model kernels %s\n",
           threads, steps, WARMUP, qp_gemm_bf16_kernel(g), qp_gpt_kernel_isa());
    for (unsigned ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
        const config *c = &configs[ci];
        if (!strstr(only, config_keys[ci])) continue;
        runner rs[32];
        int nr = 0;
        for (int ai = 0; ai < narch; ai++) {
            char list[256];
            snprintf(list, sizeof list, "%s", recipes);
            for (char *save = NULL, *rn = strtok_r(list, ",", &save); rn && nr < 32; rn = strtok_r(NULL, ",", &save))
                if (runner_init(&rs[nr++], rn, (qp_arch)arch_ids[ai], narch > 1, c, d, g, steps, err, sizeof err)) {
                    fprintf(stderr, "bench_train: %s: %s\n", rn, err);
                    return 2;
                }
        }
        ce.n = 0;
        for (int s = 0; s < steps + WARMUP; s++) {
            for (int k = 0; k < nr; k++) step(&rs[k], g, s, s >= WARMUP);
            if (s >= WARMUP) ceiling_once(&ce);
        }
        const double ceil = ceiling_gflops(&ce);
        printf("\n%s, vocab %d: %.2f model GFLOP per step%s; GEMM ceiling (1024^3, the faster kernel, timed once per "
               "round of steps, median) %.1f GFLOP/s (BF16 %.1f, FP32 %.1f)\n", c->name, qp_dataset_vocab(d),
               model_gflop(c, &rs[0].m), narch > 1 ? " (the first architecture's)" : "", ceil, kernel_gflops(&ce, 0),
               kernel_gflops(&ce, 1));
        printf("%-17s %8s %7s %8s %9s %7s %8s  %s\n", "recipe", "ms/step", "x bf16", "tok/s", "GFLOP/s", "% ceil",
               "GEMM GF/s", "share of step: gemm quant attn rowops optim other");
        double bf16 = NAN;
        char bf16_name[64];
        snprintf(bf16_name, sizeof bf16_name, "%s%sbf16", narch > 1 ? qp_arch_names[arch_ids[0]] : "",
                 narch > 1 ? " " : "");
        for (int k = 0; k < nr; k++)
            if (!strcmp(rs[k].name, bf16_name)) bf16 = median(rs[k].ms, rs[k].n);
        for (int k = 0; k < nr; k++) {
            runner *r = &rs[k];
            const double med = median(r->ms, r->n), t = r->total, gflop = model_gflop(c, &r->m);
            double other = t;
            for (int p = 0; p < QP_PHASE_COUNT; p++) other -= r->phase[p];
            printf("%-17s %8.1f %7.2f %8.0f %9.1f %7.1f %8.1f  %21.1f %5.1f %4.1f %6.1f %5.1f %5.1f\n", r->name, med,
                   med / bf16, c->B * c->T / (med / 1e3), gflop / (med / 1e3), 100.0 * gflop / (med / 1e3) / ceil,
                   r->gemm_f / r->gemm_s / 1e9, 100 * r->phase[QP_PHASE_GEMM] / t, 100 * r->phase[QP_PHASE_QUANT] / t,
                   100 * r->phase[QP_PHASE_ATTN] / t, 100 * r->phase[QP_PHASE_ROWOPS] / t,
                   100 * r->phase[QP_PHASE_OPTIM] / t, 100 * other / t);
            fflush(stdout);
        }
        for (int k = 0; k < nr; k++) runner_free(&rs[k]);
    }

    /* The profile's cost: bf16 steps with it on and off in turns. */
    printf("\nphase profile on vs off (bf16, steps in turns, medians):\n");
    for (unsigned ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
        const config *c = &configs[ci];
        runner r;
        if (!strstr(only, config_keys[ci])) continue;
        if (runner_init(&r, "bf16", QP_ARCH_GPT, 0, c, d, g, 2 * steps, err, sizeof err)) return 1;
        double on[256], off[256];
        int n = steps < 256 ? steps : 256;
        int64_t reads = 0;
        for (int s = 0; s < 2 * (n + WARMUP); s++) {
            const int prof = s % 2 == 0;
            qp_prof_enable(prof);
            const int64_t r0 = qp_prof_clock_reads();
            const double dt = step(&r, g, s, 0);
            if (prof) reads = qp_prof_clock_reads() - r0;
            if (s >= 2 * WARMUP) (prof ? on : off)[(s - 2 * WARMUP) / 2] = dt;
        }
        qp_prof_enable(1);
        /* what one clock read costs here */
        const double t0 = now_ms();
        for (int i = 0; i < 100000; i++) {
            qp_prof_push(QP_PHASE_ROWOPS);
            qp_prof_pop();
        }
        const double per_read = (now_ms() - t0) / 200000.0;
        const double mon = median(on, n), moff = median(off, n);
        printf("  %-36s on %.2f ms, off %.2f ms (on/off %.4f); %lld clock reads per step x %.0f ns = %.4f%% of "
               "the step\n",
               c->name, mon, moff, mon / moff, (long long)reads, per_read * 1e6, 100.0 * reads * per_read / moff);
        runner_free(&r);
    }
    ceiling_free(&ce);
    qp_gemm_destroy(g);
    qp_dataset_close(d);
    return 0;
}
