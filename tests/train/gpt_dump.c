/* gpt_dump.c — runs one FP32 training micro-step (or two, accumulated) of a
 * tiny GPT or Llama and writes everything an independent implementation
 * needs to redo it: the configuration, the initial and the trained-on
 * parameters, the token batches, logits, per-position and mean losses, and
 * every parameter gradient. test_model_torch.py drives it and replays the
 * step in PyTorch.
 *
 * usage: gpt_dump OUT V maxT L NH C B T ACCUM SEED [ARCH KVH H SMOOTH]
 *   ARCH gpt (default) or llama; KVH, H: the Llama's key/value heads and MLP
 *   width (0: defaults); SMOOTH 1: Smooth-SwiGLU on.
 *   ACCUM micro-batches are run, each backward with loss_scale 1/ACCUM, so the
 *   gradients are those of the mean of the micro-batch losses.
 *
 * File: the 8 bytes "QPGPTD01", then records to the end of the file, each
 *   u32 name length, name, u32 dtype (0 float32, 1 int32), u32 ndim,
 *   i64 dims[ndim], data (row-major, little-endian as the host writes it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "test_model_util.h"

static int put(FILE *f, const char *name, int dtype, int ndim, const int64_t *dims, const void *data)
{
    const uint32_t nl = (uint32_t)strlen(name), dt = (uint32_t)dtype, nd = (uint32_t)ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    int ok = fwrite(&nl, 4, 1, f) == 1 && fwrite(name, 1, nl, f) == nl && fwrite(&dt, 4, 1, f) == 1 &&
             fwrite(&nd, 4, 1, f) == 1 && (ndim == 0 || fwrite(dims, 8, (size_t)ndim, f) == (size_t)ndim) &&
             (n == 0 || fwrite(data, 4, (size_t)n, f) == (size_t)n);
    return ok ? 0 : -1;
}

static int put_params(FILE *f, const char *prefix, const qp_gpt *m, const float *mem)
{
    int64_t sizes[QP_MODEL_MAX_NPARAMS], shape[QP_MODEL_MAX_NPARAMS][3];
    int ndim[QP_MODEL_MAX_NPARAMS];
    qp_gpt_param_shapes(&m->cfg, sizes, ndim, shape);
    for (int i = 0; i < m->n_tensors; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", prefix, qp_model_param_names(&m->cfg)[i]);
        if (put(f, name, 0, ndim[i], shape[i], mem)) return -1;
        mem += sizes[i];
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 11 && argc != 15) {
        fprintf(stderr, "usage: %s OUT V maxT L NH C B T ACCUM SEED [ARCH KVH H SMOOTH]\n", argv[0]);
        return 2;
    }
    qp_gpt_config cfg = {.vocab = atoi(argv[2]), .max_seq = atoi(argv[3]), .layers = atoi(argv[4]),
                         .heads = atoi(argv[5]), .dim = atoi(argv[6])};
    if (argc == 15) {
        cfg.arch = strcmp(argv[11], "llama") == 0 ? QP_ARCH_LLAMA : QP_ARCH_GPT;
        cfg.kv_heads = atoi(argv[12]), cfg.mlp_hidden = atoi(argv[13]), cfg.smooth_swiglu = atoi(argv[14]);
    }
    const int B = atoi(argv[7]), T = atoi(argv[8]), accum = atoi(argv[9]);
    const uint64_t seed = strtoull(argv[10], NULL, 10);
    if (accum < 1 || accum > 8) {
        fprintf(stderr, "ACCUM must be 1..8\n");
        return 2;
    }
    char err[256];
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    if (!gemm) {
        fprintf(stderr, "gemm: %s\n", err);
        return 1;
    }
    qp_recipe recipe;
    if (qp_recipe_parse("fp32", &recipe, err, sizeof err)) {
        fprintf(stderr, "recipe: %s\n", err);
        return 1;
    }
    qp_gpt m;
    if (qp_gpt_init(&m, &cfg, B, T, seed, err, sizeof err)) {
        fprintf(stderr, "init: %s\n", err);
        return 1;
    }
    const qp_linear_cfg lc = {.n_layers = cfg.layers, .max_elems = qp_gpt_max_gemm_elems(&cfg, B, T),
                              .seed = seed, .recipe = &recipe, .gemm = gemm};
    qp_linear *lin = qp_linear_create(&lc, err, sizeof err);
    if (!lin) {
        fprintf(stderr, "linear: %s\n", err);
        return 1;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int bad = fwrite("QPGPTD01", 1, 8, f) != 8;
    const int32_t conf[13] = {cfg.vocab, cfg.max_seq, cfg.layers, cfg.heads, cfg.dim, B, T, accum, (int32_t)seed,
                              (int32_t)m.cfg.arch, m.cfg.kv_heads, m.cfg.mlp_hidden, m.cfg.smooth_swiglu};
    const int64_t nconf = 13;
    bad |= put(f, "config", 1, 1, &nconf, conf);
    bad |= put_params(f, "init", &m, m.params_memory);
    tm_perturb(&m, seed);
    bad |= put_params(f, "param", &m, m.params_memory);

    const int BT = B * T;
    int32_t *inputs = malloc((size_t)BT * 4), *targets = malloc((size_t)BT * 4);
    uint64_t s = seed * 7919u + 1;
    qp_linear_begin_step(lin, 0, 0);
    qp_gpt_zero_grad(&m);
    for (int k = 0; k < accum && !bad; k++) {
        for (int i = 0; i < BT; i++) inputs[i] = (int32_t)(tm_next(&s) % (uint64_t)cfg.vocab);
        for (int i = 0; i < BT; i++) targets[i] = (int32_t)(tm_next(&s) % (uint64_t)cfg.vocab);
        if (qp_gpt_forward(&m, lin, inputs, targets, B, T) ||
            qp_gpt_backward(&m, lin, inputs, targets, 1.0f / (float)accum)) {
            fprintf(stderr, "forward/backward failed: %s\n", qp_linear_error(lin));
            bad = 1;
            break;
        }
        char name[32];
        const int64_t bt[2] = {B, T}, btv[3] = {B, T, cfg.vocab};
        snprintf(name, sizeof name, "inputs.%d", k);
        bad |= put(f, name, 1, 2, bt, inputs);
        snprintf(name, sizeof name, "targets.%d", k);
        bad |= put(f, name, 1, 2, bt, targets);
        const float *logits = qp_model_logits(&m), *losses = qp_model_losses(&m);
        snprintf(name, sizeof name, "logits.%d", k);
        bad |= put(f, name, 0, 3, btv, logits);
        snprintf(name, sizeof name, "losses.%d", k);
        bad |= put(f, name, 0, 2, bt, losses);
        snprintf(name, sizeof name, "loss.%d", k);
        bad |= put(f, name, 0, 0, NULL, &m.mean_loss);
    }
    bad |= put_params(f, "grad", &m, m.grads_memory);
    bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "%s: write failed\n", argv[1]);
    free(inputs);
    free(targets);
    qp_linear_destroy(lin);
    qp_gpt_free(&m);
    qp_gemm_destroy(gemm);
    return bad ? 1 : 0;
}
