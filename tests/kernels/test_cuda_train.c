/* test_cuda_train.c — the GPU trainer against the CPU trainer: the same
 * model, seed and batches for 20 optimizer steps; per-step losses within 1e-3
 * relative for fp32 and bf16 (the GEMMs differ only in summation order), the
 * gradient norm of the first step within 1e-3, the same number of qerr rows
 * with close metrics, and parameters after the run within 1e-2 relative L2.
 * The quantized recipes fp8 (delayed scaling), nvfp4 (RHT, SR, 2D blocks)
 * and te-nvfp4 (Transformer Engine's fixed-sign RHT on wgrad) run through
 * the emulated path and must stay within 5% of the CPU's loss.
 * Both architectures: the GPT, and the Llama with grouped-query attention and
 * Smooth-SwiGLU. SKIP (77) without a CUDA device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_cuda_linear.h"
#include "qp_cuda_model.h"
#include "qp_gemm.h"
#include "qp_linear.h"
#include "qp_model.h"
#include "qp_optim.h"
#include "qp_recipe.h"
#include "qp_test.h"

#define STEPS 20
#define MAXQ 4096

typedef struct {
    int n;
    qp_qerr_row rows[MAXQ];
} qlog;

static void on_qerr(const qp_qerr_row *row, void *user)
{
    qlog *q = user;
    if (q->n < MAXQ) q->rows[q->n++] = *row;
}

/* Deterministic "text": a few repeating patterns, so the loss falls. */
static void batch(int64_t step, int B, int T, int V, int32_t *in, int32_t *tg)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            const int64_t pos = (step * B + b) * 7 + t;
            const int32_t tok = (int32_t)((pos * 5 + (pos / 3) % 4) % V);
            if (t < T) in[b * T + t] = tok;
            if (t > 0) tg[b * T + t - 1] = tok;
        }
}

static double rel(double a, double b) { return fabs(a - b) / (fabs(a) > 1e-30 ? fabs(a) : 1e-30); }

static int run_recipe(const char *spec, double tol, qp_arch arch)
{
    /* the Llama: grouped-query (2 key/value heads for 4), Smooth-SwiGLU on */
    const qp_gpt_config mc0 = {.vocab = 67, .max_seq = 32, .layers = 2, .heads = 4, .dim = 64, .arch = arch,
                               .kv_heads = arch == QP_ARCH_LLAMA ? 2 : 0, .smooth_swiglu = arch == QP_ARCH_LLAMA};
    const qp_gpt_config mc = qp_model_resolve(&mc0);
    const int B = 4, T = 32, BT = B * T;
    const uint64_t seed = 1337;
    char err[512];
    qp_recipe rec;
    if (qp_recipe_parse(spec, &rec, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    qp_gpt cpu;
    if (qp_gpt_init(&cpu, &mc, B, T, seed, err, sizeof err)) return fprintf(stderr, "%s\n", err), -1;
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    static qlog qc, qg;
    qc.n = qg.n = 0;
    const qp_linear_cfg lc = {.n_layers = mc.layers, .gemms = qp_model_gemm_mask(&mc),
                              .max_elems = qp_gpt_max_gemm_elems(&mc, B, T), .seed = seed,
                              .recipe = &rec, .gemm = gemm, .on_qerr = on_qerr, .user = &qc};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    qp_linear_cfg hc = lc;
    hc.user = &qg;
    qp_linear *host_states = qp_linear_create(&hc, err, sizeof err);
    qp_cuda_gpt gpu;
    if (!gemm || !lin || !host_states || qp_cuda_gpt_init(&gpu, &mc, B, T, cpu.params_memory, NULL, err, sizeof err))
        return fprintf(stderr, "%s: %s\n", spec, err), -1;
    qp_linear_gemm_set gemms;
    qp_linear_gemms(host_states, &gemms);
    qp_cuda_linear *gops = qp_cuda_linear_create(qp_gpt_linear_elems(&mc, B, T), qp_linear_max_kept(mc.layers), &gemms,
                                                 gpu.stream, err, sizeof err);
    if (!gops) return fprintf(stderr, "%s: %s\n", spec, err), -1;
    qp_linear_set_ops(host_states, qp_cuda_linear_ops(gops));
    qp_linear *glin = host_states; /* the one dispatch, on the GPU's operations */
    printf("%s %s: GPU GEMM path %s\n", qp_arch_names[arch], spec, qp_cuda_linear_path(gops));

    float *am = calloc(cpu.num_params, sizeof(float)), *av = calloc(cpu.num_params, sizeof(float));
    int32_t *in = malloc(BT * sizeof(int32_t)), *tg = malloc(BT * sizeof(int32_t));
    int64_t sizes[QP_MODEL_MAX_NPARAMS];
    int decays[QP_MODEL_MAX_NPARAMS];
    qp_gpt_param_shapes(&mc, sizes, NULL, NULL);
    for (int i = 0; i < cpu.n_tensors; i++) decays[i] = qp_model_param_decays(&mc, i);
    const qp_optim_cfg oc = {1e-3, 1e-4, 0.9, 0.99, 1e-8, 0.1, 1.0, 5, STEPS};
    double first_loss = 0, last_loss = 0, last_gpu = 0;
    for (int64_t step = 0; step < STEPS; step++) {
        const int log_qerr = step == 0 || step == 7;
        batch(step, B, T, mc.vocab, in, tg);
        qp_linear_begin_step(lin, step, log_qerr);
        qp_linear_begin_step(glin, step, log_qerr);
        qp_gpt_zero_grad(&cpu);
        CHECK(qp_cuda_gpt_zero_grad(&gpu) == 0, "%s", gpu.err);
        CHECK(qp_gpt_forward(&cpu, lin, in, tg, B, T) == 0, "cpu forward: %s", qp_linear_error(lin));
        CHECK(qp_gpt_backward(&cpu, lin, in, tg, 1.0f) == 0, "cpu backward");
        const int g1 = qp_cuda_gpt_set_batch(&gpu, in, tg) || qp_cuda_gpt_forward(&gpu, glin) ||
                       qp_cuda_gpt_backward(&gpu, glin, 1.0f);
        CHECK(!g1, "%s step %lld: %s / %s", spec, (long long)step, gpu.err, qp_linear_error(glin));
        if (g1) return -1;
        const double nc = qp_grad_norm(cpu.grads_memory, cpu.num_params);
        double ng = 0;
        CHECK(qp_cuda_gpt_grad_norm(&gpu, &ng) == 0, "%s", gpu.err);
        CHECK(rel(cpu.mean_loss, gpu.mean_loss) <= tol, "%s step %lld: loss cpu %.7f gpu %.7f", spec,
              (long long)step, cpu.mean_loss, gpu.mean_loss);
        if (step == 0) CHECK(rel(nc, ng) <= tol, "%s: first grad norm cpu %.7g gpu %.7g", spec, nc, ng);
        if (step == 0) first_loss = cpu.mean_loss;
        last_loss = cpu.mean_loss;
        last_gpu = gpu.mean_loss;
        const double lr = qp_lr_at(&oc, step);
        const float cc = (nc > 1.0) ? (float)(1.0 / nc) : 1.0f, cg = (ng > 1.0) ? (float)(1.0 / ng) : 1.0f;
        qp_adamw_step(&oc, cpu.params_memory, cpu.grads_memory, am, av, sizes, decays, cpu.n_tensors, step + 1, lr,
                      cc);
        CHECK(qp_cuda_gpt_adamw(&gpu, &oc, step + 1, lr, cg) == 0, "%s", gpu.err);
    }
    /* the dispatch keeps its statistics on the device until a flush */
    CHECK(qp_linear_flush(glin) == 0, "%s: flush: %s", spec, qp_linear_error(glin));
    CHECK(last_loss < first_loss, "%s: loss did not fall (%.4f -> %.4f)", spec, first_loss, last_loss);
    /* the same qerr rows (same layers, GEMMs, operands, passes), close metrics */
    CHECK(qc.n == qg.n, "%s: %d qerr rows on the CPU, %d on the GPU", spec, qc.n, qg.n);
    for (int i = 0; i < qc.n && i < qg.n; i++) {
        const qp_qerr_row *a = &qc.rows[i], *b = &qg.rows[i];
        CHECK(a->step == b->step && a->layer == b->layer && !strcmp(a->gemm, b->gemm) &&
                  !strcmp(a->operand, b->operand) && !strcmp(a->pass, b->pass),
              "%s: qerr row %d differs in its key", spec, i);
        CHECK(fabs(a->rel_l2 - b->rel_l2) <= 0.05 * a->rel_l2 + 1e-6 && fabs(a->sat_frac - b->sat_frac) <= 1e-3 &&
                  fabs(a->zero_frac - b->zero_frac) <= 1e-3,
              "%s: qerr row %d (%s %s %s): rel_l2 %g / %g, sat %g / %g, zero %g / %g", spec, i, a->gemm, a->operand,
              a->pass, a->rel_l2, b->rel_l2, a->sat_frac, b->sat_frac, a->zero_frac, b->zero_frac);
    }
    /* parameters and moments after the run */
    float *p = malloc(cpu.num_params * sizeof(float)), *m = malloc(cpu.num_params * sizeof(float));
    CHECK(qp_cuda_gpt_download(&gpu, p, m, NULL) == 0, "%s", gpu.err);
    double dd = 0, pp = 0;
    for (int64_t i = 0; i < cpu.num_params; i++) {
        dd += ((double)p[i] - cpu.params_memory[i]) * ((double)p[i] - cpu.params_memory[i]);
        pp += (double)cpu.params_memory[i] * cpu.params_memory[i];
    }
    CHECK(sqrt(dd / pp) <= 10 * tol, "%s: parameters differ by %g relative L2", spec, sqrt(dd / pp));
    /* evaluation (no targets) runs, and a round trip through the host is exact */
    CHECK(qp_cuda_gpt_upload(&gpu, p, m, NULL) == 0 && qp_cuda_gpt_set_batch(&gpu, in, NULL) == 0 &&
              qp_cuda_gpt_forward(&gpu, glin) == 0 && gpu.mean_loss == -1.0f,
          "%s: forward without targets: %s", spec, gpu.err);
    float *p2 = malloc(cpu.num_params * sizeof(float));
    CHECK(qp_cuda_gpt_download(&gpu, p2, NULL, NULL) == 0 && !memcmp(p, p2, cpu.num_params * sizeof(float)),
          "%s: parameter round trip", spec);
    printf("%s: loss %.4f -> %.4f (cpu), %.4f (gpu); params rel L2 %.3g; %d qerr rows\n", spec, first_loss, last_loss,
           last_gpu, sqrt(dd / pp), qg.n); /* (gpu.mean_loss is -1 after the forward without targets) */
    free(p), free(p2), free(m), free(am), free(av), free(in), free(tg);
    qp_linear_set_ops(host_states, NULL);
    qp_cuda_linear_destroy(gops);
    qp_cuda_gpt_free(&gpu);
    qp_linear_destroy(host_states);
    qp_linear_destroy(lin);
    qp_gemm_destroy(gemm);
    qp_gpt_free(&cpu);
    return 0;
}

int main(void)
{
    if (qp_cuda_gpt_devices() < 1) {
        printf("test_cuda_train: SKIP (no CUDA device)\n");
        return 77;
    }
    for (int a = 0; a < QP_ARCH_COUNT; a++) {
        CHECK(run_recipe("fp32", 1e-3, (qp_arch)a) == 0, "%s fp32 run", qp_arch_names[a]);
        CHECK(run_recipe("bf16", 1e-3, (qp_arch)a) == 0, "%s bf16 run", qp_arch_names[a]);
        CHECK(run_recipe("fp8", 5e-2, (qp_arch)a) == 0, "%s fp8 run", qp_arch_names[a]);
        CHECK(run_recipe("nvfp4", 5e-2, (qp_arch)a) == 0, "%s nvfp4 run", qp_arch_names[a]);
        /* FP8 blocks with FP32 scales: an FP32 GEMM on the GPU, K-chunked on the CPU */
        CHECK(run_recipe("bf16,x+dy=fp8-block,w=fp8-block-2d", 5e-2, (qp_arch)a) == 0, "%s DeepSeek-V3 FP8 run",
              qp_arch_names[a]);
        CHECK(run_recipe("nvfp4,wgrad:rht=128", 5e-2, (qp_arch)a) == 0, "%s nvfp4 with a 128-point RHT run",
              qp_arch_names[a]); /* B*T = 128 */
        /* Transformer Engine's NVFP4 recipe: its fixed-sign RHT on wgrad (qp_cuda_rht16_te) */
        CHECK(run_recipe("te-nvfp4", 5e-2, (qp_arch)a) == 0, "%s te-nvfp4 run", qp_arch_names[a]);
    }
    return qp_test_finish("test_cuda_train");
}
