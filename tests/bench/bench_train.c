/* bench_train.c — training-step speed per recipe, side by side in one run:
 * median ms/step, achieved GEMM GFLOP/s and the GEMMs' share of the step, and
 * the data loader's wait share, on nanoGPT's baby Shakespeare configuration
 * and llm.c's small CPU configuration. A benchmark: it prints a table and
 * asserts nothing about speed. */
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
#include "qp_optim.h"
#include "qp_prof.h"

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

typedef struct {
    const char *name;
    int L, NH, C, T, B;
} config;

int main(int argc, char **argv)
{
    const char *data = "../shared/data/tinyshakespeare.txt";
    int steps = 20, threads = 2;
    const char *recipes = "fp32,bf16,fp8,fp8-current,mxfp8,nvfp4,nvfp4-naive,mxfp4";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--recipes") && i + 1 < argc) recipes = argv[++i];
        else {
            fprintf(stderr, "usage: bench_train [--data FILE] [--steps N] [--threads N] [--recipes a,b,...]\n");
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
    qp_dataset *d = qp_dataset_open(data, 0.1, err, sizeof err);
    if (!d) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 2;
    }
    const config configs[] = {{"nanoGPT baby (4L 4H 128C, T64 B12)", 4, 4, 128, 64, 12},
                              {"llm.c small (4L 4H 256C, T128 B8)", 4, 4, 256, 128, 8}};
    qp_gemm *g = qp_gemm_create(err, sizeof err);
    if (!g) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    printf("bench_train: %d threads, %d timed steps after 3 warm-up, median; GEMM: bf16 %s, model kernels %s\n",
           threads, steps, qp_gemm_has_bf16(g) ? "oneDNN" : "fp32-fallback", qp_gpt_kernel_isa());
    for (unsigned ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
        const config *c = &configs[ci];
        printf("\n%s, vocab %d\n", c->name, qp_dataset_vocab(d));
        printf("%-14s %10s %10s %12s %10s %10s   %s\n", "recipe", "ms/step", "tok/s", "GEMM GFLOP/s", "GEMM %",
               "wait %", "gemm quant attn rowops optim (% of step)");
        char list[256];
        snprintf(list, sizeof list, "%s", recipes);
        for (char *save = NULL, *rname = strtok_r(list, ",", &save); rname; rname = strtok_r(NULL, ",", &save)) {
            qp_recipe r;
            if (qp_recipe_parse(rname, &r, err, sizeof err)) {
                fprintf(stderr, "bench_train: %s\n", err);
                return 2;
            }
            const qp_gpt_config mc = {qp_dataset_vocab(d), c->T, c->L, c->NH, c->C};
            qp_gpt m;
            if (qp_gpt_init(&m, &mc, c->B, c->T, 1337, err, sizeof err)) {
                fprintf(stderr, "bench_train: %s\n", err);
                return 1;
            }
            const qp_linear_cfg lc = {.n_layers = c->L, .max_elems = qp_gpt_max_gemm_elems(&mc, c->B, c->T),
                                      .seed = 1337, .recipe = &r, .gemm = g};
            qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
            qp_loader *ld = qp_loader_create(d, QP_SPLIT_TRAIN, 1337, c->B, c->T, 4, 0, err, sizeof err);
            float *am = calloc((size_t)m.num_params, 4), *av = calloc((size_t)m.num_params, 4);
            if (!lin || !ld || !am || !av) {
                fprintf(stderr, "bench_train: %s\n", err);
                return 1;
            }
            const qp_optim_cfg oc = {1e-3, 1e-4, 0.9, 0.99, 1e-8, 0.1, 1.0, 100, 2000};
            int64_t sizes[QP_GPT_NPARAMS];
            int decays[QP_GPT_NPARAMS];
            qp_gpt_param_shapes(&mc, sizes, NULL, NULL);
            for (int i = 0; i < QP_GPT_NPARAMS; i++) decays[i] = qp_gpt_param_decays(i);
            double *ms = malloc(sizeof(double) * (size_t)steps), gemm_s = 0, gemm_f = 0, wait = 0, total = 0;
            double phase[QP_PHASE_COUNT] = {0};
            for (int s = 0; s < steps + 3; s++) {
                qp_prof_reset();
                double gs0, gf0;
                qp_gemm_counters(g, &gs0, &gf0);
                const double t0 = now_ms();
                const int32_t *in, *tg;
                int64_t idx;
                double w;
                qp_loader_next(ld, &in, &tg, &idx, &w);
                qp_linear_begin_step(lin, s, 0);
                qp_gpt_zero_grad(&m);
                if (qp_gpt_forward(&m, lin, in, tg, c->B, c->T) || qp_gpt_backward(&m, lin, in, tg, 1.0f)) {
                    fprintf(stderr, "bench_train: %s\n", qp_linear_error(lin));
                    return 1;
                }
                qp_prof_push(QP_PHASE_OPTIM);
                const double n = qp_grad_norm(m.grads_memory, m.num_params);
                qp_adamw_step(&oc, m.params_memory, m.grads_memory, am, av, sizes, decays, QP_GPT_NPARAMS, s + 1,
                              qp_lr_at(&oc, s), n > 1.0 ? (float)(1.0 / n) : 1.0f);
                qp_prof_pop();
                double ph[QP_PHASE_COUNT];
                qp_prof_read(ph);
                const double dt = now_ms() - t0;
                double gs1, gf1;
                qp_gemm_counters(g, &gs1, &gf1);
                if (s >= 3) {
                    ms[s - 3] = dt;
                    gemm_s += gs1 - gs0, gemm_f += gf1 - gf0, wait += w, total += dt;
                    for (int k = 0; k < QP_PHASE_COUNT; k++) phase[k] += ph[k];
                }
            }
            qsort(ms, (size_t)steps, sizeof *ms, cmp);
            const double med = ms[steps / 2];
            printf("%-14s %10.1f %10.0f %12.1f %10.1f %10.2f   %4.1f %5.1f %4.1f %6.1f %5.1f\n", rname, med,
                   c->B * c->T / (med / 1e3), gemm_f / gemm_s / 1e9, 100.0 * gemm_s * 1e3 / total, 100.0 * wait / total,
                   100 * phase[QP_PHASE_GEMM] / total, 100 * phase[QP_PHASE_QUANT] / total,
                   100 * phase[QP_PHASE_ATTN] / total, 100 * phase[QP_PHASE_ROWOPS] / total,
                   100 * phase[QP_PHASE_OPTIM] / total);
            if (getenv("QP_BENCH_PHASE_MS"))
                printf("  phase ms/step: gemm %.2f quant %.2f attn %.2f rowops %.2f optim %.2f\n",
                       phase[QP_PHASE_GEMM] / steps, phase[QP_PHASE_QUANT] / steps, phase[QP_PHASE_ATTN] / steps,
                       phase[QP_PHASE_ROWOPS] / steps, phase[QP_PHASE_OPTIM] / steps);
            fflush(stdout);
            free(ms), free(am), free(av);
            qp_loader_destroy(ld);
            qp_linear_destroy(lin);
            qp_gpt_free(&m);
        }
    }
    qp_gemm_destroy(g);
    qp_dataset_close(d);
    return 0;
}
