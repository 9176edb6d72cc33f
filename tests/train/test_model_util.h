/* test_model_util.h — what the model tests share: a seeded RNG independent of
 * the model's own, and the move of a freshly initialised GPT off GPT-2's init. */
#ifndef TEST_MODEL_UTIL_H
#define TEST_MODEL_UTIL_H

#include <math.h>
#include <stdint.h>

#include "qp_model.h"

static inline uint64_t tm_next(uint64_t *s)
{
    /* splitmix64: unrelated to the Philox stream the model initialises from */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double tm_uniform(uint64_t *s) { return (tm_next(s) >> 11) * (1.0 / 9007199254740992.0); }

static inline float tm_normal(uint64_t *s)
{
    const double u = ((tm_next(s) >> 11) + 1.0) / 9007199254740993.0, v = tm_uniform(s);
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Move every parameter off GPT-2's init (norm weights 1, biases 0, matrices
 * of std 0.02): with those, a LayerNorm that ignored its affine part or an
 * attention whose softmax stayed uniform would still pass. These scales give
 * peaked attention, GELU / SwiGLU inputs of order one and logits of order
 * one (the Llama's in its own tensor order: wte ln1w qkvw attprojw ln2w gatew
 * upw downw lnfw lmhead). */
static inline void tm_perturb(qp_gpt *m, uint64_t seed)
{
    static const float gpt[QP_GPT_NPARAMS] = {0.3f, 0.3f, 0.2f, 0.2f, 0.3f, 0.1f, 0.2f, 0.1f,
                                              0.2f, 0.2f, 0.2f, 0.1f, 0.1f, 0.1f, 0.2f, 0.2f};
    static const float llama[QP_LLAMA_NPARAMS] = {0.3f, 0.2f, 0.3f, 0.2f, 0.2f, 0.3f, 0.3f, 0.1f, 0.2f, 0.3f};
    const float *sigma = m->cfg.arch == QP_ARCH_LLAMA ? llama : gpt;
    uint64_t s = seed ^ 0xD1B54A32D192ED03ull;
    float *p = m->params_memory;
    for (int i = 0; i < m->n_tensors; i++)
        for (int64_t j = 0; j < m->param_sizes[i]; j++) *p++ += sigma[i] * tm_normal(&s);
}

#endif
