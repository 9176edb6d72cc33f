/* test_model_gradcheck.c — every parameter tensor's analytic FP32 gradient
 * (qp_gpt_backward, recipe fp32) against central finite differences of the
 * mean loss, on tiny GPTs and Llamas whose parameters are moved off the init
 * so that every path (norm gains and biases, peaked attention, GELU's and
 * SwiGLU's curves, rotary embeddings, grouped key/value heads) carries
 * weight. Also: loss_scale scales the gradients, and backward
 * accumulates (+=) until qp_gpt_zero_grad.
 *
 * The loss is re-summed in double from the per-position losses so that the
 * difference quotient loses only the float rounding of the forward itself;
 * for each element the best of a few step sizes counts (truncation error
 * falls with eps, rounding error grows), as a wrong gradient fails at all. */
#include <math.h>
#include <stdlib.h>

#include "qp_model.h"
#include "qp_test.h"
#include "test_model_util.h"

#define SAMPLES 8
#define REL_TOL 1e-2
#define ABS_TOL 3e-5

typedef struct {
    qp_gpt m;
    qp_linear *lin;
    qp_gemm *gemm;
    qp_recipe recipe;
    int32_t *inputs, *targets;
} fixture;

static int setup(fixture *f, const qp_gpt_config *c, int B, int T, uint64_t seed)
{
    char err[256];
    f->gemm = qp_gemm_create(err, sizeof err);
    CHECK(f->gemm != NULL, "gemm: %s", err);
    CHECK(qp_recipe_parse("fp32", &f->recipe, err, sizeof err) == 0, "recipe: %s", err);
    const int ok = f->gemm && qp_gpt_init(&f->m, c, B, T, seed, err, sizeof err) == 0;
    CHECK(ok, "init: %s", err);
    if (!ok) return -1;
    const qp_linear_cfg lc = {.n_layers = c->layers, .max_elems = qp_gpt_max_gemm_elems(c, B, T), .seed = seed,
                              .recipe = &f->recipe, .gemm = f->gemm};
    f->lin = qp_linear_create(&lc, err, sizeof err);
    CHECK(f->lin != NULL, "linear: %s", err);
    if (!f->lin) return -1;
    tm_perturb(&f->m, seed);
    f->inputs = malloc((size_t)B * T * sizeof(int32_t));
    f->targets = malloc((size_t)B * T * sizeof(int32_t));
    uint64_t s = seed + 99;
    for (int i = 0; i < B * T; i++) {
        f->inputs[i] = (int32_t)(tm_next(&s) % (uint64_t)c->vocab);
        f->targets[i] = (int32_t)(tm_next(&s) % (uint64_t)c->vocab);
    }
    qp_linear_begin_step(f->lin, 0, 0);
    return 0;
}

static void teardown(fixture *f)
{
    free(f->inputs);
    free(f->targets);
    qp_linear_destroy(f->lin);
    qp_gpt_free(&f->m);
    qp_gemm_destroy(f->gemm);
}

/* Mean loss, summed in double from the per-position losses. */
static double loss_of(fixture *f)
{
    const int BT = f->m.B * f->m.T;
    if (qp_gpt_forward(&f->m, f->lin, f->inputs, f->targets, f->m.B, f->m.T)) return NAN;
    double s = 0.0;
    for (int i = 0; i < BT; i++) s += qp_model_losses(&f->m)[i];
    return s / BT;
}

static int backward_with(fixture *f, float scale)
{
    return qp_gpt_forward(&f->m, f->lin, f->inputs, f->targets, f->m.B, f->m.T) ||
           qp_gpt_backward(&f->m, f->lin, f->inputs, f->targets, scale);
}

static void gradcheck(const qp_gpt_config *c, int B, int T, uint64_t seed)
{
    fixture f;
    if (setup(&f, c, B, T, seed)) return;
    printf("gradcheck %s V=%d maxT=%d L=%d NH=%d KVH=%d C=%d H=%d smooth=%d B=%d T=%d\n", qp_arch_names[f.m.cfg.arch],
           c->vocab, c->max_seq, c->layers, c->heads, f.m.cfg.kv_heads, c->dim, f.m.cfg.mlp_hidden,
           f.m.cfg.smooth_swiglu, B, T);
    const char *const *names = qp_model_param_names(&f.m.cfg);
    const double loss0 = loss_of(&f);
    CHECK(fabs(loss0 - f.m.mean_loss) <= 1e-6 * loss0, "mean_loss %.9g vs mean of losses %.9g", f.m.mean_loss,
          loss0);
    qp_gpt_zero_grad(&f.m);
    CHECK(backward_with(&f, 1.0f) == 0, "backward: %s", qp_linear_error(f.lin));
    float *g1 = malloc((size_t)f.m.num_params * sizeof(float));
    memcpy(g1, f.m.grads_memory, (size_t)f.m.num_params * sizeof(float));

    /* The same gradients again, accumulated: twice (up to rounding: the tied
     * embedding sums the head's and the encoder's terms, whose rounding is
     * relative to the larger of them, up to the tensor's largest value). */
    CHECK(backward_with(&f, 1.0f) == 0, "second backward");
    int64_t bad = 0;
    for (int t = 0, off = 0; t < f.m.n_tensors; off += (int)f.m.param_sizes[t++]) {
        float big = 0.0f;
        for (int64_t i = off; i < off + f.m.param_sizes[t]; i++) big = fmaxf(big, fabsf(g1[i]));
        for (int64_t i = off; i < off + f.m.param_sizes[t]; i++)
            bad += fabsf(f.m.grads_memory[i] - 2.0f * g1[i]) > 1e-6f * (fabsf(g1[i]) + big) + 1e-12f;
    }
    CHECK(bad == 0, "backward does not accumulate: %lld of %lld gradients are not 2x", (long long)bad,
          (long long)f.m.num_params);
    /* loss_scale 0.25: gradients of 0.25 * mean loss (a power of two, exact in float) */
    qp_gpt_zero_grad(&f.m);
    CHECK(backward_with(&f, 0.25f) == 0, "scaled backward");
    bad = 0;
    for (int64_t i = 0; i < f.m.num_params; i++)
        bad += fabsf(f.m.grads_memory[i] - 0.25f * g1[i]) > 1e-6f * fabsf(g1[i]) + 1e-12f;
    CHECK(bad == 0, "loss_scale 0.25: %lld gradients are not 0.25x", (long long)bad);

    printf("  %-9s %8s %12s %12s %10s\n", "tensor", "element", "analytic", "numeric", "rel err");
    uint64_t s = seed * 31 + 7;
    const float eps_list[] = {1e-2f, 3e-3f, 1e-3f};
    float *p = f.m.params_memory;
    const float *g = g1;
    for (int t = 0; t < f.m.n_tensors; t++) {
        const int64_t n = f.m.param_sizes[t];
        double worst = -1.0, worst_an = 0.0, worst_fd = 0.0;
        int64_t worst_j = 0;
        for (int k = 0; k < SAMPLES; k++) {
            const int64_t j = k == 0 ? 0 : k == 1 ? n - 1 : (int64_t)(tm_next(&s) % (uint64_t)n);
            const float p0 = p[j];
            const double an = g[j];
            double best = INFINITY, best_fd = 0.0;
            for (size_t e = 0; e < sizeof eps_list / sizeof eps_list[0]; e++) {
                const float hi = p0 + eps_list[e], lo = p0 - eps_list[e];
                p[j] = hi;
                const double lp = loss_of(&f);
                p[j] = lo;
                const double lm = loss_of(&f);
                p[j] = p0;
                const double fd = (lp - lm) / ((double)hi - (double)lo);
                const double err = fabs(fd - an), mag = fmax(fabs(fd), fabs(an));
                /* within tolerance when err <= REL_TOL * mag or err <= ABS_TOL; score so 1 = limit */
                const double score = fmin(err / (REL_TOL * mag + 1e-300), err / ABS_TOL);
                if (score < best) best = score, best_fd = fd;
            }
            if (best > worst) worst = best, worst_j = j, worst_an = an, worst_fd = best_fd;
            CHECK(best <= 1.0, "%s[%lld]: analytic %.6e, finite difference %.6e", names[t],
                  (long long)j, an, best_fd);
        }
        const double rel = fabs(worst_fd - worst_an) / fmax(fmax(fabs(worst_fd), fabs(worst_an)), 1e-300);
        printf("  %-9s %8lld %12.4e %12.4e %10.2e%s\n", names[t], (long long)worst_j, worst_an,
               worst_fd, worst_an == 0.0 && worst_fd == 0.0 ? 0.0 : rel, worst > 1.0 ? "  FAIL" : "");
        p += n;
        g += n;
    }
    /* Every tensor's gradient must be non-zero somewhere, or its check tested nothing. */
    g = g1;
    for (int t = 0; t < f.m.n_tensors; t++) {
        double mx = 0.0;
        for (int64_t j = 0; j < f.m.param_sizes[t]; j++) mx = fmax(mx, fabs(g[j]));
        CHECK(mx > 1e-3, "%s: largest gradient %.3e, too small for the check to mean anything",
              names[t], mx);
        g += f.m.param_sizes[t];
    }
    free(g1);
    teardown(&f);
}

int main(void)
{
    /* maxT > T: wpe rows without gradient */
    const qp_gpt_config one = {.vocab = 16, .max_seq = 6, .layers = 1, .heads = 2, .dim = 8};
    gradcheck(&one, 2, 4, 11);
    /* two blocks: gradients through the residual stream */
    const qp_gpt_config two = {.vocab = 16, .max_seq = 4, .layers = 2, .heads = 2, .dim = 8};
    gradcheck(&two, 2, 4, 12);
    /* the Llama: grouped-query attention (one key/value head for two), an MLP width given */
    const qp_gpt_config l1 = {.vocab = 16, .max_seq = 6, .layers = 1, .heads = 2, .dim = 8, .arch = QP_ARCH_LLAMA,
                              .kv_heads = 1, .mlp_hidden = 12};
    gradcheck(&l1, 2, 5, 13);
    /* two blocks, a key/value head per head, the default width, Smooth-SwiGLU (an exact fold: the same function) */
    const qp_gpt_config l2 = {.vocab = 16, .max_seq = 4, .layers = 2, .heads = 2, .dim = 8, .arch = QP_ARCH_LLAMA,
                              .smooth_swiglu = 1};
    gradcheck(&l2, 2, 4, 14);
    return qp_test_finish("test_model_gradcheck");
}
